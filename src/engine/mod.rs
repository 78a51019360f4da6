//! The decision engine: from a task's history of scored iterations to one `Decision`.
//!
//! Pure: no I/O, no clock (the time is passed in), deterministic, and linear in the
//! length of the history. Every mode (hook, CI, App) calls `decide`.
//!
//! The rules come from three sources and are applied in one order of precedence, written
//! out in [`stopping`]: a person's decision first, then hard limits (iterations, budgets),
//! then the revision loop's limits (round count, stalled issue count), then acceptance of a
//! clean iteration, minimum iterations, improvement/plateau with the exploration quota,
//! regression protection, and the improvement assessment. Where the sources disagree the
//! configuration decides, and limits always win over a strategy that would iterate again:
//! when strategy selection itself says `escalate` (one iteration short of the limit), the
//! decision escalates.

pub mod assessment;
pub mod budget;
pub mod decision;
pub mod grouping;
mod next_steps;
pub mod revision;
pub mod stopping;
pub mod strategy;
pub mod trajectory;
pub mod triggers;

use chrono::{DateTime, Utc};

use crate::config::Config;
use crate::model::{IterationRecord, Trigger};

pub use decision::*;
use stopping::{Outcome, StopContext};
use strategy::StrategyInput;
use trajectory::Trajectory;

// What people said is part of the model: the adapters that keep it (the sticky comment,
// git notes) need not know the engine.
pub use crate::model::{Feedback, Surface};

/// Everything `decide` looks at.
pub struct DecideInput<'a> {
    pub task_id: &'a str,
    pub config: &'a Config,
    /// The task's iterations, oldest first.
    pub history: &'a [IterationRecord],
    pub feedback: &'a Feedback,
    /// A score to compare against, e.g. the base branch's.
    pub baseline: Option<&'a IterationRecord>,
    pub now: DateTime<Utc>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EngineError {
    #[error("the history is empty: there is no iteration to decide on")]
    EmptyHistory,
}

/// A decision with the trajectory it was made from: views read both and never rebuild the
/// trajectory.
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluation {
    pub decision: Decision,
    pub trajectory: Trajectory,
}

pub fn decide(input: &DecideInput) -> Result<Decision, EngineError> {
    evaluate(input).map(|e| e.decision)
}

/// The decision and the trajectory behind it.
pub fn evaluate(input: &DecideInput) -> Result<Evaluation, EngineError> {
    let config = input.config;
    let history = input.history;
    let latest = history.last().ok_or(EngineError::EmptyHistory)?;
    let trajectory = Trajectory::build(config, history);
    let point = trajectory.latest().ok_or(EngineError::EmptyHistory)?;
    let triggers = triggers::detect(config, latest, point.quality, input.feedback);
    let max_iterations = input
        .feedback
        .max_iterations
        .unwrap_or(config.stopping_criteria.iteration_limits.max);
    let budget = budget::compute(config, history, input.now, max_iterations);
    let revision = revision::progress(config, revision_window(history, input.feedback), latest);
    let qualities: Vec<f64> = trajectory.attempt_qualities().collect();
    let potential = assessment::assess(&qualities, &triggers, budget.budget.remaining_iterations);
    let outcome = stopping::evaluate(&StopContext {
        config,
        trajectory: &trajectory,
        budget: &budget,
        revision: &revision,
        potential: &potential,
        latest,
        triggers: &triggers,
        feedback: input.feedback,
        violations: revision_window(history, input.feedback)
            .iter()
            .filter(|r| stopping::is_violation(r))
            .count(),
    });
    let previous_triggers = previous_triggers(config, history, &trajectory);
    let (recommendation, stopping_reason, strategy) = resolve(
        outcome,
        StrategyInput {
            triggers: &triggers,
            previous: previous_triggers.as_deref(),
            latest,
            delta: &point.delta,
            iteration: budget.budget.current_iteration,
            max_iterations,
        },
    );
    let best = trajectory.chosen_best();
    let mut assessment = potential.assessment;
    assessment.recommendation = recommendation;
    let priority = priority(recommendation, &triggers);
    let budget_stop_report = stopping_reason
        .as_ref()
        .filter(|r| r.code == StopCode::BudgetExhausted)
        .map(|_| budget_stop_report(&budget, &trajectory, history, recommendation));
    let next_steps = next_steps::build(&next_steps::Context {
        recommendation,
        strategy: strategy.as_ref(),
        latest,
        best: best.map(|b| b.iteration),
        budget: &budget.budget,
        surface: input.feedback.surface,
    });
    let decision = Decision {
        task_id: input.task_id.to_string(),
        output_id: output_id(latest),
        decided_at: input.now,
        decision: Verdict {
            needs_iteration: recommendation == Recommendation::Iterate,
            priority,
        },
        triggers,
        strategy,
        budget: budget.budget,
        assessment,
        next_steps,
        stopping_reason,
        best_iteration: best.map(|b| b.iteration),
        revision: revision.progress,
        budget_stop_report,
        baseline_comparison: input
            .baseline
            .and_then(|b| baseline_comparison(config, b, latest, point.quality)),
    };
    Ok(Evaluation {
        decision,
        trajectory,
    })
}

/// The records the revision loop counts: those after a human's `/iterate adjust`.
fn revision_window<'h>(
    history: &'h [IterationRecord],
    feedback: &Feedback,
) -> &'h [IterationRecord] {
    match feedback.restart_after {
        Some(after) => {
            let start = history.partition_point(|r| r.iteration <= after);
            &history[start..]
        }
        None => history,
    }
}

fn previous_triggers(
    config: &Config,
    history: &[IterationRecord],
    trajectory: &Trajectory,
) -> Option<Vec<Trigger>> {
    let index = history.len().checked_sub(2)?;
    let record = history.get(index)?;
    let quality = trajectory.points.get(index)?.quality;
    Some(triggers::detect(
        config,
        record,
        quality,
        &Feedback::default(),
    ))
}

/// Turns the stopping outcome into the final recommendation, reason and strategy.
fn resolve(
    outcome: Outcome,
    input: StrategyInput,
) -> (Recommendation, Option<StoppingReason>, Option<Strategy>) {
    match outcome {
        Outcome::Stop {
            recommendation,
            reason,
        } => {
            let strategy = (recommendation == Recommendation::Escalate).then(|| Strategy {
                kind: StrategyType::Escalate,
                modifications: vec![Modification::FlagForHuman {
                    reason: reason.summary.clone(),
                }],
                context_adjustments: vec![],
            });
            (recommendation, Some(reason), strategy)
        }
        Outcome::Continue { modifications } => {
            let mut strategy = strategy::select(&input);
            if strategy.kind == StrategyType::Escalate {
                let reason = StoppingReason {
                    code: StopCode::IterationLimitNear,
                    summary: format!(
                        "One iteration short of the limit ({}/{}) with triggers left",
                        input.iteration, input.max_iterations
                    ),
                };
                return (Recommendation::Escalate, Some(reason), Some(strategy));
            }
            strategy.modifications.extend(modifications);
            (Recommendation::Iterate, None, Some(strategy))
        }
    }
}

fn priority(recommendation: Recommendation, triggers: &[Trigger]) -> Priority {
    let severity = triggers.iter().map(|t| t.severity).fold(0.0, f64::max);
    let from_triggers = Priority::from_severity(severity);
    match recommendation {
        Recommendation::Accept => Priority::Low,
        Recommendation::Escalate | Recommendation::Abort => from_triggers.max(Priority::High),
        Recommendation::Iterate => from_triggers,
    }
}

fn output_id(record: &IterationRecord) -> String {
    if record.commit.0.is_empty() {
        format!("iteration-{}", record.iteration)
    } else {
        record.commit.0.clone()
    }
}

fn budget_stop_report(
    budget: &budget::BudgetStatus,
    trajectory: &Trajectory,
    history: &[IterationRecord],
    recommendation: Recommendation,
) -> BudgetStopReport {
    let best = trajectory.chosen_best();
    let latest = trajectory.latest();
    BudgetStopReport {
        // Projected overruns only reach here when they are hard stops.
        stop_reason: budget
            .stop_reason(true)
            .unwrap_or_else(|| "budget_exhausted".into()),
        budgets: budget.maps.clone(),
        selected_iteration: best.map(|b| b.iteration),
        final_iteration: latest.map(|l| l.iteration),
        best_score: best.and_then(|b| b.quality),
        final_score: latest.and_then(|l| l.quality),
        hypothesis_outcomes: history
            .iter()
            .filter(|r| !r.experiment.is_empty())
            .map(|r| r.experiment.clone())
            .collect(),
        next_recommended_action: match (recommendation, best) {
            (Recommendation::Accept, _) => "accept the latest iteration".into(),
            (_, Some(b)) => format!(
                "a human reviews iteration {} (the best output) and raises the budget or accepts it",
                b.iteration
            ),
            (_, None) => "fix the checks: no iteration could be scored".into(),
        },
    }
}

fn baseline_comparison(
    config: &Config,
    baseline: &IterationRecord,
    latest: &IterationRecord,
    quality: Option<f64>,
) -> Option<BaselineComparison> {
    let base_q = trajectory::quality_of(baseline, &config.quality_weights)?;
    let q = quality?;
    let lift = q - base_q;
    let per_1k =
        |q: f64, tokens: Option<u64>| tokens.filter(|t| *t > 0).map(|t| q / (t as f64 / 1000.0));
    let per_minute =
        |q: f64, ms: Option<u64>| ms.filter(|m| *m > 0).map(|m| q / (m as f64 / 60_000.0));
    Some(BaselineComparison {
        baseline_type: "declared_control".into(),
        source: (!baseline.commit.0.is_empty()).then(|| format!("base commit {}", baseline.commit)),
        baseline_quality_score: base_q,
        quality_lift: lift,
        quality_lift_pct: (base_q.abs() > f64::EPSILON).then(|| 100.0 * lift / base_q.abs()),
        baseline_tokens_used: baseline.tokens_used,
        token_efficiency_lift: per_1k(q, latest.tokens_used)
            .zip(per_1k(base_q, baseline.tokens_used))
            .map(|(a, b)| a - b),
        baseline_execution_time_ms: baseline.execution_time_ms,
        speed_efficiency_lift: per_minute(q, latest.execution_time_ms)
            .zip(per_minute(base_q, baseline.execution_time_ms))
            .map(|(a, b)| a - b),
        baseline_tool_calls: baseline.tool_calls,
        tool_call_savings: baseline
            .tool_calls
            .zip(latest.tool_calls)
            .map(|(b, l)| b as i64 - l as i64),
    })
}
