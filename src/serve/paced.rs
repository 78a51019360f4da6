//! A [`Forge`] wrapper for the App: content writes are paced per installation, under
//! GitHub's secondary limit on content creation (about 80 a minute).
//!
//! Pacing is GCRA (a leaky bucket kept as one instant): a burst of [`BURST`] writes goes
//! at once, then one every `60 s / writes_per_minute`. A write that would wait up to
//! [`MAX_INLINE_WAIT`] waits; a longer wait is not slept inside the worker (which other
//! installations' jobs need): the job ends with [`ForgeError::Paced`] and is rescheduled for
//! when its installation may write again, without counting an attempt. Nothing is dropped.
//! With N replicas live on one database, each paces at its share (`--writes-per-minute` / N,
//! the burst too), so the installation's writes stay under the limit together.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use tokio::time::Instant;

use crate::github::checks::CheckRunSpec;
use crate::github::commands::Permission;
use crate::github::types::{
    CheckRun, CheckRunId, CheckSuiteId, Comment, CommentId, Identity, LabelSpec, PrCommit,
    PrNumber, PullRequest, Reaction, RepoName, RunId,
};
use crate::github::{Forge, ForgeError};

use super::store::{Job, Store};

/// Writes allowed at once before pacing starts.
pub const BURST: u32 = 10;

/// The pace of every installation's writes.
pub struct Pacer {
    /// One replica's interval between writes.
    alone: Duration,
    /// This replica's share: the interval and the burst, with the replicas live now.
    share: Mutex<(Duration, u32)>,
    turns: Mutex<Turns>,
    /// Reactions made lately: a job run again does not react (and pay a turn) twice.
    reacted: Mutex<Recent>,
}

#[derive(Default)]
struct Turns {
    /// Installation → the theoretical arrival time of the next write.
    next: HashMap<u64, Instant>,
    /// Turns taken for jobs that could not wait for them (job → when it comes): the job
    /// rescheduled to that instant writes then without queueing again, so jobs waiting
    /// for an installation's turns cannot take them from each other forever.
    reserved: HashMap<i64, Instant>,
}

/// A reservation a job never came back for (its lease went elsewhere) is dropped after
/// this long.
const RESERVATION_KEPT: Duration = Duration::from_secs(600);

impl Pacer {
    pub fn new(writes_per_minute: u32) -> Pacer {
        let alone = Duration::from_secs(60) / writes_per_minute.max(1);
        Pacer {
            alone,
            share: Mutex::new((alone, BURST)),
            turns: Mutex::new(Turns::default()),
            reacted: Mutex::new(Recent::default()),
        }
    }

    /// Waits until `installation` may write once more, if that is at most `max_wait`;
    /// otherwise says how long it would be. For a `job`, that later turn is taken and kept
    /// for it: when the job comes back then, its write goes without queueing again.
    pub async fn acquire(
        &self,
        installation: u64,
        max_wait: Duration,
        job: Option<i64>,
    ) -> Result<(), Duration> {
        let (interval, burst) = *self.share.lock().unwrap_or_else(|p| p.into_inner());
        let wait = {
            let mut turns = self.turns.lock().unwrap_or_else(|p| p.into_inner());
            let now = Instant::now();
            turns.reserved.retain(|_, at| *at + RESERVATION_KEPT > now);
            if let Some(at) = job.and_then(|job| turns.reserved.get(&job).copied()) {
                let wait = at.saturating_duration_since(now);
                if wait > max_wait {
                    return Err(wait);
                }
                turns.reserved.remove(&job.unwrap_or_default());
                wait
            } else {
                let tat = turns
                    .next
                    .get(&installation)
                    .copied()
                    .unwrap_or(now)
                    .max(now);
                let allowed_at = tat
                    .checked_sub(interval * burst.saturating_sub(1))
                    .unwrap_or(now);
                let wait = allowed_at.saturating_duration_since(now);
                if wait > max_wait && job.is_none() {
                    return Err(wait);
                }
                turns.next.insert(installation, tat + interval);
                if wait > max_wait {
                    turns.reserved.insert(job.unwrap_or_default(), allowed_at);
                    return Err(wait);
                }
                wait
            }
        };
        if !wait.is_zero() {
            tracing::debug!(
                installation,
                wait_ms = wait.as_millis() as u64,
                "pacing writes"
            );
            tokio::time::sleep(wait).await;
        }
        Ok(())
    }

    /// `replicas` pace writes at once (the live ones on the database): this one takes its
    /// share of the rate and of the burst.
    pub fn share_with(&self, replicas: u32) {
        let n = replicas.max(1);
        let mut share = self.share.lock().unwrap_or_else(|p| p.into_inner());
        *share = (self.alone * n, BURST.div_ceil(n));
    }

    /// Whether this reaction was made lately (by any job of this process).
    fn reacted(&self, key: &ReactionKey) -> bool {
        self.reacted
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .set
            .contains(key)
    }

    fn remember_reaction(&self, key: ReactionKey) {
        let mut recent = self.reacted.lock().unwrap_or_else(|p| p.into_inner());
        if recent.set.insert(key.clone()) {
            recent.order.push_back(key);
            if recent.order.len() > REACTIONS_KEPT {
                if let Some(old) = recent.order.pop_front() {
                    recent.set.remove(&old);
                }
            }
        }
    }
}

/// How many reactions are remembered.
const REACTIONS_KEPT: usize = 10_000;

/// Installation, repository, comment, reaction.
type ReactionKey = (u64, String, u64, Reaction);

#[derive(Default)]
struct Recent {
    set: HashSet<ReactionKey>,
    order: VecDeque<ReactionKey>,
}

/// The longest a write waits for its installation's turn inside a worker.
pub const MAX_INLINE_WAIT: Duration = Duration::from_secs(1);

pub struct PacedForge {
    pub inner: Arc<dyn Forge>,
    pub installation: u64,
    pub pacer: Arc<Pacer>,
    /// The job the writes are for, checked before each one.
    pub fence: Option<Fence>,
    /// The pull requests this forge posted a reply on ([`PacedForge::replied_on`]).
    pub replied: Mutex<Vec<(RepoName, PrNumber)>>,
}

/// A claimed job, and who claimed it: a write is made only while the claim holds.
pub struct Fence {
    pub store: Store,
    pub job: Job,
    pub owner: String,
}

impl PacedForge {
    /// The pull requests it posted a reply on (a comment with a reply marker), each once.
    pub fn replied_on(&self) -> Vec<(RepoName, PrNumber)> {
        let all = self.replied.lock().map(|r| r.clone()).unwrap_or_default();
        let mut once = Vec::new();
        for pull in all {
            if !once.contains(&pull) {
                once.push(pull);
            }
        }
        once
    }

    /// Waits for the installation's turn, then writes, if the job is still this worker's,
    /// with the write marked in flight in the store while it is made.
    async fn write<T, F>(&self, call: F) -> Result<T, ForgeError>
    where
        F: std::future::Future<Output = Result<T, ForgeError>>,
    {
        let job = self.fence.as_ref().map(|f| f.job.seq);
        self.pacer
            .acquire(self.installation, MAX_INLINE_WAIT, job)
            .await
            .map_err(|wait| ForgeError::Paced { wait })?;
        let Some(fence) = &self.fence else {
            return call.await;
        };
        let now = super::store::now_ms();
        let held = fence
            .store
            .begin_write(&fence.job, &fence.owner, now)
            .await
            .map_err(|e| ForgeError::Transport {
                operation: "checking the job's lease",
                message: e.to_string(),
                attempts: 1,
            })?;
        if !held {
            return Err(ForgeError::LeaseLost);
        }
        let result = call.await;
        // Left marked, the job's takeover waits for the settle: slower, never wrong.
        if let Err(e) = fence.store.end_write(&fence.job, &fence.owner).await {
            tracing::warn!("marking the write to GitHub done: {e}");
        }
        result
    }
}

#[async_trait]
impl Forge for PacedForge {
    async fn identity(&self) -> Result<Identity, ForgeError> {
        self.inner.identity().await
    }
    async fn list_comments(
        &self,
        repo: &RepoName,
        pr: PrNumber,
    ) -> Result<Vec<Comment>, ForgeError> {
        self.inner.list_comments(repo, pr).await
    }
    async fn create_comment(
        &self,
        repo: &RepoName,
        pr: PrNumber,
        body: &str,
    ) -> Result<Comment, ForgeError> {
        if crate::github::forge::reply_marker_of(body).is_some() {
            if let Ok(mut replied) = self.replied.lock() {
                replied.push((repo.clone(), pr));
            }
        }
        self.write(self.inner.create_comment(repo, pr, body)).await
    }
    async fn update_comment(
        &self,
        repo: &RepoName,
        id: CommentId,
        body: &str,
    ) -> Result<Comment, ForgeError> {
        self.write(self.inner.update_comment(repo, id, body)).await
    }
    async fn delete_comment(&self, repo: &RepoName, id: CommentId) -> Result<(), ForgeError> {
        self.write(self.inner.delete_comment(repo, id)).await
    }
    async fn add_reaction(
        &self,
        repo: &RepoName,
        comment: CommentId,
        reaction: Reaction,
    ) -> Result<(), ForgeError> {
        // A job run again (its reply was paced) does not react again: GitHub would answer
        // 200, but the turn it takes is the reply's.
        let key = (self.installation, repo.to_string(), comment.0, reaction);
        if self.pacer.reacted(&key) {
            return Ok(());
        }
        self.write(self.inner.add_reaction(repo, comment, reaction))
            .await?;
        self.pacer.remember_reaction(key);
        Ok(())
    }
    async fn add_label(
        &self,
        repo: &RepoName,
        pr: PrNumber,
        label: &LabelSpec,
    ) -> Result<(), ForgeError> {
        self.write(self.inner.add_label(repo, pr, label)).await
    }
    async fn remove_label(
        &self,
        repo: &RepoName,
        pr: PrNumber,
        name: &str,
    ) -> Result<(), ForgeError> {
        self.write(self.inner.remove_label(repo, pr, name)).await
    }
    async fn label_added_by(
        &self,
        repo: &RepoName,
        pr: PrNumber,
        name: &str,
    ) -> Result<Option<String>, ForgeError> {
        self.inner.label_added_by(repo, pr, name).await
    }
    async fn permission(&self, repo: &RepoName, user: &str) -> Result<Permission, ForgeError> {
        self.inner.permission(repo, user).await
    }
    async fn pull_request(&self, repo: &RepoName, pr: PrNumber) -> Result<PullRequest, ForgeError> {
        self.inner.pull_request(repo, pr).await
    }
    async fn pull_request_commits(
        &self,
        repo: &RepoName,
        pr: PrNumber,
    ) -> Result<Vec<PrCommit>, ForgeError> {
        self.inner.pull_request_commits(repo, pr).await
    }
    async fn create_check_run(
        &self,
        repo: &RepoName,
        spec: &CheckRunSpec,
    ) -> Result<CheckRunId, ForgeError> {
        self.write(self.inner.create_check_run(repo, spec)).await
    }
    async fn update_check_run(
        &self,
        repo: &RepoName,
        id: CheckRunId,
        spec: &CheckRunSpec,
    ) -> Result<(), ForgeError> {
        self.write(self.inner.update_check_run(repo, id, spec))
            .await
    }
    async fn list_check_runs(
        &self,
        repo: &RepoName,
        git_ref: &str,
    ) -> Result<Vec<CheckRun>, ForgeError> {
        self.inner.list_check_runs(repo, git_ref).await
    }
    async fn rerequest_check_suite(
        &self,
        repo: &RepoName,
        suite: CheckSuiteId,
    ) -> Result<(), ForgeError> {
        self.write(self.inner.rerequest_check_suite(repo, suite))
            .await
    }
    async fn download_artifact_file(
        &self,
        repo: &RepoName,
        run: RunId,
        artifact: &str,
        file: &str,
    ) -> Result<Vec<u8>, ForgeError> {
        self.inner
            .download_artifact_file(repo, run, artifact, file)
            .await
    }
    async fn download_artifact_files(
        &self,
        repo: &RepoName,
        run: RunId,
        artifact: &str,
        matches: &(dyn for<'n> Fn(&'n str) -> bool + Sync),
    ) -> Result<Vec<(String, Vec<u8>)>, ForgeError> {
        self.inner
            .download_artifact_files(repo, run, artifact, matches)
            .await
    }
    async fn file_content(
        &self,
        repo: &RepoName,
        git_ref: &str,
        path: &str,
    ) -> Result<Option<Vec<u8>>, ForgeError> {
        self.inner.file_content(repo, git_ref, path).await
    }
    async fn compare(
        &self,
        repo: &RepoName,
        base: &str,
        head: &str,
    ) -> Result<crate::github::compare::Comparison, ForgeError> {
        self.inner.compare(repo, base, head).await
    }
    async fn rerun_pull_request_runs(
        &self,
        repo: &RepoName,
        head_sha: &str,
    ) -> Result<Vec<RunId>, ForgeError> {
        self.write(self.inner.rerun_pull_request_runs(repo, head_sha))
            .await
    }
    async fn completed_pull_request_runs(
        &self,
        repo: &RepoName,
        head_sha: &str,
    ) -> Result<Vec<crate::github::events::WorkflowRunEvent>, ForgeError> {
        self.inner.completed_pull_request_runs(repo, head_sha).await
    }
    async fn dispatch_workflow(
        &self,
        repo: &RepoName,
        workflow: &str,
        git_ref: &str,
        inputs: &BTreeMap<String, String>,
    ) -> Result<(), ForgeError> {
        self.write(
            self.inner
                .dispatch_workflow(repo, workflow, git_ref, inputs),
        )
        .await
    }
    async fn repository_dispatch(
        &self,
        repo: &RepoName,
        event_type: &str,
        client_payload: &serde_json::Value,
    ) -> Result<(), ForgeError> {
        self.write(
            self.inner
                .repository_dispatch(repo, event_type, client_payload),
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_job_that_cannot_wait_keeps_the_turn_it_was_given() {
        // One write every 100 ms after the burst.
        let pacer = Pacer::new(600);
        for _ in 0..BURST {
            pacer.acquire(1, Duration::ZERO, None).await.unwrap();
        }
        // Job 7 cannot write now: the next turn is taken for it; job 8 queues behind it.
        let first = pacer.acquire(1, Duration::ZERO, Some(7)).await.unwrap_err();
        let second = pacer.acquire(1, Duration::ZERO, Some(8)).await.unwrap_err();
        assert!(
            second >= first + Duration::from_millis(90),
            "{first:?} then {second:?}"
        );
        // A caller without a job takes no turn when it cannot wait.
        let third = pacer.acquire(1, Duration::ZERO, None).await.unwrap_err();
        let fourth = pacer.acquire(1, Duration::ZERO, None).await.unwrap_err();
        assert!(fourth.abs_diff(third) < Duration::from_millis(20));
        // Job 7 back at its turn writes without queueing again; job 8's turn stands.
        pacer
            .acquire(1, first + Duration::from_millis(50), Some(7))
            .await
            .unwrap();
        let still = pacer.acquire(1, Duration::ZERO, Some(8)).await.unwrap_err();
        assert!(still <= second, "{still:?} after {second:?}");
        // Another installation has turns of its own.
        pacer.acquire(2, Duration::ZERO, Some(9)).await.unwrap();
    }

    /// Two replicas live: each writes half as often, and bursts half as much.
    #[tokio::test]
    async fn a_replica_among_two_paces_at_half_the_rate() {
        let pacer = Pacer::new(600);
        pacer.share_with(2);
        for _ in 0..BURST.div_ceil(2) {
            pacer.acquire(1, Duration::ZERO, None).await.unwrap();
        }
        let wait = pacer.acquire(1, Duration::ZERO, None).await.unwrap_err();
        assert!(
            wait > Duration::from_millis(150) && wait <= Duration::from_millis(200),
            "{wait:?}"
        );
        // Alone again: the full rate.
        pacer.share_with(1);
        let wait = pacer.acquire(1, Duration::ZERO, None).await.unwrap_err();
        assert!(wait <= Duration::from_millis(200), "{wait:?}");
    }
}
