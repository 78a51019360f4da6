//! Building issues and triggers: one issue per place, texts bounded, the warning for
//! files the checks rewrote; every dimension's findings go through these.

use std::collections::BTreeSet;

use crate::config::Config;
use crate::model::{CheckerIssue, Severity, Trigger, TriggerType};
use crate::signals::report::TestSummary;

/// One issue per place and first line: a compiler error that both the build of the tests
/// and a lint check report is one problem.
pub(super) fn dedupe(issues: Vec<CheckerIssue>) -> Vec<CheckerIssue> {
    let mut seen = BTreeSet::new();
    issues
        .into_iter()
        .filter(|i| {
            i.affected_field.is_none()
                || seen.insert((i.affected_field.clone(), crate::model::headline(&i.finding)))
        })
        .collect()
}

pub(super) fn check_is_tests(config: &Config, name: &str) -> bool {
    let format = crate::config::report_of(&config.checks, name).map(|r| r.format);
    match format {
        Some(f) => f.kind() == crate::signals::report::ReportKind::Tests,
        None => name.contains("test"),
    }
}

pub(super) fn location(file: Option<&str>, line: Option<u32>) -> Option<String> {
    file.map(|f| match line {
        Some(l) => format!("{f}:{l}"),
        None => f.to_string(),
    })
}

pub(super) fn severity_of(kind: TriggerType) -> f64 {
    match kind {
        TriggerType::HallucinationDetected => 1.0,
        _ => 0.7,
    }
}

pub(super) fn issue(
    dimension: &str,
    severity: Severity,
    finding: String,
    at: Option<String>,
) -> CheckerIssue {
    CheckerIssue {
        dimension: dimension.into(),
        severity,
        finding,
        affected_field: at,
        suggested_fix: None,
        kind: None,
        subject: None,
    }
}

/// Failed or errored tests the summary counts beyond the failing cases it names.
pub(super) fn unnamed_failures(t: &TestSummary) -> u64 {
    let named = t.failures().count() as u64;
    t.failed.saturating_add(t.errored).saturating_sub(named)
}

/// Longest finding, location or fix text an issue keeps: a finding is read by people and
/// agents, and one 100 MB test name must not become a 100 MB record, prompt and comment.
pub const MAX_ISSUE_TEXT_BYTES: usize = 4 * 1024;

/// `issue` with each text cut to about [`MAX_ISSUE_TEXT_BYTES`]: its middle, with a note
/// saying how much was cut, so the start (what failed) and the end (the `right:` value, the
/// last error) both stay.
pub(super) fn bounded(mut issue: CheckerIssue) -> CheckerIssue {
    issue.finding = truncate_text(issue.finding);
    issue.affected_field = issue.affected_field.map(truncate_text);
    issue.suggested_fix = issue.suggested_fix.map(truncate_text);
    issue
}

pub(super) fn truncate_text(text: String) -> String {
    if text.len() <= MAX_ISSUE_TEXT_BYTES {
        return text;
    }
    crate::signals::report::cut_middle(&text, MAX_ISSUE_TEXT_BYTES)
}

/// Files listed in the warning about files the checks rewrote; the rest are counted.
pub(super) const MAX_REWRITTEN_FILES_LISTED: usize = 10;

/// The WARNING for checks that changed tracked files while they ran.
pub(super) fn tracked_files_changed(files: &[String], checks: &[String]) -> CheckerIssue {
    let names = checks
        .iter()
        .map(|c| format!("`{c}`"))
        .collect::<Vec<_>>()
        .join(", ");
    let who = match checks.len() {
        0 => "the checks".to_string(),
        1 => format!("check {names}"),
        _ => format!("one of the checks {names} (they ran concurrently)"),
    };
    let mut listed = files
        .iter()
        .take(MAX_REWRITTEN_FILES_LISTED)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if files.len() > MAX_REWRITTEN_FILES_LISTED {
        listed.push_str(&format!(
            " and {} more",
            files.len() - MAX_REWRITTEN_FILES_LISTED
        ));
    }
    CheckerIssue {
        dimension: "checks".into(),
        severity: Severity::Warning,
        finding: format!(
            "{who} changed tracked files while running: {listed}; the results describe the \
             changed files, not the commit (when the checks ran in the work tree, the \
             changes are there now: see `git diff`)"
        ),
        affected_field: files.first().cloned(),
        suggested_fix: Some(
            "give the check a read-only mode, e.g. `ruff check --no-fix` or \
             `cargo fmt --check`, so it reports what it would change"
                .into(),
        ),
        kind: None,
        subject: None,
    }
}

pub(super) fn trigger(kind: TriggerType, source: &str, severity: f64, details: String) -> Trigger {
    Trigger {
        kind,
        source: source.into(),
        severity,
        details,
        fixable: true,
    }
}

pub(super) fn with_tail(message: &str, tail: &str) -> String {
    if tail.trim().is_empty() {
        message.to_string()
    } else {
        format!("{message}\n{}", tail.trim_end())
    }
}
