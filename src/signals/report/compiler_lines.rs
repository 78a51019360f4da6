//! Line-per-finding compiler output, read as a report: `tsc --noEmit` and `go vet`.
//!
//! - tsc: `file(line,col): error TS2322: text` (`--pretty false`), or `file:line:col -
//!   error TS2322: text` (`--pretty`, ANSI colours removed); indented lines after a finding
//!   continue its message (tsc's message chains). Errors without a file (`error TS5058:
//!   The specified path does not exist`) are findings without a place. Every finding is an
//!   Error: a type error weighs at least like a lint error.
//! - go vet: `file.go:line:col: text` (also prefixed `vet: `), with `# package` headers
//!   between packages. Every finding is an Error, rule = `vet`; a type-check error that
//!   kept vet from analysing (`undefined: x`) is one too.
//!
//! Both tools print nothing when the code is clean, so empty input is a clean report here,
//! unlike every other format. Non-empty input in which no line has the format's shape is
//! refused (it is another tool's output), naming the first line.

use std::io::BufRead;

use super::error::Position;
use super::input::{for_each_line, Ctx, Input};
use super::text::{lossy, parse_u32_str, strip_ansi};
use super::types::{LintFinding, LintLevel, LintSummary};
use super::ParseError;

/// Which compiler's lines.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tool {
    Tsc,
    GoVet,
}

pub(crate) fn parse<R: BufRead>(
    input: &mut Input<R>,
    ctx: &Ctx,
    tool: Tool,
) -> Result<LintSummary, ParseError> {
    let mut summary = LintSummary::default();
    let mut first_unknown: Option<(u64, String)> = None;
    let mut recognised = 0u64;
    let mut continuing = false;
    let last_line = for_each_line(input, ctx, |line_no, raw| {
        let text = lossy(raw);
        let clean = strip_ansi(&text);
        let line = clean.trim_end();
        if line.trim().is_empty() {
            continuing = false;
            return Ok(());
        }
        let indented = line.starts_with(' ') || line.starts_with('\t');
        if indented && continuing {
            if let Some(last) = summary.findings.last_mut() {
                if last.message.len() < 4096 {
                    last.message.push('\n');
                    last.message.push_str(line.trim());
                }
            }
            return Ok(());
        }
        let finding = match tool {
            Tool::Tsc => tsc_line(line.trim_start()),
            Tool::GoVet => vet_line(line.trim_start()),
        };
        match finding {
            Some(finding) => {
                recognised += 1;
                continuing = tool == Tool::Tsc;
                summary.findings.push(finding);
            }
            None => {
                continuing = false;
                if !is_known_chatter(tool, line) && first_unknown.is_none() {
                    first_unknown = Some((line_no, line.chars().take(120).collect()));
                }
            }
        }
        Ok(())
    })?;
    if recognised == 0 {
        if let Some((line_no, text)) = first_unknown {
            let shape = match tool {
                Tool::Tsc => "`file(line,col): error TSnnnn: message`",
                Tool::GoVet => "`file.go:line:col: message`",
            };
            return Err(ctx.expected(
                Position::line(line_no),
                &format!("no line of the shape {shape}; line {line_no} is `{text}`; last line {last_line}"),
            ));
        }
    }
    Ok(summary)
}

/// Lines the tools print besides findings.
fn is_known_chatter(tool: Tool, line: &str) -> bool {
    let t = line.trim();
    match tool {
        Tool::Tsc => {
            t.starts_with("Found ")
                || t.starts_with("Errors  Files")
                || t.chars().next().is_some_and(|c| c.is_ascii_digit())
                || t.starts_with('~')
                || t.starts_with("npm ")
        }
        Tool::GoVet => {
            t.starts_with('#') || t.starts_with("go: downloading") || t.starts_with("exit status")
        }
    }
}

fn finding(tool: &str, rule: Option<String>, message: &str) -> LintFinding {
    LintFinding {
        tool: tool.to_string(),
        rule,
        level: LintLevel::Error,
        message: message.trim().to_string(),
        file: None,
        line: None,
        column: None,
        suggested_fix: None,
        context: None,
    }
}

/// `src/a.ts(55,9): error TS2322: …`, `src/a.ts:55:9 - error TS2322: …`, `error TS5058: …`.
fn tsc_line(line: &str) -> Option<LintFinding> {
    let (place, rest) = if let Some(at) = line.find("): error TS") {
        (Some(line.get(..=at)?), line.get(at + 3..)?)
    } else if let Some(at) = line.find(" - error TS") {
        (Some(line.get(..at)?), line.get(at + 3..)?)
    } else if line.starts_with("error TS") {
        (None, line)
    } else {
        return None;
    };
    let rest = rest.strip_prefix("error ")?;
    let (code, message) = rest.split_once(": ")?;
    if !code.starts_with("TS") || !code[2..].bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut f = finding("tsc", Some(code.to_string()), message);
    if let Some(place) = place {
        let (file, line_no, column) = if let Some(open) = place.rfind('(') {
            let inner = place.get(open + 1..place.len() - 1)?;
            let (l, c) = inner.split_once(',')?;
            (place.get(..open)?, parse_u32_str(l)?, parse_u32_str(c))
        } else {
            let mut parts = place.rsplitn(3, ':');
            let c = parts.next()?;
            let l = parts.next()?;
            (parts.next()?, parse_u32_str(l)?, parse_u32_str(c))
        };
        if file.is_empty() {
            return None;
        }
        f.file = Some(file.to_string());
        f.line = Some(line_no);
        f.column = column;
    }
    Some(f)
}

/// `pkg/new.go:7:9: fmt.Sprintf format …`, also prefixed `vet: `.
fn vet_line(line: &str) -> Option<LintFinding> {
    let line = line.strip_prefix("vet: ").unwrap_or(line);
    let (file, rest) = line.split_once(".go:")?;
    if file.is_empty() || file.contains(' ') {
        return None;
    }
    let mut parts = rest.splitn(3, ':');
    let line_no = parse_u32_str(parts.next()?)?;
    let second = parts.next()?;
    let (column, message) = match parse_u32_str(second) {
        Some(column) => (Some(column), parts.next()?),
        None => (None, rest.split_once(':')?.1),
    };
    let mut f = finding("go vet", Some("vet".to_string()), message);
    f.file = Some(format!("{file}.go"));
    f.line = Some(line_no);
    f.column = column;
    Some(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tsc_lines_in_both_styles() {
        let plain = tsc_line(
            "src/a.ts(5,7): error TS2322: Type 'string' is not assignable to type 'number'.",
        )
        .unwrap();
        assert_eq!(
            (
                plain.file.as_deref(),
                plain.line,
                plain.column,
                plain.rule.as_deref()
            ),
            (Some("src/a.ts"), Some(5), Some(7), Some("TS2322"))
        );
        let pretty = tsc_line("src/a.ts:5:7 - error TS2304: Cannot find name 'x'.").unwrap();
        assert_eq!(
            (pretty.file.as_deref(), pretty.line),
            (Some("src/a.ts"), Some(5))
        );
        assert!(
            tsc_line("error TS5058: The specified path does not exist: 'x'.")
                .unwrap()
                .file
                .is_none()
        );
        assert!(tsc_line("Found 2 errors in 1 file.").is_none());
    }

    #[test]
    fn vet_lines_with_and_without_prefix() {
        let f = vet_line("vet: ./main.go:9:14: undeclared name: foo").unwrap();
        assert_eq!(
            (f.file.as_deref(), f.line, f.column),
            (Some("./main.go"), Some(9), Some(14))
        );
        assert_eq!(f.message, "undeclared name: foo");
        let g = vet_line("pkg/new.go:7: fmt.Sprintf format %d has arg name of wrong type string")
            .unwrap();
        assert_eq!((g.line, g.column), (Some(7), None));
    }
}
