//! The loop's settings: `loop` (the agent loop's per-run limit and hooks), the stopping
//! criteria (thresholds, iteration and budget limits, plateau, regression, exploration)
//! and how a revision is asked for.

use serde::{Deserialize, Serialize};

use crate::config::values::Fraction;

/// `itergate loop`. Each hook is a list of shell commands, run in the repository with the
/// iteration's decision report (JSON) on stdin; a failing hook is reported, never fatal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct AgentLoop {
    /// The most one agent run may take, in minutes: then it is stopped (SIGTERM, then
    /// SIGKILL of its process group) and what it left is judged.
    pub iteration_minutes: u64,
    /// After each judged iteration.
    pub on_iteration: Vec<String>,
    /// When the loop stops (accepted, escalated, out of budget).
    pub on_stop: Vec<String>,
    /// When an iteration scores below the one before it.
    pub on_regression: Vec<String>,
    /// What the agent's processes may write. `workspace-write`: the work tree only (never
    /// `.git`, the project's virtualenvs or `node_modules`), the loop's scratch directory
    /// and `sandbox_writable`; the holdout directories are hidden. Landlock on Linux,
    /// Seatbelt on macOS; elsewhere the loop refuses to start. `off`: the agent writes
    /// what its user can.
    pub sandbox: SandboxMode,
    /// More directories the sandboxed agent may write (its CLI's own state, such as
    /// `~/.claude` or `~/.codex`); `~` is the home directory. Existing ones only.
    pub sandbox_writable: Vec<String>,
}

/// `loop.sandbox`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    #[default]
    WorkspaceWrite,
    Off,
}

impl SandboxMode {
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::WorkspaceWrite => "workspace-write",
            SandboxMode::Off => "off",
        }
    }
}

impl Default for AgentLoop {
    fn default() -> Self {
        AgentLoop {
            iteration_minutes: 30,
            on_iteration: Vec::new(),
            on_stop: Vec::new(),
            on_regression: Vec::new(),
            sandbox: SandboxMode::WorkspaceWrite,
            sandbox_writable: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct StoppingCriteria {
    /// Accept once quality reaches this value and no BLOCKER or WARNING issue remains.
    pub quality_threshold: Threshold,
    /// An iteration that improves quality by less than this is a flat cycle.
    pub improvement_threshold: ImprovementThreshold,
    /// The fewest iterations before a stop for lack of improvement, and the most in
    /// all.
    pub iteration_limits: IterationLimits,
    /// An average improvement over the last `window` iterations below `threshold` is a
    /// plateau.
    pub plateau_detection: PlateauDetection,
    /// A drop below the best quality so far is a regression; more than
    /// `max_regressions` stops the loop unless `allow_regression`.
    pub regression_protection: RegressionProtection,
    /// Hard ceilings, reported by agents in commit trailers (`Tokens-Used`,
    /// `Output-Tokens`, `Cost-USD`, `Tool-Calls`).
    pub budget_limits: BudgetLimits,
    /// What happens after `k` flat cycles in a row.
    pub exploration_quota: ExplorationQuota,
}

/// Stop (accept) once quality reaches `value`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Threshold {
    /// The quality to reach.
    pub value: Fraction,
    /// Whether this rule applies.
    pub enabled: bool,
}

impl Default for Threshold {
    fn default() -> Self {
        Threshold {
            value: Fraction::new_const(0.95),
            enabled: true,
        }
    }
}

/// An iteration that improves quality by less than `value` is a flat cycle.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ImprovementThreshold {
    /// The least improvement in quality that is not a flat cycle.
    pub value: Fraction,
    /// Whether this rule applies.
    pub enabled: bool,
}

impl Default for ImprovementThreshold {
    fn default() -> Self {
        ImprovementThreshold {
            value: Fraction::new_const(0.05),
            enabled: true,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields, try_from = "RawIterationLimits")]
pub struct IterationLimits {
    /// Never stop for lack of improvement before this many iterations.
    pub min: u32,
    /// The hard limit: at `max` the loop stops with the best iteration.
    pub max: u32,
}

impl Default for IterationLimits {
    fn default() -> Self {
        IterationLimits { min: 2, max: 10 }
    }
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
struct RawIterationLimits {
    /// Never stop for lack of improvement before this many iterations.
    min: u32,
    /// The hard limit: at `max` the loop stops with the best iteration.
    max: u32,
}

impl Default for RawIterationLimits {
    fn default() -> Self {
        let d = IterationLimits::default();
        RawIterationLimits {
            min: d.min,
            max: d.max,
        }
    }
}

impl TryFrom<RawIterationLimits> for IterationLimits {
    type Error = String;
    fn try_from(raw: RawIterationLimits) -> Result<Self, String> {
        if raw.max == 0 {
            return Err("`max` must be at least 1".into());
        }
        if raw.min > raw.max {
            return Err(format!(
                "`min` ({}) is greater than `max` ({}); expected min <= max",
                raw.min, raw.max
            ));
        }
        Ok(IterationLimits {
            min: raw.min,
            max: raw.max,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct PlateauDetection {
    /// Iterations to look back over.
    pub window: u32,
    /// Minimum average improvement per iteration over the window.
    pub threshold: Fraction,
    /// Whether this rule applies.
    pub enabled: bool,
}

impl Default for PlateauDetection {
    fn default() -> Self {
        PlateauDetection {
            window: 3,
            threshold: Fraction::new_const(0.03),
            enabled: true,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct RegressionProtection {
    /// Keep going however many regressions there are.
    pub allow_regression: bool,
    /// Regressions allowed before the loop stops.
    pub max_regressions: u32,
    /// Whether this rule applies.
    pub enabled: bool,
}

impl Default for RegressionProtection {
    fn default() -> Self {
        RegressionProtection {
            allow_regression: false,
            max_regressions: 2,
            enabled: true,
        }
    }
}

/// Hard ceilings. A dimension left out is not limited; a declared one stops the loop when
/// exhausted, and is reported as unobservable when no iteration reports it.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct BudgetLimits {
    /// Minutes from the task's first iteration.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wall_clock_minutes: Option<u64>,
    /// Output tokens, summed over the `Output-Tokens` trailers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    /// Tokens, summed over the `Tokens-Used` trailers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_tokens: Option<u64>,
    /// Dollars, summed over the `Cost-USD` trailers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spend_usd: Option<crate::config::values::NonNegative>,
    /// Tool calls, summed over the `Tool-Calls` trailers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<u64>,
    /// When true, a budget that the next iteration is projected to overrun (at the average
    /// cost per iteration so far) stops the loop too; when false that is only a warning.
    pub rate_caps_are_hard_stops: bool,
}

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum FlatCycleAction {
    /// Ask for a structurally different attempt; stop when that one is flat too.
    #[default]
    StructuralVariant,
    /// Stop and keep the best iteration so far.
    StopWithBestOutput,
    /// Call a human.
    HumanReview,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ExplorationQuota {
    /// Whether this rule applies.
    pub enabled: bool,
    /// Flat cycles allowed before a structural variant or a stop is required.
    pub k: u32,
    /// After `k` flat cycles: `structural_variant` (ask for a different approach, stop
    /// when that is flat too), `stop_with_best_output` or `human_review`.
    pub flat_cycle_action: FlatCycleAction,
}

impl Default for ExplorationQuota {
    fn default() -> Self {
        ExplorationQuota {
            enabled: true,
            k: 3,
            flat_cycle_action: FlatCycleAction::StructuralVariant,
        }
    }
}

/// The check-revise-escalate loop.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Revision {
    /// Revisions at most; escalate as soon as the BLOCKER + WARNING count stops
    /// falling.
    pub max_iterations: u32,
    /// When a count that did not fall is a stall.
    pub stall: Stall,
}

impl Default for Revision {
    fn default() -> Self {
        Revision {
            max_iterations: 3,
            stall: Stall::SharedIssue,
        }
    }
}

/// `revision.stall`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Stall {
    /// The count did not fall and an issue of the previous iteration is still open: an
    /// iteration that fixed everything it was given and made something else is progress
    /// (the round limit still bounds the loop).
    #[default]
    SharedIssue,
    /// The count did not fall (the revision loop's rule as written).
    Count,
}
