//! A check's own outcome before its reports: it failed to run, timed out, or its build
//! broke; holdout checks aggregated; each report routed to its dimension.

use std::collections::BTreeSet;

use crate::config::Visibility;
use crate::model::{headline, CheckerIssue, Severity, TriggerType};
use crate::signals::classify;
use crate::signals::diagnostics::Diagnostic;
use crate::signals::observation::{CheckOutcome, CheckResult};
use crate::signals::report::Report;

use super::issues::{check_is_tests, issue, location, tracked_files_changed, trigger, with_tail};
use super::lint::{diagnostic_finding, diagnostic_key};
use super::{Accumulator, ScoreInput, UNMEASURED};

impl Accumulator {
    pub(super) fn add_check(
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

    pub(super) fn add_build_failure(
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
                        .push(trigger(kind, &check.name, 1.0, headline(&finding)));
                }
                self.issues.push(CheckerIssue {
                    dimension: dimension.into(),
                    severity: Severity::Blocker,
                    finding,
                    affected_field: location(d.file.as_deref(), d.line),
                    suggested_fix: None,
                    kind: None,
                    subject: None,
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
}
