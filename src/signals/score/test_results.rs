//! `tests_passing`: new failures against the base's, skipped and unnamed failures, and a
//! changed test file whose tests never ran (unmeasured, never a pass).

use std::collections::BTreeSet;

use crate::model::{Severity, TriggerType};
use crate::signals::classify;
use crate::signals::observation::CheckOutcome;
use crate::signals::report::TestSummary;

use super::issues::{issue, severity_of, trigger, unnamed_failures};
use super::{Accumulator, ScoreInput};
use crate::model::headline;

/// The file an errored case that stands for a whole file stands for, when `changed`
/// holds it: its own `file`, its id as a path (`tests/test_x.py`, Jest), or a Python module
/// id (`tests.test_x` → `tests/test_x.py`, pytest's collection errors).
pub(super) fn unrun_file(
    case: &crate::signals::report::TestCase,
    changed: &dyn Fn(&str) -> bool,
) -> Option<String> {
    let module = (!case.id.contains("::") && !case.id.contains(' '))
        .then(|| format!("{}.py", case.id.replace('.', "/")));
    [case.file.clone(), Some(case.id.clone()), module]
        .into_iter()
        .flatten()
        .find(|path| changed(path))
}

impl Accumulator {
    /// A test file the change edited whose tests never ran, here or on the base (a
    /// collection or import error: one errored case named after the file or module): the
    /// base's failure hides nothing the change did, yet none of the change's tests in it
    /// ran. Unmeasured, and said so; never a pass.
    pub(super) fn unrun_changed_tests(
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
            .filter(|c| matches!(c.outcome, crate::signals::report::TestOutcome::Errored))
            .map(|c| c.id.as_str())
            .collect();
        for case in &t.problems {
            if !matches!(case.outcome, crate::signals::report::TestOutcome::Errored)
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
                .map(|m| format!(" ({})", crate::model::headline(m)))
                .unwrap_or_default();
            self.issues.push(issue(
                "tests",
                Severity::Warning,
                format!(
                    "the tests in `{file}`, which the change edited, did not run{why}, neither on the base nor here: the change's tests there are unmeasured, not passed; make the file import and collect"
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

    pub(super) fn add_tests(
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
                    .filter(|c| matches!(c.outcome, crate::signals::report::TestOutcome::Skipped))
                    .filter(|c| !known.contains(c.id.as_str()))
                    .count() as u64;
                self.added_skipped = self.added_skipped.saturating_add(added);
            }
        }
        let failing_on_base: BTreeSet<&str> = base
            .map(|b| b.failures().map(|c| c.id.as_str()).collect::<Vec<_>>())
            .unwrap_or_default()
            .into_iter()
            .filter(|id| {
                !targets
                    .iter()
                    .any(|t| t == id || crate::model::target::holdout_id(t) == Some(id))
            })
            .collect();
        let mut new = Vec::new();
        for case in &t.problems {
            let failed = !matches!(case.outcome, crate::signals::report::TestOutcome::Skipped);
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
                .filter(|c| !matches!(c.outcome, crate::signals::report::TestOutcome::Skipped))
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
                    headline(&issue.finding),
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
    pub(super) fn add_unnamed_failures(
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
}
