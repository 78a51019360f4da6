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
//!
//! It is the round-0 seed of minimum sufficient context ([`crate::context`]): the task in
//! one to three sentences, the entry points (files and lines of the grouped issues),
//! references rather than content, and a size budget (`context.prompt_budget_bytes`) it
//! never exceeds ([`render_within_budget`]). What it leaves out, the agent asks for with a
//! `CONTEXT_GAP_REPORT`.

use serde::Serialize;

pub use crate::engine::grouping::{group_issues, PromptIssue, MAX_GROUP_TEST_IDS};
use crate::engine::revision::revision_items;
use crate::engine::{ContextAdjustment, Decision, RevisionProgress};
use crate::markup::{fence_with_info, neutralise_tags};
use crate::model::{CheckerIssue, IterationRecord, Severity, TriggerType};

#[derive(Debug, Serialize)]
pub struct PromptView {
    pub task: String,
    /// What the decision asks, in one to three sentences (the seed's task).
    pub task_sentences: String,
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
    /// Where to start: `file: line 12, 40 (3 issues)`, from the grouped BLOCKER/WARNING
    /// items (references, never content).
    pub entry_points: Vec<String>,
    /// The iteration's change as a fenced `git diff --stat`, when the caller knows it.
    pub changes: Option<String>,
}

/// Issues listed in a revision prompt: enough to act on, never a prompt of megabytes.
pub const MAX_PROMPT_ISSUES: usize = 50;

pub fn prompt_view(record: &IterationRecord, decision: &Decision) -> PromptView {
    view_with(record, decision, &Shrink::NONE)
}

/// How far a prompt is shrunk to fit its budget.
#[derive(Debug, Clone, Copy)]
struct Shrink {
    /// Findings longer than this are cut (bytes).
    finding_bytes: Option<usize>,
    /// Items listed at most.
    max_items: usize,
    /// The diff stat stays.
    changes: bool,
}

impl Shrink {
    const NONE: Shrink = Shrink {
        finding_bytes: None,
        max_items: MAX_PROMPT_ISSUES,
        changes: true,
    };

    /// Ever smaller prompts: findings cut, then fewer items, then no diff stat.
    fn steps() -> impl Iterator<Item = Shrink> {
        let cut = |bytes, max_items, changes| Shrink {
            finding_bytes: Some(bytes),
            max_items,
            changes,
        };
        [
            Shrink::NONE,
            cut(600, MAX_PROMPT_ISSUES, true),
            cut(240, MAX_PROMPT_ISSUES, true),
            cut(240, 25, true),
            cut(240, 12, true),
            cut(160, 6, true),
            cut(160, 6, false),
            cut(120, 3, false),
            cut(120, 1, false),
        ]
        .into_iter()
    }
}

/// The revision prompt rendered within `budget_bytes` (`context.prompt_budget_bytes`):
/// long findings are cut, then fewer issues are listed (the rest counted), then the diff
/// stat goes; a template that is still too long is cut, and says so. The agent asks for
/// what was cut with a CONTEXT_GAP_REPORT.
pub fn render_within_budget(
    renderer: &crate::render::Renderer,
    record: &IterationRecord,
    decision: &Decision,
    changes: Option<String>,
    budget_bytes: usize,
) -> anyhow::Result<String> {
    let mut text = String::new();
    for shrink in Shrink::steps() {
        let mut view = view_with(record, decision, &shrink);
        if let Some(changes) = changes.clone().filter(|_| shrink.changes) {
            view.changes = Some(changes);
        } else if !shrink.changes {
            view.changes = None;
        }
        text = renderer.render("revision-prompt.md.j2", &view)?;
        if text.len() <= budget_bytes {
            return Ok(text);
        }
    }
    let note = format!(
        "\n[the prompt is cut at {budget_bytes} bytes (context.prompt_budget_bytes); ask for the rest with a CONTEXT_GAP_REPORT]\n"
    );
    let mut end = budget_bytes.saturating_sub(note.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.push_str(&note);
    Ok(text)
}

/// `text` cut to about `bytes`, saying how to get the rest.
fn cut_finding(text: &str, bytes: Option<usize>) -> String {
    let Some(bytes) = bytes.filter(|b| text.len() > *b) else {
        return text.to_string();
    };
    let mut end = bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{} [cut at {end} of {} bytes: ask for `test ID` or `check NAME` in a CONTEXT_GAP_REPORT]",
        &text[..end],
        text.len()
    )
}

fn view_with(record: &IterationRecord, decision: &Decision, shrink: &Shrink) -> PromptView {
    // The items the decision iterates on: never empty when it does.
    let owned = revision_items(record, &decision.triggers);
    let mut revision: Vec<&CheckerIssue> = owned.iter().collect();
    // BLOCKERs first; past the cap the rest are counted, not listed.
    revision.sort_by_key(|i| i.severity);
    let mut items = group_issues(&revision);
    let entry_points = entry_points(&items);
    // What `integrity_first` left out: findings in the files the integrity item names.
    let left_out = record
        .issues
        .iter()
        .filter(|i| i.severity.counts_for_revision() && !owned.contains(i))
        .count();
    let task_sentences = task_sentences(decision, &revision, (items.len(), left_out));
    let omitted_count = items.len().saturating_sub(shrink.max_items);
    items.truncate(shrink.max_items);
    for item in &mut items {
        item.finding = cut_finding(&item.finding, shrink.finding_bytes);
    }
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
        task_sentences,
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
        entry_points,
        // The scorer's stat when nobody computes a fresher one (a pull request's prompt).
        changes: record
            .changes
            .as_ref()
            .and_then(|c| changes_block(&c.files, c.files_changed)),
    }
}

/// Entry points listed at most (files).
pub const MAX_ENTRY_POINTS: usize = 20;

/// Where to start: the files the BLOCKER/WARNING items point at, each with its lines, in
/// the items' order (BLOCKERs first). References, not content.
fn entry_points(items: &[PromptIssue]) -> Vec<String> {
    let mut files: Vec<(String, Vec<String>, usize)> = Vec::new();
    for item in items {
        let Some(at) = item.affected_field.as_deref() else {
            continue;
        };
        let (file, line) = match at.rsplit_once(':') {
            Some((file, line))
                if !line.is_empty() && line.chars().all(|c| c.is_ascii_digit() || c == '-') =>
            {
                (file, Some(line))
            }
            _ => (at, None),
        };
        let count = item.count.unwrap_or(1);
        if let Some((_, lines, n)) = files.iter_mut().find(|(f, _, _)| f == file) {
            *n += count;
            if let Some(line) = line.filter(|l| !lines.iter().any(|x| x == l)) {
                lines.push(line.to_string());
            }
        } else if files.len() < MAX_ENTRY_POINTS {
            let lines = line.map(String::from).into_iter().collect();
            files.push((file.to_string(), lines, count));
        }
    }
    files
        .into_iter()
        .map(|(file, lines, n)| {
            let issues = if n == 1 { "issue" } else { "issues" };
            let file = neutralise_tags(&file);
            if lines.is_empty() {
                format!("{file} ({n} {issues})")
            } else {
                let word = if lines.len() == 1 { "line" } else { "lines" };
                format!("{file}: {word} {} ({n} {issues})", lines.join(", "))
            }
        })
        .collect()
}

/// The task in one to three sentences: what the decision asks of the agent.
fn task_sentences(
    decision: &Decision,
    revision: &[&CheckerIssue],
    (items, left_out): (usize, usize),
) -> String {
    let blockers = revision
        .iter()
        .filter(|i| i.severity == Severity::Blocker)
        .count();
    let warnings = revision.len() - blockers;
    let task = neutralise_tags(&decision.task_id);
    match decision.recommendation().as_str() {
        "accept" => format!("Nothing to revise: `{task}` is accepted as it is."),
        "iterate" => {
            let grouped = if items < revision.len() {
                format!(" ({items} distinct problem(s))")
            } else {
                String::new()
            };
            let restored = if left_out > 0 {
                format!(
                    " The {left_out} other issue(s) of this iteration are in the files the \
                     integrity finding names: restoring those files removes them."
                )
            } else {
                String::new()
            };
            format!(
                "Revise `{task}` so that its checks pass: fix the {blockers} BLOCKER and \
                 {warnings} WARNING issue(s) below{grouped}. Change only what they point at \
                 and introduce no new issue.{restored}"
            )
        }
        _ => format!("`{task}` is escalated to a human: make no further change until they decide."),
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
    serde_norway::to_string(&neutral)
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
            kind: None,
            subject: None,
        })
        .collect();
    serde_norway::to_string(&neutral)
        .unwrap_or_else(|e| format!("# issues could not be listed: {e}\n"))
}

fn round_sentence(revision: &RevisionProgress) -> String {
    if revision.restarted() {
        format!(
            "A person restarted the revision rounds (adjust, or budget after an escalation): the next iteration is revision \
             round 1 of max {}.",
            revision.max_iterations
        )
    } else if !revision.is_open() {
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
