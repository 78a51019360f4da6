//! Sharing notes with a remote: push, fetch (people's decision logs unioned, never
//! overwritten) and sync.

use std::path::Path;

use anyhow::{Context, Result};
use git2::{ErrorCode, ObjectType, Oid, Repository};

use crate::git::{git_command, run_git};

use super::decisions;
use super::tree::find_note;
use super::write::LOCK_WAIT;
use super::{full_notes_ref, union_decisions, Note, NotesStore};

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
pub(super) fn union_fetched_decisions(
    repo: &Repository,
    notes_ref: &str,
    scratch: &str,
) -> Result<()> {
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
