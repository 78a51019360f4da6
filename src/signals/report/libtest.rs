//! The plain text `cargo test` prints (libtest's pretty and terse formatters), for one test
//! binary or several concatenated (`cargo test --no-fail-fast` runs each in turn).
//!
//! `test NAME ... ok|FAILED|ignored[, reason]` lines count the tests; the id is NAME (the
//! test path, stable across runs; `- should panic` is dropped). The `---- NAME stdout ----`
//! section after `failures:` is attached to the failing case as output (the end of what
//! the test printed, then its panic, each bounded on its own), and the panic gives message
//! (with an assertion's `left:`/`right:` values), file and line. Terse output (`cargo test -q`: `..F.i`) has no per-test
//! lines, so each binary's `test result: ... N passed; N failed; N ignored` line tops the
//! counts up, and the `failures:` list names the failing tests.
//!
//! A binary that started (`running N tests`) but never printed `test result:` either
//! crashed (cargo then reports `process didn't exit successfully`, and its unreported
//! tests count as errored) or the output is truncated, which is an error.

use std::collections::HashMap;
use std::io::BufRead;

use super::error::Position;
use super::input::{for_each_line, Ctx, Input};
use super::text::{
    lossy, parse_u64, rust_panic_location, rust_panic_message, tail, TailBuf, OUTPUT_HEAD_BYTES,
};
use super::types::{TestCase, TestOutcome, TestSummary};
use super::ParseError;

pub(crate) fn parse<R: BufRead>(
    input: &mut Input<R>,
    ctx: &Ctx,
) -> Result<TestSummary, ParseError> {
    let mut state = LibtestState::default();
    let last_line = for_each_line(input, ctx, |line_no, line| {
        state.line(ctx, line_no, &lossy(line))
    })?;
    state.finish(ctx, last_line)
}

/// Per-binary counts, to reconcile with its `test result:` line.
#[derive(Default, Clone, Copy)]
struct BinaryCounts {
    started_line: u64,
    planned: u64,
    passed: u64,
    failed: u64,
    ignored: u64,
}

#[derive(Default)]
struct LibtestState {
    summary: TestSummary,
    binary: Option<BinaryCounts>,
    binaries_seen: u64,
    /// Index into `summary.problems` by test name, for attaching sections.
    failing: HashMap<String, usize>,
    section: Option<Section>,
    in_failure_list: bool,
    /// A `test x ... ` line whose result was printed later (interleaved output).
    awaiting_result: Option<String>,
}

impl LibtestState {
    fn line(&mut self, ctx: &Ctx, line_no: u64, line: &str) -> Result<(), ParseError> {
        if let Some(name) = section_header(line) {
            self.close_section();
            self.section = Some(Section {
                name: name.to_string(),
                ..Section::default()
            });
            return Ok(());
        }
        if let Some(section) = self.section.as_mut() {
            if line != "failures:" && !line.starts_with("test result: ") {
                section.push(line);
                return Ok(());
            }
            self.close_section();
        }
        if let Some(rest) = line.strip_prefix("running ") {
            if let Some(count) = rest.strip_suffix(" tests").or(rest.strip_suffix(" test")) {
                return self.start_binary(ctx, line_no, count);
            }
        }
        if let Some(rest) = line.strip_prefix("test result: ") {
            return self.end_binary(ctx, line_no, rest);
        }
        if line.contains("process didn't exit successfully") {
            self.crash_unfinished_binary();
            return Ok(());
        }
        if line == "failures:" {
            self.in_failure_list = true;
            return Ok(());
        }
        if self.in_failure_list {
            if let Some(name) = line.strip_prefix("    ") {
                self.ensure_failing(name.trim());
                return Ok(());
            }
        }
        self.test_line(line);
        Ok(())
    }

    fn start_binary(&mut self, ctx: &Ctx, line_no: u64, count: &str) -> Result<(), ParseError> {
        let planned = parse_u64(count.trim().as_bytes()).ok_or_else(|| {
            ctx.line(
                line_no,
                format!("bad test count in `running {count} tests`"),
            )
        })?;
        self.crash_unfinished_binary();
        self.binaries_seen += 1;
        self.in_failure_list = false;
        self.binary = Some(BinaryCounts {
            started_line: line_no,
            planned,
            ..BinaryCounts::default()
        });
        Ok(())
    }

    fn test_line(&mut self, line: &str) {
        if let Some(name) = self.awaiting_result.take() {
            if let Some(outcome) = result_word(line.trim()) {
                self.add(&name, outcome);
                return;
            }
            self.awaiting_result = Some(name);
        }
        let Some(rest) = line.strip_prefix("test ") else {
            if let Some(name) = line.strip_suffix(" --- FAILED") {
                self.add(name.trim(), TestOutcome::Failed); // terse formatter
            }
            return;
        };
        let Some((name, result)) = rest.split_once(" ... ") else {
            if let Some(name) = rest.strip_suffix(" ...") {
                self.awaiting_result = Some(name.to_string());
            }
            return;
        };
        let name = name.strip_suffix(" - should panic").unwrap_or(name);
        match result_word(result.trim()) {
            Some(outcome) => self.add(name, outcome),
            None => self.awaiting_result = Some(name.to_string()),
        }
    }

    fn add(&mut self, name: &str, outcome: TestOutcome) {
        if let Some(counts) = self.binary.as_mut() {
            match outcome {
                TestOutcome::Passed => counts.passed += 1,
                TestOutcome::Failed => counts.failed += 1,
                _ => counts.ignored += 1,
            }
        }
        if outcome == TestOutcome::Failed {
            if self.failing.contains_key(name) {
                self.summary.count(outcome);
                return;
            }
            self.failing
                .insert(name.to_string(), self.summary.problems.len());
        }
        self.summary
            .record(TestCase::new(name.to_string(), outcome));
    }

    /// A test named in a `failures:` list; terse output reports it nowhere else.
    fn ensure_failing(&mut self, name: &str) {
        if !name.is_empty() && !self.failing.contains_key(name) {
            self.add(name, TestOutcome::Failed);
        }
    }

    fn close_section(&mut self) {
        let Some(mut section) = self.section.take() else {
            return;
        };
        let Some(case) = self
            .failing
            .get(&section.name)
            .and_then(|&i| self.summary.problems.get_mut(i))
        else {
            return; // `successes:` output of a passing test
        };
        let text = section.panic.contents();
        if let Some((file, line)) = rust_panic_location(&text) {
            case.file = Some(file);
            case.line = Some(line);
        }
        case.message = rust_panic_message(&text).or(case.message.take());
        case.output = section.take();
    }

    fn end_binary(&mut self, ctx: &Ctx, line_no: u64, rest: &str) -> Result<(), ParseError> {
        let Some(mut counts) = self.binary.take() else {
            return Err(ctx.line(
                line_no,
                "`test result:` without a `running N tests` line".into(),
            ));
        };
        self.in_failure_list = false;
        self.awaiting_result = None;
        for part in rest.split(['.', ';']) {
            let mut words = part.split_whitespace();
            let (Some(n), Some(word)) = (words.next(), words.next()) else {
                continue;
            };
            let Some(n) = parse_u64(n.as_bytes()) else {
                continue;
            };
            let (seen, outcome) = match word {
                "passed" => (&mut counts.passed, TestOutcome::Passed),
                "failed" => (&mut counts.failed, TestOutcome::Failed),
                "ignored" => (&mut counts.ignored, TestOutcome::Skipped),
                _ => continue,
            };
            // Terse output has no per-test lines: take the missing ones from the summary.
            self.summary.add_count(outcome, n.saturating_sub(*seen));
            *seen = (*seen).max(n);
        }
        Ok(())
    }

    /// A binary that printed `running N tests` and then died.
    fn crash_unfinished_binary(&mut self) {
        let Some(counts) = self.binary.take() else {
            return;
        };
        let reported = counts
            .passed
            .saturating_add(counts.failed)
            .saturating_add(counts.ignored);
        let missing = counts.planned.saturating_sub(reported).max(1);
        let mut case = TestCase::new(
            format!("(test binary started at line {})", counts.started_line),
            TestOutcome::Errored,
        );
        case.message = Some(format!(
            "the test binary exited before reporting {missing} of its {} tests",
            counts.planned
        ));
        self.summary.problems.push(case);
        self.summary.errored = self.summary.errored.saturating_add(missing);
    }

    fn finish(mut self, ctx: &Ctx, last_line: u64) -> Result<TestSummary, ParseError> {
        self.close_section();
        if self.binaries_seen == 0 {
            return Err(ctx.expected(Position::line(last_line), "no `running N tests` line"));
        }
        if let Some(counts) = self.binary {
            return Err(ctx.expected(
                Position::line(last_line),
                &format!(
                    "unexpected end of output: `running {} tests` at line {} has no `test result:` line",
                    counts.planned, counts.started_line
                ),
            ));
        }
        Ok(self.summary)
    }
}

/// A failing test's `---- NAME stdout ----` section: what it printed, then its panic, each
/// bounded on its own so that a test printing megabytes keeps its panic message and values.
#[derive(Default)]
struct Section {
    name: String,
    printed: TailBuf,
    panic: TailBuf,
    panicked: bool,
}

impl Section {
    fn push(&mut self, line: &str) {
        if !self.panicked && line.contains("panicked at ") {
            self.panicked = true;
        }
        let buf = if self.panicked {
            &mut self.panic
        } else {
            &mut self.printed
        };
        buf.push(line);
        buf.push("\n");
    }

    /// The end of what the test printed, then its panic.
    fn take(&mut self) -> Option<String> {
        let printed = self
            .printed
            .take()
            .map(|p| tail_lines(&p, OUTPUT_HEAD_BYTES).to_string());
        match (printed, self.panic.take()) {
            (Some(p), Some(panic)) => Some(format!("{p}\n{panic}")),
            (p, panic) => panic.or(p),
        }
    }
}

/// The whole lines of the last at most `cap` bytes of `text`.
fn tail_lines(text: &str, cap: usize) -> &str {
    let end = tail(text, cap);
    if end.len() == text.len() {
        return end;
    }
    end.split_once('\n').map_or(end, |(_, rest)| rest)
}

fn section_header(line: &str) -> Option<&str> {
    let inner = line.strip_prefix("---- ")?.strip_suffix(" ----")?;
    inner
        .strip_suffix(" stdout")
        .or_else(|| inner.strip_suffix(" stderr"))
}

fn result_word(result: &str) -> Option<TestOutcome> {
    match result {
        "ok" => Some(TestOutcome::Passed),
        "FAILED" => Some(TestOutcome::Failed),
        _ if result == "ignored" || result.starts_with("ignored, ") => Some(TestOutcome::Skipped),
        _ => None,
    }
}
