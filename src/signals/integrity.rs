//! Tamper evidence: whether a change made its checks pass by changing the checks.
//!
//! From the test inventory of each observation (every test a report names, with its
//! outcome), compared with the base's and with the earlier iterations' of the task:
//!
//! - **removed**: a test that the base or an earlier iteration ran and this one does not,
//!   whose definition the change removed — unless it was moved or renamed (a new test with
//!   the same name elsewhere, or a new test in the same file or module while the old one
//!   was not failing), or removed together with the code it tested (the test's removed
//!   lines name a definition the change removed from non-test source: a note);
//! - **deselected**: such a test whose definition is still there, while the change edited
//!   runner configuration or a build condition that stops tests from being collected
//!   (`collect_ignore`, `--deselect`, `exclude`, `.only(`, `#[cfg(any())]`, `//go:build`
//!   …); the finding names the edited line. A test that vanished with no such edit is a
//!   note: nothing in the change explains it;
//! - **newly skipped**: a test that ran before and is skipped now;
//! - **rewritten to pass**: a test that failed in the previous iteration and passes now,
//!   while the change since then edited its own lines (from its definition to the failing
//!   assertion).
//!
//! Each is an `integrity` issue. It is a violation (BLOCKER) when the test was failing
//! when it last ran (in the previous iterations, or on the base) — a failing test put out
//! of the way — and a WARNING
//! otherwise (a passing test removed or skipped without a word), except rewriting, which
//! only concerns failing tests. Tests of a check whose report shows a collection or build
//! error for their file or package are not judged: their absence is that error's.
//!
//! Also here: suppressions added in changed lines (`# noqa`, `#[allow(…)]`,
//! `// eslint-disable…`, `@ts-ignore` …), each a WARNING naming the rule silenced, and
//! edits that loosen a tool's own configuration. Holdout checks are never inventoried.
//!
//! Where each concept lives: `inventory` (what each observation ran and what vanished),
//! `edits` (deselection and rewriting), `trusted` (the verdict of the start's tests and
//! harness), `records` (the publishing side, from records alone), `suppressions`,
//! `loosening`; this file holds the policy: the findings' shape, acceptance, collapsing.

mod edits;
mod hard_coded;
mod inventory;
mod loosening;
mod records;
#[cfg(test)]
mod scenario_tests;
mod suppressions;
mod test_aware;
mod trusted;

use edits::*;
use hard_coded::hard_coded;
pub use hard_coded::{with_holdouts_failing, HARD_CODED};
use inventory::*;
use loosening::*;
pub use records::*;
use suppressions::*;
use test_aware::test_aware;
pub use test_aware::TEST_AWARE;

use std::collections::{BTreeMap, BTreeSet};

pub use trusted::Trusted;

use crate::config::Visibility;
use crate::model::{
    ChangedLines, CheckerIssue, FindingKind, RemovedLine, Severity, Trigger, TriggerType,
};

use super::markers::{normalise, same_line_edited};
use super::observation::{CheckResult, Observation};
use super::report::{Report, TestOutcome};

/// The dimension of every finding here.
pub const DIMENSION: &str = crate::model::INTEGRITY_DIMENSION;

/// How a suppression's finding begins.
pub const SUPPRESSION: &str = crate::model::SUPPRESSION;

/// The metric that counts the suppressions a change added.
pub const SUPPRESSIONS_METRIC: &str = "integrity.suppressions";

/// The task before this iteration.
pub struct Earlier<'a> {
    /// The earlier iterations' observations, oldest first.
    pub observations: &'a [&'a Observation],
    /// The change relative to the previous iteration, when there is one.
    pub since_previous: Option<&'a ChangedLines>,
    /// The previous iteration's version of a file, when it has one.
    pub previous_source: &'a dyn Fn(&str) -> Option<String>,
}

fn no_source(_: &str) -> Option<String> {
    None
}

impl Earlier<'static> {
    /// A first iteration, or a commit judged on its own.
    pub const NONE: Earlier<'static> = Earlier {
        observations: &[],
        since_previous: None,
        previous_source: &no_source,
    };
}

/// What is compared.
pub struct Input<'a> {
    pub head: &'a Observation,
    pub base: Option<&'a Observation>,
    pub earlier: &'a Earlier<'a>,
    /// The change relative to the base.
    pub changed: &'a ChangedLines,
    pub is_test: &'a dyn Fn(&str) -> bool,
    /// Files the checks run (`check`, path): their scripts, and `package.json` for a check
    /// that runs a package script.
    pub check_files: &'a [(String, String)],
    /// The checks' commands (`None` for a check that only reads a report).
    pub check_commands: &'a [Option<String>],
    /// The judged tree's version of a file: what an added line sits inside.
    pub head_source: &'a dyn Fn(&str) -> Option<String>,
    /// The iteration's code under the start's tests and harness, when the change touched
    /// them.
    pub trusted: Option<&'a Trusted<'a>>,
}

/// The files a check's command runs, from its words: relative paths to scripts
/// (`./check.sh`, `sh scripts/test.sh`, `python tools/run_tests.py`), and `package.json`
/// (or `Makefile`) when it runs a package script (`npm test`, `pnpm run lint`, `make`).
pub fn files_run_by(command: &str) -> Vec<String> {
    let mut out = Vec::new();
    let words: Vec<&str> = command
        .split(|c: char| c.is_whitespace() || matches!(c, ';' | '&' | '|' | '(' | ')'))
        .map(|w| w.trim_matches(['"', '\'']))
        .filter(|w| !w.is_empty())
        .collect();
    for (i, word) in words.iter().enumerate() {
        let script = [".sh", ".py", ".js", ".mjs", ".cjs", ".ts", ".bash"]
            .iter()
            .any(|ext| word.ends_with(ext));
        let relative = !word.starts_with(['-', '/', '$', '~']) && !word.contains("://");
        if relative && (script || word.starts_with("./")) && !word.contains('*') {
            out.push(word.trim_start_matches("./").to_string());
        }
        let runner = matches!(*word, "npm" | "pnpm" | "yarn" | "bun");
        if runner
            && words
                .get(i + 1)
                .is_some_and(|w| matches!(*w, "test" | "run" | "t"))
        {
            out.push("package.json".into());
        }
        if *word == "make" {
            out.push("Makefile".into());
        }
    }
    out.sort();
    out.dedup();
    out
}

/// One finding: the issue and, when it asks for a revision, its trigger.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    pub issue: CheckerIssue,
    pub trigger: Option<Trigger>,
}

/// What identifies a finding across iterations, for a person's acceptance to carry over:
/// a test's id for the findings about a test (their wording changes from "removed" to
/// "still missing"), the finding itself otherwise.
pub fn acceptance_key(issue: &CheckerIssue) -> String {
    if let Some(test) = issue.test() {
        return format!("test {test}");
    }
    if let (Some(kind), Some(subject)) = (issue.kind, issue.subject.as_deref()) {
        let at = issue.affected_field.as_deref().unwrap_or_default();
        return format!("{kind:?} {subject} at {at}");
    }
    let text = issue.finding.as_str();
    if let Some(rest) = text.strip_prefix("test ") {
        let end = [" was ", " is ", " ran ", " had "]
            .iter()
            .filter_map(|verb| rest.find(verb))
            .min();
        if let Some(end) = end {
            return format!("test {}", &rest[..end]);
        }
    }
    text.to_string()
}

/// What an "expectation changed" note says (a test that passed at the start, edited with
/// the code): INFO, but shown wherever a reviewer reads, never only in the record.
pub const EXPECTATION_CHANGED: &str = crate::model::EXPECTATION_CHANGED;

/// What a test that failed earlier in the task and now expects something else says: a
/// WARNING a person confirms (`itergate loop` stops for one).
pub const EXPECTATION_TO_CONFIRM: &str = crate::model::EXPECTATION_TO_CONFIRM;

/// An integrity issue a person reading the summary or the comment is shown: everything
/// that asks for a revision, and the notes that ask a reviewer to confirm a behaviour change.
pub fn shown_to_reviewers(issue: &CheckerIssue) -> bool {
    issue.dimension == DIMENSION
        && (issue.severity.counts_for_revision() || issue.is(FindingKind::ExpectationChanged))
}

/// How an accepted finding reads in the iterations after a person accepted it.
pub const ACCEPTED_NOTE: &str = " (accepted by a person earlier in this task)";

/// A record scored elsewhere (a pull request's CI) with the findings a person accepted on
/// an earlier iteration shown as accepted: an INFO note, no trigger, and no VOID when no
/// other violation is left (then it passes or fails on its other issues).
pub fn apply_acceptance(record: &mut crate::model::IterationRecord, accepted: &[String]) {
    if accepted.is_empty() {
        return;
    }
    let mut cleared = Vec::new();
    for issue in &mut record.issues {
        if issue.dimension == DIMENSION
            && issue.severity.counts_for_revision()
            && accepted.contains(&acceptance_key(issue))
        {
            cleared.push(first_sentence(&issue.finding));
            issue.severity = Severity::Info;
            issue.finding.push_str(ACCEPTED_NOTE);
        }
    }
    if cleared.is_empty() {
        return;
    }
    record
        .triggers
        .retain(|t| !(t.source == DIMENSION && cleared.contains(&t.details)));
    let violation_left = record
        .issues
        .iter()
        .any(|i| i.dimension == DIMENSION && i.severity == Severity::Blocker);
    if record.status == crate::model::Status::Void && !violation_left {
        record.status = if record
            .issues
            .iter()
            .any(|i| i.severity == Severity::Blocker)
        {
            crate::model::Status::Fail
        } else {
            crate::model::Status::Pass
        };
    }
}

impl Finding {
    /// The finding's kind and what it is about, as data.
    pub(crate) fn about(mut self, kind: FindingKind, subject: impl Into<String>) -> Finding {
        self.issue.kind = Some(kind);
        self.issue.subject = Some(subject.into());
        self
    }

    /// A BLOCKER: the iteration is a violation of the harness.
    pub fn is_violation(&self) -> bool {
        self.issue.severity == Severity::Blocker
    }
}

fn failed(outcome: TestOutcome) -> bool {
    matches!(outcome, TestOutcome::Failed | TestOutcome::Errored)
}

/// Every finding of the change.
pub fn check(input: &Input) -> Vec<Finding> {
    let mut findings = tests(input);
    if let Some(trusted) = input.trusted {
        // The verdict is the trusted run's; a line-based finding about the same test stays
        // when it says as much (it names the edited line), and gives way when it says less.
        let rank = |s: Severity| match s {
            Severity::Blocker => 2,
            Severity::Warning => 1,
            Severity::Info => 0,
        };
        // A line-based finding says as much when it names the edit: a deselecting line,
        // the test's own rewritten lines, its removed definition, or a skip in a file the
        // change edited. A skip that configuration elsewhere caused ("newly skipped" at
        // the test) says less than the verdict, which names the files the change edited.
        let names_the_edit = |f: &Finding| {
            let text = &f.issue.finding;
            let in_an_edited_file = f.issue.affected_field.as_deref().is_some_and(|at| {
                trusted
                    .edited
                    .iter()
                    .any(|file| at.starts_with(&format!("{file}:")))
            });
            text.contains("deselected")
                || text.contains("its own lines")
                || text.contains("was removed")
                || (text.contains("newly skipped") && in_an_edited_file)
        };
        let earlier = input.earlier.observations;
        for verdict in trusted::findings(trusted, input.head, input.base, earlier) {
            let key = acceptance_key(&verdict.issue);
            let said = findings
                .iter()
                .filter(|f| acceptance_key(&f.issue) == key && names_the_edit(f))
                .map(|f| rank(f.issue.severity))
                .max();
            match said {
                Some(said) if said >= rank(verdict.issue.severity) => {}
                _ => {
                    findings.retain(|f| acceptance_key(&f.issue) != key);
                    findings.push(verdict);
                }
            }
        }
    }
    let reported = reported_findings(input);
    let silences_a_check = |tool: &str| tool_may_run(tool, input.check_commands);
    findings.extend(suppressions(
        input.changed,
        input.is_test,
        &reported,
        &silences_a_check,
        input.head_source,
    ));
    findings.extend(test_aware(input.changed, input.is_test));
    findings.extend(hard_coded(input));
    findings.extend(loosened_tools(input.changed));
    findings.extend(edited_check_files(input.changed, input.check_files));
    collapse_cases(findings)
}

/// The same finding about several cases of one test (a parametrised test's rows, a Go
/// table's subtests) is one finding with a count: "test m::t[1-1] was removed …; the same
/// for 17 more cases of `m::t`", placed at the first. So are the tests one line of the
/// change deselects alike (a test class left out of Surefire's run): "…; the same for 16
/// more tests deselected by that line".
fn collapse_cases(findings: Vec<Finding>) -> Vec<Finding> {
    #[derive(PartialEq, Eq, Hash)]
    enum Group {
        Cases(String),
        DeselectedByOneLine,
    }
    let mut out: Vec<Finding> = Vec::new();
    let mut cases: Vec<usize> = Vec::new();
    let mut seen: std::collections::HashMap<(Severity, Group, String), usize> =
        std::collections::HashMap::new();
    for f in findings {
        let key = acceptance_key(&f.issue);
        let grouped = key.strip_prefix("test ").and_then(|id| {
            let rest = f.issue.finding.get(key.len()..)?;
            if rest.contains(MORE_CASES) {
                return None;
            }
            let group = trusted::group_of(id);
            if rest.starts_with(DESELECTED) {
                // The rest names the line: one line, one finding.
                return Some((
                    f.issue.severity,
                    Group::DeselectedByOneLine,
                    rest.to_string(),
                ));
            }
            (group != id).then(|| {
                let group = Group::Cases(group.to_string());
                (f.issue.severity, group, rest.to_string())
            })
        });
        match grouped {
            Some(k) => match seen.get(&k) {
                Some(&at) => cases[at] += 1,
                None => {
                    seen.insert(k, out.len());
                    cases.push(1);
                    out.push(f);
                }
            },
            None => {
                cases.push(1);
                out.push(f);
            }
        }
    }
    for ((_, group, _), at) in seen {
        let more = cases[at] - 1;
        if more == 0 {
            continue;
        }
        let f = &mut out[at];
        let note = match group {
            Group::Cases(group) => more_cases(more, &group),
            Group::DeselectedByOneLine => format!(
                "{MORE_CASES}{} deselected by that line",
                crate::model::counted(more, "more test")
            ),
        };
        f.issue.finding.push_str(&note);
        if let Some(trigger) = &mut f.trigger {
            trigger.details.push_str(&note);
        }
    }
    out
}

/// How a deselection finding goes on after its test's id.
pub(super) const DESELECTED: &str = " is deselected from check ";

/// How a finding about one case of a test says that `more` other cases of its `group` are
/// in the same state.
const MORE_CASES: &str = "; the same for ";

fn more_cases(more: usize, group: &str) -> String {
    format!(
        "{MORE_CASES}{} of `{group}`",
        crate::model::counted(more, "more case")
    )
}

/// The change edited a file a check runs: the judge's own script.
fn edited_check_files(changed: &ChangedLines, files: &[(String, String)]) -> Vec<Finding> {
    files
        .iter()
        .filter_map(|(check, path)| {
            let line = changed
                .files
                .get(path)
                .and_then(|l| l.first().map(|l| l.line))
                .or_else(|| changed.removed.get(path).and_then(|l| l.first().map(|l| l.line)))?;
            // A package script is judged by the edit: other keys of package.json change
            // with ordinary work.
            if path == "package.json" {
                let touches_scripts = changed
                    .files
                    .get(path)
                    .into_iter()
                    .flatten()
                    .map(|l| l.text.as_str())
                    .chain(changed.removed.get(path).into_iter().flatten().map(|l| l.text.as_str()))
                    .any(|t| ["\"test", "\"lint", "\"check", "\"typecheck"].iter().any(|k| t.trim_start().starts_with(k)));
                if !touches_scripts {
                    return None;
                }
            }
            Some(finding(
                Severity::Warning,
                format!(
                    "the change edited `{path}`, which check `{check}` runs: the judge's own script changed"
                ),
                format!("{path}:{line}"),
                "keep the checks' scripts as the base has them; fix the code they check instead".into(),
            ).about(FindingKind::HarnessEdited, path.as_str()))
        })
        .collect()
}

fn at(file: Option<&str>, line: Option<u32>, id: &str) -> String {
    match (file, line) {
        (Some(f), Some(l)) => format!("{f}:{l}"),
        (Some(f), None) => f.to_string(),
        _ => id.to_string(),
    }
}

fn finding(severity: Severity, finding: String, affected: String, fix: String) -> Finding {
    let trigger = (severity != Severity::Info).then(|| Trigger {
        kind: TriggerType::ValidationFailure,
        source: DIMENSION.into(),
        severity: if severity == Severity::Blocker {
            1.0
        } else {
            0.6
        },
        details: first_sentence(&finding),
        fixable: true,
    });
    Finding {
        issue: CheckerIssue {
            dimension: DIMENSION.into(),
            severity,
            finding,
            affected_field: Some(affected),
            suggested_fix: Some(fix),
            kind: None,
            subject: None,
        },
        trigger,
    }
}

/// What the environment's unexplained changes since the task's start make of an
/// observation: untrusted, a violation that names what changed
/// ([`crate::signals::environment`]), and says where the iteration was measured instead.
pub fn environment_changed(unsealed: &crate::signals::environment::Unsealed) -> Option<Finding> {
    let first = unsealed.changes.first()?;
    use crate::signals::environment::Measured;
    let measured = match &unsealed.measured {
        Some(Measured::Rebuilt(what)) => format!(
            "so the checks ran again in an environment itergate built for them ({what}): what they found is this code's"
        ),
        Some(Measured::Before) => {
            "and what the checks found is this tree's, from a run before it changed".to_string()
        }
        Some(Measured::Unmeasured(why)) => format!(
            "and {ENVIRONMENT_UNMEASURED} ({why}), so the checks' results are not this code's and a person decides"
        ),
        None => "so the checks' results are not this code's".to_string(),
    };
    Some(finding(
        Severity::Blocker,
        format!(
            "{ENVIRONMENT_CHANGED}: {}; no manifest or lockfile committed since the start explains it, {measured}",
            crate::signals::environment::describe(&unsealed.changes)
        ),
        first.key().split_once(": ").map_or(first.key(), |(_, place)| place).trim_matches('`').to_string(),
        "restore the environment the task started in (reinstall it from the lockfile, remove what was added); a dependency the work needs goes in the manifest or lockfile, committed. A person who made the change on purpose runs `itergate accept`".to_string(),
    ).about(
        if matches!(unsealed.measured, Some(Measured::Unmeasured(_))) {
            FindingKind::EnvironmentUnmeasured
        } else {
            FindingKind::EnvironmentChanged
        },
        first.key(),
    ))
}

/// The task's visible targets pass while its holdout checks still fail (`check`, passed,
/// run): the work fits the tests the agent could see, not the task. A violation, said in
/// aggregate only (seed 002).
pub fn fitted_to_visible_tests(holdouts: &[(String, u64, u64)]) -> Option<Finding> {
    let (first, _, _) = holdouts.first()?;
    let counts = holdouts
        .iter()
        .map(|(check, passed, run)| format!("holdout check `{check}`: {passed} of {run} passed"))
        .collect::<Vec<_>>()
        .join("; ");
    Some(finding(
        Severity::Blocker,
        format!("{FITTED}: the task's target tests pass, and {counts}"),
        first.clone(),
        "make the code do what the task asks for every input, not the visible tests' inputs; the holdout's tests are not shown".to_string(),
    ).about(FindingKind::FittedToVisibleTests, first.as_str()))
}

/// The first words of the finding [`fitted_to_visible_tests`] makes.
pub const FITTED: &str = crate::model::FITTED;

/// The first words of the finding [`environment_changed`] makes.
pub const ENVIRONMENT_CHANGED: &str = crate::model::ENVIRONMENT_CHANGED;

/// Its words when nothing could measure the iteration again.
pub const ENVIRONMENT_UNMEASURED: &str = crate::model::ENVIRONMENT_UNMEASURED;

fn first_sentence(text: &str) -> String {
    text.split(": ").next().unwrap_or(text).to_string()
}

fn restore(id: &str) -> String {
    format!(
        "restore `{id}` and fix the code it tests; do not skip, delete or rewrite it \
         (a person who intends the change runs `itergate accept`)"
    )
}

fn severity_for(was_failing: bool) -> Severity {
    if was_failing {
        Severity::Blocker
    } else {
        Severity::Warning
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_tests_one_line_deselects_alike_are_one_finding_the_failing_one_apart() {
        let deselected = |test: &str, severity: Severity| {
            super::finding(
                severity,
                format!(
                    "test ex.UtilTest::{test}{}`tests`: it ran before and is no longer collected; the change edited `<exclude>**/UtilTest.java</exclude>` at pom.xml:28",
                    super::DESELECTED
                ),
                "pom.xml:28".into(),
                "restore it".into(),
            )
        };
        let findings = vec![
            deselected("pads", Severity::Warning),
            deselected("concat", Severity::Blocker),
            deselected("joins", Severity::Warning),
            deselected("trims", Severity::Warning),
        ];
        let out = super::collapse_cases(findings);
        let said: Vec<(Severity, &str)> = out
            .iter()
            .map(|f| (f.issue.severity, f.issue.finding.as_str()))
            .collect();
        assert_eq!(said.len(), 2, "{said:#?}");
        assert!(
            said[0]
                .1
                .starts_with("test ex.UtilTest::pads is deselected")
                && said[0]
                    .1
                    .ends_with("at pom.xml:28; the same for 2 more tests deselected by that line"),
            "{said:#?}"
        );
        assert_eq!(said[1].0, Severity::Blocker);
        assert!(said[1].1.ends_with("at pom.xml:28"), "{said:#?}");
    }

    #[test]
    fn the_same_finding_about_cases_of_one_test_is_one_finding_with_a_count() {
        let removed = |id: &str, line: u32| {
            super::finding(
                Severity::Warning,
                format!("test {id} was removed from check `tests`: no test took its place"),
                format!("tests/test_sq.py:{line}"),
                "restore it".into(),
            )
        };
        let mut findings: Vec<_> = (1..=18)
            .map(|n| removed(&format!("tests.test_sq::test_sq[{n}-{}]", n * n), 26))
            .collect();
        findings.push(removed("tests.test_sq::test_other", 40));
        let out = super::collapse_cases(findings);
        assert_eq!(out.len(), 2, "{out:#?}");
        assert!(
            out[0].issue.finding.ends_with(
                "no test took its place; the same for 17 more cases of `tests.test_sq::test_sq`"
            ),
            "{}",
            out[0].issue.finding
        );
        assert!(out[0]
            .trigger
            .as_ref()
            .expect("a trigger")
            .details
            .contains("17 more"));
        assert_eq!(
            out[1].issue.finding,
            "test tests.test_sq::test_other was removed from check `tests`: no test took its place"
        );
    }

    #[test]
    fn a_line_inside_a_cfg_test_module_is_test_code() {
        let source = "pub fn f() {\n    #[allow(unused)]\n    let x = 1;\n}\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n\n    #[allow(clippy::needless_return)]\n    fn helper() -> u32 {\n        return 1;\n    }\n}\n\npub fn g() {}\n";
        assert!(!super::in_rust_test_module(source, 2), "code");
        assert!(super::in_rust_test_module(source, 10), "the helper's allow");
        assert!(super::in_rust_test_module(source, 12));
        assert!(!super::in_rust_test_module(source, 16), "after the module");
    }

    use super::*;

    #[test]
    fn a_skip_added_above_a_gone_failure_is_a_violation_and_an_unverified_one_a_warning() {
        let gone = vec![GoneFailure {
            id: "tests/test_x.py::test_y".into(),
            file: "tests/test_x.py".into(),
            line: 12,
        }];
        let mut since = ChangedLines::default();
        since.files.insert(
            "tests/test_x.py".into(),
            vec![crate::model::AddedLine {
                line: 9,
                text: "@pytest.mark.skip(reason=\"later\")".into(),
            }],
        );
        let found = skipped_since_record(&gone, &since);
        assert_eq!(found.len(), 1);
        assert!(found[0].is_violation());
        assert!(
            found[0].issue.finding.contains("newly skipped"),
            "{:?}",
            found[0]
        );
        // Far below the test: another test's marker.
        since.files.get_mut("tests/test_x.py").unwrap()[0].line = 80;
        assert!(skipped_since_record(&gone, &since).is_empty());
        let unverified = unverified_gone(&gone, "a force push");
        assert_eq!(unverified[0].issue.severity, Severity::Warning);
        assert!(unverified[0].issue.finding.contains("a force push"));
    }

    #[test]
    fn leaves_and_containers_of_test_ids() {
        assert_eq!(leaf("tests/test_a.py::test_adds[1-2]"), "test_adds");
        assert_eq!(leaf("tests.test_a.CalcTest::test_adds"), "test_adds");
        assert_eq!(
            container("tests.test_a.CalcTest::test_adds"),
            "tests.test_a.CalcTest"
        );
        assert_eq!(leaf("src/a.test.ts::parse > handles urls"), "handles urls");
        assert_eq!(leaf("github.com/x/y::TestParse/empty"), "TestParse");
        assert_eq!(leaf("tests::adds"), "adds");
        assert_eq!(
            leaf("test/a.test.ts::joinURL > [\"a\",\"b\"]"),
            "[\"a\",\"b\"]"
        );
        assert!(is_module_level("tests.test_more"));
        assert!(is_module_level("test/any.js"));
        assert!(is_module_level("github.com/x/semver/v3"));
        assert!(!is_module_level("adds two numbers"));
        assert!(!is_module_level("tests.test_core::test_add"));
        assert_eq!(container("tests::adds"), "tests");
    }

    #[test]
    fn definitions_and_silenced_rules() {
        assert_eq!(
            definition_name("    def test_adds(self):"),
            Some("test_adds")
        );
        assert_eq!(definition_name("pub fn parse(s: &str)"), Some("parse"));
        assert_eq!(
            definition_name("func (v *Version) String() string {"),
            Some("String")
        );
        assert_eq!(
            definition_name("export function withQuery("),
            Some("withQuery")
        );
        assert_eq!(definition_name("x = 1"), None);
        assert_eq!(silenced("import os  # noqa: F401", "# noqa"), "F401");
        assert_eq!(silenced("x = y  # noqa", "# noqa"), "every rule");
        assert_eq!(
            silenced("#[allow(clippy::unwrap_used)]", "#[allow("),
            "clippy::unwrap_used"
        );
        assert_eq!(
            silenced("// eslint-disable-next-line no-console", "eslint-disable"),
            "no-console"
        );
        assert_eq!(
            silenced("x = f()  # type: ignore[arg-type]", "# type: ignore"),
            "arg-type"
        );
    }

    #[test]
    fn files_a_check_runs() {
        assert_eq!(files_run_by("./check.sh --all"), ["check.sh"]);
        assert_eq!(
            files_run_by("sh checks/tests.sh; status=$?; sh checks/coverage.sh; exit $status"),
            ["checks/coverage.sh", "checks/tests.sh"]
        );
        assert_eq!(files_run_by("npm test --silent"), ["package.json"]);
        assert_eq!(
            files_run_by("cargo test --no-fail-fast"),
            Vec::<String>::new()
        );
        assert_eq!(
            files_run_by("python -m pytest tests/ -q"),
            Vec::<String>::new()
        );
    }

    #[test]
    fn mentions_whole_identifiers_only() {
        assert!(mentions("    assert add(2, 2) == 4", "add"));
        assert!(!mentions("    assert adder(2) == 4", "add"));
    }
}
