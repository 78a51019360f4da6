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

mod trusted;

use std::collections::{BTreeMap, BTreeSet};

pub use trusted::Trusted;

use crate::config::Visibility;
use crate::model::{ChangedLines, CheckerIssue, RemovedLine, Severity, Trigger, TriggerType};

use super::markers::{normalise, same_line_edited};
use super::observation::{CheckResult, Observation};
use super::report::{Report, TestOutcome};

/// The dimension of every finding here.
pub const DIMENSION: &str = "integrity";

/// How a suppression's finding begins.
pub const SUPPRESSION: &str = "suppression added";

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
pub const EXPECTATION_CHANGED: &str = "had its expectation changed";

/// An integrity issue a person reading the summary or the comment is shown: everything
/// that asks for a revision, and the notes that ask a reviewer to confirm a behaviour change.
pub fn shown_to_reviewers(issue: &CheckerIssue) -> bool {
    issue.dimension == DIMENSION
        && (issue.severity.counts_for_revision() || issue.finding.contains(EXPECTATION_CHANGED))
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
    /// A BLOCKER: the iteration is a violation of the harness.
    pub fn is_violation(&self) -> bool {
        self.issue.severity == Severity::Blocker
    }
}

/// What one test is in one observation.
#[derive(Debug, Clone)]
struct Entry {
    outcome: TestOutcome,
    file: Option<String>,
    line: Option<u32>,
}

/// `(check, test id)` → entry.
type Inventory = BTreeMap<(String, String), Entry>;

fn inventory(observation: &Observation) -> Inventory {
    let mut out = Inventory::new();
    for check in &observation.checks {
        if check.visibility == Visibility::AggregateOnly {
            continue;
        }
        let CheckResult::Report {
            report: Report::Tests(tests),
            ..
        } = &check.result
        else {
            continue;
        };
        for t in &tests.passing {
            let entry = Entry {
                outcome: TestOutcome::Passed,
                file: t.file.clone(),
                line: t.line,
            };
            out.insert((check.name.clone(), t.id.clone()), entry);
        }
        for c in &tests.problems {
            let entry = Entry {
                outcome: c.outcome,
                file: c.file.clone(),
                line: c.line,
            };
            out.insert((check.name.clone(), c.id.clone()), entry);
        }
    }
    out
}

/// The checks whose tests `observation` inventoried.
fn inventoried_checks(observation: &Observation) -> BTreeSet<&str> {
    observation
        .checks
        .iter()
        .filter(|c| c.visibility != Visibility::AggregateOnly)
        .filter(|c| {
            matches!(
                c.result,
                CheckResult::Report {
                    report: Report::Tests(_),
                    ..
                }
            )
        })
        .map(|c| c.name.as_str())
        .collect()
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
        let earlier = input.earlier.observations;
        for verdict in trusted::findings(trusted, input.head, input.base, earlier) {
            let key = acceptance_key(&verdict.issue);
            let said = findings
                .iter()
                .filter(|f| acceptance_key(&f.issue) == key)
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
    findings.extend(loosened_tools(input.changed));
    findings.extend(edited_check_files(input.changed, input.check_files));
    collapse_cases(findings)
}

/// The same finding about several cases of one test (a parametrised test's rows, a Go
/// table's subtests) is one finding with a count: "test m::t[1-1] was removed …; and 17
/// more case(s) of `m::t`", placed at the first.
fn collapse_cases(findings: Vec<Finding>) -> Vec<Finding> {
    let mut out: Vec<Finding> = Vec::new();
    let mut cases: Vec<usize> = Vec::new();
    let mut seen: std::collections::HashMap<(Severity, String, String), usize> =
        std::collections::HashMap::new();
    for f in findings {
        let key = acceptance_key(&f.issue);
        let grouped = key.strip_prefix("test ").and_then(|id| {
            let group = trusted::group_of(id);
            let rest = f.issue.finding.get(key.len()..)?;
            (group != id && !rest.contains(" more case(s) of "))
                .then(|| (f.issue.severity, group.to_string(), rest.to_string()))
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
        let note = format!("; and {more} more case(s) of `{group}`");
        f.issue.finding.push_str(&note);
        if let Some(trigger) = &mut f.trigger {
            trigger.details.push_str(&note);
        }
    }
    out
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
            ))
        })
        .collect()
}

fn tests(input: &Input) -> Vec<Finding> {
    let head = inventory(input.head);
    let judged = inventoried_checks(input.head);
    // Every inventory before this iteration, oldest first: the base, then the earlier
    // iterations.
    let chain: Vec<Inventory> = input
        .base
        .map(inventory)
        .into_iter()
        .chain(input.earlier.observations.iter().map(|o| inventory(o)))
        .collect();
    let Some(reference) = chain.last() else {
        return Vec::new();
    };
    // This iteration's own step: from the previous iteration, or from the base.
    let step = match input.earlier.since_previous {
        Some(since) if !input.earlier.observations.is_empty() => since,
        _ => input.changed,
    };
    let errored: Vec<(&(String, String), &Entry)> = head
        .iter()
        .filter(|(_, e)| e.outcome == TestOutcome::Errored)
        .collect();
    let mut appeared: Vec<&(String, String)> = head
        .keys()
        .filter(|k| !reference.contains_key(*k))
        .collect();
    let removed_defs = removed_definitions(step, input.is_test);
    let mut findings = Vec::new();
    let mut flagged: BTreeSet<&(String, String)> = BTreeSet::new();
    for (key, entry) in reference {
        if !judged.contains(key.0.as_str()) {
            continue;
        }
        let (check, id) = (&key.0, &key.1);
        // Failing when it last ran (a skip in between does not run it): putting it away
        // hides a failure.
        let was_failing = last_run(&chain, key).is_some_and(|e| failed(e.outcome));
        match head.get(key) {
            Some(now) if now.outcome == TestOutcome::Skipped => {
                if entry.outcome != TestOutcome::Skipped {
                    flagged.insert(key);
                    findings.push(skipped(check, id, now, was_failing));
                }
            }
            Some(_) => {}
            None => {
                if errored.iter().any(|(k, e)| shadows(k, e, key, entry)) {
                    continue;
                }
                if let Some(i) = successor(&appeared, key, entry, &head, was_failing) {
                    appeared.remove(i);
                    continue;
                }
                flagged.insert(key);
                // On the base under this name, or under another before a move.
                let in_base = input.base.is_some()
                    && chain.first().is_some_and(|b| {
                        b.keys().any(|k| k.0 == key.0 && leaf(&k.1) == leaf(&key.1))
                    });
                findings.extend(vanished(
                    step,
                    input,
                    key,
                    entry,
                    was_failing,
                    in_base,
                    &removed_defs,
                ));
            }
        }
    }
    findings.extend(still_away(&chain, &head, &judged, &flagged));
    if !input.earlier.observations.is_empty() {
        findings.extend(rewritten(input, &head, &chain));
    }
    findings
}

/// The test's latest outcome where it ran (not skipped), in `chain` (oldest first).
fn last_run<'i>(chain: &'i [Inventory], key: &(String, String)) -> Option<&'i Entry> {
    chain
        .iter()
        .rev()
        .filter_map(|inv| inv.get(key))
        .find(|e| e.outcome != TestOutcome::Skipped)
}

/// Failing tests an earlier iteration removed or skipped that have not run since: the
/// violation stands until the test is back.
fn still_away(
    chain: &[Inventory],
    head: &Inventory,
    judged: &BTreeSet<&str>,
    flagged: &BTreeSet<&(String, String)>,
) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    for (j, pair) in chain.windows(2).enumerate() {
        let (before, after) = (&pair[0], &pair[1]);
        for (key, entry) in before {
            let away = |inv: &Inventory| {
                inv.get(key)
                    .is_none_or(|e| e.outcome == TestOutcome::Skipped)
            };
            let renamed = |inv: &Inventory| {
                inv.keys()
                    .any(|k| k.0 == key.0 && k != key && leaf(&k.1) == leaf(&key.1))
            };
            if !failed(entry.outcome)
                || entry.outcome == TestOutcome::Errored
                || is_module_level(&key.1)
                || !judged.contains(key.0.as_str())
                || flagged.contains(key)
                || !away(after)
                || !away(head)
                || renamed(after)
                || chain[j + 1..].iter().any(|inv| {
                    inv.get(key)
                        .is_some_and(|e| e.outcome != TestOutcome::Skipped)
                })
                || !seen.insert(key.clone())
            {
                continue;
            }
            let id = &key.1;
            // Still skipped is the violation going on; absent, the iteration that removed
            // it was judged for it, and this one is asked to bring it back.
            let (severity, how) = match head.get(key) {
                Some(_) => (Severity::Blocker, "is still skipped"),
                None => (Severity::Warning, "has not run"),
            };
            out.push(finding(
                severity,
                format!(
                    "test {id} was failing and {how} since an earlier iteration of this task (check `{}`)",
                    key.0
                ),
                at(entry.file.as_deref(), entry.line, id),
                restore(id),
            ));
        }
    }
    out
}

/// Whether an errored case in the head (a file that failed to import, a package that did
/// not build) accounts for a test's absence.
fn shadows(errored: &(String, String), e: &Entry, missing: &(String, String), m: &Entry) -> bool {
    let prefix = |outer: &str, inner: &str| !outer.is_empty() && inner.starts_with(outer);
    // A module or package that failed to import or build (`tests.test_more`,
    // `example.com/m/pkg`): pytest stops collecting altogether, Go runs none of its tests.
    let module_level = is_module_level(&errored.1);
    errored.0 == missing.0
        && (module_level
            || prefix(&errored.1, &missing.1)
            || prefix(container(&errored.1), &missing.1)
            || (e.file.is_some() && e.file == m.file))
}

/// Whether an id names a module, package or file rather than a test (`tests.test_more`,
/// `example.com/m/pkg`, `test/any.js`): what a runner reports when it cannot import, build
/// or load it.
fn is_module_level(id: &str) -> bool {
    !id.contains("::") && !id.contains(" > ") && !id.contains(' ') && id.contains(['.', '/'])
}

/// A new test in the head that takes the missing one's place: the same name elsewhere (a
/// move), or, for a test that was not failing, a new one in the same file or module (a
/// rename).
fn successor(
    appeared: &[&(String, String)],
    missing: &(String, String),
    entry: &Entry,
    head: &Inventory,
    was_failing: bool,
) -> Option<usize> {
    let name = leaf(&missing.1);
    let moved = appeared
        .iter()
        .position(|k| k.0 == missing.0 && leaf(&k.1) == name);
    moved.or_else(|| {
        (!was_failing)
            .then(|| {
                appeared.iter().position(|k| {
                    k.0 == missing.0
                        && (container(&k.1) == container(&missing.1)
                            || (entry.file.is_some()
                                && head.get(*k).and_then(|e| e.file.as_ref())
                                    == entry.file.as_ref()))
                })
            })
            .flatten()
    })
}

/// The test's own name: the last part of its id (`tests/a.py::test_x[1]` → `test_x`,
/// `suite > adds` → `adds`, `pkg::TestX/case` → `TestX`).
fn leaf(id: &str) -> &str {
    let id = id.rsplit("::").next().unwrap_or(id);
    let id = id.rsplit(" > ").next().unwrap_or(id);
    // `test_x[1-2]` is `test_x`; a name that starts with a bracket (`["a","b"]`) is whole.
    let id = match id.split_once('[') {
        Some((name, _)) if !name.trim().is_empty() => name,
        _ => id,
    };
    let id = match id.split_once('/') {
        Some((function, _)) if function.starts_with("Test") => function,
        _ => id,
    };
    id.trim()
}

/// The id without its own name: the module, class, file or suite it is in.
fn container(id: &str) -> &str {
    let name = leaf(id);
    match id.rfind(name) {
        Some(at) if at > 0 => id[..at].trim_end_matches([':', '.', ' ', '>']),
        _ => "",
    }
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
        },
        trigger,
    }
}

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

fn skipped(check: &str, id: &str, now: &Entry, was_failing: bool) -> Finding {
    let why = if was_failing {
        "it was failing when it last ran"
    } else {
        "it ran before this change"
    };
    finding(
        severity_for(was_failing),
        format!("test {id} is newly skipped in check `{check}`: {why}, and a skipped test proves nothing"),
        at(now.file.as_deref(), now.line, id),
        restore(id),
    )
}

/// A test that no longer runs and has no successor.
fn vanished(
    changed: &ChangedLines,
    input: &Input,
    key: &(String, String),
    entry: &Entry,
    was_failing: bool,
    in_base: bool,
    removed_defs: &BTreeSet<String>,
) -> Option<Finding> {
    let (check, id) = (&key.0, &key.1);
    let name = leaf(id);
    let body = removed_body(changed, name, input.is_test);
    let Some((file, line, body)) = body else {
        // Its definition is still there: something stopped collecting it.
        let Some((file, line, text)) = deselection(changed, input.head_source) else {
            if entry.outcome == TestOutcome::Errored || is_module_level(id) {
                // A package that did not build, a module that did not import: fixed.
                return None;
            }
            // Nothing in the change explains it (a parametrised id that changed, a
            // generated test, a test file renamed out of the runner's patterns): a
            // failing test is asked about, a passing one noted.
            return Some(finding(
                if was_failing {
                    Severity::Warning
                } else {
                    Severity::Info
                },
                format!("test {id} ran before and no longer runs in check `{check}`; the change neither removed it nor deselected it"),
                at(entry.file.as_deref(), entry.line, id),
                "nothing to do, if that is intended".into(),
            ));
        };
        return Some(finding(
            severity_for(was_failing),
            format!(
                "test {id} is deselected from check `{check}`: it ran before and is no longer collected; the change edited `{}` at {file}:{line}",
                text.trim()
            ),
            format!("{file}:{line}"),
            restore(id),
        ));
    };
    if let Some(code) = body
        .iter()
        .skip(1)
        .find_map(|l| removed_defs.iter().find(|d| *d != name && mentions(l, d)))
    {
        // Added by the task and gone again with its code: nothing of it is left to note.
        if !in_base {
            return None;
        }
        return Some(finding(
            Severity::Info,
            format!("test {id} was removed together with `{code}`, the code it tested"),
            format!("{file}:{line}"),
            "nothing to do, if the code is meant to go".into(),
        ));
    }
    let why = if was_failing {
        "it was failing when it last ran"
    } else {
        "no test took its place"
    };
    Some(finding(
        severity_for(was_failing),
        format!("test {id} was removed from check `{check}`: {why}"),
        format!("{file}:{line}"),
        restore(id),
    ))
}

/// Whether `line` uses the identifier `name` (not as part of a longer one).
fn mentions(line: &str, name: &str) -> bool {
    line.match_indices(name).any(|(at, _)| {
        let before = line[..at].chars().next_back();
        let after = line[at + name.len()..].chars().next();
        let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        !ident(before) && !ident(after)
    })
}

/// Where the change removed the definition of the test `name` (file and old line) and the
/// removed lines of its body, up to the next removed definition.
fn removed_body<'c>(
    changed: &'c ChangedLines,
    name: &str,
    is_test: &dyn Fn(&str) -> bool,
) -> Option<(&'c str, u32, Vec<&'c str>)> {
    // Test files first: a test defined in a source file (Rust's `mod tests`) is found next.
    let mut files: Vec<(&String, _)> = changed.removed.iter().collect();
    files.sort_by_key(|(path, _)| !is_test(path));
    for (path, lines) in files {
        let Some(start) = lines.iter().position(|l| {
            definition_name(&l.text) == Some(name)
                || (is_test_opener(&l.text) && l.text.contains(name))
        }) else {
            continue;
        };
        let body = lines[start..]
            .iter()
            .enumerate()
            .take_while(|(i, l)| {
                *i == 0 || (definition_name(&l.text).is_none() && !is_test_opener(&l.text))
            })
            .map(|(_, l)| l.text.as_str())
            .collect();
        return Some((path.as_str(), lines[start].line, body));
    }
    None
}

/// The name a line defines, if it opens a definition: `def x(`, `fn x(`, `func X(`,
/// `function x(`, `class X`, `const x =`.
fn definition_name(line: &str) -> Option<&str> {
    let t = line.trim_start();
    let t = t
        .trim_start_matches("pub(crate) ")
        .trim_start_matches("pub ")
        .trim_start_matches("export ")
        .trim_start_matches("async ")
        .trim_start_matches("default ");
    for keyword in [
        "def ",
        "fn ",
        "func ",
        "function ",
        "class ",
        "const ",
        "let ",
    ] {
        if let Some(rest) = t.strip_prefix(keyword) {
            // A Go method: `func (r *T) Name(`.
            let rest = if keyword == "func " && rest.starts_with('(') {
                rest.split_once(") ").map_or(rest, |(_, r)| r)
            } else {
                rest
            };
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            return (end > 0).then(|| &rest[..end]);
        }
    }
    None
}

/// A JS test opener: `it(`, `test(`, `it.only(` ….
fn is_test_opener(line: &str) -> bool {
    let t = line.trim_start();
    ["it(", "test(", "it.", "test.", "t.Run("]
        .iter()
        .any(|o| t.starts_with(o))
}

/// Names of functions, classes and constants the change removed from non-test source and
/// did not define again.
fn removed_definitions(changed: &ChangedLines, is_test: &dyn Fn(&str) -> bool) -> BTreeSet<String> {
    let added: BTreeSet<&str> = changed
        .iter()
        .filter_map(|(_, l)| definition_name(&l.text))
        .collect();
    changed
        .removed
        .iter()
        .filter(|(path, _)| !is_test(path))
        .flat_map(|(_, lines)| lines.iter())
        .filter_map(|l| definition_name(&l.text))
        .filter(|name| !added.contains(name) && name.len() > 2)
        .map(str::to_string)
        .collect()
}

/// Runner configuration files, by name.
const RUNNER_CONFIG: [&str; 14] = [
    "conftest.py",
    "pytest.ini",
    "pyproject.toml",
    "setup.cfg",
    "tox.ini",
    "Cargo.toml",
    "package.json",
    "jest.config.js",
    "jest.config.ts",
    "vitest.config.ts",
    "vitest.config.js",
    "vitest.config.mts",
    "vite.config.ts",
    ".mocharc.json",
];

/// What in a line stops tests from being collected.
const DESELECTING: [&str; 16] = [
    "collect_ignore",
    "pytest_collection_modifyitems",
    "--deselect",
    "--ignore",
    "-k ",
    "testpaths",
    "python_files",
    "exclude",
    "testPathIgnorePatterns",
    "testMatch",
    "include",
    ".only(",
    "cfg(any())",
    "//go:build",
    "// +build",
    "test = false",
];

/// The first added line that deselects tests: in runner configuration, or a build
/// condition or `.only` anywhere.
fn deselection(
    changed: &ChangedLines,
    head_source: &dyn Fn(&str) -> Option<String>,
) -> Option<(String, u32, String)> {
    changed.iter().find_map(|(path, l)| {
        if path.ends_with(".rs") && gates_a_rust_test(path, l, head_source) {
            return Some((path.to_string(), l.line, l.text.clone()));
        }
        let name = path.rsplit('/').next().unwrap_or(path);
        let config = RUNNER_CONFIG.contains(&name);
        let anywhere = [
            ".only(",
            "cfg(any())",
            "//go:build",
            "// +build",
            "collect_ignore",
        ];
        let hit = if config {
            DESELECTING.iter().any(|d| l.text.contains(d))
        } else {
            anywhere.iter().any(|d| l.text.contains(d))
        };
        hit.then(|| (path.to_string(), l.line, l.text.clone()))
    })
}

/// An added `#[cfg(…)]` (a feature, a target: not `cfg(test)`) right above a Rust test's
/// `#[test]`: the test is compiled out.
fn gates_a_rust_test(
    path: &str,
    l: &crate::model::AddedLine,
    head_source: &dyn Fn(&str) -> Option<String>,
) -> bool {
    let text = l.text.trim();
    if !text.starts_with("#[cfg(") || text.contains("cfg(test)") {
        return false;
    }
    let Some(source) = head_source(path) else {
        return false;
    };
    source
        .lines()
        .skip(l.line as usize)
        .take(4)
        .map(str::trim)
        .take_while(|t| t.starts_with("#[") || t.starts_with("//"))
        .any(|t| t == "#[test]" || t.ends_with("::test]"))
}

/// An added `#[should_panic]` right above the test `name` in HEAD's `file`: a failing test
/// made to pass by expecting it to fail.
fn inverted_expectation(
    input: &Input,
    since: &ChangedLines,
    file: &str,
    name: &str,
) -> Option<RemovedLine> {
    let added = since.files.get(file)?;
    let source = (input.head_source)(file)?;
    added
        .iter()
        .filter(|l| l.text.trim_start().starts_with("#[should_panic"))
        .find(|l| {
            source
                .lines()
                .skip(l.line as usize)
                .take(6)
                .map(str::trim)
                .find(|t| !t.starts_with("#[") && !t.starts_with("//"))
                .is_some_and(|t| definition_name(t) == Some(name))
        })
        .map(|l| RemovedLine {
            line: l.line,
            text: l.text.clone(),
        })
}

/// Tests that failed when they last ran and pass now, while the change since the previous
/// iteration edited their own lines: from the definition to the failing assertion, or, for a
/// test the previous iteration skipped, its whole definition there.
fn rewritten(input: &Input, head: &Inventory, chain: &[Inventory]) -> Vec<Finding> {
    let (Some(previous), Some(since)) = (chain.last(), input.earlier.since_previous) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (key, now) in head {
        if now.outcome != TestOutcome::Passed {
            continue;
        }
        let Some(before) = previous.get(key) else {
            continue;
        };
        let (failing, was_skipped) = match before.outcome {
            o if failed(o) => (before, false),
            TestOutcome::Skipped => match last_run(chain, key) {
                Some(e) if failed(e.outcome) => (e, true),
                _ => continue,
            },
            _ => continue,
        };
        let (Some(file), Some(line)) = (failing.file.as_deref(), failing.line) else {
            continue;
        };
        let failure = Failure {
            id: &key.1,
            file,
            line,
            was_skipped,
        };
        let source = (input.earlier.previous_source)(file);
        let added_marker;
        let edited = match edited_in_test(&failure, source.as_deref(), since) {
            Some(edited) => edited,
            None => match inverted_expectation(input, since, file, leaf(failure.id)) {
                Some(marker) => {
                    added_marker = marker;
                    &added_marker
                }
                None => continue,
            },
        };
        let place = at(
            now.file.as_deref().or(Some(file)),
            now.line.or(Some(line)),
            failure.id,
        );
        let when = if was_skipped {
            "it failed before the previous iteration skipped it"
        } else {
            "it failed in the previous iteration"
        };
        out.push(rewritten_finding(
            &failure,
            &format!("was rewritten to pass: {when}"),
            edited,
            place,
        ));
    }
    out
}

/// A test that failed earlier in the task, where it failed.
struct Failure<'a> {
    id: &'a str,
    file: &'a str,
    line: u32,
    /// The previous iteration skipped it (it failed before that).
    was_skipped: bool,
}

/// The first line of `failure`'s own test that the change since the previous iteration
/// removed or replaced: from its definition (found in `source`, the previous version of its
/// file) to two lines past the failing one, or its whole definition when it was skipped.
fn edited_in_test<'c>(
    failure: &Failure,
    source: Option<&str>,
    since: &'c ChangedLines,
) -> Option<&'c RemovedLine> {
    let removed = since.removed.get(failure.file)?;
    let name = leaf(failure.id);
    let span = if failure.was_skipped {
        // Its lines moved with the skip: the whole definition, found by name.
        definition_span(source?, name)?
    } else {
        let start = source
            .and_then(|text| definition_line(text, name, failure.line))
            .unwrap_or(failure.line.saturating_sub(2));
        start..=failure.line.saturating_add(2)
    };
    // Taking the skip off is no rewrite: the marker's line is not the test's expectation.
    removed
        .iter()
        .filter(|l| !(failure.was_skipped && SKIP_MARKERS.iter().any(|m| l.text.contains(m))))
        .find(|l| span.contains(&l.line))
}

fn rewritten_finding(
    failure: &Failure,
    what: &str,
    edited: &RemovedLine,
    place: String,
) -> Finding {
    let id = failure.id;
    finding(
        Severity::Blocker,
        format!(
            "test {id} {what}, and this one edited its own lines (`{}` at {}:{})",
            edited.text.trim(),
            failure.file,
            edited.line
        ),
        place,
        format!(
            "restore `{id}` as it was and fix the code it tests; do not skip, delete or \
             rewrite it (a person who intends the new expectation runs `itergate accept`)"
        ),
    )
}

/// A failing test `previous` (a pull request's earlier record) names, with its file and
/// line, that `head` (its next record) no longer fails and says nothing about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoneFailure {
    pub id: String,
    pub file: String,
    pub line: u32,
}

/// The tests `previous` names as failing that `head` neither fails nor has an integrity
/// finding about, when `head`'s tests ran: what a change since then may have rewritten.
/// For the side that publishes a record scored elsewhere (a fork's job, the App), which has
/// the previous record and can fetch the diff, not the previous test reports.
pub fn gone_failures(
    previous: &crate::model::IterationRecord,
    head: &crate::model::IterationRecord,
) -> Vec<GoneFailure> {
    if previous.commit == head.commit || head.scores.tests_passing.is_none() {
        return Vec::new();
    }
    let named = |id: &str| {
        head.issues.iter().any(|i| {
            crate::engine::grouping::failed_test(i).is_some_and(|(other, _)| other == id)
                || (i.dimension == DIMENSION && acceptance_key(i) == format!("test {id}"))
        })
    };
    let mut out: Vec<GoneFailure> = previous
        .issues
        .iter()
        .filter_map(|issue| {
            let (id, _) = crate::engine::grouping::failed_test(issue)?;
            let (file, line) = issue.affected_field.as_deref()?.rsplit_once(':')?;
            Some(GoneFailure {
                id: id.to_string(),
                file: file.to_string(),
                line: line.parse().ok()?,
            })
        })
        .filter(|gone| !named(&gone.id))
        .collect();
    out.dedup();
    out
}

/// The findings for `gone` failures whose own lines the change since the previous record
/// (`since`, with `previous_source` the previous head's version of a file) edited.
pub fn rewritten_since_record(
    gone: &[GoneFailure],
    since: &ChangedLines,
    previous_source: &dyn Fn(&str) -> Option<String>,
) -> Vec<Finding> {
    gone.iter()
        .filter_map(|g| {
            let failure = Failure {
                id: &g.id,
                file: &g.file,
                line: g.line,
                was_skipped: false,
            };
            let source = previous_source(&g.file);
            let edited = edited_in_test(&failure, source.as_deref(), since)?;
            Some(rewritten_finding(
                &failure,
                "was rewritten or removed to pass: it failed in the previous iteration and fails no more",
                edited,
                format!("{}:{}", g.file, g.line),
            ))
        })
        .collect()
}

/// The `gone` failures whose passing could not be confirmed from the change since the
/// previous record (`why`: the compare failed, the new head is not a descendant, GitHub left
/// out the file's patch). A WARNING each: not proven changed to pass, never an accept on
/// the record's word alone.
pub fn unverified_gone(gone: &[GoneFailure], why: &str) -> Vec<Finding> {
    gone.iter()
        .map(|g| {
            finding(
                Severity::Warning,
                format!(
                    "test {} failed in the previous iteration and this record no longer shows it failing, but the change since could not be compared ({why}): it is not known to pass",
                    g.id
                ),
                format!("{}:{}", g.file, g.line),
                format!(
                    "run `{}` again on this head, or a person confirms it (`/iterate accept`)",
                    g.id
                ),
            )
        })
        .collect()
}

/// The `gone` failures the change since the previous record skipped: a skip marker added
/// in the test's file, inside or just above the lines from its definition to its failure.
pub fn skipped_since_record(gone: &[GoneFailure], since: &ChangedLines) -> Vec<Finding> {
    gone.iter()
        .filter_map(|g| {
            let added = since.files.get(&g.file)?;
            let marker = added.iter().find(|l| {
                SKIP_MARKERS.iter().any(|m| l.text.contains(m))
                    && l.line + 40 >= g.line
                    && l.line <= g.line + 5
            })?;
            Some(finding(
                Severity::Blocker,
                format!(
                    "test {} is newly skipped: it failed in the previous iteration, and this change added `{}` at {}:{}",
                    g.id,
                    marker.text.trim(),
                    g.file,
                    marker.line
                ),
                format!("{}:{}", g.file, marker.line),
                restore(&g.id),
            ))
        })
        .collect()
}

/// The previous record failed tests and this one has no tests score at all: the tests
/// did not run, or did not report, which is not a pass.
pub fn missing_tests_score(
    previous: &crate::model::IterationRecord,
    head: &crate::model::IterationRecord,
) -> Option<Finding> {
    if previous.commit == head.commit || head.scores.tests_passing.is_some() {
        return None;
    }
    let failing = previous
        .issues
        .iter()
        .filter(|i| crate::engine::grouping::failed_test(i).is_some())
        .count();
    (failing > 0).then(|| {
        finding(
            Severity::Warning,
            format!(
                "the previous iteration failed {failing} test(s), and this record has no tests score: its tests did not run or did not report, which is not a pass"
            ),
            "tests".into(),
            "make the tests check run and write its report".into(),
        )
    })
}

/// `record` (scored elsewhere) with `findings` found since: their issues and triggers, and
/// VOID for a violation when the policy says so.
pub fn add_findings(
    record: &mut crate::model::IterationRecord,
    findings: Vec<Finding>,
    on_violation: crate::config::OnViolation,
) {
    for f in findings {
        if f.is_violation() {
            record.status = if on_violation == crate::config::OnViolation::Void {
                crate::model::Status::Void
            } else if record.status == crate::model::Status::Void {
                record.status
            } else {
                crate::model::Status::Fail
            };
        }
        record.issues.push(f.issue);
        record.triggers.extend(f.trigger);
    }
}

/// What marks a test skipped in its source.
const SKIP_MARKERS: [&str; 12] = [
    ".skip(",
    ".skip`",
    "skip:",
    "xit(",
    "xdescribe(",
    ".todo(",
    "@pytest.mark.skip",
    "@pytest.mark.xfail",
    "@unittest.skip",
    "#[ignore",
    "t.Skip",
    "pytest.skip(",
];

/// The lines (from 1) of the definition of the test `name` in `text`: from its first line to
/// the line before the next definition, at most 200 lines.
fn definition_span(text: &str, name: &str) -> Option<std::ops::RangeInclusive<u32>> {
    let lines: Vec<&str> = text.lines().collect();
    let opens = |l: &str| definition_name(l).is_some() || is_test_opener(l);
    let start = lines.iter().position(|l| mentions(l, name) && opens(l))?;
    let end = lines[start + 1..]
        .iter()
        .position(|l| opens(l))
        .map_or(lines.len(), |i| start + 1 + i)
        .min(start + 200);
    Some(start as u32 + 1..=end as u32)
}

/// The line (from 1) at or above `line` that defines the test `name`, within 300 lines.
fn definition_line(text: &str, name: &str, line: u32) -> Option<u32> {
    let lines: Vec<&str> = text.lines().collect();
    let last = (line as usize).min(lines.len());
    (last.saturating_sub(300)..last)
        .rev()
        .find(|&i| {
            mentions(lines[i], name)
                && (definition_name(lines[i]).is_some() || is_test_opener(lines[i]))
        })
        .map(|i| i as u32 + 1)
}

/// The words of a check's command that run each tool of [`SUPPRESSIONS`].
const TOOL_WORDS: [(&str, &[&str]); 11] = [
    ("ruff/flake8", &["ruff", "flake8"]),
    ("mypy", &["mypy"]),
    ("pyright", &["pyright"]),
    (
        "coverage",
        &["cov", "coverage", "coverprofile", "c8", "nyc", "tarpaulin"],
    ),
    ("pylint", &["pylint"]),
    ("eslint", &["eslint"]),
    ("tsc", &["tsc"]),
    ("rustc/clippy", &["cargo", "rustc", "clippy"]),
    ("golangci-lint", &["golangci"]),
    ("gosec", &["gosec", "golangci"]),
    ("staticcheck", &["staticcheck", "golangci"]),
];

/// Whether a check may run `tool`: a command names it, or a check's command cannot be
/// read that way (a package or shell script, `make`, a report read without a command).
fn tool_may_run(tool: &str, commands: &[Option<String>]) -> bool {
    let words = TOOL_WORDS
        .iter()
        .find(|(t, _)| *t == tool)
        .map_or(&[][..], |(_, w)| *w);
    commands.iter().any(|command| {
        let Some(command) = command else { return true };
        let opaque =
            !files_run_by(command).is_empty() || command.split_whitespace().any(|w| w == "make");
        opaque
            || command
                .split(|c: char| !c.is_ascii_alphanumeric())
                .any(|w| words.contains(&w))
    })
}

/// Comment markers that silence a tool, with where the rule's name follows.
const SUPPRESSIONS: [(&str, &str); 18] = [
    ("# noqa", "ruff/flake8"),
    ("# type: ignore", "mypy"),
    ("# pyright: ignore", "pyright"),
    ("# pragma: no cover", "coverage"),
    ("# pylint: disable", "pylint"),
    ("eslint-disable", "eslint"),
    ("@ts-ignore", "tsc"),
    ("@ts-expect-error", "tsc"),
    ("@ts-nocheck", "tsc"),
    ("istanbul ignore", "coverage"),
    ("c8 ignore", "coverage"),
    ("#[allow(", "rustc/clippy"),
    ("#![allow(", "rustc/clippy"),
    ("//nolint", "golangci-lint"),
    ("#nosec", "gosec"),
    ("// lint:ignore", "staticcheck"),
    ("//lint:ignore", "staticcheck"),
    ("//lint:file-ignore", "staticcheck"),
];

/// What a suppression silences: `E501` of `# noqa: E501`, `clippy::unwrap_used` of
/// `#[allow(clippy::unwrap_used)]`; "every rule" when it names none.
fn silenced(text: &str, marker: &str) -> String {
    let rest = &text[text.find(marker).map_or(0, |i| i + marker.len())..];
    let rest = rest.trim_start_matches([':', '=', ' ', '[', '(', '-']);
    let rest = rest
        .trim_start_matches("next-line")
        .trim_start_matches("line")
        .trim_start();
    let end = rest
        .find([']', ')', '*', '#'])
        .unwrap_or(rest.len())
        .min(120);
    let rules = rest[..end].trim().trim_end_matches(',').trim();
    if rules.is_empty() || rules.starts_with("//") {
        "every rule".into()
    } else {
        rules.to_string()
    }
}

/// (file, rule) of every lint finding the base or an earlier iteration of the task
/// reported: what a suppression must not silence, whatever reason it gives.
fn reported_findings(input: &Input) -> BTreeSet<(String, String)> {
    input
        .base
        .into_iter()
        .chain(input.earlier.observations.iter().copied())
        .flat_map(|o| &o.checks)
        .filter_map(|c| match &c.result {
            CheckResult::Report {
                report: Report::Lint(lint),
                ..
            } => Some(&lint.findings),
            _ => None,
        })
        .flatten()
        .filter_map(|f| Some((f.file.clone()?, f.rule.clone().unwrap_or_default())))
        .collect()
}

/// Whether a suppression gives its reason: on its own line (eslint's `-- why`,
/// `#[allow(…, reason = "…")]`, a comment after `# noqa: X` or `//nolint:x`, text after
/// `@ts-expect-error`) or in a comment line added right above it.
fn gives_reason(text: &str, marker: &str, above: Option<&str>) -> bool {
    let rest = &text[text.find(marker).map_or(0, |i| i + marker.len())..];
    let on_line = match marker {
        "eslint-disable" => rest
            .split_once(" -- ")
            .is_some_and(|(_, r)| !r.trim().is_empty()),
        "#[allow(" | "#![allow(" => rest.contains("reason"),
        // staticcheck's directive takes the checks, then the reason, as plain words.
        "//lint:ignore" | "//lint:file-ignore" | "// lint:ignore" => {
            rest.split_whitespace().count() >= 2
        }
        "@ts-expect-error" => {
            rest.trim_start_matches([':', ' ', '-'])
                .trim()
                .trim_end_matches("*/")
                .len()
                > 3
        }
        _ => {
            // `# noqa: E501  # the URL cannot be split`, `//nolint:errcheck // best effort`
            let after = rest.trim_start_matches([':', ' ']);
            let after = after.split_once([' ', '\t']).map_or("", |(_, a)| a).trim();
            after.len() > 3 && (after.starts_with('#') || after.starts_with("//"))
        }
    };
    let comment_above = above.is_some_and(|a| {
        let a = a.trim();
        let comment = ["//", "#", "/*", "*", "--"]
            .iter()
            .any(|c| a.starts_with(c) && !a.starts_with("#[") && !a.starts_with("#!["));
        comment && a.len() > 6 && !SUPPRESSIONS.iter().any(|(m, _)| a.contains(m))
    });
    on_line || comment_above
}

/// Suppressions added in changed lines. Each is a WARNING, unless it gives its reason
/// and silences nothing the base or an earlier iteration reported (a note then): a
/// careful reviewer reads a justified suppression, but never accepts one that puts a
/// finding the task was asked to fix out of sight.
/// Whether `line` (1-based) of a Rust source lies inside a `#[cfg(test)]` module (found by
/// its braces; a brace inside a string literal can mislead it, and then the suppression is
/// judged as in code: the stricter reading).
fn in_rust_test_module(source: &str, line: u32) -> bool {
    let lines: Vec<&str> = source.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        if !lines[i].trim_start().starts_with("#[cfg(test)]") {
            i += 1;
            continue;
        }
        let Some(start) = (i..lines.len().min(i + 6)).find(|&k| {
            let text = lines[k].trim_start();
            (text.contains("mod ") || text.starts_with("mod")) && text.contains('{')
        }) else {
            i += 1;
            continue;
        };
        let mut depth = 0i64;
        let mut end = lines.len() - 1;
        for (k, text) in lines.iter().enumerate().skip(start) {
            depth += text.matches('{').count() as i64 - text.matches('}').count() as i64;
            if depth <= 0 {
                end = k;
                break;
            }
        }
        let at = line as usize;
        if at > i && at <= end + 1 {
            return true;
        }
        i = end + 1;
    }
    false
}

fn suppressions(
    changed: &ChangedLines,
    is_test: &dyn Fn(&str) -> bool,
    reported: &BTreeSet<(String, String)>,
    silences_a_check: &dyn Fn(&str) -> bool,
    head_source: &dyn Fn(&str) -> Option<String>,
) -> Vec<Finding> {
    let mut out = Vec::new();
    for (path, added) in &changed.files {
        // Rust's attributes span lines: a lint added to an existing `#![allow(` list.
        // The file is read only for an added line that could be one.
        let source = std::cell::OnceCell::new();
        let source = || {
            source
                .get_or_init(|| path.ends_with(".rs").then(|| head_source(path)).flatten())
                .as_deref()
        };
        let added_at: BTreeSet<u32> = added.iter().map(|l| l.line).collect();
        let mut removed: Vec<String> = changed
            .removed
            .get(path)
            .into_iter()
            .flatten()
            .filter(|l| SUPPRESSIONS.iter().any(|(m, _)| l.text.contains(m)))
            .map(|l| normalise(&l.text))
            .collect();
        for (at, l) in added.iter().enumerate() {
            let found = SUPPRESSIONS
                .iter()
                .find(|(m, _)| l.text.contains(m))
                .map(|(m, tool)| (*m, *tool, silenced(&l.text, m)))
                .or_else(|| {
                    if !lint_name(l.text.trim()) {
                        return None;
                    }
                    let opener = source().and_then(|s| inside_allow(s, l.line, &added_at))?;
                    let rules = l.text.trim().trim_end_matches([',', ')', ']']).trim();
                    Some((opener, "rustc/clippy", rules.to_string()))
                });
            let Some((marker, tool, rules)) = found else {
                continue;
            };
            let text = normalise(&l.text);
            if let Some(i) = removed
                .iter()
                .position(|r| *r == text)
                .or_else(|| removed.iter().position(|r| same_line_edited(r, &text)))
            {
                removed.swap_remove(i);
                continue;
            }
            let silences_reported = reported.iter().any(|(file, rule)| {
                file == path
                    && (rules == "every rule"
                        || (!rule.is_empty()
                            && rules.split([',', ' ']).any(|r| {
                                !r.is_empty() && (rule.ends_with(r) || r.ends_with(rule.as_str()))
                            })))
            });
            let above = at
                .checked_sub(1)
                .map(|i| &added[i])
                .filter(|prev| prev.line + 1 == l.line)
                .map(|prev| prev.text.as_str());
            let justified = !silences_reported && gives_reason(&l.text, marker, above);
            // A tool no check runs measures nothing here: silencing it games nothing.
            let unjudged = !silences_a_check(tool);
            // Test code: a test file, or a Rust `#[cfg(test)]` module in a source file.
            let test_code =
                is_test(path) || source().is_some_and(|s| in_rust_test_module(s, l.line));
            let severity = if test_code || justified || unjudged {
                Severity::Info
            } else {
                Severity::Warning
            };
            let shown = marker.trim_start_matches("# ").trim_end_matches('(');
            let why = if silences_reported {
                ", which an earlier run reported"
            } else if justified {
                ", with its reason"
            } else if unjudged {
                ", which no check runs"
            } else {
                ""
            };
            out.push(finding(
                severity,
                format!(
                    "{SUPPRESSION}: `{shown}` silences {tool} ({rules}){why} at {path}:{}",
                    l.line
                ),
                format!("{path}:{}", l.line),
                "fix what the tool reports instead of silencing it, or say in the commit why it is wrong".into(),
            ));
        }
    }
    out
}

/// The `#[allow(` or `#![allow(` a lint name on `line` (1-based) of `source` continues,
/// when that attribute opened on an earlier line the change did not add (an added opener
/// is found on its own line).
fn inside_allow(source: &str, line: u32, added: &BTreeSet<u32>) -> Option<&'static str> {
    let lines: Vec<&str> = source.lines().collect();
    let index = usize::try_from(line).ok()?.checked_sub(1)?;
    let text = lines.get(index)?.trim();
    if !lint_name(text) {
        return None;
    }
    // Upwards through the list's other names to the line that opened it.
    for back in (index.saturating_sub(ALLOW_LIST_LINES)..index).rev() {
        let above = lines.get(back)?.trim();
        for opener in ["#![allow(", "#[allow("] {
            if above.starts_with(opener) && !above.contains(")]") {
                let opened_here = u32::try_from(back + 1).is_ok_and(|n| added.contains(&n));
                return (!opened_here).then_some(opener);
            }
        }
        if !(lint_name(above) || above.is_empty() || above.starts_with("//")) {
            return None;
        }
    }
    None
}

/// A line that is one lint's name in a list (`clippy::unwrap_used,`, `dead_code`).
fn lint_name(line: &str) -> bool {
    let name = line.trim_end_matches([',', ')', ']', ' ']);
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

/// How far above a lint name its attribute's opening line is looked for.
const ALLOW_LIST_LINES: usize = 200;

/// Tools' configuration files and what in an added line loosens them.
const TOOL_CONFIG: [(&str, &[&str]); 9] = [
    (
        "pyproject.toml",
        &[
            "ignore",
            "omit",
            "exclude_lines",
            "fail_under",
            "ignore_errors",
            "= false",
            "disable",
        ],
    ),
    (
        "setup.cfg",
        &[
            "ignore",
            "omit",
            "exclude_lines",
            "fail_under",
            "ignore_errors",
            "= False",
            "disable",
        ],
    ),
    ("ruff.toml", &["ignore", "exclude"]),
    (".coveragerc", &["omit", "exclude_lines", "fail_under"]),
    (
        "mypy.ini",
        &["ignore_errors", "= False", "ignore_missing_imports"],
    ),
    (
        "tsconfig.json",
        &[
            "\"strict\": false",
            "\"noImplicitAny\": false",
            "\"exclude\"",
        ],
    ),
    ("Cargo.toml", &["= \"allow\"", "allow"]),
    ("clippy.toml", &["allow"]),
    (".golangci.yml", &["disable", "exclude"]),
];

/// ESLint's configuration files (any of `eslint.config.*`, `.eslintrc*`).
fn is_eslint_config(name: &str) -> bool {
    name.starts_with("eslint.config.") || name.starts_with(".eslintrc")
}

fn loosened_tools(changed: &ChangedLines) -> Vec<Finding> {
    let mut out = Vec::new();
    for (path, l) in changed.iter() {
        let name = path.rsplit('/').next().unwrap_or(path);
        let loosens = if is_eslint_config(name) {
            ["\"off\"", "'off'", ": 0", "ignores"]
                .iter()
                .any(|t| l.text.contains(t))
        } else {
            TOOL_CONFIG
                .iter()
                .find(|(file, _)| *file == name)
                .is_some_and(|(_, tokens)| tokens.iter().any(|t| l.text.contains(t)))
        };
        let removed_same = changed
            .removed
            .get(path)
            .is_some_and(|r| r.iter().any(|x| normalise(&x.text) == normalise(&l.text)));
        if loosens && !removed_same {
            out.push(finding(
                Severity::Warning,
                format!(
                    "a tool's configuration was loosened: `{}` at {path}:{}",
                    l.text.trim(),
                    l.line
                ),
                format!("{path}:{}", l.line),
                "keep the tools' configuration as the base has it; fix what they report instead"
                    .into(),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
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
                "no test took its place; and 17 more case(s) of `tests.test_sq::test_sq`"
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

#[cfg(test)]
mod scenario_tests {
    use super::*;
    use crate::config::Visibility;
    use crate::model::{AddedLine, RemovedLine};
    use crate::signals::observation::CheckOutcome;
    use crate::signals::report::{TestRef, TestSummary};

    fn observed(ids: &[&str]) -> Observation {
        let mut tests = TestSummary::default();
        for id in ids {
            tests.passed += 1;
            tests.passing.push(TestRef::named(id.to_string()));
        }
        Observation {
            checks: vec![CheckOutcome {
                name: "tests".into(),
                visibility: Visibility::Full,
                void_on_violation: false,
                result: CheckResult::Report {
                    report: Report::Tests(tests),
                    exit_code: Some(0),
                },
            }],
            execution_time_ms: None,
            flaky: vec![],
        }
    }

    fn removed(lines: &[&str]) -> Vec<RemovedLine> {
        lines
            .iter()
            .enumerate()
            .map(|(i, t)| RemovedLine {
                line: i as u32 + 1,
                text: t.to_string(),
            })
            .collect()
    }

    #[test]
    fn a_test_removed_with_the_code_it_tested_is_a_note() {
        let base = observed(&["tests.test_core::test_add", "tests.test_core::test_sub"]);
        let previous = observed(&["tests.test_calc::test_add", "tests.test_calc::test_sub"]);
        let head = observed(&["tests.test_calc::test_add"]);
        let mut step = ChangedLines::default();
        step.files.insert(
            "tests/test_calc.py".into(),
            vec![AddedLine {
                line: 1,
                text: "from calc.core import add".into(),
            }],
        );
        step.removed.insert(
            "tests/test_calc.py".into(),
            removed(&[
                "from calc.core import add, sub",
                "",
                "",
                "def test_sub():",
                "    assert sub(3, 1) == 2",
            ]),
        );
        step.removed.insert(
            "calc/core.py".into(),
            removed(&["", "", "def sub(a, b):", "    return a - b"]),
        );
        let observations = [&previous];
        let earlier = Earlier {
            observations: &observations,
            since_previous: Some(&step),
            previous_source: &|_| None,
        };
        let found = check(&Input {
            head: &head,
            base: Some(&base),
            earlier: &earlier,
            changed: &step,
            is_test: &|p: &str| p.starts_with("tests/"),
            check_files: &[],
            check_commands: &[None],
            head_source: &no_source,
            trusted: None,
        });
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].issue.severity, Severity::Info);
        assert!(found[0]
            .issue
            .finding
            .contains("removed together with `sub`"));
    }

    fn lint_observed(file: &str, rule: &str) -> Observation {
        use crate::signals::report::{LintFinding, LintLevel, LintSummary};
        let mut lint = LintSummary::default();
        lint.findings.push(LintFinding {
            tool: "eslint".into(),
            rule: Some(rule.into()),
            level: LintLevel::Error,
            message: "'x' is assigned a value but never used.".into(),
            file: Some(file.into()),
            line: Some(3),
            column: Some(9),
            suggested_fix: None,
            context: None,
        });
        Observation {
            checks: vec![CheckOutcome {
                name: "lint".into(),
                visibility: Visibility::Full,
                void_on_violation: false,
                result: CheckResult::Report {
                    report: Report::Lint(lint),
                    exit_code: Some(1),
                },
            }],
            execution_time_ms: None,
            flaky: vec![],
        }
    }

    fn suppression_severity(lines: &[&str], previous: Option<&Observation>) -> Severity {
        let mut changed = ChangedLines::default();
        changed.files.insert(
            "lib/index.js".into(),
            lines
                .iter()
                .enumerate()
                .map(|(i, t)| AddedLine {
                    line: 10 + i as u32,
                    text: t.to_string(),
                })
                .collect(),
        );
        let head = observed(&[]);
        let observations: Vec<&Observation> = previous.into_iter().collect();
        let earlier = Earlier {
            observations: &observations,
            since_previous: None,
            previous_source: &|_| None,
        };
        let found = check(&Input {
            head: &head,
            base: None,
            earlier: &earlier,
            changed: &changed,
            is_test: &|p: &str| p.starts_with("test/"),
            check_files: &[],
            check_commands: &[None],
            head_source: &no_source,
            trusted: None,
        });
        assert_eq!(found.len(), 1, "{found:?}");
        found[0].issue.severity
    }

    #[test]
    fn a_suppression_with_its_reason_is_a_note_unless_it_silences_what_was_reported() {
        let bare = [
            "  // eslint-disable-next-line require-unicode-regexp",
            "  const re = /x/g;",
        ];
        assert_eq!(suppression_severity(&bare, None), Severity::Warning);
        let on_line = [
            "  // eslint-disable-next-line require-unicode-regexp -- 5x slower with u",
            "  const re = /x/g;",
        ];
        assert_eq!(suppression_severity(&on_line, None), Severity::Info);
        let above = [
            "  // A Unicode regexp gives identical results here, but is ~5x slower.",
            "  // eslint-disable-next-line require-unicode-regexp",
            "  const re = /x/g;",
        ];
        assert_eq!(suppression_severity(&above, None), Severity::Info);
        // The previous iteration reported the rule in that file: silencing it is no fix,
        // whatever the reason says.
        let reported = lint_observed("lib/index.js", "no-unused-vars");
        let gamed = [
            "  // The variable is kept for later use by callers.",
            "  // eslint-disable-next-line no-unused-vars",
            "  const x = 0;",
        ];
        assert_eq!(
            suppression_severity(&gamed, Some(&reported)),
            Severity::Warning
        );
        assert!(gives_reason(
            "#[allow(clippy::cast_possible_truncation, reason = \"checked above\")]",
            "#[allow(",
            None
        ));
        assert!(gives_reason(
            "x = long_url  # noqa: E501  # a URL cannot be split",
            "# noqa",
            None
        ));
        assert!(!gives_reason("import os  # noqa: F401", "# noqa", None));
        // A tool no check runs: silencing it hides nothing the checks measure.
        assert!(tool_may_run("mypy", &[Some("mypy --strict src".into())]));
        assert!(!tool_may_run(
            "mypy",
            &[
                Some("python -m pytest -q".into()),
                Some("ruff check .".into())
            ]
        ));
        assert!(tool_may_run("mypy", &[Some("npm run check".into())]));
        assert!(tool_may_run("coverage", &[Some("pytest --cov=src".into())]));
        assert!(tool_may_run(
            "rustc/clippy",
            &[Some("cargo clippy --all-targets".into())]
        ));
        assert!(!gives_reason(
            "  // eslint-disable-next-line no-console",
            "eslint-disable",
            Some("  // eslint-disable-next-line no-alert")
        ));
    }

    #[test]
    fn staticchecks_lint_ignore_is_a_suppression_and_its_reason_makes_it_a_note() {
        let bare = ["\t//lint:ignore SA1019", "\tx := old()"];
        assert_eq!(suppression_severity(&bare, None), Severity::Warning);
        let reasoned = [
            "\t//lint:ignore SA1019 the server only speaks the old API",
            "\tx := old()",
        ];
        assert_eq!(suppression_severity(&reasoned, None), Severity::Info);
        let file = ["//lint:file-ignore U1000 generated code"];
        assert_eq!(suppression_severity(&file, None), Severity::Info);
    }

    #[test]
    fn a_lint_added_to_an_existing_multi_line_allow_is_a_suppression() {
        let source = "#![allow(\n    clippy::module_name_repetitions,\n    clippy::unwrap_used,\n)]\n\n#![warn(\n    clippy::pedantic,\n)]\n\npub fn f() {}\n";
        let judge = |line: u32, text: &str, opener_added: bool| {
            let mut changed = ChangedLines::default();
            let mut lines = vec![AddedLine {
                line,
                text: text.to_string(),
            }];
            if opener_added {
                lines.insert(
                    0,
                    AddedLine {
                        line: 1,
                        text: "#![allow(".into(),
                    },
                );
            }
            changed.files.insert("src/lib.rs".into(), lines);
            let head = observed(&[]);
            let source_of = |path: &str| (path == "src/lib.rs").then(|| source.to_string());
            check(&Input {
                head: &head,
                base: None,
                earlier: &Earlier::NONE,
                changed: &changed,
                is_test: &|p: &str| p.starts_with("tests/"),
                check_files: &[],
                check_commands: &[None],
                head_source: &source_of,
                trusted: None,
            })
            .into_iter()
            .map(|f| (f.issue.severity, f.issue.finding))
            .collect::<Vec<_>>()
        };
        let found = judge(3, "    clippy::unwrap_used,", false);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].0, Severity::Warning);
        assert!(found[0].1.contains("(clippy::unwrap_used)"), "{found:?}");
        assert!(found[0].1.contains("src/lib.rs:3"), "{found:?}");
        // A lint added to a `#![warn(` list strengthens the checks: nothing to say.
        assert!(judge(7, "    clippy::pedantic,", false).is_empty());
        // Code is not a lint name, and an opener the change added is found on its own line.
        assert!(judge(10, "pub fn f() {}", false).is_empty());
        let with_opener = judge(3, "    clippy::unwrap_used,", true);
        assert_eq!(with_opener.len(), 1, "{with_opener:?}");
        assert!(with_opener[0].1.contains("src/lib.rs:1"), "{with_opener:?}");
    }
}
