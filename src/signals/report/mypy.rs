//! `mypy --output json` (mypy 1.11+): one JSON object per line, `{file, line, column,
//! end_line, end_column, message, hint, code, severity}`. No line at all is a clean run.
//!
//! Tool = `mypy`; rule = `code` (`assignment`, `union-attr`; `syntax` for a file that does
//! not parse). A type error is an Error — code that does not type-check is broken as
//! written, as a compiler's error is — and `severity: note` a Note. mypy's columns count
//! from 0; findings count from 1. The `hint`, when there is one, is the suggested fix.

use std::io::BufRead;

use serde::Deserialize;

use super::input::{for_each_line, Ctx, Input};
use super::json::from_line;
use super::types::{LintFinding, LintLevel, LintSummary};
use super::ParseError;

pub(crate) fn parse<R: BufRead>(
    input: &mut Input<R>,
    ctx: &Ctx,
) -> Result<LintSummary, ParseError> {
    let mut findings = Vec::new();
    for_each_line(input, ctx, |line_no, line| {
        if line.iter().all(u8::is_ascii_whitespace) {
            return Ok(());
        }
        let error: Error = from_line(line, line_no, ctx)?;
        findings.push(finding(error));
        Ok(())
    })?;
    Ok(LintSummary { findings })
}

#[derive(Deserialize)]
struct Error {
    file: String,
    line: Option<i64>,
    column: Option<i64>,
    message: String,
    hint: Option<String>,
    code: Option<String>,
    severity: String,
}

fn finding(e: Error) -> LintFinding {
    let level = match e.severity.as_str() {
        "note" => LintLevel::Note,
        "warning" => LintLevel::Warning,
        _ => LintLevel::Error,
    };
    let positive = |n: Option<i64>| n.and_then(|n| u32::try_from(n).ok());
    LintFinding {
        context: None,
        tool: "mypy".to_string(),
        rule: e.code,
        level,
        message: e.message,
        file: Some(e.file),
        line: positive(e.line).filter(|l| *l > 0),
        column: positive(e.column).map(|c| c + 1),
        suggested_fix: e.hint.filter(|h| !h.is_empty()),
    }
}
