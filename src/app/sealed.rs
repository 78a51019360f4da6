//! The task's sealed environment ([`crate::signals::environment`]): fingerprinted where the
//! task starts (kept in its start note) and scanned again when an iteration is judged. What
//! changed that no manifest or lockfile committed since the start explains is an integrity
//! violation of that iteration (VOID); what is observed in such an environment is never
//! cached, and its record is judged again by the next `run`, so a tampered result is never
//! replayed once the tampering is gone.
//!
//! Only where checks inherit the process environment (the hook, `run`, the loop): `itergate
//! ci` runs in a fresh, scrubbed runner and seals nothing here.

use std::sync::{Arc, Mutex};

use git2::{Oid, Repository};

use crate::signals::checks::EnvPolicy;
use crate::signals::environment::{self, Change, Fingerprint, Scope};

use super::local::Task;
use super::{Env, Failure};
use crate::history::notes::{Note, NotesStore};

/// The environment as scanned now, kept until [`Sealed::rescan`] (the loop calls it after
/// each agent run; every other command scans once).
#[derive(Clone, Default)]
pub struct Sealed {
    scanned: Arc<Mutex<Option<Arc<Scanned>>>>,
    /// The environment changed since the task's start: observations made now are not cached.
    unsealed: bool,
}

/// One scan, of the checks' environment at `root`.
pub struct Scanned {
    root: std::path::PathBuf,
    pub fingerprint: Fingerprint,
}

impl Sealed {
    /// The same scan, marked as changed since the task's start.
    pub fn unsealed(&self) -> Sealed {
        Sealed {
            scanned: Arc::clone(&self.scanned),
            unsealed: true,
        }
    }

    /// Whether observations made in this environment may be cached.
    pub fn caches(&self) -> bool {
        !self.unsealed
    }

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
    let scanned = Arc::new(Scanned {
        root: env.root.clone(),
        fingerprint: scan(env, repo),
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
    let commands: Vec<String> = env
        .config
        .checks
        .values()
        .filter_map(|c| c.run.clone())
        .chain(env.config.setup.iter().cloned())
        .collect();
    let fingerprint = environment::scan(&Scope {
        root: &env.root,
        home: home.as_deref(),
        vars: &vars,
        names: &names,
        tracked: &tracked,
        commands: &commands,
    });
    tracing::debug!(
        entries = fingerprint.entries.len(),
        elapsed_ms = started.elapsed().as_millis() as u64,
        "environment fingerprint"
    );
    fingerprint
}

/// How the environment differs from the task's reference one.
#[derive(Debug, Default)]
pub struct Drift {
    /// What no file committed since the reference explains.
    pub unexplained: Vec<Change>,
    /// Changes there were, and committed manifests explain every one: the reference moves.
    pub explained: bool,
}

/// What changed in the environment between the task's reference (`recorded`, taken at
/// `since`: the start, or the last iteration whose changes a manifest explained) and now,
/// and whether the files committed between `since` and `commit` explain it.
pub fn drift(
    env: &Env,
    repo: &Repository,
    recorded: Option<&Fingerprint>,
    since: Oid,
    commit: Oid,
) -> Result<Drift, Failure> {
    let (Some(recorded), Some(now)) = (recorded, current(env, repo)) else {
        return Ok(Drift::default());
    };
    let changes = environment::changes(recorded, &now.fingerprint);
    let changes = environment::reinstalled(changes, recorded, &now.fingerprint, &env.root);
    if changes.is_empty() {
        return Ok(Drift::default());
    }
    let edited = crate::git::changed_paths(repo, since, commit)?;
    let unexplained = environment::unexplained(changes, &edited);
    Ok(Drift {
        explained: unexplained.is_empty(),
        unexplained,
    })
}

/// What changed in the environment since `task`'s reference one (its start's, or the last
/// iteration's whose changes a committed manifest explained).
pub(super) fn task_drift(
    env: &Env,
    repo: &Repository,
    task: &Task,
    commit: Oid,
) -> Result<Drift, Failure> {
    match task.environment_at.or(task.start) {
        Some(since) => drift(env, repo, task.environment.as_ref(), since, commit),
        None => Ok(Drift::default()),
    }
}

/// Moves `task`'s reference environment to the one `commit` was judged in, once committed
/// manifests explained its changes: a later change is explained only by what is committed
/// after it.
pub(super) fn advance(
    env: &Env,
    store: &NotesStore,
    task: &Task,
    commit: Oid,
) -> Result<(), Failure> {
    let Some(mut start) = store.read_task_start(&task.name)? else {
        return Ok(());
    };
    let Some(now) = current(env, store.repository()) else {
        return Ok(());
    };
    start.environment = Some(now.fingerprint.clone());
    start.environment_at = Some(commit.to_string());
    store.write(&[Note::TaskStart { start: &start }])?;
    Ok(())
}
