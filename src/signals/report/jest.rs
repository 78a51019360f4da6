//! `jest --json` and `vitest --reporter=json` (the same shape): `{testResults: [{name,
//! status, message, assertionResults: [{ancestorTitles, title, status, failureMessages,
//! location?}]}]}`.
//!
//! Each assertion result is a test: `passed`; `failed` → Failed; `pending`, `skipped`,
//! `todo`, `disabled` → Skipped. The id is `<file>::<ancestors > title>` (the file as the
//! report names it; made repository-relative with the other paths), as vitest's JUnit
//! names it. The message is the failure's first line, the output every failure message
//! (ANSI colours removed), the place the reported `location` (with
//! `--testLocationInResults`) or else the innermost stack frame in the test file. A test
//! file that failed without running its tests (an import error) is one errored case named
//! after the file, with its `message`.

use std::io::BufRead;

use serde::Deserialize;

use super::input::{Ctx, Input};
use super::json::from_input;
use super::text::{cut_middle, strip_ansi};
use super::types::{TestCase, TestOutcome, TestRef, TestSummary, OUTPUT_CAP_BYTES};
use super::ParseError;

pub(crate) fn parse<R: BufRead>(
    input: &mut Input<R>,
    ctx: &Ctx,
) -> Result<TestSummary, ParseError> {
    let report: JestReport = from_input(input, ctx)?;
    let mut summary = TestSummary::default();
    for file in report.test_results {
        let ran = file.assertion_results.len();
        for result in file.assertion_results {
            let outcome = match result.status.as_str() {
                "passed" => TestOutcome::Passed,
                "failed" => TestOutcome::Failed,
                _ => TestOutcome::Skipped,
            };
            let mut name = result.ancestor_titles.join(" > ");
            if !name.is_empty() {
                name.push_str(" > ");
            }
            name.push_str(&result.title);
            if outcome == TestOutcome::Passed {
                summary.pass(TestRef {
                    id: format!("{}::{name}", file.name),
                    file: Some(file.name.clone()),
                    line: result.location.map(|l| l.line),
                });
                continue;
            }
            let mut case = TestCase::new(format!("{}::{name}", file.name), outcome);
            let text = strip_ansi(&result.failure_messages.join("\n")).into_owned();
            case.message = failure_message(&text);
            if !text.trim().is_empty() {
                case.output = Some(cut_middle(text.trim_end(), OUTPUT_CAP_BYTES));
            }
            if let Some(location) = result.location {
                case.file = Some(file.name.clone());
                case.line = Some(location.line);
            } else if let Some(line) = frame_in(&text, &file.name) {
                case.file = Some(file.name.clone());
                case.line = Some(line);
            }
            summary.record(case);
        }
        if ran == 0 && file.status == "failed" {
            let mut case = TestCase::new(file.name.clone(), TestOutcome::Errored);
            let text = strip_ansi(file.message.as_deref().unwrap_or("")).into_owned();
            case.message = text
                .lines()
                .map(str::trim)
                .find(|l| !l.is_empty())
                .map(str::to_string)
                .or_else(|| Some("the test file failed to run".to_string()));
            if !text.trim().is_empty() {
                case.output = Some(cut_middle(text.trim_end(), OUTPUT_CAP_BYTES));
            }
            case.file = Some(file.name);
            summary.record(case);
        }
    }
    Ok(summary)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct JestReport {
    test_results: Vec<FileResult>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FileResult {
    name: String,
    #[serde(default)]
    status: String,
    message: Option<String>,
    #[serde(default)]
    assertion_results: Vec<AssertionResult>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AssertionResult {
    #[serde(default)]
    ancestor_titles: Vec<String>,
    title: String,
    status: String,
    #[serde(default)]
    failure_messages: Vec<String>,
    location: Option<Location>,
}

#[derive(Deserialize)]
struct Location {
    line: u32,
}

/// The failure's first line, with jest's `Expected:`/`Received:` values when it prints
/// them on the lines after.
fn failure_message(text: &str) -> Option<String> {
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let mut message = lines.next()?.to_string();
    for line in lines.take(12) {
        if line.starts_with("Expected:") || line.starts_with("Received:") {
            message.push_str("; ");
            message.push_str(line);
        }
    }
    Some(message)
}

/// The line of the first stack frame in `file` (`at … (/abs/test/x.test.ts:12:5)`).
fn frame_in(text: &str, file: &str) -> Option<u32> {
    text.lines().find_map(|line| {
        let at = line.find(file)?;
        let rest = line.get(at + file.len()..)?.strip_prefix(':')?;
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok()
    })
}
