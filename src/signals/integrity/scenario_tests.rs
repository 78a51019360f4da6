//! Tamper evidence on hand-made observations: inventories compared step by step.

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

/// Go reports a test whose subtest failed by that subtest alone: the parent still ran.
#[test]
fn a_test_reported_by_its_failing_subtest_has_not_stopped_running() {
    let base = observed(&[
        "m::TestSort",
        "m::TestSort/1",
        "m::TestSort/3",
        "m::TestLess",
    ]);
    let head = observed(&["m::TestSort/1", "m::TestSort/3", "m::TestLess"]);
    let step = ChangedLines::default();
    let earlier = Earlier {
        observations: &[],
        since_previous: Some(&step),
        previous_source: &|_| None,
    };
    let found = check(&Input {
        head: &head,
        base: Some(&base),
        earlier: &earlier,
        changed: &step,
        is_test: &|p: &str| p.ends_with("_test.go"),
        check_files: &[],
        check_commands: &[None],
        head_source: &no_source,
        trusted: None,
    });
    assert!(
        found
            .iter()
            .all(|f| !f.issue.finding.contains("no longer runs")),
        "{found:?}"
    );
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
