//! The decision the engine returns. Serialises to the Decision Report of the iteration
//! detector (`iterationDecision:` with camelCase keys), extended with the stopping reason,
//! the best iteration, the revision-loop progress and, when a budget stopped the loop, the
//! budget stop report of the analytics schema (snake_case, as that schema writes it).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::model::{ExperimentRecord, Trigger};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Priority {
    Low,
    Medium,
    High,
    Critical,
}

impl Priority {
    /// Priority from the most severe trigger.
    pub fn from_severity(severity: f64) -> Priority {
        match severity {
            s if s >= 0.9 => Priority::Critical,
            s if s >= 0.7 => Priority::High,
            s if s >= 0.4 => Priority::Medium,
            _ => Priority::Low,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Recommendation {
    Iterate,
    Accept,
    Escalate,
    Abort,
}

impl Recommendation {
    pub fn as_str(self) -> &'static str {
        match self {
            Recommendation::Iterate => "iterate",
            Recommendation::Accept => "accept",
            Recommendation::Escalate => "escalate",
            Recommendation::Abort => "abort",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StrategyType {
    Retry,
    Refine,
    Expand,
    Simplify,
    Escalate,
}

impl StrategyType {
    pub fn as_str(self) -> &'static str {
        match self {
            StrategyType::Retry => "retry",
            StrategyType::Refine => "refine",
            StrategyType::Expand => "expand",
            StrategyType::Simplify => "simplify",
            StrategyType::Escalate => "escalate",
        }
    }
}

/// What the next iteration should change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Modification {
    FixErrors { targets: Vec<String> },
    RequestEvidence { areas: Vec<String> },
    RequestSources,
    RemoveClaims { claims: Vec<String> },
    RequireVerification,
    AddressFeedback { feedback: Vec<String> },
    ReduceComplexity { targets: Vec<String> },
    StructuralVariant { reason: String },
    RevertTo { iteration: u32 },
    FlagForHuman { reason: String },
}

/// How the context given to the next iteration should change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContextAdjustment {
    AddGuidance {
        content: String,
    },
    IncreaseDetail {
        factor: f64,
    },
    /// The exact spans implicated (minimum sufficient context): file:line or test ids.
    FocusSpans {
        spans: Vec<String>,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Strategy {
    #[serde(rename = "type")]
    pub kind: StrategyType,
    pub modifications: Vec<Modification>,
    pub context_adjustments: Vec<ContextAdjustment>,
}

/// Budget state. A limit that is not declared is `null`; a declared dimension that no
/// iteration reports is listed in `unobservable` and its usage is `null`, not zero.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Budget {
    pub max_iterations: u32,
    pub current_iteration: u32,
    pub remaining_iterations: u32,
    pub token_budget: Option<u64>,
    pub used_tokens: Option<u64>,
    pub remaining_tokens: Option<u64>,
    pub timeout_ms: Option<u64>,
    pub elapsed_ms: u64,
    pub remaining_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_token_budget: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub used_output_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spend_budget_usd: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spent_usd: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call_budget: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub used_tool_calls: Option<u64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unobservable: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Assessment {
    pub likelihood: f64,
    pub expected_gain: f64,
    pub diminishing_returns: bool,
    pub recommendation: Recommendation,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Verdict {
    pub needs_iteration: bool,
    pub priority: Priority,
}

/// Why the loop stopped, as a stable code and a sentence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopCode {
    AcceptedByHuman,
    EscalatedByHuman,
    QualityThresholdReached,
    MaxIterationsReached,
    BudgetExhausted,
    RevisionLimitReached,
    RevisionStalled,
    ImprovementBelowThreshold,
    Plateau,
    FlatCycleQuota,
    RegressionLimit,
    NotImproving,
    Unfixable,
    NotWorthIterating,
    IterationLimitNear,
    /// A second iteration of the task removed, skipped, rewrote or deselected a test it
    /// had to make pass (`integrity.on_violation: void`).
    IntegrityViolated,
    /// The flow would iterate again, but the latest iteration has no BLOCKER or WARNING
    /// issue and no trigger besides `quality_threshold`: accepted when its status is pass,
    /// escalated otherwise. Serialised `nothing_actionable`.
    NothingActionable,
    /// The task's saved history could not be verified: its budget is unknown, so a person
    /// decides (a pull request's state edited, copied or signed with another key).
    HistoryUnverified,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoppingReason {
    pub code: StopCode,
    pub summary: String,
}

/// Revision-loop progress: `Revision iteration {N}/{max} -- {b} blockers, {w} warnings`.
///
/// `iteration` is the revision round of the latest iteration: the length of the trailing run
/// of iterations with BLOCKER or WARNING issues, 0 when the latest iteration is clean.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RevisionProgress {
    pub iteration: u32,
    pub max_iterations: u32,
    pub blockers: usize,
    pub warnings: usize,
    /// BLOCKER + WARNING count of the previous iteration of the same run of rounds; `null`
    /// in round 1 and when no round is open.
    pub previous_count: Option<usize>,
}

impl RevisionProgress {
    /// The latest iteration has BLOCKER or WARNING issues: a revision round is open.
    pub fn is_open(&self) -> bool {
        self.iteration > 0
    }

    /// A person's `adjust` restarted the count at the latest iteration, which still has
    /// BLOCKER or WARNING issues: the next iteration is round 1.
    pub fn restarted(&self) -> bool {
        self.iteration == 0 && self.blockers + self.warnings > 0
    }

    /// More rounds than allowed (the decision escalates unless a person or a hard limit
    /// decided first).
    pub fn limit_exceeded(&self) -> bool {
        self.iteration > self.max_iterations
    }

    /// One line for people. Never shows a round past the limit as `n/m` with `n > m`.
    pub fn line(&self) -> String {
        let issues = format!(
            "{}, {}",
            crate::model::counted(self.blockers, "blocker"),
            crate::model::counted(self.warnings, "warning")
        );
        if self.restarted() {
            return format!(
                "Revision rounds restarted by a person (next: 1/{}) -- {issues}",
                self.max_iterations
            );
        }
        if !self.is_open() {
            return "No open revision round".into();
        }
        if self.limit_exceeded() {
            let rounds = if self.max_iterations == 1 {
                "round"
            } else {
                "rounds"
            };
            return format!(
                "Revision limit of {} {rounds} reached -- {issues}",
                self.max_iterations
            );
        }
        format!(
            "Revision iteration {}/{} -- {issues}",
            self.iteration, self.max_iterations
        )
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BudgetMaps {
    pub limits: BTreeMap<String, serde_json::Value>,
    pub observed: BTreeMap<String, serde_json::Value>,
    pub exhausted: Vec<String>,
    pub unobservable: Vec<String>,
}

/// Emitted when a hard budget stopped the loop (shape of `BudgetStopReport`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BudgetStopReport {
    pub stop_reason: String,
    pub budgets: BudgetMaps,
    pub selected_iteration: Option<u32>,
    pub final_iteration: Option<u32>,
    pub best_score: Option<f64>,
    pub final_score: Option<f64>,
    pub hypothesis_outcomes: Vec<ExperimentRecord>,
    pub next_recommended_action: String,
}

/// The latest iteration compared with a baseline (e.g. the base branch's score).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaselineComparison {
    pub baseline_type: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    pub baseline_quality_score: f64,
    pub quality_lift: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quality_lift_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline_tokens_used: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_efficiency_lift: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline_execution_time_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speed_efficiency_lift: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline_tool_calls: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call_savings: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Decision {
    pub task_id: String,
    pub output_id: String,
    pub decided_at: DateTime<Utc>,
    pub decision: Verdict,
    pub triggers: Vec<Trigger>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub strategy: Option<Strategy>,
    pub budget: Budget,
    pub assessment: Assessment,
    pub next_steps: Vec<String>,
    pub stopping_reason: Option<StoppingReason>,
    pub best_iteration: Option<u32>,
    pub revision: RevisionProgress,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget_stop_report: Option<BudgetStopReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline_comparison: Option<BaselineComparison>,
}

impl Decision {
    pub fn recommendation(&self) -> Recommendation {
        self.assessment.recommendation
    }
}

/// The serialised document: `iterationDecision: {...}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecisionReport {
    #[serde(rename = "iterationDecision")]
    pub iteration_decision: Decision,
    /// Where the task started and whether its rules are locked (local modes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskReport>,
}

/// The task behind a decision: the branch it left, the commit it started at, and whether
/// the configuration that judged it is one its own commits cannot change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskReport {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,
    /// The start: the merge-base with the base, or HEAD's parent on the base branch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start: Option<String>,
    pub rules_locked: bool,
    /// Where the rules came from (`abc1234:.itergate.yml`, a `--config` path).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rules: Option<String>,
}
