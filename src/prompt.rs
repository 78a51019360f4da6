//! The revision prompt: the issues an agent must address as a YAML block inside
//! `<checker_issues>`, then `<revision_instructions>` with the round number, the strategy,
//! the reviewers' words and the exact spans to start from (minimum sufficient context).
//!
//! Every piece of untrusted text (findings, test output, comments) is neutralised so it
//! cannot close the sections, and fenced so it cannot close a code block.
//!
//! Failing tests with one cause (the same panic location, or the same message, which is how
//! one missing import shows in every test module that imports it) are listed as one item
//! with a count and the first few test ids: forty BLOCKERs with one cause are one problem to
//! an agent. Grouping is a view of the record, not a change to it: the record keeps one
//! issue per failing test, so matching with the base's failures stays by test id and the
//! revision loop's count (BLOCKER+WARNING issues) still falls as tests are fixed one by one.
//! Grouped in the record, fixing 39 of 40 tests with one cause would count as no progress
//! and stall the loop.
//!
//! The prompt says what the iteration changed (files and a diff stat, from the caller,
//! which has the repository), so an agent looks at its own change before the tests.

use serde::Serialize;

pub use crate::engine::grouping::{group_issues, PromptIssue, MAX_GROUP_TEST_IDS};
use crate::engine::{ContextAdjustment, Decision, RevisionProgress};
use crate::markup::{fence_with_info, neutralise_tags};
use crate::model::{CheckerIssue, IterationRecord, Severity, TriggerType};

#[derive(Debug, Serialize)]
pub struct PromptView {
    pub task: String,
    pub iteration: u32,
    pub max_iterations: u32,
    pub progress_line: String,
    /// Where the revision loop stands, as a sentence; never "round n of max m" with n > m.
    pub round_sentence: String,
    pub recommendation: &'static str,
    pub why: String,
    pub issues_block: String,
    pub info_count: usize,
    /// BLOCKER/WARNING issues past [`MAX_PROMPT_ISSUES`], counted but not listed.
    pub omitted_count: usize,
    pub previous_count: Option<usize>,
    pub strategy: Option<&'static str>,
    pub guidance: Vec<String>,
    pub feedback: Vec<String>,
    pub spans: Vec<String>,
    /// The iteration's change as a fenced `git diff --stat`, when the caller knows it.
    pub changes: Option<String>,
}

/// Issues listed in a revision prompt: enough to act on, never a prompt of megabytes.
pub const MAX_PROMPT_ISSUES: usize = 50;

pub fn prompt_view(record: &IterationRecord, decision: &Decision) -> PromptView {
    let mut revision: Vec<&CheckerIssue> = record
        .issues
        .iter()
        .filter(|i| i.severity.counts_for_revision())
        .collect();
    // BLOCKERs first; past the cap the rest are counted, not listed.
    revision.sort_by_key(|i| i.severity);
    let mut items = group_issues(&revision);
    let omitted_count = items.len().saturating_sub(MAX_PROMPT_ISSUES);
    items.truncate(MAX_PROMPT_ISSUES);
    let yaml = prompt_issues_yaml(&items);
    let strategy = decision.strategy.as_ref();
    let spans = strategy
        .into_iter()
        .flat_map(|s| &s.context_adjustments)
        .filter_map(|a| match a {
            ContextAdjustment::FocusSpans { spans } => Some(spans.clone()),
            _ => None,
        })
        .flatten()
        .map(|s| neutralise_tags(&s))
        .collect();
    let mut guidance: Vec<String> = strategy
        .into_iter()
        .flat_map(|s| &s.context_adjustments)
        .filter_map(|a| match a {
            ContextAdjustment::AddGuidance { content } => Some(content.clone()),
            _ => None,
        })
        .collect();
    guidance.extend(decision.next_steps.iter().map(|s| neutralise_tags(s)));
    PromptView {
        task: decision.task_id.clone(),
        iteration: decision.budget.current_iteration,
        max_iterations: decision.budget.max_iterations,
        progress_line: decision.revision.line(),
        round_sentence: round_sentence(&decision.revision),
        recommendation: decision.recommendation().as_str(),
        why: decision
            .stopping_reason
            .as_ref()
            .map(|r| r.summary.clone())
            .unwrap_or_default(),
        issues_block: fence_with_info(&yaml, "yaml"),
        info_count: record.count(Severity::Info),
        omitted_count,
        previous_count: decision.revision.previous_count,
        strategy: strategy.map(|s| s.kind.as_str()),
        guidance,
        feedback: decision
            .triggers
            .iter()
            .filter(|t| {
                matches!(
                    t.kind,
                    TriggerType::ExplicitFeedback | TriggerType::UserRejection
                )
            })
            .map(|t| fence_with_info(&neutralise_tags(&t.details), "text"))
            .collect(),
        spans,
        // The scorer's stat when nobody computes a fresher one (a pull request's prompt).
        changes: record
            .changes
            .as_ref()
            .and_then(|c| changes_block(&c.files, c.files_changed)),
    }
}

/// The prompt's items as YAML, neutralised like [`issues_yaml`].
pub fn prompt_issues_yaml(items: &[PromptIssue]) -> String {
    if items.is_empty() {
        return "[]\n".to_string();
    }
    let neutral: Vec<PromptIssue> = items
        .iter()
        .map(|item| PromptIssue {
            dimension: neutralise_tags(&item.dimension),
            severity: item.severity,
            finding: neutralise_tags(&item.finding),
            affected_field: item.affected_field.as_deref().map(neutralise_tags),
            suggested_fix: item.suggested_fix.as_deref().map(neutralise_tags),
            count: item.count,
            tests: item.tests.iter().map(|t| neutralise_tags(t)).collect(),
        })
        .collect();
    serde_yaml::to_string(&neutral)
        .unwrap_or_else(|e| format!("# issues could not be listed: {e}\n"))
}

/// `git diff --stat`-like lines for the files an iteration changed, fenced for the prompt
/// (paths are untrusted text): one line per file with added and deleted lines, then totals.
pub fn changes_block(files: &[FileChange], files_changed: usize) -> Option<String> {
    if files.is_empty() {
        return None;
    }
    let width = files
        .iter()
        .map(|f| f.path.len())
        .max()
        .unwrap_or(0)
        .min(60);
    let mut text = String::new();
    let (mut added, mut deleted) = (0usize, 0usize);
    for f in files {
        added += f.added;
        deleted += f.deleted;
        text.push_str(&format!(
            " {:<width$} | +{} -{}\n",
            neutralise_tags(&f.path),
            f.added,
            f.deleted
        ));
    }
    let more = files_changed.saturating_sub(files.len());
    if more > 0 {
        text.push_str(&format!(" ... and {more} more file(s)\n"));
    }
    text.push_str(&format!(
        " {files_changed} file(s) changed, {added} insertion(s)(+), {deleted} deletion(s)(-)"
    ));
    Some(crate::markup::fence_with_info(&text, "text"))
}

pub use crate::model::FileChange;

/// The issues as YAML, every text field neutralised *before* serialising: the backslash
/// that [`neutralise_tags`] inserts is then escaped by the serialiser, so the block parses
/// back to the findings with only `<x` turned into `<\x` (neutralised afterwards, a
/// backslash inside a double-quoted scalar would start an escape: `Vec<\table>` a TAB).
/// The serialiser never writes `<` of its own, so no tag can appear that was not there.
pub fn issues_yaml(issues: &[&CheckerIssue]) -> String {
    if issues.is_empty() {
        return "[]\n".to_string();
    }
    let neutral: Vec<CheckerIssue> = issues
        .iter()
        .map(|issue| CheckerIssue {
            dimension: neutralise_tags(&issue.dimension),
            severity: issue.severity,
            finding: neutralise_tags(&issue.finding),
            affected_field: issue.affected_field.as_deref().map(neutralise_tags),
            suggested_fix: issue.suggested_fix.as_deref().map(neutralise_tags),
        })
        .collect();
    serde_yaml::to_string(&neutral)
        .unwrap_or_else(|e| format!("# issues could not be listed: {e}\n"))
}

fn round_sentence(revision: &RevisionProgress) -> String {
    if !revision.is_open() {
        "No revision round is open: the latest iteration has no BLOCKER or WARNING issue.".into()
    } else if revision.limit_exceeded() {
        let rounds = if revision.max_iterations == 1 {
            "round"
        } else {
            "rounds"
        };
        format!(
            "The limit of {} revision {rounds} is reached.",
            revision.max_iterations
        )
    } else {
        format!(
            "This is revision iteration {} of max {}.",
            revision.iteration, revision.max_iterations
        )
    }
}
