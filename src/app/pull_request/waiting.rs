//! A new head was pushed and CI has not scored it yet: the sticky comment says so, and the
//! `itergate` check run on the head is in progress, so branch protection holds the merge
//! until the decision is in.

use super::{short, Handler, HandlerError, Outcome};
use crate::github::checks::{CheckRunSpec, CheckState};
use crate::github::types::PrNumber;
use crate::markup::escape_markdown_inline;
use crate::model::CommitSha;

impl Handler<'_> {
    /// Marks the PR as waiting for CI's record of `head`. Nothing is written when `head` is
    /// already the latest scored iteration (a redelivered `synchronize`).
    pub async fn waiting(&self, pr: PrNumber, head: &CommitSha) -> Result<Outcome, HandlerError> {
        let comments = self.forge.list_comments(&self.repo, pr).await?;
        let (mut state, mut actions) = self.load(pr, &comments).await?;
        if state.records.last().is_some_and(|r| r.commit == *head) {
            actions.push(format!("{} is already scored", short(head)));
            return Ok(Outcome {
                actions,
                ..Outcome::default()
            });
        }
        let waiting = format!(
            "⏳ Waiting for checks on `{}`: the decision follows when CI has scored this commit.",
            escape_markdown_inline(short(head))
        );
        let visible = match self.evaluate(pr, &state, None) {
            Some(evaluation) => {
                format!("{waiting}\n\n{}", self.visible(&state, None, &evaluation)?)
            }
            None => super::with_notices(&waiting, &state),
        };
        self.write_sticky(pr, &comments, &visible, &mut state)
            .await?;
        actions.push(format!("waiting for checks on {}", short(head)));
        if self.config.github.check_run {
            let spec = CheckRunSpec {
                name: "itergate".into(),
                head_sha: head.clone(),
                state: CheckState::InProgress,
                title: "itergate: waiting for checks".into(),
                summary: format!("Waiting for CI's iteration record of {}.", short(head)),
                text: None,
                annotations: Vec::new(),
                details_url: None,
                external_id: Some(format!("itergate-waiting-{}", head.0)),
            };
            self.forge.create_check_run(&self.repo, &spec).await?;
        }
        Ok(Outcome {
            summary: Some(visible),
            actions,
            ..Outcome::default()
        })
    }
}
