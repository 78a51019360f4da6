//! The view of a decision that the text summary template renders: numbers formatted, lines
//! chosen; no decisions are made here.

use serde::Serialize;

use crate::engine::Evaluation;
use crate::engine::Recommendation;
use crate::model::{Dimension, IterationRecord, Severity, Status};
use crate::signals::{integrity, markers, score};

#[derive(Debug, Serialize)]
pub struct ScoreLine {
    pub label: &'static str,
    pub value: String,
    pub delta: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct TriggerLine {
    pub kind: &'static str,
    pub severity: String,
    pub details: String,
}

#[derive(Debug, Serialize)]
pub struct DecisionView {
    pub task: String,
    pub iteration: u32,
    pub max_iterations: u32,
    pub recommendation: &'static str,
    pub priority: String,
    pub why: String,
    pub quality: Option<String>,
    pub quality_delta: Option<String>,
    pub scores: Vec<ScoreLine>,
    /// Empty when no revision round is open (the latest iteration is clean).
    pub revision_line: String,
    pub triggers: Vec<TriggerLine>,
    pub strategy: Option<&'static str>,
    pub next_steps: Vec<String>,
    pub best_iteration: Option<u32>,
    pub budget: Vec<String>,
    /// What the base already fails, not counted: "2 failing tests, 4 lint warnings
    /// (e.g. tests/a.rs:3)"; empty when the base is clean or unknown.
    pub base_debt: String,
    /// Notes that ask for nothing: marker comments the change added (`TODO at a.rs:3`).
    pub notes: Vec<String>,
    /// Tamper evidence: `BLOCKER test x was removed …`, the latest iteration's BLOCKER and
    /// WARNING integrity issues.
    pub integrity: Vec<String>,
    /// When the loop stops without accepting: what is left, by place (`BLOCKER
    /// src/a.rs:3 test x failed …`), so the final state is in front of the person.
    pub remaining: Vec<String>,
}

/// Remaining issues listed at most when the loop stops; the rest are counted.
pub const MAX_REMAINING: usize = 10;

fn remaining(latest: Option<&IterationRecord>) -> Vec<String> {
    let mut open: Vec<_> = latest
        .into_iter()
        .flat_map(|r| &r.issues)
        .filter(|i| i.severity.counts_for_revision())
        .collect();
    open.sort_by_key(|i| i.severity);
    let lines = open.iter().map(|i| {
        let first = crate::model::headline(&i.finding);
        match &i.affected_field {
            Some(at) => format!("{} {at}: {first}", i.severity.as_str()),
            None => format!("{} {first}", i.severity.as_str()),
        }
    });
    capped(lines, MAX_REMAINING)
}

/// The first `max` lines, and `… and N more` for the rest.
fn capped(lines: impl ExactSizeIterator<Item = String>, max: usize) -> Vec<String> {
    let total = lines.len();
    let mut shown: Vec<String> = lines.take(max).collect();
    if total > max {
        shown.push(format!("… and {} more", total - max));
    }
    shown
}

/// What the prompt asks of the next iteration, counted: `3 issues`, `1 issue`.
pub fn items_to_address(
    latest: Option<&IterationRecord>,
    decision: &crate::engine::Decision,
) -> String {
    let n = latest.map_or(0, |r| {
        crate::engine::revision::revision_items(r, &decision.triggers).len()
    });
    if n == 1 {
        "1 issue".into()
    } else {
        format!("{n} issues")
    }
}

/// Notes listed at most; the rest are counted.
pub const MAX_NOTES: usize = 5;

/// The latest iteration's notes (INFO): markers and what went unmeasured, the first
/// [`MAX_NOTES`] and a count.
fn notes(latest: Option<&IterationRecord>) -> Vec<String> {
    let all: Vec<String> = latest
        .into_iter()
        .flat_map(|r| &r.issues)
        .filter(|i| {
            i.severity == Severity::Info
                && [markers::DIMENSION, score::UNMEASURED].contains(&i.dimension.as_str())
        })
        .map(|i| i.finding.clone())
        .collect();
    capped(all.into_iter(), MAX_NOTES)
}

/// The base's debt as one line of text; empty when there is none.
pub fn base_debt_line(record: Option<&IterationRecord>) -> String {
    let Some(debt) = record.map(|r| &r.base_debt).filter(|d| !d.is_empty()) else {
        return String::new();
    };
    let examples = if debt.examples.is_empty() {
        String::new()
    } else {
        format!(" (e.g. {})", debt.examples.join(", "))
    };
    format!("{}{examples}", debt.describe())
}

/// A score as people read it: tests and coverage as percentages, the rest as 0..1.
///
/// A ratio is never rounded into a false extreme: 296/297 reads `99.7%`, not `100%`, and
/// 0.996 reads `0.996`, not `1.00`. Whole percentages (two decimals for 0..1 scores) are
/// kept otherwise.
pub fn format_score(dimension: Option<Dimension>, value: f64) -> String {
    match dimension {
        Some(Dimension::TestsPassing | Dimension::Coverage) => {
            format!("{}%", honest(value * 100.0, 0, 100.0, false))
        }
        _ => honest(value, 2, 1.0, false),
    }
}

pub fn format_delta(dimension: Option<Dimension>, delta: f64) -> String {
    match dimension {
        Some(Dimension::TestsPassing | Dimension::Coverage) => {
            format!("{}%", honest(delta * 100.0, 0, 100.0, true))
        }
        _ => honest(delta, 3, 1.0, true),
    }
}

/// `value` with `decimals` decimals, or one more when that rounding would make a non-zero
/// value read as 0 or a value short of `full` read as `full` (in magnitude). If one more
/// decimal still reads as the extreme, the nearest step on the true side is shown instead.
fn honest(value: f64, decimals: usize, full: f64, signed: bool) -> String {
    if !value.is_finite() {
        return format!("{value}");
    }
    let magnitude = value.abs();
    // Halves round away from zero (the formatter alone would round them to even).
    let rounded = |decimals: usize| {
        let scale = 10f64.powi(decimals as i32);
        (magnitude * scale).round() / scale
    };
    let false_extreme = |decimals: usize| {
        let r = rounded(decimals);
        (r == 0.0 && magnitude > 0.0) || (r == full && magnitude < full)
    };
    let (shown, decimals) = if !false_extreme(decimals) {
        (rounded(decimals), decimals)
    } else if !false_extreme(decimals + 1) {
        (rounded(decimals + 1), decimals + 1)
    } else {
        let step = 10f64.powi(-(decimals as i32 + 1));
        let bounded = if rounded(decimals + 1) == 0.0 {
            step
        } else {
            full - step
        };
        (bounded, decimals + 1)
    };
    let negative = value < 0.0 && shown > 0.0;
    match (signed, negative) {
        (_, true) => format!("-{shown:.decimals$}"),
        (true, false) => format!("+{shown:.decimals$}"),
        (false, false) => format!("{shown:.decimals$}"),
    }
}

pub fn decision_view(history: &[IterationRecord], evaluation: &Evaluation) -> DecisionView {
    let decision = &evaluation.decision;
    let point = evaluation.trajectory.latest();
    let latest = history.last();
    // A VOID or error iteration has no score to show: its numbers are not to be trusted.
    let unscored = latest
        .filter(|_| point.and_then(|p| p.quality).is_none())
        .and_then(|r| match r.status {
            Status::Void => Some("VOID, not scored"),
            Status::Error => Some("error, not scored"),
            _ => None,
        });
    let scores = latest
        .filter(|_| unscored.is_none())
        .map(|r| {
            r.scores
                .observed()
                .map(|(d, v)| ScoreLine {
                    label: d.label(),
                    value: format_score(Some(d), v),
                    delta: point
                        .and_then(|p| p.delta.get(d))
                        .map(|x| format_delta(Some(d), x)),
                })
                .collect()
        })
        .unwrap_or_default();
    let why = match (&decision.stopping_reason, &decision.strategy) {
        (Some(reason), _) => reason.summary.clone(),
        (None, Some(strategy)) => format!(
            "{} to address; strategy {}",
            items_to_address(latest, decision),
            strategy.kind.as_str()
        ),
        (None, None) => String::new(),
    };
    let budget = &decision.budget;
    let mut budget_lines = Vec::new();
    if let (Some(limit), Some(used)) = (budget.token_budget, budget.used_tokens) {
        budget_lines.push(format!("tokens {used}/{limit}"));
    }
    if let (Some(limit), Some(used)) = (budget.spend_budget_usd, budget.spent_usd) {
        budget_lines.push(format!("spend ${used:.2}/${limit:.2}"));
    }
    if !budget.unobservable.is_empty() {
        budget_lines.push(format!("unobservable: {}", budget.unobservable.join(", ")));
    }
    DecisionView {
        task: decision.task_id.clone(),
        iteration: budget.current_iteration,
        max_iterations: budget.max_iterations,
        recommendation: decision.recommendation().as_str(),
        priority: format!("{:?}", decision.decision.priority).to_lowercase(),
        why,
        quality: point
            .and_then(|p| p.quality)
            .map(|q| format_score(None, q))
            .or(unscored.map(String::from)),
        quality_delta: point
            .filter(|_| history.len() > 1)
            .and_then(|p| p.delta.quality)
            .map(|d| format_delta(None, d)),
        scores,
        revision_line: if decision.revision.is_open() || decision.revision.restarted() {
            decision.revision.line()
        } else {
            String::new()
        },
        triggers: decision
            .triggers
            .iter()
            .map(|t| TriggerLine {
                kind: t.kind.as_str(),
                severity: format!("{:.2}", t.severity),
                details: t.details.clone(),
            })
            .collect(),
        strategy: decision
            .strategy
            .as_ref()
            .filter(|_| decision.recommendation() == Recommendation::Iterate)
            .map(|s| s.kind.as_str()),
        next_steps: decision.next_steps.clone(),
        best_iteration: decision.best_iteration,
        budget: budget_lines,
        base_debt: base_debt_line(latest),
        notes: notes(latest),
        integrity: latest
            .into_iter()
            .flat_map(|r| &r.issues)
            .filter(|i| integrity::shown_to_reviewers(i))
            .map(|i| {
                // A person who accepted the iteration accepted its findings: shown, not dropped.
                let accepted = decision
                    .stopping_reason
                    .as_ref()
                    .is_some_and(|r| r.code == crate::engine::StopCode::AcceptedByHuman);
                let note = if accepted {
                    " (accepted by a person)"
                } else {
                    ""
                };
                format!("{} {}{note}", i.severity.as_str(), i.finding)
            })
            .collect(),
        remaining: if matches!(
            decision.recommendation(),
            Recommendation::Escalate | Recommendation::Abort
        ) {
            remaining(latest)
        } else {
            Vec::new()
        },
    }
}
