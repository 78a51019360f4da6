//! `scoring` (scope, the lint formula) and the task's `requirements`.

use serde::{Deserialize, Serialize};

use crate::config::values::Fraction;

/// What a score measures.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// What the change did relative to its base: the base's own failures and findings are
    /// its debt, shown and never counted; coverage is patch coverage of the changed lines.
    #[default]
    Change,
    /// The whole tree, as if there were no base.
    Whole,
}

/// How lint findings become the `code_quality` score.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum LintScore {
    /// 1 / (1 + weight / size): falls with the number and severity of (new) findings,
    /// normalised by the size of the change in units of 100 added lines.
    #[default]
    Density,
    /// 1 - average severity / max severity (the analytics schema's formula).
    AverageSeverity,
}

/// How reports become scores.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Scoring {
    /// A changed function scores 1 up to this cyclomatic complexity, falling linearly to 0 at
    /// twice it; above it the function is a WARNING. The complexity score is the mean.
    pub complexity_threshold: u32,
    /// Score the base (merge-base) once too, so failures and findings already there are
    /// the base's debt (shown, not counted) and the decision compares against it.
    pub compare_base: bool,
    /// Take the base's observation from notes fetched from the remote (`itergate notes
    /// fetch`: written by CI on the base branch with the same checks and itergate version)
    /// instead of checking the base here. Read from the base's configuration; whoever can
    /// push `refs/notes/itergate` to the remote can then say which failures are the base's.
    pub trust_fetched_base: bool,
    pub scope: Scope,
    pub code_quality: LintScore,
    /// Patch coverage at or above which uncovered changed lines are only shown (INFO);
    /// below it they ask for tests (WARNING). One uncovered line in a well-tested change is
    /// not a revision; an untested new function is.
    pub patch_coverage_target: Fraction,
}

impl Default for Scoring {
    fn default() -> Self {
        Scoring {
            complexity_threshold: 15,
            compare_base: true,
            trust_fetched_base: false,
            scope: Scope::Change,
            code_quality: LintScore::Density,
            patch_coverage_target: Fraction::new_const(0.8),
        }
    }
}

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum RequirementPriority {
    #[default]
    Required,
    Preferred,
}

/// A measurable requirement, e.g. `{metric: coverage, min: 0.8}` or `{metric: lint.errors, max: 0}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Requirement {
    /// What is measured: `quality`, a score (`tests_passing`, `code_quality`,
    /// `coverage`, `complexity`, `patch_coverage`), or a count (`tests.failed`,
    /// `tests.skipped`, `lint.errors`, `lint.warnings`, `issues.blockers`,
    /// `issues.warnings`, `confidence`).
    pub metric: crate::config::values::Metric,
    /// The least the metric may be.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    /// The most the metric may be.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
    /// How much an unmet requirement weighs: `required` (severity 0.9) or `preferred` (0.5).
    #[serde(default)]
    pub priority: RequirementPriority,
    /// What the requirement is for, shown with it when unmet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}
