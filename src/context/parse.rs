//! The strict reader of an agent's `CONTEXT_GAP_REPORT`:
//!
//! ```text
//! CONTEXT_GAP_REPORT
//! ------------------
//! NEEDS: <file path or concept> | REASON: <why it blocks> | ALTERNATIVE: <if unavailable, I can X>
//! NEEDS: <file path or concept> | REASON: <why it blocks> | ALTERNATIVE: none — required
//! READY_TO_EXECUTE: false
//! ```
//!
//! The block may sit anywhere in a comment or a file, fenced or not (agents often fence it);
//! the header line may carry markdown emphasis. Inside the block the format is strict: a
//! `NEEDS:` line has exactly the three fields, in that order, each filled in; the block ends
//! with `READY_TO_EXECUTE: true` or `false`. Anything else inside the block is reported as
//! malformed, with its line number and what was expected, and never guessed at: a line that
//! is almost an item is not delivered, so the agent learns to write the format.

use serde::Serialize;

/// The first line of a report.
pub const HEADER: &str = "CONTEXT_GAP_REPORT";

/// What a `NEEDS:` line names when the agent can go on without it, or that it cannot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "text", rename_all = "snake_case")]
pub enum Alternative {
    /// `ALTERNATIVE: none — required`: without it the agent cannot execute.
    Required,
    /// What the agent will do without it.
    Fallback(String),
}

/// One well-formed `NEEDS:` line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GapItem {
    /// 1-based line of the text the report was read from.
    pub line: usize,
    pub needs: String,
    pub reason: String,
    pub alternative: Alternative,
}

impl GapItem {
    /// Without this item the agent cannot go on.
    pub fn required(&self) -> bool {
        self.alternative == Alternative::Required
    }
}

/// A line of the block that is not in the format.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Malformed {
    /// 1-based line of the text; for a missing line, the line after the block.
    pub line: usize,
    /// The line as written (empty for a missing line).
    pub text: String,
    /// What was expected there.
    pub expected: String,
}

/// A report as read: the well-formed items, `READY_TO_EXECUTE`, and every problem.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct GapReport {
    pub items: Vec<GapItem>,
    /// `None` when the line is missing or its value is neither `true` nor `false`.
    pub ready_to_execute: Option<bool>,
    pub malformed: Vec<Malformed>,
}

impl GapReport {
    /// The agent says it has what it needs and asks for nothing.
    pub fn is_ready(&self) -> bool {
        self.ready_to_execute == Some(true) && self.items.is_empty()
    }
}

const NEEDS_FORMAT: &str =
    "`NEEDS: <file path or concept> | REASON: <why it blocks> | ALTERNATIVE: <what you can do without it, or none — required>`";
const READY_FORMAT: &str = "`READY_TO_EXECUTE: true` or `READY_TO_EXECUTE: false`";

/// The first `CONTEXT_GAP_REPORT` block in `text`, if there is one.
pub fn parse_gap_report(text: &str) -> Option<GapReport> {
    if !text.contains(HEADER) {
        return None;
    }
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l.trim()));
    let (header_line, _) = lines.find(|(_, l)| is_header(l))?;
    let mut report = GapReport::default();
    let mut last_line = header_line;
    let mut ended = false;
    for (number, line) in lines {
        last_line = number;
        if line.is_empty() || is_rule(line) {
            continue;
        }
        if line.starts_with("```") || line.starts_with("~~~") {
            // A closing fence ends the block.
            break;
        }
        if let Some(value) = field(line, "READY_TO_EXECUTE") {
            report.ready_to_execute = match value {
                "true" => Some(true),
                "false" => Some(false),
                _ => {
                    report.malformed.push(Malformed {
                        line: number,
                        text: line.to_string(),
                        expected: READY_FORMAT.into(),
                    });
                    None
                }
            };
            ended = true;
            break;
        }
        match parse_item(number, line) {
            Ok(item) => report.items.push(item),
            Err(expected) => report.malformed.push(Malformed {
                line: number,
                text: line.to_string(),
                expected,
            }),
        }
    }
    if !ended {
        report.malformed.push(Malformed {
            line: last_line + 1,
            text: String::new(),
            expected: format!("the report to end with {READY_FORMAT}"),
        });
    }
    check_consistency(&mut report, last_line);
    Some(report)
}

/// A report that asks for items must say it is not ready, and one that is not ready must
/// ask for something.
fn check_consistency(report: &mut GapReport, line: usize) {
    let line = line.max(1);
    match report.ready_to_execute {
        Some(true) if !report.items.is_empty() => report.malformed.push(Malformed {
            line,
            text: "READY_TO_EXECUTE: true".into(),
            expected: "`READY_TO_EXECUTE: false` when NEEDS lines ask for something".into(),
        }),
        Some(false) if report.items.is_empty() && report.malformed.is_empty() => {
            report.malformed.push(Malformed {
                line,
                text: "READY_TO_EXECUTE: false".into(),
                expected: format!("at least one {NEEDS_FORMAT} line, or `READY_TO_EXECUTE: true`"),
            })
        }
        _ => {}
    }
}

/// `CONTEXT_GAP_REPORT`, maybe as a markdown heading or in bold.
fn is_header(line: &str) -> bool {
    line.trim_matches(|c: char| matches!(c, '*' | '_' | '#' | ':' | '`') || c.is_whitespace())
        == HEADER
}

fn is_rule(line: &str) -> bool {
    line.chars().all(|c| c == '-' || c == '=')
}

/// The value of `KEY: value` (the key exact, upper case), trimmed.
fn field<'l>(text: &'l str, key: &str) -> Option<&'l str> {
    let rest = text.trim().strip_prefix(key)?;
    Some(rest.trim_start().strip_prefix(':')?.trim())
}

fn parse_item(number: usize, line: &str) -> Result<GapItem, String> {
    if field(line, "NEEDS").is_none() {
        return Err(format!("{NEEDS_FORMAT} or {READY_FORMAT}"));
    }
    let parts: Vec<&str> = line.split('|').collect();
    let [needs, reason, alternative] = parts.as_slice() else {
        return Err(format!(
            "three fields separated by `|` ({NEEDS_FORMAT}); found {}",
            parts.len()
        ));
    };
    let value = |part: &str, key: &str| -> Result<String, String> {
        let value = field(part, key).ok_or_else(|| format!("`{key}:` in {NEEDS_FORMAT}"))?;
        if value.is_empty() {
            return Err(format!("a value after `{key}:`"));
        }
        if is_placeholder(value) {
            return Err(format!(
                "a value after `{key}:` instead of the format's placeholder"
            ));
        }
        Ok(value.to_string())
    };
    let needs = value(needs, "NEEDS")?;
    let reason = value(reason, "REASON")?;
    let alternative = field(alternative, "ALTERNATIVE")
        .ok_or_else(|| format!("`ALTERNATIVE:` in {NEEDS_FORMAT}"))?;
    let alternative = match required(alternative) {
        Some(true) => Alternative::Required,
        Some(false) => Alternative::Fallback(value(alternative_part(line), "ALTERNATIVE")?),
        None => return Err("a value after `ALTERNATIVE:` (or `none — required`)".into()),
    };
    Ok(GapItem {
        line: number,
        needs,
        reason,
        alternative,
    })
}

fn alternative_part(line: &str) -> &str {
    line.rsplit('|').next().unwrap_or(line)
}

/// The template's own `<file path or concept>` written back unchanged.
fn is_placeholder(value: &str) -> bool {
    let lower = value.to_ascii_lowercase();
    value.starts_with('<')
        && value.ends_with('>')
        && (lower.contains("file path or concept")
            || lower.contains("why it blocks")
            || lower.contains("if unavailable"))
}

/// `Some(true)` for `none — required` (any dash, brackets allowed) or a bare `none`,
/// `Some(false)` for anything else, `None` when empty.
fn required(value: &str) -> Option<bool> {
    let bare = value
        .trim_matches(|c: char| c == '<' || c == '>' || c.is_whitespace())
        .to_lowercase();
    if bare.is_empty() {
        return None;
    }
    let words: Vec<&str> = bare
        .split(|c: char| c.is_whitespace() || matches!(c, '—' | '–' | '-' | ',' | ';' | ':'))
        .filter(|w| !w.is_empty())
        .collect();
    Some(words == ["none", "required"] || words == ["none"])
}
