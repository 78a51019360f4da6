//! Iteration analytics: the `analytics_result` of the analytics schema (JSON), a CSV export
//! of the history, and the view the text report template renders (a bar per iteration,
//! deltas, the stopping reason, totals and the per-dimension breakdown).

use serde::Serialize;

use crate::config::Config;
use crate::engine::{BudgetStopReport, Evaluation, Recommendation};
use crate::model::{Dimension, IterationRecord, Status};
use crate::summary::{format_delta, format_score};

/// Width of a bar at quality 1.0.
pub const BAR_WIDTH: f64 = 50.0;

#[derive(Debug, Clone, Serialize)]
pub struct BaselineSummary {
    pub count: usize,
    pub best_quality_lift: Option<f64>,
    pub best_token_efficiency_lift: Option<f64>,
    pub best_speed_efficiency_lift: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct AnalyticsResult {
    pub task_id: String,
    pub iterations: usize,
    pub stopping_reason: Option<String>,
    pub recommendation: Recommendation,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget_stop_report: Option<BudgetStopReport>,
    pub final_quality: Option<f64>,
    pub total_improvement: Option<f64>,
    pub best_iteration: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline_comparison: Option<BaselineSummary>,
    /// The records with `quality`, `delta` and `cumulative` filled in.
    pub history: Vec<IterationRecord>,
    pub time_saved_estimate: Option<String>,
    /// Iterations that removed, skipped, rewrote or deselected a failing test.
    pub integrity_violations: usize,
    /// `CONTEXT_GAP_REPORT` rounds per iteration that used any, and whether the agent was
    /// ready at round 0 (filled in by the mode that counts them).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub context: Vec<crate::context::ContextUse>,
}

pub fn build(
    config: &Config,
    history: &[IterationRecord],
    evaluation: &Evaluation,
    baseline: Option<&IterationRecord>,
) -> AnalyticsResult {
    let decision = &evaluation.decision;
    let trajectory = &evaluation.trajectory;
    let annotated: Vec<IterationRecord> = history
        .iter()
        .zip(&trajectory.points)
        .map(|(record, point)| {
            let mut r = record.clone();
            r.quality = point.quality;
            r.delta = point.quality.map(|_| point.delta);
            r.cumulative = Some(point.cumulative);
            r
        })
        .collect();
    let stopped = decision.recommendation() != Recommendation::Iterate;
    let max = decision.budget.max_iterations as usize;
    let time_saved = (stopped && max > history.len())
        .then(|| format!("~{} iterations avoided", max - history.len()));
    let final_quality = trajectory.points.iter().rev().find_map(|p| p.quality);
    AnalyticsResult {
        task_id: decision.task_id.clone(),
        iterations: history.len(),
        stopping_reason: decision.stopping_reason.as_ref().map(|r| r.summary.clone()),
        recommendation: decision.recommendation(),
        budget_stop_report: decision.budget_stop_report.clone(),
        final_quality,
        total_improvement: trajectory
            .first_quality()
            .zip(final_quality)
            .map(|(a, b)| b - a),
        best_iteration: decision.best_iteration,
        baseline_comparison: baseline.map(|b| baseline_summary(config, b, &annotated)),
        history: annotated,
        time_saved_estimate: time_saved,
        integrity_violations: history
            .iter()
            .filter(|r| crate::engine::stopping::is_violation(r))
            .count(),
        context: Vec::new(),
    }
}

fn baseline_summary(
    config: &Config,
    baseline: &IterationRecord,
    history: &[IterationRecord],
) -> BaselineSummary {
    let base_q = crate::engine::trajectory::quality_of(baseline, &config.quality_weights);
    let lifts: Vec<f64> = history
        .iter()
        .filter(|r| r.status.is_scored())
        .filter_map(|r| Some(r.quality? - base_q?))
        .collect();
    let per_1k =
        |q: Option<f64>, t: Option<u64>| Some(q? / (t.filter(|t| *t > 0)? as f64 / 1000.0));
    let per_min =
        |q: Option<f64>, ms: Option<u64>| Some(q? / (ms.filter(|m| *m > 0)? as f64 / 60_000.0));
    let best = |values: Vec<f64>| values.into_iter().reduce(f64::max);
    BaselineSummary {
        count: lifts.len(),
        best_quality_lift: best(lifts),
        best_token_efficiency_lift: best(
            history
                .iter()
                .filter_map(|r| {
                    Some(per_1k(r.quality, r.tokens_used)? - per_1k(base_q, baseline.tokens_used)?)
                })
                .collect(),
        ),
        best_speed_efficiency_lift: best(
            history
                .iter()
                .filter_map(|r| {
                    Some(
                        per_min(r.quality, r.execution_time_ms)?
                            - per_min(base_q, baseline.execution_time_ms)?,
                    )
                })
                .collect(),
        ),
    }
}

#[derive(Debug, Serialize)]
pub struct Row {
    pub label: String,
    pub bar: String,
    pub quality: String,
    pub delta: Option<String>,
    pub note: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct BreakdownLine {
    pub label: &'static str,
    pub first: String,
    pub last: String,
    pub change: String,
}

/// What the text report template renders.
#[derive(Debug, Serialize)]
pub struct TextView {
    pub task_id: String,
    pub rows: Vec<Row>,
    pub stopping: Option<String>,
    pub recommendation: &'static str,
    pub final_quality: String,
    pub iterations: usize,
    pub total_improvement: String,
    pub time_saved: Option<String>,
    pub best_iteration: Option<u32>,
    pub baseline: Option<String>,
    pub breakdown: Vec<BreakdownLine>,
    /// `2 rounds over 3 iterations; ready at round 0: 1 of 3`, when any report was answered.
    pub context: Option<String>,
    /// Iterations with an integrity violation, when any.
    pub integrity_violations: usize,
}

pub fn text_view(result: &AnalyticsResult) -> TextView {
    let width = result.history.len().to_string().len();
    let rows = result
        .history
        .iter()
        .scan(false, |scored_before, r| {
            // The first scored iteration has nothing before it to differ from.
            let first_scored = r.quality.is_some()
                && !matches!(r.status, Status::Void | Status::Error)
                && !std::mem::replace(scored_before, true);
            Some((r, first_scored))
        })
        .map(|(r, first_scored)| {
            let label = format!("{:>width$}", r.iteration);
            // An iteration with an open integrity finding is never the best while one
            // without is there: said, so a higher bar without "best" reads right.
            let suspect = r.issues.iter().any(|i| {
                i.dimension == crate::model::INTEGRITY_DIMENSION && i.severity.counts_for_revision()
            });
            match (r.status, r.quality) {
                (Status::Void, _) => Row {
                    label,
                    bar: String::new(),
                    quality: "VOID".into(),
                    delta: None,
                    note: Some(if crate::engine::stopping::is_violation(r) {
                        "(integrity violation: fenced out of best-output selection)".into()
                    } else {
                        "(fenced out of best-output selection)".into()
                    }),
                },
                (Status::Error, _) | (_, None) => Row {
                    label,
                    bar: String::new(),
                    quality: if r.status == Status::Error {
                        "ERROR"
                    } else {
                        "n/a"
                    }
                    .into(),
                    delta: None,
                    note: Some("(not scored)".into()),
                },
                (_, Some(q)) => Row {
                    label,
                    bar: "█".repeat((q * BAR_WIDTH).floor().max(0.0) as usize),
                    quality: format!("{q:.2}"),
                    delta: r
                        .delta
                        .filter(|_| !first_scored)
                        .and_then(|d| d.quality)
                        .map(|d| format!("{d:+.3}")),
                    note: if result.best_iteration == Some(r.iteration) && result.iterations > 1 {
                        Some("← best".into())
                    } else if suspect {
                        Some("(open integrity finding: not taken as the best)".into())
                    } else {
                        None
                    },
                },
            }
        })
        .collect();
    TextView {
        task_id: result.task_id.clone(),
        rows,
        stopping: result.stopping_reason.clone(),
        recommendation: result.recommendation.as_str(),
        final_quality: result
            .final_quality
            .map(|q| format!("{q:.2}"))
            .unwrap_or_else(|| "n/a".into()),
        iterations: result.iterations,
        total_improvement: result
            .total_improvement
            .map(|d| format!("{d:+.2}"))
            .unwrap_or_else(|| "n/a".into()),
        time_saved: result.time_saved_estimate.clone(),
        best_iteration: result.best_iteration,
        baseline: result.baseline_comparison.as_ref().and_then(|b| {
            b.best_quality_lift
                .map(|l| format!("best quality lift {l:+.2} over {} iterations", b.count))
        }),
        breakdown: breakdown(&result.history),
        context: context_line(result),
        integrity_violations: result.integrity_violations,
    }
}

fn context_line(result: &AnalyticsResult) -> Option<String> {
    if result.context.is_empty() {
        return None;
    }
    let rounds: u32 = result.context.iter().map(|c| c.rounds).sum();
    let ready = result.context.iter().filter(|c| c.ready_at_round_0).count();
    let per: Vec<String> = result
        .context
        .iter()
        .map(|c| format!("#{}: {}", c.iteration, c.rounds))
        .collect();
    Some(format!(
        "{rounds} round(s) ({}); ready at round 0: {ready} of {} iteration(s) with a report",
        per.join(", "),
        result.context.len()
    ))
}

fn breakdown(history: &[IterationRecord]) -> Vec<BreakdownLine> {
    let scored: Vec<&IterationRecord> = history.iter().filter(|r| r.status.is_scored()).collect();
    Dimension::ALL
        .into_iter()
        .filter_map(|d| {
            let first = scored.iter().find_map(|r| r.scores.get(d))?;
            let last = scored.iter().rev().find_map(|r| r.scores.get(d))?;
            let change = match d {
                Dimension::TestsPassing | Dimension::Coverage => {
                    format_delta(Some(d), last - first)
                }
                _ => format!("{:+.0}%", (last - first) * 100.0),
            };
            Some(BreakdownLine {
                label: d.label(),
                first: format_score(Some(d), first),
                last: format_score(Some(d), last),
                change,
            })
        })
        .collect()
}

/// The history as CSV, one row per iteration.
pub fn to_csv(result: &AnalyticsResult) -> anyhow::Result<String> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer.write_record([
        "iteration",
        "timestamp",
        "commit",
        "status",
        "quality",
        "tests_passing",
        "code_quality",
        "coverage",
        "complexity",
        "delta_quality",
        "total_improvement",
        "plateau_count",
        "regression_count",
        "flat_cycle_count",
        "tokens_used",
        "execution_time_ms",
        "tool_calls",
        "blockers",
        "warnings",
        "context_rounds",
        "ready_at_round_0",
    ])?;
    let num = |v: Option<f64>| v.map(|v| format!("{v:.4}")).unwrap_or_default();
    let int = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
    for r in &result.history {
        let c = r.cumulative.unwrap_or_default();
        let context = result.context.iter().find(|u| u.iteration == r.iteration);
        writer.write_record([
            r.iteration.to_string(),
            r.timestamp.to_rfc3339(),
            r.commit.0.clone(),
            format!("{:?}", r.status).to_lowercase(),
            num(r.quality),
            num(r.scores.tests_passing),
            num(r.scores.code_quality),
            num(r.scores.coverage),
            num(r.scores.complexity),
            num(r.delta.and_then(|d| d.quality)),
            format!("{:.4}", c.total_improvement),
            c.plateau_count.to_string(),
            c.regression_count.to_string(),
            c.flat_cycle_count.to_string(),
            int(r.tokens_used),
            int(r.execution_time_ms),
            int(r.tool_calls),
            r.count(crate::model::Severity::Blocker).to_string(),
            r.count(crate::model::Severity::Warning).to_string(),
            context.map_or(0, |u| u.rounds).to_string(),
            context.is_some_and(|u| u.ready_at_round_0).to_string(),
        ])?;
    }
    let bytes = writer
        .into_inner()
        .map_err(|e| anyhow::anyhow!("writing CSV: {e}"))?;
    Ok(String::from_utf8(bytes)?)
}
