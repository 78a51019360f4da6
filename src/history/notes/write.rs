//! Writing notes: one notes commit per write, the ref moved by compare-and-swap under
//! the notes lock, retried with a jittered backoff when another writer won the race.

use std::time::Duration;

use anyhow::{bail, Context, Result};
use git2::{Commit, ErrorCode, ObjectType, Oid, Signature, Tree};

use super::tree::{find_note, insert_notes};
use super::{context, decisions};
use super::{context_key, decisions_key, ContextRound, HumanDecision, Note, NotesStore};

/// How often a write is retried when another writer moved the notes ref first.
pub(super) const MAX_WRITE_ATTEMPTS: u32 = 50;
pub(super) const BACKOFF_STEP_MS: u64 = 2;
pub(super) const BACKOFF_CAP_MS: u64 = 40;
/// How long a writer waits for another itergate writer's lock before writing without it.
pub(super) const LOCK_WAIT: Duration = Duration::from_secs(10);

impl NotesStore<'_> {
    /// Stores each note, replacing any earlier note of its object, in one notes commit.
    /// Retries (with a short, growing, jittered pause) while concurrent writers win the race
    /// for the ref.
    pub fn write(&self, notes: &[Note]) -> Result<()> {
        if notes.is_empty() {
            return Ok(());
        }
        let key = self.writing_key()?;
        let notes = notes
            .iter()
            .map(|note| note.object_and_text(&key))
            .collect::<Result<Vec<_>>>()?;
        self.write_texts(&|_| Ok(notes.clone()))
    }

    /// Adds `decision` to the log of `commit` (see `decisions`). The log is read again
    /// under the notes lock and on every retry, so a decision written meanwhile by another
    /// process is kept. A log that cannot be read is not overwritten: the error says how to
    /// remove it.
    pub fn append_decision(&self, commit: Oid, decision: &HumanDecision) -> Result<()> {
        let key = self.writing_key()?;
        let object = decisions_key(commit);
        self.write_texts(&|current| {
            let mut log = match current {
                Some(tree) => match find_note(self.repo, tree, &object.to_string())? {
                    Some(blob) => {
                        let blob = self.repo.find_blob(blob)?;
                        decisions::parse_keyed(object, blob.content())
                            .map(|(_, log)| log)
                            .with_context(|| {
                                format!(
                                    "the {} decisions note of {commit} (object {object}) cannot be read; \
                                     remove it with `git notes --ref {} remove {object}`",
                                    self.notes_ref, self.notes_ref
                                )
                            })?
                    }
                    None => Vec::new(),
                },
                None => Vec::new(),
            };
            log.push(decision.clone());
            let note = Note::Decisions {
                commit,
                decisions: &log,
            };
            Ok(vec![note.object_and_text(&key)?])
        })
    }

    /// Adds `round` to the context log of `commit` (see `context`), read again under the
    /// notes lock like [`Self::append_decision`]. An unreadable log starts afresh: it only
    /// counts rounds.
    pub fn append_context_round(&self, commit: Oid, round: &ContextRound) -> Result<()> {
        let key = self.writing_key()?;
        let object = context_key(commit);
        self.write_texts(&|current| {
            let mut log = match current {
                Some(tree) => match find_note(self.repo, tree, &object.to_string())? {
                    Some(blob) => {
                        context::parse_keyed(object, self.repo.find_blob(blob)?.content())
                            .unwrap_or_default()
                    }
                    None => Vec::new(),
                },
                None => Vec::new(),
            };
            log.push(round.clone());
            let note = Note::ContextRounds {
                commit,
                rounds: &log,
            };
            Ok(vec![note.object_and_text(&key)?])
        })
    }

    /// Writes the notes `make` builds from the current notes tree (`None`: no notes yet),
    /// under the notes lock, retrying on a lost race; remembers what was written.
    pub(super) fn write_texts(&self, make: &NotesFromTree<'_>) -> Result<()> {
        let signature = self.signature()?;
        // Concurrent itergate writers queue up instead of repeatedly building notes commits
        // that lose the race; without the lock the compare-and-swap still keeps every note.
        let notes = crate::lock::with_lock(self.repo.commondir(), "notes", LOCK_WAIT, || {
            self.write_with_retries(make, &signature)
        })?;
        let mut written = self.written.borrow_mut();
        for (object, text) in &notes {
            written.insert(
                *object,
                Oid::hash_object(ObjectType::Blob, text.as_bytes())?,
            );
        }
        Ok(())
    }

    pub(super) fn write_with_retries(
        &self,
        make: &NotesFromTree<'_>,
        signature: &Signature<'_>,
    ) -> Result<Vec<(Oid, String)>> {
        for attempt in 1..=MAX_WRITE_ATTEMPTS {
            match self.try_write(make, signature) {
                Ok(WriteOutcome::Written(notes)) => return Ok(notes),
                Ok(WriteOutcome::Raced) => std::thread::sleep(backoff(attempt)),
                Err(e) => {
                    return Err(e).with_context(|| format!("writing a {} note", self.notes_ref))
                }
            }
        }
        bail!(
            "writing a {} note: the ref kept changing under {MAX_WRITE_ATTEMPTS} attempts",
            self.notes_ref
        )
    }

    /// One read-modify-write of the notes ref: a notes commit on top of the current one,
    /// then a compare-and-swap of the ref.
    pub(super) fn try_write(
        &self,
        make: &NotesFromTree<'_>,
        signature: &Signature<'_>,
    ) -> Result<WriteOutcome> {
        let current =
            match self.repo.find_reference(&self.notes_ref) {
                Ok(reference) => Some(reference.peel_to_commit().with_context(|| {
                    format!("{} does not point at a notes commit", self.notes_ref)
                })?),
                Err(e) if e.code() == ErrorCode::NotFound => None,
                Err(e) => return Err(e).with_context(|| format!("reading {}", self.notes_ref)),
            };
        let current_tree = current.as_ref().map(Commit::tree).transpose()?;
        let notes = make(current_tree.as_ref())?;
        let Some(&(first, _)) = notes.first() else {
            return Ok(WriteOutcome::Written(notes));
        };
        let built = self
            .build_notes_commit(current.as_ref(), &notes, signature)
            .with_context(|| format!("building the notes commit for the note of {first}"))?;
        let message = format!("itergate: note for {first}");
        // The expected old value is checked under the ref lock; the zero id means "must not
        // exist yet" (libgit2's non-forced create checks existence before locking, so two
        // first writers could both succeed).
        let expected = current.as_ref().map_or(Oid::ZERO_SHA1, Commit::id);
        let swapped =
            self.repo
                .reference_matching(&self.notes_ref, built, true, expected, &message);
        match swapped {
            Ok(_) => Ok(WriteOutcome::Written(notes)),
            Err(e) if is_contention(&e) => Ok(WriteOutcome::Raced),
            Err(e) => Err(e).with_context(|| format!("updating {}", self.notes_ref)),
        }
    }

    /// A commit whose tree is `parent`'s notes tree with each text as its object's note.
    pub(super) fn build_notes_commit(
        &self,
        parent: Option<&Commit<'_>>,
        notes: &[(Oid, String)],
        signature: &Signature<'_>,
    ) -> Result<Oid> {
        let tree = parent.map(Commit::tree).transpose()?;
        let mut entries: Vec<(String, Oid)> = Vec::with_capacity(notes.len());
        for (object, text) in notes {
            entries.push((object.to_string(), self.repo.blob(text.as_bytes())?));
        }
        let tree = insert_notes(self.repo, tree.as_ref(), entries)?;
        let tree = self.repo.find_tree(tree)?;
        let message = format!("Notes added by itergate for {}", notes[0].0);
        let parents: Vec<&Commit<'_>> = parent.into_iter().collect();
        Ok(self
            .repo
            .commit(None, signature, signature, &message, &tree, &parents)?)
    }

    pub(super) fn signature(&self) -> Result<Signature<'static>> {
        match self.repo.signature() {
            Ok(signature) => Ok(signature.to_owned()),
            Err(_) => Signature::now("itergate", "itergate@localhost")
                .context("making a signature for the notes commit"),
        }
    }
}

/// Errors of the compare-and-swap that mean "someone else moved (or is moving, or
/// created, or deleted) the notes ref first": build again on the new value.
pub(super) fn is_contention(error: &git2::Error) -> bool {
    matches!(
        error.code(),
        ErrorCode::Locked | ErrorCode::Modified | ErrorCode::Exists | ErrorCode::NotFound
    )
}

pub(super) enum WriteOutcome {
    /// The ref moved to a notes commit with these notes (object, text).
    Written(Vec<(Oid, String)>),
    Raced,
}

/// Builds the notes to write from the notes tree they will be written on.
pub(super) type NotesFromTree<'a> = dyn Fn(Option<&Tree<'_>>) -> Result<Vec<(Oid, String)>> + 'a;

pub(super) fn backoff(attempt: u32) -> Duration {
    let base = (BACKOFF_STEP_MS * u64::from(attempt)).min(BACKOFF_CAP_MS);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::from(d.subsec_nanos()))
        .unwrap_or_default();
    let jitter = (nanos ^ u64::from(std::process::id())) % (base + 1);
    Duration::from_millis(base / 2 + jitter)
}
