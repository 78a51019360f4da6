//! Which findings are more than failures: names that do not exist (hallucinations).
//!
//! Hallucinations: rustc's "cannot find" family (E0412 type, E0422/E0423/E0425 value or
//! function, E0432/E0433 unresolved import or path, E0599 no such method, E0609 no such
//! field, E0463 missing crate), TypeScript's TS2304/TS2307/TS2339/TS2305, and Python's
//! `ModuleNotFoundError`, `ImportError`, `NameError`, `AttributeError: module ...`, and Go's
//! `undefined: name`, javac's `cannot find symbol` and `package x does not exist`, kotlinc's
//! `Unresolved reference` — wherever the tool says it: a build's output, a test that errored
//! while building, `go vet`.
//! Work left undone is [`super::markers`].

use crate::model::{CheckerIssue, Severity, TriggerType};

use super::diagnostics::Diagnostic;
use super::report::{failure_lead, LintFinding, TestCase, TestOutcome};

const RUST_UNKNOWN_NAME_CODES: [&str; 10] = [
    "E0412", "E0422", "E0423", "E0425", "E0432", "E0433", "E0463", "E0599", "E0609", "E0405",
];
const TS_UNKNOWN_NAME_CODES: [&str; 4] = ["TS2304", "TS2305", "TS2307", "TS2339"];
/// mypy's and pyright's rules for a name, module or attribute that does not exist.
const PYTHON_UNKNOWN_NAME_RULES: [&str; 5] = [
    "name-defined",
    "import-not-found",
    "attr-defined",
    "reportUndefinedVariable",
    "reportMissingImports",
];
const PYTHON_UNKNOWN_NAME_ERRORS: [&str; 4] = [
    "ModuleNotFoundError",
    "ImportError",
    "NameError",
    "AttributeError: module",
];

/// javac's words for a name that does not exist.
fn javac_unknown_name(message: &str) -> bool {
    message.starts_with("cannot find symbol")
        || (message.starts_with("package ") && message.ends_with("does not exist"))
}

/// Go's compiler (and `go vet`, which type-checks first): `./calc.go:8:9: undefined: Mul`.
fn go_undefined(text: &str) -> bool {
    text.lines().any(|line| {
        let line = line.trim();
        line.starts_with("undefined: ") || (line.contains(".go:") && line.contains(": undefined: "))
    })
}

/// Hallucination when a compiler or type checker says a name does not exist.
pub fn lint_trigger(finding: &LintFinding) -> Option<TriggerType> {
    let rule = finding.rule.as_deref().unwrap_or("");
    let go = finding.file.as_deref().is_some_and(|f| f.ends_with(".go"));
    let python_types = matches!(finding.tool.as_str(), "mypy" | "pyright");
    let names_unknown = (go && go_undefined(&finding.message))
        || (python_types && PYTHON_UNKNOWN_NAME_RULES.contains(&rule))
        || RUST_UNKNOWN_NAME_CODES.contains(&rule)
        || TS_UNKNOWN_NAME_CODES
            .iter()
            .any(|c| rule.eq_ignore_ascii_case(c))
        || TS_UNKNOWN_NAME_CODES
            .iter()
            .any(|c| finding.message.contains(c));
    names_unknown.then_some(TriggerType::HallucinationDetected)
}

/// A non-passing test as a checker issue, and the trigger it raises beyond a failure.
pub fn test_issue(case: &TestCase) -> (CheckerIssue, Option<TriggerType>) {
    let at = match (&case.file, case.line) {
        (Some(f), Some(l)) => format!("{f}:{l}"),
        _ => case.id.clone(),
    };
    // The message's lines (a failed `assert_eq!` says what was compared on the lines
    // after its first); text from the output gives its first line, and what follows a
    // first line that ends in `:` (Node's `Expected values to be strictly equal:`).
    let detail: String = match case.message.as_deref() {
        // pytest's placeholder: what failed to import is in the body's `E   ` lines.
        Some("collection failure") | None => failure_lead(
            case.output
                .as_deref()
                .and_then(last_pytest_error)
                .or(case.message.as_deref())
                .or(case.output.as_deref())
                .unwrap_or(""),
        ),
        Some(message) => message
            .lines()
            .map(str::trim_end)
            .filter(|l| !l.trim().is_empty())
            .take(MAX_FINDING_LINES)
            .collect::<Vec<_>>()
            .join("\n"),
    };
    let detail = with_values(detail, case.output.as_deref());
    let first = detail.trim();
    let (severity, verb) = match case.outcome {
        TestOutcome::Skipped => (Severity::Info, "was skipped"),
        TestOutcome::Errored => (Severity::Blocker, "errored"),
        _ => (Severity::Blocker, "failed"),
    };
    let finding = if first.is_empty() {
        format!("test {} {verb}", case.id)
    } else {
        format!("test {} {verb}: {first}", case.id)
    };
    let text = [case.message.as_deref(), case.output.as_deref()];
    let hallucinated = severity == Severity::Blocker
        && text.iter().flatten().any(|t| {
            PYTHON_UNKNOWN_NAME_ERRORS.iter().any(|e| t.contains(e))
                || (case.outcome == TestOutcome::Errored && go_undefined(t))
        });
    let issue = CheckerIssue {
        dimension: "tests".into(),
        severity,
        finding,
        affected_field: Some(at),
        suggested_fix: None,
        kind: (severity == Severity::Blocker).then_some(crate::model::FindingKind::TestFailed),
        subject: Some(case.id.clone()),
    };
    (
        issue,
        hallucinated.then_some(TriggerType::HallucinationDetected),
    )
}

/// Lines of a test's message a finding keeps.
const MAX_FINDING_LINES: usize = 12;

/// How the lines that show what was compared start, in a failure's rendered body: Rust's
/// `assert_eq!`, JUnit's and Jest's expected/actual, Go's Example `got:`/`want:`.
const VALUE_LINES: [&str; 10] = [
    "assertion",
    "left:",
    "right:",
    "expected:",
    "actual:",
    "Expected:",
    "Received:",
    "but was:",
    "got:",
    "want:",
];

/// `detail` with the lines of the body (`output`) that show the compared values, when the
/// message does not already have them: a JUnit `message` attribute holds the first line
/// (`assertion `left == right` failed`), the body the values.
fn with_values(detail: String, output: Option<&str>) -> String {
    let Some(output) = output else {
        return detail;
    };
    let lines: Vec<&str> = output.lines().map(str::trim_end).collect();
    let mut values = Vec::new();
    let mut diff_ends = 0;
    for (at, line) in lines.iter().enumerate() {
        if at < diff_ends {
            continue;
        }
        let text = line.trim_start();
        // jest's and vitest's diff (a snapshot, `toEqual`): its legend, then the lines it
        // changed, up to the stack.
        if text == "- Expected" && lines.get(at + 1).map(|l| l.trim()) == Some("+ Received") {
            let rest = &lines[at + 2..];
            let end = rest
                .iter()
                .position(|l| {
                    let l = l.trim_start();
                    l.starts_with('❯') || l.starts_with("at ")
                })
                .unwrap_or(rest.len());
            let changed: Vec<&str> = rest[..end]
                .iter()
                .filter(|l| l.starts_with('-') || l.starts_with('+'))
                .copied()
                .collect();
            // `expected +0 to be 180` says it already: a diff of `- 180`/`+ 0` adds nothing.
            let said = changed
                .iter()
                .all(|l| detail.contains(l[1..].trim().trim_matches('"')));
            if !said {
                values.extend(&lines[at..at + 2]);
                values.extend(changed);
            }
            diff_ends = at + 2 + end;
            continue;
        }
        if !VALUE_LINES.iter().any(|start| text.starts_with(start)) {
            continue;
        }
        // Go's Example prints `got:` and `want:` on lines of their own, the value below
        // (the message may be that `got:` already).
        let heading = text.ends_with(':');
        if !detail.contains(text) {
            values.push(*line);
        } else if !(heading && detail.trim_end().ends_with(text)) {
            continue;
        }
        if heading {
            values.extend(lines.get(at + 1).filter(|next| !next.trim().is_empty()));
        }
    }
    values.truncate(MAX_FINDING_LINES.saturating_sub(detail.lines().count()));
    if values.is_empty() {
        return detail;
    }
    format!("{detail}\n{}", values.join("\n"))
}

/// Hallucination when a build error says a name, module or crate does not exist.
pub fn diagnostic_trigger(d: &Diagnostic) -> Option<TriggerType> {
    let code = d.code.as_deref().unwrap_or("");
    let names_unknown = RUST_UNKNOWN_NAME_CODES.contains(&code)
        || TS_UNKNOWN_NAME_CODES
            .iter()
            .any(|c| code.eq_ignore_ascii_case(c))
        || PYTHON_UNKNOWN_NAME_ERRORS
            .iter()
            .any(|e| d.message.starts_with(e))
        || go_undefined(&d.message)
        || ["undeclared", "No module named"]
            .iter()
            .any(|m| d.message.contains(m))
        || (d.tool == "javac" && javac_unknown_name(&d.message))
        || (d.tool == "kotlinc" && d.message.starts_with("Unresolved reference"));
    names_unknown.then_some(TriggerType::HallucinationDetected)
}

/// The last `E   Error: message` line of a pytest report body, without its `E` prefix.
fn last_pytest_error(output: &str) -> Option<&str> {
    output
        .lines()
        .rev()
        .filter_map(|l| l.strip_prefix("E "))
        .map(str::trim)
        .find(|l| !l.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_says_a_name_is_undefined_in_vet_in_a_test_build_and_in_a_build() {
        assert!(go_undefined("undefined: Mul"));
        assert!(go_undefined(
            "# example.com/gg\n./calc.go:8:9: undefined: Mul\nFAIL"
        ));
        assert!(!go_undefined("expected undefined to equal 3"));
        assert!(!go_undefined("TypeError: x is undefined: boom"));
        let vet = LintFinding {
            tool: "go vet".into(),
            rule: None,
            level: crate::signals::report::LintLevel::Error,
            message: "undefined: Mul".into(),
            file: Some("calc.go".into()),
            line: Some(8),
            column: Some(9),
            suggested_fix: None,
            context: None,
        };
        assert_eq!(lint_trigger(&vet), Some(TriggerType::HallucinationDetected));
        let case = TestCase {
            id: "example.com/gg".into(),
            outcome: TestOutcome::Errored,
            message: Some("./calc.go:8:9: undefined: Mul".into()),
            output: None,
            file: None,
            line: None,
        };
        assert_eq!(
            test_issue(&case).1,
            Some(TriggerType::HallucinationDetected)
        );
    }
}
