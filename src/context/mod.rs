//! Minimum sufficient context, the orchestrator's side of `iterative-retrieval`: the
//! revision prompt is a lean seed (round 0); an agent that lacks something answers with a
//! `CONTEXT_GAP_REPORT`; itergate answers with a `CONTEXT_DELIVERY` of exactly the items
//! asked for, for at most `context.max_rounds` rounds, then with "Execute with the context
//! available. Document any assumptions made in your result." An item marked
//! `none — required` that cannot be provided calls a human.
//!
//! - [`parse`]: the strict report format; malformed lines are reported, never guessed.
//! - [`request`]: what one `NEEDS:` line asks for (a file, a line range, a pattern, or a
//!   concept itergate owns).
//! - [`policy`]: what is never delivered (holdout, secrets).
//! - [`deliver`](mod@deliver): the reply, from a report and an [`deliver::ItemSource`]; pure.
//!
//! The modes supply the source: `itergate context` reads the local repository at the
//! iteration's commit ([`crate::app::context`]); on a pull request the files come from
//! GitHub at the head commit, never from running its code ([`crate::app::pull_request`]).

pub mod deliver;
pub mod parse;
pub mod policy;
pub mod request;

use serde::Serialize;

pub use deliver::{deliver, ItemSource, Limits, Lookup, Reply, ReplyKind, TestDetail, EXECUTE_NOW};
pub use parse::{parse_gap_report, Alternative, GapItem, GapReport, Malformed};
pub use policy::{Holdout, Policy};

use crate::markup::{escape_markdown_inline, fence_with_info};

/// How much context an iteration's agent asked for: the rounds used, and whether it said
/// `READY_TO_EXECUTE: true` before asking for anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, serde::Deserialize)]
#[serde(default)]
pub struct ContextUse {
    pub iteration: u32,
    pub rounds: u32,
    pub ready_at_round_0: bool,
}

impl ContextUse {
    /// Counts one answered report.
    pub fn add(&mut self, kind: ReplyKind, round: u32) {
        if kind == ReplyKind::Ready && self.rounds == 0 {
            self.ready_at_round_0 = true;
        }
        self.rounds = self.rounds.max(round);
    }
}

/// What the delivery template renders.
#[derive(Debug, Serialize)]
pub struct DeliveryView {
    pub kind: ReplyKind,
    pub round: u32,
    pub max_rounds: u32,
    /// The commit the files were read at (short).
    pub commit: Option<String>,
    pub items: Vec<ItemView>,
    pub malformed: Vec<deliver::LineProblem>,
    /// `1, 3`: the required items that could not be provided.
    pub missing_required: String,
    pub closing: String,
}

#[derive(Debug, Serialize)]
pub struct ItemView {
    pub number: usize,
    pub title: Option<String>,
    pub note: Option<String>,
    /// The content, fenced.
    pub block: Option<String>,
    pub refused: Option<String>,
    pub required: bool,
}

/// The view of `reply`; `markdown`: titles are escaped for a GitHub comment.
pub fn delivery_view(reply: &Reply, commit: Option<&str>, markdown: bool) -> DeliveryView {
    let items = reply
        .items
        .iter()
        .map(|item| ItemView {
            number: item.number,
            title: item.title.as_deref().map(|t| match markdown {
                // A code span shows a path as it is and links or mentions nothing.
                true if !t.contains(['`', '\n', '\r']) => format!("`{t}`"),
                true => escape_markdown_inline(t),
                false => t.to_string(),
            }),
            note: item.note.clone(),
            block: item
                .content
                .as_deref()
                .map(|c| fence_with_info(c, item.language.as_deref().unwrap_or("text"))),
            refused: item.refused.clone(),
            required: item.required,
        })
        .collect();
    DeliveryView {
        kind: reply.kind,
        round: reply.round,
        max_rounds: reply.max_rounds,
        commit: commit.map(|c| c.chars().take(12).collect()),
        items,
        malformed: reply.malformed.clone(),
        missing_required: reply
            .missing_required
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        closing: reply.closing.clone(),
    }
}

/// Why a human was called, for the escalation: the items by number, never their words.
pub fn escalation_reason(reply: &Reply, place: &str) -> String {
    let items: Vec<String> = reply
        .items
        .iter()
        .filter(|i| reply.missing_required.contains(&i.number))
        .map(|i| {
            format!(
                "item {} ({})",
                i.number,
                i.refused.as_deref().unwrap_or("not delivered")
            )
        })
        .collect();
    format!(
        "the agent's CONTEXT_GAP_REPORT ({place}) needs what cannot be provided: {}",
        items.join("; ")
    )
}

/// What a delivery for `report` would ask its source for, so that a mode whose reads are
/// slow (GitHub's API) fetches only that, first: nothing when the report gets no delivery
/// (ready, or at the round cap); otherwise the requests of the items answered.
pub fn requests_to_answer(
    report: &GapReport,
    answered: u32,
    limits: &Limits,
) -> Vec<request::Request> {
    if report.is_ready() || answered + 1 >= limits.max_rounds {
        return Vec::new();
    }
    report
        .items
        .iter()
        .take(deliver::MAX_ITEMS)
        .map(|item| request::classify(&item.needs))
        .collect()
}
