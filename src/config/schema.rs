//! The shape of `.itergate.yml`. Key names follow the iteration analytics schema
//! (`quality_weights`, `stopping_criteria.*`); defaults live in the `Default` impls here
//! and are written out, with comments, in `config/default.itergate.yml` (a test keeps the
//! two equal).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::values::{Fraction, QualityWeights};

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub quality_weights: QualityWeights,
    pub stopping_criteria: StoppingCriteria,
    pub detection: Detection,
    pub integrity: Integrity,
    pub scoring: Scoring,
    pub revision: Revision,
    pub requirements: Vec<Requirement>,
    /// Shell commands run in the checkout, in order, before the checks: what a fresh
    /// checkout needs first (`npm run generate`, `make deps`). A failing one means the
    /// checks cannot run (nothing is recorded).
    pub setup: Vec<String>,
    pub checks: BTreeMap<String, Check>,
    pub hook: Hook,
    pub github: Github,
    pub templates: Templates,
    pub context: Context,
    /// `itergate loop`: the agent's wall clock and the commands run at its hook points.
    #[serde(rename = "loop")]
    pub agent_loop: AgentLoop,
}

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
}

impl Default for AgentLoop {
    fn default() -> Self {
        AgentLoop {
            iteration_minutes: 30,
            on_iteration: Vec::new(),
            on_stop: Vec::new(),
            on_regression: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct StoppingCriteria {
    pub quality_threshold: Threshold,
    pub improvement_threshold: ImprovementThreshold,
    pub iteration_limits: IterationLimits,
    pub plateau_detection: PlateauDetection,
    pub regression_protection: RegressionProtection,
    pub budget_limits: BudgetLimits,
    pub exploration_quota: ExplorationQuota,
}

/// Stop (accept) once quality reaches `value`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Threshold {
    pub value: Fraction,
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
    pub value: Fraction,
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
    pub min: u32,
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
    min: u32,
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
    pub allow_regression: bool,
    pub max_regressions: u32,
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
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wall_clock_minutes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spend_usd: Option<super::values::NonNegative>,
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
    pub enabled: bool,
    /// Flat cycles allowed before a structural variant or a stop is required.
    pub k: u32,
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

/// Thresholds for trigger detection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Detection {
    /// A `Confidence:` trailer below this raises `low_confidence`.
    pub min_confidence: Fraction,
    /// Where a marker of unfinished work counts (`todo!()`, `raise NotImplementedError`,
    /// a `TODO` comment ...): source files, not prose or test data.
    pub markers: PathFilter,
    /// What an added `TODO`, `FIXME` or `XXX` comment in non-test source is: a note
    /// (`info`, the default) or unfinished work to revise (`warning`). Code that cannot
    /// run as written (`todo!()`, `throw new Error("not implemented")` ...) is always a
    /// warning there.
    pub marker_comments: MarkerComments,
    /// Test files: markers there are notes, never a revision.
    pub tests: PathFilter,
}

/// Tamper evidence: what a change that removes, skips, rewrites or deselects a failing
/// test (a violation) does to its iteration.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Integrity {
    pub on_violation: OnViolation,
    /// What a test that passed at the task's start, fails under the start's version of
    /// itself, and passes as the change rewrote it, is: the change altered an expectation
    /// together with the code.
    pub expectation_changes: ExpectationChanges,
    /// Test-harness files beyond `detection.tests` and the built-in names (globs from the
    /// repository root): the trusted harness run takes them from the task's start.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub harness: Vec<String>,
}

/// `integrity.expectation_changes`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ExpectationChanges {
    /// An INFO note for the reviewer ("expectation changed: confirm the behaviour change").
    #[default]
    Note,
    /// A WARNING: the iteration is sent back, or a person accepts the change.
    Warn,
}

/// `integrity.on_violation`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum OnViolation {
    /// The iteration is VOID: no score, never the best output, no trend point; it is sent
    /// back with what to restore, and a second violation in the task escalates.
    #[default]
    Void,
    /// The findings are BLOCKERs like any other; the iteration keeps its score.
    Iterate,
}

/// The weight of a marker comment (`detection.marker_comments`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum MarkerComments {
    #[default]
    Info,
    Warning,
}

impl Default for Detection {
    fn default() -> Self {
        Detection {
            min_confidence: Fraction::new_const(0.75),
            markers: PathFilter {
                include: vec!["**".into()],
                exclude: [
                    "**/*.md",
                    "**/*.markdown",
                    "**/*.rst",
                    "**/*.adoc",
                    "**/*.txt",
                    "**/CHANGELOG*",
                    "**/docs/**",
                    "**/doc/**",
                    "**/fixtures/**",
                    "**/testdata/**",
                    "**/snapshots/**",
                    "**/*.snap",
                ]
                .map(String::from)
                .to_vec(),
            },
            marker_comments: MarkerComments::Info,
            tests: PathFilter {
                include: [
                    "**/tests/**",
                    "**/test/**",
                    "**/__tests__/**",
                    "**/testing/**",
                    "**/*_test.go",
                    "**/test_*.py",
                    "**/*_test.py",
                    "**/conftest.py",
                    "**/*.test.*",
                    "**/*.spec.*",
                    "**/tests.rs",
                    "**/benches/**",
                ]
                .map(String::from)
                .to_vec(),
                exclude: vec![],
            },
        }
    }
}

/// Files chosen by glob patterns (`**` any directories, `*` within one name), matched
/// against repository-relative paths: included and not excluded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PathFilter {
    pub include: Vec<String>,
    pub exclude: Vec<String>,
}

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
    /// Cyclomatic complexity at which the complexity score reaches 0; changed functions
    /// above it are WARNINGs.
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

/// The check-revise-escalate loop.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Revision {
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
    pub metric: super::values::Metric,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
    #[serde(default)]
    pub priority: RequirementPriority,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Visibility {
    /// Details reach agent-visible output.
    #[default]
    Full,
    /// Holdout: only pass/total is visible to agents; details go to a private path.
    AggregateOnly,
}

/// Where a check's report is read from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReportSource {
    /// A report format (`junit`, `lcov`, `sarif`, ...): an unknown name is an error when
    /// the configuration loads, with its place in the file, not after the checks ran.
    #[serde(deserialize_with = "report_format")]
    pub format: crate::signals::report::ReportFormat,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
    /// `stdout` to read the report from the command's standard output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
}

fn report_format<'de, D>(deserializer: D) -> Result<crate::signals::report::ReportFormat, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let name = String::deserialize(deserializer)?;
    name.parse().map_err(serde::de::Error::custom)
}

/// `report:` as the schema describes it: one report or a list of them.
#[derive(schemars::JsonSchema)]
#[schemars(untagged)]
#[allow(dead_code)] // only its schema is used
enum OneOrManyReports {
    One(ReportSource),
    Many(Vec<ReportSource>),
}

/// A check's reports: one (`report: {format: junit, ...}`) or several (`report: [...]`, a
/// command that writes JUnit and coverage in one run). One is written back as a mapping, so
/// a configuration's fingerprint does not change with this type.
fn one_or_many_reports<'de, D>(deserializer: D) -> Result<Vec<ReportSource>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    struct OneOrMany;
    impl<'de> serde::de::Visitor<'de> for OneOrMany {
        type Value = Vec<ReportSource>;

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a report (`{format: ..., path: ...}`) or a list of reports")
        }

        fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            ReportSource::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                .map(|one| vec![one])
        }

        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
            Vec::deserialize(serde::de::value::SeqAccessDeserializer::new(seq))
        }

        fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(Vec::new())
        }
    }
    deserializer.deserialize_any(OneOrMany)
}

fn serialize_reports<S: serde::Serializer>(
    reports: &[ReportSource],
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match reports {
        [one] => one.serialize(serializer),
        many => many.serialize(serializer),
    }
}

/// A named command whose report feeds one or more scores.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Check {
    /// Shell command; absent when the check only ingests a report an earlier step wrote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    /// The reports the command writes (none: its exit status is the signal). Each is read
    /// into an outcome of its own: the first is named like the check, each further one
    /// `<check>.<format>` (`tests.cobertura`), with `.<n>` (its place in the list, from 1)
    /// added when the check has two reports of that format; see [`Check::report_names`].
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "one_or_many_reports",
        serialize_with = "serialize_reports"
    )]
    #[schemars(with = "OneOrManyReports")]
    pub report: Vec<ReportSource>,
    /// Seconds before the command is stopped.
    #[serde(default = "default_check_timeout_s")]
    pub timeout: u64,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workdir: Option<PathBuf>,
    #[serde(default)]
    pub visibility: Visibility,
    #[serde(default)]
    pub void_on_violation: bool,
    /// The check's own files, as globs from the repository root (`holdout/**`): for an
    /// `aggregate_only` check, never delivered to an agent, named or listed. Its report
    /// paths, working directory and the paths its command names are protected anyway.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
    /// Checks whose commands must finish before this one starts (one reads a report
    /// another writes); checks run concurrently otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub needs: Vec<String>,
}

impl Check {
    /// The name of each report's outcome, in the order of `report`: `name` for the first,
    /// `name.<format>` for each further one (`name.<format>.<n>` when the format repeats).
    pub fn report_names(&self, name: &str) -> Vec<String> {
        self.report
            .iter()
            .enumerate()
            .map(|(index, source)| {
                if index == 0 {
                    return name.to_string();
                }
                let format = source.format.name();
                let repeats = self
                    .report
                    .iter()
                    .filter(|r| r.format == source.format)
                    .count();
                if repeats > 1 {
                    format!("{name}.{format}.{}", index + 1)
                } else {
                    format!("{name}.{format}")
                }
            })
            .collect()
    }
}

/// The report an outcome named `outcome` was read from, if it came from a configured check.
pub fn report_of<'c>(
    checks: &'c BTreeMap<String, Check>,
    outcome: &str,
) -> Option<&'c ReportSource> {
    if let Some(check) = checks.get(outcome) {
        return check.report.first();
    }
    checks.iter().find_map(|(name, check)| {
        let index = check.report_names(name).iter().position(|n| n == outcome)?;
        check.report.get(index)
    })
}

fn default_check_timeout_s() -> u64 {
    600
}

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Gate {
    /// Never block a push.
    #[default]
    Warn,
    BlockOnEscalate,
    BlockOnIterate,
}

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum OnError {
    #[default]
    Allow,
    Block,
}

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum ScoreMode {
    /// Score only the pushed tip.
    #[default]
    Tip,
    /// Score every new commit, oldest first.
    Each,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Hook {
    /// Base branch; default: the remote's HEAD branch, else `main`, else `master`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,
    pub gate: Gate,
    pub on_error: OnError,
    pub score: ScoreMode,
    pub notes_ref: String,
    /// Score pushed tags too.
    pub tags: bool,
}

impl Default for Hook {
    fn default() -> Self {
        Hook {
            base: None,
            gate: Gate::Warn,
            on_error: OnError::Allow,
            score: ScoreMode::Tip,
            notes_ref: "refs/notes/itergate".into(),
            tags: false,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Github {
    /// Label added on escalation and removed on `/iterate accept`.
    pub label: String,
    /// People (logins) mentioned when a pull request is escalated.
    pub reviewers: Vec<String>,
    /// Permission needed for commands that change state (accept, adjust, escalate, budget,
    /// feedback).
    pub permission: super::values::Permission,
    /// Whether the pull request's own author may give the commands that loosen its rules
    /// (`accept`, `adjust`, `budget`). Off by default: an agent that can write to the
    /// repository must not accept its own pull request.
    pub author_can_decide: bool,
    /// Act on commands written by other bots (never on itergate's own comments).
    pub allow_bots: bool,
    /// The login itergate comments as, when the token cannot tell (`GITHUB_TOKEN` in
    /// Actions comments as `github-actions[bot]`).
    pub bot_login: String,
    /// Also publish a check run with the checker issues as annotations.
    pub check_run: bool,
    /// Exit status of `itergate ci`, like `hook.gate`.
    pub gate: Gate,
    /// Name of the workflow artifact that carries a fork PR's iteration record.
    pub artifact: String,
    /// The App only: reports the project's CI already uploads as workflow artifacts, read
    /// when a completed run has no itergate record (scored as the whole tree: CI ran no
    /// base).
    pub reports: Vec<ArtifactReports>,
    /// Base branches (globs: `release/*`) whose own configuration judges the pull requests
    /// that target them, besides the default branch. Read from the default branch only: a
    /// pull request against any other base is judged by the default branch's rules.
    pub trusted_bases: Vec<String>,
    /// On ITERATE, hand the revision to the repository's agent (off by default).
    pub handoff: Handoff,
}

/// How a pull request's revision reaches the repository's agent: a `repository_dispatch`
/// or a `workflow_dispatch` whose workflow runs the agent. It carries a pointer (the pull
/// request, its head, the iteration, the sticky comment's URL), never the prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Handoff {
    pub via: HandoffVia,
    /// `repository_dispatch`'s `event_type`.
    pub event_type: String,
    /// `workflow_dispatch`: the workflow's file name (or id) ...
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workflow: Option<String>,
    /// ... and the branch it runs from (default: the repository's default branch, or the
    /// pull request's base when `trusted_bases` names it; never an untrusted base).
    #[serde(rename = "ref", skip_serializing_if = "Option::is_none")]
    pub git_ref: Option<String>,
    /// `mention` (the App only): the handle a comment mentions, for agents that answer
    /// mentions (`@claude`); a workflow's own comments start no workflow.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handle: Option<String>,
    /// Hand-offs per pull request at most; then a person takes over.
    pub max_handoffs: u32,
    /// Minutes at least between two hand-offs of one pull request.
    pub min_interval_minutes: u64,
    /// Hand off forks' pull requests too (off by default). Their records are self-reported
    /// by a workflow the fork controls, and the agent would then work on code and
    /// instructions from outside the repository, with the secrets its workflow is given.
    pub forks: bool,
}

impl Default for Handoff {
    fn default() -> Self {
        Handoff {
            via: HandoffVia::Off,
            event_type: "itergate-revision".into(),
            workflow: None,
            git_ref: None,
            handle: None,
            max_handoffs: 5,
            min_interval_minutes: 2,
            forks: false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HandoffVia {
    Off,
    RepositoryDispatch,
    WorkflowDispatch,
    Mention,
}

/// Reports inside a workflow artifact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArtifactReports {
    /// The artifact's name (`actions/upload-artifact`'s `name`).
    pub artifact: String,
    #[serde(deserialize_with = "report_format")]
    pub format: crate::signals::report::ReportFormat,
    /// Files inside the artifact: a glob (`**/*.xml`, `lcov.info`).
    pub path: String,
}

impl Default for Github {
    fn default() -> Self {
        Github {
            label: "needs-human-review".into(),
            reviewers: Vec::new(),
            permission: super::values::Permission::Write,
            author_can_decide: false,
            allow_bots: false,
            bot_login: "github-actions[bot]".into(),
            check_run: false,
            gate: Gate::Warn,
            artifact: "itergate-record".into(),
            reports: Vec::new(),
            trusted_bases: Vec::new(),
            handoff: Handoff::default(),
        }
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
