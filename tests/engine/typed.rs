//! Findings are identified by their data (kind and subject), never by their words: every
//! finding and trigger of a history reworded, the engine decides the same — the
//! recommendation, why it stopped, the best iteration, the revision round, how failing
//! tests group, and which findings a person's acceptance covers.

use crate::common::{decide_default, rec};
use itergate::engine::grouping::group_issues;
use itergate::model::{CheckerIssue, FindingKind, IterationRecord, Severity, Status};

fn typed(
    dimension: &str,
    severity: Severity,
    kind: FindingKind,
    subject: &str,
    finding: &str,
    at: &str,
) -> CheckerIssue {
    CheckerIssue {
        dimension: dimension.into(),
        severity,
        finding: finding.into(),
        affected_field: Some(at.into()),
        suggested_fix: None,
        kind: Some(kind),
        subject: Some(subject.into()),
    }
}

fn failing_test(id: &str, message: &str) -> CheckerIssue {
    typed(
        "tests",
        Severity::Blocker,
        FindingKind::TestFailed,
        id,
        &format!("test {id} failed: {message}"),
        "src/lib.rs:10",
    )
}

/// A record with `issues`, their triggers as scoring makes them, VOID when one is an
/// integrity BLOCKER.
fn record(iteration: u32, q: f64, issues: Vec<CheckerIssue>) -> IterationRecord {
    let mut r = rec(iteration, q);
    for issue in &issues {
        if issue.severity.counts_for_revision() {
            r.triggers.push(itergate::model::Trigger {
                kind: itergate::model::TriggerType::ValidationFailure,
                source: issue.dimension.clone(),
                severity: if issue.severity == Severity::Blocker {
                    1.0
                } else {
                    0.6
                },
                details: issue
                    .finding
                    .split(": ")
                    .next()
                    .unwrap_or_default()
                    .to_string(),
                fixable: true,
            });
        }
    }
    let violation = issues
        .iter()
        .any(|i| i.dimension == "integrity" && i.severity == Severity::Blocker);
    r.status = if violation {
        r.quality = None;
        Status::Void
    } else if issues.iter().any(|i| i.severity == Severity::Blocker) {
        Status::Fail
    } else {
        Status::Pass
    };
    r.issues = issues;
    r
}

/// Every finding (and the trigger made from it) said in other words.
fn reworded(history: &[IterationRecord]) -> Vec<IterationRecord> {
    let say = |text: &str| format!("In other words, {}", text.replace("test ", "the case "));
    history
        .iter()
        .map(|r| {
            let mut r = r.clone();
            for i in &mut r.issues {
                i.finding = say(&i.finding);
            }
            for t in &mut r.triggers {
                t.details = say(&t.details);
            }
            r
        })
        .collect()
}

fn histories() -> Vec<(&'static str, Vec<IterationRecord>)> {
    let hard_coded = |n| {
        typed(
            "integrity",
            Severity::Blocker,
            FindingKind::HardCoded,
            "t::slug",
            "production code hard-codes values of test t::slug: branches on `Rust and Go` (src/slug.rs:3)",
            "src/slug.rs:3",
        )
        .with_line(n)
    };
    let unmeasured = typed(
        "integrity",
        Severity::Blocker,
        FindingKind::EnvironmentUnmeasured,
        "PATH: `pytest`",
        "the environment changed since the task started: `pytest` on PATH; … and itergate could not build an environment of its own to measure it in (why)",
        "pytest",
    );
    let fitted = typed(
        "integrity",
        Severity::Blocker,
        FindingKind::FittedToVisibleTests,
        "holdout",
        "fitted to the visible tests: the task's target tests pass, and holdout check `holdout`: 0 of 2 passed",
        "holdout",
    );
    let confirm = typed(
        "integrity",
        Severity::Warning,
        FindingKind::ExpectationToConfirm,
        "t::parse",
        "test t::parse failed earlier in this task and now expects something else: confirm the behaviour change",
        "tests/t.rs:4",
    );
    vec![
        (
            "failing, then fixed",
            vec![
                record(
                    1,
                    0.4,
                    vec![failing_test("t::a", "boom"), failing_test("t::b", "boom")],
                ),
                record(2, 1.0, vec![]),
            ],
        ),
        (
            "the same failure twice",
            vec![
                record(1, 0.5, vec![failing_test("t::a", "boom")]),
                record(2, 0.5, vec![failing_test("t::a", "boom")]),
            ],
        ),
        (
            "hard-coded twice",
            vec![
                record(1, 0.9, vec![hard_coded(3)]),
                record(2, 0.9, vec![hard_coded(4)]),
            ],
        ),
        ("unmeasured", vec![record(1, 0.9, vec![unmeasured])]),
        (
            "fitted twice",
            vec![
                record(1, 0.9, vec![fitted.clone()]),
                record(2, 0.9, vec![fitted]),
            ],
        ),
        ("to confirm", vec![record(1, 0.9, vec![confirm])]),
    ]
}

trait WithLine {
    fn with_line(self, line: u32) -> Self;
}

impl WithLine for CheckerIssue {
    fn with_line(mut self, line: u32) -> Self {
        self.affected_field = Some(format!("src/slug.rs:{line}"));
        self
    }
}

#[test]
fn reworded_findings_change_no_decision() {
    for (name, history) in histories() {
        let plain = decide_default(&history);
        let other = decide_default(&reworded(&history));
        assert_eq!(plain.recommendation(), other.recommendation(), "{name}");
        assert_eq!(
            plain.stopping_reason.as_ref().map(|r| r.code),
            other.stopping_reason.as_ref().map(|r| r.code),
            "{name}"
        );
        assert_eq!(plain.best_iteration, other.best_iteration, "{name}");
        assert_eq!(plain.revision, other.revision, "{name}");
        assert_eq!(plain.triggers.len(), other.triggers.len(), "{name}");
        assert_eq!(plain.next_steps.len(), other.next_steps.len(), "{name}");
    }
}

#[test]
fn reworded_failures_group_alike_and_acceptance_covers_the_same_findings() {
    let history = &histories()[0].1;
    let other = reworded(history);
    let group = |r: &IterationRecord| {
        let issues: Vec<&CheckerIssue> = r.issues.iter().collect();
        group_issues(&issues)
            .into_iter()
            .map(|g| (g.count, g.tests))
            .collect::<Vec<_>>()
    };
    assert_eq!(group(&history[0]), group(&other[0]));
    assert_eq!(group(&history[0])[0].0, Some(2), "one cause, two tests");
    let key = |i: &CheckerIssue| itergate::signals::integrity::acceptance_key(i);
    for (plain, said) in history[0].issues.iter().zip(&other[0].issues) {
        assert_eq!(key(plain), key(said));
    }
    let hard = &histories()[2].1;
    let hard_other = reworded(hard);
    assert_eq!(key(&hard[0].issues[0]), key(&hard_other[0].issues[0]));
}
