//! A reply that lands late is not left twice. A job that was run again (its replica died,
//! or an attempt failed) and then replied may have had an earlier attempt's reply still on
//! its way: a request GitHub, or a proxy before it, applies after the caller gave up on it.
//! The takeover looks for that reply before it posts, and removes a duplicate right after,
//! but a write can land later than both. So such a job queues a watch of its pull request:
//! a job of its own key (it never holds up the PR's queue) that looks at the PR's comments
//! every second at first, then less often, and removes every reply of the App's that
//! repeats an older one's marker, the oldest kept (see
//! [`crate::app::pull_request::remove_duplicate_replies`]).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::reconcile::{FullName, Id, Number};
use super::store::NewDelivery;

/// The queue's name for a watch job (GitHub's event names have no dot).
pub const EVENT: &str = "itergate.late-writes";
/// Looked at every second for this long: GitHub ends a request after 10 s, and a write
/// held by a proxy or retransmitted after a partition lands within seconds of that.
pub const CLOSELY: Duration = Duration::from_secs(30);
/// Then every [`LATER_EVERY`] until this long after the job replied.
pub const WATCH_FOR: Duration = Duration::from_secs(120);
/// How often it looks after [`CLOSELY`].
pub const LATER_EVERY: Duration = Duration::from_secs(10);

/// A watch job's payload.
#[derive(Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Payload {
    pub repository: FullName,
    pub installation: Id,
    pub pull_request: Number,
    /// When the job that replied queued the watch (ms since the epoch).
    pub since: i64,
}

/// The watch of pull request `pr` for a job that replied at `now`.
pub fn job(repository: &str, installation: i64, pr: u64, now: i64) -> NewDelivery {
    let pr_key = super::intake::job_key(Some(repository), Some(pr), None);
    let payload = Payload {
        repository: FullName {
            full_name: repository.to_string(),
        },
        installation: Id { id: installation },
        pull_request: Number {
            number: i64::try_from(pr).unwrap_or(0),
        },
        since: now,
    };
    NewDelivery {
        delivery_id: format!("{EVENT}:{pr_key}:{now}"),
        event: EVENT.to_string(),
        action: None,
        installation_id: Some(installation),
        repository: Some(repository.to_string()),
        job_key: format!("{pr_key} {EVENT}"),
        payload: serde_json::to_vec(&payload).unwrap_or_default(),
        body_sha: None,
        yields: false,
    }
}

/// When a watch that began at `since` looks next after looking at `now`; `None` once it
/// has watched for [`WATCH_FOR`].
pub fn next_look(since: i64, now: i64) -> Option<i64> {
    let watched = Duration::from_millis(u64::try_from(now - since).unwrap_or(0));
    if watched >= WATCH_FOR {
        return None;
    }
    let every = if watched < CLOSELY {
        Duration::from_secs(1)
    } else {
        LATER_EVERY
    };
    Some(now + i64::try_from(every.as_millis()).unwrap_or(1000))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_watch_looks_every_second_then_every_ten_then_stops() {
        let s = 1_000_000;
        assert_eq!(next_look(s, s), Some(s + 1000));
        assert_eq!(next_look(s, s + 29_999), Some(s + 30_999));
        assert_eq!(next_look(s, s + 30_000), Some(s + 40_000));
        assert_eq!(next_look(s, s + 119_999), Some(s + 129_999));
        assert_eq!(next_look(s, s + 120_000), None);
        // A clock that went back looks again soon.
        assert_eq!(next_look(s, s - 5000), Some(s - 4000));
        let looks = std::iter::successors(Some(s), |&t| next_look(s, t)).count();
        assert!(looks <= 45, "{looks} looks");
    }

    #[test]
    fn a_watch_has_a_key_of_its_own_beside_its_pull_requests() {
        let job = job("Acme/Widgets", 7, 12, 5);
        assert_eq!(job.job_key, "acme/widgets#12 itergate.late-writes");
        let payload: Payload = serde_json::from_slice(&job.payload).unwrap();
        assert_eq!(payload.pull_request.number, 12);
        assert_eq!(payload.repository.full_name, "Acme/Widgets");
    }
}
