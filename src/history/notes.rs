//! The hook mode's history store: one `IterationRecord` per commit, kept as a JSON git note
//! under `refs/notes/itergate`, so history travels with the repository and survives
//! rebases of unrelated branches without touching the work tree or the index.
//!
//! A commit's note is an envelope `{"version":2,"fingerprint":"...","base":"<oid>",
//! "record":{...}}`: the record as evaluated against that base (the merge-base) with the
//! check configuration the fingerprint names. It is reused only for the same base and
//! fingerprint. A bare record (as a person or an older tool might write it) is read too.
//!
//! The note of the commit's *tree* is the score cache: `{"version":2,"fingerprint":"...",
//! "observation":{...}}`, what the checks observed on that tree — raw test outcomes,
//! findings, line coverage — and nothing relative to a base or a history, so any commit
//! with that tree, on any base, is evaluated from it without running a check. "Was this
//! tree observed with these checks?" is one lookup, however many notes the ref holds.
//!
//! # Whose notes are trusted
//!
//! The notes ref is shared: `itergate notes push/fetch` (and anyone with push access to
//! the remote) can put any text in it. So a note is read in one of three ways:
//! - **written by this clone**: every note this clone writes ends with
//!   `"mac":"<hex>"`, an HMAC-SHA256 over the annotated object's id and the note's text,
//!   keyed by a random per-clone secret in `<common git dir>/itergate/notes-key` (created
//!   on the first write, mode 0600, shared by the clone's worktrees, never pushed). Only
//!   these notes are a cache: a tree's observation replaces running its checks, and a
//!   commit's record replaces judging it, only when the MAC verifies. A note copied from
//!   one object to another does not verify either.
//! - **anyone else's** (fetched from a remote, written by hand or by an older itergate):
//!   history only. `status`, `analytics`, `prompt`, and the earlier iterations of `run`
//!   and the hook show such records when this clone cannot judge the commit from its own
//!   observations; no check is ever skipped and no commit being recorded reuses one. A
//!   forged "passing" observation of a failing tree therefore costs one run of the checks.
//! - **unreadable** (not JSON, not a record): skipped with one warning naming the object
//!   and the notes ref, so one bad note never breaks a command or the hook.
//!
//! A third kind of note holds what people decided on a branch (`itergate accept`,
//! `escalate`, `adjust`, `feedback`, `budget`): see `decisions` for where it lives and
//! why everyone's decisions count, not only this clone's.
//! A fourth counts the `CONTEXT_GAP_REPORT` rounds answered for an iteration (`itergate
//! context`): see `context`.
//!
//! The cost of trusting nobody else: a second clone (or a CI runner) observes a tree
//! again the first time it meets it, even when a teammate already pushed its note.
//!
//! The hook runs on every push, so reads are cheap: a store parses the notes tree once and
//! finds each note by binary search (a repository accumulates thousands of notes; listing
//! them all on every push would grow with its age), reading only the blobs asked for.
//!
//! Several processes may write notes at once (parallel pushes, agents in several
//! worktrees). libgit2's own note writing moves the notes ref unconditionally, so two
//! writers can each drop the other's note (the concurrency test in `tests/local/git_notes.rs`
//! loses most notes that way). Instead each write builds its notes commit (blob, tree,
//! commit: no ref is touched) and then moves the notes ref by compare-and-swap under git's
//! ref lock, against the commit it built on, or against "absent" for the first note; a
//! writer that loses the race re-reads the notes tree and tries again, as `git notes`
//! itself does. Notes trees that git fanned out (`ab/cdef...`) are kept that way.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{ErrorKind, Read, Write};
use std::path::Path;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use git2::{Commit, ErrorCode, FileMode, ObjectType, Oid, Repository, Signature, Tree};
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use crate::git::{git_command, run_git};

mod context;
mod decisions;
mod start;

use crate::model::IterationRecord;
use crate::signals::observation::Observation;
pub use context::{context_key, context_use, ContextRound, CONTEXT_KIND};
pub use decisions::{
    decisions_key, parse_decisions, union as union_decisions, HumanAction, HumanDecision,
    DECISIONS_KIND,
};
pub use start::{start_key, TaskStart, START_KIND};

/// Where records live unless configured otherwise.
pub const DEFAULT_NOTES_REF: &str = "refs/notes/itergate";

/// The envelope version this code writes; newer versions are refused, not misread.
/// Version 1 tree notes held records (relative to one base) and are not reused.
pub const ENVELOPE_VERSION: u32 = 2;

/// How often a write is retried when another writer moved the notes ref first.
const MAX_WRITE_ATTEMPTS: u32 = 50;
const BACKOFF_STEP_MS: u64 = 2;
const BACKOFF_CAP_MS: u64 = 40;
/// How long a writer waits for another itergate writer's lock before writing without it.
const LOCK_WAIT: Duration = Duration::from_secs(10);

#[derive(Debug, Serialize, Deserialize)]
struct Envelope {
    version: u32,
    #[serde(default)]
    fingerprint: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    base: Option<String>,
    record: IterationRecord,
}

#[derive(Debug, Serialize, Deserialize)]
struct ObservationEnvelope {
    version: u32,
    fingerprint: String,
    observation: Observation,
}

/// A note read back: the record, the fingerprint of the checks that produced it (`None`
/// for a bare record), the base it was evaluated against, and whether this clone wrote it
/// (its MAC verifies with this clone's key; see the module documentation).
#[derive(Debug, Clone, PartialEq)]
pub struct StoredRecord {
    pub record: IterationRecord,
    pub fingerprint: Option<String>,
    pub base: Option<String>,
    pub trusted: bool,
}

/// One note to store.
pub enum Note<'a> {
    /// A commit's record as evaluated against `base` with the configuration `fingerprint`.
    Record {
        commit: Oid,
        record: &'a IterationRecord,
        fingerprint: &'a str,
        base: Option<Oid>,
    },
    /// What the checks named by `fingerprint` observed on `tree`.
    Observation {
        tree: Oid,
        observation: &'a Observation,
        fingerprint: &'a str,
    },
    /// What people decided while `commit` was the branch's latest iteration: the whole log,
    /// filed under [`decisions_key`]`(commit)` (use [`NotesStore::append_decision`] to add
    /// one without losing a concurrent writer's).
    Decisions {
        commit: Oid,
        decisions: &'a [HumanDecision],
    },
    /// The context rounds answered while `commit` was the branch's latest iteration, filed
    /// under [`context_key`]`(commit)` (see `context`).
    ContextRounds {
        commit: Oid,
        rounds: &'a [ContextRound],
    },
    /// Where the task `itergate loop` drives on a branch started, filed under
    /// [`start_key`]`(branch)` (see `start`).
    TaskStart { start: &'a TaskStart },
}

impl Note<'_> {
    fn object_and_text(&self, key: &CloneKey) -> Result<(Oid, String)> {
        let (object, text) = self.unsigned()?;
        Ok((object, key.sign(object, &text)))
    }

    fn unsigned(&self) -> Result<(Oid, String)> {
        match *self {
            Note::Record {
                commit,
                record,
                fingerprint,
                base,
            } => {
                let envelope = Envelope {
                    version: ENVELOPE_VERSION,
                    fingerprint: fingerprint.to_owned(),
                    base: base.map(|b| b.to_string()),
                    record: record.clone(),
                };
                Ok((commit, note_json(&envelope)?))
            }
            Note::Observation {
                tree,
                observation,
                fingerprint,
            } => {
                let envelope = ObservationEnvelope {
                    version: ENVELOPE_VERSION,
                    fingerprint: fingerprint.to_owned(),
                    observation: observation.clone(),
                };
                Ok((tree, note_json(&envelope)?))
            }
            Note::Decisions { commit, decisions } => Ok((
                decisions_key(commit),
                decisions::envelope_json(commit, decisions)?,
            )),
            Note::ContextRounds { commit, rounds } => {
                Ok((context_key(commit), context::envelope_json(commit, rounds)?))
            }
            Note::TaskStart { start } => {
                Ok((start_key(&start.branch), start::envelope_json(start)?))
            }
        }
    }
}

/// Reads and writes iteration records as git notes of one notes ref.
pub struct NotesStore<'r> {
    repo: &'r Repository,
    notes_ref: String,
    /// The notes tree when the store was opened (`None`: no notes yet).
    tree: Option<Tree<'r>>,
    /// The notes this store wrote since: annotated object → note blob.
    written: RefCell<HashMap<Oid, Oid>>,
    /// This clone's key, read on first use (`Some(None)`: this clone never wrote a note).
    key: RefCell<Option<Option<CloneKey>>>,
    /// Objects whose unreadable note was already reported.
    warned: RefCell<HashSet<Oid>>,
}

impl std::fmt::Debug for NotesStore<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NotesStore")
            .field("repo", &self.repo.path())
            .field("notes_ref", &self.notes_ref)
            .finish()
    }
}

impl<'r> NotesStore<'r> {
    /// The store of `repo`'s notes ref `notes_ref` (default [`DEFAULT_NOTES_REF`]; a short
    /// name like `itergate` means `refs/notes/itergate`). Reads see the notes as they were
    /// when the store was opened, plus the store's own writes.
    pub fn open(repo: &'r Repository, notes_ref: Option<&str>) -> Result<NotesStore<'r>> {
        let notes_ref = full_notes_ref(notes_ref.unwrap_or(DEFAULT_NOTES_REF));
        git2::Reference::is_valid_name(&notes_ref)
            .then_some(())
            .ok_or_else(|| anyhow!("`{notes_ref}` is not a valid ref name"))?;
        let tree = match repo.find_reference(&notes_ref) {
            Ok(reference) => Some(
                reference
                    .peel_to_tree()
                    .with_context(|| format!("{notes_ref} does not point at a notes commit"))?,
            ),
            Err(e) if e.code() == ErrorCode::NotFound => None,
            Err(e) => return Err(e).with_context(|| format!("reading {notes_ref}")),
        };
        Ok(NotesStore {
            repo,
            notes_ref,
            tree,
            written: RefCell::new(HashMap::new()),
            key: RefCell::new(None),
            warned: RefCell::new(HashSet::new()),
        })
    }

    pub fn notes_ref(&self) -> &str {
        &self.notes_ref
    }

    pub fn repository(&self) -> &'r Repository {
        self.repo
    }

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

    /// Writes the notes `make` builds from the current notes tree (`None`: no notes yet),
    /// under the notes lock, retrying on a lost race; remembers what was written.
    fn write_texts(&self, make: &NotesFromTree<'_>) -> Result<()> {
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

    fn write_with_retries(
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
    fn try_write(
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
        let expected = current.as_ref().map_or_else(Oid::zero, Commit::id);
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
    fn build_notes_commit(
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

    fn signature(&self) -> Result<Signature<'static>> {
        match self.repo.signature() {
            Ok(signature) => Ok(signature.to_owned()),
            Err(_) => Signature::now("itergate", "itergate@localhost")
                .context("making a signature for the notes commit"),
        }
    }

    /// This clone's key for reading: `None` when it has none yet (then it wrote no note).
    fn reading_key(&self) -> Option<CloneKey> {
        *self.key.borrow_mut().get_or_insert_with(|| {
            CloneKey::load(self.repo.commondir()).unwrap_or_else(|error| {
                tracing::warn!(%error, "cannot read this clone's notes key; trusting no note");
                None
            })
        })
    }

    /// This clone's key for writing, created on the first write.
    fn writing_key(&self) -> Result<CloneKey> {
        if let Some(key) = self.reading_key() {
            return Ok(key);
        }
        let key = CloneKey::load_or_create(self.repo.commondir())?;
        *self.key.borrow_mut() = Some(Some(key));
        Ok(key)
    }

    /// Whether `text`, the note of `object`, carries this clone's MAC.
    fn written_here(&self, object: Oid, text: &[u8]) -> bool {
        self.reading_key()
            .is_some_and(|key| key.verify(object, text))
    }

    /// The record stored for `commit`, if any.
    pub fn read(&self, commit: Oid) -> Result<Option<IterationRecord>> {
        Ok(self.read_stored(commit)?.map(|stored| stored.record))
    }

    /// The record stored for `object` (a commit, or a tree for the cache) with its
    /// fingerprint, if any. An unreadable note is an error (see [`Self::read_record`]).
    pub fn read_stored(&self, object: Oid) -> Result<Option<StoredRecord>> {
        let Some(blob) = self.note_blob(object)? else {
            return Ok(None);
        };
        let blob = self.repo.find_blob(blob)?;
        let mut stored = parse_note(blob.content())
            .with_context(|| format!("the {} note of {object} is not a record", self.notes_ref))?;
        stored.trusted = self.written_here(object, blob.content());
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

    fn warn_unreadable(&self, object: Oid, blob: Oid, error: &anyhow::Error) {
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
        let Some(blob) = self.note_blob(tree)? else {
            return Ok(None);
        };
        let blob = self.repo.find_blob(blob)?;
        if !self.written_here(tree, blob.content()) {
            // Fetched, hand-written or forged: never a reason to skip the checks.
            tracing::debug!(%tree, "the tree note was not written by this clone; not a cache hit");
            return Ok(None);
        }
        match serde_json::from_slice::<ObservationEnvelope>(blob.content()) {
            Ok(envelope) if envelope.fingerprint == fingerprint => Ok(Some(envelope.observation)),
            Ok(_) => Ok(None),
            Err(error) => {
                // A broken or outdated cache entry costs a re-score, never the push.
                tracing::debug!(%tree, %error, "the tree note is not a current observation");
                Ok(None)
            }
        }
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
        let Some(blob) = self.note_blob(tree)? else {
            return Ok(None);
        };
        let blob = self.repo.find_blob(blob)?;
        if self.written_here(tree, blob.content()) {
            return Ok(None);
        }
        Ok(
            serde_json::from_slice::<ObservationEnvelope>(blob.content())
                .ok()
                .filter(|envelope| envelope.fingerprint == fingerprint)
                .map(|envelope| envelope.observation),
        )
    }

    /// The blob of `object`'s note: this store's own write, or the notes tree's entry.
    fn note_blob(&self, object: Oid) -> Result<Option<Oid>> {
        if let Some(&blob) = self.written.borrow().get(&object) {
            return Ok(Some(blob));
        }
        let Some(tree) = &self.tree else {
            return Ok(None);
        };
        find_note(self.repo, tree, &object.to_string())
            .with_context(|| format!("looking up the {} note of {object}", self.notes_ref))
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

/// `itergate` → `refs/notes/itergate`; full names are kept.
pub fn full_notes_ref(name: &str) -> String {
    if name.starts_with("refs/") {
        name.to_owned()
    } else {
        format!("refs/notes/{name}")
    }
}

/// Parses a note: an envelope, or a bare record. Envelopes, the common case, are parsed
/// in one pass; the slower path works out what an unreadable note is.
pub fn parse_note(bytes: &[u8]) -> Result<StoredRecord> {
    let envelope_error = match serde_json::from_slice::<Envelope>(bytes) {
        Ok(envelope) if envelope.version <= ENVELOPE_VERSION => {
            return Ok(StoredRecord {
                record: envelope.record,
                fingerprint: Some(envelope.fingerprint),
                base: envelope.base,
                trusted: false,
            })
        }
        Ok(envelope) => return Err(newer_envelope(envelope.version)),
        Err(e) => e,
    };
    let value: serde_json::Value = serde_json::from_slice(bytes).context("not JSON")?;
    let version = value
        .get("version")
        .filter(|_| value.get("record").is_some());
    if let Some(version) = version {
        return match version.as_u64() {
            Some(v) if v > u64::from(ENVELOPE_VERSION) => Err(newer_envelope(v)),
            _ => Err(envelope_error).context("not a record envelope"),
        };
    }
    let record = serde_json::from_value(value).context("not an iteration record")?;
    Ok(StoredRecord {
        record,
        fingerprint: None,
        base: None,
        trusted: false,
    })
}

/// The note's JSON object, unsigned and without a trailing newline.
fn note_json(value: &impl Serialize) -> Result<String> {
    serde_json::to_string(value).context("serialising the note")
}

/// Where this clone's notes key lives, under the common git directory.
const KEY_DIR: &str = "itergate";
const KEY_FILE: &str = "notes-key";
const KEY_BYTES: usize = 32;
/// What precedes the MAC at the end of a signed note: `{...,"mac":"<64 hex digits>"}`.
const MAC_FIELD: &[u8] = b",\"mac\":\"";
const MAC_HEX_LEN: usize = 64;

/// The per-clone secret that marks the notes this clone wrote (see the module docs). No
/// `Debug`: it must not reach a log.
#[derive(Clone, Copy)]
pub(crate) struct CloneKey([u8; KEY_BYTES]);

impl CloneKey {
    fn path(common_dir: &Path) -> std::path::PathBuf {
        common_dir.join(KEY_DIR).join(KEY_FILE)
    }

    /// The key, if this clone has one.
    fn load(common_dir: &Path) -> Result<Option<CloneKey>> {
        let path = Self::path(common_dir);
        let mut bytes = Vec::with_capacity(KEY_BYTES);
        match std::fs::File::open(&path) {
            Ok(file) => {
                file.take(KEY_BYTES as u64 + 1)
                    .read_to_end(&mut bytes)
                    .with_context(|| format!("reading {}", path.display()))?;
            }
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).with_context(|| format!("opening {}", path.display())),
        }
        let key: [u8; KEY_BYTES] = bytes
            .try_into()
            .map_err(|_| anyhow!("{} is not a {KEY_BYTES}-byte key", path.display()))?;
        Ok(Some(CloneKey(key)))
    }

    /// The key, made now if this clone has none: random bytes written to a private file
    /// and linked into place, so concurrent first writers agree on one key.
    fn load_or_create(common_dir: &Path) -> Result<CloneKey> {
        if let Some(key) = Self::load(common_dir)? {
            return Ok(key);
        }
        let path = Self::path(common_dir);
        let dir = common_dir.join(KEY_DIR);
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let mut key = [0u8; KEY_BYTES];
        std::fs::File::open("/dev/urandom")
            .and_then(|mut f| f.read_exact(&mut key))
            .context("reading random bytes for this clone's notes key")?;
        // Unique per process and call: threads of one process create keys concurrently too.
        static SCRATCH: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let serial = SCRATCH.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let scratch = dir.join(format!("{KEY_FILE}.{}-{serial}.tmp", std::process::id()));
        let written = {
            use std::os::unix::fs::OpenOptionsExt;
            std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(&scratch)
                .and_then(|mut f| f.write_all(&key).and_then(|()| f.sync_all()))
        };
        written.with_context(|| format!("writing {}", scratch.display()))?;
        let linked = std::fs::hard_link(&scratch, &path);
        let _ = std::fs::remove_file(&scratch);
        match linked {
            Ok(()) => Ok(CloneKey(key)),
            Err(e) if e.kind() == ErrorKind::AlreadyExists => Self::load(common_dir)?
                .ok_or_else(|| anyhow!("{} vanished while being created", path.display())),
            Err(e) => Err(e).with_context(|| format!("creating {}", path.display())),
        }
    }

    fn mac(&self, object: Oid, body: &[&[u8]]) -> Hmac<Sha256> {
        // `new_from_slice` accepts keys of any length for HMAC; 32 bytes always do.
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.0)
            .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
        mac.update(object.as_bytes());
        for part in body {
            mac.update(part);
        }
        mac
    }

    /// `json` (one JSON object) with a `mac` member appended, plus a newline.
    fn sign(&self, object: Oid, json: &str) -> String {
        let tag = self.mac(object, &[json.as_bytes()]).finalize().into_bytes();
        let open = json.strip_suffix('}').unwrap_or(json);
        let mut text = String::with_capacity(json.len() + MAC_FIELD.len() + MAC_HEX_LEN + 3);
        text.push_str(open);
        text.push_str(",\"mac\":\"");
        for byte in tag {
            text.push_str(&format!("{byte:02x}"));
        }
        text.push_str("\"}\n");
        text
    }

    /// Whether `text` is a note [`Self::sign`] made for `object` with this key.
    fn verify(&self, object: Oid, text: &[u8]) -> bool {
        let text = text.trim_ascii_end();
        let Some(rest) = text.strip_suffix(b"\"}") else {
            return false;
        };
        let Some(hex_start) = rest.len().checked_sub(MAC_HEX_LEN) else {
            return false;
        };
        let (rest, hex) = rest.split_at(hex_start);
        let Some(body) = rest.strip_suffix(MAC_FIELD) else {
            return false;
        };
        let Some(tag) = decode_hex(hex) else {
            return false;
        };
        self.mac(object, &[body, b"}"]).verify_slice(&tag).is_ok()
    }
}

fn decode_hex(hex: &[u8]) -> Option<Vec<u8>> {
    let digit = |b: u8| (b as char).to_digit(16).and_then(|d| u8::try_from(d).ok());
    hex.chunks(2)
        .map(|pair| match pair {
            [high, low] => Some(digit(*high)? << 4 | digit(*low)?),
            _ => None,
        })
        .collect()
}

fn newer_envelope(version: impl std::fmt::Display) -> anyhow::Error {
    anyhow!(
        "written by a newer itergate (envelope version {version}, this one reads up to {ENVELOPE_VERSION})"
    )
}

/// Errors of the compare-and-swap that mean "someone else moved (or is moving, or
/// created, or deleted) the notes ref first": build again on the new value.
fn is_contention(error: &git2::Error) -> bool {
    matches!(
        error.code(),
        ErrorCode::Locked | ErrorCode::Modified | ErrorCode::Exists | ErrorCode::NotFound
    )
}

enum WriteOutcome {
    /// The ref moved to a notes commit with these notes (object, text).
    Written(Vec<(Oid, String)>),
    Raced,
}

/// Builds the notes to write from the notes tree they will be written on.
type NotesFromTree<'a> = dyn Fn(Option<&Tree<'_>>) -> Result<Vec<(Oid, String)>> + 'a;

/// The note blob named `name` (a hex id, or what is left of it below a fanout directory):
/// a flat entry, or one inside the fanout directory of its first two digits.
fn find_note(repo: &Repository, tree: &Tree<'_>, name: &str) -> Result<Option<Oid>> {
    if let Some(entry) = tree.get_name(name) {
        if entry.kind() == Some(ObjectType::Blob) {
            return Ok(Some(entry.id()));
        }
    }
    let directory = tree
        .get_name(name.get(..2).unwrap_or_default())
        .filter(|entry| name.len() > 2 && entry.kind() == Some(ObjectType::Tree));
    match directory {
        Some(entry) => find_note(repo, &repo.find_tree(entry.id())?, &name[2..]),
        None => Ok(None),
    }
}

/// Note entries a notes tree level holds before it is fanned out into `ab/` directories
/// (git does the same to large notes trees, by its own heuristic; both layouts read alike).
/// Flat, every write would rewrite one tree of all notes: 700 KB at 10,000 notes.
const FANOUT_AT: usize = 256;

/// Adds `notes` (name → blob; a name is a hex id, or what is left of it below a fanout
/// directory) to a copy of `tree` and returns the new tree. A level that is fanned out, or
/// grows past [`FANOUT_AT`], keeps every note in the directory of its name's first two
/// digits, moving flat notes there the first time; a smaller level stays flat.
fn insert_notes(
    repo: &Repository,
    tree: Option<&Tree<'_>>,
    notes: Vec<(String, Oid)>,
) -> Result<Oid> {
    let mut builder = repo.treebuilder(tree)?;
    let size = tree.map_or(0, Tree::len);
    if !tree.is_some_and(is_fanned_out) && size + notes.len() <= FANOUT_AT {
        for (name, blob) in notes {
            builder.insert(&name, blob, FileMode::Blob.into())?;
        }
        return Ok(builder.write()?);
    }
    let mut directories: BTreeMap<String, Vec<(String, Oid)>> = BTreeMap::new();
    let flat = tree
        .into_iter()
        .flat_map(Tree::iter)
        .filter(|entry| entry.kind() == Some(ObjectType::Blob))
        .filter_map(|entry| Some((entry.name()?.to_owned(), entry.id())));
    let flat = flat.map(|(name, blob)| (name, blob, false));
    let notes = notes.into_iter().map(|(name, blob)| (name, blob, true));
    for (name, blob, new) in flat.chain(notes) {
        if name.len() <= 2 || !name.bytes().all(|b| b.is_ascii_hexdigit()) {
            // Too short to fan out (or not a note at all): stays, or goes, at this level.
            if new {
                builder.insert(&name, blob, FileMode::Blob.into())?;
            }
            continue;
        }
        if builder.get(&name)?.is_some() {
            builder.remove(&name)?;
        }
        let (prefix, rest) = name.split_at(2);
        directories
            .entry(prefix.to_owned())
            .or_default()
            .push((rest.to_owned(), blob));
    }
    for (prefix, notes) in directories {
        let existing = tree
            .and_then(|t| t.get_name(&prefix))
            .filter(|entry| entry.kind() == Some(ObjectType::Tree))
            .map(|entry| repo.find_tree(entry.id()))
            .transpose()?;
        let written = insert_notes(repo, existing.as_ref(), notes)?;
        builder.insert(&prefix, written, FileMode::Tree.into())?;
    }
    Ok(builder.write()?)
}

/// Whether a notes tree level keeps its notes in `ab/` directories.
fn is_fanned_out(tree: &Tree<'_>) -> bool {
    tree.iter().any(|entry| {
        entry.kind() == Some(ObjectType::Tree)
            && entry
                .name()
                .is_some_and(|n| n.len() == 2 && n.bytes().all(|b| b.is_ascii_hexdigit()))
    })
}

fn backoff(attempt: u32) -> Duration {
    let base = (BACKOFF_STEP_MS * u64::from(attempt)).min(BACKOFF_CAP_MS);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::from(d.subsec_nanos()))
        .unwrap_or_default();
    let jitter = (nanos ^ u64::from(std::process::id())) % (base + 1);
    Duration::from_millis(base / 2 + jitter)
}

/// The scratch ref a fetch writes the remote's notes to before merging them.
pub fn remote_scratch_ref(notes_ref: &str) -> String {
    format!("{}-remote", full_notes_ref(notes_ref))
}

/// Publishes the local notes: `git push <remote> <ref>:<ref>`. Not forced: when the remote
/// has notes this clone has not seen, the push is refused; run [`fetch_notes`] first (or
/// [`sync_notes`]).
pub fn push_notes(repo_dir: &Path, remote: &str, notes_ref: &str) -> Result<()> {
    let notes_ref = full_notes_ref(notes_ref);
    run_git(
        git_command(repo_dir)
            .args(["push", "--quiet", "--no-verify", remote])
            .arg(format!("{notes_ref}:{notes_ref}")),
    )
    .with_context(|| format!("pushing {notes_ref} to {remote}"))?;
    Ok(())
}

/// Brings in the remote's notes: `git fetch <remote> +<ref>:<ref>-remote` (a scratch ref,
/// force-updated, so the local notes are never overwritten), then `git notes --ref <ref>
/// merge -s ours <ref>-remote`. A fast-forward just moves the local ref; notes for
/// different commits are unioned; when both sides scored the same commit the local record
/// is kept (a textual union of two JSON documents would be neither). When both sides hold a
/// different decisions log of the same commit, the local log first becomes the union of the
/// two, so keeping "ours" loses no one's decision. Returns whether the remote had any notes.
pub fn fetch_notes(repo_dir: &Path, remote: &str, notes_ref: &str) -> Result<bool> {
    let notes_ref = full_notes_ref(notes_ref);
    let scratch = remote_scratch_ref(&notes_ref);
    let listing = run_git(git_command(repo_dir).args(["ls-remote", remote, &notes_ref]))
        .with_context(|| format!("listing {notes_ref} on {remote}"))?;
    if listing.trim().is_empty() {
        return Ok(false);
    }
    run_git(
        git_command(repo_dir)
            .args(["fetch", "--quiet", "--no-write-fetch-head", remote])
            .arg(format!("+{notes_ref}:{scratch}")),
    )
    .with_context(|| format!("fetching {notes_ref} from {remote}"))?;
    let mut merge = git_command(repo_dir);
    let repo = crate::git::open(repo_dir)?;
    union_fetched_decisions(&repo, &notes_ref, &scratch)
        .with_context(|| format!("merging the decisions in {scratch} into {notes_ref}"))?;
    if repo.signature().is_err() {
        merge.args([
            "-c",
            "user.name=itergate",
            "-c",
            "user.email=itergate@localhost",
        ]);
    }
    merge.args([
        "notes", "--ref", &notes_ref, "merge", "--quiet", "-s", "ours", &scratch,
    ]);
    // `git notes merge` moves the notes ref without checking what it was: take the lock
    // itergate's writers take, so none of their notes is lost in between.
    crate::lock::with_lock(repo.commondir(), "notes", LOCK_WAIT, || run_git(&mut merge))
        .with_context(|| format!("merging {scratch} into {notes_ref}"))?;
    Ok(true)
}

/// Makes every decisions log that both `notes_ref` and the fetched `scratch` ref hold, in
/// different versions, the union of the two in `notes_ref` (see [`fetch_notes`]).
fn union_fetched_decisions(repo: &Repository, notes_ref: &str, scratch: &str) -> Result<()> {
    let theirs = match repo.find_reference(scratch) {
        Ok(reference) => reference.peel_to_tree()?,
        Err(e) if e.code() == ErrorCode::NotFound => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    let store = NotesStore::open(repo, Some(notes_ref))?;
    let Some(ours) = &store.tree else {
        return Ok(());
    };
    let mut differing: Vec<(Oid, Oid, Oid)> = Vec::new();
    let mut lookup_error = None;
    theirs.walk(git2::TreeWalkMode::PreOrder, |root, entry| {
        if entry.kind() != Some(ObjectType::Blob) {
            return git2::TreeWalkResult::Ok;
        }
        let name = format!(
            "{}{}",
            root.replace('/', ""),
            entry.name().unwrap_or_default()
        );
        let Ok(object) = Oid::from_str(&name) else {
            return git2::TreeWalkResult::Ok;
        };
        match find_note(repo, ours, &name) {
            Ok(Some(blob)) if blob != entry.id() => differing.push((object, blob, entry.id())),
            Ok(_) => {}
            Err(e) => {
                lookup_error = Some(e);
                return git2::TreeWalkResult::Abort;
            }
        }
        git2::TreeWalkResult::Ok
    })?;
    if let Some(error) = lookup_error {
        return Err(error);
    }
    let mut merged = Vec::new();
    for (object, our_blob, their_blob) in differing {
        let parse = |blob: Oid| -> Result<_> {
            decisions::parse_keyed(object, repo.find_blob(blob)?.content())
        };
        // Records and observations (and unreadable logs) are left to the merge.
        if let (Ok((commit, ours)), Ok((_, theirs))) = (parse(our_blob), parse(their_blob)) {
            merged.push((commit, union_decisions(&ours, &theirs)));
        }
    }
    let notes: Vec<Note> = merged
        .iter()
        .map(|(commit, decisions)| Note::Decisions {
            commit: *commit,
            decisions,
        })
        .collect();
    store.write(&notes)
}

/// Fetch-and-merge, then push: afterwards local and remote hold the union of both.
pub fn sync_notes(repo_dir: &Path, remote: &str, notes_ref: &str) -> Result<()> {
    fetch_notes(repo_dir, remote, notes_ref)?;
    push_notes(repo_dir, remote, notes_ref)
}
