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
//!   keyed by a random per-clone secret kept outside the repository, in the user's state
//!   directory (`~/.local/state/itergate/notes-keys/<digest of the clone's git dir>`,
//!   [`crate::state_dir`]; created on the first write, mode 0600, shared by the clone's
//!   worktrees, never pushed, out of reach of whatever holds only the work tree). Only
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

mod context;
mod decisions;
mod envelope;
mod read;
mod start;
mod sync;
mod tree;
mod write;

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

use anyhow::{anyhow, Context, Result};
use envelope::{note_json, Envelope, ObservationEnvelope};
use git2::{ErrorCode, Oid, Repository, Tree};

use crate::model::IterationRecord;
use crate::signals::observation::Observation;

pub use context::{context_key, context_use, ContextRound, CONTEXT_KIND};
pub use decisions::{
    decisions_key, parse_decisions, union as union_decisions, HumanAction, HumanDecision,
    DECISIONS_KIND,
};
pub use envelope::parse_note;
pub(crate) use envelope::CloneKey;
pub use start::{start_key, TaskStart, START_KIND};
pub use sync::{fetch_notes, push_notes, remote_scratch_ref, sync_notes};

/// Where records live unless configured otherwise.
pub const DEFAULT_NOTES_REF: &str = "refs/notes/itergate";

/// The envelope version this code writes; newer versions are refused, not misread.
/// Version 1 tree notes held records (relative to one base) and are not reused.
pub const ENVELOPE_VERSION: u32 = 2;

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
    /// What this store read before, by the note's blob (its content never changes): a
    /// history is read several times in one command (the records, the VOID iterations,
    /// the flaky tests), and each read would inflate and parse every note again.
    read_cache: ReadCache,
}

/// Notes read before, by (annotated object, note blob).
#[derive(Default)]
pub(crate) struct ReadCache {
    /// A note's place in the notes tree as it was when the store was opened.
    found: RefCell<HashMap<Oid, Option<Oid>>>,
    records: RefCell<HashMap<(Oid, Oid), StoredRecord>>,
    /// A tree's note read as a cached observation: whether this clone wrote it, and the
    /// envelope if it is one. A push reads each tree's once, however many commits share it.
    observations: RefCell<HashMap<(Oid, Oid), std::rc::Rc<envelope::TreeNote>>>,
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
            read_cache: ReadCache::default(),
        })
    }

    pub fn notes_ref(&self) -> &str {
        &self.notes_ref
    }

    pub fn repository(&self) -> &'r Repository {
        self.repo
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
