//! Budget check and update: iterations, wall clock since the first iteration, total and
//! output tokens, spend and tool calls.
//!
//! Usage is the sum of what iterations reported. A declared limit that no iteration
//! reports is *unobservable*: listed as such and never treated as zero usage. A declared
//! dimension whose usage reaches its limit is exhausted and stops the loop (step 2 of the
//! stopping flow). The iteration detector's projected check (will one more iteration, at
//! the average cost so far, fit?) is a warning, or a stop when
//! `budget_limits.rate_caps_are_hard_stops` is set.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::config::Config;
use crate::model::IterationRecord;

use super::decision::{Budget, BudgetMaps};

/// Budget state plus which declared dimensions are exhausted.
#[derive(Debug, Clone, PartialEq)]
pub struct BudgetStatus {
    pub budget: Budget,
    pub maps: BudgetMaps,
    /// Dimensions whose next iteration is projected to overrun the limit.
    pub projected_overruns: Vec<String>,
}

impl BudgetStatus {
    pub fn exhausted(&self) -> bool {
        !self.maps.exhausted.is_empty()
    }

    /// A sentence naming the exhausted dimensions with their usage and limits.
    pub fn describe_exhausted(&self) -> String {
        let parts: Vec<String> = self
            .maps
            .exhausted
            .iter()
            .chain(&self.projected_overruns)
            .map(|d| {
                let observed = self.maps.observed.get(d).map(|v| v.to_string());
                let limit = self.maps.limits.get(d).map(|v| v.to_string());
                match (observed, limit) {
                    (Some(o), Some(l)) => format!("{d} {o} of {l}"),
                    _ => d.clone(),
                }
            })
            .collect();
        parts.join(", ")
    }

    /// The first exhausted (or, with hard rate caps, projected) dimension, as
    /// `<dimension>_exhausted`.
    pub fn stop_reason(&self, hard_rate_caps: bool) -> Option<String> {
        self.maps
            .exhausted
            .first()
            .or(hard_rate_caps
                .then(|| self.projected_overruns.first())
                .flatten())
            .map(|d| format!("{}_exhausted", stop_name(d)))
    }
}

fn stop_name(dimension: &str) -> &str {
    match dimension {
        "spend_usd" => "spend",
        other => other,
    }
}

/// A figure records report, added without overflow: the values come from commit
/// trailers and artifacts, so a huge one must saturate, never wrap or panic.
trait Amount: Copy + Default {
    fn plus(self, other: Self) -> Self;
}

impl Amount for u64 {
    fn plus(self, other: Self) -> Self {
        self.saturating_add(other)
    }
}

impl Amount for f64 {
    /// Finite, non-negative costs only reach this (an overflow is infinity, not a panic).
    fn plus(self, other: Self) -> Self {
        self + other
    }
}

/// Sum of a reported figure, `None` when no iteration reported it; saturating.
fn total<T: Amount>(
    records: &[IterationRecord],
    field: impl Fn(&IterationRecord) -> Option<T>,
) -> Option<T> {
    records
        .iter()
        .filter_map(field)
        .fold(None, |sum: Option<T>, v| {
            Some(sum.unwrap_or_default().plus(v))
        })
}

/// One declared dimension: limit, usage, and how many iterations reported it.
struct Dim {
    name: &'static str,
    limit: Option<f64>,
    used: Option<f64>,
    reporting: usize,
}

pub fn compute(
    config: &Config,
    records: &[IterationRecord],
    now: DateTime<Utc>,
    max_iterations: u32,
) -> BudgetStatus {
    let limits = &config.stopping_criteria.budget_limits;
    // Compacted histories drop their oldest records: the latest record's number still
    // counts every iteration.
    let counted = u32::try_from(records.len()).unwrap_or(u32::MAX);
    let current = records.last().map_or(counted, |r| r.iteration.max(counted));
    let elapsed_ms = records
        .first()
        .map(|r| (now - r.timestamp).num_milliseconds().max(0) as u64)
        .unwrap_or(0);
    let used_tokens = total(records, |r| r.tokens_used);
    let used_output = total(records, |r| r.output_tokens);
    let spent = total(records, |r| {
        r.cost_usd.filter(|c| c.is_finite() && *c >= 0.0)
    });
    let used_calls = total(records, |r| r.tool_calls);
    let timeout_ms = limits.wall_clock_minutes.map(|m| m.saturating_mul(60_000));
    let count = |f: fn(&IterationRecord) -> bool| records.iter().filter(|r| f(r)).count();
    let dims = [
        Dim {
            name: "wall_clock",
            limit: timeout_ms.map(|v| v as f64),
            used: (!records.is_empty()).then_some(elapsed_ms as f64),
            reporting: records.len(),
        },
        Dim {
            name: "total_tokens",
            limit: limits.total_tokens.map(|v| v as f64),
            used: used_tokens.map(|v| v as f64),
            reporting: count(|r| r.tokens_used.is_some()),
        },
        Dim {
            name: "output_tokens",
            limit: limits.output_tokens.map(|v| v as f64),
            used: used_output.map(|v| v as f64),
            reporting: count(|r| r.output_tokens.is_some()),
        },
        Dim {
            name: "spend_usd",
            limit: limits.spend_usd.map(|v| v.get()),
            used: spent,
            reporting: count(|r| r.cost_usd.is_some()),
        },
        Dim {
            name: "tool_calls",
            limit: limits.tool_calls.map(|v| v as f64),
            used: used_calls.map(|v| v as f64),
            reporting: count(|r| r.tool_calls.is_some()),
        },
    ];
    let (maps, projected_overruns, warnings) = assess(&dims, current);
    let remaining = |limit: Option<u64>, used: Option<u64>| Some(limit?.saturating_sub(used?));
    let budget = Budget {
        max_iterations,
        current_iteration: current,
        remaining_iterations: max_iterations.saturating_sub(current),
        token_budget: limits.total_tokens,
        used_tokens,
        remaining_tokens: remaining(limits.total_tokens, used_tokens),
        timeout_ms,
        elapsed_ms,
        remaining_ms: timeout_ms.map(|t| t.saturating_sub(elapsed_ms)),
        output_token_budget: limits.output_tokens,
        used_output_tokens: used_output,
        spend_budget_usd: limits.spend_usd.map(|s| s.get()),
        spent_usd: spent,
        tool_call_budget: limits.tool_calls,
        used_tool_calls: used_calls,
        unobservable: maps.unobservable.clone(),
        warnings,
    };
    BudgetStatus {
        budget,
        maps,
        projected_overruns,
    }
}

fn number(v: f64) -> Value {
    if v.fract() == 0.0 && v.abs() < 9.0e15 {
        Value::from(v as i64)
    } else {
        serde_json::Number::from_f64(v)
            .map(Value::Number)
            .unwrap_or(Value::Null)
    }
}

fn assess(dims: &[Dim], iterations: u32) -> (BudgetMaps, Vec<String>, Vec<String>) {
    let mut maps = BudgetMaps {
        limits: BTreeMap::new(),
        observed: BTreeMap::new(),
        exhausted: Vec::new(),
        unobservable: Vec::new(),
    };
    let mut projected = Vec::new();
    let mut warnings = Vec::new();
    for dim in dims {
        let Some(limit) = dim.limit else { continue };
        maps.limits.insert(dim.name.into(), number(limit));
        let Some(used) = dim.used else {
            maps.unobservable.push(dim.name.into());
            continue;
        };
        maps.observed.insert(dim.name.into(), number(used));
        if used >= limit {
            maps.exhausted.push(dim.name.into());
            continue;
        }
        let per_iteration = if dim.name == "wall_clock" {
            used / f64::from(iterations.max(1))
        } else {
            used / dim.reporting.max(1) as f64
        };
        if used + per_iteration > limit {
            projected.push(dim.name.to_string());
            warnings.push(format!(
                "{}: {} of {} used; one more iteration at the average cost ({}) would exceed it",
                dim.name,
                fmt_amount(used),
                fmt_amount(limit),
                fmt_amount(per_iteration)
            ));
        } else if used >= 0.8 * limit {
            warnings.push(format!(
                "{}: {:.0}% of the budget used",
                dim.name,
                100.0 * used / limit
            ));
        }
    }
    (maps, projected, warnings)
}

fn fmt_amount(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}
