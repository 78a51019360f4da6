//! Handling one job: its event parsed and applied to its pull request through the one
//! handler core, with the installation's client, the base's rules and the state ledger.

use chrono::Utc;
use serde::Deserialize;

use crate::app::forge_flow;
use crate::app::forge_flow::FlowError;
use crate::app::pull_request::{Handler, Input};
use crate::github::events::{Event, Parsed, PrAction};
use crate::github::types::{PrNumber, RepoName};
use crate::github::{events, Forge};
use crate::serve::intake::job_key;
use crate::serve::paced::{Fence, PacedForge};
use crate::serve::store::{now_ms, Job, NewDelivery};
use crate::serve::{late_writes, reconcile};

use super::{classify, Applied, Ended, JobError, RunRecord, WaitChange, Work, Worker};

/// `job` (a fork's `workflow_run`, which names no pull request) as a job of pull request
/// `pr`'s queue: the run's `pull_requests` names it, and its key is the PR's.
pub(super) fn handed_to(
    job: &Job,
    repo: &RepoName,
    pr: PrNumber,
) -> Result<NewDelivery, serde_json::Error> {
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
        yields: false,
    })
}

/// The payload of one of the App's own jobs (`what`, for the error).
fn own_payload<T: serde::de::DeserializeOwned>(job: &Job, what: &str) -> Result<T, JobError> {
    serde_json::from_slice(&job.payload)
        .map_err(|e| JobError::Refused(format!("{what}'s payload: {e}")))
}

/// The pull request an own job's payload names.
fn pull_of(
    repository: &reconcile::FullName,
    number: &reconcile::Number,
    what: &str,
) -> Result<(RepoName, PrNumber), JobError> {
    let repo = repository
        .full_name
        .parse()
        .map_err(|e| JobError::Refused(format!("{what}'s repository: {e}")))?;
    Ok((repo, PrNumber(u64::try_from(number.number).unwrap_or(0))))
}

/// [`app_config`] for the base of `pull`, as the API has it now.
pub(super) async fn pull_rules(
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
pub(super) async fn app_config(
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
impl crate::app::pull_request::StateLedger for crate::serve::store::Store {
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

impl Worker {
    pub(super) async fn process(&self, job: &Job) -> Result<Ended, JobError> {
        if let Some(why) = &job.damaged {
            return Err(JobError::Refused(why.clone()));
        }
        if job.event.starts_with("installation") {
            return self.installation(job).await;
        }
        let work = if job.event == reconcile::EVENT {
            let payload: reconcile::Payload = own_payload(job, "a reconcile job")?;
            let (repo, pr) = pull_of(
                &payload.repository,
                &payload.pull_request,
                "a reconcile job",
            )?;
            Work::Reconcile(repo, pr, payload.head_sha)
        } else if job.event == late_writes::EVENT {
            let payload: late_writes::Payload = own_payload(job, "a watch job")?;
            let (repo, pr) = pull_of(&payload.repository, &payload.pull_request, "a watch job")?;
            Work::LateWrites(repo, pr, payload.since)
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
            written: Default::default(),
        };
        let applied = match work {
            Work::Event(event) => self.apply(&forge, *event, job).await,
            Work::Reconcile(repo, pr, head) => self.reconcile(&forge, &repo, pr, &head).await,
            Work::LateWrites(repo, pr, since) => self.late_writes(&forge, &repo, pr, since).await,
        }
        .map_err(|e| classify(installation, e))?;
        if job.attempts > 1 {
            // An earlier attempt's reply may still land: the PR is watched for it.
            for (repo, pr) in forge.replied_on() {
                let watch =
                    late_writes::job(&repo.to_string(), installation as i64, pr.0, now_ms());
                self.store
                    .receive(watch)
                    .await
                    .map_err(|e| JobError::Retry(e.to_string()))?;
            }
        }
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

    /// The event, applied to its pull request.
    pub(super) async fn apply(
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
                let handler = self.handler(forge, (&repo, pr.repo_id), &config);
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

    /// A watch for late replies: the PR's duplicate replies removed, and the watch run
    /// again until it has watched long enough.
    pub(super) async fn late_writes(
        &self,
        forge: &dyn Forge,
        repo: &RepoName,
        pr: PrNumber,
        since: i64,
    ) -> Result<Applied, FlowError> {
        let comments = forge.list_comments(repo, pr).await?;
        let removed = crate::app::pull_request::remove_duplicate_replies(
            forge,
            repo,
            pr,
            &comments,
            &self.bot_login,
            None,
        )
        .await;
        if let Some(removed) = &removed {
            tracing::info!(pr = pr.0, "{removed} that landed late");
        }
        let ended = match late_writes::next_look(since, now_ms()) {
            Some(at) => Ended::Again(
                at,
                removed.unwrap_or_else(|| "watching for a reply that lands late".into()),
            ),
            None => Ended::Done(removed.unwrap_or_else(|| "no reply landed late".into())),
        };
        Ok(Applied::new(ended, None))
    }

    /// A comment or a review: the PR's base says which rules apply.
    pub(super) async fn on_pull_request(
        &self,
        forge: &dyn Forge,
        repo: &RepoName,
        pr: PrNumber,
        until: Option<u64>,
        input: Input,
    ) -> Result<Ended, FlowError> {
        let pull = forge.pull_request(repo, pr).await?;
        let config = pull_rules(forge, repo, &pull).await?;
        let handler = self.handler(forge, (repo, pull.base_repo_id), &config);
        let mut actions = forge_flow::catch_up(&handler, pr, until).await?;
        actions.extend(handler.handle(input).await?.actions);
        Ok(Ended::Done(actions.join("; ")))
    }

    /// The handler of one repository's pull requests; `repo_id` binds their state (a
    /// rename keeps it).
    pub(super) fn handler<'a>(
        &'a self,
        forge: &'a dyn Forge,
        (repo, repo_id): (&RepoName, Option<u64>),
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
            repo_id,
            ledger: Some(&self.store),
            rerun: crate::app::pull_request::Rerun::WorkflowRuns,
        }
    }

    /// `installation` and `installation_repositories`: bookkeeping only.
    pub(super) async fn installation(&self, job: &Job) -> Result<Ended, JobError> {
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
