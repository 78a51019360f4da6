//! The notes tree's layout: a note found and inserted whether the tree is flat or fanned
//! out into `ab/` directories, as git keeps it.

use std::collections::BTreeMap;

use anyhow::Result;
use git2::{FileMode, ObjectType, Oid, Repository, Tree};

/// The note blob named `name` (a hex id, or what is left of it below a fanout directory):
/// a flat entry, or one inside the fanout directory of its first two digits.
pub(super) fn find_note(repo: &Repository, tree: &Tree<'_>, name: &str) -> Result<Option<Oid>> {
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
pub(super) const FANOUT_AT: usize = 256;

/// Adds `notes` (name → blob; a name is a hex id, or what is left of it below a fanout
/// directory) to a copy of `tree` and returns the new tree. A level that is fanned out, or
/// grows past [`FANOUT_AT`], keeps every note in the directory of its name's first two
/// digits, moving flat notes there the first time; a smaller level stays flat.
pub(super) fn insert_notes(
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
        .filter_map(|entry| Some((entry.name().ok()?.to_owned(), entry.id())));
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
pub(super) fn is_fanned_out(tree: &Tree<'_>) -> bool {
    tree.iter().any(|entry| {
        entry.kind() == Some(ObjectType::Tree)
            && entry
                .name()
                .is_ok_and(|n| n.len() == 2 && n.bytes().all(|b| b.is_ascii_hexdigit()))
    })
}
