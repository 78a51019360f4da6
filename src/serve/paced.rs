//! A [`Forge`] wrapper for the App: content writes are paced per installation, under
//! GitHub's secondary limit on content creation (about 80 a minute).
//!
//! Pacing is GCRA (a leaky bucket kept as one instant): a burst of [`BURST`] writes goes
//! at once, then one every `60 s / writes_per_minute`. A write that would wait up to
//! [`MAX_INLINE_WAIT`] waits; a longer wait is not slept inside the worker (which other
//! installations' jobs need): the job ends with [`ForgeError::Paced`] and is rescheduled for
//! when its installation may write again, without counting an attempt. Nothing is dropped,
//! and nothing is read twice for the wait: what the job read is kept for its next attempt
//! (`Reads`), less what its writes can change (a reply: the comments).
//! Replies to people without the permission yield their turns to every other write
//! ([`Turn::Courtesy`]).
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
    /// What each job read from GitHub since its last write ([`Reads`]).
    reads: Mutex<HashMap<i64, Reads>>,
}

/// A job's reads since its last write, kept across its reschedule for a write turn: the job
/// runs again from the start, and reads again only what changed since (nothing, when it
/// waited for its turn alone). A write clears them; any other end of the job drops them.
#[derive(Default)]
struct Reads {
    /// Set when the job's attempt ended waiting for its write turn: only then are the reads
    /// kept for its next attempt.
    paced: bool,
    since: Option<Instant>,
    answers: HashMap<String, Arc<dyn std::any::Any + Send + Sync>>,
}

/// The kinds of read a write can change (each read's key starts with its kind and a space).
const COMMENTS: &str = "comments";
const LABELS: &str = "label";
const PULL: &str = "pull";
const CHECK_RUNS: &str = "check runs";
const RUNS: &str = "runs";

/// Reads kept for a job's next attempt at most this long.
const READS_KEPT: Duration = Duration::from_secs(300);

#[derive(Default)]
struct Turns {
    /// Installation → the theoretical arrival time of the next write.
    next: HashMap<u64, Instant>,
    /// Turns taken for jobs that could not wait for them: the job rescheduled to that
    /// instant writes then without queueing again, so jobs waiting for an installation's
    /// turns cannot take them from each other forever.
    reserved: HashMap<i64, Kept>,
}

/// Whose turn a write takes first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Turn {
    /// Everything the App writes for the people who may decide, and for CI's records.
    First,
    /// A reply (and its reaction) to someone without the permission: it yields its turn.
    Courtesy,
}

/// A turn kept for a job.
#[derive(Clone, Copy)]
struct Kept {
    installation: u64,
    at: Instant,
    turn: Turn,
}

impl Turns {
    /// A write that would go at `at` takes the earliest courtesy turn kept before it on the
    /// installation, if there is one; that job's turn becomes `at`. Returns the turn taken.
    fn yielded(&mut self, installation: u64, at: Instant) -> Instant {
        let earliest = self
            .reserved
            .values_mut()
            .filter(|k| k.installation == installation && k.turn == Turn::Courtesy && k.at < at)
            .min_by_key(|k| k.at);
        match earliest {
            Some(kept) => std::mem::replace(&mut kept.at, at),
            None => at,
        }
    }
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
            reads: Mutex::new(HashMap::new()),
        }
    }

    /// Waits until `installation` may write once more, if that is at most `max_wait`;
    /// otherwise says how long it would be. For a `job`, that later turn is taken and kept
    /// for it: when the job comes back then, its write goes without queueing again.
    ///
    /// A [`Turn::Courtesy`] write (a reply to someone without the permission) yields: a
    /// write of any other kind that would wait takes the earliest turn kept for a courtesy
    /// write instead, and that job gets the later turn. The installation's pace is the same;
    /// a reader commenting on forty pull requests delays a maintainer's command by nothing.
    pub async fn acquire(
        &self,
        installation: u64,
        max_wait: Duration,
        job: Option<i64>,
        turn: Turn,
    ) -> Result<(), Duration> {
        let (interval, burst) = *self.share.lock().unwrap_or_else(|p| p.into_inner());
        let wait = {
            let mut turns = self.turns.lock().unwrap_or_else(|p| p.into_inner());
            let now = Instant::now();
            turns
                .reserved
                .retain(|_, kept| kept.at + RESERVATION_KEPT > now);
            if let Some(kept) = job.and_then(|job| turns.reserved.get(&job).copied()) {
                let wait = kept.at.saturating_duration_since(now);
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
                let mut allowed_at = tat
                    .checked_sub(interval * burst.saturating_sub(1))
                    .unwrap_or(now);
                if allowed_at > now && turn == Turn::First {
                    allowed_at = turns.yielded(installation, allowed_at);
                }
                let wait = allowed_at.saturating_duration_since(now);
                if wait > max_wait && job.is_none() {
                    return Err(wait);
                }
                turns.next.insert(installation, tat + interval);
                if wait > max_wait {
                    let kept = Kept {
                        installation,
                        at: allowed_at,
                        turn,
                    };
                    turns.reserved.insert(job.unwrap_or_default(), kept);
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

    /// What `job` read as `key` since its last write, if it was kept.
    fn read_before<T: Clone + 'static>(&self, job: i64, key: &str) -> Option<T> {
        let reads = self.reads.lock().unwrap_or_else(|p| p.into_inner());
        let kept = reads.get(&job)?;
        if kept.since.is_none_or(|since| since.elapsed() > READS_KEPT) {
            return None;
        }
        kept.answers.get(key)?.downcast_ref::<T>().cloned()
    }

    fn keep_read<T: Send + Sync + 'static>(&self, job: i64, key: String, answer: T) {
        let mut reads = self.reads.lock().unwrap_or_else(|p| p.into_inner());
        let kept = reads.entry(job).or_default();
        kept.since.get_or_insert_with(Instant::now);
        kept.answers.insert(key, Arc::new(answer));
    }

    /// `job` wrote (or tried to, `paced`: it waits for its turn): what it read of the kinds
    /// the write `changes` is forgotten, and after a wait for its turn the rest is kept for
    /// the next attempt.
    fn wrote(&self, job: i64, paced: bool, changes: &[&str]) {
        let mut reads = self.reads.lock().unwrap_or_else(|p| p.into_inner());
        let kept = reads.entry(job).or_default();
        if paced {
            kept.paced = true;
        } else {
            kept.answers.retain(|key, _| {
                !changes
                    .iter()
                    .any(|kind| key.strip_prefix(kind).is_some_and(|r| r.starts_with(' ')))
            });
            if kept.answers.is_empty() {
                kept.since = None;
            }
        }
    }

    /// `job`'s attempt ended: its reads are kept only if it waits for a write turn.
    pub fn attempt_ended(&self, job: i64) {
        let mut reads = self.reads.lock().unwrap_or_else(|p| p.into_inner());
        match reads.get_mut(&job) {
            Some(kept) if kept.paced => kept.paced = false,
            Some(_) => {
                reads.remove(&job);
            }
            None => {}
        }
        reads.retain(|_, kept| kept.since.is_none_or(|since| since.elapsed() <= READS_KEPT));
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
    /// What this job's writes were so far.
    pub written: Mutex<Written>,
}

/// What a job wrote, as far as the worker and the pacer care.
#[derive(Default)]
pub struct Written {
    /// The pull requests it posted a reply on ([`PacedForge::replied_on`]).
    replied: Vec<(RepoName, PrNumber)>,
    /// It writes for someone without the permission ([`Forge::courtesy`]): its writes
    /// from then on are [`Turn::Courtesy`].
    courtesy: bool,
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
        let all = self
            .written
            .lock()
            .map(|w| w.replied.clone())
            .unwrap_or_default();
        let mut once = Vec::new();
        for pull in all {
            if !once.contains(&pull) {
                once.push(pull);
            }
        }
        once
    }

    /// A read, answered from what this job read before its wait for a write turn
    /// ([`Reads`]) when it was kept.
    async fn read<T, F>(&self, key: String, call: F) -> Result<T, ForgeError>
    where
        T: Clone + Send + Sync + 'static,
        F: std::future::Future<Output = Result<T, ForgeError>>,
    {
        let Some(job) = self.fence.as_ref().map(|f| f.job.seq) else {
            return call.await;
        };
        if let Some(answer) = self.pacer.read_before::<T>(job, &key) {
            return Ok(answer);
        }
        let answer = call.await?;
        self.pacer.keep_read(job, key, answer.clone());
        Ok(answer)
    }

    /// Waits for the installation's turn, then writes, if the job is still this worker's,
    /// with the write marked in flight in the store while it is made. `changes`: the kinds
    /// of read the write can change (what the job read of them is read again after it).
    async fn write<T, F>(&self, changes: &[&str], call: F) -> Result<T, ForgeError>
    where
        F: std::future::Future<Output = Result<T, ForgeError>>,
    {
        let job = self.fence.as_ref().map(|f| f.job.seq);
        let turn = match self.written.lock().map(|w| w.courtesy) {
            Ok(true) => Turn::Courtesy,
            _ => Turn::First,
        };
        if let Err(wait) = self
            .pacer
            .acquire(self.installation, MAX_INLINE_WAIT, job, turn)
            .await
        {
            if let Some(job) = job {
                self.pacer.wrote(job, true, changes);
            }
            return Err(ForgeError::Paced { wait });
        }
        if let Some(job) = job {
            self.pacer.wrote(job, false, changes);
        }
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
    fn courtesy(&self) {
        if let Ok(mut written) = self.written.lock() {
            written.courtesy = true;
        }
    }
    async fn list_comments(
        &self,
        repo: &RepoName,
        pr: PrNumber,
    ) -> Result<Vec<Comment>, ForgeError> {
        self.read(
            format!("{COMMENTS} {repo}#{}", pr.0),
            self.inner.list_comments(repo, pr),
        )
        .await
    }
    async fn create_comment(
        &self,
        repo: &RepoName,
        pr: PrNumber,
        body: &str,
    ) -> Result<Comment, ForgeError> {
        if crate::github::forge::reply_marker_of(body).is_some() {
            if let Ok(mut written) = self.written.lock() {
                written.replied.push((repo.clone(), pr));
            }
        }
        self.write(&[COMMENTS], self.inner.create_comment(repo, pr, body))
            .await
    }
    async fn update_comment(
        &self,
        repo: &RepoName,
        id: CommentId,
        body: &str,
    ) -> Result<Comment, ForgeError> {
        self.write(&[COMMENTS], self.inner.update_comment(repo, id, body))
            .await
    }
    async fn delete_comment(&self, repo: &RepoName, id: CommentId) -> Result<(), ForgeError> {
        self.write(&[COMMENTS], self.inner.delete_comment(repo, id))
            .await
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
        self.write(&[], self.inner.add_reaction(repo, comment, reaction))
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
        self.write(&[LABELS, PULL], self.inner.add_label(repo, pr, label))
            .await
    }
    async fn remove_label(
        &self,
        repo: &RepoName,
        pr: PrNumber,
        name: &str,
    ) -> Result<(), ForgeError> {
        self.write(&[LABELS, PULL], self.inner.remove_label(repo, pr, name))
            .await
    }
    async fn label_added_by(
        &self,
        repo: &RepoName,
        pr: PrNumber,
        name: &str,
    ) -> Result<Option<String>, ForgeError> {
        self.read(
            format!("{LABELS} {repo}#{} {name}", pr.0),
            self.inner.label_added_by(repo, pr, name),
        )
        .await
    }
    async fn permission(&self, repo: &RepoName, user: &str) -> Result<Permission, ForgeError> {
        self.read(
            format!("permission {repo} {user}"),
            self.inner.permission(repo, user),
        )
        .await
    }
    async fn pull_request(&self, repo: &RepoName, pr: PrNumber) -> Result<PullRequest, ForgeError> {
        self.read(
            format!("{PULL} {repo}#{}", pr.0),
            self.inner.pull_request(repo, pr),
        )
        .await
    }
    async fn pull_request_commits(
        &self,
        repo: &RepoName,
        pr: PrNumber,
    ) -> Result<Vec<PrCommit>, ForgeError> {
        self.read(
            format!("commits {repo}#{}", pr.0),
            self.inner.pull_request_commits(repo, pr),
        )
        .await
    }
    async fn create_check_run(
        &self,
        repo: &RepoName,
        spec: &CheckRunSpec,
    ) -> Result<CheckRunId, ForgeError> {
        self.write(&[CHECK_RUNS], self.inner.create_check_run(repo, spec))
            .await
    }
    async fn update_check_run(
        &self,
        repo: &RepoName,
        id: CheckRunId,
        spec: &CheckRunSpec,
    ) -> Result<(), ForgeError> {
        self.write(&[CHECK_RUNS], self.inner.update_check_run(repo, id, spec))
            .await
    }
    async fn list_check_runs(
        &self,
        repo: &RepoName,
        git_ref: &str,
    ) -> Result<Vec<CheckRun>, ForgeError> {
        self.read(
            format!("{CHECK_RUNS} {repo} {git_ref}"),
            self.inner.list_check_runs(repo, git_ref),
        )
        .await
    }
    async fn rerequest_check_suite(
        &self,
        repo: &RepoName,
        suite: CheckSuiteId,
    ) -> Result<(), ForgeError> {
        self.write(&[CHECK_RUNS], self.inner.rerequest_check_suite(repo, suite))
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
        self.read(
            format!("file {repo} {git_ref} {path}"),
            self.inner.file_content(repo, git_ref, path),
        )
        .await
    }
    async fn compare(
        &self,
        repo: &RepoName,
        base: &str,
        head: &str,
    ) -> Result<crate::github::compare::Comparison, ForgeError> {
        self.read(
            format!("compare {repo} {base}...{head}"),
            self.inner.compare(repo, base, head),
        )
        .await
    }
    async fn rerun_pull_request_runs(
        &self,
        repo: &RepoName,
        head_sha: &str,
    ) -> Result<Vec<RunId>, ForgeError> {
        self.write(
            &[RUNS, CHECK_RUNS],
            self.inner.rerun_pull_request_runs(repo, head_sha),
        )
        .await
    }
    async fn completed_pull_request_runs(
        &self,
        repo: &RepoName,
        head_sha: &str,
    ) -> Result<Vec<crate::github::events::WorkflowRunEvent>, ForgeError> {
        self.read(
            format!("{RUNS} {repo} {head_sha}"),
            self.inner.completed_pull_request_runs(repo, head_sha),
        )
        .await
    }
    async fn dispatch_workflow(
        &self,
        repo: &RepoName,
        workflow: &str,
        git_ref: &str,
        inputs: &BTreeMap<String, String>,
    ) -> Result<(), ForgeError> {
        self.write(
            &[RUNS, CHECK_RUNS],
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
            &[RUNS, CHECK_RUNS],
            self.inner
                .repository_dispatch(repo, event_type, client_payload),
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pacer of one write every 100 ms whose installation 1 has spent its burst.
    async fn after_the_burst() -> Pacer {
        let pacer = Pacer::new(600);
        for _ in 0..BURST {
            pacer
                .acquire(1, Duration::ZERO, None, Turn::First)
                .await
                .unwrap();
        }
        pacer
    }

    #[tokio::test]
    async fn a_job_that_cannot_wait_keeps_the_turn_it_was_given() {
        let pacer = after_the_burst().await;
        // Job 7 cannot write now: the next turn is taken for it; job 8 queues behind it.
        let first = pacer
            .acquire(1, Duration::ZERO, Some(7), Turn::First)
            .await
            .unwrap_err();
        let second = pacer
            .acquire(1, Duration::ZERO, Some(8), Turn::First)
            .await
            .unwrap_err();
        assert!(
            second >= first + Duration::from_millis(90),
            "{first:?} then {second:?}"
        );
        // A caller without a job takes no turn when it cannot wait.
        let third = pacer
            .acquire(1, Duration::ZERO, None, Turn::First)
            .await
            .unwrap_err();
        let fourth = pacer
            .acquire(1, Duration::ZERO, None, Turn::First)
            .await
            .unwrap_err();
        assert!(fourth.abs_diff(third) < Duration::from_millis(20));
        // Job 7 back at its turn writes without queueing again; job 8's turn stands.
        pacer
            .acquire(1, first + Duration::from_millis(50), Some(7), Turn::First)
            .await
            .unwrap();
        let still = pacer
            .acquire(1, Duration::ZERO, Some(8), Turn::First)
            .await
            .unwrap_err();
        assert!(still <= second, "{still:?} after {second:?}");
        // Another installation has turns of its own.
        pacer
            .acquire(2, Duration::ZERO, Some(9), Turn::First)
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn a_courtesy_write_yields_its_turn_to_a_maintainers() {
        let pacer = after_the_burst().await;
        // Replies to three readers take the next three turns.
        let mut readers = Vec::new();
        for job in 1..=3 {
            let wait = pacer
                .acquire(1, Duration::ZERO, Some(job), Turn::Courtesy)
                .await;
            readers.push(wait.unwrap_err());
        }
        // A maintainer's write then goes at the first of them, not after the third.
        let maintainer = pacer
            .acquire(1, Duration::ZERO, Some(10), Turn::First)
            .await
            .unwrap_err();
        assert!(
            maintainer.abs_diff(readers[0]) < Duration::from_millis(20),
            "{maintainer:?}, readers at {readers:?}"
        );
        // The first reader's turn moved to the end; the others keep theirs.
        let moved = pacer
            .acquire(1, Duration::ZERO, Some(1), Turn::Courtesy)
            .await;
        assert!(moved.unwrap_err() >= readers[2] + Duration::from_millis(80));
        let kept = pacer
            .acquire(1, Duration::ZERO, Some(2), Turn::Courtesy)
            .await;
        assert!(kept.unwrap_err() <= readers[1]);
        // A courtesy write never takes a turn from another.
        let late = pacer
            .acquire(1, Duration::ZERO, Some(4), Turn::Courtesy)
            .await;
        assert!(late.unwrap_err() > readers[2] + Duration::from_millis(80));
        let kept = pacer
            .acquire(1, Duration::ZERO, Some(3), Turn::Courtesy)
            .await;
        assert!(kept.unwrap_err() <= readers[2]);
    }

    #[test]
    fn a_jobs_reads_are_kept_only_across_its_waits_for_a_turn() {
        let pacer = Pacer::new(60);
        let key = "pull acme/widgets#1";
        pacer.keep_read(7, key.into(), 41_u32);
        assert_eq!(
            pacer.read_before::<u32>(7, key),
            Some(41),
            "within the attempt"
        );
        assert_eq!(pacer.read_before::<u32>(8, key), None, "another job's");
        assert_eq!(pacer.read_before::<String>(7, key), None, "another type");
        // It waits for a write turn: its next attempt reads nothing again.
        pacer.wrote(7, true, &[PULL]);
        pacer.attempt_ended(7);
        assert_eq!(pacer.read_before::<u32>(7, key), Some(41));
        // That attempt ends otherwise (done, or a failure): forgotten.
        pacer.attempt_ended(7);
        assert_eq!(pacer.read_before::<u32>(7, key), None);
        // A write forgets what was read of the kinds it can change, and only that: a
        // reply changes the comments, not the pull request.
        let comments = "comments acme/widgets#1";
        pacer.keep_read(7, key.into(), 42_u32);
        pacer.keep_read(7, comments.into(), 3_u32);
        pacer.wrote(7, false, &[COMMENTS]);
        assert_eq!(pacer.read_before::<u32>(7, comments), None);
        assert_eq!(pacer.read_before::<u32>(7, key), Some(42));
        // A label changes the pull request (its labels); "runs" is not "check runs".
        pacer.keep_read(7, "check runs acme/widgets abc".into(), 1_u32);
        pacer.wrote(7, false, &[LABELS, PULL, RUNS]);
        assert_eq!(pacer.read_before::<u32>(7, key), None);
        assert_eq!(
            pacer.read_before::<u32>(7, "check runs acme/widgets abc"),
            Some(1)
        );
    }

    /// Two replicas live: each writes half as often, and bursts half as much.
    #[tokio::test]
    async fn a_replica_among_two_paces_at_half_the_rate() {
        let pacer = Pacer::new(600);
        pacer.share_with(2);
        for _ in 0..BURST.div_ceil(2) {
            pacer
                .acquire(1, Duration::ZERO, None, Turn::First)
                .await
                .unwrap();
        }
        let wait = pacer
            .acquire(1, Duration::ZERO, None, Turn::First)
            .await
            .unwrap_err();
        assert!(
            wait > Duration::from_millis(150) && wait <= Duration::from_millis(200),
            "{wait:?}"
        );
        // Alone again: the full rate.
        pacer.share_with(1);
        let wait = pacer
            .acquire(1, Duration::ZERO, None, Turn::First)
            .await
            .unwrap_err();
        assert!(wait <= Duration::from_millis(200), "{wait:?}");
    }
}
