//! The loop owns git: what an agent run may not change — every ref but the branch's
//! forward moves (the base branch, `refs/notes/*`, `refs/itergate/*`, tags), `.git/config`,
//! `.git/hooks` and `.git/info` — is read before the run and compared after it. What
//! changed is put back (through git2 and plain file writes: no hook runs, none can refuse)
//! and named; the loop then escalates. Under the sandbox none of it can be written; this is
//! what holds with `--sandbox off`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use git2::{Oid, Repository};

use crate::app::Failure;
use crate::git;

/// The largest file of `.git/hooks` or `.git/info` kept to be put back.
const MAX_KEPT: u64 = 4 * 1024 * 1024;

/// What the loop owns, as it was before an agent ran.
pub(super) struct GitGuard {
    branch: String,
    before: Oid,
    refs: BTreeMap<String, Oid>,
    files: BTreeMap<PathBuf, Vec<u8>>,
    git_dir: PathBuf,
}

impl GitGuard {
    pub(super) fn take(repo: &Repository, branch: &str, before: Oid) -> Result<GitGuard, Failure> {
        let git_dir = repo.commondir().to_path_buf();
        Ok(GitGuard {
            branch: format!("refs/heads/{branch}"),
            before,
            refs: owned_refs(repo, &format!("refs/heads/{branch}"))?,
            files: owned_files(&git_dir),
            git_dir,
        })
    }

    /// Puts back what the agent changed and names it: empty when it changed nothing the
    /// loop owns. A rewritten branch is named, not put back here (the stop does).
    pub(super) fn restore(&self, repo: &Repository) -> Result<Vec<String>, Failure> {
        let mut changed = Vec::new();
        let now = owned_refs(repo, &self.branch)?;
        for (name, oid) in &self.refs {
            if now.get(name) != Some(oid) {
                repo.reference(name, *oid, true, "itergate: undo the agent's change")
                    .map_err(|e| internal(&format!("putting back {name}"), e))?;
                changed.push(format!("{name} (put back)"));
            }
        }
        for name in now.keys().filter(|n| !self.refs.contains_key(*n)) {
            if let Ok(mut reference) = repo.find_reference(name) {
                reference
                    .delete()
                    .map_err(|e| internal(&format!("deleting {name}"), e))?;
            }
            changed.push(format!("{name} (created; deleted)"));
        }
        let files = owned_files(&self.git_dir);
        for (path, bytes) in &self.files {
            if files.get(path) != Some(bytes) {
                std::fs::write(path, bytes)
                    .map_err(|e| internal(&format!("putting back {}", path.display()), e))?;
                changed.push(format!("{} (put back)", self.shown(path)));
            }
        }
        for path in files.keys().filter(|p| !self.files.contains_key(*p)) {
            std::fs::remove_file(path)
                .map_err(|e| internal(&format!("removing {}", path.display()), e))?;
            changed.push(format!("{} (added; removed)", self.shown(path)));
        }
        let head = repo.find_reference("HEAD").ok();
        let on = head
            .as_ref()
            .and_then(|h| h.symbolic_target().ok().flatten())
            .map(str::to_string);
        if on.as_deref() != Some(self.branch.as_str()) {
            repo.set_head(&self.branch)
                .map_err(|e| internal("putting HEAD back on the branch", e))?;
            changed.push(format!(
                "HEAD moved to {} (put back on {})",
                on.unwrap_or_else(|| "a detached commit".into()),
                self.branch
            ));
        }
        match repo
            .find_reference(&self.branch)
            .ok()
            .and_then(|r| r.target())
        {
            Some(tip) if tip == self.before || git::is_ancestor(repo, self.before, tip)? => {}
            Some(_) => changed.push(format!(
                "{} rewritten (it no longer contains {}, where the run started)",
                self.branch,
                &self.before.to_string()[..12]
            )),
            None => changed.push(format!("{} deleted", self.branch)),
        }
        Ok(changed)
    }

    fn shown(&self, path: &Path) -> String {
        let rel = path.strip_prefix(&self.git_dir).unwrap_or(path);
        format!(".git/{}", rel.display())
    }
}

fn internal(what: &str, e: impl std::fmt::Display) -> Failure {
    Failure::Internal(anyhow::anyhow!("{what}: {e}"))
}

/// Every ref but `branch` and remote-tracking ones (a fetch is not the judge's business).
fn owned_refs(repo: &Repository, branch: &str) -> Result<BTreeMap<String, Oid>, Failure> {
    let mut refs = BTreeMap::new();
    let all = repo
        .references()
        .map_err(|e| internal("reading the refs", e))?;
    for reference in all.flatten() {
        let (Ok(name), Some(oid)) = (reference.name(), reference.target()) else {
            continue;
        };
        if name != branch && !name.starts_with("refs/remotes/") {
            refs.insert(name.to_string(), oid);
        }
    }
    Ok(refs)
}

/// `config`, and every file in `hooks/` and `info/`, with their bytes.
fn owned_files(git_dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut keep = |path: PathBuf| {
        let small = std::fs::metadata(&path).is_ok_and(|m| m.is_file() && m.len() <= MAX_KEPT);
        if small {
            if let Ok(bytes) = std::fs::read(&path) {
                files.insert(path, bytes);
            }
        }
    };
    keep(git_dir.join("config"));
    for dir in ["hooks", "info"] {
        if let Ok(entries) = std::fs::read_dir(git_dir.join(dir)) {
            for entry in entries.flatten() {
                keep(entry.path());
            }
        }
    }
    files
}
