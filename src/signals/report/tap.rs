//! TAP (Test Anything Protocol) 12, 13 and 14: `TAP version N`, a plan `1..N` (first or
//! last), `ok`/`not ok` test points with `# SKIP`/`# TODO` directives, YAML diagnostics
//! blocks (`  ---` ... `  ...`) and `Bail out!`.
//!
//! Subtests (TAP 14 `# Subtest:` blocks, node:test's nested `describe`/`it`, older indented
//! streams) are indented under their parent. Every leaf test point counts, at any depth; a
//! point with subtests of its own is a suite whose result only summarises them, so it is
//! not counted again. Only the top-level plan is checked against the top-level points.
//! `not ok # SKIP` and `ok # SKIP` are skipped; `not ok # TODO` is a known failure and
//! counts as skipped, `ok # TODO` as passed. A failing point's YAML block gives its message
//! (`error:` as node:test writes it, else `message:`, with `expected:`/`actual:` added),
//! location (`location:`/`at: file:line:col`, `file:`/`line:`) and output (the block
//! itself). The test id is the description, prefixed by its parents' (`suite > test`), or
//! `#N` when it has none.
//!
//! A stream with a plan that ran fewer tests than planned crashed part-way: the missing
//! tests count as errored. `Bail out!` ends the run: it is listed as an errored case and the
//! planned tests it kept from running count as errored (at least one). A stream without any
//! plan, or that ends inside a YAML block, is truncated and rejected.

use std::io::BufRead;

use super::input::{for_each_line, Ctx, Input};
use super::text::{lossy, parse_u32_str, parse_u64, TailBuf};
use super::types::{TestCase, TestOutcome, TestRef, TestSummary};
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
    /// The last failing point, waiting for a YAML block, and its indent.
    pending: Option<(TestCase, usize)>,
    /// The indent of the last point: its YAML block is indented two more.
    last_point_indent: usize,
    /// Line where the open YAML block started, and the indent its lines drop.
    yaml_open: Option<(u64, usize)>,
    yaml: TailBuf,
    /// Per depth: whether a deeper point came since the last point at this depth (which
    /// makes the next point at this depth a suite).
    children_seen: Vec<bool>,
    /// Names of the `# Subtest:` blocks open at each depth, for ids.
    subtest_names: Vec<String>,
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
        if let Some((_, drop)) = self.yaml_open {
            self.yaml_line(&text, drop);
            return Ok(());
        }
        let indent = text.len() - text.trim_start().len();
        let line = text.trim();
        if line == "---" && indent <= self.last_point_indent + 2 {
            if self.pending.is_some() {
                self.yaml_open = Some((line_no, indent));
                self.yaml.clear();
            } else {
                // A passing point's block: read past it.
                self.yaml_open = Some((line_no, usize::MAX));
            }
            return Ok(());
        }
        self.flush_pending();
        let depth = indent / 4;
        if let Some(name) = line.strip_prefix("# Subtest:") {
            self.subtest_names.truncate(depth);
            self.subtest_names.resize(depth, String::new());
            self.subtest_names.push(name.trim().to_string());
            return Ok(());
        }
        if let Some(point) = test_point(line) {
            self.point(point, indent, depth);
            return Ok(());
        }
        if let Some(reason) = line.strip_prefix("Bail out!") {
            // Not a test itself: the tests it kept from running are counted in `finish`.
            let mut case = TestCase::new("Bail out!".to_string(), TestOutcome::Errored);
            case.message = Some(reason.trim())
                .filter(|r| !r.is_empty())
                .map(str::to_string);
            self.summary.problems.push(case);
            self.bailed_out = true;
            return Ok(());
        }
        if indent > 0 {
            return Ok(()); // nested plans and comments
        }
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
        }
        Ok(())
    }

    fn point(&mut self, point: Point, indent: usize, depth: usize) {
        self.last_point_indent = indent;
        if depth == 0 {
            self.points = self.points.saturating_add(1);
        }
        if self.children_seen.len() <= depth {
            self.children_seen.resize(depth + 1, false);
        }
        let is_suite = std::mem::replace(&mut self.children_seen[depth], false);
        for seen in self.children_seen.iter_mut().take(depth) {
            *seen = true;
        }
        self.children_seen.truncate(depth + 1);
        if is_suite {
            return; // its subtests were counted
        }
        let outcome = match (point.ok, point.directive) {
            (_, Some(Directive::Skip)) | (false, Some(Directive::Todo)) => TestOutcome::Skipped,
            (true, _) => TestOutcome::Passed,
            (false, None) => TestOutcome::Failed,
        };
        let own = if point.description.is_empty() {
            format!("#{}", self.points)
        } else {
            point.description.replace("\\#", "#")
        };
        let parents: Vec<&str> = self
            .subtest_names
            .iter()
            .take(depth)
            .map(String::as_str)
            .filter(|n| !n.is_empty())
            .collect();
        let id = if parents.is_empty() {
            own
        } else {
            format!("{} > {own}", parents.join(" > "))
        };
        if outcome == TestOutcome::Passed {
            self.summary.pass(TestRef::named(id));
            return;
        }
        let mut case = TestCase::new(id, outcome);
        case.message = Some(point.reason.to_string()).filter(|r| !r.is_empty());
        self.pending = Some((case, indent));
    }

    fn yaml_line(&mut self, text: &str, drop: usize) {
        let trimmed = text.trim();
        if trimmed == "..." {
            self.yaml_open = None;
            let output = self.yaml.take();
            if drop != usize::MAX {
                if let (Some((case, _)), Some(output)) = (self.pending.as_mut(), output) {
                    apply_yaml(case, &output);
                    // A skipped test's block holds its timing, not a failure.
                    if case.outcome != TestOutcome::Skipped {
                        case.output = Some(output);
                    }
                }
            }
            self.flush_pending();
            return;
        }
        if drop == usize::MAX {
            return;
        }
        let indent = text.len() - text.trim_start().len();
        self.yaml.push(text.get(indent.min(drop)..).unwrap_or(text));
        self.yaml.push("\n");
    }

    fn flush_pending(&mut self) {
        if let Some((case, _)) = self.pending.take() {
            self.summary.record(case);
        }
    }

    fn finish(mut self, ctx: &Ctx, last_line: u64) -> Result<TestSummary, ParseError> {
        if let Some((start, _)) = self.yaml_open {
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

/// Picks the message (`error:`, else `message:`, then `expected:`/`actual:`), `file`,
/// `line` and `at`/`location` out of a diagnostics block.
fn apply_yaml(case: &mut TestCase, yaml: &str) {
    let mut error = None;
    let mut message = None;
    let mut expected = None;
    let mut actual = None;
    let mut lines = yaml.lines().peekable();
    while let Some(entry) = lines.next() {
        let nested = entry.starts_with(' ');
        let Some((key, value)) = entry.trim().split_once(':') else {
            continue;
        };
        // Nested mappings give a place (`at: {file, line}`); other nested lines are
        // values read with their key.
        if nested && !matches!(key, "file" | "line") {
            continue;
        }
        let raw = value.trim();
        let value = if matches!(raw, "|-" | "|" | ">-" | ">" | "|+") {
            // A block scalar: its first non-blank line.
            let mut first = None;
            while let Some(next) = lines.next_if(|l| l.starts_with(' ') || l.trim().is_empty()) {
                if first.is_none() && !next.trim().is_empty() {
                    first = Some(next.trim().to_string());
                }
            }
            first.unwrap_or_default()
        } else {
            raw.trim_matches(|c| c == '\'' || c == '"').to_string()
        };
        match key {
            "error" if !value.is_empty() => error = Some(value),
            "message" if !value.is_empty() => message = Some(value),
            "expected" => expected = Some(value),
            "actual" => actual = Some(value),
            "file" if !value.is_empty() => case.file = Some(value),
            "line" => case.line = parse_u32_str(&value).or(case.line),
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
    let mut text = match (error, message) {
        (Some(e), _) => Some(e),
        (None, m) => m,
    };
    let values = expected
        .zip(actual)
        .filter(|(e, a)| !e.is_empty() && !a.is_empty());
    if let Some((expected, actual)) = values {
        let values = format!("expected: {expected}, actual: {actual}");
        text = Some(match text {
            Some(t) => format!("{t} ({values})"),
            None => values,
        });
    }
    if text.is_some() {
        case.message = text;
    }
}
