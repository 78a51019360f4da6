//! The check-revise-escalate loop of the revision-loop pattern.
//!
//! Each iteration with BLOCKER or WARNING issues is one revision round. INFO issues never
//! ask for a revision. The loop escalates when the round number exceeds
//! `revision.max_iterations` (default 3) or when the BLOCKER + WARNING count fails to fall
//! from one iteration to the next. Counting restarts after a human's `/iterate adjust`.

use crate::config::Config;
use crate::model::{IterationRecord, Severity};

use super::decision::RevisionProgress;

#[derive(Debug, Clone, PartialEq)]
pub struct RevisionState {
    pub progress: RevisionProgress,
    /// The latest iteration has BLOCKER or WARNING issues.
    pub has_issues: bool,
    /// More rounds than allowed.
    pub limit_exceeded: bool,
    /// The issue count did not decrease.
    pub stalled: bool,
}

/// `records` are the iterations counted by the loop (since the last restart).
pub fn progress(config: &Config, records: &[IterationRecord]) -> RevisionState {
    let max = config.revision.max_iterations;
    let Some(latest) = records.last() else {
        return RevisionState {
            progress: RevisionProgress {
                iteration: 0,
                max_iterations: max,
                blockers: 0,
                warnings: 0,
                previous_count: None,
            },
            has_issues: false,
            limit_exceeded: false,
            stalled: false,
        };
    };
    let round = u32::try_from(records.len()).unwrap_or(u32::MAX);
    let count = latest.revision_issue_count();
    let previous_count = records
        .len()
        .checked_sub(2)
        .and_then(|i| records.get(i))
        .map(IterationRecord::revision_issue_count);
    let has_issues = count > 0;
    RevisionState {
        progress: RevisionProgress {
            iteration: round,
            max_iterations: max,
            blockers: latest.count(Severity::Blocker),
            warnings: latest.count(Severity::Warning),
            previous_count,
        },
        has_issues,
        limit_exceeded: has_issues && round > max,
        stalled: has_issues && previous_count.is_some_and(|prev| count >= prev),
    }
}
