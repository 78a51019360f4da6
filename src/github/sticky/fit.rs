//! Making the sticky comment fit GitHub's size limit without losing what matters.
//!
//! **Feedback is bounded when it is added** ([`Feedback::bound`]): each message, review
//! text and escalation reason at most [`crate::model::FEEDBACK_MAX_BYTES`] with a note
//! saying how much was cut, and the newest [`crate::model::FEEDBACK_MAX_ITEMS`] per list.
//! The state written is always bounded this way too, whoever added the feedback.
//!
//! **Compaction order** ([`compact_to_fit`]), as little of each step as needed:
//! 1. the issues and triggers of the oldest records go (they are never shown again);
//! 2. feedback is shortened (the newest ten, 500 characters each);
//! 3. the oldest records go, the latest always stays;
//! 4. last resort: the latest record loses its issues too.
//!
//! **Budgets survive compaction.** The engine sums tokens, output tokens, spend and tool
//! calls over the records it is given and measures the wall clock from the first record's
//! timestamp (`engine::budget`). A dropped record's figures are therefore *carried* by the
//! oldest record kept: its figures grow by the dropped ones' sums and its timestamp moves
//! back to the earliest dropped one, so every total and the wall clock stay what they were.
//! `Compaction::carried` says how much of that record's figures came from dropped ones. We
//! chose this over a synthetic summary record because a synthetic record would be an
//! iteration to the engine (trajectory, plateaus, best output) and to every view; carrying
//! changes only the budget figures of one record. Two effects to know: the carrying record's
//! per-iteration figures read high (projections use the average per *reporting* record, so
//! they err on the cautious side), and a carrying record that is replaced by a new record of
//! the same commit (a re-run job when every older record was dropped) loses what it carried.
//!
//! **The visible text** is cut ([`fit_visible`]) at a line boundary; a fence or a
//! `<details>` left open by the cut is closed before the note, so the state never shows as
//! code and no block swallows what follows.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::{encode, strip, StickyState, MAX_BODY_BYTES, STATE_RESERVE_BYTES};
use crate::history::History;
use crate::model::Feedback;
use crate::model::IterationRecord;

/// Feedback kept when compaction shortens it.
const FEEDBACK_KEEP: usize = 10;
const FEEDBACK_CHARS: usize = 500;
const CUT_NOTE: &str = "\n\n… (cut: the comment reached GitHub's size limit)";

/// Budget figures of dropped records, carried by the oldest record kept.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Carried {
    pub tokens_used: u64,
    pub output_tokens: u64,
    pub cost_usd: f64,
    pub tool_calls: u64,
    /// The earliest timestamp of a dropped record: the wall clock's start.
    pub first_timestamp: Option<DateTime<Utc>>,
}

impl Carried {
    pub fn is_empty(&self) -> bool {
        *self == Carried::default()
    }
}

/// Feedback shortened further, when the comment is full: the newest ten texts, 500
/// characters each.
pub(super) fn shorten_feedback(feedback: &mut Feedback) {
    for list in [&mut feedback.messages, &mut feedback.rejections] {
        let excess = list.len().saturating_sub(FEEDBACK_KEEP);
        list.drain(..excess);
        for text in list.iter_mut() {
            if text.chars().count() > FEEDBACK_CHARS {
                *text = text.chars().take(FEEDBACK_CHARS).collect::<String>() + "…";
            }
        }
    }
    if let Some(reason) = &mut feedback.escalation {
        *reason = reason.chars().take(FEEDBACK_CHARS).collect();
    }
}

fn add(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0).saturating_add(b.unwrap_or(0))),
    }
}

fn spend(record: &IterationRecord) -> Option<f64> {
    record.cost_usd.filter(|c| c.is_finite() && *c >= 0.0)
}

fn sum(
    records: &[IterationRecord],
    field: impl Fn(&IterationRecord) -> Option<u64>,
) -> Option<u64> {
    records.iter().map(field).fold(None, add)
}

/// Drops the `count` oldest records (never the latest); the oldest record kept carries their
/// budget figures, so totals and the wall clock do not change.
fn drop_carrying(state: &mut StickyState, count: usize) {
    let count = count.min(state.records.len().saturating_sub(1));
    if count == 0 {
        return;
    }
    let (dropped, kept) = state.records.split_at_mut(count);
    let carrier = &mut kept[0];
    let tokens = sum(dropped, |r| r.tokens_used);
    let output = sum(dropped, |r| r.output_tokens);
    let calls = sum(dropped, |r| r.tool_calls);
    let cost = dropped.iter().filter_map(spend).reduce(|a, b| a + b);
    let first = dropped.iter().map(|r| r.timestamp).min();
    carrier.tokens_used = add(carrier.tokens_used, tokens);
    carrier.output_tokens = add(carrier.output_tokens, output);
    carrier.tool_calls = add(carrier.tool_calls, calls);
    if let Some(cost) = cost {
        carrier.cost_usd = Some(spend(carrier).unwrap_or(0.0) + cost);
    }
    if let Some(first) = first.filter(|f| *f < carrier.timestamp) {
        carrier.timestamp = first;
    }
    let carried = &mut state.compaction.carried;
    carried.tokens_used = carried.tokens_used.saturating_add(tokens.unwrap_or(0));
    carried.output_tokens = carried.output_tokens.saturating_add(output.unwrap_or(0));
    carried.tool_calls = carried.tool_calls.saturating_add(calls.unwrap_or(0));
    carried.cost_usd += cost.unwrap_or(0.0);
    carried.first_timestamp = carried.first_timestamp.into_iter().chain(first).min();
    state.records.drop_oldest(count);
    state.compaction.dropped_records = state
        .compaction
        .dropped_records
        .saturating_add(u32::try_from(count).unwrap_or(u32::MAX));
}

/// The state line for `state`, compacted until it is at most `room` bytes (see the module
/// documentation for the order).
pub(super) fn compact_to_fit(state: &StickyState, room: usize) -> String {
    let mut bounded = state.clone();
    bounded.feedback.bound();
    let line = encode(&bounded);
    if line.len() <= room {
        return line;
    }
    let older = bounded.records.len().saturating_sub(1);
    // 1. Strip issues and triggers of the oldest records, as few as needed.
    let stripped = |k: usize| {
        let mut s = bounded.clone();
        let newly = s.records[..k]
            .iter()
            .filter(|r| !r.issues.is_empty() || !r.triggers.is_empty())
            .count();
        s.records[..k].iter_mut().for_each(strip);
        s.compaction.stripped_records += newly as u32;
        s
    };
    if let Some(line) = smallest_fitting(older, room, |k| encode(&stripped(k))) {
        return line;
    }
    // 2. Shorten feedback before any record is dropped.
    let mut shortened = stripped(older);
    shorten_feedback(&mut shortened.feedback);
    let line = encode(&shortened);
    if line.len() <= room {
        return line;
    }
    // 3. Drop the oldest records, keeping the latest; the kept ones carry their budgets.
    let dropped = |k: usize| {
        let mut s = shortened.clone();
        drop_carrying(&mut s, k);
        s
    };
    if let Some(line) = smallest_fitting(older, room, |k| encode(&dropped(k))) {
        return line;
    }
    // 4. Last resort: the latest record loses its issues and details too.
    let mut last = dropped(older);
    last.records.iter_mut().for_each(|r| {
        strip(r);
        r.metrics.clear();
        r.base_debt.examples.clear();
    });
    last.feedback.messages.clear();
    last.feedback.rejections.clear();
    let line = encode(&last);
    if line.len() <= room {
        return line;
    }
    last.records = History::default();
    encode(&last)
}

/// The encoding for the smallest `k` in `0..=max` whose encoding fits in `room`, if any;
/// `encode_with(k)` shrinks as `k` grows.
pub(super) fn smallest_fitting(
    max: usize,
    room: usize,
    encode_with: impl Fn(usize) -> String,
) -> Option<String> {
    let fits = |k: usize| {
        let line = encode_with(k);
        (line.len() <= room).then_some(line)
    };
    let mut best = fits(max)?;
    let (mut lo, mut hi) = (0, max);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        match fits(mid) {
            Some(line) => {
                best = line;
                hi = mid;
            }
            None => lo = mid + 1,
        }
    }
    Some(best)
}

/// What a cut leaves open: a fence (its marker) and `<details>` blocks.
#[derive(Default)]
struct Open {
    fence: Option<String>,
    details: usize,
}

/// The fence marker a line opens or closes with (a run of 3+ backticks or tildes).
fn fence_run(line: &str) -> Option<&str> {
    let line = line.trim_start_matches([' ', '>']).trim_start();
    let first = line.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let run = line.len() - line.trim_start_matches(first).len();
    (run >= 3).then(|| &line[..run])
}

fn open_blocks(text: &str) -> Open {
    let mut open = Open::default();
    for line in text.lines() {
        let run = fence_run(line);
        match (&open.fence, run) {
            (Some(opener), Some(run)) => {
                let closes = run.starts_with(&opener[..1])
                    && run.len() >= opener.len()
                    && line.trim().len() == run.len();
                if closes {
                    open.fence = None;
                }
            }
            (Some(_), None) => {}
            (None, Some(run)) => open.fence = Some(run.to_string()),
            (None, None) => {
                let lower = line.to_ascii_lowercase();
                open.details += lower.matches("<details").count();
                open.details = open
                    .details
                    .saturating_sub(lower.matches("</details>").count());
            }
        }
    }
    open
}

fn closers(open: &Open) -> String {
    let mut text = String::new();
    if let Some(fence) = &open.fence {
        text.push('\n');
        text.push_str(fence);
    }
    for _ in 0..open.details {
        text.push_str("\n\n</details>");
    }
    text
}

/// `visible` cut to the room left after the state's reserve, at a line boundary, with open
/// fences and `<details>` closed and a note saying it was cut.
pub(super) fn fit_visible(visible: &str) -> String {
    let limit = MAX_BODY_BYTES - STATE_RESERVE_BYTES;
    if visible.len() <= limit {
        return visible.to_string();
    }
    let mut end = limit - CUT_NOTE.len();
    loop {
        while !visible.is_char_boundary(end) {
            end -= 1;
        }
        let cut = &visible[..end];
        let cut = cut.rfind('\n').map_or(cut, |nl| &cut[..nl]);
        let close = closers(&open_blocks(cut));
        if cut.len() + close.len() + CUT_NOTE.len() <= limit || cut.is_empty() {
            return format!("{cut}{close}{CUT_NOTE}");
        }
        end = cut.len().saturating_sub(close.len());
    }
}
