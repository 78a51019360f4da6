//! The Go, TypeScript and JavaScript formats: `go test -json`, Go coverage profiles,
//! `go vet`, `tsc`, jest/vitest JSON, node:test TAP and vitest JUnit, each written by the
//! real tool (tests/fixtures/reports/VERSIONS.md).

use itergate::signals::report::{LintLevel, ReportFormat, TestOutcome};

use super::*;

#[test]
fn go_test_json_counts_leaf_tests_and_locates_failures() {
    let t = tests(ReportFormat::GoTestJson, "go-test-json/go-test.json");
    assert_eq!(counts(&t), (7, 2, 0, 1));
    let sub = problem(&t, "example.com/fx/calc::TestSub");
    assert_eq!(sub.message.as_deref(), Some("Sub(5, 3) = 8, want 2"));
    assert_eq!(
        (sub.file.as_deref(), sub.line),
        (Some("example.com/fx/calc/calc_test.go"), Some(18))
    );
    // The parent of a failing subtest is not a second failure.
    assert!(t
        .problems
        .iter()
        .all(|c| c.id != "example.com/fx/calc::TestClamp"));
    assert_eq!(
        problem(&t, "example.com/fx/calc::TestClamp/above").outcome,
        TestOutcome::Failed
    );
    let skipped = problem(&t, "example.com/fx/calc::TestDivIntegration");
    assert_eq!(skipped.outcome, TestOutcome::Skipped);
}

#[test]
fn go_test_json_names_a_package_that_failed_to_build() {
    let t = tests(ReportFormat::GoTestJson, "go-test-json/build-failure.json");
    let build = problem(&t, "example.com/fx/strutil");
    assert_eq!(build.outcome, TestOutcome::Errored);
    assert_eq!(
        build.message.as_deref(),
        Some("strutil/strutil_test.go:12:6: undefined: IsPalindrome")
    );
    assert_eq!(
        (build.file.as_deref(), build.line),
        (Some("strutil/strutil_test.go"), Some(12))
    );
}

#[test]
fn go_test_json_keeps_a_panic_as_the_failure_output() {
    let t = tests(ReportFormat::GoTestJson, "go-test-json/panic.json");
    let failures: Vec<_> = t.failures().map(|c| c.id.as_str()).collect();
    assert!(
        failures.contains(&"example.com/fx/calc::TestFirst/empty"),
        "{failures:?}"
    );
    let panicked = t
        .problems
        .iter()
        .find(|c| c.output.as_deref().is_some_and(|o| o.contains("panic:")))
        .expect("a case holds the panic");
    assert!(panicked.id.starts_with("example.com/fx/calc::TestFirst"));
}

#[test]
fn go_test_json_refuses_other_output() {
    let err = parse(
        ReportFormat::GoTestJson,
        Cursor::new("ok  \texample.com/m\t0.01s\n"),
        "stdout",
        &ParseOptions::default(),
    )
    .unwrap_err();
    assert!(err.message.contains("no `go test -json` events"), "{err}");
}

#[test]
fn go_cover_profile_gives_line_coverage_by_import_path() {
    let keep = |_: &str| true;
    let opts = ParseOptions {
        keep_lines_for: Some(&keep),
    };
    let c = coverage(ReportFormat::GoCover, "go-cover/cover.out", &opts);
    assert!(c.lines_found > 0 && c.lines_hit < c.lines_found, "{c:?}");
    assert!(
        c.files.keys().all(|f| f.starts_with("example.com/fx/")),
        "{:?}",
        c.files.keys()
    );
    let atomic = coverage(ReportFormat::GoCover, "go-cover/atomic.out", &opts);
    assert_eq!(
        (atomic.lines_found, atomic.lines_hit),
        (c.lines_found, c.lines_hit)
    );
    let err = parse(
        ReportFormat::GoCover,
        Cursor::new("SF:a.go\nDA:1,1\nend_of_record\n"),
        "cover.out",
        &ParseOptions::default(),
    )
    .unwrap_err();
    assert_eq!(err.line, Some(1));
    assert!(err.message.contains("mode: set|count|atomic"), "{err}");
}

#[test]
fn go_vet_findings_are_errors_at_their_place() {
    let l = lint(ReportFormat::GoVet, "go-vet/vet.txt");
    assert_eq!(l.findings.len(), 4);
    assert!(l.findings.iter().all(|f| f.level == LintLevel::Error));
    let printf = l
        .findings
        .iter()
        .find(|f| f.message.contains("fmt.Printf format %d"))
        .unwrap();
    assert_eq!(
        (printf.file.as_deref(), printf.line),
        (Some("calc/report.go"), Some(7))
    );
    // Clean code prints nothing: an empty report is a clean one for vet and tsc alone.
    for format in [ReportFormat::GoVet, ReportFormat::Tsc] {
        let clean = parse(format, Cursor::new(""), "stdout", &ParseOptions::default()).unwrap();
        assert_eq!(clean, Report::Lint(LintSummary::default()));
    }
    assert!(parse(
        ReportFormat::RuffJson,
        Cursor::new(""),
        "x",
        &ParseOptions::default()
    )
    .is_err());
}

#[test]
fn tsc_errors_in_both_styles_are_the_same_findings() {
    let plain = lint(ReportFormat::Tsc, "tsc/tsc.txt");
    let pretty = lint(ReportFormat::Tsc, "tsc/tsc-pretty.txt");
    type Place = (Option<String>, Option<u32>, Option<u32>, Option<String>);
    let place = |l: &LintSummary| -> Vec<Place> {
        l.findings
            .iter()
            .map(|f| (f.file.clone(), f.line, f.column, f.rule.clone()))
            .collect()
    };
    assert_eq!(place(&plain), place(&pretty));
    assert!(plain.findings.len() >= 5);
    let assign = plain
        .findings
        .iter()
        .find(|f| f.file.as_deref() == Some("src/lib/math.ts"))
        .unwrap();
    assert_eq!(assign.rule.as_deref(), Some("TS2322"));
    assert_eq!(assign.level, LintLevel::Error);
    assert!(plain
        .findings
        .iter()
        .any(|f| f.rule.as_deref() == Some("TS2304")));
    let err = parse(
        ReportFormat::Tsc,
        Cursor::new("all good\nreally\n"),
        "stdout",
        &ParseOptions::default(),
    )
    .unwrap_err();
    assert!(err.message.contains("line 1 is `all good`"), "{err}");
}

#[test]
fn jest_and_vitest_json_name_each_test_with_its_values() {
    let jest = tests(ReportFormat::JestJson, "jest-json/jest.json");
    assert_eq!((jest.failed, jest.errored, jest.skipped), (2, 1, 2));
    let subtracts = problem(
        &jest,
        "/tmp/fx/jest/__tests__/math.test.js::math > sub > subtracts",
    );
    let message = subtracts.message.as_deref().unwrap();
    assert!(
        message.contains("Expected: 2") && message.contains("Received: 8"),
        "{message}"
    );
    assert!(subtracts.line.is_some());
    let broken = problem(&jest, "/tmp/fx/jest/__tests__/broken.test.js");
    assert_eq!(broken.outcome, TestOutcome::Errored);
    let vitest = tests(ReportFormat::JestJson, "jest-json/vitest.json");
    assert_eq!((vitest.failed, vitest.errored, vitest.skipped), (2, 1, 2));
    let v = problem(
        &vitest,
        "/tmp/fx/vitest/test/math.test.ts::math > sub > subtracts",
    );
    assert_eq!(
        v.message.as_deref(),
        Some("AssertionError: expected 8 to be 2 // Object.is equality")
    );
}

#[test]
fn node_test_tap_counts_nested_tests_and_reads_error_and_values() {
    let t = tests(ReportFormat::Tap, "tap/node-test.tap");
    assert_eq!(counts(&t), (6, 2, 0, 2));
    let sub = problem(&t, "math > sub > subtracts");
    assert_eq!(
        sub.message.as_deref(),
        Some("Expected values to be strictly equal: (expected: 2, actual: 8)")
    );
    assert!(
        sub.file
            .as_deref()
            .is_some_and(|f| f.ends_with("test/math.test.js")),
        "{sub:?}"
    );
    assert!(sub.line.is_some());
    // A skipped test's timing is not its message.
    let skipped = problem(&t, "math > sub > subtracts big numbers");
    assert_eq!(skipped.outcome, TestOutcome::Skipped);
    assert!(
        skipped.message.is_none() && skipped.output.is_none(),
        "{skipped:?}"
    );
}

#[test]
fn vitest_junit_failures_are_located_by_their_source_pointer() {
    let t = tests(ReportFormat::Junit, "junit/vitest.xml");
    let sub = problem(&t, "test/math.test.ts::math > sub > subtracts");
    // The ` ❯ test/math.test.ts:17:…` frame in the failure body; made relative when the
    // observation is normalised, so here it is still as the body prints it.
    let output = sub.output.as_deref().unwrap_or_default();
    assert!(output.contains("math.test.ts:17"), "{output}");
}

#[test]
fn a_clover_report_is_not_read_as_an_empty_cobertura_one() {
    let err = parse_file(
        ReportFormat::Cobertura,
        &fixture("clover/clover.xml"),
        &ParseOptions::default(),
    )
    .unwrap_err();
    assert!(err.message.contains("Clover"), "{err}");
}

#[test]
fn clover_gives_the_lines_its_lcov_gives_and_refuses_cobertura() {
    let keep = |_: &str| true;
    let opts = ParseOptions {
        keep_lines_for: Some(&keep),
    };
    let clover = coverage(ReportFormat::Clover, "clover/clover.xml", &opts);
    let lcov = coverage(ReportFormat::Lcov, "lcov/vitest.lcov", &opts);
    assert_eq!(
        (clover.lines_found, clover.lines_hit),
        (lcov.lines_found, lcov.lines_hit)
    );
    // Files by their `path` (absolute here; made relative when the observation is
    // normalised), with the same uncovered lines.
    let math = &clover.files["/tmp/fx/vitest/src/math.ts"];
    assert_eq!(
        math.uncovered().collect::<Vec<_>>(),
        lcov.files["src/math.ts"].uncovered().collect::<Vec<_>>()
    );
    let err = parse_file(
        ReportFormat::Clover,
        &fixture("cobertura/coverage-py.xml"),
        &ParseOptions::default(),
    )
    .unwrap_err();
    assert!(err.message.contains("Cobertura"), "{err}");
    assert!(err.message.contains("`cobertura`"), "{err}");
}

#[test]
fn istanbul_json_gives_the_lines_its_lcov_gives() {
    let keep = |_: &str| true;
    let opts = ParseOptions {
        keep_lines_for: Some(&keep),
    };
    let json = coverage(
        ReportFormat::IstanbulJson,
        "istanbul-json/coverage-final.json",
        &opts,
    );
    let lcov = coverage(ReportFormat::Lcov, "lcov/vitest.lcov", &opts);
    assert_eq!((json.lines_found, json.lines_hit), (15, 9));
    assert_eq!(
        (json.lines_found, json.lines_hit),
        (lcov.lines_found, lcov.lines_hit)
    );
    let math = &json.files["/tmp/fx/vitest/src/math.ts"];
    assert_eq!(
        math.uncovered().collect::<Vec<_>>(),
        lcov.files["src/math.ts"].uncovered().collect::<Vec<_>>()
    );
    // The summary has no lines to compare a change with.
    let err = parse_file(
        ReportFormat::IstanbulJson,
        &fixture("istanbul-json/coverage-summary.json"),
        &ParseOptions::default(),
    )
    .unwrap_err();
    assert!(err.message.contains("statementMap"), "{err}");
}
