//! What a revision prompt says about failing tests, from real `cargo test` output
//! (`tests/fixtures/reports/libtest/cargo-test-assertions.txt`): a failed `assert_eq!` keeps
//! its message and both values; a 20 KB value loses its middle, never its end; 40 tests
//! that fail at one place are one item with a count; the record keeps every failure, so the
//! revision loop's count still measures progress.

use std::path::Path;

use itergate::config::Config;
use itergate::engine::{decide, DecideInput, Decision, Feedback};
use itergate::history::file::load_history;
use itergate::model::{CheckerIssue, IterationRecord};
use itergate::render::Renderer;
use itergate::signals::classify::test_issue;
use itergate::signals::report::{parse_file, ParseOptions, Report, ReportFormat};

const NOW: &str = "2026-11-02T11:00:00Z";

fn fixture_issues() -> Vec<CheckerIssue> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/reports/libtest/cargo-test-assertions.txt");
    let report = parse_file(ReportFormat::Libtest, &path, &ParseOptions::default())
        .expect("the fixture parses");
    let Report::Tests(tests) = report else {
        panic!("a test report: {report:?}");
    };
    assert_eq!((tests.passed, tests.failed), (0, 42));
    tests.failures().map(|case| test_issue(case).0).collect()
}

fn history_with(issue_sets: Vec<Vec<CheckerIssue>>) -> Vec<IterationRecord> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/histories");
    let template = load_history(&dir.join("improving.yml")).expect("fixture");
    issue_sets
        .into_iter()
        .zip(template)
        .map(|(issues, mut record)| {
            record.issues = issues;
            record
        })
        .collect()
}

fn decision(history: &[IterationRecord]) -> Decision {
    decide(&DecideInput {
        task_id: "fix/ports",
        config: &Config::default(),
        history,
        feedback: &Feedback::default(),
        baseline: None,
        now: NOW.parse().expect("time"),
    })
    .expect("decision")
}

fn prompt(history: &[IterationRecord], changes: Option<String>) -> String {
    let latest = history.last().expect("a record");
    let mut view = itergate::prompt::prompt_view(latest, &decision(history));
    view.changes = changes;
    Renderer::new(None, false)
        .expect("templates")
        .render("revision-prompt.md.j2", &view)
        .expect("prompt renders")
}

/// The item of the prompt's YAML issue list that holds `needle`, from its `- dimension:`
/// to the next item or the end of the list.
fn item<'a>(text: &'a str, needle: &str) -> &'a str {
    let at = text
        .find(needle)
        .unwrap_or_else(|| panic!("{needle}: {text}"));
    let start = text[..at].rfind("- dimension:").expect("an item");
    let end = ["\n- dimension:", "\n```"]
        .iter()
        .filter_map(|e| text[at..].find(e))
        .min()
        .map_or(text.len(), |e| at + e);
    &text[start..end]
}

#[test]
fn a_failed_assert_eq_keeps_its_message_and_both_values() {
    let issues = fixture_issues();
    let ranges = issues
        .iter()
        .find(|i| i.finding.contains("renders_ranges_with_a_space"))
        .expect("the range test");
    assert_eq!(
        ranges.finding,
        "test tests::renders_ranges_with_a_space failed: assertion `left == right` failed: \
         display of a range\nleft: \">0.0.9,<=2.5.3\"\nright: \">0.0.9, <=2.5.3\""
    );
    assert_eq!(ranges.affected_field.as_deref(), Some("src/lib.rs:15"));
    let text = prompt(&history_with(vec![issues]), None);
    insta::assert_snapshot!(item(&text, "renders_ranges_with_a_space"), @r#"
        - dimension: tests
          severity: BLOCKER
          finding: |-
            test tests::renders_ranges_with_a_space failed: assertion `left == right` failed: display of a range
            left: ">0.0.9,<=2.5.3"
            right: ">0.0.9, <=2.5.3"
          affected_field: src/lib.rs:15
        "#);
}

#[test]
fn a_huge_value_loses_its_middle_not_its_end() {
    let issues = fixture_issues();
    let huge = issues
        .iter()
        .find(|i| i.finding.contains("huge_values_keep_both_sides"))
        .expect("the huge test");
    // The runs of `y` on either side of the cut, shortened.
    insta::with_settings!({ filters => vec![(r"y{16,}", "yyyy[…]")] }, {
        insta::assert_snapshot!(&huge.finding, @r#"
            test tests::huge_values_keep_both_sides failed: assertion `left == right` failed: mismatch
            left: "yyyy[…]
            … [16052 bytes cut] …
            yyyy[…]"
            right: "x"
            "#);
    });
    assert!(huge.finding.len() <= 4096 + 48, "{}", huge.finding.len());
    assert_eq!(huge.affected_field.as_deref(), Some("src/lib.rs:24"));
}

#[test]
fn forty_failures_at_one_place_are_one_item_with_a_count() {
    let issues = fixture_issues();
    let text = prompt(&history_with(vec![issues.clone()]), None);
    // Once in the issue list, once as one next step (never forty times).
    assert_eq!(
        text.matches("40 tests failed with one cause").count(),
        2,
        "{text}"
    );
    insta::assert_snapshot!(item(&text, "40 tests failed with one cause"), @r"
        - dimension: tests
          severity: BLOCKER
          finding: '40 tests failed with one cause: a port number: ParseIntError { kind: InvalidDigit }'
          affected_field: src/lib.rs:6
          count: 40
          tests:
          - ports::p02
          - ports::p01
          - ports::p03
          - ports::p04
          - ports::p05
        ");
    assert!(
        !text.contains("ports::p06"),
        "only the first five ids: {text}"
    );
    // The record keeps all 42: the revision loop counts them.
    let d = decision(&history_with(vec![issues]));
    assert_eq!(d.revision.blockers, 42);
}

#[test]
fn fixing_some_of_one_causes_failures_is_progress_not_a_stall() {
    let all = fixture_issues();
    let fewer: Vec<CheckerIssue> = all
        .iter()
        .filter(|i| !i.finding.contains("ports::p0"))
        .cloned()
        .collect();
    assert_eq!(fewer.len(), 33);
    let history = history_with(vec![all, fewer]);
    let d = decision(&history);
    assert_eq!(d.revision.previous_count, Some(42));
    assert_eq!(d.revision.blockers, 33);
    let reason = d.stopping_reason.map(|r| r.summary).unwrap_or_default();
    assert!(!reason.contains("stalled"), "{reason}");
    // In the prompt, the 31 left of the group are still one item.
    let text = prompt(&history, None);
    insta::assert_snapshot!(item(&text, "31 tests failed with one cause"), @r"
        - dimension: tests
          severity: BLOCKER
          finding: '31 tests failed with one cause: a port number: ParseIntError { kind: InvalidDigit }'
          affected_field: src/lib.rs:6
          count: 31
          tests:
          - ports::p10
          - ports::p11
          - ports::p12
          - ports::p13
          - ports::p14
        ");
}

#[test]
fn prompt_with_grouped_failures_assertion_values_and_a_cut_middle() {
    let issues = fixture_issues();
    let changes = itergate::prompt::changes_block(
        &[itergate::prompt::FileChange {
            path: "src/lib.rs".into(),
            added: 3,
            deleted: 1,
        }],
        1,
    );
    let text = prompt(&history_with(vec![issues]), changes);
    insta::assert_snapshot!("prompt_failures", text);
}

#[test]
fn output_with_backtick_runs_stays_inside_a_longer_fence() {
    let mut issues = fixture_issues();
    issues[0].finding = "test t failed: expected\n```\nfn a() {}\n```\nand ```` too".into();
    issues[0].subject = Some("t".into());
    let text = prompt(&history_with(vec![issues]), None);
    let open = text.find("`````yaml\n").expect("a fence of five backticks");
    let body = &text[open + "`````yaml\n".len()..];
    let close = body.find("\n`````\n").expect("the fence closes");
    insta::assert_snapshot!(item(&body[..close], "```` too"), @r"
        - dimension: tests
          severity: BLOCKER
          finding: |-
            40 tests failed at one place; the first says: expected
            ```
            fn a() {}
            ```
            and ```` too
          affected_field: src/lib.rs:6
          count: 40
          tests:
          - t
          - ports::p01
          - ports::p03
          - ports::p04
          - ports::p05
        ");
    // Nothing inside closes it early: no line of five backticks before its end.
    assert!(
        !body[..close].lines().any(|l| l.trim() == "`````"),
        "{text}"
    );
    let fenced = itergate::markup::fence("a ``` b\n```` c");
    insta::assert_snapshot!(fenced, @r"
        `````
        a ``` b
        ```` c
        `````
        ");
}

/// A Go `Example` that prints the wrong value: the finding carries what it got and what
/// it wanted (`go test -json`, `tests/fixtures/reports/go-test-json/example.json`).
#[test]
fn a_go_examples_failure_keeps_got_and_want() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/reports/go-test-json/example.json");
    let report = parse_file(ReportFormat::GoTestJson, &path, &ParseOptions::default())
        .expect("the fixture parses");
    let Report::Tests(tests) = report else {
        panic!("a test report: {report:?}");
    };
    let issues: Vec<CheckerIssue> = tests.failures().map(|case| test_issue(case).0).collect();
    assert_eq!(issues.len(), 1, "{issues:?}");
    let finding = &issues[0].finding;
    assert!(
        finding.contains("got:\n-1") && finding.contains("want:\n5"),
        "{finding}"
    );
}

/// `go test` names no place for an Example whose output differs: its package's test files
/// give the `func` line, at the module's root and in a package below it.
#[test]
fn a_go_examples_failure_is_placed_at_its_func() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/reports/go-test-json/example.json");
    let root = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        root.path().join("go.mod"),
        "module example.com/sum\n\ngo 1.22\n",
    )
    .unwrap();
    std::fs::write(
        root.path().join("sum_test.go"),
        "package sum\n\nimport \"fmt\"\n\n// ExampleAdd shows Add.\nfunc ExampleAdd() {\n\tfmt.Println(Add(2, 3))\n\t// Output: 5\n}\n",
    )
    .unwrap();
    let place = |report: &mut Report| {
        itergate::signals::paths::RepoPaths::new(root.path()).normalise(report);
        let Report::Tests(tests) = report else {
            panic!("a test report");
        };
        let case = tests.failures().next().expect("the failing example");
        (case.file.clone(), case.line)
    };
    let mut report = parse_file(ReportFormat::GoTestJson, &path, &ParseOptions::default())
        .expect("the fixture parses");
    assert_eq!(place(&mut report), (Some("sum_test.go".into()), Some(6)));
    // The same example in a package below the root.
    std::fs::create_dir(root.path().join("inner")).unwrap();
    std::fs::rename(
        root.path().join("sum_test.go"),
        root.path().join("inner/sum_test.go"),
    )
    .unwrap();
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("\"example.com/sum\"", "\"example.com/sum/inner\"");
    let mut report = itergate::signals::report::parse(
        ReportFormat::GoTestJson,
        text.as_bytes(),
        "example.json",
        &ParseOptions::default(),
    )
    .expect("parses");
    assert_eq!(
        place(&mut report),
        (Some("inner/sum_test.go".into()), Some(6))
    );
}

/// A vitest snapshot mismatch (the fixture written by the pinned vitest): the finding keeps
/// the diff's changed lines, and the inline snapshot's expected and received values.
#[test]
fn a_vitest_snapshot_mismatch_keeps_its_diff() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/reports/junit/vitest-snapshot.xml");
    let report = parse_file(ReportFormat::Junit, &path, &ParseOptions::default())
        .expect("the fixture parses");
    let Report::Tests(tests) = report else {
        panic!("a test report: {report:?}");
    };
    let issues: Vec<CheckerIssue> = tests.failures().map(|case| test_issue(case).0).collect();
    assert_eq!(issues.len(), 2, "{issues:?}");
    let file = &issues[0].finding;
    assert!(
        file.contains("- Expected\n+ Received")
            && file.contains("-   \"text\": \"Hello, Ada!\",")
            && file.contains("+   \"text\": \"Hi, Ada!\","),
        "{file}"
    );
    let inline = &issues[1].finding;
    assert!(
        inline.contains("Expected: \"\"Hello, Bo!\"\"")
            && inline.contains("Received: \"\"Hi, Bo!\"\""),
        "{inline}"
    );
}

/// A VOID iteration: the integrity item is what to do, the type errors in the `conftest.py`
/// it names are left out of the list — and the task sentence says so, so its counts agree
/// with the summary's.
#[test]
fn a_void_iterations_prompt_says_what_restoring_removes() {
    let issue = |dimension: &str, severity, finding: &str, at: &str| CheckerIssue {
        dimension: dimension.into(),
        severity,
        finding: finding.into(),
        affected_field: Some(at.into()),
        suggested_fix: None,
        kind: None,
        subject: None,
    };
    let issues = vec![
        issue(
            "integrity",
            itergate::model::Severity::Blocker,
            "test t::a was changed to pass: the change edited `tests/conftest.py`",
            "tests/conftest.py:3",
        ),
        issue(
            "code_quality",
            itergate::model::Severity::Warning,
            "mypy: Function is missing a type annotation",
            "tests/conftest.py:5",
        ),
    ];
    let mut history = history_with(vec![issues]);
    history[0].status = itergate::model::Status::Void;
    let text = prompt(&history, None);
    assert!(
        text.contains("fix the 1 BLOCKER and 0 WARNING issue(s) below")
            && text.contains("The 1 other issue(s) of this iteration are in the files the integrity finding names: restoring those files removes them."),
        "{text}"
    );
    assert!(!text.contains("missing a type annotation"), "{text}");
}
