//! `pyright --outputjson`: one JSON document, `{version, generalDiagnostics: [{file,
//! severity, message, range: {start: {line, character}}, rule}], summary}`.
//!
//! Tool = `pyright`; rule = `rule` (`reportReturnType`, `reportUndefinedVariable`; none for
//! a syntax error). A type error (`severity: error`) is an Error — code that does not
//! type-check is broken as written, as mypy's is — a `warning` a Warning, `information` a
//! Note. pyright counts lines and characters from 0; findings count from 1. A document
//! without `generalDiagnostics` is not pyright's (refused, never read as clean).

use std::io::BufRead;

use serde::Deserialize;

use super::input::{Ctx, Input};
use super::json::from_input;
use super::types::{LintFinding, LintLevel, LintSummary};
use super::ParseError;

pub(crate) fn parse<R: BufRead>(
    input: &mut Input<R>,
    ctx: &Ctx,
) -> Result<LintSummary, ParseError> {
    let output: Output = from_input(input, ctx)?;
    let findings = output
        .general_diagnostics
        .into_iter()
        .map(finding)
        .collect();
    Ok(LintSummary { findings })
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Output {
    general_diagnostics: Vec<Diagnostic>,
}

#[derive(Deserialize)]
struct Diagnostic {
    file: String,
    severity: String,
    message: String,
    range: Option<Range>,
    rule: Option<String>,
}

#[derive(Deserialize)]
struct Range {
    start: Position,
}

#[derive(Deserialize)]
struct Position {
    line: u32,
    character: u32,
}

fn finding(d: Diagnostic) -> LintFinding {
    let level = match d.severity.as_str() {
        "error" => LintLevel::Error,
        "warning" => LintLevel::Warning,
        _ => LintLevel::Note,
    };
    let start = d.range.map(|r| r.start);
    LintFinding {
        context: None,
        tool: "pyright".to_string(),
        rule: d.rule,
        level,
        // pyright explains on indented lines after the first; the first says what is wrong.
        message: d.message,
        file: Some(d.file),
        line: start.as_ref().map(|p| p.line.saturating_add(1)),
        column: start.as_ref().map(|p| p.character.saturating_add(1)),
        suggested_fix: None,
    }
}
