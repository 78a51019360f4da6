//! Streaming parsers for the reports that checks write: test results, lint findings,
//! coverage and complexity. Each format lives in its own module and maps onto one of four
//! normalized summaries ([`TestSummary`], [`LintSummary`], [`CoverageSummary`],
//! [`ComplexitySummary`]) that the scoring code consumes without knowing the tool.
//!
//! The rule every parser follows: read the input once, front to back, keeping only what the
//! summary needs. XML goes through quick-xml's pull reader (never a DOM), line formats are
//! read line by line into one reused buffer, JSON documents are deserialized from the reader
//! into structs that name only the fields we use. Memory therefore stays flat for the
//! common huge-but-boring input: passing tests are counted, not stored; coverage keeps
//! per-line hits only for the files the caller asks for ([`ParseOptions::keep_lines_for`]).
//!
//! Malformed input (truncated, binary garbage, the wrong format, a JSON type mismatch, an
//! empty file) is a [`ParseError`] naming the source and the place, never a panic.
//!
//! # Lint levels
//!
//! Every tool's levels map onto [`LintLevel`] as follows:
//!
//! | tool | `Error` | `Warning` | `Note` |
//! | --- | --- | --- | --- |
//! | SARIF | `error` | `warning` (also the default when neither the result nor its rule says) | `note`, `none`, and results whose `kind` is `informational`, `review` or `open` (`pass`/`notApplicable` results are dropped) |
//! | cargo/clippy JSON | `error`, `error: internal compiler error` | `warning` | `note`, `help` (`failure-note` lines are dropped) |
//! | checkstyle | `error` | `warning` | `info`, `ignore` |
//! | ruff JSON | `severity: "error"`; without a `severity` field: syntax errors (no `code`) | `severity: "warning"`; without one: every rule violation | `severity: "info"` |
//! | ESLint JSON | `severity: 2` and fatal parse errors | `severity: 1` | `severity: 0` |

mod cargo_json;
mod checkstyle;
mod clover;
mod cobertura;
mod compiler_lines;
mod eslint;
mod go_cover;
mod go_test;
mod istanbul;
mod jacoco;
mod jest;
mod junit;
mod lcov;
mod libtest;
mod lizard;
mod mypy;
mod ruff;
mod sarif;
mod tap;

mod error;
mod input;
mod json;
mod text;
mod types;
mod xml;

use std::fmt;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

pub use error::ParseError;
pub use text::{cut_middle, failure_lead, strip_ansi, OUTPUT_HEAD_BYTES};
pub use types::{
    ComplexitySummary, CoverageSummary, FileLines, FunctionComplexity, LintFinding, LintLevel,
    LintSummary, Report, TestCase, TestOutcome, TestRef, TestSummary,
};

use input::{Ctx, Input};

use super::tree_file::{self, Refusal};

/// Size of the read buffer [`parse_file`] uses; large enough that per-read overhead vanishes.
const FILE_BUFFER_BYTES: usize = 256 * 1024;

/// A report format, named as on the command line (`--format junit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReportFormat {
    /// JUnit XML (cargo-nextest, pytest, jest-junit, go-junit-report, Maven Surefire).
    Junit,
    /// Test Anything Protocol, versions 12 to 14.
    Tap,
    /// The plain text `cargo test` prints (libtest's default formatter).
    Libtest,
    /// LCOV tracefiles (`SF:`/`DA:`/`end_of_record`).
    Lcov,
    /// Cobertura XML (coverage.py, JaCoCo converters, cargo-llvm-cov).
    Cobertura,
    /// Clover XML (istanbul's `clover` reporter, PHPUnit, Kover).
    Clover,
    /// JaCoCo XML (`jacoco:report`, Gradle's `jacocoTestReport`).
    Jacoco,
    /// SARIF 2.1.0.
    Sarif,
    /// `cargo build|check|clippy --message-format=json` lines.
    CargoJson,
    /// Checkstyle XML.
    Checkstyle,
    /// `ruff check --output-format=json`.
    RuffJson,
    /// `mypy --output json` (JSON lines).
    MypyJson,
    /// `eslint --format json`.
    EslintJson,
    /// `lizard --csv` or `lizard --xml`.
    Lizard,
    /// `go test -json` (test2json events).
    GoTestJson,
    /// `go test -coverprofile` profiles.
    GoCover,
    /// `go vet` output (`file.go:line:col: message`).
    GoVet,
    /// `tsc --noEmit` output (`file(line,col): error TSnnnn: message`).
    Tsc,
    /// `jest --json` or `vitest --reporter=json`.
    JestJson,
    /// Istanbul's `coverage-final.json`.
    IstanbulJson,
}

/// Which summary a format produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReportKind {
    Tests,
    Lint,
    Coverage,
    Complexity,
}

impl ReportFormat {
    /// Every format, in the order the CLI lists them.
    pub const ALL: [ReportFormat; 20] = [
        ReportFormat::Junit,
        ReportFormat::Tap,
        ReportFormat::Libtest,
        ReportFormat::Lcov,
        ReportFormat::Cobertura,
        ReportFormat::Clover,
        ReportFormat::Jacoco,
        ReportFormat::Sarif,
        ReportFormat::CargoJson,
        ReportFormat::Checkstyle,
        ReportFormat::RuffJson,
        ReportFormat::MypyJson,
        ReportFormat::EslintJson,
        ReportFormat::Lizard,
        ReportFormat::GoTestJson,
        ReportFormat::GoCover,
        ReportFormat::GoVet,
        ReportFormat::Tsc,
        ReportFormat::JestJson,
        ReportFormat::IstanbulJson,
    ];

    /// The CLI name (`cargo-json`, `ruff-json`, ...).
    pub fn name(self) -> &'static str {
        match self {
            ReportFormat::Junit => "junit",
            ReportFormat::Tap => "tap",
            ReportFormat::Libtest => "libtest",
            ReportFormat::Lcov => "lcov",
            ReportFormat::Cobertura => "cobertura",
            ReportFormat::Clover => "clover",
            ReportFormat::Jacoco => "jacoco",
            ReportFormat::Sarif => "sarif",
            ReportFormat::CargoJson => "cargo-json",
            ReportFormat::Checkstyle => "checkstyle",
            ReportFormat::RuffJson => "ruff-json",
            ReportFormat::MypyJson => "mypy-json",
            ReportFormat::EslintJson => "eslint-json",
            ReportFormat::Lizard => "lizard",
            ReportFormat::GoTestJson => "go-test-json",
            ReportFormat::GoCover => "go-cover",
            ReportFormat::GoVet => "go-vet",
            ReportFormat::Tsc => "tsc",
            ReportFormat::JestJson => "jest-json",
            ReportFormat::IstanbulJson => "istanbul-json",
        }
    }

    /// The summary this format produces.
    pub fn kind(self) -> ReportKind {
        match self {
            ReportFormat::Junit
            | ReportFormat::Tap
            | ReportFormat::Libtest
            | ReportFormat::GoTestJson
            | ReportFormat::JestJson => ReportKind::Tests,
            ReportFormat::Lcov
            | ReportFormat::Cobertura
            | ReportFormat::Clover
            | ReportFormat::Jacoco
            | ReportFormat::GoCover
            | ReportFormat::IstanbulJson => ReportKind::Coverage,
            ReportFormat::Lizard => ReportKind::Complexity,
            ReportFormat::Sarif
            | ReportFormat::CargoJson
            | ReportFormat::Checkstyle
            | ReportFormat::RuffJson
            | ReportFormat::MypyJson
            | ReportFormat::EslintJson
            | ReportFormat::GoVet
            | ReportFormat::Tsc => ReportKind::Lint,
        }
    }

    /// What a document of this format looks like, for error messages ("expected ...").
    pub(crate) fn expected(self) -> &'static str {
        match self {
            ReportFormat::Junit => "a complete JUnit XML document",
            ReportFormat::Tap => {
                "a TAP stream (`TAP version 13`, a plan `1..N`, `ok`/`not ok` lines)"
            }
            ReportFormat::Libtest => "`cargo test` output (`running N tests` ... `test result:`)",
            ReportFormat::Lcov => "an LCOV tracefile (`SF:`, `DA:`, `end_of_record`)",
            ReportFormat::Cobertura => "a complete Cobertura XML document",
            ReportFormat::Clover => "a complete Clover XML document (`<coverage>`, `<project>`)",
            ReportFormat::Jacoco => {
                "a complete JaCoCo XML document (`<report>`, `<package>`, `<sourcefile>`)"
            }
            ReportFormat::Sarif => "a SARIF 2.1.0 JSON document",
            ReportFormat::CargoJson => "cargo `--message-format=json` lines",
            ReportFormat::Checkstyle => "a complete checkstyle XML document",
            ReportFormat::RuffJson => "`ruff check --output-format=json` output (a JSON array)",
            ReportFormat::MypyJson => "`mypy --output json` output (a JSON object per line)",
            ReportFormat::EslintJson => "`eslint --format json` output (a JSON array)",
            ReportFormat::Lizard => "`lizard --csv` or `lizard --xml` output",
            ReportFormat::GoTestJson => "`go test -json` output (JSON lines with an `Action`)",
            ReportFormat::GoCover => "a Go coverage profile (`mode: set`, then blocks)",
            ReportFormat::GoVet => "`go vet` output (`file.go:line:col: message` lines)",
            ReportFormat::Tsc => "`tsc --noEmit` output (`file(line,col): error TSnnnn: message`)",
            ReportFormat::JestJson => "`jest --json` or `vitest --reporter=json` output",
            ReportFormat::IstanbulJson => {
                "istanbul's `coverage-final.json` (an object of files with a `statementMap`)"
            }
        }
    }

    /// Formats whose tool prints nothing when all is well: empty input is a clean report.
    fn empty_is_clean(self) -> bool {
        matches!(
            self,
            ReportFormat::GoVet | ReportFormat::Tsc | ReportFormat::MypyJson
        )
    }
}

/// In `.itergate.yml`'s schema: one of the names.
impl schemars::JsonSchema for ReportFormat {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ReportFormat".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let names: Vec<&str> = ReportFormat::ALL.iter().map(|f| f.name()).collect();
        schemars::json_schema!({
            "description": "A report format, as `--format` names it.",
            "type": "string",
            "enum": names,
        })
    }
}

impl fmt::Display for ReportFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An unknown format name; its message lists the valid ones.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown report format `{given}`; expected one of: {}", valid_names())]
pub struct UnknownFormat {
    pub given: String,
}

fn valid_names() -> String {
    let names: Vec<&str> = ReportFormat::ALL.iter().map(|f| f.name()).collect();
    names.join(", ")
}

impl FromStr for ReportFormat {
    type Err = UnknownFormat;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let wanted = s.trim().to_ascii_lowercase().replace('_', "-");
        ReportFormat::ALL
            .into_iter()
            .find(|f| f.name() == wanted)
            .ok_or_else(|| UnknownFormat {
                given: s.to_string(),
            })
    }
}

/// Caller choices that change what a parser keeps.
#[derive(Default, Clone, Copy)]
pub struct ParseOptions<'a> {
    /// Coverage: the files whose per-line hits are kept (by the path as the report names
    /// it). `None` keeps none, so memory stays flat however large the report is.
    pub keep_lines_for: Option<&'a dyn Fn(&str) -> bool>,
}

impl fmt::Debug for ParseOptions<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ParseOptions")
            .field("keep_lines_for", &self.keep_lines_for.map(|_| "<filter>"))
            .finish()
    }
}

impl ParseOptions<'_> {
    pub(crate) fn keeps_lines(&self, file: &str) -> bool {
        self.keep_lines_for.is_some_and(|keep| keep(file))
    }
}

/// Parses one report read from `input`; `source` names it in errors (usually its path).
pub fn parse(
    format: ReportFormat,
    input: impl BufRead,
    source: &str,
    opts: &ParseOptions,
) -> Result<Report, ParseError> {
    let ctx = Ctx { format, source };
    let mut input = Input::new(input);
    if input.skip_blank_prefix().map_err(|e| ctx.io(&input, &e))? {
        if format.empty_is_clean() {
            return Ok(Report::Lint(LintSummary::default()));
        }
        return Err(ctx.expected(input.position(), "empty report"));
    }
    match format {
        ReportFormat::Junit => junit::parse(&mut input, &ctx).map(Report::Tests),
        ReportFormat::Tap => tap::parse(&mut input, &ctx).map(Report::Tests),
        ReportFormat::Libtest => libtest::parse(&mut input, &ctx).map(Report::Tests),
        ReportFormat::Lcov => lcov::parse(&mut input, &ctx, opts).map(Report::Coverage),
        ReportFormat::Cobertura => cobertura::parse(&mut input, &ctx, opts).map(Report::Coverage),
        ReportFormat::Clover => clover::parse(&mut input, &ctx, opts).map(Report::Coverage),
        ReportFormat::Jacoco => jacoco::parse(&mut input, &ctx, opts).map(Report::Coverage),
        ReportFormat::Sarif => sarif::parse(&mut input, &ctx).map(Report::Lint),
        ReportFormat::CargoJson => cargo_json::parse(&mut input, &ctx).map(Report::Lint),
        ReportFormat::Checkstyle => checkstyle::parse(&mut input, &ctx).map(Report::Lint),
        ReportFormat::RuffJson => ruff::parse(&mut input, &ctx).map(Report::Lint),
        ReportFormat::MypyJson => mypy::parse(&mut input, &ctx).map(Report::Lint),
        ReportFormat::EslintJson => eslint::parse(&mut input, &ctx).map(Report::Lint),
        ReportFormat::Lizard => lizard::parse(&mut input, &ctx).map(Report::Complexity),
        ReportFormat::GoTestJson => go_test::parse(&mut input, &ctx).map(Report::Tests),
        ReportFormat::GoCover => go_cover::parse(&mut input, &ctx, opts).map(Report::Coverage),
        ReportFormat::GoVet => {
            compiler_lines::parse(&mut input, &ctx, compiler_lines::Tool::GoVet).map(Report::Lint)
        }
        ReportFormat::Tsc => {
            compiler_lines::parse(&mut input, &ctx, compiler_lines::Tool::Tsc).map(Report::Lint)
        }
        ReportFormat::JestJson => jest::parse(&mut input, &ctx).map(Report::Tests),
        ReportFormat::IstanbulJson => istanbul::parse(&mut input, &ctx, opts).map(Report::Coverage),
    }
}

/// Opens and parses the report at `path`; errors name the path as given.
///
/// Only a regular file is read, and the path's last component must not be a symbolic
/// link: `/dev/zero` would be read forever and a FIFO would block the reader. The file is
/// opened with `O_NOFOLLOW | O_NONBLOCK` and checked on the open descriptor, so nothing
/// can swap it in between. Its directories are followed wherever they lead: the caller
/// chose the path. A path the work tree names goes through [`parse_file_in_tree`].
pub fn parse_file(
    format: ReportFormat,
    path: &Path,
    opts: &ParseOptions,
) -> Result<Report, ParseError> {
    let file = tree_file::open_regular(path);
    parse_opened(format, path, file, opts)
}

/// [`parse_file`] for a report the work tree `root` names (a check writes it): it is also
/// refused unless it lies inside the work tree. Symbolic links to directories are followed
/// only while they stay inside, so `out/report.xml` with `out` linking to `/etc` or to
/// `../../elsewhere` is an error naming the link and where it leads.
pub fn parse_file_in_tree(
    format: ReportFormat,
    root: &Path,
    path: &Path,
    opts: &ParseOptions,
) -> Result<Report, ParseError> {
    let file = tree_file::open_in_tree(root, path);
    parse_opened(format, path, file, opts)
}

fn parse_opened(
    format: ReportFormat,
    path: &Path,
    file: Result<File, Refusal>,
    opts: &ParseOptions,
) -> Result<Report, ParseError> {
    let source = path.display().to_string();
    let file = file.map_err(|refusal| ParseError {
        source_name: source.clone(),
        line: None,
        column: None,
        byte: None,
        format,
        message: match refusal {
            Refusal::NotRegular(_) => format!("cannot read the report: {refusal}"),
            _ => format!("cannot open the report: {refusal}"),
        },
    })?;
    parse(
        format,
        BufReader::with_capacity(FILE_BUFFER_BYTES, file),
        &source,
        opts,
    )
}
