//! The verdict of the trusted harness run: the iteration's code tested with the task's
//! start's tests and harness (`app::trusted` makes that run). A test that fails there,
//! while the iteration's own run reports it passing, skipped, expected to fail or absent,
//! was changed to pass:
//!
//! - a violation when it was failing when it last ran (at the start, or in the last
//!   iteration that was not VOID) and the change rewrote its expectation without changing
//!   the code, or hid it (skipped, deselected, removed): the target was hidden, not met;
//! - an expectation to confirm when it failed earlier in the task and the change edited its
//!   file together with the code (or after it passed): a WARNING a person confirms, never
//!   VOID;
//! - when it passed at the start, the change altered an expectation together with the code:
//!   `integrity.expectation_changes` says whether that is a note for the reviewer or a
//!   WARNING.
//!
//! The line-based detections of the parent module name *where* (the edited table row, the
//! removed test); a test they already name is not named twice. The tests of one
//! parametrised or table-driven test are one finding with a count.

use std::collections::BTreeMap;

use crate::config::ExpectationChanges;
use crate::model::Severity;
use crate::signals::observation::{CheckResult, Observation};
use crate::signals::report::{Report, TestOutcome};

use super::{at, failed, finding, inventory, is_module_level, restore, Finding, Inventory};
use crate::signals::harness;

/// The trusted run of one iteration.
#[derive(Clone, Copy)]
pub struct Trusted<'a> {
    pub observation: &'a Observation,
    /// The test and harness files the change edited, added or deleted since the start.
    pub edited: &'a [String],
    /// Those of them that are a spec the task added: any expectation of theirs the change
    /// moves is a person's to confirm.
    pub specs: &'a [String],
    pub expectation_changes: ExpectationChanges,
    /// The earlier iterations' own runs that count as a test's last run, oldest first:
    /// those not VOID (a VOID iteration's run is what the tampering made it say).
    pub last_runs: &'a [&'a Observation],
    /// Whether the iteration changed code besides tests and harness since the previous
    /// iteration (since the base, for the first).
    pub code_changed: bool,
}

/// The findings of the trusted run, given the iteration's own observation, the start's and
/// the earlier iterations'.
pub fn findings(
    trusted: &Trusted,
    head: &Observation,
    start: Option<&Observation>,
    earlier: &[&Observation],
) -> Vec<Finding> {
    let under_start = inventory(trusted.observation);
    let own = inventory(head);
    let start = start.map(inventory).unwrap_or_default();
    let earlier: Vec<Inventory> = earlier.iter().map(|o| inventory(o)).collect();
    let last_runs: Vec<Inventory> = trusted.last_runs.iter().map(|o| inventory(o)).collect();
    let messages = failure_messages(trusted.observation);
    // A check whose own run could not import, build or collect something ran only part of
    // its tests (pytest stops at a collection error): its absences are that error's.
    let cut_short: Vec<&str> = own
        .iter()
        .filter(|((_, id), e)| e.outcome == TestOutcome::Errored && is_module_level(id))
        .map(|((check, _), _)| check.as_str())
        .collect();
    // Grouped by test (a parametrised test's cases, a table's rows) and kind.
    let mut groups: BTreeMap<(String, Kind), Vec<(String, String)>> = BTreeMap::new();
    for ((check, id), entry) in &under_start {
        if !failed(entry.outcome) {
            continue;
        }
        let key = (check.clone(), id.clone());
        let now = match own.get(&key) {
            Some(e) if failed(e.outcome) => continue, // its own run fails it too: counted
            Some(e) if e.outcome == TestOutcome::Skipped => "skipped",
            Some(_) => "passing",
            None if cut_short.contains(&check.as_str()) => continue,
            None => "absent",
        };
        let failed_before = start.get(&key).is_some_and(|e| failed(e.outcome))
            || earlier
                .iter()
                .any(|inv| inv.get(&key).is_some_and(|e| failed(e.outcome)));
        // Its last run: the last of the start and the iterations that were not VOID.
        let failing_when_last_ran = std::iter::once(&start)
            .chain(&last_runs)
            .rev()
            .find_map(|inv| inv.get(&key))
            .is_some_and(|e| failed(e.outcome));
        // The test itself now expects something else: it passes in the change's version
        // of its own file (a parametrised row whose id names the expected value is
        // absent, its test as many rows as before), and no runner file changed with it.
        let rewritten_row = now == "absent" && {
            let group = group_of(id);
            let rows = |inv: &Inventory, passing: bool| {
                inv.iter()
                    .filter(|((c, i), e)| {
                        c == check && group_of(i) == group && (!passing || !failed(e.outcome))
                    })
                    .count()
            };
            rows(&own, true) > 0 && rows(&own, false) >= rows(&under_start, false)
        };
        let expectation_edited = (now == "passing" || rewritten_row)
            && match entry.file.as_deref() {
                Some(file) => trusted.edited.iter().any(|f| f == file),
                None => !trusted
                    .edited
                    .iter()
                    .any(|f| harness::part(f, &|_| false).is_some()),
            };
        // A spec's tests are what the task must meet: one of them that passed there and now
        // expects something else is a person's call, never a note (a runner that names no
        // file: any spec the change edited).
        let in_a_spec = match entry.file.as_deref() {
            Some(file) => trusted.specs.iter().any(|s| s == file),
            None => !trusted.specs.is_empty(),
        };
        let kind = if !failed_before && in_a_spec && expectation_edited {
            Kind::SpecChanged
        } else if !failed_before {
            Kind::ExpectationChanged
        } else if expectation_edited && (trusted.code_changed || !failing_when_last_ran) {
            Kind::ToConfirm
        } else {
            Kind::ChangedToPass
        };
        let place = at(entry.file.as_deref(), entry.line, id);
        groups
            .entry((group_of(id).to_string(), kind))
            .or_default()
            .push((id.clone(), format!("{now}|{place}")));
    }
    let edited = edited_list(trusted.edited);
    let mut out = Vec::new();
    for ((group, kind), cases) in groups {
        let (first, detail) = &cases[0];
        let (now, place) = detail.split_once('|').unwrap_or(("absent", ""));
        let message = messages
            .get(first)
            .map(|m| format!(" ({m})"))
            .unwrap_or_default();
        let count = if cases.len() > 1 {
            super::more_cases(cases.len() - 1, &group)
        } else {
            String::new()
        };
        if matches!(kind, Kind::ToConfirm | Kind::SpecChanged) {
            let tests = if cases.len() > 1 {
                format!(
                    "tests {}",
                    cases
                        .iter()
                        .map(|(id, _)| id.as_str())
                        .take(3)
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            } else {
                format!("test {first}")
            };
            let what = if kind == Kind::SpecChanged {
                "of a spec this task added now expects something else"
            } else {
                super::EXPECTATION_TO_CONFIRM
            };
            out.push(finding(
                Severity::Warning,
                format!(
                    "{tests} {what}: under the task's start's tests it fails on this code{message}, while the change's version of it passes; the change edited {edited} with the code: confirm the behaviour change with `itergate accept` (`/iterate accept` on a pull request)"
                ),
                place.to_string(),
                format!(
                    "a person confirms the new expectation (`itergate accept`); if it is not intended, restore `{first}` and fix the code"
                ),
            ).about(crate::model::FindingKind::ExpectationToConfirm, first.as_str()));
        } else if kind == Kind::ChangedToPass {
            out.push(finding(
                Severity::Blocker,
                format!(
                    "test {first} was changed to pass: under the task's start's tests and harness it still fails on this code{message}, while this iteration's own run reports it {now}; the change edited {edited}{count}"
                ),
                place.to_string(),
                restore(first),
            ).about(crate::model::FindingKind::TestChangedToPass, first.as_str()));
        } else {
            let severity = match trusted.expectation_changes {
                ExpectationChanges::Note => Severity::Info,
                ExpectationChanges::Warn => Severity::Warning,
            };
            out.push(finding(
                severity,
                format!(
                    "test {first} {}: it passed at the task's start and fails on this code under the start's version of it{message}, while the change's version reports it {now}; the change edited {edited}: confirm the behaviour change{count}",
                    super::EXPECTATION_CHANGED
                ),
                place.to_string(),
                format!(
                    "if the new behaviour is intended, a person accepts it (`itergate accept`); otherwise restore `{first}` and fix the code"
                ),
            ).about(crate::model::FindingKind::ExpectationChanged, first.as_str()));
        }
    }
    out
}

/// What a test that fails under the start's tests and not in the change's own run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    /// Failing when it last ran, and made to pass by the tests alone: a violation.
    ChangedToPass,
    /// It failed earlier in the task and the change edited it with the code: a person
    /// confirms.
    ToConfirm,
    /// It never failed in the task: the change altered an expectation with the code.
    ExpectationChanged,
    /// A test of a spec the task added, passing there, now expects something else: a
    /// person confirms.
    SpecChanged,
}

/// The test a case belongs to: a parametrised case's function (`m::test_x[a-b]` →
/// `m::test_x`), a Go subtest's parent (`pkg::TestX/#14` → `pkg::TestX`), a table's
/// `describe` (`file::parse > /a/b,true` → `file::parse > `). The file or package before
/// the last `::` is kept whole.
pub(super) fn group_of(id: &str) -> &str {
    let name_at = id.rfind("::").map_or(0, |at| at + 2);
    let cut = id[name_at..]
        .find(['[', '/'])
        .map_or(id.len(), |at| name_at + at);
    &id[..cut]
}

fn edited_list(files: &[String]) -> String {
    let shown: Vec<String> = files.iter().take(5).map(|f| format!("`{f}`")).collect();
    let more = files.len().saturating_sub(shown.len());
    if more > 0 {
        format!("{} and {more} more", shown.join(", "))
    } else {
        shown.join(", ")
    }
}

/// The first line of each failing test's message in `observation`.
fn failure_messages(observation: &Observation) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for check in &observation.checks {
        let CheckResult::Report {
            report: Report::Tests(tests),
            ..
        } = &check.result
        else {
            continue;
        };
        for case in &tests.problems {
            if let Some(message) = case.message.as_deref().map(crate::model::headline) {
                let short: String = message.chars().take(160).collect();
                out.insert(case.id.clone(), short);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::group_of;

    #[test]
    fn cases_group_under_their_test_and_never_under_their_file_path() {
        assert_eq!(
            group_of("tests.test_a::test_x[1-2]"),
            "tests.test_a::test_x"
        );
        assert_eq!(group_of("example.com/m::TestX/#14"), "example.com/m::TestX");
        assert_eq!(
            group_of("test/parse.test.ts::parse > /a/b,true"),
            "test/parse.test.ts::parse > "
        );
        assert_eq!(group_of("test/a.test.js::adds"), "test/a.test.js::adds");
    }
}
