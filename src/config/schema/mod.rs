//! The shape of `.itergate.yml`. Key names follow the iteration analytics schema
//! (`quality_weights`, `stopping_criteria.*`); defaults live in the `Default` impls here
//! and are written out, with comments, in `config/default.itergate.yml` (a test keeps the
//! two equal).
//!
//! One module per section: the loop's settings, detection, scoring, checks, the hook,
//! GitHub; `Config` and the small sections stay here.

mod checks;
mod detection;
mod github;
mod hook;
mod scoring;
mod stopping;

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::config::values::QualityWeights;

pub use checks::{report_of, Check, ReportSource, Visibility};
pub use detection::{
    Detection, ExpectationChanges, Integrity, MarkerComments, OnViolation, PathFilter,
};
pub use github::{ArtifactReports, Github, Handoff, HandoffVia};
pub use hook::{Gate, Hook, OnError, ScoreMode};
pub use scoring::{LintScore, Requirement, RequirementPriority, Scope, Scoring};
pub use stopping::{
    AgentLoop, BudgetLimits, ExplorationQuota, FlatCycleAction, ImprovementThreshold,
    IterationLimits, PlateauDetection, RegressionProtection, Revision, SandboxMode, Stall,
    StoppingCriteria, Threshold,
};

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Weights of the four scores in the aggregate `quality` (they sum to 1); a score
    /// not measured is left out and the others renormalised.
    pub quality_weights: QualityWeights,
    /// When the loop stops: accept, a plateau, regressions, limits and budgets.
    pub stopping_criteria: StoppingCriteria,
    /// Thresholds and file sets for trigger detection.
    pub detection: Detection,
    /// Tamper evidence: tests removed, skipped, deselected or rewritten, suppressions
    /// and loosened tool configuration.
    pub integrity: Integrity,
    /// How reports become scores.
    pub scoring: Scoring,
    /// The check-revise-escalate loop.
    pub revision: Revision,
    /// Measurable requirements; an unmet one raises `requirement_unmet`.
    pub requirements: Vec<Requirement>,
    /// Shell commands run in the checkout, in order, before the checks: what a fresh
    /// checkout needs first (`npm run generate`, `make deps`). A failing one means the
    /// checks cannot run (nothing is recorded).
    pub setup: Vec<String>,
    pub checks: BTreeMap<String, Check>,
    /// The pre-push hook.
    pub hook: Hook,
    /// Pull requests: GitHub Actions and the App.
    pub github: Github,
    /// Overrides of the built-in message templates.
    pub templates: Templates,
    /// The revision prompt's size and the context an agent may ask for.
    pub context: Context,
    /// `itergate loop`: the agent's wall clock and the commands run at its hook points.
    #[serde(rename = "loop")]
    pub agent_loop: AgentLoop,
    /// The fingerprint of `setup` and `checks` (what an observation depends on), computed
    /// the first time it is asked for and handed down with the configuration.
    #[serde(skip)]
    #[schemars(skip)]
    pub fingerprint: Fingerprint,
}

/// A value computed once from a configuration that does not change after it is loaded
/// (`setup` and `checks` are never edited afterwards). It takes no part in comparisons.
#[derive(Clone, Default)]
pub struct Fingerprint(std::sync::OnceLock<String>);

impl Fingerprint {
    /// The value, computed by `compute` the first time.
    pub fn get_or(&self, compute: impl FnOnce() -> String) -> &str {
        self.0.get_or_init(compute)
    }
}

impl PartialEq for Fingerprint {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Fingerprint")
    }
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Templates {
    /// Directory whose `*.j2` (Jinja) files override the built-in templates of the same name,
    /// relative to the repository root.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dir: Option<PathBuf>,
}

/// Minimum sufficient context: the revision prompt's size and the `CONTEXT_GAP_REPORT`
/// rounds an agent may ask for more.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Context {
    /// The revision prompt never exceeds this many bytes: issues past it are counted, not
    /// listed, and long findings are cut (the agent can ask for the rest).
    pub prompt_budget_bytes: usize,
    /// The round that answers "Execute with the context available": gap reports before it
    /// get a delivery (round 0 is the revision prompt).
    pub max_rounds: u32,
    /// The most one delivered item holds; the rest is cut at a line end.
    pub item_max_bytes: usize,
    /// The most one delivery holds (a pull request comment holds at most 65,536).
    pub delivery_max_bytes: usize,
    /// Files never delivered, as .gitignore patterns: without `/` a file name at any depth,
    /// ending in `/` a directory at any depth, otherwise a path from the repository root.
    pub deny: Vec<String>,
}

impl Default for Context {
    fn default() -> Self {
        Context {
            prompt_budget_bytes: 12_000,
            max_rounds: 3,
            item_max_bytes: 16_000,
            delivery_max_bytes: 48_000,
            deny: [".env*", "*.pem", "*.key", ".git/"]
                .map(String::from)
                .to_vec(),
        }
    }
}
