//! Reviews: who may steer the agent or take a decision back.
//!
//! A review counts only when its author has `github.permission` (as for commands; on a
//! public repository anyone signed in can "request changes") and only when it is about the
//! newest iteration's commit (a review of an older commit says nothing about the newest).
//! - "Changes requested" is a `user_rejection` whose text names the reviewer and their
//!   permission. It takes back an `/iterate accept` only when the reviewer's permission is at
//!   least that of whoever accepted: a maintainer's accept stands against a writer's review.
//! - "Approved" clears the earlier rejections (it never accepts by itself).
//! - Review bodies are never read for `/iterate` commands (`help.md.j2` says so): only
//!   comments carry commands, so one set of rules (reply limits, the author rule) applies.

use super::{short, Handler, HandlerError, Outcome};
use crate::github::events::ReviewEvent;

impl Handler<'_> {
    pub(super) async fn review(&self, event: ReviewEvent) -> Result<Outcome, HandlerError> {
        if !(event.is_rejection() || event.is_approval()) || event.reviewer.is(&self.bot_login) {
            return Ok(Outcome::default());
        }
        let login = &event.reviewer.login;
        let permission = self.forge.permission(&self.repo, login).await?;
        let required = self.config.github.permission;
        if permission < required {
            return Ok(ignored(format!(
                "ignored the review by {login}: their permission is {}, github.permission is {}",
                permission.as_str(),
                required.as_str()
            )));
        }
        let comments = self.forge.list_comments(&self.repo, event.pr).await?;
        let (mut state, mut actions) = self.load(event.pr, &comments).await?;
        if let (Some(commit), Some(latest)) = (&event.commit, state.records.last()) {
            if *commit != latest.commit {
                actions.push(format!(
                    "ignored the review by {login}: it is about commit {}, the newest iteration is {}",
                    short(commit),
                    short(&latest.commit)
                ));
                return Ok(ignored_with(actions));
            }
        }
        let feedback = &mut state.feedback;
        if event.is_approval() {
            if feedback.rejections.is_empty() {
                return Ok(ignored_with(actions));
            }
            feedback.rejections.clear();
            actions.push(format!(
                "the approval by {login} cleared the earlier change requests"
            ));
        } else {
            let text = match event.body.as_deref().map(str::trim) {
                Some(body) if !body.is_empty() => format!(
                    "{login} ({}) requested changes: {body}",
                    permission.as_str()
                ),
                _ => format!("changes requested by {login} ({})", permission.as_str()),
            };
            feedback.rejections.push(text);
            feedback.bound();
            let accepted_with = state.accepted_with.unwrap_or(required);
            if feedback.accepted && permission < accepted_with {
                actions.push(format!(
                    "the review by {login} ({}) leaves the acceptance given with {} permission in place",
                    permission.as_str(),
                    accepted_with.as_str()
                ));
            } else {
                feedback.accepted = false;
                state.accepted_with = None;
            }
            actions.push("review requested changes".into());
        }
        self.publish(event.pr, &comments, state, None, actions)
            .await
    }
}

fn ignored(action: String) -> Outcome {
    ignored_with(vec![action])
}

fn ignored_with(actions: Vec<String>) -> Outcome {
    Outcome {
        actions,
        ..Outcome::default()
    }
}
