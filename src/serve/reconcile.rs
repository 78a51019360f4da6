//! No pull request is left waiting. The sweep recovers deliveries GitHub reports as failed;
//! an event GitHub never sent, or one that failed for good, would leave a PR "waiting for
//! checks" (and its `itergate` check run in progress) forever. So the App remembers which
//! heads wait for CI's verdict, and every `--sweep-minutes` the sweeping replica queues a
//! reconcile job for each PR that has waited a whole interval with nothing in the queue.
//!
//! The job asks GitHub, never the payloads it might have missed: the PR (closed: it waits no
//! more; a new head: the lost push is caught up), then the head's completed `pull_request`
//! workflow runs, newest first, read exactly as their `workflow_run` events would have been
//! (the artifact bound to head, repository and branch). A run with a record decides the
//! head. Without one the PR is checked again, each time after twice as long (at most
//! [`MAX_INTERVAL`]), and after [`GIVE_UP_AFTER`] no more.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::store::{NewDelivery, Store, StoreError, Waiting};

/// The queue's name for a reconcile job (GitHub's event names have no dot).
pub const EVENT: &str = "itergate.reconcile";
/// The longest pause between two checks of one head.
pub const MAX_INTERVAL: Duration = Duration::from_secs(6 * 3600);
/// A head that has waited this long is no longer checked (CI never ran, or never uploads).
pub const GIVE_UP_AFTER: Duration = Duration::from_secs(7 * 24 * 3600);
/// Reconcile jobs queued per tick at most.
const PER_TICK: i64 = 100;

/// A reconcile job's payload: what intake would read from a delivery of the PR.
#[derive(Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Payload {
    pub repository: FullName,
    pub installation: Id,
    pub pull_request: Number,
    /// The head that was waiting when the job was queued.
    pub head_sha: String,
}

#[derive(Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct FullName {
    pub full_name: String,
}

#[derive(Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Id {
    pub id: i64,
}

#[derive(Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Number {
    pub number: i64,
}

/// When a head that starts waiting at `now` is first checked.
pub fn first_check_at(now: i64, every: Duration) -> i64 {
    now + millis(every)
}

/// When the check after `checks` earlier ones is due: `every`, doubling, at most
/// [`MAX_INTERVAL`].
pub fn next_check_at(now: i64, every: Duration, checks: i64) -> i64 {
    let factor = 1u32 << u32::try_from(checks.clamp(0, 20)).unwrap_or(20);
    let doubled = every.saturating_mul(factor);
    now + millis(doubled.min(MAX_INTERVAL).max(every))
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX / 4)
}

/// Queues a reconcile job for every waiting PR due at `now`; returns the keys queued.
pub async fn queue_due(
    store: &Store,
    now: i64,
    every: Duration,
) -> Result<Vec<String>, StoreError> {
    let mut queued = Vec::new();
    for waiting in store.due_waiting(now, PER_TICK).await? {
        if now - waiting.since > millis(GIVE_UP_AFTER) {
            tracing::warn!(
                pr = %waiting.job_key,
                head = %waiting.head_sha,
                "no record came for this head in {} days; it is checked no more",
                GIVE_UP_AFTER.as_secs() / 86_400
            );
            store
                .clear_waiting(&waiting.job_key, Some(&waiting.head_sha))
                .await?;
            continue;
        }
        store.receive(job(&waiting, now)).await?;
        store
            .checked_waiting(&waiting, next_check_at(now, every, waiting.checks + 1))
            .await?;
        queued.push(waiting.job_key);
    }
    Ok(queued)
}

fn job(waiting: &Waiting, now: i64) -> NewDelivery {
    let payload = Payload {
        repository: FullName {
            full_name: waiting.repository.clone(),
        },
        installation: Id {
            id: waiting.installation_id,
        },
        pull_request: Number { number: waiting.pr },
        head_sha: waiting.head_sha.clone(),
    };
    NewDelivery {
        delivery_id: format!("{EVENT}:{}:{}:{now}", waiting.job_key, waiting.head_sha),
        event: EVENT.to_string(),
        action: None,
        installation_id: Some(waiting.installation_id),
        repository: Some(waiting.repository.clone()),
        job_key: waiting.job_key.clone(),
        payload: serde_json::to_vec(&payload).unwrap_or_default(),
        body_sha: None,
        yields: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_slow_down_by_doubling_up_to_the_cap() {
        let every = Duration::from_secs(300);
        let after = |checks| (next_check_at(0, every, checks)) / 1000;
        assert_eq!(first_check_at(0, every), 300_000);
        assert_eq!(after(0), 300);
        assert_eq!(after(1), 600);
        assert_eq!(after(3), 2400);
        assert_eq!(after(7), 6 * 3600);
        assert_eq!(after(60), 6 * 3600);
        // An interval longer than the cap is kept.
        let long = Duration::from_secs(8 * 3600);
        assert_eq!(next_check_at(0, long, 3) / 1000, 8 * 3600);
    }
}
