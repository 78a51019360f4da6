//! JUnit XML, as cargo-nextest, pytest, jest-junit, go-junit-report and Maven Surefire
//! write it: a `<testsuites>` root with nested `<testsuite>`s, or a bare `<testsuite>`.
//!
//! Each `<testcase>` counts once. Its outcome comes from its direct children: `<error>`
//! beats `<failure>` beats `<skipped>`; none of them means passed (Surefire's
//! `<flakyFailure>`/`<rerunFailure>` record retries of a test that passed in the end, so
//! they do not fail it). The id is `classname::name`, or `name` when there is no
//! classname or the name already starts with it (jest-junit's default templates): both
//! attributes are stable across runs, unlike timings or suite uuids.
//! The message is the `message` attribute (else `type`, else the body's first line, with
//! the values after it when it ends in `:`, as Node's assert under mocha prints them), except that a Rust panic header (nextest's `thread 'x' panicked at ...`) gives
//! way to the panic's own message (with an assertion's `left:`/`right:` values); the output
//! is the failure body, then `<system-out>`/`<system-err>`, each bounded on its own (the
//! middle of a long one is cut, never its end).
//! `file`/`line` come from the attributes (pytest xunit1, jest-junit with
//! `addFileAttribute`), else from a Rust panic or pytest traceback in the body.
//! A suite's `failures`/`errors` attributes are reconciled with its cases: failures it
//! counts beyond the failing cases it holds are counted as failed tests without names
//! (a report that says `failures="2"` and lists no failing case is not a pass).
//! Only non-passing cases are kept, and only their attributes are ever decoded (a passing
//! case's attributes are copied raw and dropped); text is captured in a bounded buffer, so
//! a report of a million passing tests costs the same memory as one of ten.

use std::io::BufRead;

use quick_xml::events::BytesStart;

use super::input::{Ctx, Input};
use super::text::{failure_location, parse_u32_str, parse_u64, rust_panic_message, TailBuf};
use super::types::{TestCase, TestOutcome, TestRef, TestSummary};
use super::xml::{drive, for_each_attr, for_each_raw_attr, XmlHandler};
use super::ParseError;

pub(crate) fn parse<R: BufRead>(
    input: &mut Input<R>,
    ctx: &Ctx,
) -> Result<TestSummary, ParseError> {
    let mut handler = JunitHandler::default();
    drive(input, ctx, &mut handler)?;
    Ok(handler.summary)
}

/// The testcase being read; its buffers are reused from one case to the next.
#[derive(Default)]
struct OpenCase {
    /// Depth of the `<testcase>` element, when one is open.
    depth: Option<usize>,
    classname: String,
    name: String,
    file: String,
    line: Option<u32>,
    outcome: Option<TestOutcome>,
    message: Option<String>,
    /// Each `<failure>`/`<error>` element's message: more than one is a test with failing
    /// subtests (pytest 9's `subtests`), one failing test all the same.
    failures: Vec<String>,
    /// The failure's own text (nextest: the panic), bounded apart from what the test
    /// printed so a long `<system-out>` cannot push it out.
    body: TailBuf,
    output: TailBuf,
    /// Whether the text being captured is the failure's body.
    capturing_body: bool,
    /// The `<testcase>` tag's attributes, undecoded.
    raw_attributes: Vec<u8>,
    /// Depth of the child whose text is being captured (failure body, system-out, ...).
    capture_depth: Option<usize>,
}

/// An open `<testsuite>`/`<testsuites>`: the failures and errors it declares, and the
/// failing cases counted when it opened.
struct OpenSuite {
    depth: usize,
    declared: u64,
    failing_before: u64,
}

#[derive(Default)]
struct JunitHandler {
    summary: TestSummary,
    case: OpenCase,
    suites: Vec<OpenSuite>,
    /// The failure elements beyond the first of each case so far (failing subtests): a
    /// suite's `failures` count includes them, and they are not tests without names.
    subfailures: u64,
}

impl XmlHandler for JunitHandler {
    fn roots(&self) -> &'static [&'static str] {
        &["testsuites", "testsuite"]
    }

    fn start(&mut self, name: &[u8], depth: usize, e: &BytesStart) -> Result<(), String> {
        match (self.case.depth, name) {
            (None, b"testcase") => self.open_case(depth, e),
            (None, b"testsuite" | b"testsuites") => self.open_suite(depth, e),
            (Some(case_depth), _) if depth == case_depth + 1 => self.open_child(name, depth, e),
            (Some(_), b"testcase") => Err("a <testcase> nested inside another <testcase>".into()),
            _ => Ok(()),
        }
    }

    fn end(&mut self, _name: &[u8], depth: usize) -> Result<(), String> {
        if self.case.capture_depth == Some(depth) {
            self.case.capture_depth = None;
        }
        if self.case.depth == Some(depth) {
            self.close_case()?;
        }
        if self.suites.last().is_some_and(|s| s.depth == depth) {
            self.close_suite();
        }
        Ok(())
    }

    fn wants_text(&self, depth: usize) -> bool {
        self.case.capture_depth == Some(depth)
    }

    fn text(&mut self, text: &str) {
        if self.case.capturing_body {
            self.case.body.push(text);
        } else {
            self.case.output.push(text);
        }
    }
}

impl JunitHandler {
    fn failing(&self) -> u64 {
        self.summary
            .failed
            .saturating_add(self.summary.errored)
            .saturating_add(self.subfailures)
    }

    fn open_suite(&mut self, depth: usize, e: &BytesStart) -> Result<(), String> {
        let mut declared: u64 = 0;
        for_each_attr(e, &[b"failures", b"errors"], |_, value| {
            // Counts are advisory: an unreadable one is ignored, not an error.
            let count = parse_u64(value.trim().as_bytes()).unwrap_or(0);
            declared = declared.saturating_add(count);
            Ok(())
        })?;
        self.suites.push(OpenSuite {
            depth,
            declared,
            failing_before: self.failing(),
        });
        Ok(())
    }

    /// Failures the closing suite declares beyond the failing cases inside it (nested
    /// suites' unnamed failures included) are failed tests without names.
    fn close_suite(&mut self) {
        let Some(suite) = self.suites.pop() else {
            return;
        };
        let counted = self.failing().saturating_sub(suite.failing_before);
        let unnamed = suite.declared.saturating_sub(counted);
        self.summary.add_count(TestOutcome::Failed, unnamed);
    }

    fn open_case(&mut self, depth: usize, e: &BytesStart) -> Result<(), String> {
        let case = &mut self.case;
        case.depth = Some(depth);
        case.outcome = None;
        case.message = None;
        case.failures.clear();
        case.output.clear();
        case.body.clear();
        case.capture_depth = None;
        // Most cases pass and need none of their attributes: keep the raw bytes and
        // decode them only for a case that turns out not to pass.
        case.raw_attributes.clear();
        case.raw_attributes.extend_from_slice(e.attributes_raw());
        Ok(())
    }

    /// Decodes the kept attributes of a case that did not pass.
    fn decode_case_attributes(&mut self) -> Result<(), String> {
        let case = &mut self.case;
        case.classname.clear();
        case.name.clear();
        case.file.clear();
        case.line = None;
        let wanted: &[&[u8]] = &[
            b"name",
            b"classname",
            b"file",
            b"filepath",
            b"line",
            b"lineno",
        ];
        for_each_raw_attr(&case.raw_attributes, wanted, |key, value| {
            match key {
                b"name" => case.name.push_str(&value),
                b"classname" => case.classname.push_str(&value),
                b"file" | b"filepath" => case.file.push_str(&value),
                b"line" | b"lineno" => case.line = parse_u32_str(&value),
                _ => {}
            }
            Ok(())
        })
    }

    fn open_child(&mut self, name: &[u8], depth: usize, e: &BytesStart) -> Result<(), String> {
        let outcome = match name {
            b"error" => TestOutcome::Errored,
            b"failure" => TestOutcome::Failed,
            b"skipped" => TestOutcome::Skipped,
            b"system-out" | b"system-err" => {
                self.case.output.separate();
                self.case.capturing_body = false;
                self.case.capture_depth = Some(depth);
                return Ok(());
            }
            _ => return Ok(()),
        };
        let case = &mut self.case;
        let worse = match case.outcome {
            Some(seen) => rank(outcome) > rank(seen),
            None => true,
        };
        if worse {
            case.outcome = Some(outcome);
        }
        let (mut message, mut kind) = (None, None);
        for_each_attr(e, &[b"message", b"type"], |key, value| {
            match key {
                b"message" => message = Some(value.into_owned()),
                b"type" => kind = Some(value.into_owned()),
                _ => {}
            }
            Ok(())
        })?;
        if matches!(outcome, TestOutcome::Failed | TestOutcome::Errored) {
            case.failures.push(message.clone().unwrap_or_default());
        }
        if case.message.is_none() {
            case.message = message.or(kind).filter(|m| !m.trim().is_empty());
        }
        case.body.separate();
        case.capturing_body = true;
        case.capture_depth = Some(depth);
        Ok(())
    }

    fn close_case(&mut self) -> Result<(), String> {
        self.case.depth = None;
        let outcome = self.case.outcome.unwrap_or(TestOutcome::Passed);
        self.decode_case_attributes()?;
        let case = &mut self.case;
        // jest-junit repeats the classname in the name by default: don't say it twice.
        let id = if case.classname.is_empty() || case.name.starts_with(case.classname.as_str()) {
            case.name.clone()
        } else {
            format!("{}::{}", case.classname, case.name)
        };
        if outcome == TestOutcome::Passed {
            self.summary.pass(TestRef {
                id,
                file: (!case.file.is_empty()).then(|| case.file.clone()),
                line: case.line,
            });
            return Ok(());
        }
        let mut found = TestCase::new(id, outcome);
        if case.failures.len() > 1 {
            // Failing subtests: one test, its message naming each subtest's failure (pytest
            // adds a last one, "contains N failed subtests", which says only the count).
            let extra = case.failures.len() as u64 - 1;
            self.subfailures = self.subfailures.saturating_add(extra);
            let each: Vec<&str> = case
                .failures
                .iter()
                .map(|m| m.trim())
                .filter(|m| !m.is_empty() && !is_subtest_count(m))
                .collect();
            case.message = Some(format!(
                "{} failed subtests: {}",
                each.len(),
                each.join("; ")
            ));
        }
        let body = case.body.contents();
        let text = format!("{body}\n{}", case.output.contents());
        let hint = failure_location(&text);
        let panic_message = case
            .message
            .as_deref()
            .filter(|m| m.contains("panicked at"))
            .and_then(|_| rust_panic_message(&text));
        found.message = panic_message
            .or_else(|| case.message.take())
            .or_else(|| Some(super::failure_lead(&text)).filter(|l| !l.is_empty()));
        found.output = match (case.body.take(), case.output.take()) {
            (Some(body), Some(printed)) => Some(format!("{body}\n{printed}")),
            (body, printed) => body.or(printed),
        };
        // A location in the failure text (the failing assert) is more precise than the
        // testcase's own attributes (the test's definition), when it is in the same file.
        let hint = hint.filter(|(file, _)| {
            outcome != TestOutcome::Skipped && (case.file.is_empty() || same_file(file, &case.file))
        });
        if let Some((file, line)) = hint {
            found.file = Some(file);
            found.line = Some(line);
        } else if !case.file.is_empty() {
            found.file = Some(case.file.clone());
            found.line = case.line;
        }
        self.summary.record(found);
        Ok(())
    }
}

/// pytest's last `<failure>` of a test with failing subtests: "contains 2 failed subtests".
fn is_subtest_count(message: &str) -> bool {
    message.starts_with("contains ") && message.ends_with(" failed subtests")
}

fn rank(outcome: TestOutcome) -> u8 {
    match outcome {
        TestOutcome::Passed => 0,
        TestOutcome::Skipped => 1,
        TestOutcome::Failed => 2,
        TestOutcome::Errored => 3,
    }
}

fn same_file(a: &str, b: &str) -> bool {
    a == b || a.ends_with(&format!("/{b}")) || b.ends_with(&format!("/{a}"))
}
