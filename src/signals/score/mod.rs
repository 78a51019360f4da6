//! Scoring: from a tree's observation, compared with its base's, to an `IterationRecord`'s
//! scores, checker issues, triggers, metrics and base debt. Pure; the runner and git supply
//! the inputs.
//!
//! With `scoring.scope: change` (the default, SonarQube's "clean as you code") every score
//! measures what the change did relative to its base:
//! - `tests_passing` = 1 - new failures / executed: a test that fails on the base too is
//!   the base's debt, shown and never counted; a test build that fails with errors the base
//!   does not have passes no test (0, not "unobserved");
//! - `code_quality` falls with the number and severity of new lint findings, normalised by
//!   the size of the change (`scoring.code_quality`, see [`lint_score`]); a finding is old
//!   when the base has one with the same tool, rule, file, message and source line;
//! - `coverage` = patch coverage: covered changed executable lines over changed executable
//!   lines (the whole project's line rate is the metric `coverage.project`);
//! - `complexity` = max(0, 1 - mean cyclomatic / threshold) over the functions the change
//!   added or made more complex.
//!
//! With `scope: whole` (or no base) everything the tree has counts.
//!
//! Failing tests, lint errors, build errors and timeouts are BLOCKERs; lint warnings,
//! uncovered changed lines and over-complex changed functions WARNINGs; notes and skipped
//! tests INFO. A holdout check (`visibility: aggregate_only`) contributes its score and one
//! aggregate issue, never a test id or a message.

mod check_outcome;
mod coverage;
mod issues;
mod lint;
mod test_results;

use std::collections::BTreeSet;

use crate::config::{Config, OnViolation, Scope, Visibility};
use crate::model::{
    BaseDebt, ChangedLines, CheckerIssue, IterationRecord, Severity, Status, Trigger, TriggerType,
};
use crate::signals::observation::{CheckResult, Observation};
use crate::signals::report::Report;
use crate::signals::{integrity, markers};

use issues::{bounded, dedupe, issue, trigger, truncate_text};

pub use issues::MAX_ISSUE_TEXT_BYTES;
pub use lint::lint_score;

pub struct ScoreInput<'a> {
    pub config: &'a Config,
    /// What the iteration's tree observed.
    pub head: &'a Observation,
    /// What the base observed: what is already there is the base's debt.
    pub base: Option<&'a Observation>,
    /// Lines this iteration added relative to the base.
    pub changed: Option<&'a ChangedLines>,
    /// Where markers of unfinished work count, and which files are tests.
    pub paths: &'a markers::Paths<'a>,
    /// The task's earlier iterations, for tamper evidence.
    pub earlier: &'a integrity::Earlier<'a>,
    /// The judged tree's version of a file, when it has one.
    pub head_source: &'a dyn Fn(&str) -> Option<String>,
    /// Integrity findings a person accepted earlier in the task
    /// ([`integrity::acceptance_key`]).
    pub accepted: &'a [String],
    /// The iteration's code under the task's start's tests and harness, when the change
    /// touched them.
    pub trusted: Option<&'a integrity::Trusted<'a>>,
    /// The tests the task set out to make pass (failing where `itergate loop` started it):
    /// a failing target is never the base's debt, and a missing one is a BLOCKER.
    pub targets: &'a [String],
    /// What changed in the environment since the task's start that nothing committed
    /// explains: the observation is untrusted, a violation.
    pub environment: &'a crate::signals::environment::Unsealed,
    /// A test file of the judged tree (`detection.tests`), when it has one: a tests check
    /// that then runs no test measured nothing.
    pub test_file: Option<&'a str>,
}

/// How many findings of one rule a test file has on the base before more of them are
/// the file's style.
const TEST_STYLE_MIN: usize = 3;

/// Added lines per unit of change size in the density formula.
pub const LINES_PER_SIZE_UNIT: f64 = 100.0;

/// Fills scores, issues, triggers, metrics, status and base debt of `record`.
pub fn score(input: &ScoreInput, record: &mut IterationRecord) {
    let by_change = input.config.scoring.scope == Scope::Change;
    let base = input.base.filter(|_| by_change);
    let mut acc = Accumulator::default();
    for check in &input.head.checks {
        let on_base = base.and_then(|b| b.checks.iter().find(|c| c.name == check.name));
        acc.add_check(input, check, on_base.map(|c| &c.result), by_change);
    }
    for id in &input.head.flaky {
        acc.issues.push(issue(
            "tests",
            Severity::Warning,
            format!(
                "test {id} is flaky: it failed in one run of this tree and passed in another; make it deterministic or fix the race"
            ),
            Some(id.clone()),
        ));
        acc.triggers.push(trigger(
            TriggerType::ValidationFailure,
            "tests",
            0.4,
            format!("test {id} is flaky (failed and passed on the same tree)"),
        ));
    }
    if let Some(changed) = input.changed {
        let comments = input.config.detection.marker_comments;
        for (issue, trigger) in markers::new_markers(changed, input.paths, comments) {
            acc.issues.push(issue);
            acc.triggers.extend(trigger);
        }
        let mut findings = integrity::check(&integrity::Input {
            head: input.head,
            base: input.base,
            earlier: input.earlier,
            changed,
            is_test: input.paths.is_test,
            check_files: &check_files(input.config),
            check_commands: &input
                .config
                .checks
                .values()
                .map(|c| c.run.clone())
                .collect::<Vec<_>>(),
            head_source: input.head_source,
            trusted: input.trusted,
        });
        findings.extend(integrity::environment_changed(input.environment));
        findings.extend(integrity::fitted_to_visible_tests(&fitted_holdouts(input)));
        integrity::with_holdouts_failing(&mut findings);
        let suppressions = findings
            .iter()
            .filter(|f| f.issue.is(crate::model::FindingKind::Suppression))
            .count();
        record
            .metrics
            .insert(integrity::SUPPRESSIONS_METRIC.into(), suppressions as f64);
        let voids = input.config.integrity.on_violation == OnViolation::Void;
        for mut f in findings {
            // A person accepted it earlier in the task: shown as accepted, never dropped.
            if f.issue.severity.counts_for_revision()
                && input
                    .accepted
                    .contains(&integrity::acceptance_key(&f.issue))
            {
                f.issue.severity = Severity::Info;
                f.issue.finding.push_str(integrity::ACCEPTED_NOTE);
                acc.issues.push(f.issue);
                continue;
            }
            acc.void |= voids && f.is_violation();
            acc.issues.push(f.issue);
            acc.triggers.extend(f.trigger);
        }
    }
    missing_targets(input, &mut acc);
    acc.finish(input, by_change && input.base.is_some(), record);
}

/// The holdout checks that fail (name, passed, run) when the task's visible targets all
/// pass: none when there are no visible targets, or one of them does not pass.
fn fitted_holdouts(input: &ScoreInput) -> Vec<(String, u64, u64)> {
    let tests = |holdout: bool| {
        input
            .head
            .checks
            .iter()
            .filter(move |c| (c.visibility == Visibility::AggregateOnly) == holdout)
            .filter_map(|c| match &c.result {
                CheckResult::Report {
                    report: Report::Tests(t),
                    ..
                } => Some((c.name.clone(), t)),
                _ => None,
            })
    };
    let passing: BTreeSet<&str> = tests(false)
        .flat_map(|(_, t)| t.passing.iter().map(|r| r.id.as_str()))
        .collect();
    let mut visible = crate::model::target::visible(input.targets).peekable();
    if visible.peek().is_none() || !visible.all(|t| passing.contains(t.as_str())) {
        return Vec::new();
    }
    tests(true)
        .filter(|(_, t)| t.failed > 0 || t.failures().next().is_some())
        .map(|(name, t)| (name, t.passed, t.executed()))
        .collect()
}

/// The task's targets that no test check of this iteration ran: the task is not done.
fn missing_targets(input: &ScoreInput, acc: &mut Accumulator) {
    if input.targets.is_empty() {
        return;
    }
    let ran: BTreeSet<&str> = input
        .head
        .checks
        .iter()
        .filter(|c| c.visibility != Visibility::AggregateOnly)
        .filter_map(|c| match &c.result {
            CheckResult::Report {
                report: Report::Tests(t),
                ..
            } => Some(t),
            _ => None,
        })
        .flat_map(|t| {
            t.passing
                .iter()
                .map(|r| r.id.as_str())
                .chain(t.problems.iter().map(|c| c.id.as_str()))
        })
        .collect();
    for target in crate::model::target::visible(input.targets) {
        if ran.contains(target.as_str()) {
            continue;
        }
        acc.issues.push(CheckerIssue {
            kind: Some(crate::model::FindingKind::TargetNotRun),
            subject: Some(target.clone()),
            ..issue(
                "tests",
                Severity::Blocker,
                crate::model::target::not_run(target),
                Some(target.clone()),
            )
        });
        acc.triggers.push(trigger(
            TriggerType::RequirementUnmet,
            "tests",
            0.9,
            format!("target test {target} did not run"),
        ));
    }
}

#[derive(Default)]
struct Accumulator {
    executed: u64,
    passed: u64,
    skipped: u64,
    base_skipped: Option<u64>,
    /// Skipped tests the base did not have at all.
    added_skipped: u64,
    new_failures: u64,
    all_failures: u64,
    build_broken: bool,
    tests_seen: bool,
    lint_weights: Vec<f64>,
    lint_seen: bool,
    coverage: Option<(u64, u64)>,
    patch: Option<(u64, u64)>,
    complexity: Vec<u32>,
    /// Uncovered changed spans; their severity depends on the patch coverage in all.
    uncovered: Vec<CheckerIssue>,
    /// Changed source files a coverage report left out, while it measures files of their
    /// kind; and those a report did measure (several reports may be read).
    coverage_missed: std::collections::BTreeSet<String>,
    coverage_seen: std::collections::BTreeSet<String>,
    issues: Vec<CheckerIssue>,
    triggers: Vec<Trigger>,
    debt: BaseDebt,
    void: bool,
    /// A test file the change edited did not run at all (see `unrun_changed_tests`).
    unmeasured_tests: bool,
}

/// The dimension of a note that says what an iteration could not measure.
pub const UNMEASURED: &str = "unmeasured";

impl Accumulator {
    fn finish(mut self, input: &ScoreInput, by_change: bool, record: &mut IterationRecord) {
        let ratio = |num: u64, den: u64| (den > 0).then(|| num as f64 / den as f64);
        if self.tests_seen {
            let counted = if by_change {
                self.new_failures
            } else {
                self.all_failures
            };
            record.scores.tests_passing = if self.build_broken {
                Some(0.0)
            } else if self.unmeasured_tests && counted == 0 {
                None
            } else if by_change {
                ratio(self.executed.saturating_sub(counted), self.executed)
            } else {
                ratio(self.passed, self.executed)
            };
            record.metrics.insert("tests.failed".into(), counted as f64);
            record
                .metrics
                .insert("tests.failed_total".into(), self.all_failures as f64);
            record
                .metrics
                .insert("tests.skipped".into(), self.skipped as f64);
            if counted > 0 {
                self.triggers.push(trigger(
                    TriggerType::ValidationFailure,
                    "tests",
                    if counted >= self.executed { 1.0 } else { 0.7 },
                    format!("{counted} of {} tests failed", self.executed),
                ));
            }
            if self.skipped.saturating_sub(self.added_skipped) > self.base_skipped.unwrap_or(0) {
                self.triggers.push(trigger(
                    TriggerType::IncompleteOutput,
                    "tests",
                    0.3,
                    format!(
                        "{} skipped",
                        crate::model::counted(self.skipped as usize, "test")
                    ),
                ));
            }
            if let Some(file) = input
                .test_file
                .filter(|_| self.executed == 0 && !self.build_broken)
            {
                // Nothing measured is not a pass: the runner or its selection is not this
                // project's (vitest configured where `npm test` runs mocha).
                self.issues.push(issue(
                    "tests",
                    Severity::Blocker,
                    format!(
                        "the tests checks ran no test, though the tree has test files (`{file}` …): nothing of the change's behaviour was measured"
                    ),
                    None,
                ));
                self.triggers.push(trigger(
                    TriggerType::ValidationFailure,
                    "tests",
                    1.0,
                    "the tests checks ran no test".to_string(),
                ));
            }
        }
        if self.lint_seen {
            let size = input.changed.filter(|_| by_change).map(|c| c.line_count());
            record.scores.code_quality = Some(lint_score(
                input.config.scoring.code_quality,
                &self.lint_weights,
                size,
            ));
        }
        if let Some((found, hit)) = self.coverage {
            let project = ratio(hit, found);
            if let Some(p) = project {
                record.metrics.insert("coverage.project".into(), p);
            }
            let patch = self
                .patch
                .and_then(|(total, covered)| ratio(covered, total));
            if let Some(p) = patch {
                record.metrics.insert("patch_coverage".into(), p);
            }
            let target = input.config.scoring.patch_coverage_target.get();
            if patch.is_some_and(|p| p >= target) {
                for issue in &mut self.uncovered {
                    issue.severity = Severity::Info;
                }
            }
            self.issues.append(&mut self.uncovered);
            let missed: Vec<&String> = self
                .coverage_missed
                .difference(&self.coverage_seen)
                .collect();
            if let Some(first) = missed.first() {
                let files = missed
                    .iter()
                    .take(3)
                    .map(|f| format!("`{f}`"))
                    .collect::<Vec<_>>()
                    .join(", ");
                let more = missed.len().saturating_sub(3);
                let more = if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                };
                self.issues.push(issue(
                    UNMEASURED,
                    Severity::Info,
                    format!(
                        "coverage of {files}{more} unmeasured: the coverage report leaves the changed file out (what it measures is set in the coverage tool's configuration)"
                    ),
                    Some((*first).clone()),
                ));
            }
            record.scores.coverage = if by_change { patch } else { project };
        }
        if !self.complexity.is_empty() {
            // A function within the threshold scores 1; above it (a WARNING, named) the
            // score falls linearly to 0 at twice the threshold. Every point lost is an issue.
            let threshold = f64::from(input.config.scoring.complexity_threshold.max(1));
            let each = |c: &u32| (1.0 - (f64::from(*c) - threshold).max(0.0) / threshold).max(0.0);
            let sum: f64 = self.complexity.iter().map(each).sum();
            record.scores.complexity = Some(sum / self.complexity.len() as f64);
        }
        record.status = if self.void {
            Status::Void
        } else if self.issues.iter().any(|i| i.severity == Severity::Blocker) {
            Status::Fail
        } else {
            Status::Pass
        };
        record
            .issues
            .extend(dedupe(self.issues.into_iter().map(bounded).collect()));
        record
            .triggers
            .extend(self.triggers.into_iter().map(|mut trigger| {
                trigger.details = truncate_text(trigger.details);
                trigger
            }));
        record.base_debt = self.debt;
    }
}

/// The files each configured check runs.
fn check_files(config: &Config) -> Vec<(String, String)> {
    let setup = config
        .setup
        .iter()
        .map(|command| ("setup", command.as_str()));
    config
        .checks
        .iter()
        .filter_map(|(name, check)| Some((name.as_str(), check.run.as_deref()?)))
        .chain(setup)
        .flat_map(|(name, run)| {
            integrity::files_run_by(run)
                .into_iter()
                .map(move |file| (name.to_string(), file))
        })
        .collect()
}
