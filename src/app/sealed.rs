//! The task's sealed environment ([`crate::signals::environment`]): fingerprinted where the
//! task starts (kept in its start note) and scanned again when an iteration is judged. What
//! changed that no manifest or lockfile committed since the start explains is an integrity
//! violation of that iteration (VOID), and the environment's digest is part of every
//! observation's cache key: an observation made in another environment is never replayed.
//!
//! Only where checks inherit the process environment (the hook, `run`, the loop): `itergate
//! ci` runs in a fresh, scrubbed runner and seals nothing here.

use std::sync::{Arc, Mutex};

use git2::{Oid, Repository};

use crate::signals::checks::EnvPolicy;
use crate::signals::environment::{self, Change, Fingerprint, Scope};

use super::{Env, Failure};

/// The environment as scanned now, kept until [`Sealed::rescan`] (the loop calls it after
/// each agent run; every other command scans once).
#[derive(Clone, Default)]
pub struct Sealed {
    scanned: Arc<Mutex<Option<Arc<Scanned>>>>,
}

/// One scan: the fingerprint and its digest.
pub struct Scanned {
    root: std::path::PathBuf,
    pub fingerprint: Fingerprint,
    pub digest: String,
}

impl Sealed {
    /// Forgets the last scan: the next question scans again.
    pub fn rescan(&self) {
        if let Ok(mut scanned) = self.scanned.lock() {
            *scanned = None;
        }
    }
}

/// The environment now; `None` where checks do not inherit it (`itergate ci`).
pub fn current(env: &Env, repo: &Repository) -> Option<Arc<Scanned>> {
    if env.check_env != EnvPolicy::Inherit {
        return None;
    }
    let mut slot = env.sealed.scanned.lock().ok()?;
    if let Some(scanned) = slot.as_ref().filter(|s| s.root == env.root) {
        return Some(Arc::clone(scanned));
    }
    let fingerprint = scan(env, repo);
    let digest = environment::digest(&fingerprint);
    let scanned = Arc::new(Scanned {
        root: env.root.clone(),
        fingerprint,
        digest,
    });
    *slot = Some(Arc::clone(&scanned));
    Some(scanned)
}

fn scan(env: &Env, repo: &Repository) -> Fingerprint {
    let started = std::time::Instant::now();
    let index = repo.index().ok();
    let tracked = |path: &str| {
        index
            .as_ref()
            .is_some_and(|i| i.get_path(std::path::Path::new(path), 0).is_some())
    };
    let names: Vec<String> = std::env::vars_os()
        .filter_map(|(k, _)| k.into_string().ok())
        .collect();
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let vars = |name: &str| std::env::var(name).ok();
    let fingerprint = environment::scan(&Scope {
        root: &env.root,
        home: home.as_deref(),
        vars: &vars,
        names: &names,
        tracked: &tracked,
    });
    tracing::debug!(
        entries = fingerprint.entries.len(),
        elapsed_ms = started.elapsed().as_millis() as u64,
        "environment fingerprint"
    );
    fingerprint
}

/// The digest of the environment now, for cache keys ("" where nothing is sealed).
pub fn digest(env: &Env, repo: &Repository) -> String {
    current(env, repo).map_or_else(String::new, |s| s.digest.clone())
}

/// What changed in the environment between the task's start (`recorded`) and now that no
/// file committed between `start` and `commit` explains.
pub fn unexplained_changes(
    env: &Env,
    repo: &Repository,
    recorded: Option<&Fingerprint>,
    start: Oid,
    commit: Oid,
) -> Result<Vec<Change>, Failure> {
    let (Some(recorded), Some(now)) = (recorded, current(env, repo)) else {
        return Ok(Vec::new());
    };
    let changes = environment::changes(recorded, &now.fingerprint);
    if changes.is_empty() {
        return Ok(changes);
    }
    let edited = edited_paths(repo, start, commit)?;
    Ok(environment::unexplained(changes, &edited))
}

/// The paths the commits between `from` and `to` touched.
fn edited_paths(repo: &Repository, from: Oid, to: Oid) -> Result<Vec<String>, Failure> {
    let tree = |oid: Oid| {
        repo.find_commit(oid)
            .and_then(|c| c.tree())
            .map_err(anyhow::Error::from)
    };
    let diff = repo
        .diff_tree_to_tree(Some(&tree(from)?), Some(&tree(to)?), None)
        .map_err(anyhow::Error::from)?;
    Ok(diff
        .deltas()
        .flat_map(|d| [d.old_file().path(), d.new_file().path()])
        .flatten()
        .filter_map(|p| p.to_str().map(str::to_string))
        .collect())
}
