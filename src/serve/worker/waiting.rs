//! Heads waiting for CI's record: noted when a job finds none, re-checked on their pace
//! (`reconcile`), and resolved by a `workflow_run` event.

use crate::app::forge_flow;
use crate::app::forge_flow::FlowError;
use crate::app::pull_request::Input;
use crate::github::types::{PrNumber, RepoName};
use crate::github::Forge;
use crate::serve::intake::job_key;
use crate::serve::reconcile;
use crate::serve::store::{now_ms, Waiting};

use super::jobs::pull_rules;
use super::{Applied, Ended, RunRecord, WaitChange, Worker};

impl Worker {
    /// Keeps the table of heads waiting for CI (what the reconcile checks) up to date.
    pub(super) async fn note_waiting(
        &self,
        repo: &RepoName,
        installation: u64,
        change: WaitChange,
    ) -> Result<(), crate::serve::store::StoreError> {
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

    /// A pull request that waited a whole sweep interval with nothing in the queue: what
    /// GitHub says now, as if the events that were lost had come.
    pub(super) async fn reconcile(
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
                .handler(forge, (repo, pull.base_repo_id), &config)
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
    pub(super) async fn on_workflow_run(
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
        let from_run =
            forge_flow::record_from_run(forge, &run, &config.config.github.artifact).await;
        let found = match from_run {
            Ok(Some(found)) => Some(found),
            // No record: the reports the project's CI uploads, if configured.
            Ok(None) => forge_flow::record_from_reports(forge, &run, &config.config).await?,
            Err(FlowError::Refused(why)) => {
                // Said on the head it was for, so the PR does not wait for it.
                let head = first.as_ref().ok().filter(|p| p.head.sha == run.head_sha);
                if let Some(pull) = head {
                    if config.config.github.check_run {
                        let spec = refused_check(&pull.head.sha, run.run_id, &why);
                        forge.create_check_run(&repo, &spec).await?;
                    }
                }
                return Err(FlowError::Refused(why));
            }
            Err(e) => return Err(e),
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
        let handler = self.handler(forge, (&repo, pull.base_repo_id), &config);
        let mut actions = forge_flow::catch_up(&handler, pull.number, None).await?;
        actions.extend(handler.handle(input).await?.actions);
        Ok(RunRecord::Applied(pull.number, pull.head.sha, actions))
    }
}

/// The check run that says a run's record was refused, and why (the reason is fenced: it
/// may quote names the run chose).
fn refused_check(
    head: &crate::model::CommitSha,
    run: crate::github::types::RunId,
    why: &str,
) -> crate::github::checks::CheckRunSpec {
    use crate::github::checks::{CheckConclusion, CheckRunSpec, CheckState};
    CheckRunSpec {
        name: "itergate".into(),
        head_sha: head.clone(),
        state: CheckState::Completed(CheckConclusion::Failure),
        title: "itergate: CI's record was refused".into(),
        summary: format!(
            "The record workflow run {run} uploaded for this commit was not read, so no \
             decision was made:\n\n{}",
            crate::markup::fence(why)
        ),
        text: None,
        annotations: Vec::new(),
        details_url: None,
        external_id: Some(format!("itergate-refused-{}", head.0)),
    }
}
