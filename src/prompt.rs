//! The revision prompt: the issues an agent must address as a YAML block inside
//! `<checker_issues>`, then `<revision_instructions>` with the round number, the strategy,
//! the reviewers' words and the exact spans to start from (minimum sufficient context).
//!
//! Every piece of untrusted text (findings, test output, comments) is neutralised so it
//! cannot close the sections, and fenced so it cannot close a code block.

use serde::Serialize;

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
    let omitted_count = revision.len().saturating_sub(MAX_PROMPT_ISSUES);
    revision.truncate(MAX_PROMPT_ISSUES);
    let yaml = issues_yaml(&revision);
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
    }
}

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
