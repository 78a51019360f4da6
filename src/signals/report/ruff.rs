//! `ruff check --output-format=json`: a JSON array of diagnostics
//! `{code, message, filename, location: {row, column}, fix: {message, edits[].content},
//! severity?}`.
//!
//! Tool = `ruff`; rule = `code` (`F401`, `E501`; none for syntax errors). Level: an error
//! in the code — a syntax error (no `code`), `E9xx`, an undefined name (`F821`–`F823`),
//! pyflakes' `F63x`/`F7xx` — is an Error; any other rule violation a Warning, whatever
//! `severity` says (ruff 0.15+ writes `error` for every violation, which would make a
//! docstring style rule block like a syntax error); `severity: info` is a Note. Suggested fix = the fix's `message` (e.g. "Remove unused import: `os`"), else
//! its edits' replacement text joined by newlines.

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
    let diagnostics: Vec<Diagnostic> = from_input(input, ctx)?;
    let findings = diagnostics.into_iter().map(finding).collect();
    Ok(LintSummary { findings })
}

#[derive(Deserialize)]
struct Diagnostic {
    code: Option<String>,
    message: String,
    filename: String,
    location: Option<Location>,
    fix: Option<Fix>,
    severity: Option<String>,
}

#[derive(Deserialize)]
struct Location {
    row: Option<u32>,
    column: Option<u32>,
}

#[derive(Deserialize)]
struct Fix {
    message: Option<String>,
    #[serde(default)]
    edits: Vec<Edit>,
}

#[derive(Deserialize)]
struct Edit {
    content: Option<String>,
}

fn finding(d: Diagnostic) -> LintFinding {
    let level = match (d.severity.as_deref(), d.code.as_deref()) {
        (Some("info" | "note" | "hint"), _) => LintLevel::Note,
        (_, None) => LintLevel::Error,
        (_, Some(code)) if breaks_the_code(code) => LintLevel::Error,
        _ => LintLevel::Warning,
    };
    let suggested_fix = d.fix.and_then(|fix| {
        fix.message.filter(|m| !m.is_empty()).or_else(|| {
            let contents: Vec<String> = fix.edits.into_iter().filter_map(|e| e.content).collect();
            (!contents.is_empty()).then(|| contents.join("\n"))
        })
    });
    LintFinding {
        context: None,
        tool: "ruff".to_string(),
        rule: d.code,
        level,
        message: d.message,
        file: Some(d.filename),
        line: d.location.as_ref().and_then(|l| l.row),
        column: d.location.as_ref().and_then(|l| l.column),
        suggested_fix,
    }
}

/// Rules whose violation means the code does not run as written.
fn breaks_the_code(code: &str) -> bool {
    code.starts_with("E9")
        || code.starts_with("F63")
        || code.starts_with("F7")
        || matches!(code, "F821" | "F822" | "F823")
}
