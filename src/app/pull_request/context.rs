//! A `CONTEXT_GAP_REPORT` in a pull request comment: the agent (the PR's author, or anyone
//! with `github.permission`) gets one comment answering it. Files are read from the PR's
//! head commit through GitHub's contents API, never by running its code; concepts come
//! from the sticky state's record (a check's findings, a failing test) and the decision.
//! Rounds are counted in the sticky state for the current iteration (a new iteration
//! starts again); a required item that cannot be provided escalates through the usual
//! path (label, and one call to the reviewers).
//!
//! The reply carries the reply marker of the comment, so a re-run job answers it once; a
//! report from anyone else is ignored without a reply (it costs one permission lookup).

use std::collections::HashMap;

use super::{Handler, HandlerError, Outcome};
use crate::config::Config;
use crate::context::request::Request;
use crate::context::{
    self, deliver, delivery_view, requests_to_answer, GapReport, ItemSource, Limits, Lookup,
    Policy, ReplyKind, TestDetail,
};
use crate::engine::DecisionReport;
use crate::github::events::CommentEvent;
use crate::github::forge::{has_reply, ForgeError};
use crate::github::types::RepoName;
use crate::model::IterationRecord;

impl Handler<'_> {
    pub(super) async fn context_gap(
        &self,
        event: CommentEvent,
        report: GapReport,
    ) -> Result<Outcome, HandlerError> {
        let comments = self.forge.list_comments(&self.repo, event.pr).await?;
        let key = format!("comment-{}", event.comment_id);
        if has_reply(&comments, &self.bot_login, &key) {
            return Ok(outcome("this gap report was answered already"));
        }
        let pull = self.forge.pull_request(&self.repo, event.pr).await?;
        let is_author = event.author.is(&pull.author.login);
        if event.author.is_bot() && !is_author && !self.config.github.allow_bots {
            return Ok(Outcome::default());
        }
        if !is_author {
            let permission = self
                .forge
                .permission(&self.repo, &event.author.login)
                .await?;
            if permission < self.config.github.permission {
                return Ok(outcome(&format!(
                    "ignored a gap report by {} (not the PR's author; permission {})",
                    event.author.login,
                    permission.as_str()
                )));
            }
        }
        let (mut state, mut actions) = self.load(event.pr, &comments).await?;
        let policy = Policy::from_config(self.config)
            .map_err(|e| HandlerError::Render(anyhow::anyhow!(e)))?;
        let limits = Limits::from_config(self.config);
        // The rounds are used up: more reports get the reply limit commands get.
        let mut addressed = None;
        if state.context_rounds >= limits.max_rounds {
            match super::commands::take_reply(
                &comments,
                &self.bot_login,
                &event.author.login,
                self.now,
            ) {
                Ok(line) => addressed = Some(line),
                Err(_) => {
                    return Ok(outcome(&format!(
                        "no reply to {}'s gap report: its rounds are used up and they were answered less than {} minutes ago",
                        event.author.login,
                        super::UNPRIVILEGED_REPLY_INTERVAL_MINUTES
                    )))
                }
            }
        }
        let head = pull.head.sha.0.clone();
        let latest = state.records.last().cloned();
        let decision = self
            .evaluate(event.pr, &state, None)
            .and_then(|evaluation| {
                serde_norway::to_string(&DecisionReport {
                    iteration_decision: evaluation.decision,
                    task: None,
                })
                .ok()
            });
        let requests = requests_to_answer(&report, state.context_rounds, &limits);
        let files = self
            .prefetch(&head, &requests, latest.as_ref(), &policy)
            .await?;
        let source = PrSource {
            files,
            record: latest.as_ref(),
            config: self.config,
            decision,
        };
        let reply = deliver(&report, state.context_rounds, &source, &policy, &limits);
        let view = delivery_view(&reply, Some(&head), true);
        let text = self
            .renderer
            .render("context-delivery.md.j2", &view)
            .map_err(HandlerError::Render)?;
        let text = match addressed {
            Some(line) => format!("{line}\n{text}"),
            None => text,
        };
        self.reply(event.pr, &comments, &key, &text).await?;
        actions.push(format!(
            "answered a gap report (round {} of {})",
            reply.round, reply.max_rounds
        ));
        let iteration = latest.as_ref().map_or(0, |r| r.iteration);
        if reply.kind != ReplyKind::Ready {
            state.context_rounds = reply.round;
        }
        record_use(&mut state.context_log, iteration, &reply);
        state.last_command_comment = state.last_command_comment.max(Some(event.comment_id));
        if reply.escalates() {
            let place = format!("comment {}", event.comment_id.0);
            state.feedback.escalation = Some(context::escalation_reason(&reply, &place));
            state.feedback.escalated_by = None;
            state.feedback.accepted = false;
            state.accepted_with = None;
            actions.push("a required context item cannot be provided: escalated".into());
        }
        self.publish(event.pr, &comments, state, None, actions)
            .await
    }

    /// The files the answer reads, from the head commit: those asked for by path, and the
    /// files of the failing tests asked for.
    async fn prefetch(
        &self,
        head: &str,
        requests: &[Request],
        latest: Option<&IterationRecord>,
        policy: &Policy,
    ) -> Result<HashMap<String, Lookup>, ForgeError> {
        let mut paths: Vec<String> = Vec::new();
        for request in requests {
            match request {
                Request::File { path, .. } => paths.push(path.clone()),
                Request::Test { id } => {
                    if let Some(file) = latest.and_then(|r| test_of(r, id)).and_then(|t| t.file) {
                        paths.push(file);
                    }
                }
                _ => {}
            }
        }
        paths.retain(|p| policy.refusal(p).is_none());
        paths.sort();
        paths.dedup();
        let mut files = HashMap::new();
        for path in paths {
            let found = read(self.forge, &self.repo, head, &path).await?;
            files.insert(path, found);
        }
        Ok(files)
    }
}

async fn read(
    forge: &dyn crate::github::forge::Forge,
    repo: &RepoName,
    head: &str,
    path: &str,
) -> Result<Lookup, ForgeError> {
    match forge.file_content(repo, head, path).await {
        Ok(Some(bytes)) => Ok(Lookup::Found(bytes)),
        Ok(None) => Ok(Lookup::Missing),
        Err(ForgeError::TooLarge { limit_bytes, .. }) => Ok(Lookup::TooLarge(limit_bytes)),
        Err(e) if e.is_forbidden() => Ok(Lookup::Failed("GitHub refused the read".into())),
        Err(e) => Err(e),
    }
}

fn outcome(action: &str) -> Outcome {
    Outcome {
        actions: vec![action.to_string()],
        ..Outcome::default()
    }
}

/// Counts the reply in the iteration's entry of the log.
fn record_use(log: &mut Vec<context::ContextUse>, iteration: u32, reply: &context::Reply) {
    let index = match log.iter().position(|u| u.iteration == iteration) {
        Some(index) => index,
        None => {
            log.push(context::ContextUse {
                iteration,
                ..Default::default()
            });
            log.len() - 1
        }
    };
    log[index].add(reply.kind, reply.round);
}

/// A failing test of the record (the test its finding is about: its subject, or in a
/// record of an older version the words `test ID failed: ...`) and where it failed.
fn test_of(record: &IterationRecord, id: &str) -> Option<TestDetail> {
    record.issues.iter().find_map(|issue| {
        let name = match issue.test() {
            Some(test) => test,
            None if issue.kind.is_none() => {
                let rest = issue.finding.strip_prefix("test ")?;
                rest.split_once(' ')?.0
            }
            None => return None,
        };
        let same = name == id
            || name
                .strip_suffix(id)
                .is_some_and(|r| r.ends_with("::") || r.ends_with('.'));
        if !same {
            return None;
        }
        let (file, line) = match issue
            .affected_field
            .as_deref()
            .and_then(|a| a.rsplit_once(':'))
        {
            // The record's place is untrusted text: `./`, `..` and `\\` are resolved before
            // the policy sees it, and a path that climbs out is not read.
            Some((file, line)) => (
                crate::context::request::normalise(file).filter(|f| !f.is_empty()),
                line.parse().ok(),
            ),
            None => (None, None),
        };
        Some(TestDetail {
            id: name.to_string(),
            finding: issue.finding.clone(),
            file,
            line,
        })
    })
}

/// Items of a pull request: prefetched files, the latest record, the decision.
struct PrSource<'a> {
    files: HashMap<String, Lookup>,
    record: Option<&'a IterationRecord>,
    config: &'a Config,
    decision: Option<String>,
}

impl ItemSource for PrSource<'_> {
    fn file(&self, path: &str) -> Lookup {
        self.files.get(path).cloned().unwrap_or(Lookup::Missing)
    }

    fn files(&self) -> Option<Vec<String>> {
        None
    }

    fn check_output(&self, name: &str) -> Option<String> {
        let findings: Vec<String> = self
            .record?
            .issues
            .iter()
            .filter(|i| i.dimension == name)
            .map(|i| match &i.affected_field {
                Some(at) => format!("{}: {} ({at})", i.severity.as_str(), i.finding),
                None => format!("{}: {}", i.severity.as_str(), i.finding),
            })
            .collect();
        (!findings.is_empty()).then(|| findings.join("\n") + "\n")
    }

    fn test(&self, id: &str) -> Option<TestDetail> {
        test_of(self.record?, id)
    }

    fn config(&self) -> &Config {
        self.config
    }

    fn decision(&self) -> Option<String> {
        self.decision.clone()
    }

    /// The iteration's diff stat (the scorer's): the patch itself is on the pull request's
    /// Files tab, and its files can be asked for by path.
    fn diff(&self) -> Result<Vec<(String, String)>, String> {
        let changes = self
            .record
            .and_then(|r| r.changes.as_ref())
            .filter(|c| !c.files.is_empty())
            .ok_or_else(|| {
                "the pull request's diff is on its Files tab; ask for the files it changed by path"
                    .to_string()
            })?;
        Ok(changes
            .files
            .iter()
            .map(|f| {
                let line = format!("{} | +{} -{}\n", f.path, f.added, f.deleted);
                (f.path.clone(), line)
            })
            .collect())
    }
}
