//! TAP (Test Anything Protocol) 12, 13 and 14: `TAP version N`, a plan `1..N` (first or
//! last), `ok`/`not ok` test points with `# SKIP`/`# TODO` directives, YAML diagnostics
//! blocks (`  ---` ... `  ...`) and `Bail out!`.
//!
//! Only top-level test points count. Subtests (TAP 14 `# Subtest:` blocks and older
//! indented streams) are indented, and their parent's own test point already summarises
//! them, so counting both would count a test twice. `not ok # SKIP` and `ok # SKIP` are
//! skipped; `not ok # TODO` is a known failure and counts as skipped, `ok # TODO` as passed.
//! A failing point's YAML block gives its message (`message:`), location (`file:`/`line:`,
//! `at:`/`location: file:line:col`) and output (the block itself). The test id is the
//! description, or `#N` when it has none.
//!
//! A stream with a plan that ran fewer tests than planned crashed part-way: the missing
//! tests count as errored. `Bail out!` ends the run: it is listed as an errored case and the
//! planned tests it kept from running count as errored (at least one). A stream without any plan, or
//! that ends inside a YAML block, is truncated and rejected.

use std::io::BufRead;

use super::input::{for_each_line, Ctx, Input};
use super::text::{lossy, parse_u32_str, parse_u64, TailBuf};
use super::types::{TestCase, TestOutcome, TestSummary};
use super::ParseError;

pub(crate) fn parse<R: BufRead>(
    input: &mut Input<R>,
    ctx: &Ctx,
) -> Result<TestSummary, ParseError> {
    let mut state = TapState::default();
    let last_line = for_each_line(input, ctx, |line_no, line| state.line(ctx, line_no, line))?;
    state.finish(ctx, last_line)
}

#[derive(Default)]
struct TapState {
    summary: TestSummary,
    plan: Option<u64>,
    points: u64,
    saw_version: bool,
    bailed_out: bool,
    /// The last failing point, waiting for a YAML block.
    pending: Option<TestCase>,
    /// Line where the open YAML block started.
    yaml_open: Option<u64>,
    yaml: TailBuf,
}

struct Point<'a> {
    ok: bool,
    description: &'a str,
    directive: Option<Directive>,
    reason: &'a str,
}

#[derive(Clone, Copy, PartialEq)]
enum Directive {
    Skip,
    Todo,
}

impl TapState {
    fn line(&mut self, ctx: &Ctx, line_no: u64, raw: &[u8]) -> Result<(), ParseError> {
        let text = lossy(raw);
        if self.yaml_open.is_some() {
            self.yaml_line(&text);
            return Ok(());
        }
        let indent = text.len() - text.trim_start().len();
        let line = text.trim_end();
        if indent > 0 {
            if line.trim() == "---" && indent <= 2 && self.pending.is_some() {
                self.yaml_open = Some(line_no);
                self.yaml.clear();
            }
            return Ok(()); // subtest lines and diagnostics of passing points
        }
        self.flush_pending();
        if let Some(version) = line.strip_prefix("TAP version ") {
            if parse_u64(version.trim().as_bytes()).is_none() {
                return Err(ctx.line(line_no, format!("bad TAP version line `{line}`")));
            }
            self.saw_version = true;
        } else if let Some(count) = plan_count(line) {
            let count = count.ok_or_else(|| ctx.line(line_no, format!("bad TAP plan `{line}`")))?;
            if self.plan.replace(count).is_some() {
                return Err(ctx.line(line_no, "a second TAP plan".to_string()));
            }
        } else if let Some(point) = test_point(line) {
            self.point(point);
        } else if let Some(reason) = line.strip_prefix("Bail out!") {
            // Not a test itself: the tests it kept from running are counted in `finish`.
            let mut case = TestCase::new("Bail out!".to_string(), TestOutcome::Errored);
            case.message = Some(reason.trim())
                .filter(|r| !r.is_empty())
                .map(str::to_string);
            self.summary.problems.push(case);
            self.bailed_out = true;
        }
        Ok(())
    }

    fn point(&mut self, point: Point) {
        self.points = self.points.saturating_add(1);
        let outcome = match (point.ok, point.directive) {
            (_, Some(Directive::Skip)) | (false, Some(Directive::Todo)) => TestOutcome::Skipped,
            (true, _) => TestOutcome::Passed,
            (false, None) => TestOutcome::Failed,
        };
        if outcome == TestOutcome::Passed {
            self.summary.count(outcome);
            return;
        }
        let id = if point.description.is_empty() {
            format!("#{}", self.points)
        } else {
            point.description.replace("\\#", "#")
        };
        let mut case = TestCase::new(id, outcome);
        case.message = Some(point.reason.to_string()).filter(|r| !r.is_empty());
        self.pending = Some(case);
    }

    fn yaml_line(&mut self, text: &str) {
        let trimmed = text.trim();
        if trimmed == "..." {
            self.yaml_open = None;
            let output = self.yaml.take();
            if let (Some(case), Some(output)) = (self.pending.as_mut(), output) {
                apply_yaml(case, &output);
                case.output = Some(output);
            }
            self.flush_pending();
            return;
        }
        self.yaml.push(text.strip_prefix("  ").unwrap_or(text));
        self.yaml.push("\n");
    }

    fn flush_pending(&mut self) {
        if let Some(case) = self.pending.take() {
            self.summary.record(case);
        }
    }

    fn finish(mut self, ctx: &Ctx, last_line: u64) -> Result<TestSummary, ParseError> {
        if let Some(start) = self.yaml_open {
            let msg =
                format!("unexpected end of input inside the YAML block opened at line {start}");
            return Err(ctx.expected(super::error::Position::line(last_line), &msg));
        }
        self.flush_pending();
        let plan = match (self.plan, self.bailed_out) {
            (Some(plan), _) => plan,
            (None, true) => self.points.saturating_add(1),
            (None, false) => {
                let what = if self.points == 0 && !self.saw_version {
                    "no TAP plan or test points"
                } else {
                    "no TAP plan (`1..N`): the stream is truncated"
                };
                return Err(ctx.expected(super::error::Position::line(last_line), what));
            }
        };
        let mut missing = plan.saturating_sub(self.points);
        if self.bailed_out {
            missing = missing.max(1);
        }
        if missing > 0 && !self.bailed_out {
            let mut case = TestCase::new("(plan)".to_string(), TestOutcome::Errored);
            case.message = Some(format!(
                "planned {plan} tests but only {} ran; {missing} counted as errored",
                self.points
            ));
            self.summary.problems.push(case);
        }
        self.summary.errored = self.summary.errored.saturating_add(missing);
        Ok(self.summary)
    }
}

/// `Some(Some(n))` for a plan line `1..n [# reason]`, `Some(None)` for a malformed one.
fn plan_count(line: &str) -> Option<Option<u64>> {
    let rest = line.strip_prefix("1..")?;
    let digits = rest
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap_or("");
    let after = rest.get(digits.len()..).unwrap_or("").trim();
    Some(parse_u64(digits.as_bytes()).filter(|_| after.is_empty() || after.starts_with('#')))
}

fn test_point(line: &str) -> Option<Point<'_>> {
    let (ok, rest) = if let Some(rest) = line.strip_prefix("not ok") {
        (false, rest)
    } else {
        (true, line.strip_prefix("ok")?)
    };
    if !(rest.is_empty() || rest.starts_with(' ') || rest.starts_with('\t')) {
        return None;
    }
    let rest = rest
        .trim_start()
        .trim_start_matches(|c: char| c.is_ascii_digit());
    let (description, directive, reason) = split_directive(rest);
    let description = description.trim().trim_start_matches("- ").trim();
    let description = if description == "-" { "" } else { description };
    Some(Point {
        ok,
        description,
        directive,
        reason,
    })
}

/// Splits `desc # SKIP reason` at the first unescaped `#`.
fn split_directive(rest: &str) -> (&str, Option<Directive>, &str) {
    let mut search_from = 0;
    while let Some(found) = rest.get(search_from..).and_then(|r| r.find('#')) {
        let at = search_from + found;
        if rest.get(..at).is_some_and(|before| before.ends_with('\\')) {
            search_from = at + 1;
            continue;
        }
        let description = rest.get(..at).unwrap_or(rest);
        let comment = rest.get(at + 1..).unwrap_or("").trim_start();
        let word: String = comment
            .chars()
            .take(4)
            .collect::<String>()
            .to_ascii_uppercase();
        let directive = match word.as_str() {
            "SKIP" => Some(Directive::Skip),
            "TODO" => Some(Directive::Todo),
            _ => None,
        };
        let reason = comment.get(4..).unwrap_or("");
        let reason = reason
            .trim_start_matches(|c: char| c.is_ascii_alphabetic())
            .trim();
        return match directive {
            Some(d) => (description, Some(d), reason),
            None => (description, None, ""),
        };
    }
    (rest, None, "")
}

/// Picks `message`, `file`, `line` and `at`/`location` out of a diagnostics block.
fn apply_yaml(case: &mut TestCase, yaml: &str) {
    for entry in yaml.lines() {
        let Some((key, value)) = entry.trim().split_once(':') else {
            continue;
        };
        let value = value.trim().trim_matches(|c| c == '\'' || c == '"');
        match key {
            "message" if !value.is_empty() && value != "|-" && value != "|" => {
                case.message = Some(value.to_string());
            }
            "file" if !value.is_empty() => case.file = Some(value.to_string()),
            "line" => case.line = parse_u32_str(value).or(case.line),
            "at" | "location" if !value.is_empty() => {
                let mut parts = value.rsplitn(3, ':');
                let (col, line, file) = (parts.next(), parts.next(), parts.next());
                let (file, line) = match (file, line.and_then(parse_u32_str)) {
                    (Some(file), Some(line)) => (file, line),
                    _ => match (line, col.and_then(parse_u32_str)) {
                        (Some(file), Some(line)) => (file, line),
                        _ => continue,
                    },
                };
                case.file = Some(file.trim_start_matches("file://").to_string());
                case.line = Some(line);
            }
            _ => {}
        }
    }
}
