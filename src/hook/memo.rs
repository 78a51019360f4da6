//! A push's decision, kept: pushing again what was judged — the same commits to the same
//! refs, with the same refs, rules and itergate — prints what the judged push printed and
//! ends the same way, without judging again. Such a push reads one file (and the refs).
//!
//! The key is a SHA-256 of everything the decision can depend on that a push can see
//! cheaply: itergate's version, the whole configuration, the push's lines and output
//! options, the templates' files, and every branch, remote-tracking and notes ref (the
//! records, the task's start, a person's `accept` are notes: any new one changes the key).
//! What it cannot see is never memoised: a decision with a wall-clock budget (it depends on
//! the time), or one whose records are not cached (an environment that changed since the
//! task's start is judged again at every push). The memo lives in `.git/itergate/`: whoever
//! can write there can also push with `--no-verify`.

use std::path::PathBuf;

use git2::Repository;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// How the judged push ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Ending {
    Passed,
    /// `--exit-code` and a decision's status.
    Decided(u8),
    /// Stopped by `hook.gate`, with its message.
    Blocked(String),
}

/// What a judged push printed, and how it ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Memo {
    pub key: String,
    pub stderr: String,
    pub stdout: String,
    pub ending: Ending,
}

/// The key of a push: `material` (the version, configuration and push lines the caller
/// names) with the refs and templates as they are now.
pub fn key(repo: &Repository, material: &impl Serialize, templates: Option<&PathBuf>) -> String {
    let mut hash = Sha256::new();
    hash.update(env!("CARGO_PKG_VERSION").as_bytes());
    hash.update(serde_json::to_vec(material).unwrap_or_default());
    for glob in ["refs/heads/*", "refs/remotes/*", "refs/notes/*"] {
        let Ok(refs) = repo.references_glob(glob) else {
            continue;
        };
        let mut listed: Vec<(String, String)> = refs
            .flatten()
            .filter_map(|r| {
                let name = r.name().ok()?.to_string();
                let target = r.resolve().ok()?.target()?.to_string();
                Some((name, target))
            })
            .collect();
        listed.sort();
        for (name, target) in listed {
            hash.update(name.as_bytes());
            hash.update([0]);
            hash.update(target.as_bytes());
            hash.update([b'\n']);
        }
    }
    if let Some(dir) = templates {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let Ok(meta) = entry.metadata() else { continue };
            let modified = meta.modified().ok().map(|t| format!("{t:?}"));
            hash.update(format!(
                "{:?} {} {modified:?}\n",
                entry.file_name(),
                meta.len()
            ));
        }
    }
    format!("{:x}", hash.finalize())
}

fn path(repo: &Repository) -> PathBuf {
    repo.path().join("itergate").join("push-memo.json")
}

/// The memo of the push whose key is `key`, if the last judged push was that one.
pub fn read(repo: &Repository, key: &str) -> Option<Memo> {
    let bytes = std::fs::read(path(repo)).ok()?;
    let memo: Memo = serde_json::from_slice(&bytes).ok()?;
    (memo.key == key).then_some(memo)
}

/// Keeps `memo` for the next push (best effort: a push that cannot keep it is judged again).
pub fn write(repo: &Repository, memo: &Memo) {
    let path = path(repo);
    let written = path
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| {
            let tmp = path.with_extension("json.tmp");
            std::fs::write(&tmp, serde_json::to_vec(memo).unwrap_or_default())?;
            std::fs::rename(&tmp, &path)
        });
    if let Err(e) = written {
        tracing::debug!("keeping the push's decision in {}: {e}", path.display());
    }
}

/// Forgets the memo (a push that was judged but cannot be memoised).
pub fn forget(repo: &Repository) {
    let _ = std::fs::remove_file(path(repo));
}
