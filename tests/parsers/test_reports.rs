//! Test-result formats: JUnit (five producers), TAP, libtest.

use std::io::Cursor;

use itergate::signals::report::{parse, ParseOptions, Report, ReportFormat, TestOutcome};

use super::*;

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
        Some("assertion `left == right` failed: one plus one\nleft: 2\nright: 3")
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

/// pytest 9's subtests: one `<testcase>` with a `<failure>` per failing subtest and one
/// more saying how many; the suite counts each. One failing test, its subtests' failures
/// in its message, and no failure without a name.
#[test]
fn junit_from_pytest_subtests() {
    let t = tests(ReportFormat::Junit, "junit/pytest-subtests.xml");
    assert_eq!(counts(&t), (1, 1, 0, 0));
    assert_eq!(
        ids(&t),
        [("tests.test_sub::test_values", TestOutcome::Failed)]
    );
    let failed = problem(&t, "tests.test_sub::test_values");
    assert_eq!(
        failed.message.as_deref(),
        Some("2 failed subtests: assert (1 % 2) == 0; assert (3 % 2) == 0")
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

/// mocha 11.8.0's xunit reporter (node 20): a failure has no `message` attribute, and
/// Node's assert says what it compared on the lines after its first: both are kept.
#[test]
fn junit_from_mocha_xunit_keeps_the_values_compared() {
    let t = tests(ReportFormat::Junit, "junit/mocha-xunit.xml");
    // (passed, failed, errored, skipped)
    assert_eq!(counts(&t), (0, 2, 0, 0));
    let adds = problem(&t, "math::adds");
    assert_eq!(
        adds.message.as_deref(),
        Some("Expected values to be strictly equal:\n-1 !== 3")
    );
    // The testcase's own file; the frame's `test/math.test.js:6` is found when the paths
    // are made the repository's.
    assert_eq!(
        (adds.file.as_deref(), adds.line),
        (Some("/tmp/mo/test/math.test.js"), None)
    );
    let objects = problem(&t, "math::adds objects");
    assert_eq!(
        objects.message.as_deref(),
        Some("Expected values to be strictly deep-equal:\n+ actual - expected\n  {\n+   a: 0\n-   a: 2\n  }")
    );
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
fn junit_output_cuts_the_middle_of_long_text_and_keeps_both_ends() {
    let noise = "x".repeat(10_000);
    let xml = format!(
        "<testsuite><testcase name=\"t\"><failure message=\"m\">THE START{noise}THE END</failure></testcase></testsuite>"
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
    assert!(output.len() <= 4096 + 48, "{}", output.len());
    assert!(output.starts_with("THE START"), "{output}");
    assert!(output.ends_with("THE END"), "{output}");
    let kept = output.len() - output.lines().nth(1).map_or(0, |note| note.len() + 2);
    let cut = 10_000 + "THE START".len() + "THE END".len() - kept;
    assert!(
        output.contains(&format!("\n… [{cut} bytes cut] …\n")),
        "{output}"
    );
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
fn tap_14_subtests_count_as_tests_and_their_suites_do_not() {
    let t = tests(ReportFormat::Tap, "tap/tap14-subtests.tap");
    // connects, disconnects, pool > reuses connections, cache; database > migrates fails;
    // network is skipped. `database` and `pool` are suites.
    assert_eq!(counts(&t), (4, 1, 0, 1));
    let failed = problem(&t, "database > migrates");
    assert_eq!(
        failed.message.as_deref(),
        Some("nested failure is summarised by the parent")
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
        Some("assertion `left == right` failed: one plus one\nleft: 2\nright: 3")
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
