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
mod pyright;
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

pub use crate::model::report_format::{ReportFormat, ReportKind, UnknownFormat};
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
        ReportFormat::PyrightJson => pyright::parse(&mut input, &ctx).map(Report::Lint),
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
