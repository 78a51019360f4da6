//! The `pre-push` hook protocol: git writes one line per ref it is about to update,
//! `<local ref> SP <local oid> SP <remote ref> SP <remote oid> LF` (githooks(5)), and the
//! hook decides from them which commits are being pushed. This module turns those lines
//! into typed [`PushUpdate`]s and tells a new branch from an update, a force push, a
//! deletion, a tag and a push of a detached HEAD.
//!
//! Object ids are kept as the text git wrote: sha1 (40 hex digits) and sha256 (64) alike;
//! an id of all zeros, of any length, means "no object" (a ref being created or deleted).

use std::io::Read;

use anyhow::Context;
use git2::{Oid, Repository};

/// What a pushed ref update does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PushKind {
    /// Creates a branch on the remote (the remote oid is all zeros).
    NewBranch,
    /// Moves a remote branch forward (or, before [`classify`], any branch update).
    Update,
    /// Moves a remote branch to a commit that does not contain its old tip.
    ForcePush,
    /// Deletes the remote ref (the local oid is all zeros).
    Delete,
    /// Pushes a tag (`refs/tags/*`).
    Tag,
    /// Pushes something other than a local branch: `HEAD` while detached, a bare commit id,
    /// a remote-tracking ref.
    DetachedHead,
}

/// One line of the pre-push input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushUpdate {
    pub local_ref: String,
    pub local_oid: String,
    pub remote_ref: String,
    pub remote_oid: String,
    pub kind: PushKind,
}

/// A line git would not have written: reported with its 1-based line number.
#[derive(Debug, thiserror::Error)]
pub enum PushParseError {
    #[error(
        "pre-push input line {line}: expected `<local ref> <local oid> <remote ref> <remote oid>`, \
         found {found} field(s) in {text:?}"
    )]
    FieldCount {
        line: usize,
        found: usize,
        text: String,
    },
    #[error("pre-push input line {line}: the {field} `{value}` is not a hexadecimal object id")]
    BadOid {
        line: usize,
        field: &'static str,
        value: String,
    },
    #[error("pre-push input line {line}: not valid UTF-8")]
    NotUtf8 { line: usize },
    #[error("reading the pre-push input")]
    Io(#[from] std::io::Error),
}

impl PushParseError {
    /// The offending line, when the error is about one.
    pub fn line(&self) -> Option<usize> {
        match self {
            PushParseError::FieldCount { line, .. }
            | PushParseError::BadOid { line, .. }
            | PushParseError::NotUtf8 { line } => Some(*line),
            PushParseError::Io(_) => None,
        }
    }
}

/// Whether an object id is git's "no object": all zeros, whatever the hash length.
pub fn is_zero_oid(oid: &str) -> bool {
    !oid.is_empty() && oid.bytes().all(|b| b == b'0')
}

/// Reads the whole pre-push input (the hook's stdin) and parses it.
pub fn read_push_updates(mut input: impl Read) -> Result<Vec<PushUpdate>, PushParseError> {
    let mut bytes = Vec::new();
    input.read_to_end(&mut bytes)?;
    let mut updates = Vec::new();
    for (index, line) in bytes.split(|&b| b == b'\n').enumerate() {
        let text =
            std::str::from_utf8(line).map_err(|_| PushParseError::NotUtf8 { line: index + 1 })?;
        if let Some(update) = parse_line(index + 1, text)? {
            updates.push(update);
        }
    }
    Ok(updates)
}

/// Parses pre-push input text. Blank lines are ignored.
pub fn parse_push_lines(input: &str) -> Result<Vec<PushUpdate>, PushParseError> {
    let mut updates = Vec::new();
    for (index, text) in input.split('\n').enumerate() {
        if let Some(update) = parse_line(index + 1, text)? {
            updates.push(update);
        }
    }
    Ok(updates)
}

fn parse_line(line: usize, text: &str) -> Result<Option<PushUpdate>, PushParseError> {
    let text = text.strip_suffix('\r').unwrap_or(text);
    if text.trim().is_empty() {
        return Ok(None);
    }
    let fields: Vec<&str> = text.split(' ').collect();
    let [local_ref, local_oid, remote_ref, remote_oid] = fields[..] else {
        return Err(PushParseError::FieldCount {
            line,
            found: text.split_whitespace().count(),
            text: text.to_owned(),
        });
    };
    if local_ref.is_empty() || remote_ref.is_empty() {
        return Err(PushParseError::FieldCount {
            line,
            found: text.split_whitespace().count(),
            text: text.to_owned(),
        });
    }
    check_oid(line, "local object id", local_oid)?;
    check_oid(line, "remote object id", remote_oid)?;
    let kind = kind_from_line(local_ref, local_oid, remote_ref, remote_oid);
    Ok(Some(PushUpdate {
        local_ref: local_ref.to_owned(),
        local_oid: local_oid.to_owned(),
        remote_ref: remote_ref.to_owned(),
        remote_oid: remote_oid.to_owned(),
        kind,
    }))
}

fn check_oid(line: usize, field: &'static str, value: &str) -> Result<(), PushParseError> {
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Ok(());
    }
    Err(PushParseError::BadOid {
        line,
        field,
        value: value.to_owned(),
    })
}

/// The kind a line shows by itself. Deletion comes first (nothing is pushed), then tags,
/// then pushes that do not come from a local branch.
fn kind_from_line(
    local_ref: &str,
    local_oid: &str,
    remote_ref: &str,
    remote_oid: &str,
) -> PushKind {
    if is_zero_oid(local_oid) {
        PushKind::Delete
    } else if local_ref.starts_with("refs/tags/") || remote_ref.starts_with("refs/tags/") {
        PushKind::Tag
    } else if !local_ref.starts_with("refs/heads/") {
        PushKind::DetachedHead
    } else if is_zero_oid(remote_oid) {
        PushKind::NewBranch
    } else {
        PushKind::Update
    }
}

/// Refines an [`PushKind::Update`] with the repository: a force push when the remote's
/// current tip is not an ancestor of the pushed commit (including when this clone does not
/// even have that commit, which it would if it were an ancestor). Other kinds are returned
/// as they are.
pub fn classify(repo: &Repository, update: &PushUpdate) -> anyhow::Result<PushKind> {
    if update.kind != PushKind::Update {
        return Ok(update.kind);
    }
    let local = Oid::from_str(&update.local_oid)
        .with_context(|| format!("reading the pushed object id {}", update.local_oid))?;
    let remote = Oid::from_str(&update.remote_oid)
        .with_context(|| format!("reading the remote object id {}", update.remote_oid))?;
    if local == remote {
        return Ok(PushKind::Update);
    }
    if repo.find_commit(remote).is_err() {
        return Ok(PushKind::ForcePush);
    }
    let fast_forward = crate::git::is_ancestor(repo, remote, local)
        .with_context(|| format!("checking whether {local} contains {remote}"))?;
    Ok(if fast_forward {
        PushKind::Update
    } else {
        PushKind::ForcePush
    })
}

#[cfg(test)]
mod tests;
