//! `code_quality`: lint findings and build diagnostics against the base's (new ones
//! count, old ones are debt, a test file's own style is kept), and the score formula.

use std::collections::HashMap;

use crate::config::LintScore;
use crate::model::{ChangedLines, CheckerIssue, Severity, TriggerType};
use crate::signals::classify;
use crate::signals::diagnostics::Diagnostic;
use crate::signals::observation::CheckOutcome;
use crate::signals::report::{LintFinding, LintLevel, LintSummary};

use super::issues::{issue, location, trigger};
use super::{Accumulator, LINES_PER_SIZE_UNIT, TEST_STYLE_MIN};
use crate::model::headline;

impl Accumulator {
    pub(super) fn add_lint(
        &mut self,
        check: &CheckOutcome,
        l: &LintSummary,
        base: Option<&LintSummary>,
        holdout: bool,
        touched: Option<&ChangedLines>,
        is_test: &dyn Fn(&str) -> bool,
    ) {
        self.lint_seen = true;
        // reviewdog's `added` filter: a warning is the change's when it is on a line the
        // change added (a file it only deleted from has none).
        let outside_the_change = |f: &LintFinding| {
            f.level != LintLevel::Error
                && touched.is_some_and(|c| {
                    f.file
                        .as_deref()
                        .is_some_and(|file| match c.files.get(file) {
                            None => true,
                            Some(added) => f.line.is_some_and(|line| {
                                added.binary_search_by_key(&line, |l| l.line).is_err()
                            }),
                        })
                })
        };
        // The base's findings by their exact key (with the source line), then, for what
        // is left on both sides, by tool, rule, file and message alone: a finding over a
        // block (an import block's I001) whose first line the change edited is still the
        // base's; only the excess is new.
        let base_findings = base.map(|b| b.findings.as_slice()).unwrap_or_default();
        // The debt: the base's own count (its one cached run) or, when larger, what this run
        // reports away from the change; a later run that leaves some out does not lower it.
        let mut on_base_levels = [0u32; 2];
        let mut old_levels = [0u32; 2];
        for f in base_findings {
            count(&mut on_base_levels, f.level);
        }
        let mut on_base: HashMap<FindingKey, usize> = HashMap::new();
        for f in base_findings {
            *on_base.entry(finding_key(f)).or_default() += 1;
        }
        let exact: Vec<bool> = l
            .findings
            .iter()
            .map(|f| {
                on_base
                    .get_mut(&finding_key(f))
                    .filter(|c| **c > 0)
                    .map(|c| *c -= 1)
                    .is_some()
            })
            .collect();
        let mut loose: HashMap<LooseKey, usize> = HashMap::new();
        for f in base_findings {
            let key = finding_key(f);
            if let Some(c) = on_base.get_mut(&key).filter(|c| **c > 0) {
                *c -= 1;
                *loose.entry(loose_key(f)).or_default() += 1;
            }
        }
        // A test file's style: a warning of a rule the base already reports at least
        // `TEST_STYLE_MIN` times in that test file (new cases written like the dozens
        // around them) is a note, not a revision.
        let mut in_test_file: HashMap<(&str, &str, &str), usize> = HashMap::new();
        for f in base_findings {
            if let (Some(rule), Some(file)) = (f.rule.as_deref(), f.file.as_deref()) {
                if is_test(file) {
                    *in_test_file.entry((&f.tool, rule, file)).or_default() += 1;
                }
            }
        }
        let test_style = |f: &LintFinding| {
            f.level == LintLevel::Warning
                && match (f.rule.as_deref(), f.file.as_deref()) {
                    (Some(rule), Some(file)) => in_test_file
                        .get(&(f.tool.as_str(), rule, file))
                        .is_some_and(|n| *n >= TEST_STYLE_MIN),
                    _ => false,
                }
        };
        let mut new_errors = 0;
        let mut new = Vec::new();
        for (finding, exact) in l.findings.iter().zip(exact) {
            let old = exact
                || loose
                    .get_mut(&loose_key(finding))
                    .filter(|c| **c > 0)
                    .map(|c| *c -= 1)
                    .is_some()
                || outside_the_change(finding);
            if old {
                if finding.level == LintLevel::Note {
                    continue;
                }
                count(&mut old_levels, finding.level);
                if !holdout {
                    self.debt
                        .note_example(location(finding.file.as_deref(), finding.line).as_deref());
                }
                continue;
            }
            if !holdout && test_style(finding) {
                let mut note = lint_issue(finding);
                note.severity = Severity::Info;
                note.finding
                    .push_str(" (the test file's style: the base reports it there already)");
                self.issues.push(note);
                continue;
            }
            self.lint_weights.push(lint_severity(finding.level));
            new_errors += usize::from(finding.level == LintLevel::Error);
            new.push(finding);
        }
        self.debt.lint_errors += on_base_levels[0].max(old_levels[0]);
        self.debt.lint_warnings += on_base_levels[1].max(old_levels[1]);
        if check.void_on_violation && new_errors > 0 {
            self.void = true;
        }
        if holdout {
            if new_errors > 0 {
                self.issues.push(issue(
                    "code_quality",
                    Severity::Blocker,
                    format!("holdout check `{}`: {new_errors} errors", check.name),
                    None,
                ));
            }
            return;
        }
        for finding in new {
            let issue = lint_issue(finding);
            if let Some(kind) = classify::lint_trigger(finding) {
                self.triggers
                    .push(trigger(kind, &check.name, 1.0, headline(&issue.finding)));
            } else if finding.level == LintLevel::Error {
                self.triggers.push(trigger(
                    TriggerType::ValidationFailure,
                    &check.name,
                    0.7,
                    headline(&issue.finding),
                ));
            }
            self.issues.push(issue);
        }
    }
}

/// `code_quality` from the severity weights of the counted findings.
///
/// `density` (default): 1 / (1 + W / S), W the sum of the weights (error 1.0, warning
/// 0.5, note 0.1), S = max(1, added lines / 100) when the change's size is known, else 1.
/// It falls with every further finding and with severity, and a finding weighs less in a
/// large change than in a three-line one; 1 warning in a 300-line change gives 0.86, 1
/// error in a 3-line change 0.5, 10 errors 0.09. `average_severity`: 1 - mean weight (the
/// analytics schema's formula, which ignores how many findings there are).
pub fn lint_score(formula: LintScore, weights: &[f64], added_lines: Option<usize>) -> f64 {
    if weights.is_empty() {
        return 1.0;
    }
    let total: f64 = weights.iter().sum();
    let score = match formula {
        LintScore::Density => {
            let size = added_lines.map_or(1.0, |n| (n as f64 / LINES_PER_SIZE_UNIT).max(1.0));
            1.0 / (1.0 + total / size)
        }
        LintScore::AverageSeverity => 1.0 - total / weights.len() as f64 / MAX_LINT_SEVERITY,
    };
    score.clamp(0.0, 1.0)
}

pub(super) const MAX_LINT_SEVERITY: f64 = 1.0;

pub(super) fn lint_severity(level: LintLevel) -> f64 {
    match level {
        LintLevel::Error => 1.0,
        LintLevel::Warning => 0.5,
        LintLevel::Note => 0.1,
    }
}

/// What makes two findings the same finding across a change: the line number moves with
/// edits above it, the source line does not.
pub(super) type FindingKey = (String, Option<String>, Option<String>, String, String);

pub(super) fn finding_key(f: &LintFinding) -> FindingKey {
    let place = match &f.context {
        Some(text) => format!("text:{text}"),
        None => format!("line:{}", f.line.unwrap_or(0)),
    };
    (
        f.tool.clone(),
        f.rule.clone(),
        f.file.clone(),
        f.message.clone(),
        place,
    )
}

/// A finding without its place: what two findings over one block of code share.
pub(super) type LooseKey = (String, Option<String>, Option<String>, String);

pub(super) fn loose_key(f: &LintFinding) -> LooseKey {
    (
        f.tool.clone(),
        f.rule.clone(),
        f.file.clone(),
        f.message.clone(),
    )
}

pub(super) fn diagnostic_key(d: &Diagnostic) -> (Option<String>, String, Option<String>) {
    (d.code.clone(), d.message.clone(), d.file.clone())
}

/// Said as a lint finding would say it (`E0425: cannot find ...`), so the same compiler
/// error reported by a build and by a lint check is one finding.
pub(super) fn diagnostic_finding(d: &Diagnostic) -> String {
    let code = d
        .code
        .as_deref()
        .map(|c| format!("{c}: "))
        .unwrap_or_default();
    let head = format!("{code}{}", d.message);
    // The detail is kept as the tool printed it; a finding carries no colour codes.
    let detail = crate::signals::report::strip_ansi(&d.detail);
    if detail.trim().is_empty() || detail.trim() == d.message {
        head
    } else {
        format!("{head}\n{}", detail.trim_end())
    }
}

pub(super) fn lint_issue(f: &LintFinding) -> CheckerIssue {
    let rule = f
        .rule
        .as_deref()
        .map(|r| format!("{r}: "))
        .unwrap_or_default();
    CheckerIssue {
        dimension: "code_quality".into(),
        severity: match f.level {
            LintLevel::Error => Severity::Blocker,
            LintLevel::Warning => Severity::Warning,
            LintLevel::Note => Severity::Info,
        },
        finding: format!("{rule}{}", f.message),
        affected_field: location(f.file.as_deref(), f.line),
        suggested_fix: f.suggested_fix.clone(),
        kind: None,
        subject: None,
    }
}

/// One more error (`[0]`) or warning (`[1]`); notes are not debt.
fn count(levels: &mut [u32; 2], level: LintLevel) {
    match level {
        LintLevel::Error => levels[0] += 1,
        LintLevel::Warning => levels[1] += 1,
        LintLevel::Note => {}
    }
}
