//! The check-revise-escalate loop of the revision-loop pattern.
//!
//! The loop counts revision *rounds*, not iterations: an iteration with BLOCKER or WARNING
//! issues continues a round, a clean one ends it (INFO issues never ask for a revision).
//! The round number of the latest iteration is the length of the trailing run of
//! iterations with issues, so it is 0 when the latest iteration is clean and 1 on the first
//! iteration with issues after a clean one. The loop escalates when the round number
//! exceeds `revision.max_iterations` (default 3) or when the BLOCKER + WARNING count did not
//! fall from the previous iteration of the same run while one of that iteration's issues is
//! still there (a new round 1 cannot be stalled). An iteration that fixed every issue it was
//! given and made others is progress, not a stall: it gets a prompt for the new ones, and the
//! round limit still bounds the loop. `revision.stall: count` applies the count rule alone.
//! Counting restarts after a human's `/iterate adjust`: the caller passes only the
//! iterations after it.

use crate::config::{Config, Stall};
use crate::model::{CheckerIssue, IterationRecord, Severity, Trigger, TriggerType};

use super::decision::RevisionProgress;

#[derive(Debug, Clone, PartialEq)]
pub struct RevisionState {
    pub progress: RevisionProgress,
    /// The latest iteration has BLOCKER or WARNING issues.
    pub has_issues: bool,
    /// More rounds than allowed.
    pub limit_exceeded: bool,
    /// The issue count did not decrease within the current run of rounds.
    pub stalled: bool,
}

/// `records` are the iterations counted by the loop (since the last restart); `latest` is
/// the task's latest iteration, whose BLOCKER and WARNING counts are reported even when a
/// restart left it out of the count.
pub fn progress(
    config: &Config,
    records: &[IterationRecord],
    latest: &IterationRecord,
) -> RevisionState {
    let max = config.revision.max_iterations;
    let mut run = records
        .iter()
        .rev()
        .map(IterationRecord::revision_issue_count)
        .take_while(|count| *count > 0);
    let count = run.next().unwrap_or(0);
    // Only the previous iteration of the same run counts: after a clean one, this is round 1.
    let previous_count = run.next();
    let length = usize::from(count > 0) + usize::from(previous_count.is_some()) + run.count();
    let round = u32::try_from(length).unwrap_or(u32::MAX);
    let has_issues = count > 0;
    let (blockers, warnings) = (
        latest.count(Severity::Blocker),
        latest.count(Severity::Warning),
    );
    RevisionState {
        progress: RevisionProgress {
            iteration: round,
            max_iterations: max,
            blockers,
            warnings,
            previous_count,
        },
        has_issues,
        limit_exceeded: round > max,
        stalled: has_issues
            && previous_count.is_some_and(|prev| prev <= count)
            && records.len() >= 2
            && (config.revision.stall == Stall::Count
                || shares_an_issue(&records[records.len() - 2], &records[records.len() - 1])),
    }
}

/// Whether an issue that asks for revision in `earlier` is still in `later`: the same
/// dimension, place and finding — the same test failing with another message is something
/// changed, not the same issue again.
fn shares_an_issue(earlier: &IterationRecord, later: &IterationRecord) -> bool {
    type Key = (String, String, Option<String>);
    let open = |r: &IterationRecord| -> std::collections::HashSet<Key> {
        r.issues
            .iter()
            .filter(|i| i.severity.counts_for_revision())
            .map(|i| {
                (
                    i.dimension.clone(),
                    i.finding.clone(),
                    i.affected_field.clone(),
                )
            })
            .collect()
    };
    !open(earlier).is_disjoint(&open(later))
}

/// What the next iteration is asked to fix: the latest iteration's BLOCKER and WARNING
/// issues, and one item for each trigger that no issue stands for — a person's words, an
/// unmet requirement, a low `Confidence:` — or, when the record has no such issue at all,
/// for each trigger it has (a record written by another tool). `quality_threshold` only
/// restates the score and is never an item. The decision iterates only when this is not
/// empty, and the revision prompt lists exactly these, so an ITERATE always names
/// something to do.
pub fn revision_items(latest: &IterationRecord, triggers: &[Trigger]) -> Vec<CheckerIssue> {
    let mut items: Vec<CheckerIssue> = latest
        .issues
        .iter()
        .filter(|i| i.severity.counts_for_revision())
        .cloned()
        .collect();
    integrity_first(&mut items);
    let from_record_issues = !items.is_empty();
    for trigger in triggers {
        let (dimension, severity, finding) = match trigger.kind {
            TriggerType::QualityThreshold => continue,
            TriggerType::UserRejection => (
                "review",
                Severity::Blocker,
                "a reviewer requested changes: do what their review (under Feedback) asks"
                    .to_string(),
            ),
            TriggerType::ExplicitFeedback => (
                "review",
                Severity::Warning,
                "a person asked for a change: do what their words (under Feedback) ask".into(),
            ),
            TriggerType::RequirementUnmet => {
                ("requirements", Severity::Warning, trigger.details.clone())
            }
            TriggerType::LowConfidence => (
                "confidence",
                Severity::Warning,
                format!(
                    "{}: settle what is uncertain (a test or a check that shows the change \
                     works), then say so in the `Confidence:` trailer",
                    trigger.details
                ),
            ),
            _ if from_record_issues => continue,
            _ => (
                trigger.source.as_str(),
                if trigger.severity >= 0.7 {
                    Severity::Blocker
                } else {
                    Severity::Warning
                },
                trigger.details.clone(),
            ),
        };
        items.push(CheckerIssue {
            dimension: dimension.to_string(),
            severity,
            finding,
            affected_field: None,
            suggested_fix: None,
            kind: None,
            subject: None,
        });
    }
    items
}

/// An integrity finding is what to do first: it comes before everything else, and the
/// lint, type and complexity findings in the files it names (type errors in the
/// `conftest.py` that patched the tests) go, since restoring those files removes them.
pub(crate) fn integrity_first(items: &mut Vec<CheckerIssue>) {
    let integrity = |i: &CheckerIssue| i.dimension == crate::model::INTEGRITY_DIMENSION;
    if !items
        .iter()
        .any(|i| integrity(i) && i.severity == Severity::Blocker)
    {
        return;
    }
    let named: Vec<String> = items
        .iter()
        .filter(|i| integrity(i))
        .flat_map(|i| {
            let place = i.affected_field.iter().map(|f| file_of(f).to_string());
            let quoted = i
                .finding
                .split('`')
                .skip(1)
                .step_by(2)
                .filter(|t| !t.contains(' ') && (t.contains('/') || t.contains('.')))
                .map(str::to_string)
                .collect::<Vec<_>>();
            place.chain(quoted)
        })
        .collect();
    items.retain(|i| {
        integrity(i)
            || i.dimension == "tests"
            || !i
                .affected_field
                .as_deref()
                .is_some_and(|f| named.iter().any(|n| n == file_of(f)))
    });
    // A stable sort: integrity first, each kind in its own order.
    items.sort_by_key(|i| !integrity(i));
}

/// The file of a place (`src/a.py:12` → `src/a.py`).
fn file_of(place: &str) -> &str {
    match place.split_once(':') {
        Some((file, rest)) if rest.chars().next().is_some_and(|c| c.is_ascii_digit()) => file,
        _ => place,
    }
}
