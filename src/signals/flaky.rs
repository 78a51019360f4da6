//! Flaky tests: a test whose failure comes and goes across iterations while the changes
//! between them do not touch it. Its failure is marked, and its triggers carry the source
//! `flaky`, so the strategy is a plain retry rather than a refinement.

use std::collections::BTreeSet;

use crate::model::{IterationRecord, Severity, TriggerType};

/// The failing-test spans of a record (`file:line` or test id).
fn failures(record: &IterationRecord) -> BTreeSet<&str> {
    record
        .issues
        .iter()
        .filter(|i| i.dimension == "tests" && i.severity == Severity::Blocker)
        .filter_map(|i| i.affected_field.as_deref())
        .collect()
}

fn file_of(span: &str) -> &str {
    span.rsplit_once(':')
        .filter(|(_, line)| line.chars().all(|c| c.is_ascii_digit() || c == '-'))
        .map_or(span, |(file, _)| file)
}

/// Marks failures in `current` that flipped: failing now, passing in the previous
/// iteration that was not VOID, failing in an earlier one, in a file the latest change did
/// not touch.
/// `touched(path)` says whether the change since the previous iteration touched a file.
/// Returns how many failures were marked.
pub fn mark(
    current: &mut IterationRecord,
    earlier: &[IterationRecord],
    touched: &dyn Fn(&str) -> bool,
) -> usize {
    // A VOID iteration's results are not its code's (a tampered test or environment made
    // them): its passes say nothing about a flip.
    let judged: Vec<&IterationRecord> = earlier
        .iter()
        .filter(|r| r.status != crate::model::Status::Void)
        .collect();
    let Some((previous, older)) = judged.split_last() else {
        return 0;
    };
    let passed_before: BTreeSet<&str> = failures(previous);
    let failed_earlier: BTreeSet<&str> = older.iter().flat_map(|r| failures(r)).collect();
    let flaky: BTreeSet<String> = failures(current)
        .into_iter()
        .filter(|span| !passed_before.contains(span) && failed_earlier.contains(span))
        .filter(|span| span.contains(':') && !touched(file_of(span)))
        .map(str::to_string)
        .collect();
    if flaky.is_empty() {
        return 0;
    }
    for issue in &mut current.issues {
        if issue
            .affected_field
            .as_deref()
            .is_some_and(|a| flaky.contains(a))
        {
            issue.finding = format!(
                "(flaky: fails and passes without related changes) {}",
                issue.finding
            );
            if issue.kind == Some(crate::model::FindingKind::TestFailed) {
                issue.kind = Some(crate::model::FindingKind::TestFlaky);
            }
        }
    }
    let all_flaky = failures(current).iter().all(|f| flaky.contains(*f));
    for trigger in &mut current.triggers {
        if trigger.kind == TriggerType::ValidationFailure && trigger.source == "tests" && all_flaky
        {
            trigger.source = "flaky".into();
        }
    }
    flaky.len()
}
