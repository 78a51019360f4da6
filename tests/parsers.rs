//! The report parsers against real tool output (see tests/fixtures/reports/VERSIONS.md):
//! exact counts and values, errors that name their place, and no panic on any input.

use std::io::Cursor;
use std::path::{Path, PathBuf};

use itergate::signals::report::{
    parse, parse_file, ComplexitySummary, CoverageSummary, LintFinding, LintSummary, ParseError,
    ParseOptions, Report, ReportFormat, ReportKind, TestCase, TestOutcome, TestSummary,
};
use proptest::prelude::*;

#[path = "parsers/agent_usage.rs"]
mod agent_usage;
#[path = "parsers/bounds.rs"]
mod bounds;
#[path = "parsers/diagnostics.rs"]
mod diagnostics;
#[path = "parsers/ecosystems.rs"]
mod ecosystems;
#[path = "parsers/other_reports.rs"]
mod other_reports;
#[path = "parsers/test_reports.rs"]
mod test_reports;

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/reports")
        .join(rel)
}

fn read(format: ReportFormat, rel: &str, opts: &ParseOptions) -> Report {
    match parse_file(format, &fixture(rel), opts) {
        Ok(report) => {
            assert_eq!(report.kind(), format.kind());
            report
        }
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
    for &format in ReportFormat::ALL {
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
        err.contains("junit, tap, libtest, lcov, cobertura, clover, jacoco, sarif, cargo-json, checkstyle, ruff-json, mypy-json, pyright-json, eslint-json, lizard, go-test-json, go-cover, go-vet, tsc, jest-json, istanbul-json"),
        "{err}"
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
    for &format in ReportFormat::ALL {
        let garbage = error_for(format, "malformed/garbage.bin");
        assert!(
            garbage.line.is_some() || garbage.byte.is_some(),
            "{format}: {garbage}"
        );
        // `go vet`, `tsc` and mypy print nothing for clean code (ecosystems.rs, parsers).
        if matches!(
            format,
            ReportFormat::GoVet | ReportFormat::Tsc | ReportFormat::MypyJson
        ) {
            continue;
        }
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
    "jacoco/maven-calc.xml",
    "pyright-json/pyright.json",
    "sarif/codeql-style.sarif",
    "cargo-json/clippy-warnings.json",
    "checkstyle/checkstyle.xml",
    "ruff-json/ruff-default.json",
    "eslint-json/eslint.json",
    "lizard/lizard.csv",
    "lizard/lizard.xml",
    "go-test-json/go-test.json",
    "go-test-json/build-failure.json",
    "go-cover/cover.out",
    "go-vet/vet.txt",
    "tsc/tsc-pretty.txt",
    "jest-json/jest.json",
    "tap/node-test.tap",
    "junit/vitest.xml",
    "istanbul-json/coverage-final.json",
];

fn parse_with_every_format(bytes: &[u8]) {
    let keep_all = |_: &str| true;
    let opts = ParseOptions {
        keep_lines_for: Some(&keep_all),
    };
    for &format in ReportFormat::ALL {
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

#[test]
fn an_lcov_tracefile_of_no_file_is_empty_coverage_and_other_text_is_refused() {
    // What node --experimental-test-coverage writes when no source file loaded.
    let report = parse(
        ReportFormat::Lcov,
        Cursor::new("TN:\n"),
        "lcov.info",
        &ParseOptions::default(),
    )
    .expect("an empty tracefile");
    match report {
        itergate::signals::report::Report::Coverage(c) => {
            assert!(c.files.is_empty());
            assert_eq!(c.lines_found, 0);
        }
        other => panic!("not coverage: {other:?}"),
    }
    let err = parse(
        ReportFormat::Lcov,
        Cursor::new("hello\n"),
        "lcov.info",
        &ParseOptions::default(),
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("unrecognised line `hello`"),
        "{err}"
    );
}
