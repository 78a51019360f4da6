//! A pull request as a task: the one event handler core every GitHub adapter calls (Actions
//! mode now, the App next): a normalized [`Input`] and a [`Forge`] in, effects on the pull
//! request out. It decides through [`super::evaluate`] like every other mode; `github/`
//! only talks to GitHub.
//!
//! - A new iteration updates the PR's history (kept in the sticky comment), decides, and
//!   edits the sticky comment in place. On `escalate` it adds the label and, once per
//!   escalation, posts one short comment that mentions the configured reviewers; on
//!   `accept` it removes the label.
//! - A comment is looked at only if it holds an `/iterate` command (no API call otherwise)
//!   and is not written by itergate itself or, unless allowed, another bot: see
//!   `pull_request/commands.rs` for who may give which command and how little the bot
//!   says back. A comment with an agent's `CONTEXT_GAP_REPORT` instead gets one reply: see
//!   `pull_request/context.rs`.
//! - Reviews count only from people with the permission and about the newest iteration: see
//!   `pull_request/reviews.rs`.
//!
//! Effects are idempotent: the sticky comment is upserted, commands of a comment already
//! applied (its id is in the state) are not applied twice. "We did it" is recorded only after
//! it was done: the escalation call is marked in the state after the label and the call
//! succeeded, so a retry after a failure still calls the reviewers, once. A state written by
//! a newer itergate is never overwritten, and an unreadable one is replaced only after saying
//! so, in the comment and the job log.

mod commands;
mod context;
mod ledger;
mod reviews;
mod rewritten;
mod waiting;

pub use commands::{MAX_UNPRIVILEGED_REPLIES, UNPRIVILEGED_REPLY_INTERVAL_MINUTES};
pub use ledger::StateLedger;

use chrono::{DateTime, Utc};

use super::evaluate::{evaluate, EvaluateInput, Evaluation};
use crate::config::{Config, Gate, HandoffVia};
use crate::engine::{Decision, Feedback, Recommendation, Surface};
use crate::github::checks::{
    Annotation, AnnotationLevel, CheckConclusion, CheckRunSpec, CheckState,
};
use crate::github::events::{CommentEvent, ReviewEvent};
use crate::github::forge::{Forge, ForgeError};
use crate::github::sticky::{self, StateError, StateKey, StickyState};
use crate::github::types::{Comment, CommentId, LabelSpec, PrNumber, RepoName};
use crate::markup::fence_with_info;
use crate::model::{CommitSha, IterationRecord};
use crate::render::Renderer;

/// What happened that itergate should act on.
#[derive(Debug, Clone)]
pub enum Input {
    /// A scored commit of the PR (from CI, or a fork run's artifact).
    Iteration {
        pr: PrNumber,
        record: Box<IterationRecord>,
        base: Option<Box<IterationRecord>>,
        /// Scored by code itergate does not control (a fork's own workflow): the comment
        /// says so, and its `accept` never removes the escalation label.
        self_reported: bool,
    },
    Comment(CommentEvent),
    Review(ReviewEvent),
    /// The PR targets another base now (`from` → the handler's configuration): its
    /// history is judged again under the new base's rules and the gate published anew.
    Retargeted {
        pr: PrNumber,
        from: String,
    },
}

/// Everything the handler needs besides the input.
pub struct Handler<'a> {
    pub forge: &'a dyn Forge,
    pub repo: RepoName,
    /// Read from the PR's base branch, never from its head.
    pub config: &'a Config,
    pub renderer: &'a Renderer,
    /// itergate's own login: its comments are the only trusted state.
    pub bot_login: String,
    pub now: DateTime<Utc>,
    /// The App's key for the state's MAC: with it, a state edited by anyone else is not
    /// believed. `None` in the Actions mode, which has no secret of its own.
    pub state_key: Option<&'a StateKey>,
    /// The repository's id, when known: the state is bound to it, so a rename keeps it.
    pub repo_id: Option<u64>,
    /// The App's record of the highest state revision it wrote per pull request: an older
    /// or missing state is not believed. `None` in the Actions mode.
    pub ledger: Option<&'a dyn StateLedger>,
    /// How `/iterate` asks CI to score the head again.
    pub rerun: Rerun,
    /// Why `config` is not the base's own (the PR targets an untrusted base), shown in
    /// the comment.
    pub rules_notice: Option<&'a str>,
}

/// How `/iterate` asks CI to score the head again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rerun {
    /// A `repository_dispatch` (one of the few events a workflow's own token can trigger).
    RepositoryDispatch,
    /// Re-run the head's `pull_request` workflow runs (the App, with `actions: write`).
    WorkflowRuns,
}

/// What the handler did.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    pub decision: Option<Decision>,
    /// The sticky comment's visible markdown (for a job summary).
    pub summary: Option<String>,
    /// The latest iteration's quality.
    pub quality: Option<f64>,
    /// Short lines saying what was done, for logs.
    pub actions: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum HandlerError {
    #[error(transparent)]
    Forge(#[from] ForgeError),
    #[error("rendering: {0:#}")]
    Render(anyhow::Error),
    /// The sticky comment's state is of a newer version: writing would destroy it.
    #[error("refusing to publish: {0}; nothing was changed (upgrade itergate to go on)")]
    NewerState(StateError),
    #[error("the App's record of state revisions: {0}")]
    Ledger(String),
}

impl Handler<'_> {
    pub async fn handle(&self, input: Input) -> Result<Outcome, HandlerError> {
        match input {
            Input::Iteration {
                pr,
                record,
                base,
                self_reported,
            } => {
                self.iteration(pr, *record, base.map(|b| *b), self_reported)
                    .await
            }
            Input::Comment(event) => self.comment(event).await,
            Input::Review(event) => self.review(event).await,
            Input::Retargeted { pr, from } => {
                let comments = self.forge.list_comments(&self.repo, pr).await?;
                let (state, mut actions) = self.load(pr, &comments).await?;
                actions.push(format!(
                    "judged again: the pull request no longer targets `{from}`"
                ));
                self.publish(pr, &comments, state, None, actions).await
            }
        }
    }

    async fn iteration(
        &self,
        pr: PrNumber,
        record: IterationRecord,
        base: Option<IterationRecord>,
        self_reported: bool,
    ) -> Result<Outcome, HandlerError> {
        let comments = self.forge.list_comments(&self.repo, pr).await?;
        let (mut state, mut actions) = self.load(pr, &comments).await?;
        let mut record = record;
        // A record dated in the future (its commit's date, or a fork's own record) would
        // keep the wall-clock budget from ever running out: it counts from now at the latest.
        record.timestamp = record.timestamp.min(self.now);
        if let Some(previous) = state.records.last().cloned() {
            actions.extend(self.find_rewritten(&previous, &mut record).await);
        }
        crate::signals::integrity::apply_acceptance(&mut record, &state.feedback.accepted_findings);
        if state.records.record(record) {
            // What people said was about the previous iteration.
            state.feedback.messages.clear();
            state.feedback.rejections.clear();
            state.feedback.accepted = false;
            state.accepted_with = None;
            state.feedback.escalation = None;
            state.context_rounds = 0;
        }
        actions.push("recorded a new iteration".into());
        self.publish_with(pr, &comments, state, base.as_ref(), actions, self_reported)
            .await
    }

    /// The PR's state from its sticky comment, and what the job log should say about it.
    /// A state of a newer version stops everything (it must not be overwritten); an
    /// unreadable one is replaced by a fresh state that says why.
    async fn load(
        &self,
        pr: PrNumber,
        comments: &[Comment],
    ) -> Result<(StickyState, Vec<String>), HandlerError> {
        let key = self.pull_key(pr);
        let mut loaded = sticky::load_state_keyed(comments, &self.bot_login, key.as_ref());
        let floor = self.revision_floor(pr).await?;
        // A state that did not verify is already not believed; one that did must be the latest.
        let found = loaded.comment.is_some().then_some(&loaded.state);
        let behind = loaded
            .problem
            .is_none()
            .then(|| ledger::behind(found, floor))
            .flatten();
        let mut problem = loaded
            .problem
            .as_ref()
            .map(|p| format!("the sticky comment's state could not be read ({p})"));
        if let Some(why) = behind {
            tracing::warn!(pr = pr.0, "{why}");
            problem = Some(format!(
                "the sticky comment's state is not believed ({why})"
            ));
            loaded.state = StickyState {
                lost_state: Some(why),
                ..StickyState::default()
            };
        }
        // Every state written from here on is newer than any the App wrote before.
        loaded.state.revision = loaded.state.revision.max(floor);
        if let Some(newer @ StateError::NewerVersion(_)) = loaded.problem {
            return Err(HandlerError::NewerState(newer));
        }
        let mut actions: Vec<String> = problem
            .map(|problem| format!("{problem}; a maintainer decides until one accepts"))
            .into_iter()
            .collect();
        actions.extend(self.remove_duplicate_replies(pr, comments, None).await);
        Ok((loaded.state, actions))
    }

    /// [`remove_duplicate_replies`] on this pull request.
    async fn remove_duplicate_replies(
        &self,
        pr: PrNumber,
        comments: &[Comment],
        key: Option<&str>,
    ) -> Option<String> {
        remove_duplicate_replies(self.forge, &self.repo, pr, comments, &self.bot_login, key).await
    }

    /// Writes the sticky comment (`existing`, or a new one) unless it already says this;
    /// each write counts up the state's `revision`.
    async fn write_sticky(
        &self,
        pr: PrNumber,
        comments: &[Comment],
        visible: &str,
        state: &mut StickyState,
    ) -> Result<CommentId, HandlerError> {
        let key = self.pull_key(pr);
        let unchanged = sticky::render_body_keyed(visible, state, key.as_ref());
        let body = match sticky::find_sticky(comments, &self.bot_login) {
            Some(existing) if existing.body == unchanged => unchanged,
            _ => {
                state.revision += 1;
                sticky::render_body_keyed(visible, state, key.as_ref())
            }
        };
        let id = sticky::upsert(
            self.forge,
            &self.repo,
            pr,
            comments,
            &self.bot_login,
            &body,
            key.as_ref(),
        )
        .await?;
        self.wrote(pr, state).await?;
        Ok(id)
    }

    /// On ITERATE, hands the revision to the repository's agent (`github.handoff`): once per
    /// head, at most `max_handoffs` per pull request and one per `min_interval_minutes`;
    /// never after an integrity finding, an escalation or a person's accept. Returns what
    /// was done, with the state updated.
    async fn hand_off(
        &self,
        pr: PrNumber,
        sticky: CommentId,
        state: &mut StickyState,
        decision: &Decision,
    ) -> Result<Option<String>, ForgeError> {
        let handoff = &self.config.github.handoff;
        let Some(latest) = state.records.last() else {
            return Ok(None);
        };
        let integrity = latest.issues.iter().any(|i| {
            i.dimension == crate::signals::integrity::DIMENSION
                && i.severity != crate::model::Severity::Info
        });
        let head = latest.commit.0.clone();
        let spaced = state.last_handoff.as_ref().is_none_or(|last| {
            last.head != head
                && self.now - last.at
                    >= chrono::Duration::minutes(
                        i64::try_from(handoff.min_interval_minutes).unwrap_or(i64::MAX / 60_000),
                    )
        });
        if handoff.via == HandoffVia::Off
            || decision.recommendation() != Recommendation::Iterate
            || integrity
            || state.feedback.accepted
            || state.handoffs >= handoff.max_handoffs
            || !spaced
        {
            return Ok(None);
        }
        let pull = self.forge.pull_request(&self.repo, pr).await?;
        if pull.is_fork() && !handoff.forks {
            // A fork's record is self-reported, and its code is not the repository's.
            return Ok(Some(
                "no hand-off: this pull request comes from a fork (github.handoff.forks is off)"
                    .into(),
            ));
        }
        let iteration = latest.iteration;
        let comment_url = format!(
            "https://github.com/{}/pull/{}#issuecomment-{}",
            self.repo, pr.0, sticky.0
        );
        match handoff.via {
            HandoffVia::Off => return Ok(None),
            HandoffVia::Mention => {
                let handle = handoff.handle.as_deref().map(|h| h.trim_start_matches('@'));
                let valid = handle.filter(|h| {
                    !h.is_empty()
                        && h.chars().all(|c| {
                            c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '/' | '[' | ']')
                        })
                });
                let Some(handle) = valid else {
                    return Ok(Some(
                        "no hand-off: github.handoff.handle names no valid handle".into(),
                    ));
                };
                if self.rerun != Rerun::WorkflowRuns {
                    // A comment made with a workflow's own token starts no workflow.
                    return Ok(Some(
                        "no hand-off: `mention` works from the App only; use repository_dispatch"
                            .into(),
                    ));
                }
                let text = format!(
                    "@{handle} itergate asks for a revision of iteration {iteration} \
                     ({}): the \"Revision prompt for agents\" in {comment_url}",
                    short(&latest.commit)
                );
                let comments = self.forge.list_comments(&self.repo, pr).await?;
                self.reply(pr, &comments, &format!("handoff-{head}"), &text)
                    .await?;
            }
            HandoffVia::RepositoryDispatch => {
                let payload = serde_json::json!({
                    "pr": pr.0,
                    "head_sha": head,
                    "iteration": iteration,
                    "comment_id": sticky.0,
                    "comment_url": comment_url,
                });
                self.forge
                    .repository_dispatch(&self.repo, &handoff.event_type, &payload)
                    .await?;
            }
            HandoffVia::WorkflowDispatch => {
                let Some(workflow) = handoff.workflow.as_deref() else {
                    return Ok(Some(
                        "no hand-off: github.handoff.workflow names no workflow".into(),
                    ));
                };
                // The workflow runs with the repository's secrets from the ref it is given:
                // the default branch (or a base `github.trusted_bases` names), never a base
                // the pull request chose.
                let git_ref = match (&handoff.git_ref, &pull.default_branch) {
                    (Some(configured), _) => configured.clone(),
                    _ if crate::app::forge_flow::trusts(
                        &self.config.github.trusted_bases,
                        &pull.base.ref_name,
                    ) =>
                    {
                        pull.base.ref_name.clone()
                    }
                    (None, Some(default)) => default.clone(),
                    (None, None) => {
                        return Ok(Some(
                            "no hand-off: GitHub did not say the default branch, and github.handoff.ref names none".into(),
                        ))
                    }
                };
                let inputs = [
                    ("pr", pr.0.to_string()),
                    ("head_sha", head.clone()),
                    ("iteration", iteration.to_string()),
                    ("comment_url", comment_url),
                ]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect();
                self.forge
                    .dispatch_workflow(&self.repo, workflow, &git_ref, &inputs)
                    .await?;
            }
        }
        state.handoffs += 1;
        state.last_handoff = Some(crate::github::sticky::LastHandoff { head, at: self.now });
        Ok(Some(format!(
            "handed to the agent ({}/{})",
            state.handoffs, handoff.max_handoffs
        )))
    }

    /// Asks CI to score the PR's head again: a `repository_dispatch` (one of the few events a
    /// workflow's own token can trigger). Never for a fork: that would run its code with a
    /// token that can write.
    async fn rerun(&self, pr: PrNumber) -> Result<String, ForgeError> {
        let pull = self.forge.pull_request(&self.repo, pr).await?;
        if pull.is_fork() {
            return Ok("re-posted the current decision (a fork's checks are not re-run)".into());
        }
        if self.rerun == Rerun::WorkflowRuns {
            let runs = self
                .forge
                .rerun_pull_request_runs(&self.repo, &pull.head.sha.0)
                .await?;
            return Ok(match runs.len() {
                0 => "no finished workflow run of the head to re-run".into(),
                n => format!("re-ran {n} workflow run(s) of the head"),
            });
        }
        let payload = serde_json::json!({ "pr": pr.0, "head_sha": pull.head.sha.0 });
        self.forge
            .repository_dispatch(&self.repo, REEVALUATE_EVENT, &payload)
            .await?;
        Ok(format!(
            "asked CI to re-run the checks ({REEVALUATE_EVENT})"
        ))
    }

    /// A check run whose annotations are the checker issues that name a file and line.
    async fn check_run(
        &self,
        latest: &IterationRecord,
        decision: &Decision,
        summary: &str,
    ) -> Result<(), ForgeError> {
        // `github.gate` says what blocks: a required `itergate` check fails exactly then.
        let blocks = match (self.config.github.gate, decision.recommendation()) {
            (_, Recommendation::Accept) | (Gate::Warn, _) => false,
            (Gate::BlockOnIterate, _) => true,
            (Gate::BlockOnEscalate, recommendation) => recommendation != Recommendation::Iterate,
        };
        let conclusion = match decision.recommendation() {
            Recommendation::Accept => CheckConclusion::Success,
            _ if blocks => CheckConclusion::Failure,
            Recommendation::Iterate => CheckConclusion::Neutral,
            Recommendation::Escalate | Recommendation::Abort => CheckConclusion::ActionRequired,
        };
        let spec = CheckRunSpec {
            name: "itergate".into(),
            head_sha: latest.commit.clone(),
            state: CheckState::Completed(conclusion),
            title: format!("itergate: {}", decision.recommendation().as_str()),
            summary: decision.revision.line(),
            text: Some(summary.to_string()),
            annotations: latest.issues.iter().filter_map(annotation).collect(),
            details_url: None,
            external_id: Some(format!("itergate-{}", latest.iteration)),
        };
        self.forge
            .create_check_run(&self.repo, &spec)
            .await
            .map(|_| ())
    }

    /// Posts a reply once: it carries a hidden marker made from `key` (what it answers), and
    /// a reply with that marker already on the PR (a re-run, a retried job) is not posted
    /// again.
    async fn reply(
        &self,
        pr: PrNumber,
        comments: &[Comment],
        key: &str,
        body: &str,
    ) -> Result<(), ForgeError> {
        if crate::github::forge::has_reply(comments, &self.bot_login, key) {
            return Ok(());
        }
        let body = crate::github::forge::marked_reply(key, body);
        self.forge.create_comment(&self.repo, pr, &body).await?;
        // Another writer's reply to the same thing (a replica that was taken for dead) may
        // have landed meanwhile: one of them stays, the oldest.
        let now = self.forge.list_comments(&self.repo, pr).await?;
        self.remove_duplicate_replies(pr, &now, Some(key)).await;
        Ok(())
    }

    fn help(&self) -> Result<String, HandlerError> {
        let view = serde_json::json!({
            "permission": required_name(self.config),
            "author_can_decide": self.config.github.author_can_decide,
            "max_commands": crate::github::commands::MAX_COMMANDS_PER_COMMENT,
        });
        self.renderer
            .render("help.md.j2", &view)
            .map_err(HandlerError::Render)
    }

    fn status(&self, pr: PrNumber, state: &StickyState) -> Result<String, HandlerError> {
        let Some(evaluation) = self.evaluate(pr, state, None) else {
            return Ok("No iteration of this pull request is recorded yet.".into());
        };
        let mut result = crate::analytics::build(self.config, &state.records, &evaluation, None);
        result.context = state.context_log.clone();
        let text = self
            .renderer
            .render("analytics.txt.j2", &crate::analytics::text_view(&result))
            .map_err(HandlerError::Render)?;
        Ok(fence_with_info(&text, "text"))
    }

    /// The state's key for pull request `pr` (the App's; none in the Actions mode).
    pub fn pull_key(&self, pr: PrNumber) -> Option<StateKey> {
        self.state_key
            .map(|k| k.for_pull(&self.repo, self.repo_id, pr))
    }

    /// The PR's decision; its task is named `#N` (the revision prompt says what to revise).
    fn evaluate(
        &self,
        pr: PrNumber,
        state: &StickyState,
        base: Option<&IterationRecord>,
    ) -> Option<Evaluation> {
        // People decide here with `/iterate` comments: the next steps say so.
        let mut feedback = Feedback {
            surface: Surface::PullRequest,
            ..state.feedback.clone()
        };
        // A state that could not be read or verified fails closed: the history and the
        // budget it held are unknown, so a person decides until a maintainer accepts.
        feedback.unverified_history = state.lost_state.clone();
        let task_id = format!("#{}", pr.0);
        evaluate(&EvaluateInput {
            task_id: &task_id,
            config: self.config,
            history: &state.records,
            feedback: &feedback,
            baseline: base,
            now: self.now,
        })
        .ok()
    }

    /// Decides on the state, writes the sticky comment and applies labels and the
    /// escalation call.
    async fn publish(
        &self,
        pr: PrNumber,
        comments: &[Comment],
        state: StickyState,
        base: Option<&IterationRecord>,
        actions: Vec<String>,
    ) -> Result<Outcome, HandlerError> {
        self.publish_with(pr, comments, state, base, actions, false)
            .await
    }

    /// [`Self::publish`]; a `self_reported` iteration (a fork's record) is marked as such
    /// in the comment and its `accept` leaves the escalation label to a maintainer.
    async fn publish_with(
        &self,
        pr: PrNumber,
        comments: &[Comment],
        mut state: StickyState,
        base: Option<&IterationRecord>,
        mut actions: Vec<String>,
        self_reported: bool,
    ) -> Result<Outcome, HandlerError> {
        let Some(evaluation) = self.evaluate(pr, &state, base) else {
            let visible = with_notices(
                "itergate has no iteration of this pull request yet.",
                &state,
            );
            self.write_sticky(pr, comments, &visible, &mut state)
                .await?;
            return Ok(Outcome {
                actions,
                ..Outcome::default()
            });
        };
        let decision = &evaluation.decision;
        let iteration = decision.budget.current_iteration;
        let escalate = matches!(
            decision.recommendation(),
            Recommendation::Escalate | Recommendation::Abort
        );
        let notify = escalate && state.escalation_notified_at != Some(iteration);
        let mut visible = self.visible(&state, base, &evaluation)?;
        if self_reported {
            visible = format!("{}\n\n{SELF_REPORTED_NOTE}\n", visible.trim_end());
        }
        let shown = with_handoffs(&visible, &state, self.config);
        let sticky_id = self.write_sticky(pr, comments, &shown, &mut state).await?;
        actions.push(format!("decision: {}", decision.recommendation().as_str()));
        if let Some(handed) = self.hand_off(pr, sticky_id, &mut state, decision).await? {
            // Recorded in the state as the comment says it: a redelivered event finds this
            // head handed already.
            state.revision += 1;
            let shown = with_handoffs(&visible, &state, self.config);
            let body = sticky::render_body_keyed(&shown, &state, self.pull_key(pr).as_ref());
            self.forge
                .update_comment(&self.repo, sticky_id, &body)
                .await?;
            self.wrote(pr, &state).await?;
            actions.push(handed);
        }
        let label = &self.config.github.label;
        if escalate {
            self.forge
                .add_label(&self.repo, pr, &LabelSpec::escalation(label))
                .await?;
            actions.push(format!("labelled {label}"));
        } else if decision.recommendation() == Recommendation::Accept {
            if self_reported {
                actions.push(format!(
                    "kept {label}: a self-reported accept never removes it"
                ));
            } else {
                // Only the label the App added: a person's stays (they remove it). A token
                // that may not read the issue's events (403) removes it, as before.
                let added_by = match self.forge.label_added_by(&self.repo, pr, label).await {
                    Err(e) if e.status() == Some(403) => Some(self.bot_login.clone()),
                    other => other?,
                };
                match added_by {
                    Some(by) if by.eq_ignore_ascii_case(&self.bot_login) => {
                        self.forge.remove_label(&self.repo, pr, label).await?;
                        actions.push(format!("removed {label}"));
                    }
                    Some(by) => actions.push(format!("kept {label}: {by} added it")),
                    None => {}
                }
            }
        }
        if notify {
            let latest = state
                .records
                .last()
                .cloned()
                .unwrap_or_else(|| IterationRecord::new(0, self.now));
            let view = crate::comment::escalation_view(self.config, &latest, decision);
            let text = self
                .renderer
                .render("escalation.md.j2", &view)
                .map_err(HandlerError::Render)?;
            self.reply(pr, comments, &format!("escalation-{iteration}"), &text)
                .await?;
            actions.push("called a human".into());
            // Only now that the label and the call are done is the call recorded.
            state.escalation_notified_at = Some(iteration);
            state.revision += 1;
            let body = sticky::render_body_keyed(&visible, &state, self.pull_key(pr).as_ref());
            self.forge
                .update_comment(&self.repo, sticky_id, &body)
                .await?;
            self.wrote(pr, &state).await?;
        }
        // Every decision (a record, a command, a review) is the gate on the latest scored
        // commit: what branch protection reads.
        if self.config.github.check_run {
            if let Some(latest) = state.records.last() {
                self.check_run(latest, decision, &visible).await?;
                actions.push(format!("check run on {}", short(&latest.commit)));
            }
        }
        let quality = state
            .records
            .last()
            .and_then(|r| crate::engine::trajectory::quality_of(r, &self.config.quality_weights));
        Ok(Outcome {
            decision: Some(evaluation.decision),
            summary: Some(visible),
            quality,
            actions,
        })
    }

    fn visible(
        &self,
        state: &StickyState,
        base: Option<&IterationRecord>,
        evaluation: &Evaluation,
    ) -> Result<String, HandlerError> {
        let decision = &evaluation.decision;
        let prompt = match (decision.recommendation(), state.records.last()) {
            (Recommendation::Iterate, Some(latest)) => Some(
                crate::prompt::render_within_budget(
                    self.renderer,
                    latest,
                    decision,
                    None,
                    self.config.context.prompt_budget_bytes,
                )
                .map_err(HandlerError::Render)?,
            ),
            _ => None,
        };
        let mut view = crate::comment::comment_view(
            self.config,
            &state.records,
            base,
            evaluation,
            prompt.as_deref(),
        );
        view.notices = crate::comment::state_notices(state.lost_state.as_deref());
        view.notices.extend(self.rules_notice.map(str::to_string));
        self.renderer
            .render("comment.md.j2", &view)
            .map_err(HandlerError::Render)
    }
}

/// Closes the comment of an iteration a fork's own workflow scored.
pub const SELF_REPORTED_NOTE: &str = "> **Self-reported:** this pull request comes from a fork; \
its checks ran in a workflow the fork controls, so these scores are what that run reported, \
not what itergate observed. A maintainer decides; an `accept` here never removes the label.";

/// The comment with the hand-offs so far (`github.handoff`), if any.
fn with_handoffs(visible: &str, state: &StickyState, config: &Config) -> String {
    if state.handoffs == 0 {
        return visible.to_string();
    }
    let max = config.github.handoff.max_handoffs;
    let tail = if state.handoffs >= max {
        " — the last: a person takes over from here"
    } else {
        ""
    };
    format!(
        "{}\n\n🤖 Handed to the agent ({}/{max}){tail}.\n",
        visible.trim_end(),
        state.handoffs
    )
}

/// The `repository_dispatch` event type `/iterate` sends to re-run the checks.
pub const REEVALUATE_EVENT: &str = "itergate-reevaluate";

/// An issue with a `path:line` (or `path:start-end`) span as a check-run annotation.
fn annotation(issue: &crate::model::CheckerIssue) -> Option<Annotation> {
    let at = issue.affected_field.as_deref()?;
    let (path, lines) = at.rsplit_once(':')?;
    let (start, end) = match lines.split_once('-') {
        Some((a, b)) => (a.parse().ok()?, b.parse().ok()?),
        None => {
            let line = lines.parse().ok()?;
            (line, line)
        }
    };
    Some(Annotation {
        path: path.to_string(),
        start_line: start,
        end_line: end,
        level: match issue.severity {
            crate::model::Severity::Blocker => AnnotationLevel::Failure,
            crate::model::Severity::Warning => AnnotationLevel::Warning,
            crate::model::Severity::Info => AnnotationLevel::Notice,
        },
        message: issue.finding.clone(),
        title: Some(issue.dimension.clone()),
    })
}

fn required_name(config: &Config) -> &'static str {
    config.github.permission.as_str()
}

/// `visible` with the notices about the state (a history lost to an unreadable state).
fn with_notices(visible: &str, state: &StickyState) -> String {
    crate::comment::state_notices(state.lost_state.as_deref())
        .iter()
        .fold(visible.to_string(), |text, notice| {
            format!("{text}\n\n{notice}")
        })
}

/// The first seven characters of a commit id, as git shows it.
fn short(sha: &CommitSha) -> &str {
    sha.0.get(..7).unwrap_or(&sha.0)
}

/// Deletes the bot's replies on `pr` that repeat an older one's marker (of `key` alone, when
/// given), the oldest of each kept: a reply a dead replica or a failed attempt sent that
/// reached GitHub after the job was run again and answered. A delete that fails is left for
/// the next job. Says what it removed, if anything.
pub async fn remove_duplicate_replies(
    forge: &dyn Forge,
    repo: &RepoName,
    pr: PrNumber,
    comments: &[Comment],
    bot_login: &str,
    key: Option<&str>,
) -> Option<String> {
    let duplicates = crate::github::forge::duplicate_replies(comments, bot_login, key);
    let mut removed = 0;
    for id in &duplicates {
        match forge.delete_comment(repo, *id).await {
            Ok(()) => removed += 1,
            Err(e) => tracing::warn!(pr = pr.0, comment = id.0, "removing a duplicate reply: {e}"),
        }
    }
    (removed > 0).then(|| {
        format!(
            "removed {removed} duplicate repl{}",
            if removed == 1 { "y" } else { "ies" }
        )
    })
}
