//! Reading notes: a commit's record, a tree's cached observation (this clone's, or a
//! fetched one where trusted), people's decisions, context rounds and a task's start.

use anyhow::{Context, Result};
use git2::Oid;

use crate::model::IterationRecord;
use crate::signals::observation::Observation;

use super::envelope::{parse_note, ObservationEnvelope, TreeNote};
use super::tree::find_note;
use super::{context, decisions, start};
use super::{
    context_key, decisions_key, start_key, ContextRound, HumanDecision, NotesStore, StoredRecord,
    TaskStart,
};

impl NotesStore<'_> {
    /// The context rounds answered while `commit` was a branch's latest iteration, oldest
    /// first; an unreadable log counts as none.
    pub fn read_context_rounds(&self, commit: Oid) -> Result<Vec<ContextRound>> {
        let object = context_key(commit);
        let Some(blob) = self.note_blob(object)? else {
            return Ok(Vec::new());
        };
        let content = self.repo.find_blob(blob)?;
        Ok(
            context::parse_keyed(object, content.content()).unwrap_or_else(|error| {
                tracing::warn!(%commit, %object, %error, "unreadable context note");
                Vec::new()
            }),
        )
    }

    /// The record stored for `commit`, if any.
    pub fn read(&self, commit: Oid) -> Result<Option<IterationRecord>> {
        Ok(self.read_stored(commit)?.map(|stored| stored.record))
    }

    /// The record stored for `object` (a commit, or a tree for the cache) with its
    /// fingerprint, if any. An unreadable note is an error (see [`Self::read_record`]).
    pub fn read_stored(&self, object: Oid) -> Result<Option<StoredRecord>> {
        let Some(blob_id) = self.note_blob(object)? else {
            return Ok(None);
        };
        let records = &self.read_cache.records;
        if let Some(stored) = records.borrow().get(&(object, blob_id)) {
            return Ok(Some(stored.clone()));
        }
        let blob = self.repo.find_blob(blob_id)?;
        let mut stored = parse_note(blob.content())
            .with_context(|| format!("the {} note of {object} is not a record", self.notes_ref))?;
        stored.trusted = self.written_here(object, blob.content());
        records
            .borrow_mut()
            .insert((object, blob_id), stored.clone());
        Ok(Some(stored))
    }

    /// Like [`Self::read_stored`], but an unreadable note is skipped (reported once per
    /// object): one bad note, perhaps fetched from a remote, must not break a branch.
    pub fn read_record(&self, object: Oid) -> Result<Option<StoredRecord>> {
        let Some(blob) = self.note_blob(object)? else {
            return Ok(None);
        };
        match self.read_stored(object) {
            Ok(stored) => Ok(stored),
            Err(error) => {
                self.warn_unreadable(object, blob, &error);
                Ok(None)
            }
        }
    }

    pub(super) fn warn_unreadable(&self, object: Oid, blob: Oid, error: &anyhow::Error) {
        if !self.warned.borrow_mut().insert(object) {
            return;
        }
        let cause = error.root_cause().to_string();
        let cause: String = cause.chars().take(200).collect();
        tracing::debug!(%object, %blob, %error, "unreadable note");
        eprintln!(
            "itergate: warning: skipping the {} note of {object}: not an itergate record ({cause}); \
             remove it with `git notes --ref {} remove {object}`",
            self.notes_ref, self.notes_ref
        );
    }

    /// What the checks observed on `tree` with this check configuration: observing it
    /// again would give the same. One lookup of the tree's note; anything else there (an
    /// older version's record, another configuration, a broken note, a note this clone did
    /// not write) is a miss.
    pub fn find_observation(&self, tree: Oid, fingerprint: &str) -> Result<Option<Observation>> {
        let Some(note) = self.tree_note(tree)? else {
            return Ok(None);
        };
        if !note.written_here {
            // Fetched, hand-written or forged: never a reason to skip the checks.
            tracing::debug!(%tree, "the tree note was not written by this clone; not a cache hit");
            return Ok(None);
        }
        // A broken or outdated cache entry costs a re-score, never the push.
        Ok(note
            .envelope
            .as_ref()
            .filter(|envelope| envelope.fingerprint == fingerprint)
            .map(|envelope| envelope.observation.clone()))
    }

    /// The observation of `tree` in a note this clone did **not** write (fetched from a
    /// remote with `itergate notes fetch`), made with the checks `fingerprint` names. Only
    /// for a base whose configuration says such notes are trusted
    /// (`scoring.trust_fetched_base`); never a cache of anything else.
    pub fn find_fetched_observation(
        &self,
        tree: Oid,
        fingerprint: &str,
    ) -> Result<Option<Observation>> {
        let Some(note) = self.tree_note(tree)? else {
            return Ok(None);
        };
        if note.written_here {
            return Ok(None);
        }
        Ok(note
            .envelope
            .as_ref()
            .filter(|envelope| envelope.fingerprint == fingerprint)
            .map(|envelope| envelope.observation.clone()))
    }

    /// `tree`'s note, read and checked once per store.
    fn tree_note(&self, tree: Oid) -> Result<Option<std::rc::Rc<TreeNote>>> {
        let Some(blob_id) = self.note_blob(tree)? else {
            return Ok(None);
        };
        let cache = &self.read_cache.observations;
        if let Some(note) = cache.borrow().get(&(tree, blob_id)) {
            return Ok(Some(note.clone()));
        }
        let blob = self.repo.find_blob(blob_id)?;
        let envelope = serde_json::from_slice::<ObservationEnvelope>(blob.content())
            .inspect_err(|error| {
                tracing::debug!(%tree, %error, "the tree note is not a current observation")
            })
            .ok();
        let note = std::rc::Rc::new(TreeNote {
            written_here: self.written_here(tree, blob.content()),
            envelope,
        });
        cache.borrow_mut().insert((tree, blob_id), note.clone());
        Ok(Some(note))
    }

    /// The blob of `object`'s note: this store's own write, or the notes tree's entry.
    pub(super) fn note_blob(&self, object: Oid) -> Result<Option<Oid>> {
        if let Some(&blob) = self.written.borrow().get(&object) {
            return Ok(Some(blob));
        }
        let Some(tree) = &self.tree else {
            return Ok(None);
        };
        if let Some(&found) = self.read_cache.found.borrow().get(&object) {
            return Ok(found);
        }
        let found = find_note(self.repo, tree, &object.to_string())
            .with_context(|| format!("looking up the {} note of {object}", self.notes_ref))?;
        self.read_cache.found.borrow_mut().insert(object, found);
        Ok(found)
    }

    /// What people decided while `commit` was a branch's latest iteration, oldest first
    /// (see `decisions`). An unreadable log is skipped, reported once: one bad note must
    /// not break a branch.
    pub fn read_decisions(&self, commit: Oid) -> Result<Vec<HumanDecision>> {
        let object = decisions_key(commit);
        let Some(blob) = self.note_blob(object)? else {
            return Ok(Vec::new());
        };
        let content = self.repo.find_blob(blob)?;
        match decisions::parse_keyed(object, content.content()) {
            Ok((_, log)) => Ok(log),
            Err(error) => {
                if self.warned.borrow_mut().insert(object) {
                    let cause: String = error.to_string().chars().take(200).collect();
                    tracing::debug!(%commit, %object, %blob, %error, "unreadable decisions note");
                    eprintln!(
                        "itergate: warning: skipping the decisions of {commit} (the {} note of {object}): \
                         not an itergate decisions note ({cause}); remove it with `git notes --ref {} remove {object}`",
                        self.notes_ref, self.notes_ref
                    );
                }
                Ok(Vec::new())
            }
        }
    }

    /// The start `itergate loop` recorded for `branch`, when this clone wrote it (a fetched
    /// or hand-written note never sets a task's targets); unreadable ones are skipped.
    pub fn read_task_start(&self, branch: &str) -> Result<Option<TaskStart>> {
        let object = start_key(branch);
        let Some(blob) = self.note_blob(object)? else {
            return Ok(None);
        };
        let content = self.repo.find_blob(blob)?;
        if !self.written_here(object, content.content()) {
            tracing::debug!(%object, "a start note this clone did not write; ignored");
            return Ok(None);
        }
        match start::parse_keyed(object, content.content()) {
            Ok(start) => Ok(Some(start)),
            Err(error) => {
                tracing::warn!(%object, %error, "unreadable start note");
                Ok(None)
            }
        }
    }

    /// The stored records of a task's commits, in the order given; commits without a
    /// readable note are left out (unreadable ones are reported once).
    pub fn history(&self, commits: &[Oid]) -> Result<Vec<IterationRecord>> {
        let mut records = Vec::with_capacity(commits.len());
        for &commit in commits {
            if let Some(stored) = self.read_record(commit)? {
                records.push(stored.record);
            }
        }
        Ok(records)
    }
}
