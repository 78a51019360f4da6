//! The views of what itergate writes on a pull request: the sticky comment (decision, scores
//! with deltas against the previous iteration and the base, the revision line, a mermaid
//! quality chart, the checker issues and the revision prompt, both collapsible), the
//! escalation call, and the replies to commands. Every piece of untrusted text is escaped
//! or fenced here, before a template sees it.

use serde::Serialize;

use crate::config::Config;
use crate::engine::trajectory::quality_of;
use crate::engine::Evaluation;
use crate::engine::{Decision, Recommendation};
use crate::markup::{escape_markdown_inline, fence_with_info};
use crate::model::{Dimension, IterationRecord, Severity};
use crate::summary::{format_delta, format_score};

/// Issues listed in the comment; the rest are counted.
const MAX_LISTED_ISSUES: usize = 50;

#[derive(Debug, Serialize)]
pub struct ScoreRow {
    pub label: &'static str,
    pub value: String,
    pub vs_previous: String,
    pub vs_base: String,
}

#[derive(Debug, Serialize)]
pub struct IssueRow {
    pub severity: &'static str,
    pub dimension: String,
    pub at: String,
    pub finding: String,
}

#[derive(Debug, Serialize)]
pub struct CommentView {
    pub recommendation: &'static str,
    pub headline: &'static str,
    pub why: String,
    pub iteration: u32,
    pub max_iterations: u32,
    pub commit: String,
    pub scores: Vec<ScoreRow>,
    pub revision_line: String,
    pub chart_x: String,
    pub chart_y: String,
    pub issues: Vec<IssueRow>,
    pub more_issues: usize,
    pub prompt: Option<String>,
    pub next_steps: Vec<String>,
    pub label: String,
    /// What the base already fails (escaped), not counted against the change.
    pub base_debt: String,
}

fn headline(r: Recommendation) -> &'static str {
    match r {
        Recommendation::Accept => "✅ accept",
        Recommendation::Iterate => "🔁 iterate",
        Recommendation::Escalate => "🙋 escalate: a human is needed",
        Recommendation::Abort => "⛔ abort",
    }
}

fn delta(d: Option<Dimension>, now: Option<f64>, then: Option<f64>) -> String {
    match (now, then) {
        (Some(a), Some(b)) => format_delta(d, a - b),
        _ => "–".into(),
    }
}

fn score_rows(
    config: &Config,
    history: &[IterationRecord],
    base: Option<&IterationRecord>,
) -> Vec<ScoreRow> {
    let Some(latest) = history.last() else {
        return Vec::new();
    };
    let previous = history.len().checked_sub(2).and_then(|i| history.get(i));
    let w = &config.quality_weights;
    let mut rows = vec![ScoreRow {
        label: "Quality",
        value: quality_of(latest, w).map_or("–".into(), |q| format!("{q:.2}")),
        vs_previous: delta(
            None,
            quality_of(latest, w),
            previous.and_then(|p| quality_of(p, w)),
        ),
        vs_base: delta(
            None,
            quality_of(latest, w),
            base.and_then(|b| quality_of(b, w)),
        ),
    }];
    rows.extend(latest.scores.observed().map(|(d, v)| ScoreRow {
        label: d.label(),
        value: format_score(Some(d), v),
        vs_previous: delta(Some(d), Some(v), previous.and_then(|p| p.scores.get(d))),
        vs_base: delta(Some(d), Some(v), base.and_then(|b| b.scores.get(d))),
    }));
    rows
}

/// The sticky comment's visible part.
pub fn comment_view(
    config: &Config,
    history: &[IterationRecord],
    base: Option<&IterationRecord>,
    evaluation: &Evaluation,
    prompt: Option<&str>,
) -> CommentView {
    let decision = &evaluation.decision;
    let trajectory = &evaluation.trajectory;
    let points: Vec<(u32, f64)> = trajectory
        .points
        .iter()
        .filter_map(|p| Some((p.iteration, p.quality?)))
        .collect();
    let latest = history.last();
    let mut issues: Vec<_> = latest
        .map(|r| r.issues.iter().collect())
        .unwrap_or_default();
    issues.sort_by_key(|i| i.severity);
    let listed = issues
        .iter()
        .take(MAX_LISTED_ISSUES)
        .map(|i| IssueRow {
            severity: i.severity.as_str(),
            dimension: escape_markdown_inline(&i.dimension),
            at: escape_markdown_inline(i.affected_field.as_deref().unwrap_or("")),
            finding: escape_markdown_inline(i.finding.lines().next().unwrap_or("")),
        })
        .collect();
    CommentView {
        recommendation: decision.recommendation().as_str(),
        headline: headline(decision.recommendation()),
        why: escape_markdown_inline(
            &decision
                .stopping_reason
                .as_ref()
                .map(|r| r.summary.clone())
                .unwrap_or_else(|| format!("{} trigger(s) to address", decision.triggers.len())),
        ),
        iteration: decision.budget.current_iteration,
        max_iterations: decision.budget.max_iterations,
        commit: latest
            .map(|r| r.commit.0.chars().take(12).collect())
            .unwrap_or_default(),
        scores: score_rows(config, history, base),
        revision_line: decision.revision.line(),
        chart_x: points
            .iter()
            .map(|(i, _)| i.to_string())
            .collect::<Vec<_>>()
            .join(", "),
        chart_y: points
            .iter()
            .map(|(_, q)| format!("{q:.2}"))
            .collect::<Vec<_>>()
            .join(", "),
        more_issues: issues.len().saturating_sub(MAX_LISTED_ISSUES),
        issues: listed,
        prompt: prompt.map(|p| fence_with_info(p, "markdown")),
        next_steps: decision
            .next_steps
            .iter()
            .map(|s| escape_markdown_inline(s))
            .collect(),
        label: config.github.label.clone(),
        base_debt: escape_markdown_inline(&crate::summary::base_debt_line(latest)),
    }
}

/// Counts for the escalation call.
#[derive(Debug, Serialize)]
pub struct EscalationView {
    pub mentions: String,
    pub why: String,
    pub blockers: usize,
    pub warnings: usize,
}

pub fn escalation_view(
    config: &Config,
    latest: &IterationRecord,
    decision: &Decision,
) -> EscalationView {
    EscalationView {
        mentions: config
            .github
            .reviewers
            .iter()
            .map(|r| format!("@{}", r.trim_start_matches('@')))
            .collect::<Vec<_>>()
            .join(" "),
        why: escape_markdown_inline(
            &decision
                .stopping_reason
                .as_ref()
                .map(|r| r.summary.clone())
                .unwrap_or_default(),
        ),
        blockers: latest.count(Severity::Blocker),
        warnings: latest.count(Severity::Warning),
    }
}
