//! The data model every mode shares: one scored commit (`IterationRecord`), the checker
//! issues and triggers found in it, and the vocabulary types around them.
//!
//! Field names follow the `metrics_schema` of the iteration analytics schema so that a
//! record written by the hook, by CI or by hand reads the same everywhere. Unobserved
//! dimensions are `None`, never zero: a repository without a coverage check has no
//! coverage score, not a score of 0.

pub mod report_format;

pub use report_format::{ReportFormat, ReportKind};

use std::collections::BTreeMap;
use std::fmt;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// A git object id (sha1 or sha256), kept as the hex text git prints.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, Default)]
#[serde(transparent)]
pub struct CommitSha(pub String);

/// The id of a commit's tree: two commits with the same tree have the same content.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, Default)]
#[serde(transparent)]
pub struct TreeId(pub String);

impl fmt::Display for CommitSha {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Display for TreeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The dimension of tamper evidence: findings about the work's own changes to its tests,
/// checks and configuration (never scored, only found).
pub const INTEGRITY_DIMENSION: &str = "integrity";

/// The first words of the integrity finding an environment changed since the task's start
/// makes (`signals::integrity::environment_changed`).
pub const ENVIRONMENT_CHANGED: &str = "the environment changed since the task started";

/// The words of that finding when itergate could not build an environment of its own to
/// measure the iteration in: nothing measured it, and a person decides at once.
pub const ENVIRONMENT_UNMEASURED: &str =
    "itergate could not build an environment of its own to measure it in";

/// The first words of the integrity finding that the task's visible targets pass while a
/// holdout check still fails.
pub const FITTED: &str = "fitted to the visible tests";

/// The first words of the integrity finding production code that asks for the test runner
/// makes (`signals::integrity::test_aware`).
pub const TEST_AWARE: &str = "production code checks whether it runs under";

/// How a suppression's finding begins.
pub const SUPPRESSION: &str = "suppression added";

/// What an "expectation changed" note says (a test that passed at the start, edited with
/// the code).
pub const EXPECTATION_CHANGED: &str = "had its expectation changed";

/// What a test that failed earlier in the task and now expects something else says.
pub const EXPECTATION_TO_CONFIRM: &str =
    "failed earlier in this task and now expects something else";

/// The first words of the integrity finding production code fitted to a failing test's
/// own values makes (`signals::integrity::hard_coded`).
pub const HARD_CODED: &str = "production code hard-codes values of test";

/// A task's targets: the ids of the tests failing where it started. A holdout check's
/// (`aggregate_only`) are kept among them as `holdout: <id>`, never named to an agent.
pub mod target {
    const HOLDOUT: &str = "holdout: ";

    /// The target a holdout check's failing test `id` is.
    pub fn holdout(id: &str) -> String {
        format!("{HOLDOUT}{id}")
    }

    /// The holdout test id `target` is, if it is one.
    pub fn holdout_id(target: &str) -> Option<&str> {
        target.strip_prefix(HOLDOUT)
    }

    /// The targets an agent may be told of (its visible tests').
    pub fn visible(targets: &[String]) -> impl Iterator<Item = &String> {
        targets.iter().filter(|t| holdout_id(t).is_none())
    }

    const NOT_RUN: &str = "target test ";

    /// The finding of a target that no test check of an iteration ran.
    pub fn not_run(target: &str) -> String {
        format!(
            "{NOT_RUN}{target} did not run: it failed where the task started, and the task is done when it passes"
        )
    }

    /// The target a [`not_run`] finding names.
    pub fn not_run_id(finding: &str) -> Option<&str> {
        finding.strip_prefix(NOT_RUN)?.split(' ').next()
    }
}

/// `n` and a noun that takes an `s` in the plural: `1 blocker`, `2 blockers`, `0 warnings`.
pub fn counted(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// The first line of a finding or a failure's message, as lists show it. A line that only
/// announces what follows ("Expected values to be strictly equal:") takes the next line
/// with it, so the list says what was compared.
///
/// ```
/// use itergate::model::headline;
/// let mocha = "Expected values to be strictly equal:\n\n-1 !== 3\n";
/// assert_eq!(headline(mocha), "Expected values to be strictly equal: -1 !== 3");
/// assert_eq!(headline("test a failed: boom\n  at a.js:3"), "test a failed: boom");
/// ```
pub fn headline(text: &str) -> String {
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or("");
    match lines.next() {
        Some(next) if first.ends_with(':') => format!("{first} {next}"),
        _ => first.to_string(),
    }
}

/// The four scored dimensions, in the order reports list them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dimension {
    TestsPassing,
    CodeQuality,
    Coverage,
    Complexity,
}

impl Dimension {
    pub const ALL: [Dimension; 4] = [
        Dimension::TestsPassing,
        Dimension::CodeQuality,
        Dimension::Coverage,
        Dimension::Complexity,
    ];

    pub fn key(self) -> &'static str {
        match self {
            Dimension::TestsPassing => "tests_passing",
            Dimension::CodeQuality => "code_quality",
            Dimension::Coverage => "coverage",
            Dimension::Complexity => "complexity",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Dimension::TestsPassing => "Tests Passing",
            Dimension::CodeQuality => "Code Quality",
            Dimension::Coverage => "Coverage",
            Dimension::Complexity => "Complexity",
        }
    }
}

/// Per-dimension scores in 0..=1; `None` means the dimension was not observed.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scores {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tests_passing: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_quality: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coverage: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub complexity: Option<f64>,
}

impl Scores {
    pub fn get(&self, dimension: Dimension) -> Option<f64> {
        match dimension {
            Dimension::TestsPassing => self.tests_passing,
            Dimension::CodeQuality => self.code_quality,
            Dimension::Coverage => self.coverage,
            Dimension::Complexity => self.complexity,
        }
    }

    pub fn set(&mut self, dimension: Dimension, value: Option<f64>) {
        let slot = match dimension {
            Dimension::TestsPassing => &mut self.tests_passing,
            Dimension::CodeQuality => &mut self.code_quality,
            Dimension::Coverage => &mut self.coverage,
            Dimension::Complexity => &mut self.complexity,
        };
        *slot = value;
    }

    /// The observed dimensions with their scores.
    pub fn observed(&self) -> impl Iterator<Item = (Dimension, f64)> + '_ {
        Dimension::ALL
            .into_iter()
            .filter_map(|d| self.get(d).map(|v| (d, v)))
    }
}

/// Change against the previous iteration, per dimension and overall.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Delta {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quality: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tests_passing: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_quality: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coverage: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub complexity: Option<f64>,
}

impl Delta {
    pub fn get(&self, dimension: Dimension) -> Option<f64> {
        match dimension {
            Dimension::TestsPassing => self.tests_passing,
            Dimension::CodeQuality => self.code_quality,
            Dimension::Coverage => self.coverage,
            Dimension::Complexity => self.complexity,
        }
    }
}

/// Running totals over the task up to and including this iteration.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Cumulative {
    pub total_improvement: f64,
    pub plateau_count: u32,
    pub regression_count: u32,
    pub flat_cycle_count: u32,
}

/// The falsifiable hypothesis an iteration declared (commit trailers), and what happened.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ExperimentRecord {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hypothesis: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_failure_mode: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distinguishing_diagnostic: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structural_variant: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
}

impl ExperimentRecord {
    pub fn is_empty(&self) -> bool {
        self.hypothesis.is_none()
            && self.expected_failure_mode.is_none()
            && self.distinguishing_diagnostic.is_none()
            && self.structural_variant.is_none()
            && self.result.is_none()
    }
}

/// Checker issue severity of the revision loop: BLOCKER and WARNING ask for a revision,
/// INFO never does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Severity {
    Blocker,
    Warning,
    Info,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Blocker => "BLOCKER",
            Severity::Warning => "WARNING",
            Severity::Info => "INFO",
        }
    }

    pub fn counts_for_revision(self) -> bool {
        !matches!(self, Severity::Info)
    }
}

/// One normalised finding: a failing test, a lint finding, an uncovered changed span.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckerIssue {
    pub dimension: String,
    pub severity: Severity,
    pub finding: String,
    /// `file:line` or a test id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affected_field: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggested_fix: Option<String>,
    /// What the finding is, as data: acceptance, grouping, the stopping rules and the loop
    /// read this, never the finding's words. `None` in records of older versions (and for
    /// findings no reader tells apart).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<FindingKind>,
    /// What it is about: a test's id, a rule, a path (see [`FindingKind`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
}

/// What a finding is. Its `subject` is the test's id for the kinds about a test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingKind {
    /// A test failed or errored.
    TestFailed,
    /// A test that failed, then passed, and fails again with nothing related changed.
    TestFlaky,
    /// A target test that no test check of the iteration ran.
    TargetNotRun,
    /// A test removed, newly skipped, deselected, or still away since an earlier iteration.
    TestPutAway,
    /// A failing test rewritten, or changed to pass under the start's tests.
    TestChangedToPass,
    /// A test that failed earlier in the task and now expects something else: a person
    /// confirms.
    ExpectationToConfirm,
    /// A test that passed at the start had its expectation changed with the code.
    ExpectationChanged,
    /// A suppression added (`subject`: the path and line).
    Suppression,
    /// Production code that asks whether the test runner runs it.
    TestAware,
    /// Production code that hard-codes a failing test's values (`subject`: the test).
    HardCoded,
    /// The environment the checks execute changed since the task started.
    EnvironmentChanged,
    /// That, and no environment of itergate's could measure the iteration again.
    EnvironmentUnmeasured,
    /// The task's visible targets pass while a holdout check fails.
    FittedToVisibleTests,
    /// A check's own script or a tool's configuration edited or loosened.
    HarnessEdited,
    /// A failing test of the previous iteration the record alone cannot follow.
    TestUnverified,
}

impl CheckerIssue {
    /// Whether the finding is of `kind`: by its data, or, in a record of an older version
    /// that has none, by the words that kind's findings were written with.
    pub fn is(&self, kind: FindingKind) -> bool {
        match self.kind {
            Some(own) => own == kind,
            None => kind.legacy_words().is_some_and(|(words, at_start)| {
                if at_start {
                    self.finding.starts_with(words)
                } else {
                    self.finding.contains(words)
                }
            }),
        }
    }

    /// The test the finding is about, for the kinds about a test.
    pub fn test(&self) -> Option<&str> {
        self.subject
            .as_deref()
            .filter(|_| self.kind.is_some_and(FindingKind::is_about_a_test))
    }
}

impl FindingKind {
    /// How records written before findings carried their kind said it: the words, and
    /// whether they open the finding.
    fn legacy_words(self) -> Option<(&'static str, bool)> {
        Some(match self {
            FindingKind::EnvironmentChanged => (ENVIRONMENT_CHANGED, true),
            FindingKind::EnvironmentUnmeasured => (ENVIRONMENT_UNMEASURED, false),
            FindingKind::FittedToVisibleTests => (FITTED, true),
            FindingKind::TestAware => (TEST_AWARE, true),
            FindingKind::HardCoded => (HARD_CODED, true),
            FindingKind::Suppression => (SUPPRESSION, true),
            FindingKind::ExpectationToConfirm => (EXPECTATION_TO_CONFIRM, false),
            FindingKind::ExpectationChanged => (EXPECTATION_CHANGED, false),
            _ => return None,
        })
    }

    /// The kinds about one test, whose `subject` is its id.
    pub fn is_about_a_test(self) -> bool {
        matches!(
            self,
            FindingKind::TestFailed
                | FindingKind::TestFlaky
                | FindingKind::TargetNotRun
                | FindingKind::TestPutAway
                | FindingKind::TestChangedToPass
                | FindingKind::ExpectationToConfirm
                | FindingKind::ExpectationChanged
                | FindingKind::TestUnverified
        )
    }
}

/// Why an output may need another iteration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TriggerType {
    ValidationFailure,
    LowConfidence,
    IncompleteOutput,
    ExplicitFeedback,
    HallucinationDetected,
    RequirementUnmet,
    QualityThreshold,
    UserRejection,
}

impl TriggerType {
    pub fn as_str(self) -> &'static str {
        match self {
            TriggerType::ValidationFailure => "validation_failure",
            TriggerType::LowConfidence => "low_confidence",
            TriggerType::IncompleteOutput => "incomplete_output",
            TriggerType::ExplicitFeedback => "explicit_feedback",
            TriggerType::HallucinationDetected => "hallucination_detected",
            TriggerType::RequirementUnmet => "requirement_unmet",
            TriggerType::QualityThreshold => "quality_threshold",
            TriggerType::UserRejection => "user_rejection",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trigger {
    #[serde(rename = "type")]
    pub kind: TriggerType,
    pub source: String,
    /// 0..=1
    pub severity: f64,
    pub details: String,
    pub fixable: bool,
}

/// Outcome of an iteration's checks. `void` marks an iteration whose score must not be
/// trusted (a lint check with `void_on_violation` failed); it never becomes the best output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    #[default]
    Pass,
    Fail,
    Void,
    Error,
}

impl Status {
    /// Whether the iteration's score can be compared with others.
    pub fn is_scored(self) -> bool {
        matches!(self, Status::Pass | Status::Fail)
    }
}

/// One scored commit of a task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IterationRecord {
    pub iteration: u32,
    pub timestamp: DateTime<Utc>,
    #[serde(default)]
    pub commit: CommitSha,
    #[serde(default)]
    pub tree: TreeId,
    #[serde(default)]
    pub scores: Scores,
    /// Weighted quality over the observed dimensions; computed when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quality: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_used: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_time_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<u64>,
    /// The agent's own confidence (the `Confidence:` trailer), 0..=1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    /// Further measured figures a requirement can name (`patch_coverage`, `tests.failed`, ...).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metrics: BTreeMap<String, f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta: Option<Delta>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cumulative: Option<Cumulative>,
    #[serde(default, skip_serializing_if = "ExperimentRecord::is_empty")]
    pub experiment: ExperimentRecord,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub issues: Vec<CheckerIssue>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub triggers: Vec<Trigger>,
    #[serde(default)]
    pub status: Status,
    /// What the base already fails: shown, never counted against the change.
    #[serde(default, skip_serializing_if = "BaseDebt::is_empty")]
    pub base_debt: BaseDebt,
    /// The files the change touched, when the scorer had the repository and the reader may
    /// not (a pull request published from an artifact).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changes: Option<Changes>,
}

/// A `git diff --stat` of a change: the first files, and how many there are in all.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Changes {
    pub files: Vec<FileChange>,
    pub files_changed: usize,
}

/// One file of a change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileChange {
    pub path: String,
    pub added: usize,
    pub deleted: usize,
}

/// The base's own failures and findings that the change still has: its debt, not the
/// change's. Counts, plus a few places to show.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct BaseDebt {
    pub failing_tests: u32,
    pub lint_errors: u32,
    pub lint_warnings: u32,
    /// Checks that fail (exit status, build) on the base as they do on the change.
    pub failing_checks: u32,
    /// A few of them (`file:line` or test id), for people to look at.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<String>,
}

impl BaseDebt {
    /// Examples kept.
    pub const MAX_EXAMPLES: usize = 5;

    pub fn is_empty(&self) -> bool {
        self.failing_tests == 0
            && self.lint_errors == 0
            && self.lint_warnings == 0
            && self.failing_checks == 0
    }

    pub fn note_example(&mut self, example: Option<&str>) {
        if let Some(example) = example {
            if self.examples.len() < Self::MAX_EXAMPLES {
                self.examples.push(example.to_string());
            }
        }
    }

    /// "2 failing tests, 4 lint warnings": what the debt consists of.
    pub fn describe(&self) -> String {
        let parts = [
            (self.failing_tests, "failing test"),
            (self.failing_checks, "failing check"),
            (self.lint_errors, "lint error"),
            (self.lint_warnings, "lint warning"),
        ];
        parts
            .iter()
            .filter(|(n, _)| *n > 0)
            .map(|(n, what)| format!("{n} {what}{}", if *n == 1 { "" } else { "s" }))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// One line a commit added, numbered as in the new version of its file (from 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddedLine {
    pub line: u32,
    pub text: String,
}

/// One line a commit removed, numbered as in the old version of its file (from 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemovedLine {
    pub line: u32,
    pub text: String,
}

/// The lines added between two trees, per file path (`/`-separated, as in the tree).
/// Deleted and binary files have no entry; a renamed file lists only the lines it gained.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ChangedLines {
    pub files: BTreeMap<String, Vec<AddedLine>>,
    /// The lines removed, numbered as in the old version, per file (a renamed file under
    /// its new path, a deleted one under its old).
    pub removed: BTreeMap<String, Vec<RemovedLine>>,
}

impl ChangedLines {
    /// The added line numbers of one file, ascending.
    pub fn line_numbers(&self, path: &str) -> Vec<u32> {
        self.files
            .get(path)
            .map(|lines| lines.iter().map(|l| l.line).collect())
            .unwrap_or_default()
    }

    /// Every added line with its file, in path order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &AddedLine)> + '_ {
        self.files
            .iter()
            .flat_map(|(path, lines)| lines.iter().map(move |l| (path.as_str(), l)))
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// How many lines were added in all.
    pub fn line_count(&self) -> usize {
        self.files.values().map(Vec::len).sum()
    }
}

impl IterationRecord {
    /// A record with nothing observed yet.
    pub fn new(iteration: u32, timestamp: DateTime<Utc>) -> Self {
        IterationRecord {
            iteration,
            timestamp,
            commit: CommitSha::default(),
            tree: TreeId::default(),
            scores: Scores::default(),
            quality: None,
            tokens_used: None,
            output_tokens: None,
            cost_usd: None,
            execution_time_ms: None,
            tool_calls: None,
            confidence: None,
            metrics: BTreeMap::new(),
            delta: None,
            cumulative: None,
            experiment: ExperimentRecord::default(),
            issues: Vec::new(),
            triggers: Vec::new(),
            status: Status::Pass,
            base_debt: BaseDebt::default(),
            changes: None,
        }
    }

    pub fn count(&self, severity: Severity) -> usize {
        self.issues
            .iter()
            .filter(|i| i.severity == severity)
            .count()
    }

    /// BLOCKER + WARNING: the issue count the revision loop tracks.
    pub fn revision_issue_count(&self) -> usize {
        self.issues
            .iter()
            .filter(|i| i.severity.counts_for_revision())
            .count()
    }
}

/// Where people give their decisions on a task, so that next steps name a command they can
/// type there: `itergate accept` on a local branch, `/iterate accept` on a pull request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Surface {
    /// A branch in a clone: `itergate accept`, `itergate adjust` ... (recorded in git notes).
    Local,
    /// A pull request: `/iterate` comments (recorded in the sticky comment).
    #[default]
    PullRequest,
}

/// What people said about the task (PR comments and reviews, or `itergate accept` and the
/// other local decision commands), already parsed.
///
/// The [`Surface`] travels with the feedback (it says where the feedback is given) rather
/// than as a field of [`crate::engine::DecideInput`]: it is never stored, and callers that have no people
/// deciding (a history file, benchmarks, tests) keep `Feedback::default()`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Feedback {
    /// `/iterate <text>`: explicit feedback for the next iteration.
    pub messages: Vec<String>,
    /// Reviews that requested changes.
    pub rejections: Vec<String>,
    /// `/iterate accept`.
    pub accepted: bool,
    /// Who accepted (`itergate accept`'s author, `/iterate accept`'s commenter), when known:
    /// the decision and the findings it accepted name them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accepted_by: Option<String>,
    /// The integrity findings a maintainer's `/iterate accept` accepted
    /// ([`crate::signals::integrity::acceptance_key`]): they stay accepted in the pull
    /// request's later iterations.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accepted_findings: Vec<String>,
    /// `/iterate escalate [reason]`.
    pub escalation: Option<String>,
    /// Who escalated, when a person did (`itergate escalate`'s author, `/iterate
    /// escalate`'s commenter); none when itergate itself did (a context item that cannot be
    /// provided, the loop's stop), whose reason says why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub escalated_by: Option<String>,
    /// `/iterate budget <n>`: overrides `iteration_limits.max`.
    pub max_iterations: Option<u32>,
    /// `/iterate adjust` after this iteration: the revision loop counts from the next one.
    pub restart_after: Option<u32>,
    /// Where the feedback is given: words the next steps. Not part of any stored state.
    #[serde(skip)]
    pub surface: Surface,
    /// Why the task's saved history could not be verified (an edited or copied state on a
    /// pull request): its budget is unknown, so a person decides. Not stored.
    #[serde(skip)]
    pub unverified_history: Option<String>,
}

/// The longest feedback text kept (a message, a review, an escalation reason), in bytes:
/// what a person may say in one go, in every mode.
pub const FEEDBACK_MAX_BYTES: usize = 2 * 1024;
/// Feedback texts kept per list (messages, rejections): the newest.
pub const FEEDBACK_MAX_ITEMS: usize = 20;

impl Feedback {
    /// Bounds feedback as it is added: each text at most [`FEEDBACK_MAX_BYTES`], each list
    /// the newest [`FEEDBACK_MAX_ITEMS`]. Call it after pushing a message, a review or a
    /// reason.
    pub fn bound(&mut self) {
        for list in [&mut self.messages, &mut self.rejections] {
            let excess = list.len().saturating_sub(FEEDBACK_MAX_ITEMS);
            list.drain(..excess);
            list.iter_mut()
                .for_each(|t| bound_text(t, FEEDBACK_MAX_BYTES));
        }
        if let Some(reason) = &mut self.escalation {
            bound_text(reason, FEEDBACK_MAX_BYTES);
        }
        // Kept whole (they are matched as they are), the newest ones.
        let excess = self
            .accepted_findings
            .len()
            .saturating_sub(FEEDBACK_MAX_ITEMS);
        self.accepted_findings.drain(..excess);
    }
}

/// Cuts `text` to at most `max_bytes` bytes (at a character boundary), with a note saying
/// how many characters were cut. Text within the bound is unchanged, so this is idempotent.
fn bound_text(text: &mut String, max_bytes: usize) {
    if text.len() <= max_bytes {
        return;
    }
    let total = text.chars().count();
    // The note is at most this long: "… (N more characters cut)" with N < 10^20.
    let mut end = max_bytes.saturating_sub(48);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let cut = total - text[..end].chars().count();
    text.truncate(end);
    text.push_str(&format!("… ({cut} more characters cut)"));
}
