//! `go test -json` (test2json): one JSON event per line, `{Action, Package, Test?, Output?,
//! ImportPath?}` with `Action` one of `start`, `run`, `pause`, `cont`, `output`, `pass`,
//! `fail`, `skip`, `bench`, `build-output` and `build-fail`.
//!
//! A test's outcome is its last `pass`/`fail`/`skip` event; its output is the `output`
//! events in between, without the `=== RUN`/`--- FAIL` framing lines. The test id is
//! `<package>::<Test>` (subtests keep Go's `TestA/case` name). A failing parent whose
//! failure is a failing subtest is not counted again: the subtest is the failure. A test's
//! message and place are the first `file_test.go:52: text` line of its output, with the
//! file made a package path (`example.com/mod/pkg/file_test.go`, which the repository's
//! `go.mod` turns into `pkg/file_test.go`).
//!
//! A package that fails outside any test (a build failure, a panic in `TestMain`, a test
//! binary that crashed) is one errored case named after the package, with its build output
//! or its own output. Lines that are not JSON (compiler errors printed on stderr when both
//! streams are captured) are kept as that build output. Input without one event is an
//! error.

use std::collections::{BTreeMap, HashMap};
use std::io::BufRead;

use serde::Deserialize;

use super::error::Position;
use super::input::{for_each_line, Ctx, Input};
use super::json::from_line;
use super::text::{cut_middle, lossy, parse_u32_str};
use super::types::{TestCase, TestOutcome, TestRef, TestSummary, OUTPUT_CAP_BYTES};
use super::ParseError;

/// Output kept per running test (or package) before it ends; the rest is cut.
const RUNNING_OUTPUT_BYTES: usize = 4 * OUTPUT_CAP_BYTES;

pub(crate) fn parse<R: BufRead>(
    input: &mut Input<R>,
    ctx: &Ctx,
) -> Result<TestSummary, ParseError> {
    let mut state = State::default();
    let last_line = for_each_line(input, ctx, |line_no, line| {
        let trimmed = line.trim_ascii();
        if !trimmed.starts_with(b"{") {
            if !trimmed.is_empty() {
                state.stray.push(lossy(trimmed).into_owned());
            }
            return Ok(());
        }
        let event: Event = from_line(trimmed, line_no, ctx)?;
        state.events += 1;
        state.event(event);
        Ok(())
    })?;
    if state.events == 0 {
        return Err(ctx.expected(
            Position::line(last_line),
            "no `go test -json` events (JSON lines with an `Action`)",
        ));
    }
    Ok(state.finish())
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Event {
    action: String,
    #[serde(default)]
    package: String,
    test: Option<String>,
    output: Option<String>,
    import_path: Option<String>,
}

#[derive(Default)]
struct State {
    events: u64,
    /// Output of tests still running, by (package, test).
    running: HashMap<(String, String), String>,
    /// Failed and skipped tests, in the order they ended.
    ended: Vec<(String, String, TestOutcome, String)>,
    passed: Vec<String>,
    /// Package-level output (outside any test) and build output, by package.
    package_output: HashMap<String, String>,
    /// Packages whose run failed.
    failed_packages: Vec<String>,
    /// Non-JSON lines: compiler errors of a build printed on the same stream.
    stray: Vec<String>,
}

fn push_capped(buffer: &mut String, text: &str) {
    if buffer.len() < RUNNING_OUTPUT_BYTES {
        buffer.push_str(text);
    }
}

impl State {
    fn event(&mut self, event: Event) {
        let Event {
            action,
            package,
            test,
            output,
            import_path,
        } = event;
        match (action.as_str(), test) {
            ("build-output", _) => {
                let key = import_path.map(strip_test_suffix).unwrap_or(package);
                let buffer = self.package_output.entry(key).or_default();
                push_capped(buffer, output.as_deref().unwrap_or(""));
            }
            ("output", Some(test)) => {
                let buffer = self.running.entry((package, test)).or_default();
                push_capped(buffer, output.as_deref().unwrap_or(""));
            }
            ("output", None) => {
                let buffer = self.package_output.entry(package).or_default();
                push_capped(buffer, output.as_deref().unwrap_or(""));
            }
            ("pass", Some(test)) => {
                self.running.remove(&(package.clone(), test.clone()));
                self.passed.push(format!("{package}::{test}"));
            }
            (end @ ("fail" | "skip"), Some(test)) => {
                let output = self
                    .running
                    .remove(&(package.clone(), test.clone()))
                    .unwrap_or_default();
                let outcome = if end == "fail" {
                    TestOutcome::Failed
                } else {
                    TestOutcome::Skipped
                };
                self.ended.push((package, test, outcome, output));
            }
            ("fail", None) => self.failed_packages.push(package),
            _ => {}
        }
    }

    fn finish(mut self) -> TestSummary {
        let mut summary = TestSummary::default();
        for id in std::mem::take(&mut self.passed) {
            summary.pass(TestRef::named(id));
        }
        // Tests still running when the stream ended were cut off by a crash.
        let mut cut_off: Vec<_> = self.running.drain().collect();
        cut_off.sort();
        for ((package, test), output) in cut_off {
            self.ended
                .push((package, test, TestOutcome::Errored, output));
        }
        let failed_parents: std::collections::HashSet<(String, String)> = self
            .ended
            .iter()
            .filter(|(_, _, outcome, _)| *outcome != TestOutcome::Skipped)
            .filter_map(|(package, test, _, _)| {
                test.rsplit_once('/')
                    .map(|(parent, _)| (package.clone(), parent.to_string()))
            })
            .collect();
        let mut packages_with_failures = std::collections::HashSet::new();
        for (package, test, outcome, output) in self.ended {
            if outcome != TestOutcome::Skipped {
                packages_with_failures.insert(package.clone());
                // A parent whose subtest failed: the subtest is the failure (Go reports
                // every ancestor's `fail` too), unless the parent printed something of
                // its own, such as the panic that ended it.
                if failed_parents.contains(&(package.clone(), test.clone()))
                    && framing_removed(&output).trim().is_empty()
                {
                    continue;
                }
            }
            summary.record(case(&package, &test, outcome, &output));
        }
        let mut stray = std::mem::take(&mut self.stray).join("\n");
        let mut seen = BTreeMap::new();
        for package in self.failed_packages {
            if packages_with_failures.contains(&package) || seen.contains_key(&package) {
                continue;
            }
            let mut output = self.package_output.remove(&package).unwrap_or_default();
            if !stray.is_empty() {
                output = format!("{}\n{output}", std::mem::take(&mut stray));
            }
            let mut case = TestCase::new(package.clone(), TestOutcome::Errored);
            let body = framing_removed(&output);
            case.message = body
                .lines()
                .find(|l| !l.trim().is_empty() && !l.starts_with('#') && !l.starts_with("FAIL"))
                .map(|l| l.trim().to_string())
                .or_else(|| Some(format!("package {package} failed outside its tests")));
            if let Some((file, line)) = first_location(&body) {
                case.file = Some(package_file(&package, &file));
                case.line = Some(line);
            }
            case.output = Some(cut_middle(body.trim_end(), OUTPUT_CAP_BYTES));
            seen.insert(package, ());
            summary.record(case);
        }
        summary
    }
}

/// `example.com/m/pkg.test` (the test binary's import path) → `example.com/m/pkg`.
fn strip_test_suffix(path: String) -> String {
    match path.strip_suffix(".test") {
        Some(p) => p.to_string(),
        None => {
            // `example.com/m/pkg [example.com/m/pkg.test]`
            path.split(' ').next().unwrap_or(&path).to_string()
        }
    }
}

fn case(package: &str, test: &str, outcome: TestOutcome, output: &str) -> TestCase {
    let mut case = TestCase::new(format!("{package}::{test}"), outcome);
    let body = framing_removed(output);
    if let Some((file, line)) = first_location(&body) {
        case.file = Some(package_file(package, &file));
        case.line = Some(line);
    }
    case.message = message(&body, outcome);
    let body = body.trim_end();
    if !body.trim().is_empty() {
        case.output = Some(cut_middle(body, OUTPUT_CAP_BYTES));
    }
    case
}

/// The output without test2json's framing lines (`=== RUN`, `--- FAIL: T (0.00s)`).
fn framing_removed(output: &str) -> String {
    output
        .lines()
        .filter(|l| {
            let t = l.trim_start();
            !(t.starts_with("=== RUN")
                || t.starts_with("=== PAUSE")
                || t.starts_with("=== CONT")
                || t.starts_with("=== NAME")
                || t.starts_with("--- FAIL")
                || t.starts_with("--- PASS")
                || t.starts_with("--- SKIP"))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The first line's text after its `file.go:N:` prefix, else the first non-blank line.
fn message(body: &str, outcome: TestOutcome) -> Option<String> {
    for line in body.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            continue;
        }
        if let Some((_, _, text)) = split_location(trimmed) {
            return Some(text.trim().to_string()).filter(|t| !t.is_empty());
        }
        if outcome != TestOutcome::Skipped || trimmed.starts_with("panic:") {
            return Some(trimmed.to_string());
        }
    }
    None
}

/// `thing_test.go:52: text` or `./pkg/x.go:3:9: text` → (file, line, text).
fn split_location(line: &str) -> Option<(&str, u32, &str)> {
    let (file, rest) = line.split_once(".go:")?;
    if file.is_empty() || file.contains(' ') {
        return None;
    }
    let digits_end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let line_no = parse_u32_str(rest.get(..digits_end)?)?;
    let after = rest.get(digits_end..)?;
    let after = after.strip_prefix(':')?;
    // An optional column.
    let col_end = after
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(after.len());
    let text = if col_end > 0 {
        after
            .get(col_end..)?
            .strip_prefix(':')
            .unwrap_or(after.get(col_end..)?)
    } else {
        after
    };
    let file_len = file.len() + 3;
    Some((line.get(..file_len)?, line_no, text))
}

fn first_location(body: &str) -> Option<(String, u32)> {
    body.lines()
        .find_map(|l| split_location(l.trim()).map(|(f, n, _)| (f.to_string(), n)))
}

/// A file as a test prints it (its base name, relative to the package directory), as the
/// package's path; absolute and `./`-relative paths (build errors) stay as they are.
fn package_file(package: &str, file: &str) -> String {
    if file.starts_with('/') || file.starts_with("./") || file.starts_with("../") {
        return file.to_string();
    }
    if file.contains('/') {
        // A build error's path, relative to the module root where `go test` ran.
        return file.to_string();
    }
    if package.is_empty() {
        file.to_string()
    } else {
        format!("{package}/{file}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_are_split_with_and_without_a_column() {
        assert_eq!(
            split_location("thing_test.go:52: expected 1, got 2"),
            Some(("thing_test.go", 52, " expected 1, got 2"))
        );
        assert_eq!(
            split_location("./pkg/new.go:7:9: undefined: foo"),
            Some(("./pkg/new.go", 7, " undefined: foo"))
        );
        assert_eq!(split_location("ok  example.com/m 0.1s"), None);
    }

    #[test]
    fn a_test_file_is_named_by_its_package() {
        assert_eq!(
            package_file("example.com/m/pkg", "thing_test.go"),
            "example.com/m/pkg/thing_test.go"
        );
        assert_eq!(
            package_file("example.com/m/pkg", "./pkg/x.go"),
            "./pkg/x.go"
        );
    }
}
