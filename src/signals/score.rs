//! Scoring: from what the checks reported to an `IterationRecord`'s scores, checker issues,
//! triggers and metrics. Pure; the runner and git supply the inputs.
//!
//! - `tests_passing` = passed / executed (skipped tests are not executed).
//! - `code_quality` = 1 - avg_severity / max_severity over lint findings, with the severity
//!   scale error = 1.0, warning = 0.5, note = 0.1 (max 1.0); no findings scores 1.
//! - `coverage` = line coverage (lines hit / lines found).
//! - `complexity` = max(0, 1 - mean cyclomatic / `scoring.complexity_threshold`) over the
//!   functions in changed files (all functions when nothing is known about the change).
//!
//! Failing tests and lint errors are BLOCKERs, lint warnings, uncovered changed lines and
//! over-complex changed functions WARNINGs, notes and skipped tests INFO. Findings already
//! present on the base are INFO ("pre-existing") and trigger nothing. A holdout check
//! (`visibility: aggregate_only`) contributes its score and one aggregate issue, never a
//! test id or a message.

use std::collections::BTreeSet;

use crate::config::{Config, Visibility};
use crate::git::ChangedLines;
use crate::model::{CheckerIssue, IterationRecord, Severity, Status, Trigger, TriggerType};

use super::classify;
use super::report::{
    ComplexitySummary, CoverageSummary, LintFinding, LintLevel, LintSummary, Report, TestSummary,
};

/// What one check produced.
#[derive(Debug, Clone)]
pub struct CheckOutcome {
    pub name: String,
    pub visibility: Visibility,
    pub void_on_violation: bool,
    pub result: CheckResult,
}

#[derive(Debug, Clone)]
pub enum CheckResult {
    /// The report was read (the command's exit status, when one ran).
    Report {
        report: Report,
        exit_code: Option<i32>,
    },
    /// A command without a report: its exit status is the signal.
    Exited { exit_code: i32, tail: String },
    /// The check could not produce a result: timeout, crash, unreadable report.
    Failed { message: String, tail: String },
}

pub struct ScoreInput<'a> {
    pub config: &'a Config,
    pub checks: &'a [CheckOutcome],
    /// Lines this iteration added relative to the base.
    pub changed: Option<&'a ChangedLines>,
    /// The base branch's record: what is already there does not count.
    pub base: Option<&'a IterationRecord>,
}

/// Fills scores, issues, triggers, metrics and status of `record`.
pub fn score(input: &ScoreInput, record: &mut IterationRecord) {
    let mut acc = Accumulator::default();
    for check in input.checks {
        acc.add_check(input, check);
    }
    if let Some(changed) = input.changed {
        acc.triggers.extend(classify::incomplete_markers(changed));
    }
    acc.finish(input, record);
}

#[derive(Default)]
struct Accumulator {
    tests: Option<(u64, u64, u64, u64)>, // passed, failed+errored, skipped, executed
    lint: Vec<f64>,
    lint_seen: bool,
    coverage: Option<(u64, u64)>,
    patch: Option<(u64, u64)>,
    complexity: Vec<u32>,
    issues: Vec<CheckerIssue>,
    triggers: Vec<Trigger>,
    errored: bool,
    void: bool,
}

impl Accumulator {
    fn add_check(&mut self, input: &ScoreInput, check: &CheckOutcome) {
        let holdout = check.visibility == Visibility::AggregateOnly;
        match &check.result {
            CheckResult::Failed { message, tail } => {
                self.errored = true;
                self.issues.push(CheckerIssue {
                    dimension: check.name.clone(),
                    severity: Severity::Blocker,
                    finding: if holdout {
                        format!("check `{}` did not complete", check.name)
                    } else {
                        with_tail(
                            &format!("check `{}` did not complete: {message}", check.name),
                            tail,
                        )
                    },
                    affected_field: None,
                    suggested_fix: None,
                });
            }
            CheckResult::Exited { exit_code, tail } => {
                if *exit_code != 0 {
                    self.void |= check.void_on_violation;
                    self.issues.push(CheckerIssue {
                        dimension: check.name.clone(),
                        severity: Severity::Blocker,
                        finding: if holdout {
                            format!("check `{}` failed", check.name)
                        } else {
                            with_tail(
                                &format!("check `{}` exited with status {exit_code}", check.name),
                                tail,
                            )
                        },
                        affected_field: None,
                        suggested_fix: None,
                    });
                    self.triggers.push(trigger(
                        TriggerType::ValidationFailure,
                        &check.name,
                        0.7,
                        format!("check `{}` failed (exit status {exit_code})", check.name),
                    ));
                }
            }
            CheckResult::Report { report, .. } => match report {
                Report::Tests(t) => self.add_tests(check, t, holdout),
                Report::Lint(l) => self.add_lint(check, l, holdout),
                Report::Coverage(c) => self.add_coverage(input, c),
                Report::Complexity(c) => self.add_complexity(input, c),
            },
        }
    }

    fn add_tests(&mut self, check: &CheckOutcome, t: &TestSummary, holdout: bool) {
        let failed = t.failed + t.errored;
        let (p, f, s, e) = self.tests.unwrap_or_default();
        self.tests = Some((p + t.passed, f + failed, s + t.skipped, e + t.executed()));
        if holdout {
            if failed > 0 {
                self.issues.push(CheckerIssue {
                    dimension: "tests".into(),
                    severity: Severity::Blocker,
                    finding: format!(
                        "holdout check `{}`: {} of {} passed",
                        check.name,
                        t.passed,
                        t.executed()
                    ),
                    affected_field: None,
                    suggested_fix: None,
                });
                self.triggers.push(trigger(
                    TriggerType::ValidationFailure,
                    &check.name,
                    0.7,
                    format!("holdout: {} of {} passed", t.passed, t.executed()),
                ));
            }
            return;
        }
        for case in &t.problems {
            let (issue, kind) = classify::test_issue(case);
            if let Some(kind) = kind {
                self.triggers.push(trigger(
                    kind,
                    &check.name,
                    severity_of(kind),
                    issue.finding.clone(),
                ));
            }
            self.issues.push(issue);
        }
    }

    fn add_lint(&mut self, check: &CheckOutcome, l: &LintSummary, holdout: bool) {
        self.lint_seen = true;
        self.lint
            .extend(l.findings.iter().map(|f| lint_severity(f.level)));
        let errors = l.count(LintLevel::Error);
        if check.void_on_violation && errors > 0 {
            self.void = true;
        }
        if holdout {
            if errors > 0 {
                self.issues.push(CheckerIssue {
                    dimension: "code_quality".into(),
                    severity: Severity::Blocker,
                    finding: format!("holdout check `{}`: {errors} errors", check.name),
                    affected_field: None,
                    suggested_fix: None,
                });
            }
            return;
        }
        for finding in &l.findings {
            let issue = lint_issue(finding);
            if let Some(kind) = classify::lint_trigger(finding) {
                self.triggers
                    .push(trigger(kind, &check.name, 1.0, issue.finding.clone()));
            } else if finding.level == LintLevel::Error {
                self.triggers.push(trigger(
                    TriggerType::ValidationFailure,
                    &check.name,
                    0.7,
                    issue.finding.clone(),
                ));
            }
            self.issues.push(issue);
        }
    }

    fn add_coverage(&mut self, input: &ScoreInput, c: &CoverageSummary) {
        let (found, hit) = self.coverage.unwrap_or_default();
        self.coverage = Some((found + c.lines_found, hit + c.lines_hit));
        let Some(changed) = input.changed else { return };
        let (mut total, mut covered) = self.patch.unwrap_or_default();
        for (path, lines) in &changed.files {
            let Some(file) = find_file(c, path) else {
                continue;
            };
            let mut uncovered = Vec::new();
            for added in lines {
                match file.lines.get(&added.line) {
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
                self.issues.push(CheckerIssue {
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

    fn add_complexity(&mut self, input: &ScoreInput, c: &ComplexitySummary) {
        let threshold = input.config.scoring.complexity_threshold;
        let in_change = |file: &str| {
            input
                .changed
                .is_none_or(|ch| ch.files.keys().any(|p| same_path(p, file)))
        };
        for f in c.functions.iter().filter(|f| in_change(&f.file)) {
            self.complexity.push(f.cyclomatic);
            if f.cyclomatic > threshold {
                self.issues.push(CheckerIssue {
                    dimension: "complexity".into(),
                    severity: Severity::Warning,
                    finding: format!(
                        "function `{}` has cyclomatic complexity {} (threshold {threshold})",
                        f.name, f.cyclomatic
                    ),
                    affected_field: Some(match f.line {
                        Some(l) => format!("{}:{l}", f.file),
                        None => f.file.clone(),
                    }),
                    suggested_fix: Some("split the function or simplify its branches".into()),
                });
            }
        }
    }

    fn finish(mut self, input: &ScoreInput, record: &mut IterationRecord) {
        let ratio = |num: u64, den: u64| (den > 0).then(|| num as f64 / den as f64);
        if let Some((passed, failed, skipped, executed)) = self.tests {
            record.scores.tests_passing = ratio(passed, executed);
            record.metrics.insert("tests.failed".into(), failed as f64);
            record
                .metrics
                .insert("tests.skipped".into(), skipped as f64);
            if skipped > 0
                && input.base.is_none_or(|b| {
                    b.metrics.get("tests.skipped").copied().unwrap_or(0.0) < skipped as f64
                })
            {
                self.triggers.push(trigger(
                    TriggerType::IncompleteOutput,
                    "tests",
                    0.3,
                    format!("{skipped} tests skipped"),
                ));
            }
        }
        if self.lint_seen {
            let avg = if self.lint.is_empty() {
                0.0
            } else {
                self.lint.iter().sum::<f64>() / self.lint.len() as f64
            };
            record.scores.code_quality = Some((1.0 - avg / MAX_LINT_SEVERITY).clamp(0.0, 1.0));
        }
        if let Some((found, hit)) = self.coverage {
            record.scores.coverage = ratio(hit, found);
        }
        if let Some(p) = self
            .patch
            .and_then(|(total, covered)| ratio(covered, total))
        {
            record.metrics.insert("patch_coverage".into(), p);
        }
        if !self.complexity.is_empty() {
            let mean = self.complexity.iter().map(|c| f64::from(*c)).sum::<f64>()
                / self.complexity.len() as f64;
            let threshold = f64::from(input.config.scoring.complexity_threshold.max(1));
            record.scores.complexity = Some((1.0 - mean / threshold).max(0.0));
        }
        if let Some(base) = input.base {
            demote_pre_existing(&mut self.issues, &mut self.triggers, base);
        }
        let failing = self
            .issues
            .iter()
            .filter(|i| {
                i.dimension == "tests"
                    && i.severity == Severity::Blocker
                    && i.affected_field.is_some()
            })
            .count();
        if failing > 0 {
            let executed = self.tests.map(|t| t.3).unwrap_or(0);
            self.triggers.push(trigger(
                TriggerType::ValidationFailure,
                "tests",
                if failing as u64 >= executed { 1.0 } else { 0.7 },
                format!("{failing} of {executed} tests failed"),
            ));
        }
        record.status = if self.errored {
            Status::Error
        } else if self.void {
            Status::Void
        } else if self.issues.iter().any(|i| i.severity == Severity::Blocker) {
            Status::Fail
        } else {
            Status::Pass
        };
        record.issues.append(&mut self.issues);
        record.triggers.append(&mut self.triggers);
    }
}

const MAX_LINT_SEVERITY: f64 = 1.0;

fn lint_severity(level: LintLevel) -> f64 {
    match level {
        LintLevel::Error => 1.0,
        LintLevel::Warning => 0.5,
        LintLevel::Note => 0.1,
    }
}

fn severity_of(kind: TriggerType) -> f64 {
    match kind {
        TriggerType::HallucinationDetected => 1.0,
        _ => 0.7,
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
        affected_field: f.file.as_ref().map(|file| match f.line {
            Some(l) => format!("{file}:{l}"),
            None => file.clone(),
        }),
        suggested_fix: f.suggested_fix.clone(),
    }
}

/// Coverage paths may be absolute or relative to another root; match on the path suffix.
fn same_path(repo_path: &str, report_path: &str) -> bool {
    let report = report_path.trim_start_matches("./");
    report == repo_path || report.ends_with(&format!("/{repo_path}"))
}

fn find_file<'c>(c: &'c CoverageSummary, path: &str) -> Option<&'c super::report::FileLines> {
    c.files
        .iter()
        .find(|(p, _)| same_path(path, p))
        .map(|(_, f)| f)
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

/// A finding already on the base: same dimension and finding, same file.
fn issue_key(i: &CheckerIssue) -> (String, String, String) {
    let file = i
        .affected_field
        .as_deref()
        .map(|a| a.split(':').next().unwrap_or(a).to_string())
        .unwrap_or_default();
    (i.dimension.clone(), i.finding.clone(), file)
}

fn demote_pre_existing(
    issues: &mut [CheckerIssue],
    triggers: &mut Vec<Trigger>,
    base: &IterationRecord,
) {
    let on_base: BTreeSet<_> = base.issues.iter().map(issue_key).collect();
    let mut demoted: BTreeSet<String> = BTreeSet::new();
    for issue in issues.iter_mut() {
        if issue.severity != Severity::Info && on_base.contains(&issue_key(issue)) {
            demoted.insert(issue.finding.clone());
            issue.severity = Severity::Info;
            issue.finding = format!("(pre-existing on the base) {}", issue.finding);
        }
    }
    let base_details: BTreeSet<&str> = base.triggers.iter().map(|t| t.details.as_str()).collect();
    triggers
        .retain(|t| !demoted.contains(&t.details) && !base_details.contains(t.details.as_str()));
}
