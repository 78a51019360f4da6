//! Nothing is lost: deliveries GitHub could not hand over (the App was down, the database
//! answered 503) are asked for again. On start and every `--sweep-minutes`, the App's
//! recent deliveries are listed (`GET /app/hook/deliveries`, newest first, by cursor) and
//! every delivery whose attempts all failed is redelivered
//! (`POST /app/hook/deliveries/{id}/attempts`). One stored although GitHub saw it fail (the
//! answer was lost on the way) comes back as a duplicate of its key, and is not run again:
//! the listing gives no body, and the inbox keeps one unique index, on the key. GitHub
//! keeps deliveries for three days; the sweep looks back [`LOOK_BACK`].
//!
//! The same tick queues the reconcile of pull requests left waiting ([`super::reconcile`])
//! and deletes deliveries finished more than `--keep-days` ago ([`prune`]).
//!
//! One replica sweeps at a time: with SQLite there is one process; on PostgreSQL each
//! replica asks at every tick for the sweep's lock ([`Store::hold_sweep_lock`]), and only
//! the one holding it sweeps. When that replica stops or dies, another takes the lock at
//! its next tick.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use http::Method;
use serde::Deserialize;
use tokio::sync::watch;

use super::metrics::Metrics;
use super::store::{Store, StoreError};
use crate::github::app_auth::Installations;
use crate::github::client::Call;

/// How far back deliveries are looked at.
pub const LOOK_BACK: Duration = Duration::from_secs(24 * 3600);
/// Pages of 100 deliveries read at most per sweep.
const MAX_PAGES: usize = 20;
/// Redeliveries asked for at most per sweep (GitHub rate-limits the endpoint), newest
/// first, so that old failures cannot crowd out recent ones.
const MAX_REDELIVERIES: usize = 100;
/// Attempts after which a delivery is given up on: one refused this often (a secret rotated
/// on one side only, a body GitHub will not send) will not be taken by asking again.
pub const MAX_ATTEMPTS: usize = 4;
/// Finished deliveries deleted per transaction: about a millisecond on SQLite, so that
/// intake's commits wait for it no longer than for a group of their own.
const PRUNE_BATCH: i64 = 100;
/// Transactions of [`PRUNE_BATCH`] per tick at most; what is left waits for the next.
const PRUNE_BATCHES: usize = 1_000;
/// The pause between two of them, in which the workers' writes get the lock.
const PRUNE_PAUSE: Duration = Duration::from_millis(2);

/// What the sweep does and how often.
#[derive(Debug, Clone, Copy)]
pub struct Schedule {
    /// The interval between ticks (`--sweep-minutes`).
    pub every: Duration,
    /// How long a finished delivery is kept (`--keep-days`).
    pub keep: Duration,
}

#[derive(Debug, Deserialize)]
struct DeliveryJson {
    id: u64,
    guid: String,
    #[serde(default)]
    status_code: u16,
    delivered_at: DateTime<Utc>,
}

/// What one sweep did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Swept {
    pub listed: usize,
    pub redelivered: Vec<String>,
    /// Deliveries whose every one of [`MAX_ATTEMPTS`] attempts failed: no longer asked for.
    pub given_up: usize,
    /// Redeliveries GitHub refused this time, each with why; the others were still asked.
    pub refused: Vec<String>,
}

pub async fn run(
    installations: Arc<Installations>,
    store: Store,
    metrics: Arc<Metrics>,
    schedule: Schedule,
    mut stop: watch::Receiver<bool>,
) {
    let every = schedule.every;
    loop {
        let leading = match store.hold_sweep_lock().await {
            Ok(leading) => leading,
            Err(e) => {
                tracing::warn!("asking for the sweep's lock: {e}; trying again later");
                false
            }
        };
        metrics.sweep_leader(leading);
        let swept = if leading {
            sweep(&installations, Utc::now()).await
        } else {
            tracing::debug!("another replica runs the redelivery sweep");
            Ok(Swept::default())
        };
        match swept {
            Ok(swept) => {
                if !swept.redelivered.is_empty() {
                    tracing::info!(
                        listed = swept.listed,
                        redelivered = swept.redelivered.len(),
                        "asked GitHub to redeliver failed deliveries: {}",
                        swept.redelivered.join(", ")
                    );
                } else {
                    tracing::debug!(listed = swept.listed, "no delivery to recover");
                }
                if !swept.refused.is_empty() {
                    tracing::warn!(
                        "GitHub refused {} redeliveries: {}",
                        swept.refused.len(),
                        swept.refused.join("; ")
                    );
                }
                if swept.given_up > 0 {
                    tracing::debug!(
                        "{} deliveries failed {MAX_ATTEMPTS} times and are no longer asked for",
                        swept.given_up
                    );
                }
            }
            Err(e) => tracing::warn!("the redelivery sweep failed: {e}; trying again later"),
        }
        // Stopping: the store is closing, and what is left waits for the next start.
        if *stop.borrow() {
            return;
        }
        if leading {
            match super::reconcile::queue_due(&store, super::store::now_ms(), every).await {
                Ok(queued) if !queued.is_empty() => tracing::info!(
                    "pull requests waited a whole interval for CI's record; checking them \
                     against GitHub: {}",
                    queued.join(", ")
                ),
                Ok(_) => {}
                Err(e) => tracing::warn!("queueing reconciles: {e}; trying again later"),
            }
            match prune(&store, super::store::now_ms(), schedule.keep).await {
                Ok(0) => {}
                Ok(deleted) => {
                    metrics.pruned(deleted);
                    let days = schedule.keep.as_secs() / (24 * 3600);
                    tracing::info!(
                        "deleted {deleted} deliveries finished more than {days} days ago \
                         (--keep-days)"
                    );
                }
                Err(e) => tracing::warn!("deleting old deliveries: {e}; trying again later"),
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = stop.changed() => return,
        }
    }
}

/// Deletes the deliveries finished more than `keep` before `now` (ms), in short
/// transactions, at most `PRUNE_BATCHES` of them, and says how many. A kept delivery's id
/// answers "seen before" (200, no new work); `keep` must therefore outlast GitHub's own
/// keeping of deliveries (3 days, checked by `--keep-days`), or a redelivery of a deleted
/// one would run again. Unfinished deliveries are never deleted.
pub async fn prune(store: &Store, now: i64, keep: Duration) -> Result<u64, StoreError> {
    let before = now.saturating_sub(i64::try_from(keep.as_millis()).unwrap_or(i64::MAX));
    let mut deleted = 0;
    for _ in 0..PRUNE_BATCHES {
        let batch = store.prune_finished(before, PRUNE_BATCH).await?;
        deleted += batch;
        if batch < PRUNE_BATCH as u64 {
            break;
        }
        tokio::time::sleep(PRUNE_PAUSE).await;
    }
    Ok(deleted)
}

/// One sweep at `now`.
pub async fn sweep(installations: &Installations, now: DateTime<Utc>) -> Result<Swept, String> {
    let client = installations.app_client().map_err(|e| e.to_string())?;
    let since = now - chrono::Duration::from_std(LOOK_BACK).unwrap_or_default();
    // guid → (every attempt failed so far, the id of its newest attempt, attempts)
    let mut by_guid: BTreeMap<String, (bool, u64, usize)> = BTreeMap::new();
    let mut listed = 0;
    let mut path = "/app/hook/deliveries?per_page=100".to_string();
    'pages: for _ in 0..MAX_PAGES {
        let reply = client
            .send(Call {
                operation: "list deliveries for an app webhook",
                method: Method::GET,
                path: path.clone(),
                body: None,
                authenticated: true,
            })
            .await
            .map_err(|e| e.to_string())?;
        let page: Vec<DeliveryJson> = serde_json::from_slice(&reply.body)
            .map_err(|e| format!("list deliveries for an app webhook: {e}"))?;
        for delivery in &page {
            if delivery.delivered_at < since {
                break 'pages;
            }
            listed += 1;
            let ok = (200..300).contains(&delivery.status_code);
            let entry = by_guid
                .entry(delivery.guid.clone())
                .or_insert((true, delivery.id, 0));
            entry.0 &= !ok;
            entry.1 = entry.1.max(delivery.id);
            entry.2 += 1;
        }
        match next_cursor(&reply.headers) {
            Some(cursor) if !page.is_empty() => {
                path = format!("/app/hook/deliveries?per_page=100&cursor={cursor}");
            }
            _ => break,
        }
    }
    let mut swept = Swept {
        listed,
        ..Swept::default()
    };
    let failed: BTreeSet<(u64, String)> = by_guid
        .into_iter()
        .filter(|(_, (all_failed, _, attempts))| {
            if *all_failed && *attempts >= MAX_ATTEMPTS {
                swept.given_up += 1;
            }
            *all_failed && *attempts < MAX_ATTEMPTS
        })
        .map(|(guid, (_, id, _))| (id, guid))
        .collect();
    for (id, guid) in failed.into_iter().rev() {
        if swept.redelivered.len() + swept.refused.len() >= MAX_REDELIVERIES {
            break;
        }
        let asked = client
            .send(Call {
                operation: "redeliver a delivery for an app webhook",
                method: Method::POST,
                path: format!("/app/hook/deliveries/{id}/attempts"),
                body: None,
                authenticated: true,
            })
            .await;
        match asked {
            Ok(_) => swept.redelivered.push(guid),
            // A limit holds for the rest too: the next sweep goes on.
            Err(e) if matches!(e.status(), Some(403 | 429)) => {
                swept.refused.push(format!("{guid}: {e}"));
                break;
            }
            Err(e) => swept.refused.push(format!("{guid}: {e}")),
        }
    }
    Ok(swept)
}

/// The `cursor` of the `rel="next"` link, if there is one.
fn next_cursor(headers: &http::HeaderMap) -> Option<String> {
    let link = headers.get(http::header::LINK)?.to_str().ok()?;
    link.split(',')
        .find(|part| part.contains("rel=\"next\""))
        .and_then(|part| part.split("cursor=").nth(1))
        .map(|rest| {
            rest.chars()
                .take_while(|c| !matches!(c, '&' | '>' | ';'))
                .collect()
        })
}
