//! Workers: claim a delivery, apply it to its pull request through the one handler core,
//! and mark it done; or put it back with backoff. No pull-request code ever runs here:
//! scores come from the record CI uploaded, the configuration from the base commit.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use serde::Deserialize;
use tokio::sync::{watch, Notify};
use tracing::Instrument as _;

use super::fair::Running;
use super::intake::job_key;
use super::metrics::Metrics;
use super::paced::{Fence, PacedForge, Pacer};
use super::reconcile;
use super::store::{now_ms, Job, NewDelivery, Store, Waiting, MAX_ATTEMPTS, PARK_AFTER_ATTEMPTS};
use crate::app::forge_flow::{self, FlowError};
use crate::app::pull_request::{Handler, HandlerError, Input};
use crate::github::app_auth::Installations;
use crate::github::events::{self, Event, Parsed, PrAction};
use crate::github::types::{PrNumber, RepoName};
use crate::github::{Forge, ForgeError};
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

    async fn process(&self, job: &Job) -> Result<Ended, JobError> {
        if let Some(why) = &job.damaged {
            return Err(JobError::Refused(why.clone()));
        }
        if job.event.starts_with("installation") {
            return self.installation(job).await;
        }
        let work = if job.event == reconcile::EVENT {
            let payload: reconcile::Payload = serde_json::from_slice(&job.payload)
                .map_err(|e| JobError::Refused(format!("a reconcile job's payload: {e}")))?;
            let repo = payload
                .repository
                .full_name
                .parse()
                .map_err(|e| JobError::Refused(format!("a reconcile job's repository: {e}")))?;
            let pr = PrNumber(u64::try_from(payload.pull_request.number).unwrap_or(0));
            Work::Reconcile(repo, pr, payload.head_sha)
        } else {
            match events::parse_event(&job.event, &job.payload) {
                Ok(Parsed::Event(event)) => Work::Event(Box::new(event)),
                Ok(Parsed::Ignored(why)) => return Ok(Ended::Ignored(why)),
                Err(e) => return Err(JobError::Refused(e.to_string())),
            }
        };
        let Some(installation) = job.installation_id.and_then(|i| u64::try_from(i).ok()) else {
            return Ok(Ended::Ignored("the delivery names no installation".into()));
        };
        let removed = self
            .store
            .installation_removed(installation as i64)
            .await
            .map_err(|e| JobError::Retry(e.to_string()))?;
        if removed {
            if let Work::Reconcile(repo, pr, _) = &work {
                // Nothing of this installation is acted on: the PR waits no more.
                self.note_waiting(repo, installation, WaitChange::NoLonger(*pr))
                    .await
                    .map_err(|e| JobError::Retry(e.to_string()))?;
            }
            return Ok(Ended::Ignored(format!(
                "installation {installation} was removed"
            )));
        }
        if let Work::Event(event) = &work {
            // Most comments hold no command: no API call for those.
            if let Event::Comment(comment) = event.as_ref() {
                // The App's own comments (its prompt quotes the gap-report template) are
                // never work.
                if comment.author.login.eq_ignore_ascii_case(&self.bot_login) {
                    return Ok(Ended::Ignored("the App's own comment".into()));
                }
                if !crate::app::forge_flow::holds_work(&comment.body) {
                    return Ok(Ended::Ignored(
                        "the comment holds no /iterate command and no CONTEXT_GAP_REPORT".into(),
                    ));
                }
            }
        }
        let inner = self
            .installations
            .forge(installation)
            .await
            .map_err(|e| classify(installation, FlowError::Forge(e)))?;
        let forge = PacedForge {
            inner,
            installation,
            pacer: self.pacer.clone(),
            fence: Some(Fence {
                store: self.store.clone(),
                job: job.clone(),
                owner: self.owner.clone(),
            }),
        };
        let applied = match work {
            Work::Event(event) => self.apply(&forge, *event, job).await,
            Work::Reconcile(repo, pr, head) => self.reconcile(&forge, &repo, pr, &head).await,
        }
        .map_err(|e| classify(installation, e))?;
        if let Some(handed) = applied.handed {
            self.store
                .receive(handed)
                .await
                .map_err(|e| JobError::Retry(e.to_string()))?;
        }
        if let Some((repo, change)) = applied.waiting {
            self.note_waiting(&repo, installation, change)
                .await
                .map_err(|e| JobError::Retry(e.to_string()))?;
        }
        Ok(applied.ended)
    }

    /// Keeps the table of heads waiting for CI (what the reconcile checks) up to date.
    async fn note_waiting(
        &self,
        repo: &RepoName,
        installation: u64,
        change: WaitChange,
    ) -> Result<(), super::store::StoreError> {
        let key = |pr: PrNumber| job_key(Some(&repo.to_string()), Some(pr.0), None);
        match change {
            WaitChange::WaitsFor(pr, head) => {
                let now = now_ms();
                let waiting = Waiting {
                    job_key: key(pr),
                    installation_id: i64::try_from(installation).unwrap_or(0),
                    repository: repo.to_string(),
                    pr: i64::try_from(pr.0).unwrap_or(0),
                    head_sha: head.0,
                    since: now,
                    checks: 0,
                };
                let first = reconcile::first_check_at(now, self.reconcile_every);
                self.store.set_waiting(&waiting, first).await
            }
            WaitChange::Decided(pr, head) => {
                self.store.clear_waiting(&key(pr), Some(&head.0)).await
            }
            WaitChange::NoLonger(pr) => self.store.clear_waiting(&key(pr), None).await,
        }
    }

    /// The event, applied to its pull request.
    async fn apply(
        &self,
        forge: &dyn Forge,
        event: Event,
        job: &Job,
    ) -> Result<Applied, FlowError> {
        let repo = event.repo().clone();
        match event {
            Event::PullRequest(pr) if pr.action == PrAction::Retargeted => {
                let input = Input::Retargeted {
                    pr: pr.pr,
                    from: pr
                        .previous_base
                        .clone()
                        .unwrap_or_else(|| "its old base".into()),
                };
                self.on_pull_request(forge, &repo, pr.pr, None, input)
                    .await
                    .map(|ended| Applied::new(ended, None))
            }
            Event::PullRequest(pr) => {
                let config = app_config(
                    forge,
                    &repo,
                    &pr.base_sha.0,
                    &pr.base_ref,
                    pr.default_branch.as_deref(),
                )
                .await?;
                let handler = self.handler(forge, &repo, &config);
                let outcome = handler.waiting(pr.pr, &pr.head_sha).await?;
                // A summary means the PR now waits (none: the head was scored already).
                let change = outcome
                    .summary
                    .is_some()
                    .then(|| WaitChange::WaitsFor(pr.pr, pr.head_sha.clone()));
                Ok(Applied::new(
                    Ended::Done(outcome.actions.join("; ")),
                    change.map(|c| (repo, c)),
                ))
            }
            Event::Comment(comment) => {
                let pr = comment.pr;
                let until = Some(comment.comment_id.0);
                self.on_pull_request(forge, &repo, pr, until, Input::Comment(comment))
                    .await
                    .map(|ended| Applied::new(ended, None))
            }
            Event::Review(review) => {
                let pr = review.pr;
                self.on_pull_request(forge, &repo, pr, None, Input::Review(review))
                    .await
                    .map(|ended| Applied::new(ended, None))
            }
            // A fork's run names no pull request, so its job is keyed by repository and
            // would race the PR's own jobs: it is handed to that PR's queue first.
            Event::WorkflowRun(run) if run.prs.is_empty() => {
                let Some((pull, _)) = forge_flow::record_from_run(
                    forge,
                    &run,
                    &crate::config::Config::default().github.artifact,
                )
                .await?
                else {
                    return Ok(Applied::new(
                        Ended::Ignored(format!(
                            "workflow run {} names no pull request and uploaded no record",
                            run.run_id
                        )),
                        None,
                    ));
                };
                let handed = handed_to(job, &repo, pull.number)
                    .map_err(|e| FlowError::Refused(format!("the run's payload: {e}")))?;
                Ok(Applied {
                    handed: Some(handed),
                    ..Applied::new(
                        Ended::Done(format!(
                            "workflow run {} handed to the queue of #{}",
                            run.run_id, pull.number.0
                        )),
                        None,
                    )
                })
            }
            Event::WorkflowRun(run) => Ok(match self.on_workflow_run(forge, run).await? {
                RunRecord::Applied(pr, head, actions) => Applied::new(
                    Ended::Done(actions.join("; ")),
                    Some((repo, WaitChange::Decided(pr, head))),
                ),
                RunRecord::Missing(why) => Applied::new(Ended::Ignored(why), None),
            }),
        }
    }

    /// A pull request that waited a whole sweep interval with nothing in the queue: what
    /// GitHub says now, as if the events that were lost had come.
    async fn reconcile(
        &self,
        forge: &dyn Forge,
        repo: &RepoName,
        pr: PrNumber,
        waited: &str,
    ) -> Result<Applied, FlowError> {
        let pull = forge.pull_request(repo, pr).await?;
        if pull.state != "open" {
            return Ok(Applied::new(
                Ended::Ignored(format!("#{} is {}; it waits no more", pr.0, pull.state)),
                Some((repo.clone(), WaitChange::NoLonger(pr))),
            ));
        }
        let head = pull.head.sha.clone();
        let mut actions = Vec::new();
        let mut change = None;
        if head.0 != waited {
            // The push's own event was lost too: the comment and the check follow the head.
            let config = pull_rules(forge, repo, &pull).await?;
            let outcome = self
                .handler(forge, repo, &config)
                .waiting(pr, &head)
                .await?;
            actions.extend(outcome.actions);
            change = Some(match outcome.summary {
                Some(_) => WaitChange::WaitsFor(pr, head.clone()),
                None => WaitChange::NoLonger(pr),
            });
        }
        for run in forge.completed_pull_request_runs(repo, &head.0).await? {
            let run_id = run.run_id;
            if let RunRecord::Applied(pr, decided, found) = self.on_workflow_run(forge, run).await?
            {
                actions.push(format!("workflow run {run_id}'s record had not been read"));
                actions.extend(found);
                return Ok(Applied::new(
                    Ended::Done(actions.join("; ")),
                    Some((repo.clone(), WaitChange::Decided(pr, decided))),
                ));
            }
        }
        actions.push(format!(
            "no completed pull_request run of {} has a record yet",
            head.0.get(..7).unwrap_or(&head.0)
        ));
        Ok(Applied::new(
            Ended::Done(actions.join("; ")),
            change.map(|c| (repo.clone(), c)),
        ))
    }

    /// A completed workflow run: its record (or configured reports) applied to the pull
    /// request it is bound to.
    async fn on_workflow_run(
        &self,
        forge: &dyn Forge,
        run: crate::github::events::WorkflowRunEvent,
    ) -> Result<RunRecord, FlowError> {
        let repo = run.repo.clone();
        let first = forge
            .pull_request(&repo, run.prs.first().copied().unwrap_or(PrNumber(0)))
            .await;
        // The artifact's name is the base's configuration; a PR's own run cannot
        // choose which artifact is read.
        let config = match &first {
            Ok(p) => pull_rules(forge, &repo, p).await?,
            Err(_) => forge_flow::Rules {
                config: crate::config::Config::default(),
                notice: None,
            },
        };
        let found =
            match forge_flow::record_from_run(forge, &run, &config.config.github.artifact).await? {
                Some(found) => Some(found),
                // No record: the reports the project's CI uploads, if configured.
                None => forge_flow::record_from_reports(forge, &run, &config.config).await?,
            };
        let Some((pull, record)) = found else {
            return Ok(RunRecord::Missing(format!(
                "workflow run {} uploaded no `{}` artifact and none of github.reports",
                run.run_id, config.config.github.artifact
            )));
        };
        // The bound PR is usually the one asked first: its base's config is in hand.
        let same_base = first
            .as_ref()
            .is_ok_and(|p| p.number == pull.number && p.base.sha == pull.base.sha);
        let config = if same_base {
            config
        } else {
            pull_rules(forge, &repo, &pull).await?
        };
        let input = Input::Iteration {
            pr: pull.number,
            record: Box::new(record),
            base: None,
            self_reported: pull.is_fork(),
        };
        let handler = self.handler(forge, &repo, &config);
        let mut actions = forge_flow::catch_up(&handler, pull.number, None).await?;
        actions.extend(handler.handle(input).await?.actions);
        Ok(RunRecord::Applied(pull.number, pull.head.sha, actions))
    }

    /// A comment or a review: the PR's base says which rules apply.
    async fn on_pull_request(
        &self,
        forge: &dyn Forge,
        repo: &RepoName,
        pr: PrNumber,
        until: Option<u64>,
        input: Input,
    ) -> Result<Ended, FlowError> {
        let pull = forge.pull_request(repo, pr).await?;
        let config = pull_rules(forge, repo, &pull).await?;
        let handler = self.handler(forge, repo, &config);
        let mut actions = forge_flow::catch_up(&handler, pr, until).await?;
        actions.extend(handler.handle(input).await?.actions);
        Ok(Ended::Done(actions.join("; ")))
    }

    fn handler<'a>(
        &'a self,
        forge: &'a dyn Forge,
        repo: &RepoName,
        rules: &'a forge_flow::Rules,
    ) -> Handler<'a> {
        Handler {
            forge,
            repo: repo.clone(),
            config: &rules.config,
            rules_notice: rules.notice.as_deref(),
            renderer: &self.renderer,
            bot_login: self.bot_login.clone(),
            now: Utc::now(),
            state_key: Some(&self.state_key),
            ledger: Some(&self.store),
            rerun: crate::app::pull_request::Rerun::WorkflowRuns,
        }
    }

    /// `installation` and `installation_repositories`: bookkeeping only.
    async fn installation(&self, job: &Job) -> Result<Ended, JobError> {
        #[derive(Deserialize)]
        struct Payload {
            #[serde(default)]
            action: String,
            installation: Inst,
        }
        #[derive(Deserialize)]
        struct Inst {
            id: i64,
            #[serde(default)]
            account: Option<Account>,
        }
        #[derive(Deserialize)]
        struct Account {
            login: String,
        }
        let payload: Payload = serde_json::from_slice(&job.payload)
            .map_err(|e| JobError::Refused(format!("`{}` payload: {e}", job.event)))?;
        let removed =
            job.event == "installation" && matches!(payload.action.as_str(), "deleted" | "suspend");
        let account = payload
            .installation
            .account
            .as_ref()
            .map(|a| a.login.as_str());
        self.store
            .set_installation(payload.installation.id, account, removed, now_ms())
            .await
            .map_err(|e| JobError::Retry(e.to_string()))?;
        if removed {
            self.installations
                .forget(u64::try_from(payload.installation.id).unwrap_or(0))
                .await;
        }
        Ok(Ended::Done(format!(
            "installation {} {}",
            payload.installation.id, payload.action
        )))
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

/// `job` (a fork's `workflow_run`, which names no pull request) as a job of pull request
/// `pr`'s queue: the run's `pull_requests` names it, and its key is the PR's.
fn handed_to(job: &Job, repo: &RepoName, pr: PrNumber) -> Result<NewDelivery, serde_json::Error> {
    let mut payload: serde_json::Value = serde_json::from_slice(&job.payload)?;
    payload["workflow_run"]["pull_requests"] = serde_json::json!([{ "number": pr.0 }]);
    let repository = repo.to_string();
    Ok(NewDelivery {
        delivery_id: format!("{}:pr-{}", job.delivery_id, pr.0),
        event: job.event.clone(),
        action: Some("completed".into()),
        installation_id: job.installation_id,
        job_key: job_key(Some(&repository), Some(pr.0), None),
        repository: Some(repository),
        payload: serde_json::to_vec(&payload)?,
        body_sha: None,
    })
}

/// [`app_config`] for the base of `pull`, as the API has it now.
async fn pull_rules(
    forge: &dyn Forge,
    repo: &RepoName,
    pull: &crate::github::types::PullRequest,
) -> Result<forge_flow::Rules, FlowError> {
    app_config(
        forge,
        repo,
        &pull.base.sha.0,
        &pull.base.ref_name,
        pull.default_branch.as_deref(),
    )
    .await
}

/// The base's configuration, with the `itergate` check run on: the App publishes the gate
/// branch protection can require.
async fn app_config(
    forge: &dyn Forge,
    repo: &RepoName,
    base_sha: &str,
    base_ref: &str,
    default_branch: Option<&str>,
) -> Result<forge_flow::Rules, FlowError> {
    let mut rules =
        forge_flow::base_config(forge, repo, base_sha, base_ref, default_branch).await?;
    rules.config.github.check_run = true;
    Ok(rules)
}

#[async_trait::async_trait]
impl crate::app::pull_request::StateLedger for super::store::Store {
    async fn revision(&self, repo: &RepoName, pr: PrNumber) -> Result<Option<u64>, String> {
        let key = job_key(Some(&repo.to_string()), Some(pr.0), None);
        self.state_revision(&key).await.map_err(|e| e.to_string())
    }

    async fn wrote(&self, repo: &RepoName, pr: PrNumber, revision: u64) -> Result<(), String> {
        let key = job_key(Some(&repo.to_string()), Some(pr.0), None);
        self.raise_state_revision(&key, revision, now_ms())
            .await
            .map_err(|e| e.to_string())
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
