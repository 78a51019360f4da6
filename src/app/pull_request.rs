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
//!   and is not written by itergate itself or, unless allowed, another bot. Each command gets
//!   👀; state-changing ones need the configured permission (a refusal changes nothing);
//!   errors and `help`/`status` get a reply; the result is a 👍 or 😕.
//! - A review requesting changes is a `user_rejection`.
//!
//! Effects are idempotent: the sticky comment is upserted, commands of a comment already
//! applied (its id is in the state) are not applied twice.

use chrono::{DateTime, Utc};

use super::evaluate::{evaluate, EvaluateInput, Evaluation};
use crate::config::Config;
use crate::engine::{Decision, Recommendation};
use crate::github::checks::{
    Annotation, AnnotationLevel, CheckConclusion, CheckRunSpec, CheckState,
};
use crate::github::commands::{self, Command, Permission};
use crate::github::events::{CommentEvent, ReviewEvent};
use crate::github::forge::{Forge, ForgeError};
use crate::github::sticky::{self, StickyState};
use crate::github::types::{Comment, LabelSpec, PrNumber, Reaction, RepoName};
use crate::markup::fence_with_info;
use crate::model::IterationRecord;
use crate::render::Renderer;

/// What happened that itergate should act on.
#[derive(Debug, Clone)]
pub enum Input {
    /// A scored commit of the PR (from CI, or a fork run's artifact).
    Iteration {
        pr: PrNumber,
        record: Box<IterationRecord>,
        base: Option<Box<IterationRecord>>,
    },
    Comment(CommentEvent),
    Review(ReviewEvent),
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
}

impl Handler<'_> {
    pub async fn handle(&self, input: Input) -> Result<Outcome, HandlerError> {
        match input {
            Input::Iteration { pr, record, base } => {
                self.iteration(pr, *record, base.map(|b| *b)).await
            }
            Input::Comment(event) => self.comment(event).await,
            Input::Review(event) => self.review(event).await,
        }
    }

    async fn iteration(
        &self,
        pr: PrNumber,
        record: IterationRecord,
        base: Option<IterationRecord>,
    ) -> Result<Outcome, HandlerError> {
        let comments = self.forge.list_comments(&self.repo, pr).await?;
        let mut state = sticky::load_state(&comments, &self.bot_login).state;
        let latest = Some(record.clone());
        if state.records.record(record) {
            // What people said was about the previous iteration.
            state.feedback.messages.clear();
            state.feedback.rejections.clear();
            state.feedback.accepted = false;
            state.feedback.escalation = None;
            state.context_rounds = 0;
        }
        let outcome = self
            .publish(
                pr,
                &comments,
                state,
                base.as_ref(),
                vec!["recorded a new iteration".into()],
            )
            .await?;
        if self.config.github.check_run {
            if let (Some(decision), Some(latest)) = (&outcome.decision, &latest) {
                self.check_run(latest, decision, outcome.summary.as_deref().unwrap_or(""))
                    .await?;
            }
        }
        Ok(outcome)
    }

    async fn review(&self, event: ReviewEvent) -> Result<Outcome, HandlerError> {
        if !event.is_rejection() || event.reviewer.is(&self.bot_login) {
            return Ok(Outcome::default());
        }
        let comments = self.forge.list_comments(&self.repo, event.pr).await?;
        let mut state = sticky::load_state(&comments, &self.bot_login).state;
        let text = event
            .body
            .filter(|b| !b.trim().is_empty())
            .unwrap_or_else(|| format!("changes requested by {}", event.reviewer.login));
        state.feedback.rejections.push(text);
        state.feedback.accepted = false;
        self.publish(
            event.pr,
            &comments,
            state,
            None,
            vec!["review requested changes".into()],
        )
        .await
    }

    async fn comment(&self, event: CommentEvent) -> Result<Outcome, HandlerError> {
        if event.author.is(&self.bot_login)
            || (event.author.is_bot() && !self.config.github.allow_bots)
        {
            return Ok(Outcome::default());
        }
        let parsed = commands::parse_comment(&event.body);
        if parsed.is_empty() {
            return Ok(Outcome::default());
        }
        let repo = &self.repo;
        self.forge
            .add_reaction(repo, event.comment_id, Reaction::Eyes)
            .await?;
        let comments = self.forge.list_comments(repo, event.pr).await?;
        let mut state = sticky::load_state(&comments, &self.bot_login).state;
        if state
            .last_command_comment
            .is_some_and(|id| id >= event.comment_id)
        {
            return Ok(Outcome {
                actions: vec!["commands of this comment were applied already".into()],
                ..Outcome::default()
            });
        }
        let mut actions = Vec::new();
        let mut ok = true;
        let mut permission: Option<Permission> = None;
        for command in parsed {
            match command {
                Err(error) => {
                    ok = false;
                    self.reply(
                        event.pr,
                        &format!("`/iterate`: {error}\n\nSee `/iterate help`."),
                    )
                    .await?;
                }
                Ok(command) if command.changes_state() => {
                    let have = match permission {
                        Some(p) => p,
                        None => *permission
                            .insert(self.forge.permission(repo, &event.author.login).await?),
                    };
                    if have < required(self.config) {
                        ok = false;
                        let message = format!(
                            "Sorry @{}, `{}` needs {} permission on this repository; nothing was changed.",
                            event.author.login,
                            command.name(),
                            required_name(self.config)
                        );
                        self.reply(event.pr, &message).await?;
                        continue;
                    }
                    actions.push(apply(&mut state, &command));
                }
                Ok(Command::Help) => self.reply(event.pr, &self.help()?).await?,
                Ok(Command::Status) => self.reply(event.pr, &self.status(&state)?).await?,
                Ok(Command::Reevaluate) => {
                    let have = match permission {
                        Some(p) => p,
                        None => *permission
                            .insert(self.forge.permission(repo, &event.author.login).await?),
                    };
                    if have >= required(self.config) {
                        actions.push(self.rerun(event.pr).await?);
                    } else {
                        actions.push("re-posted the current decision".into());
                    }
                }
                Ok(_) => {}
            }
        }
        state.last_command_comment = Some(event.comment_id);
        let reaction = if ok {
            Reaction::PlusOne
        } else {
            Reaction::Confused
        };
        let outcome = if actions.is_empty() {
            Outcome::default()
        } else {
            self.publish(event.pr, &comments, state, None, actions)
                .await?
        };
        self.forge
            .add_reaction(repo, event.comment_id, reaction)
            .await?;
        Ok(outcome)
    }

    /// Asks CI to score the PR's head again: a `repository_dispatch` (one of the few events a
    /// workflow's own token can trigger). Never for a fork: that would run its code with a
    /// token that can write.
    async fn rerun(&self, pr: PrNumber) -> Result<String, ForgeError> {
        let pull = self.forge.pull_request(&self.repo, pr).await?;
        if pull.is_fork() {
            return Ok("re-posted the current decision (a fork's checks are not re-run)".into());
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
        let conclusion = match decision.recommendation() {
            Recommendation::Accept => CheckConclusion::Success,
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

    async fn reply(&self, pr: PrNumber, body: &str) -> Result<(), ForgeError> {
        self.forge
            .create_comment(&self.repo, pr, body)
            .await
            .map(|_| ())
    }

    fn help(&self) -> Result<String, HandlerError> {
        let view = serde_json::json!({ "permission": required_name(self.config) });
        self.renderer
            .render("help.md.j2", &view)
            .map_err(HandlerError::Render)
    }

    fn status(&self, state: &StickyState) -> Result<String, HandlerError> {
        let Some(evaluation) = self.evaluate(state, None) else {
            return Ok("No iteration of this pull request is recorded yet.".into());
        };
        let result = crate::analytics::build(self.config, &state.records, &evaluation, None);
        let text = self
            .renderer
            .render("analytics.txt.j2", &crate::analytics::text_view(&result))
            .map_err(HandlerError::Render)?;
        Ok(fence_with_info(&text, "text"))
    }

    fn evaluate(&self, state: &StickyState, base: Option<&IterationRecord>) -> Option<Evaluation> {
        evaluate(&EvaluateInput {
            task_id: "pull request",
            config: self.config,
            history: &state.records,
            feedback: &state.feedback,
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
        mut state: StickyState,
        base: Option<&IterationRecord>,
        mut actions: Vec<String>,
    ) -> Result<Outcome, HandlerError> {
        let Some(evaluation) = self.evaluate(&state, base) else {
            let body = sticky::render_body(
                "itergate has no iteration of this pull request yet.",
                &state,
            );
            sticky::upsert(self.forge, &self.repo, pr, comments, &self.bot_login, &body).await?;
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
        if notify {
            state.escalation_notified_at = Some(iteration);
        }
        let visible = self.visible(&state, base, &evaluation)?;
        let body = sticky::render_body(&visible, &state);
        sticky::upsert(self.forge, &self.repo, pr, comments, &self.bot_login, &body).await?;
        actions.push(format!("decision: {}", decision.recommendation().as_str()));
        let label = &self.config.github.label;
        if escalate {
            self.forge
                .add_label(&self.repo, pr, &LabelSpec::escalation(label))
                .await?;
            actions.push(format!("labelled {label}"));
        } else if decision.recommendation() == Recommendation::Accept {
            self.forge.remove_label(&self.repo, pr, label).await?;
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
            self.reply(pr, &text).await?;
            actions.push("called a human".into());
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
                self.renderer
                    .render(
                        "revision-prompt.md.j2",
                        &crate::prompt::prompt_view(latest, decision),
                    )
                    .map_err(HandlerError::Render)?,
            ),
            _ => None,
        };
        let view = crate::comment::comment_view(
            self.config,
            &state.records,
            base,
            evaluation,
            prompt.as_deref(),
        );
        self.renderer
            .render("comment.md.j2", &view)
            .map_err(HandlerError::Render)
    }
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

fn required(config: &Config) -> Permission {
    config.github.permission
}

fn required_name(config: &Config) -> &'static str {
    config.github.permission.as_str()
}

/// Applies a state-changing command; returns what was done.
fn apply(state: &mut StickyState, command: &Command) -> String {
    let feedback = &mut state.feedback;
    match command {
        Command::Accept => {
            feedback.accepted = true;
            feedback.escalation = None;
            "accepted by a maintainer".into()
        }
        Command::Adjust(guidance) => {
            feedback.accepted = false;
            feedback.escalation = None;
            feedback.restart_after = state.records.last().map(|r| r.iteration);
            feedback.messages.push(guidance.clone());
            state.escalation_notified_at = None;
            "approach adjusted; the revision count starts again".into()
        }
        Command::Escalate(reason) => {
            feedback.escalation = Some(reason.clone().unwrap_or_default());
            "escalated".into()
        }
        Command::Budget(n) => {
            feedback.max_iterations = Some(*n);
            format!("iteration budget set to {n}")
        }
        Command::Feedback(text) => {
            feedback.messages.push(text.clone());
            "feedback recorded".into()
        }
        Command::Reevaluate | Command::Status | Command::Help => String::new(),
    }
}
