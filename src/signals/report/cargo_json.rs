//! `cargo build|check|clippy|test --message-format=json`: one JSON object per line, of
//! which only `reason: "compiler-message"` matters (`compiler-artifact`,
//! `build-script-executed`, `build-finished` and friends are skipped).
//!
//! Each diagnostic is one finding: tool = `clippy` for `clippy::` codes, else `rustc`; rule =
//! `code.code` (`E0425`, `clippy::needless_return`, `unused_variables`); level `error` (and
//! `error: internal compiler error`) → Error, `warning` → Warning, `note`/`help` → Note;
//! `failure-note` lines and the span-less "aborting due to ..." / "N warnings emitted"
//! summaries are dropped. File/line/column come from the primary span. Suggested fix =
//! the `suggested_replacement`s of `MachineApplicable` spans (in the message or its
//! children), joined by newlines; when they are all deletions, the help text that offered
//! them. Identical diagnostics (cargo reports a lib's warnings again for its test target)
//! are kept once.
//!
//! Lines that are not JSON objects (a `Compiling ...` line when stderr was captured too)
//! are tolerated; a line that starts like an object but does not parse is an error, and so
//! is input with no JSON message at all.

use std::collections::HashSet;
use std::io::BufRead;

use serde::Deserialize;

use super::error::Position;
use super::input::{for_each_line, Ctx, Input};
use super::json::from_line;
use super::types::{LintFinding, LintLevel, LintSummary};
use super::ParseError;

pub(crate) fn parse<R: BufRead>(
    input: &mut Input<R>,
    ctx: &Ctx,
) -> Result<LintSummary, ParseError> {
    let mut summary = LintSummary::default();
    let mut seen: HashSet<LintFinding> = HashSet::new();
    let mut messages = 0u64;
    let last_line = for_each_line(input, ctx, |line_no, line| {
        let line = line.trim_ascii();
        if !line.starts_with(b"{") {
            return Ok(());
        }
        let envelope: Envelope = from_line(line, line_no, ctx)?;
        messages += 1;
        let Some(message) = envelope
            .message
            .filter(|_| envelope.reason == "compiler-message")
        else {
            return Ok(());
        };
        if let Some(finding) = finding(message) {
            if seen.insert(finding.clone()) {
                summary.findings.push(finding);
            }
        }
        Ok(())
    })?;
    if messages == 0 {
        return Err(ctx.expected(Position::line(last_line), "no JSON message lines"));
    }
    Ok(summary)
}

#[derive(Deserialize)]
struct Envelope {
    reason: String,
    message: Option<Diagnostic>,
}

#[derive(Deserialize)]
struct Diagnostic {
    message: String,
    code: Option<Code>,
    level: String,
    #[serde(default)]
    spans: Vec<Span>,
    #[serde(default)]
    children: Vec<Diagnostic>,
}

#[derive(Deserialize)]
struct Code {
    code: String,
}

#[derive(Deserialize)]
struct Span {
    file_name: String,
    line_start: u32,
    column_start: u32,
    is_primary: bool,
    suggested_replacement: Option<String>,
    suggestion_applicability: Option<String>,
}

fn finding(d: Diagnostic) -> Option<LintFinding> {
    let level = match d.level.as_str() {
        "error" | "error: internal compiler error" => LintLevel::Error,
        "warning" => LintLevel::Warning,
        "note" | "help" => LintLevel::Note,
        _ => return None, // failure-note
    };
    if d.spans.is_empty() && d.code.is_none() && is_summary(&d.message) {
        return None;
    }
    let rule = d.code.map(|c| c.code);
    let tool = match &rule {
        Some(code) if code.starts_with("clippy::") => "clippy",
        _ => "rustc",
    };
    let primary = d.spans.iter().find(|s| s.is_primary).or(d.spans.first());
    Some(LintFinding {
        context: None,
        tool: tool.to_string(),
        level,
        file: primary.map(|s| s.file_name.clone()),
        line: primary.map(|s| s.line_start),
        column: primary.map(|s| s.column_start),
        suggested_fix: machine_fix(&d.spans, &d.message).or_else(|| {
            d.children
                .iter()
                .find_map(|c| machine_fix(&c.spans, &c.message))
        }),
        rule,
        message: d.message,
    })
}

/// The machine-applicable replacements among `spans`, or `help` when they only delete.
fn machine_fix(spans: &[Span], help: &str) -> Option<String> {
    let replacements: Vec<&str> = spans
        .iter()
        .filter(|s| s.suggestion_applicability.as_deref() == Some("MachineApplicable"))
        .filter_map(|s| s.suggested_replacement.as_deref())
        .collect();
    if replacements.is_empty() {
        return None;
    }
    let texts: Vec<&str> = replacements.into_iter().filter(|r| !r.is_empty()).collect();
    if texts.is_empty() {
        return Some(help.to_string());
    }
    Some(texts.join("\n"))
}

fn is_summary(message: &str) -> bool {
    message.starts_with("aborting due to")
        || message.ends_with("warning emitted")
        || message.ends_with("warnings emitted")
        || message.contains("generated ") && message.contains(" warning")
}
