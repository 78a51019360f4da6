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

use std::collections::{BTreeSet, HashMap};

use crate::config::{Config, LintScore, OnViolation, Scope, Visibility};
use crate::model::{
    BaseDebt, ChangedLines, CheckerIssue, IterationRecord, Severity, Status, Trigger, TriggerType,
};

use super::classify;
use super::diagnostics::Diagnostic;
use super::integrity;
use super::markers;
use super::observation::{CheckOutcome, CheckResult, Observation};
use super::report::{
    ComplexitySummary, CoverageSummary, LintFinding, LintLevel, LintSummary, Report, TestSummary,
};

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
        let findings = integrity::check(&integrity::Input {
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
        let suppressions = findings
            .iter()
            .filter(|f| f.issue.finding.starts_with(integrity::SUPPRESSION))
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
    for target in input.targets {
        if ran.contains(target.as_str()) {
            continue;
        }
        acc.issues.push(issue(
            "tests",
            Severity::Blocker,
            format!(
                "target test {target} did not run: it failed where the task started, and the task is done when it passes"
            ),
            Some(target.clone()),
        ));
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
    issues: Vec<CheckerIssue>,
    triggers: Vec<Trigger>,
    debt: BaseDebt,
    void: bool,
    /// A test file the change edited did not run at all (see `unrun_changed_tests`).
    unmeasured_tests: bool,
}

/// The file an errored case that stands for a whole file stands for, when `changed`
/// holds it: its own `file`, its id as a path (`tests/test_x.py`, Jest), or a Python module
/// id (`tests.test_x` → `tests/test_x.py`, pytest's collection errors).
fn unrun_file(case: &super::report::TestCase, changed: &dyn Fn(&str) -> bool) -> Option<String> {
    let module = (!case.id.contains("::") && !case.id.contains(' '))
        .then(|| format!("{}.py", case.id.replace('.', "/")));
    [case.file.clone(), Some(case.id.clone()), module]
        .into_iter()
        .flatten()
        .find(|path| changed(path))
}

/// The dimension of a note that says what an iteration could not measure.
pub const UNMEASURED: &str = "unmeasured";

impl Accumulator {
    fn add_check(
        &mut self,
        input: &ScoreInput,
        check: &CheckOutcome,
        base: Option<&CheckResult>,
        by_change: bool,
    ) {
        let holdout = check.visibility == Visibility::AggregateOnly;
        match &check.result {
            CheckResult::TrackedFilesChanged { files, checks } => {
                self.issues.push(tracked_files_changed(files, checks));
            }
            CheckResult::NotWritten { path, format, said } => {
                let what = format!("{:?}", format.kind()).to_lowercase();
                let said = said
                    .as_ref()
                    .map(|s| format!("; it said: {s}"))
                    .unwrap_or_default();
                let name = check
                    .name
                    .strip_suffix(&format!(".{}", format.name()))
                    .unwrap_or(&check.name);
                self.issues.push(issue(
                    UNMEASURED,
                    Severity::Info,
                    format!(
                        "{what} unmeasured: check `{name}` did not write {path} this time (its other report was read){said}"
                    ),
                    None,
                ));
            }
            CheckResult::Exited {
                exit_code,
                tail,
                failures,
            } => {
                if *exit_code == 0 {
                    return;
                }
                self.void |= check.void_on_violation;
                let base_failures = match base {
                    Some(CheckResult::Exited {
                        exit_code: b,
                        failures,
                        ..
                    }) if *b != 0 => Some(failures),
                    _ => None,
                };
                // Without a report, what failed is read from the output: a base that
                // fails too hides only the failures it has itself.
                let new_lines: Vec<&String> = match base_failures {
                    Some(on_base) => failures.iter().filter(|l| !on_base.contains(l)).collect(),
                    None => failures.iter().collect(),
                };
                if base_failures.is_some() && new_lines.is_empty() {
                    self.debt.failing_checks += 1;
                    self.debt
                        .note_example(Some(&format!("check `{}`", check.name)));
                    return;
                }
                let head = match base_failures {
                    Some(_) => format!(
                        "check `{}` fails on the base too, and now with new failures",
                        check.name
                    ),
                    None => format!("check `{}` exited with status {exit_code}", check.name),
                };
                let finding = if holdout {
                    format!("check `{}` failed", check.name)
                } else if new_lines.is_empty() {
                    with_tail(&head, tail)
                } else {
                    let shown: Vec<&str> = new_lines.iter().take(20).map(|l| l.as_str()).collect();
                    with_tail(&head, &shown.join("\n"))
                };
                self.issues
                    .push(issue(&check.name, Severity::Blocker, finding, None));
                self.triggers.push(trigger(
                    TriggerType::ValidationFailure,
                    &check.name,
                    0.7,
                    format!("check `{}` failed (exit status {exit_code})", check.name),
                ));
            }
            CheckResult::TimedOut { seconds, .. } => {
                if matches!(base, Some(CheckResult::TimedOut { .. })) {
                    self.debt.failing_checks += 1;
                    self.debt
                        .note_example(Some(&format!("check `{}`", check.name)));
                    return;
                }
                self.issues.push(issue(
                    &check.name,
                    Severity::Blocker,
                    format!(
                        "check `{}` did not finish within {seconds}s and was stopped",
                        check.name
                    ),
                    None,
                ));
                self.triggers.push(trigger(
                    TriggerType::ValidationFailure,
                    &check.name,
                    0.7,
                    format!("check `{}` timed out", check.name),
                ));
            }
            CheckResult::BuildFailed { diagnostics, .. } => {
                let base_diagnostics = match base {
                    Some(CheckResult::BuildFailed { diagnostics, .. }) => diagnostics.as_slice(),
                    _ => &[],
                };
                self.add_build_failure(input, check, diagnostics, base_diagnostics, holdout);
            }
            CheckResult::Report { report, .. } => {
                let base_report = match base {
                    Some(CheckResult::Report { report, .. }) if by_change => Some(report),
                    _ => None,
                };
                match report {
                    Report::Tests(t) => {
                        let base_tests = match base_report {
                            Some(Report::Tests(b)) => Some(b),
                            _ => None,
                        };
                        self.add_tests(check, t, base_tests, holdout, input.targets);
                        if !holdout {
                            self.unrun_changed_tests(input, t, base_tests);
                        }
                    }
                    Report::Lint(l) => {
                        let base_lint = match base_report {
                            Some(Report::Lint(b)) => Some(b),
                            _ => None,
                        };
                        // Warnings are the change's only on the lines it added (a base whose
                        // linter stopped early reports fewer of the others); errors anywhere
                        // can be its doing (a caller that no longer type-checks).
                        let touched = input.changed.filter(|_| by_change && base_lint.is_some());
                        let is_test = input.paths.is_test;
                        self.add_lint(check, l, base_lint, holdout, touched, is_test);
                    }
                    Report::Coverage(c) => {
                        let base_coverage = match base_report {
                            Some(Report::Coverage(b)) => Some(b),
                            _ => None,
                        };
                        self.add_coverage(input, c, base_coverage);
                    }
                    Report::Complexity(c) => {
                        let base_complexity = match base_report {
                            Some(Report::Complexity(b)) => Some(b),
                            _ => None,
                        };
                        self.add_complexity(input, c, base_complexity);
                    }
                }
            }
        }
    }

    fn add_build_failure(
        &mut self,
        input: &ScoreInput,
        check: &CheckOutcome,
        diagnostics: &[Diagnostic],
        on_base: &[Diagnostic],
        holdout: bool,
    ) {
        let old: BTreeSet<_> = on_base.iter().map(diagnostic_key).collect();
        let new: Vec<&Diagnostic> = diagnostics
            .iter()
            .filter(|d| !old.contains(&diagnostic_key(d)))
            .collect();
        let is_tests = check_is_tests(input.config, &check.name);
        if new.is_empty() {
            self.debt.failing_checks += 1;
            self.debt
                .note_example(Some(&format!("check `{}`", check.name)));
            return;
        }
        if is_tests {
            self.tests_seen = true;
            self.build_broken = true;
        }
        let dimension = if is_tests {
            "tests"
        } else {
            check.name.as_str()
        };
        if holdout {
            self.issues.push(issue(
                dimension,
                Severity::Blocker,
                format!("holdout check `{}`: the build failed", check.name),
                None,
            ));
        } else {
            for d in &new {
                let kind = classify::diagnostic_trigger(d);
                let finding = diagnostic_finding(d);
                if let Some(kind) = kind {
                    self.triggers
                        .push(trigger(kind, &check.name, 1.0, first_line(&finding)));
                }
                self.issues.push(CheckerIssue {
                    dimension: dimension.into(),
                    severity: Severity::Blocker,
                    finding,
                    affected_field: location(d.file.as_deref(), d.line),
                    suggested_fix: None,
                });
            }
        }
        self.triggers.push(trigger(
            TriggerType::ValidationFailure,
            &check.name,
            1.0,
            format!(
                "the build of check `{}` failed with {} error{}",
                check.name,
                new.len(),
                if new.len() == 1 { "" } else { "s" }
            ),
        ));
    }

    /// A test file the change edited whose tests never ran, here or on the base (a
    /// collection or import error: one errored case named after the file or module): the
    /// base's failure hides nothing the change did, yet none of the change's tests in it
    /// ran. Unmeasured, and said so; never a pass.
    fn unrun_changed_tests(
        &mut self,
        input: &ScoreInput,
        t: &TestSummary,
        base: Option<&TestSummary>,
    ) {
        let (Some(changed), Some(base)) = (input.changed, base) else {
            return;
        };
        let errored_on_base: BTreeSet<&str> = base
            .problems
            .iter()
            .filter(|c| matches!(c.outcome, super::report::TestOutcome::Errored))
            .map(|c| c.id.as_str())
            .collect();
        for case in &t.problems {
            if !matches!(case.outcome, super::report::TestOutcome::Errored)
                || !errored_on_base.contains(case.id.as_str())
            {
                continue;
            }
            let Some(file) = unrun_file(case, &|path| changed.files.contains_key(path)) else {
                continue;
            };
            self.unmeasured_tests = true;
            let why = case
                .message
                .as_deref()
                .map(|m| format!(" ({})", m.lines().next().unwrap_or(m)))
                .unwrap_or_default();
            self.issues.push(issue(
                "tests",
                Severity::Warning,
                format!(
                    "the tests in `{file}`, which the change edited, did not run{why}, on the base nor here: the change's tests there are unmeasured, not passed; make the file import and collect"
                ),
                Some(file.clone()),
            ));
            self.triggers.push(trigger(
                TriggerType::IncompleteOutput,
                "tests",
                0.6,
                format!("the tests in {file} did not run (unmeasured)"),
            ));
        }
    }

    fn add_tests(
        &mut self,
        check: &CheckOutcome,
        t: &TestSummary,
        base: Option<&TestSummary>,
        holdout: bool,
        targets: &[String],
    ) {
        self.tests_seen = true;
        self.executed = self.executed.saturating_add(t.executed());
        self.passed = self.passed.saturating_add(t.passed);
        self.skipped = self.skipped.saturating_add(t.skipped);
        if let Some(b) = base {
            let skipped = self.base_skipped.get_or_insert(0);
            *skipped = skipped.saturating_add(b.skipped);
            // A test the change adds as skipped (written ahead of the code it will test)
            // hides nothing the base ran; where the base names all its tests, those are
            // not counted against it. A test that ran and is skipped now is integrity's.
            if b.passing.len() as u64 == b.passed {
                let known: BTreeSet<&str> = b
                    .passing
                    .iter()
                    .map(|r| r.id.as_str())
                    .chain(b.problems.iter().map(|c| c.id.as_str()))
                    .collect();
                let added = t
                    .problems
                    .iter()
                    .filter(|c| matches!(c.outcome, super::report::TestOutcome::Skipped))
                    .filter(|c| !known.contains(c.id.as_str()))
                    .count() as u64;
                self.added_skipped = self.added_skipped.saturating_add(added);
            }
        }
        let failing_on_base: BTreeSet<&str> = base
            .map(|b| b.failures().map(|c| c.id.as_str()).collect::<Vec<_>>())
            .unwrap_or_default()
            .into_iter()
            .filter(|id| !targets.iter().any(|t| t == id))
            .collect();
        let mut new = Vec::new();
        for case in &t.problems {
            let failed = !matches!(case.outcome, super::report::TestOutcome::Skipped);
            if failed {
                self.all_failures = self.all_failures.saturating_add(1);
            }
            if failed && failing_on_base.contains(case.id.as_str()) {
                self.debt.failing_tests = self.debt.failing_tests.saturating_add(1);
                if !holdout {
                    self.debt.note_example(Some(&case.id));
                }
                continue;
            }
            if failed {
                self.new_failures = self.new_failures.saturating_add(1);
            }
            new.push(case);
        }
        let unnamed = self.add_unnamed_failures(check, t, base, holdout);
        if holdout {
            let failed = new
                .iter()
                .filter(|c| !matches!(c.outcome, super::report::TestOutcome::Skipped))
                .count();
            if failed > 0 || unnamed > 0 {
                self.issues.push(issue(
                    "tests",
                    Severity::Blocker,
                    format!(
                        "holdout check `{}`: {} of {} passed",
                        check.name,
                        t.passed,
                        t.executed()
                    ),
                    None,
                ));
                self.triggers.push(trigger(
                    TriggerType::ValidationFailure,
                    &check.name,
                    0.7,
                    format!("holdout: {} of {} passed", t.passed, t.executed()),
                ));
            }
            return;
        }
        for case in new {
            let (issue, kind) = classify::test_issue(case);
            if let Some(kind) = kind {
                self.triggers.push(trigger(
                    kind,
                    &check.name,
                    severity_of(kind),
                    first_line(&issue.finding),
                ));
            }
            self.issues.push(issue);
        }
    }

    /// Failures the report counts but names no test for (a libtest summary line without
    /// the test lines, a JUnit suite's `failures="2"` without failing cases): they fail the
    /// run like named ones, as one BLOCKER, since they cannot be matched with the base's
    /// failures by name; only as many as the base has unnamed are its debt. Returns how
    /// many count against the change.
    fn add_unnamed_failures(
        &mut self,
        check: &CheckOutcome,
        t: &TestSummary,
        base: Option<&TestSummary>,
        holdout: bool,
    ) -> u64 {
        let unnamed = unnamed_failures(t);
        if unnamed == 0 {
            return 0;
        }
        let on_base = base.map_or(0, unnamed_failures).min(unnamed);
        let new = unnamed - on_base;
        self.all_failures = self.all_failures.saturating_add(unnamed);
        self.new_failures = self.new_failures.saturating_add(new);
        let debt = u32::try_from(on_base).unwrap_or(u32::MAX);
        self.debt.failing_tests = self.debt.failing_tests.saturating_add(debt);
        if new > 0 && !holdout {
            let plural = if new == 1 { "test" } else { "tests" };
            self.issues.push(issue(
                "tests",
                Severity::Blocker,
                format!(
                    "{new} {plural} failed without names: check `{}`'s report counts failures but names no failing test",
                    check.name
                ),
                None,
            ));
        }
        new
    }

    fn add_lint(
        &mut self,
        check: &CheckOutcome,
        l: &LintSummary,
        base: Option<&LintSummary>,
        holdout: bool,
        touched: Option<&ChangedLines>,
        is_test: &dyn Fn(&str) -> bool,
    ) {
        self.lint_seen = true;
        // reviewdog's `added` filter: a warning is the change's when it is on a line the
        // change added (a file it only deleted from has none).
        let outside_the_change = |f: &LintFinding| {
            f.level != LintLevel::Error
                && touched.is_some_and(|c| {
                    f.file
                        .as_deref()
                        .is_some_and(|file| match c.files.get(file) {
                            None => true,
                            Some(added) => f.line.is_some_and(|line| {
                                added.binary_search_by_key(&line, |l| l.line).is_err()
                            }),
                        })
                })
        };
        // The base's findings by their exact key (with the source line), then, for what
        // is left on both sides, by tool, rule, file and message alone: a finding over a
        // block (an import block's I001) whose first line the change edited is still the
        // base's; only the excess is new.
        let base_findings = base.map(|b| b.findings.as_slice()).unwrap_or_default();
        let mut on_base: HashMap<FindingKey, usize> = HashMap::new();
        for f in base_findings {
            *on_base.entry(finding_key(f)).or_default() += 1;
        }
        let exact: Vec<bool> = l
            .findings
            .iter()
            .map(|f| {
                on_base
                    .get_mut(&finding_key(f))
                    .filter(|c| **c > 0)
                    .map(|c| *c -= 1)
                    .is_some()
            })
            .collect();
        let mut loose: HashMap<LooseKey, usize> = HashMap::new();
        for f in base_findings {
            let key = finding_key(f);
            if let Some(c) = on_base.get_mut(&key).filter(|c| **c > 0) {
                *c -= 1;
                *loose.entry(loose_key(f)).or_default() += 1;
            }
        }
        // A test file's style: a warning of a rule the base already reports at least
        // `TEST_STYLE_MIN` times in that test file (new cases written like the dozens
        // around them) is a note, not a revision.
        let mut in_test_file: HashMap<(&str, &str, &str), usize> = HashMap::new();
        for f in base_findings {
            if let (Some(rule), Some(file)) = (f.rule.as_deref(), f.file.as_deref()) {
                if is_test(file) {
                    *in_test_file.entry((&f.tool, rule, file)).or_default() += 1;
                }
            }
        }
        let test_style = |f: &LintFinding| {
            f.level == LintLevel::Warning
                && match (f.rule.as_deref(), f.file.as_deref()) {
                    (Some(rule), Some(file)) => in_test_file
                        .get(&(f.tool.as_str(), rule, file))
                        .is_some_and(|n| *n >= TEST_STYLE_MIN),
                    _ => false,
                }
        };
        let mut new_errors = 0;
        let mut new = Vec::new();
        for (finding, exact) in l.findings.iter().zip(exact) {
            let old = exact
                || loose
                    .get_mut(&loose_key(finding))
                    .filter(|c| **c > 0)
                    .map(|c| *c -= 1)
                    .is_some()
                || outside_the_change(finding);
            if old {
                match finding.level {
                    LintLevel::Error => self.debt.lint_errors += 1,
                    LintLevel::Warning => self.debt.lint_warnings += 1,
                    LintLevel::Note => continue,
                }
                if !holdout {
                    self.debt
                        .note_example(location(finding.file.as_deref(), finding.line).as_deref());
                }
                continue;
            }
            if !holdout && test_style(finding) {
                let mut note = lint_issue(finding);
                note.severity = Severity::Info;
                note.finding
                    .push_str(" (the test file's style: the base reports it there already)");
                self.issues.push(note);
                continue;
            }
            self.lint_weights.push(lint_severity(finding.level));
            new_errors += usize::from(finding.level == LintLevel::Error);
            new.push(finding);
        }
        if check.void_on_violation && new_errors > 0 {
            self.void = true;
        }
        if holdout {
            if new_errors > 0 {
                self.issues.push(issue(
                    "code_quality",
                    Severity::Blocker,
                    format!("holdout check `{}`: {new_errors} errors", check.name),
                    None,
                ));
            }
            return;
        }
        for finding in new {
            let issue = lint_issue(finding);
            if let Some(kind) = classify::lint_trigger(finding) {
                self.triggers
                    .push(trigger(kind, &check.name, 1.0, first_line(&issue.finding)));
            } else if finding.level == LintLevel::Error {
                self.triggers.push(trigger(
                    TriggerType::ValidationFailure,
                    &check.name,
                    0.7,
                    first_line(&issue.finding),
                ));
            }
            self.issues.push(issue);
        }
    }

    fn add_coverage(
        &mut self,
        input: &ScoreInput,
        c: &CoverageSummary,
        base: Option<&CoverageSummary>,
    ) {
        let (found, hit) = self.coverage.unwrap_or_default();
        self.coverage = Some((
            found.saturating_add(c.lines_found),
            hit.saturating_add(c.lines_hit),
        ));
        let Some(changed) = input.changed else { return };
        let (mut total, mut covered) = self.patch.unwrap_or_default();
        for (path, lines) in &changed.files {
            let Some(file) = c.files.get(path) else {
                continue;
            };
            // An edit to code the base already left untested (a renamed variable, a type
            // annotation) adds no untested code: the file's uncovered lines did not grow.
            // Its covered changed lines still count.
            let untested_before = base
                .and_then(|b| b.files.get(path))
                .map(|f| f.uncovered().count());
            let no_new_untested =
                untested_before.is_some_and(|before| file.uncovered().count() <= before);
            // A reworded line the base left untested too (an error message, a rename) is
            // not new untested code, even when the file gained some elsewhere.
            let mut untested_removed: Vec<String> = match base.and_then(|b| b.files.get(path)) {
                Some(before) => changed
                    .removed
                    .get(path)
                    .into_iter()
                    .flatten()
                    .filter(|l| before.lines.get(&l.line) == Some(&0))
                    .map(|l| markers::normalise(&l.text))
                    .collect(),
                None => Vec::new(),
            };
            let mut reworded = |text: &str| {
                let text = markers::normalise(text);
                let at = untested_removed
                    .iter()
                    .position(|old| markers::same_line_edited(old, &text));
                at.map(|i| untested_removed.swap_remove(i)).is_some()
            };
            let mut uncovered = Vec::new();
            for added in lines.iter().filter(|l| !is_import(&l.text)) {
                match file.lines.get(&added.line) {
                    Some(0) if no_new_untested || reworded(&added.text) => {}
                    Some(0) => {
                        total += 1;
                        uncovered.push(added.line);
                    }
                    Some(_) => {
                        total += 1;
                        covered += 1;
                    }
                    None => {} // not an executable line
                }
            }
            for (start, end) in spans(&uncovered) {
                let at = if start == end {
                    format!("{path}:{start}")
                } else {
                    format!("{path}:{start}-{end}")
                };
                self.uncovered.push(CheckerIssue {
                    dimension: "coverage".into(),
                    severity: Severity::Warning,
                    finding: "changed lines not covered by any test".into(),
                    affected_field: Some(at),
                    suggested_fix: Some("add a test that exercises these lines".into()),
                });
            }
        }
        self.patch = Some((total, covered));
    }

    fn add_complexity(
        &mut self,
        input: &ScoreInput,
        c: &ComplexitySummary,
        base: Option<&ComplexitySummary>,
    ) {
        let threshold = input.config.scoring.complexity_threshold;
        let in_change = |file: &str| input.changed.is_none_or(|ch| ch.files.contains_key(file));
        let unchanged = |f: &super::report::FunctionComplexity| {
            base.is_some_and(|b| {
                b.functions.iter().any(|old| {
                    old.file == f.file && old.name == f.name && old.cyclomatic >= f.cyclomatic
                })
            })
        };
        for f in c
            .functions
            .iter()
            .filter(|f| in_change(&f.file) && !unchanged(f))
        {
            self.complexity.push(f.cyclomatic);
            if f.cyclomatic > threshold {
                self.issues.push(CheckerIssue {
                    dimension: "complexity".into(),
                    severity: Severity::Warning,
                    finding: format!(
                        "function `{}` has cyclomatic complexity {} (threshold {threshold})",
                        f.name, f.cyclomatic
                    ),
                    affected_field: location(Some(&f.file), f.line),
                    suggested_fix: Some("split the function or simplify its branches".into()),
                });
            }
        }
    }

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
                    format!("{} tests skipped", self.skipped),
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

/// `code_quality` from the severity weights of the counted findings.
///
/// `density` (default): 1 / (1 + W / S), W the sum of the weights (error 1.0, warning
/// 0.5, note 0.1), S = max(1, added lines / 100) when the change's size is known, else 1.
/// It falls with every further finding and with severity, and a finding weighs less in a
/// large change than in a three-line one; 1 warning in a 300-line change gives 0.86, 1
/// error in a 3-line change 0.5, 10 errors 0.09. `average_severity`: 1 - mean weight (the
/// analytics schema's formula, which ignores how many findings there are).
pub fn lint_score(formula: LintScore, weights: &[f64], added_lines: Option<usize>) -> f64 {
    if weights.is_empty() {
        return 1.0;
    }
    let total: f64 = weights.iter().sum();
    let score = match formula {
        LintScore::Density => {
            let size = added_lines.map_or(1.0, |n| (n as f64 / LINES_PER_SIZE_UNIT).max(1.0));
            1.0 / (1.0 + total / size)
        }
        LintScore::AverageSeverity => 1.0 - total / weights.len() as f64 / MAX_LINT_SEVERITY,
    };
    score.clamp(0.0, 1.0)
}

const MAX_LINT_SEVERITY: f64 = 1.0;

fn lint_severity(level: LintLevel) -> f64 {
    match level {
        LintLevel::Error => 1.0,
        LintLevel::Warning => 0.5,
        LintLevel::Note => 0.1,
    }
}

/// What makes two findings the same finding across a change: the line number moves with
/// edits above it, the source line does not.
type FindingKey = (String, Option<String>, Option<String>, String, String);

fn finding_key(f: &LintFinding) -> FindingKey {
    let place = match &f.context {
        Some(text) => format!("text:{text}"),
        None => format!("line:{}", f.line.unwrap_or(0)),
    };
    (
        f.tool.clone(),
        f.rule.clone(),
        f.file.clone(),
        f.message.clone(),
        place,
    )
}

/// A finding without its place: what two findings over one block of code share.
type LooseKey = (String, Option<String>, Option<String>, String);

fn loose_key(f: &LintFinding) -> LooseKey {
    (
        f.tool.clone(),
        f.rule.clone(),
        f.file.clone(),
        f.message.clone(),
    )
}

fn diagnostic_key(d: &Diagnostic) -> (Option<String>, String, Option<String>) {
    (d.code.clone(), d.message.clone(), d.file.clone())
}

/// Said as a lint finding would say it (`E0425: cannot find ...`), so the same compiler
/// error reported by a build and by a lint check is one finding.
fn diagnostic_finding(d: &Diagnostic) -> String {
    let code = d
        .code
        .as_deref()
        .map(|c| format!("{c}: "))
        .unwrap_or_default();
    let head = format!("{code}{}", d.message);
    // The detail is kept as the tool printed it; a finding carries no colour codes.
    let detail = super::report::strip_ansi(&d.detail);
    if detail.trim().is_empty() || detail.trim() == d.message {
        head
    } else {
        format!("{head}\n{}", detail.trim_end())
    }
}

/// An import names code, it does not run any worth a test of its own (and under
/// `if TYPE_CHECKING:` it never runs at all).
fn is_import(line: &str) -> bool {
    let line = line.trim_start();
    line.starts_with("import ") || (line.starts_with("from ") && line.contains(" import "))
}

fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or("").to_string()
}

/// One issue per place and first line: a compiler error that both the build of the tests
/// and a lint check report is one problem.
fn dedupe(issues: Vec<CheckerIssue>) -> Vec<CheckerIssue> {
    let mut seen = BTreeSet::new();
    issues
        .into_iter()
        .filter(|i| {
            i.affected_field.is_none()
                || seen.insert((
                    i.affected_field.clone(),
                    i.finding.lines().next().map(str::to_string),
                ))
        })
        .collect()
}

fn check_is_tests(config: &Config, name: &str) -> bool {
    let format = crate::config::report_of(&config.checks, name).map(|r| r.format);
    match format {
        Some(f) => f.kind() == super::report::ReportKind::Tests,
        None => name.contains("test"),
    }
}

fn location(file: Option<&str>, line: Option<u32>) -> Option<String> {
    file.map(|f| match line {
        Some(l) => format!("{f}:{l}"),
        None => f.to_string(),
    })
}

fn severity_of(kind: TriggerType) -> f64 {
    match kind {
        TriggerType::HallucinationDetected => 1.0,
        _ => 0.7,
    }
}

fn issue(dimension: &str, severity: Severity, finding: String, at: Option<String>) -> CheckerIssue {
    CheckerIssue {
        dimension: dimension.into(),
        severity,
        finding,
        affected_field: at,
        suggested_fix: None,
    }
}

/// Failed or errored tests the summary counts beyond the failing cases it names.
fn unnamed_failures(t: &TestSummary) -> u64 {
    let named = t.failures().count() as u64;
    t.failed.saturating_add(t.errored).saturating_sub(named)
}

/// Longest finding, location or fix text an issue keeps: a finding is read by people and
/// agents, and one 100 MB test name must not become a 100 MB record, prompt and comment.
pub const MAX_ISSUE_TEXT_BYTES: usize = 4 * 1024;

/// `issue` with each text cut to about [`MAX_ISSUE_TEXT_BYTES`]: its middle, with a note
/// saying how much was cut, so the start (what failed) and the end (the `right:` value, the
/// last error) both stay.
fn bounded(mut issue: CheckerIssue) -> CheckerIssue {
    issue.finding = truncate_text(issue.finding);
    issue.affected_field = issue.affected_field.map(truncate_text);
    issue.suggested_fix = issue.suggested_fix.map(truncate_text);
    issue
}

fn truncate_text(text: String) -> String {
    if text.len() <= MAX_ISSUE_TEXT_BYTES {
        return text;
    }
    super::report::cut_middle(&text, MAX_ISSUE_TEXT_BYTES)
}

/// Files listed in the warning about files the checks rewrote; the rest are counted.
const MAX_REWRITTEN_FILES_LISTED: usize = 10;

/// The WARNING for checks that changed tracked files while they ran.
fn tracked_files_changed(files: &[String], checks: &[String]) -> CheckerIssue {
    let names = checks
        .iter()
        .map(|c| format!("`{c}`"))
        .collect::<Vec<_>>()
        .join(", ");
    let who = match checks.len() {
        0 => "the checks".to_string(),
        1 => format!("check {names}"),
        _ => format!("one of the checks {names} (they ran concurrently)"),
    };
    let mut listed = files
        .iter()
        .take(MAX_REWRITTEN_FILES_LISTED)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if files.len() > MAX_REWRITTEN_FILES_LISTED {
        listed.push_str(&format!(
            " and {} more",
            files.len() - MAX_REWRITTEN_FILES_LISTED
        ));
    }
    CheckerIssue {
        dimension: "checks".into(),
        severity: Severity::Warning,
        finding: format!(
            "{who} changed tracked files while running: {listed}; the results describe the \
             changed files, not the commit (when the checks ran in the work tree, the \
             changes are there now: see `git diff`)"
        ),
        affected_field: files.first().cloned(),
        suggested_fix: Some(
            "give the check a read-only mode, e.g. `ruff check --no-fix` or \
             `cargo fmt --check`, so it reports what it would change"
                .into(),
        ),
    }
}

fn trigger(kind: TriggerType, source: &str, severity: f64, details: String) -> Trigger {
    Trigger {
        kind,
        source: source.into(),
        severity,
        details,
        fixable: true,
    }
}

fn with_tail(message: &str, tail: &str) -> String {
    if tail.trim().is_empty() {
        message.to_string()
    } else {
        format!("{message}\n{}", tail.trim_end())
    }
}

fn lint_issue(f: &LintFinding) -> CheckerIssue {
    let rule = f
        .rule
        .as_deref()
        .map(|r| format!("{r}: "))
        .unwrap_or_default();
    CheckerIssue {
        dimension: "code_quality".into(),
        severity: match f.level {
            LintLevel::Error => Severity::Blocker,
            LintLevel::Warning => Severity::Warning,
            LintLevel::Note => Severity::Info,
        },
        finding: format!("{rule}{}", f.message),
        affected_field: location(f.file.as_deref(), f.line),
        suggested_fix: f.suggested_fix.clone(),
    }
}

/// Consecutive line numbers folded into (start, end) spans.
fn spans(lines: &[u32]) -> Vec<(u32, u32)> {
    let mut out: Vec<(u32, u32)> = Vec::new();
    for &l in lines {
        match out.last_mut() {
            Some((_, end)) if *end + 1 == l => *end = l,
            _ => out.push((l, l)),
        }
    }
    out
}
