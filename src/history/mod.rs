//! A task's history: its iterations, oldest first, each numbered, whichever store it comes
//! from — git notes for a branch (`notes`, read by `app::local`), a file (`file`), or the
//! sticky comment's hidden state for a pull request (`github::sticky`). Iterations are
//! numbered here and nowhere else: by position in a branch, or one past the last recorded
//! iteration when a pull request's history grows (its oldest records may have been
//! compacted away, and the numbers must not restart).

pub mod file;
pub mod notes;

use std::ops::{Deref, DerefMut};

use serde::{Deserialize, Serialize};

use crate::model::IterationRecord;

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct History(Vec<IterationRecord>);

impl History {
    /// Records as given, with the numbers they carry (a file, a stored state).
    pub fn as_given(records: Vec<IterationRecord>) -> History {
        History(records)
    }

    /// Records of a branch with their commit's position in it (0 for the first commit):
    /// numbered by position from 1, so a commit without a record leaves a gap.
    pub fn by_position(records: impl IntoIterator<Item = (usize, IterationRecord)>) -> History {
        History(
            records
                .into_iter()
                .map(|(index, mut record)| {
                    record.iteration = u32::try_from(index + 1).unwrap_or(u32::MAX);
                    record
                })
                .collect(),
        )
    }

    /// Records `record` as the iteration of its commit: replaces that commit's record
    /// (keeping its number), or appends it as the next iteration. Returns whether it is a
    /// new iteration.
    pub fn record(&mut self, mut record: IterationRecord) -> bool {
        // The latest commit scored again replaces its record; an earlier commit scored
        // again (the head moved back to it) is a new iteration, judged after all the others.
        if let Some(last) = self.0.last_mut().filter(|r| r.commit == record.commit) {
            record.iteration = last.iteration;
            *last = record;
            return false;
        }
        record.iteration = self.0.last().map_or(1, |r| r.iteration.saturating_add(1));
        self.0.push(record);
        true
    }

    /// Drops the `count` oldest records (compaction keeps the numbers of the rest).
    pub fn drop_oldest(&mut self, count: usize) {
        self.0.drain(..count.min(self.0.len()));
    }

    pub fn into_records(self) -> Vec<IterationRecord> {
        self.0
    }
}

impl Deref for History {
    type Target = [IterationRecord];

    fn deref(&self) -> &[IterationRecord] {
        &self.0
    }
}

impl DerefMut for History {
    fn deref_mut(&mut self) -> &mut [IterationRecord] {
        &mut self.0
    }
}

impl FromIterator<IterationRecord> for History {
    fn from_iter<I: IntoIterator<Item = IterationRecord>>(iter: I) -> Self {
        History(iter.into_iter().collect())
    }
}
