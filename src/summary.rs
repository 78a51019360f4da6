//! The view of a decision that the text summary template renders: numbers formatted, lines
//! chosen; no decisions are made here.

use serde::Serialize;

use crate::config::Config;
use crate::engine::trajectory::Trajectory;
use crate::engine::{Decision, Recommendation};
use crate::model::{Dimension, IterationRecord};

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
}

/// A score as people read it: tests and coverage as percentages, the rest as 0..1.
pub fn format_score(dimension: Option<Dimension>, value: f64) -> String {
    match dimension {
        Some(Dimension::TestsPassing | Dimension::Coverage) => format!("{:.0}%", value * 100.0),
        _ => format!("{value:.2}"),
    }
}

pub fn format_delta(dimension: Option<Dimension>, delta: f64) -> String {
    match dimension {
        Some(Dimension::TestsPassing | Dimension::Coverage) => {
            format!("{:+.0}%", delta * 100.0)
        }
        _ => format!("{delta:+.3}"),
    }
}

pub fn decision_view(
    config: &Config,
    history: &[IterationRecord],
    decision: &Decision,
) -> DecisionView {
    let trajectory = Trajectory::build(config, history);
    let point = trajectory.latest();
    let latest = history.last();
    let scores = latest
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
            "{} trigger(s) to address; strategy {}",
            decision.triggers.len(),
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
        quality: point.and_then(|p| p.quality).map(|q| format!("{q:.2}")),
        quality_delta: point
            .filter(|_| history.len() > 1)
            .and_then(|p| p.delta.quality)
            .map(|d| format!("{d:+.3}")),
        scores,
        revision_line: if decision.revision.is_open() {
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
    }
}
