//! Workers: claim a delivery, apply it to its pull request through the one handler core,
//! and mark it done; or put it back with backoff. No pull-request code ever runs here:
//! scores come from the record CI uploaded, the configuration from the base commit.
//!
//! The claim loop is here; handling a job is `jobs`, the heads waiting for CI `waiting`.

mod jobs;
mod waiting;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{watch, Notify};
use tracing::Instrument as _;

use super::fair::Running;
use super::metrics::Metrics;
use super::paced::Pacer;
use super::store::{now_ms, Job, NewDelivery, Store, MAX_ATTEMPTS, PARK_AFTER_ATTEMPTS};
use crate::app::forge_flow::FlowError;
use crate::app::pull_request::HandlerError;
use crate::github::app_auth::Installations;
use crate::github::events::Event;
use crate::github::types::{PrNumber, RepoName};
use crate::github::ForgeError;
use crate::model::CommitSha;
use crate::render::Renderer;

/// The longest one job may run before it is abandoned (and retried).
const JOB_TIMEOUT: Duration = Duration::from_secs(300);

pub struct Worker {
    pub store: Store,
    pub installations: Arc<Installations>,
    pub pacer: Arc<Pacer>,
    pub metrics: Arc<Metrics>,
    pub renderer: Arc<Renderer>,
    pub bot_login: String,
    /// This process's name in leases.
    pub owner: String,
    pub wake: Arc<Notify>,
    /// How long a claimed job is ours; renewed while it runs.
    pub lease: Duration,
    /// Signs the sticky comment's state.
    pub state_key: crate::github::sticky::StateKey,
    /// How long a head waits before the reconcile first checks it (the sweep's interval).
    pub reconcile_every: Duration,
    /// The jobs this process's workers run, per installation, shared by them all.
    pub running: Arc<Running>,
}

/// What a job works on.
enum Work {
    Event(Box<Event>),
    /// A waiting pull request, checked against GitHub (see [`reconcile`]).
    Reconcile(RepoName, PrNumber, String),
    /// A pull request watched for a reply that lands late (see [`crate::serve::late_writes`]), since
    /// the time given.
    LateWrites(RepoName, PrNumber, i64),
}

/// How a waiting pull request changed.
enum WaitChange {
    /// Its head now waits for CI's record.
    WaitsFor(PrNumber, CommitSha),
    /// A record decided this head.
    Decided(PrNumber, CommitSha),
    /// Closed, or its head scored already: it waits for nothing.
    NoLonger(PrNumber),
}

/// What a completed workflow run gave.
enum RunRecord {
    /// Its record decided this head of this PR; what was done.
    Applied(PrNumber, CommitSha, Vec<String>),
    /// It uploaded no record and none of the configured reports: why.
    Missing(String),
}

/// A job's end, and how it changed which pull requests wait.
struct Applied {
    ended: Ended,
    waiting: Option<(RepoName, WaitChange)>,
    /// A job to queue in its place (a fork's run, handed to its pull request's queue).
    handed: Option<NewDelivery>,
}

impl Applied {
    fn new(ended: Ended, waiting: Option<(RepoName, WaitChange)>) -> Applied {
        Applied {
            ended,
            waiting,
            handed: None,
        }
    }
}

/// How a job ended.
enum Ended {
    Done(String),
    Ignored(String),
    /// Not done yet: run it again at this time (no attempt counted), saying why.
    Again(i64, String),
}

/// Why a job did not end.
enum JobError {
    /// Try again later (a GitHub or database failure).
    Retry(String),
    /// A rate limit: try again at the reset, without counting an attempt.
    RateLimited(String, Duration),
    /// The token was refused: forget it and try again soon.
    Unauthorized(u64, String),
    /// Input that will never work (a malformed configuration, a forged record).
    Refused(String),
}

impl Worker {
    /// Claims and runs jobs until `stop` turns true; a job running then is finished.
    pub async fn run(self: Arc<Self>, mut stop: watch::Receiver<bool>) {
        let mut idle = Duration::from_millis(50);
        loop {
            if *stop.borrow() {
                return;
            }
            match self.claim_fairly().await {
                Ok(Some(job)) => {
                    idle = Duration::from_millis(50);
                    let _counted = self.running.start(job.installation_id);
                    let span = tracing::info_span!(
                        "job",
                        delivery = %job.delivery_id,
                        event = %job.event,
                        attempt = job.attempts
                    );
                    self.run_job(job).instrument(span).await;
                }
                Ok(None) => {
                    tokio::select! {
                        _ = self.wake.notified() => {}
                        _ = tokio::time::sleep(idle) => {}
                        _ = stop.changed() => {}
                    }
                    idle = (idle * 2).min(Duration::from_secs(1));
                }
                Err(e) => {
                    tracing::error!("claiming a job: {e}; trying again");
                    tokio::select! {
                        _ = tokio::time::sleep(Duration::from_secs(2)) => {}
                        _ = stop.changed() => {}
                    }
                }
            }
        }
    }

    /// The oldest runnable job of the installations this process runs the fewest jobs of
    /// ([`super::fair`]).
    async fn claim_fairly(&self) -> Result<Option<Job>, super::store::StoreError> {
        for avoid in self.running.avoid_levels() {
            let job = self
                .store
                .claim_avoiding(&self.owner, now_ms(), self.lease, &avoid)
                .await?;
            if job.is_some() {
                return Ok(job);
            }
        }
        Ok(None)
    }

    async fn run_job(&self, job: Job) {
        let work = tokio::time::timeout(JOB_TIMEOUT, self.process(&job));
        tokio::pin!(work);
        let mut renew = tokio::time::interval(self.lease / 3);
        renew.tick().await;
        let result = loop {
            tokio::select! {
                result = &mut work => break result.unwrap_or_else(|_| Err(JobError::Retry(format!(
                    "the job did not finish in {} s", JOB_TIMEOUT.as_secs())))),
                _ = renew.tick() => {
                    let until = now_ms() + i64::try_from(self.lease.as_millis()).unwrap_or(0);
                    if let Err(e) = self.store.extend(&job, &self.owner, until).await {
                        tracing::warn!("renewing the lease: {e}");
                    }
                }
            }
        };
        // What it read is kept for its next attempt only if it waits for a write turn.
        self.pacer.attempt_ended(job.seq);
        let latency = u64::try_from(now_ms() - job.received_at).ok();
        let store = &self.store;
        let finished = match result {
            Ok(Ended::Done(what)) => {
                let what = if what.is_empty() {
                    "applied".to_string()
                } else {
                    what
                };
                tracing::info!("done: {what}");
                self.metrics.job("done", latency);
                store.complete(&job, &self.owner, now_ms(), &what).await
            }
            Ok(Ended::Ignored(why)) => {
                tracing::info!("nothing to do: {why}");
                self.metrics.job("ignored", latency);
                store
                    .complete(&job, &self.owner, now_ms(), &format!("ignored: {why}"))
                    .await
            }
            Ok(Ended::Again(at, why)) => {
                tracing::debug!("again at {at}: {why}");
                store
                    .reschedule(&job, &self.owner, at, &why, false)
                    .await
                    .map(|()| true)
            }
            Err(JobError::Refused(why)) => {
                tracing::warn!("refused: {why}");
                self.metrics.job("refused", latency);
                store
                    .complete(&job, &self.owner, now_ms(), &format!("refused: {why}"))
                    .await
            }
            Err(JobError::RateLimited(why, wait)) => {
                tracing::warn!("rate limited; again in {} s: {why}", wait.as_secs());
                self.metrics.job("rate_limited", None);
                let at = now_ms() + i64::try_from(wait.as_millis()).unwrap_or(0);
                store
                    .reschedule(&job, &self.owner, at, &why, false)
                    .await
                    .map(|()| true)
            }
            Err(JobError::Unauthorized(installation, why)) => {
                tracing::warn!("token refused; minting a new one: {why}");
                self.installations.forget(installation).await;
                self.retry(&job, why, latency).await
            }
            Err(JobError::Retry(why)) => self.retry(&job, why, latency).await,
        };
        match finished {
            Ok(true) => {}
            Ok(false) => tracing::warn!("the lease was lost meanwhile; another worker has the job"),
            Err(e) => {
                tracing::error!("recording the job's end: {e}; it runs again when its lease ends")
            }
        }
    }

    async fn retry(
        &self,
        job: &Job,
        why: String,
        latency: Option<u64>,
    ) -> Result<bool, super::store::StoreError> {
        if job.attempts >= MAX_ATTEMPTS {
            tracing::error!("giving up after {} attempts: {why}", job.attempts);
            self.metrics.job("failed", latency);
            let outcome = format!("failed after {} attempts: {why}", job.attempts);
            return self
                .store
                .complete(job, &self.owner, now_ms(), &outcome)
                .await;
        }
        if job.attempts == PARK_AFTER_ATTEMPTS {
            tracing::warn!(
                "failed {} times; parked, so the later events of its pull request go on: {why}",
                job.attempts
            );
            self.store.park(job, &self.owner).await?;
        }
        // 2 s, 4 s, 8 s, ... up to 512 s.
        let wait = Duration::from_secs(1 << job.attempts.clamp(1, 9)).min(Duration::from_secs(600));
        tracing::warn!("failed; again in {} s: {why}", wait.as_secs());
        self.metrics.job("retried", None);
        let at = now_ms() + i64::try_from(wait.as_millis()).unwrap_or(0);
        self.store
            .reschedule(job, &self.owner, at, &why, true)
            .await
            .map(|()| true)
    }
}

/// What a failed step means for the job.
fn classify(installation: u64, error: FlowError) -> JobError {
    let forge_error = match &error {
        FlowError::Forge(e) | FlowError::Handler(HandlerError::Forge(e)) => Some(e),
        _ => None,
    };
    match (forge_error, &error) {
        (Some(ForgeError::Paced { wait } | ForgeError::RateLimited { wait, .. }), _) => {
            JobError::RateLimited(error.to_string(), *wait)
        }
        (Some(e), _) if is_rate_limit(e) => {
            JobError::RateLimited(e.to_string(), Duration::from_secs(60))
        }
        (Some(e), _) if e.status() == Some(401) => {
            JobError::Unauthorized(installation, e.to_string())
        }
        // What is gone (a deleted comment, a closed PR's ref) or refused as invalid stays
        // so: retrying would only hold up the PR's later events.
        (Some(e), _) if matches!(e.status(), Some(404 | 410 | 422)) => JobError::Refused(format!(
            "{e} (GitHub answered {}: a retry cannot succeed)",
            e.status().unwrap_or_default()
        )),
        (_, FlowError::Refused(why)) => JobError::Refused(why.clone()),
        (_, FlowError::Handler(HandlerError::NewerState(_))) => {
            JobError::Refused(error.to_string())
        }
        _ => JobError::Retry(format!("{error:#}")),
    }
}

fn is_rate_limit(e: &ForgeError) -> bool {
    match e {
        ForgeError::Status { status: 429, .. } => true,
        ForgeError::Status {
            status: 403,
            message,
            ..
        } => {
            let message = message.to_ascii_lowercase();
            message.contains("rate limit") || message.contains("abuse")
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answered(status: u16) -> JobError {
        classify(
            1,
            FlowError::Forge(ForgeError::Status {
                operation: "reactions/create-for-issue-comment",
                status,
                message: "Not Found".into(),
                details: Vec::new(),
                attempts: 1,
            }),
        )
    }

    #[test]
    fn what_is_gone_is_final_and_what_may_pass_is_retried() {
        for gone in [404, 410, 422] {
            assert!(
                matches!(answered(gone), JobError::Refused(ref why) if why.contains("cannot succeed")),
                "{gone}"
            );
        }
        assert!(matches!(answered(502), JobError::Retry(_)));
        assert!(matches!(answered(401), JobError::Unauthorized(1, _)));
        assert!(matches!(answered(429), JobError::RateLimited(..)));
    }
}
