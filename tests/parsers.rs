//! The report parsers against real tool output (see tests/fixtures/reports/VERSIONS.md):
//! exact counts and values, errors that name their place, and no panic on any input.

use std::io::Cursor;
use std::path::{Path, PathBuf};

use itergate::signals::report::{
    parse, parse_file, ComplexitySummary, CoverageSummary, LintFinding, LintLevel, LintSummary,
    ParseError, ParseOptions, Report, ReportFormat, ReportKind, TestCase, TestOutcome, TestSummary,
};
use proptest::prelude::*;

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/reports")
        .join(rel)
}

fn read(format: ReportFormat, rel: &str, opts: &ParseOptions) -> Report {
    match parse_file(format, &fixture(rel), opts) {
        Ok(report) => report,
        Err(e) => panic!("{rel} should parse as {format}: {e}"),
    }
}

fn tests(format: ReportFormat, rel: &str) -> TestSummary {
    match read(format, rel, &ParseOptions::default()) {
        Report::Tests(t) => t,
        other => panic!("expected tests, got {other:?}"),
    }
}

fn lint(format: ReportFormat, rel: &str) -> LintSummary {
    match read(format, rel, &ParseOptions::default()) {
        Report::Lint(l) => l,
        other => panic!("expected lint, got {other:?}"),
    }
}

fn coverage(format: ReportFormat, rel: &str, opts: &ParseOptions) -> CoverageSummary {
    match read(format, rel, opts) {
        Report::Coverage(c) => c,
        other => panic!("expected coverage, got {other:?}"),
    }
}

fn complexity(rel: &str) -> ComplexitySummary {
    match read(ReportFormat::Lizard, rel, &ParseOptions::default()) {
        Report::Complexity(c) => c,
        other => panic!("expected complexity, got {other:?}"),
    }
}

fn counts(t: &TestSummary) -> (u64, u64, u64, u64) {
    (t.passed, t.failed, t.errored, t.skipped)
}

fn problem<'a>(t: &'a TestSummary, id: &str) -> &'a TestCase {
    t.problems
        .iter()
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("no problem {id} in {:?}", t.problems))
}

fn ids(t: &TestSummary) -> Vec<(&str, TestOutcome)> {
    t.problems
        .iter()
        .map(|c| (c.id.as_str(), c.outcome))
        .collect()
}

fn finding<'a>(l: &'a LintSummary, rule: &str) -> &'a LintFinding {
    l.findings
        .iter()
        .find(|f| f.rule.as_deref() == Some(rule))
        .unwrap_or_else(|| panic!("no finding {rule} in {:?}", l.findings))
}

fn place(f: &LintFinding) -> (Option<&str>, Option<u32>, Option<u32>) {
    (f.file.as_deref(), f.line, f.column)
}

// ---------------------------------------------------------------- formats

#[test]
fn format_names_round_trip_and_unknown_names_list_the_valid_ones() {
    for format in ReportFormat::ALL {
        assert_eq!(format.name().parse::<ReportFormat>(), Ok(format));
        assert_eq!(format.to_string(), format.name());
    }
    assert_eq!("cargo-json".parse(), Ok(ReportFormat::CargoJson));
    assert_eq!(ReportFormat::RuffJson.kind(), ReportKind::Lint);
    assert_eq!(ReportFormat::Lizard.kind(), ReportKind::Complexity);
    assert_eq!(ReportFormat::Tap.kind(), ReportKind::Tests);
    assert_eq!(ReportFormat::Cobertura.kind(), ReportKind::Coverage);
    let err = "xunit".parse::<ReportFormat>().unwrap_err().to_string();
    assert!(err.contains("`xunit`"), "{err}");
    assert!(
        err.contains("junit, tap, libtest, lcov, cobertura, sarif, cargo-json, checkstyle, ruff-json, eslint-json, lizard"),
        "{err}"
    );
}

// ---------------------------------------------------------------- JUnit

#[test]
fn junit_from_cargo_nextest() {
    let t = tests(ReportFormat::Junit, "junit/nextest.xml");
    assert_eq!(counts(&t), (2, 2, 0, 0));
    assert_eq!(t.total(), 4);
    assert_eq!(
        ids(&t),
        [
            ("rproj::tests::adds_wrongly", TestOutcome::Failed),
            (
                "rproj::integration::integration_panics",
                TestOutcome::Failed
            ),
        ]
    );
    let wrong = problem(&t, "rproj::tests::adds_wrongly");
    assert_eq!(
        wrong.message.as_deref(),
        Some("assertion `left == right` failed: one plus one")
    );
    assert_eq!(
        (wrong.file.as_deref(), wrong.line),
        (Some("src/lib.rs"), Some(17))
    );
    let output = wrong.output.as_deref().unwrap_or_default();
    assert!(output.contains("computing 1 + 1"), "{output}");
    assert!(output.contains("right: 3"), "{output}");
    let panics = problem(&t, "rproj::integration::integration_panics");
    assert_eq!(
        panics.message.as_deref(),
        Some("index out of bounds: the len is 0 but the index is 3")
    );
    assert_eq!(
        (panics.file.as_deref(), panics.line),
        (Some("tests/integration.rs"), Some(9))
    );
}

#[test]
fn junit_from_pytest() {
    let t = tests(ReportFormat::Junit, "junit/pytest.xml");
    assert_eq!(counts(&t), (3, 1, 1, 2));
    assert_eq!(
        ids(&t),
        [
            ("tests.test_ops::test_add_wrong", TestOutcome::Failed),
            ("tests.test_ops::test_skipped", TestOutcome::Skipped),
            (
                "tests.test_ops::test_expected_failure",
                TestOutcome::Skipped
            ),
            (
                "tests.test_ops::test_with_broken_fixture",
                TestOutcome::Errored
            ),
        ]
    );
    let failed = problem(&t, "tests.test_ops::test_add_wrong");
    assert_eq!(
        failed.message.as_deref(),
        Some("assert 2 == 3\n +  where 2 = add(1, 1)")
    );
    // The failing assert (from the traceback), not the test's definition line.
    assert_eq!(
        (failed.file.as_deref(), failed.line),
        (Some("tests/test_ops.py"), Some(11))
    );
    assert!(failed
        .output
        .as_deref()
        .unwrap_or_default()
        .contains("E       assert 2 == 3"));
    let errored = problem(&t, "tests.test_ops::test_with_broken_fixture");
    assert_eq!(
        errored.message.as_deref(),
        Some("failed on setup with \"RuntimeError: fixture exploded\"")
    );
    assert_eq!(
        (errored.file.as_deref(), errored.line),
        (Some("tests/test_ops.py"), Some(32))
    );
    let skipped = problem(&t, "tests.test_ops::test_skipped");
    assert_eq!(skipped.message.as_deref(), Some("not ready yet"));
    assert_eq!(
        (skipped.file.as_deref(), skipped.line),
        (Some("tests/test_ops.py"), Some(13))
    );
    assert_eq!(
        problem(&t, "tests.test_ops::test_expected_failure")
            .message
            .as_deref(),
        Some("known bug")
    );
}

#[test]
fn junit_from_jest_junit() {
    let t = tests(ReportFormat::Junit, "junit/jest-junit.xml");
    assert_eq!(counts(&t), (2, 1, 0, 1));
    assert_eq!(
        ids(&t),
        [
            ("math utils divides by zero", TestOutcome::Failed),
            ("math utils todo: negative numbers", TestOutcome::Skipped),
        ]
    );
    let failed = problem(&t, "math utils divides by zero");
    assert_eq!(
        failed.message.as_deref(),
        Some("Error: expect(received).toThrow()")
    );
    assert_eq!(
        (failed.file.as_deref(), failed.line),
        (Some("src/math.test.js"), None)
    );
    assert!(failed
        .output
        .as_deref()
        .unwrap_or_default()
        .contains("math.test.js:14:32"));
}

#[test]
fn junit_from_go_junit_report() {
    let t = tests(ReportFormat::Junit, "junit/go-junit-report.xml");
    assert_eq!(counts(&t), (1, 1, 1, 1));
    assert_eq!(
        ids(&t),
        [
            (
                "example.com/shop/cart::TestTotal/with_discount",
                TestOutcome::Failed
            ),
            ("example.com/shop/cart::TestCheckout", TestOutcome::Skipped),
            ("example.com/shop/cart::TestRefund", TestOutcome::Errored),
        ]
    );
    let failed = problem(&t, "example.com/shop/cart::TestTotal/with_discount");
    assert_eq!(failed.message.as_deref(), Some("Failed"));
    assert_eq!(
        failed.output.as_deref(),
        Some("cart_test.go:42: total = 90, want 85\n    cart_test.go:43: discount not applied")
    );
    assert!(problem(&t, "example.com/shop/cart::TestRefund")
        .output
        .as_deref()
        .unwrap_or_default()
        .contains("nil pointer dereference"));
}

#[test]
fn junit_from_maven_surefire_with_a_bare_testsuite_root() {
    let t = tests(ReportFormat::Junit, "junit/surefire.xml");
    // retriesFlakyCall passed on retry: its <flakyFailure> does not fail it.
    assert_eq!(counts(&t), (2, 1, 1, 1));
    assert_eq!(
        ids(&t),
        [
            (
                "com.example.cart.CartTest::computesTotal",
                TestOutcome::Failed
            ),
            ("com.example.cart.CartTest::refunds", TestOutcome::Errored),
            ("com.example.cart.CartTest::checksOut", TestOutcome::Skipped),
        ]
    );
    let failed = problem(&t, "com.example.cart.CartTest::computesTotal");
    assert_eq!(
        failed.message.as_deref(),
        Some("expected: <85> but was: <90>")
    );
    let output = failed.output.as_deref().unwrap_or_default();
    assert!(
        output.starts_with("org.opentest4j.AssertionFailedError"),
        "{output}"
    );
    assert!(output.ends_with("computing total for 3 items"), "{output}");
    assert_eq!(
        problem(&t, "com.example.cart.CartTest::refunds")
            .message
            .as_deref(),
        Some("Cannot invoke \"Payment.amount()\" because \"p\" is null")
    );
}

#[test]
fn junit_output_keeps_only_the_last_4_kib() {
    let noise = "x".repeat(10_000);
    let xml = format!(
        "<testsuite><testcase name=\"t\"><failure message=\"m\">{noise}THE END</failure></testcase></testsuite>"
    );
    let report = parse(
        ReportFormat::Junit,
        Cursor::new(xml),
        "big.xml",
        &ParseOptions::default(),
    );
    let Ok(Report::Tests(t)) = report else {
        panic!("{report:?}");
    };
    let output = t.problems[0].output.clone().unwrap_or_default();
    assert_eq!(output.len(), 4096);
    assert!(output.ends_with("THE END"));
    assert_eq!(t.problems[0].id, "t");
}

// ---------------------------------------------------------------- TAP

#[test]
fn tap_13_with_directives_and_yaml_diagnostics() {
    let t = tests(ReportFormat::Tap, "tap/tap13.tap");
    assert_eq!(counts(&t), (2, 2, 0, 2));
    assert_eq!(
        ids(&t),
        [
            ("rejects an empty name", TestOutcome::Failed),
            ("handles unicode", TestOutcome::Skipped),
            ("retries on timeout", TestOutcome::Skipped),
            ("#6", TestOutcome::Failed),
        ]
    );
    let failed = problem(&t, "rejects an empty name");
    assert_eq!(
        failed.message.as_deref(),
        Some("expected an error, got Ok(())")
    );
    assert_eq!(
        (failed.file.as_deref(), failed.line),
        (Some("test/config.js"), Some(27))
    );
    assert!(failed
        .output
        .as_deref()
        .unwrap_or_default()
        .contains("expect: Err"));
    assert_eq!(
        problem(&t, "handles unicode").message.as_deref(),
        Some("no ICU on this machine")
    );
    assert_eq!(
        problem(&t, "retries on timeout").message.as_deref(),
        Some("flaky upstream")
    );
}

#[test]
fn tap_14_subtests_are_not_counted_twice() {
    let t = tests(ReportFormat::Tap, "tap/tap14-subtests.tap");
    assert_eq!(counts(&t), (1, 1, 0, 1));
    let failed = problem(&t, "database");
    assert_eq!(failed.message.as_deref(), Some("subtest failed: migrates"));
    assert_eq!(
        (failed.file.as_deref(), failed.line),
        (Some("test/db.test.js"), Some(12))
    );
    assert_eq!(problem(&t, "network").outcome, TestOutcome::Skipped);
}

#[test]
fn tap_bail_out_counts_the_tests_it_kept_from_running() {
    let t = tests(ReportFormat::Tap, "tap/bail-out.tap");
    assert_eq!(counts(&t), (2, 0, 2, 0));
    let bail = problem(&t, "Bail out!");
    assert_eq!(bail.message.as_deref(), Some("database went away"));
}

// ---------------------------------------------------------------- libtest

#[test]
fn libtest_plain_cargo_test_with_several_binaries() {
    let t = tests(ReportFormat::Libtest, "libtest/cargo-test.txt");
    assert_eq!(counts(&t), (2, 2, 0, 1));
    assert_eq!(
        ids(&t),
        [
            ("tests::adds_wrongly", TestOutcome::Failed),
            ("tests::talks_to_network", TestOutcome::Skipped),
            ("integration_panics", TestOutcome::Failed),
        ]
    );
    let wrong = problem(&t, "tests::adds_wrongly");
    assert_eq!(
        wrong.message.as_deref(),
        Some("assertion `left == right` failed: one plus one")
    );
    assert_eq!(
        (wrong.file.as_deref(), wrong.line),
        (Some("src/lib.rs"), Some(17))
    );
    let output = wrong.output.as_deref().unwrap_or_default();
    assert!(output.starts_with("computing 1 + 1"), "{output}");
    assert!(output.ends_with("display a backtrace"), "{output}");
    let panics = problem(&t, "integration_panics");
    assert_eq!(
        (panics.file.as_deref(), panics.line),
        (Some("tests/integration.rs"), Some(9))
    );
}

#[test]
fn libtest_terse_output_takes_counts_from_the_result_lines() {
    let t = tests(ReportFormat::Libtest, "libtest/cargo-test-quiet.txt");
    assert_eq!(counts(&t), (2, 2, 0, 1));
    assert_eq!(
        ids(&t),
        [
            ("tests::adds_wrongly", TestOutcome::Failed),
            ("integration_panics", TestOutcome::Failed),
        ]
    );
    let wrong = problem(&t, "tests::adds_wrongly");
    assert_eq!(
        (wrong.file.as_deref(), wrong.line),
        (Some("src/lib.rs"), Some(17))
    );
    let output = wrong.output.as_deref().unwrap_or_default();
    assert!(output.len() <= 4096);
    assert!(output.contains("RUST_BACKTRACE=full"), "{output}");
}

#[test]
fn libtest_binary_that_crashed_counts_its_missing_tests_as_errored() {
    let text = "running 3 tests\ntest a ... ok\n\
        error: test failed, to rerun pass `--lib`\n\nCaused by:\n  \
        process didn't exit successfully: `target/debug/deps/x-1` (signal: 6, SIGABRT: process abort signal)\n";
    let Ok(Report::Tests(t)) = parse(
        ReportFormat::Libtest,
        Cursor::new(text),
        "out.txt",
        &ParseOptions::default(),
    ) else {
        panic!("crash output should parse");
    };
    assert_eq!(counts(&t), (1, 0, 2, 0));
    assert_eq!(t.problems[0].outcome, TestOutcome::Errored);
}

// ---------------------------------------------------------------- coverage

fn keep_ops(file: &str) -> bool {
    file == "calc/ops.py"
}

#[test]
fn lcov_from_coverage_py() {
    let c = coverage(
        ReportFormat::Lcov,
        "lcov/coverage-py.lcov",
        &ParseOptions::default(),
    );
    assert_eq!((c.lines_found, c.lines_hit), (40, 33));
    assert_eq!(c.line_rate(), Some(33.0 / 40.0));
    assert!(c.files.is_empty(), "no filter keeps no lines");

    let opts = ParseOptions {
        keep_lines_for: Some(&keep_ops),
    };
    let c = coverage(ReportFormat::Lcov, "lcov/coverage-py.lcov", &opts);
    assert_eq!((c.lines_found, c.lines_hit), (40, 33));
    assert_eq!(c.files.keys().collect::<Vec<_>>(), ["calc/ops.py"]);
    let ops = &c.files["calc/ops.py"];
    assert_eq!(ops.lines.len(), 16);
    assert_eq!(ops.lines.get(&1), Some(&1));
    assert_eq!(ops.lines.get(&16), Some(&0));
    assert_eq!(ops.uncovered().collect::<Vec<_>>(), [16, 20, 21, 22, 23]);
}

#[test]
fn lcov_trusts_da_lines_merges_duplicates_and_falls_back_to_lf_lh() {
    let text = "TN:\nSF:a.rs\nDA:1,1\nDA:2,0\nDA:1,4\nLF:99\nLH:99\nend_of_record\n\
                SF:b.rs\nLF:10\nLH:7\nend_of_record\n";
    let keep_all = |_: &str| true;
    let opts = ParseOptions {
        keep_lines_for: Some(&keep_all),
    };
    let Ok(Report::Coverage(c)) = parse(ReportFormat::Lcov, Cursor::new(text), "x.lcov", &opts)
    else {
        panic!("should parse");
    };
    assert_eq!((c.lines_found, c.lines_hit), (12, 8));
    assert_eq!(c.files["a.rs"].lines.get(&1), Some(&5));
    assert!(c.files["b.rs"].lines.is_empty());
}

#[test]
fn cobertura_from_coverage_py() {
    let opts = ParseOptions {
        keep_lines_for: Some(&keep_ops),
    };
    let c = coverage(ReportFormat::Cobertura, "cobertura/coverage-py.xml", &opts);
    assert_eq!((c.lines_found, c.lines_hit), (40, 33));
    let ops = &c.files["calc/ops.py"];
    assert_eq!(ops.lines.len(), 16);
    assert_eq!(ops.uncovered().collect::<Vec<_>>(), [16, 20, 21, 22, 23]);
    // Same numbers as the LCOV written from the same run.
    let lcov = coverage(ReportFormat::Lcov, "lcov/coverage-py.lcov", &opts);
    assert_eq!(c, lcov);
}

#[test]
fn cobertura_skips_method_lines_and_relativises_absolute_filenames() {
    let xml = r#"<?xml version="1.0"?>
<coverage lines-valid="3" lines-covered="2">
  <sources><source>/src/app/</source></sources>
  <packages><package name="p"><classes>
    <class name="A" filename="/src/app/pkg/A.java">
      <methods><method name="m"><lines><line number="3" hits="1"/></lines></method></methods>
      <lines><line number="3" hits="1"/><line number="4" hits="0"/><line number="5" hits="12"/></lines>
    </class>
  </classes></package></packages>
</coverage>"#;
    let keep = |f: &str| f == "pkg/A.java";
    let opts = ParseOptions {
        keep_lines_for: Some(&keep),
    };
    let Ok(Report::Coverage(c)) = parse(ReportFormat::Cobertura, Cursor::new(xml), "c.xml", &opts)
    else {
        panic!("should parse");
    };
    assert_eq!((c.lines_found, c.lines_hit), (3, 2));
    assert_eq!(c.files["pkg/A.java"].lines.get(&5), Some(&12));
}

// ---------------------------------------------------------------- lint

#[test]
fn clippy_json_warnings_with_machine_applicable_fixes() {
    let l = lint(ReportFormat::CargoJson, "cargo-json/clippy-warnings.json");
    let rules: Vec<_> = l
        .findings
        .iter()
        .map(|f| f.rule.as_deref().unwrap_or(""))
        .collect();
    assert_eq!(
        rules,
        [
            "unused_variables",
            "clippy::needless_return",
            "clippy::ptr_arg",
            "clippy::len_zero"
        ]
    );
    assert!(l.findings.iter().all(|f| f.level == LintLevel::Warning));
    let unused = finding(&l, "unused_variables");
    assert_eq!(unused.tool, "rustc");
    assert_eq!(unused.message, "unused variable: `unused_value`");
    assert_eq!(place(unused), (Some("src/lib.rs"), Some(10), Some(9)));
    assert_eq!(unused.suggested_fix.as_deref(), Some("_unused_value"));
    let ret = finding(&l, "clippy::needless_return");
    assert_eq!(ret.tool, "clippy");
    assert_eq!(place(ret), (Some("src/lib.rs"), Some(2), Some(5)));
    assert_eq!(ret.suggested_fix.as_deref(), Some("x * 2"));
    assert_eq!(
        finding(&l, "clippy::ptr_arg").suggested_fix,
        None,
        "only MachineApplicable"
    );
    assert_eq!(
        finding(&l, "clippy::len_zero").suggested_fix.as_deref(),
        Some("v.is_empty()")
    );
}

#[test]
fn cargo_json_compile_errors_and_duplicates() {
    let l = lint(ReportFormat::CargoJson, "cargo-json/clippy-e0425.json");
    assert_eq!(l.findings.len(), 2);
    assert_eq!(l.count(LintLevel::Error), 2);
    let scale = &l.findings[0];
    assert_eq!(scale.rule.as_deref(), Some("E0425"));
    assert_eq!(scale.message, "cannot find function `scale` in this scope");
    assert_eq!(place(scale), (Some("src/lib.rs"), Some(2), Some(26)));
    assert_eq!(
        l.findings[1].message,
        "cannot find function `undefined_helper` in this scope"
    );
    assert_eq!(l.findings[1].line, Some(6));

    // The same warning reported for the lib and its test target is one finding.
    let text = std::fs::read_to_string(fixture("cargo-json/clippy-warnings.json")).unwrap();
    let doubled = format!("   Compiling clippyok v0.1.0\n{text}{text}");
    let Ok(Report::Lint(again)) = parse(
        ReportFormat::CargoJson,
        Cursor::new(doubled),
        "x",
        &ParseOptions::default(),
    ) else {
        panic!("should parse");
    };
    assert_eq!(again.findings.len(), 4);
}

#[test]
fn ruff_json() {
    let l = lint(ReportFormat::RuffJson, "ruff-json/ruff-default.json");
    assert_eq!(
        l.findings,
        [LintFinding {
            tool: "ruff".into(),
            rule: Some("F401".into()),
            level: LintLevel::Error,
            message: "`os` imported but unused".into(),
            file: Some("/tmp/fx/py/calc/ops.py".into()),
            line: Some(1),
            column: Some(8),
            suggested_fix: Some("Remove unused import: `os`".into()),
        }]
    );
    let all = lint(ReportFormat::RuffJson, "ruff-json/ruff-select-all.json");
    assert_eq!(all.findings.len(), 51);
    let ann = all
        .findings
        .iter()
        .filter(|f| f.rule.as_deref() == Some("ANN201"))
        .count();
    assert_eq!(ann, 11);
    let print = finding(&all, "T201");
    assert_eq!((print.line, print.column), (Some(22), Some(13)));
    assert_eq!(print.suggested_fix.as_deref(), Some("Remove `print`"));
}

#[test]
fn ruff_json_without_severity_maps_syntax_errors_to_error() {
    let json = r#"[{"code":null,"message":"SyntaxError: Expected ')'","filename":"a.py","location":{"row":3,"column":1},"fix":null},
                  {"code":"E501","message":"Line too long","filename":"a.py","location":{"row":9,"column":89},"fix":null}]"#;
    let Ok(Report::Lint(l)) = parse(
        ReportFormat::RuffJson,
        Cursor::new(json),
        "r.json",
        &ParseOptions::default(),
    ) else {
        panic!("should parse");
    };
    let levels: Vec<_> = l.findings.iter().map(|f| f.level).collect();
    assert_eq!(levels, [LintLevel::Error, LintLevel::Warning]);
}

#[test]
fn eslint_json() {
    let l = lint(ReportFormat::EslintJson, "eslint-json/eslint.json");
    assert_eq!(l.findings.len(), 4);
    let unused = finding(&l, "no-unused-vars");
    assert_eq!(unused.level, LintLevel::Error);
    assert_eq!(
        place(unused),
        (Some("/home/ci/app/src/index.js"), Some(3), Some(10))
    );
    assert_eq!(unused.suggested_fix, None);
    let semi = finding(&l, "semi");
    assert_eq!(semi.level, LintLevel::Warning);
    assert_eq!(semi.suggested_fix.as_deref(), Some(";"));
    assert_eq!(
        finding(&l, "no-console").suggested_fix.as_deref(),
        Some("Remove the console.log().")
    );
    let fatal = &l.findings[3];
    assert_eq!(
        (fatal.rule.as_deref(), fatal.level),
        (None, LintLevel::Error)
    );
    assert_eq!(
        place(fatal),
        (Some("/home/ci/app/src/broken.js"), Some(4), Some(12))
    );
}

#[test]
fn checkstyle_xml() {
    let l = lint(ReportFormat::Checkstyle, "checkstyle/checkstyle.xml");
    let levels: Vec<_> = l.findings.iter().map(|f| f.level).collect();
    assert_eq!(
        levels,
        [
            LintLevel::Warning,
            LintLevel::Error,
            LintLevel::Note,
            LintLevel::Error
        ]
    );
    let braces = finding(
        &l,
        "com.puppycrawl.tools.checkstyle.checks.blocks.NeedBracesCheck",
    );
    assert_eq!(braces.message, "'if' construct must use '{}'s.");
    assert_eq!(
        place(braces),
        (
            Some("/home/ci/app/src/main/java/com/example/App.java"),
            Some(12),
            Some(9)
        )
    );
    assert_eq!(l.findings[0].column, None);
    let eslint = finding(&l, "eslint.rules.no-unused-vars");
    assert_eq!(
        (eslint.tool.as_str(), eslint.file.as_deref()),
        ("eslint", Some("web/app.js"))
    );
    assert!(l.findings[..3].iter().all(|f| f.tool == "checkstyle"));
}

#[test]
fn sarif_levels_defaults_messages_and_fixes() {
    let l = lint(ReportFormat::Sarif, "sarif/codeql-style.sarif");
    assert_eq!(l.findings.len(), 5, "the `pass` result is dropped");
    let sql = finding(&l, "js/sql-injection");
    assert_eq!((sql.tool.as_str(), sql.level), ("CodeQL", LintLevel::Error));
    assert_eq!(place(sql), (Some("src/db/users.js"), Some(42), Some(18)));
    assert_eq!(
        sql.message,
        "This query depends on a [user-provided value](1)."
    );
    let unused = finding(&l, "js/unused-local-variable");
    assert_eq!(unused.level, LintLevel::Note);
    assert_eq!(unused.message, "Unused variable tmp.");
    assert_eq!(unused.file.as_deref(), Some("/home/ci/app/src/util.js"));
    assert_eq!(
        unused.suggested_fix.as_deref(),
        Some("Remove the unused variable")
    );
    let rate = finding(&l, "js/missing-rate-limiting");
    assert_eq!(rate.level, LintLevel::Warning, "SARIF's default level");
    assert_eq!(place(rate), (Some("src/routes/files.js"), Some(12), None));
    let ret = finding(&l, "clippy::needless_return");
    assert_eq!(
        (ret.tool.as_str(), ret.level),
        ("clippy", LintLevel::Warning)
    );
    assert_eq!(ret.suggested_fix.as_deref(), Some("x * 2"));
    let todo = finding(&l, "clippy::todo");
    assert_eq!((todo.level, todo.file.as_deref()), (LintLevel::Note, None));

    assert!(lint(ReportFormat::Sarif, "sarif/empty-run.sarif")
        .findings
        .is_empty());
}

// ---------------------------------------------------------------- complexity

#[test]
fn lizard_csv_and_xml_agree() {
    let csv = complexity("lizard/lizard.csv");
    assert_eq!(csv.functions.len(), 11);
    let classify = &csv.functions[1];
    assert_eq!(
        (
            classify.name.as_str(),
            classify.file.as_str(),
            classify.line,
            classify.cyclomatic
        ),
        ("classify", "calc/ops.py", Some(8), 4)
    );
    assert_eq!(csv.functions.iter().map(|f| f.cyclomatic).sum::<u32>(), 17);
    assert_eq!(csv.max_cyclomatic().map(|f| f.cyclomatic), Some(4));
    let xml = complexity("lizard/lizard.xml");
    assert_eq!(xml, csv);
}

#[test]
fn lizard_csv_with_a_header_row() {
    let csv = "NLOC,CCN,token,PARAM,length,location,file,function,long_name,start,end\n\
               12,7,80,2,14,\"run@3-16@src/a.c\",\"src/a.c\",\"run\",\"run( int a , char * b )\",3,16\n";
    let Ok(Report::Complexity(c)) = parse(
        ReportFormat::Lizard,
        Cursor::new(csv),
        "l.csv",
        &ParseOptions::default(),
    ) else {
        panic!("should parse");
    };
    assert_eq!(c.functions.len(), 1);
    assert_eq!(
        (c.functions[0].cyclomatic, c.functions[0].line),
        (7, Some(3))
    );
}

// ---------------------------------------------------------------- errors

fn error_for(format: ReportFormat, rel: &str) -> ParseError {
    match parse_file(format, &fixture(rel), &ParseOptions::default()) {
        Ok(report) => panic!("{rel} should not parse as {format}: {report:?}"),
        Err(e) => e,
    }
}

/// The error names the file and a place, and its message contains `needle`.
fn assert_error(format: ReportFormat, rel: &str, needle: &str) -> ParseError {
    let err = error_for(format, rel);
    let text = err.to_string();
    assert_eq!(err.format, format);
    assert_eq!(err.source_name, fixture(rel).display().to_string());
    assert!(text.starts_with(&err.source_name), "{text}");
    assert!(
        err.line.is_some() || err.byte.is_some(),
        "no place in {text}"
    );
    assert!(text.contains(needle), "`{needle}` not in: {text}");
    err
}

#[test]
fn truncated_reports_are_errors_with_a_place() {
    let e = assert_error(
        ReportFormat::Junit,
        "malformed/junit-truncated.xml",
        "unexpected end of file inside <system-out>; expected a complete JUnit XML document",
    );
    assert_eq!(e.line, Some(13));
    assert!(e.to_string().contains(": line 13, column 13: "), "{e}");
    assert_error(
        ReportFormat::Cobertura,
        "malformed/cobertura-truncated.xml",
        "malformed XML",
    );
    let e = assert_error(
        ReportFormat::Lcov,
        "malformed/lcov-truncated.lcov",
        "bad DA line `DA:2`",
    );
    assert_eq!(e.line, Some(18));
    assert_error(
        ReportFormat::Sarif,
        "malformed/sarif-truncated.sarif",
        "truncated JSON",
    );
    let e = assert_error(
        ReportFormat::CargoJson,
        "malformed/cargo-json-truncated.json",
        "truncated JSON",
    );
    assert_eq!(e.line, Some(2));
    assert_error(
        ReportFormat::Libtest,
        "malformed/libtest-truncated.txt",
        "`running 3 tests` at line 4 has no `test result:` line",
    );
    assert_error(
        ReportFormat::Tap,
        "malformed/tap-truncated.tap",
        "inside the YAML block opened at line 5",
    );
}

#[test]
fn lcov_record_without_end_is_truncated() {
    let err = parse(
        ReportFormat::Lcov,
        Cursor::new("SF:a.rs\nDA:1,1\n"),
        "cut.lcov",
        &ParseOptions::default(),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "cut.lcov: line 2: unexpected end of file inside the record for a.rs opened at line 1 \
         (no end_of_record); expected an LCOV tracefile (`SF:`, `DA:`, `end_of_record`)"
    );
}

#[test]
fn error_places_stay_exact_past_the_first_read_chunk() {
    // Well over the 256 KiB the parsers read at a time.
    let mut lcov = String::from("TN:\nSF:big.rs\n");
    for line in 1..=60_000 {
        lcov.push_str(&format!("DA:{line},{}\n", line % 3));
    }
    lcov.push_str("DA:7;1\nend_of_record\n");
    let err = parse(
        ReportFormat::Lcov,
        Cursor::new(lcov),
        "big.lcov",
        &ParseOptions::default(),
    )
    .unwrap_err();
    assert_eq!(err.line, Some(60_003), "{err}");
    assert!(err.message.starts_with("bad DA line `DA:7;1`"), "{err}");

    let mut junit = String::from("<testsuites>\n<testsuite name=\"s\">\n");
    for case in 0..5_000 {
        junit.push_str(&format!(
            "  <testcase name=\"case_{case}\" classname=\"c\" time=\"0.001\"/>\n"
        ));
    }
    let cut = format!("{junit}  <testcase name=\"last\">\n    <failure message=\"boom\">half");
    let err = parse(
        ReportFormat::Junit,
        Cursor::new(cut),
        "cut.xml",
        &ParseOptions::default(),
    )
    .unwrap_err();
    assert_eq!((err.line, err.column), (Some(5_004), Some(33)), "{err}");
    assert!(
        err.message
            .starts_with("unexpected end of file inside <failure>"),
        "{err}"
    );

    let crossed = format!("{junit}</testsuite>\n</testsuitez>\n");
    let err = parse(
        ReportFormat::Junit,
        Cursor::new(crossed),
        "x.xml",
        &ParseOptions::default(),
    )
    .unwrap_err();
    assert_eq!(err.line, Some(5_004), "{err}");
    assert!(err.message.contains("malformed XML"), "{err}");
}

#[test]
fn type_mismatches_and_bad_values_are_errors() {
    let e = assert_error(
        ReportFormat::Sarif,
        "malformed/sarif-type-mismatch.sarif",
        "runs[0].results[0].locations[0].physicalLocation.region.startLine",
    );
    assert_eq!(e.line, Some(38));
    assert_error(
        ReportFormat::RuffJson,
        "malformed/ruff-not-array.json",
        "expected a sequence",
    );
    assert_error(
        ReportFormat::EslintJson,
        "malformed/eslint-bad-severity.json",
        "messages[0].severity",
    );
    assert_error(
        ReportFormat::Lizard,
        "malformed/lizard-short-row.csv",
        "a row with 5 columns",
    );
    assert_error(
        ReportFormat::Junit,
        "malformed/junit-mismatched-tags.xml",
        "malformed XML",
    );
    assert_error(
        ReportFormat::Checkstyle,
        "malformed/checkstyle-bad-severity.xml",
        "catastrophic",
    );
}

#[test]
fn the_wrong_format_is_an_error() {
    assert_error(
        ReportFormat::Junit,
        "lcov/coverage-py.lcov",
        "text before the root element",
    );
    assert_error(
        ReportFormat::Junit,
        "cobertura/coverage-py.xml",
        "the root element is <coverage>, not <testsuites> or <testsuite>",
    );
    assert_error(
        ReportFormat::Cobertura,
        "junit/pytest.xml",
        "not <coverage>",
    );
    assert_error(
        ReportFormat::Checkstyle,
        "sarif/codeql-style.sarif",
        "text before the root element",
    );
    assert_error(
        ReportFormat::Lcov,
        "junit/nextest.xml",
        "unrecognised line `<?xml",
    );
    assert_error(
        ReportFormat::Tap,
        "lcov/coverage-py.lcov",
        "no TAP plan or test points",
    );
    assert_error(
        ReportFormat::Libtest,
        "tap/tap13.tap",
        "no `running N tests` line",
    );
    assert_error(ReportFormat::Sarif, "junit/nextest.xml", "malformed JSON");
    assert_error(
        ReportFormat::Sarif,
        "eslint-json/eslint.json",
        "; expected a SARIF 2.1.0 JSON document",
    );
    assert_error(
        ReportFormat::EslintJson,
        "sarif/codeql-style.sarif",
        "expected a sequence",
    );
    assert_error(
        ReportFormat::CargoJson,
        "lcov/coverage-py.lcov",
        "no JSON message lines",
    );
    assert_error(
        ReportFormat::CargoJson,
        "sarif/codeql-style.sarif",
        "truncated JSON",
    );
    assert_error(
        ReportFormat::Lizard,
        "tap/tap13.tap",
        "a row with 1 columns",
    );
    assert_error(
        ReportFormat::RuffJson,
        "eslint-json/eslint.json",
        "missing field `message`",
    );
}

#[test]
fn garbage_empty_and_blank_inputs_are_errors_for_every_format() {
    for format in ReportFormat::ALL {
        let garbage = error_for(format, "malformed/garbage.bin");
        assert!(
            garbage.line.is_some() || garbage.byte.is_some(),
            "{format}: {garbage}"
        );
        for rel in ["malformed/empty.txt", "malformed/blank.txt"] {
            let e = error_for(format, rel);
            assert!(
                e.message.starts_with("empty report; expected "),
                "{format}: {e}"
            );
            assert!(e.byte.is_some(), "{format}: {e}");
        }
    }
}

#[test]
fn a_missing_file_is_an_error_naming_it() {
    let err = parse_file(
        ReportFormat::Junit,
        Path::new("no/such/junit.xml"),
        &ParseOptions::default(),
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("no/such/junit.xml: cannot open the report"),
        "{err}"
    );
}

// ---------------------------------------------------------------- never panic

const FIXTURES: &[&str] = &[
    "junit/nextest.xml",
    "junit/pytest.xml",
    "junit/surefire.xml",
    "tap/tap13.tap",
    "tap/tap14-subtests.tap",
    "libtest/cargo-test.txt",
    "lcov/coverage-py.lcov",
    "cobertura/coverage-py.xml",
    "sarif/codeql-style.sarif",
    "cargo-json/clippy-warnings.json",
    "checkstyle/checkstyle.xml",
    "ruff-json/ruff-default.json",
    "eslint-json/eslint.json",
    "lizard/lizard.csv",
    "lizard/lizard.xml",
];

fn parse_with_every_format(bytes: &[u8]) {
    let keep_all = |_: &str| true;
    let opts = ParseOptions {
        keep_lines_for: Some(&keep_all),
    };
    for format in ReportFormat::ALL {
        // Ok or Err are both fine; a panic fails the test.
        let _ = parse(format, Cursor::new(bytes), "fuzz", &opts);
    }
}

fn fixture_bytes() -> Vec<Vec<u8>> {
    FIXTURES
        .iter()
        .map(|rel| std::fs::read(fixture(rel)).unwrap_or_default())
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        parse_with_every_format(&bytes);
    }

    #[test]
    fn truncated_and_mutated_fixtures_never_panic(
        which in 0..FIXTURES.len(),
        cut in any::<prop::sample::Index>(),
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
    ) {
        let mut bytes = fixture_bytes().swap_remove(which);
        let len = cut.index(bytes.len().max(1));
        bytes.truncate(len);
        for (at, value) in flips {
            if !bytes.is_empty() {
                let i = at.index(bytes.len());
                bytes[i] = value;
            }
        }
        parse_with_every_format(&bytes);
    }
}
