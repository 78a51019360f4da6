//! Observing a tree: run its checks (in a scratch worktree of exactly that commit, made
//! from its blobs: [`crate::git::clean_checkout_config`]; `itergate ci` in its own fresh
//! checkout) or read reports an earlier step wrote, and turn what they said into an
//! [`Observation`] that does not depend on where they ran. An observation is made once per
//! tree and configuration and cached in the notes ([`cached_observation`]).
//!
//! Checks may change the checkout they run in (a formatter, `ruff` with `fix = true`): the
//! tracked files' status before and after the checks is compared, and files that changed
//! are kept in the observation as a [`CheckResult::TrackedFilesChanged`] outcome (a
//! WARNING when scored), since the results then describe the rewritten files rather than
//! the commit. It is cached with the rest: the same checks on the same tree rewrite the same
//! files, and the fix (a read-only mode for the check) changes the checks' fingerprint, so
//! the tree is observed again.
//!
//! A check the environment kept from running is a [`Failure::Unrunnable`] naming the check,
//! its command and the end of its output: nothing is observed, recorded or cached, so fixing
//! the environment and running again scores the tree — unless the commit itself stopped it
//! ([`super::unrunnable`]).
//!
//! Scratch worktrees never share build outputs with the work tree: cargo's target directory
//! (`CARGO_TARGET_DIR` is common) is redirected to a cache of their own under the git
//! directory, so artifacts built from one tree are never taken for another's.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use git2::{Oid, Repository};
use sha2::{Digest, Sha256};

use crate::config::{Check, Config, Visibility};
use crate::git::TempWorktree;
use crate::signals::checks::{self, Progress, RunOptions};
use crate::signals::detect;
use crate::signals::observation::{CheckOutcome, CheckResult, Observation, WORK_TREE_OUTCOME};
use crate::signals::report::{self, ParseOptions, ReportFormat};
use crate::signals::tree_file;

use crate::history::notes::{Note, NotesStore};

use super::{scratch, user, Env, Failure};

/// Bumped when what an observation holds or means changes, so older cache entries miss.
const OBSERVATION_SCHEMA: u32 = 6;

/// What a cached observation depends on besides the tree: the checks and itergate.
/// Computed once per configuration ([`crate::config::Fingerprint`]).
pub fn fingerprint(config: &Config) -> String {
    config
        .fingerprint
        .get_or(|| {
            let material = serde_json::json!({
                "version": env!("CARGO_PKG_VERSION"),
                "schema": OBSERVATION_SCHEMA,
                "setup": config.setup,
                "checks": config.checks,
            });
            format!("{:x}", Sha256::digest(material.to_string().as_bytes()))
        })
        .to_string()
}

/// How to observe one commit.
pub struct ObserveRequest<'a> {
    pub commit: Oid,
    /// Run in the checkout at hand (`itergate ci`'s fresh one) rather than a scratch
    /// worktree.
    pub in_place: bool,
    pub progress: Progress,
    /// Tells this run's progress lines apart (`base 1a2b3c4`).
    pub label: Option<&'a str>,
}

/// Runs the checks for a commit and returns what they observed.
pub fn observe(
    env: &Env,
    repo: &Repository,
    request: &ObserveRequest,
) -> Result<Observation, Failure> {
    // Whatever the checks start is stopped when the last observation ends, before a
    // record is written.
    let _watch = checks::leftovers::Watch::start();
    let worktree = if request.in_place {
        None
    } else {
        Some(TempWorktree::create(repo, request.commit)?)
    };
    let root: PathBuf = match (&worktree, repo.workdir()) {
        (Some(w), _) => w.path().to_path_buf(),
        (None, Some(dir)) => dir.to_path_buf(),
        (None, None) => return Err(user("a bare repository has no work tree to run checks in")),
    };
    let checks = checks_for(env, &root);
    let scratch = match &worktree {
        Some(_) => Some(scratch::prepare(
            repo,
            &root,
            request.label,
            request.progress,
            env.clean.as_ref().is_some_and(|c| c.install_node),
        )?),
        None => None,
    };
    let mut scratch_env = scratch.as_ref().map(|s| s.env.clone()).unwrap_or_default();
    let unset = match &env.clean {
        Some(clean) => {
            scratch_env.extend(clean.set.iter().cloned());
            clean.unset.clone()
        }
        None => Vec::new(),
    };
    run_setup(&env.config.setup, &root, (&scratch_env, &unset), request)?;
    let tracked_before = tracked_changes(&root);
    let started = Instant::now();
    let results = checks::run_all(
        &RunOptions {
            root: &root,
            jobs: &env.jobs,
            progress: request.progress,
            env_policy: env.check_env,
            env: &scratch_env,
            unset: &unset,
            label: request.label,
            durations: Some(&repo.commondir().join("itergate").join("check-seconds.json")),
        },
        &checks,
    )
    .map_err(|e| match e.downcast_ref::<checks::Interrupted>() {
        Some(interrupted) => Failure::Interrupted(interrupted.signal),
        None => Failure::Internal(e),
    })?;
    let mut outcomes = Vec::with_capacity(results.len());
    let mut errors = Vec::new();
    for result in results {
        match result {
            Ok(outcome) => outcomes.push(outcome),
            Err(error) => errors.push(error),
        }
    }
    if !errors.is_empty() {
        // Where they ran, when it is not HEAD: first, as the base's or the start's; HEAD's
        // checkout is said after what went wrong.
        let (before, after) = match (&worktree, request.label) {
            (Some(w), Some(label)) => (
                format!(
                    "In the scratch worktree of {label} ({}), a checkout of that commit alone (untracked files such as dependencies and generated files are not in it; `setup:` commands, or the same lockfile as the work tree, give it them):\n",
                    w.path().display()
                ),
                String::new(),
            ),
            (Some(w), None) => (
                String::new(),
                format!(
                    "\nThe checks ran in a checkout of the commit alone ({}): untracked files such as dependencies and generated files are not in it; `setup:` commands, or the same lockfile as the work tree, give it them.",
                    w.path().display()
                ),
            ),
            (None, _) => (String::new(), String::new()),
        };
        let said: Vec<String> = errors.iter().map(ToString::to_string).collect();
        let hint = super::interpreter::missing_module_hint(&errors, repo.workdir())
            .map(|hint| format!("\n{hint}"))
            .unwrap_or_default();
        let mut observed = Observation {
            checks: outcomes,
            execution_time_ms: None,
            flaky: Vec::new(),
        };
        observed.normalise(&root);
        return Err(Failure::Unrunnable(Box::new(super::Unrunnable {
            commit: request.commit,
            message: format!(
                "{before}{}{after}{hint}\nNothing was recorded: fix the environment or the check, then run again.",
                said.join("\n")
            ),
            errors,
            observed,
        })));
    }
    if let Some(scratch) = &scratch {
        scratch.verify()?;
    }
    let elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    if let Some(changed) = tracked_before.and_then(|before| rewritten_files(&root, &before)) {
        let ran: Vec<String> = checks
            .iter()
            .filter(|(_, c)| c.run.is_some())
            .map(|(name, _)| name.clone())
            .collect();
        if request.in_place && request.progress != Progress::Quiet {
            eprintln!(
                "itergate: warning: tracked files in your work tree changed while the checks ran ({}): {}",
                ran.join(", "),
                changed.join(", ")
            );
        }
        outcomes.push(CheckOutcome {
            name: WORK_TREE_OUTCOME.to_string(),
            visibility: Visibility::Full,
            void_on_violation: false,
            result: CheckResult::TrackedFilesChanged {
                files: changed,
                checks: ran,
            },
        });
    }
    let mut observation = Observation {
        checks: outcomes,
        execution_time_ms: Some(elapsed_ms),
        flaky: Vec::new(),
    };
    observation.normalise(&root);
    refuse_coverage_outside(&observation, &root)?;
    write_private_diagnostics(repo, request.commit, &observation)?;
    Ok(observation)
}

/// Tracked files that differ from the index or HEAD in the checkout at `root`, each with a
/// hash of its content (`None` when deleted); `None` when the status cannot be read.
fn tracked_changes(root: &Path) -> Option<BTreeMap<String, Option<Oid>>> {
    let repo = Repository::open(root).ok()?;
    let mut options = git2::StatusOptions::new();
    options
        .include_untracked(false)
        .include_ignored(false)
        .exclude_submodules(true);
    let statuses = repo.statuses(Some(&mut options)).ok()?;
    let changes = statuses
        .iter()
        .filter(|entry| entry.status() != git2::Status::CURRENT)
        .filter_map(|entry| {
            let path = entry.path().ok()?.to_string();
            let hash = Oid::hash_file(git2::ObjectType::Blob, root.join(&path)).ok();
            Some((path, hash))
        })
        .collect();
    Some(changes)
}

/// Tracked files whose content changed since `before` (the checks rewrote them).
fn rewritten_files(root: &Path, before: &BTreeMap<String, Option<Oid>>) -> Option<Vec<String>> {
    let after = tracked_changes(root)?;
    let changed: Vec<String> = after
        .iter()
        .filter(|(path, hash)| before.get(*path) != Some(hash))
        .map(|(path, _)| path.clone())
        .chain(
            before
                .keys()
                .filter(|path| !after.contains_key(*path))
                .cloned(),
        )
        .collect();
    (!changed.is_empty()).then_some(changed)
}

/// Runs `setup` commands in the checkout, in order; the first that fails stops the checks.
fn run_setup(
    commands: &[String],
    root: &Path,
    (env, unset): (&[(String, String)], &[String]),
    request: &ObserveRequest,
) -> Result<(), Failure> {
    let label = request.label.unwrap_or("commit");
    for command in commands {
        if request.progress != Progress::Quiet {
            eprintln!("itergate: {label}: setup `{command}`");
        }
        let mut sh = std::process::Command::new("sh");
        for name in unset {
            sh.env_remove(name);
        }
        let output = sh
            .arg("-c")
            .arg(command)
            .current_dir(root)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| Failure::Check(format!("{label}: cannot start setup `{command}`: {e}")))?;
        if !output.status.success() {
            let text = String::from_utf8_lossy(&output.stderr);
            let tail: Vec<&str> = text.lines().rev().take(15).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            return Err(Failure::Check(format!(
                "{label} ({}): setup `{command}` failed ({}), so the checks cannot run:\n    {}\nNothing was recorded: fix the setup command, then run again.",
                root.display(),
                output.status,
                tail.join("\n    ")
            )));
        }
    }
    Ok(())
}

/// The checks to run: configured, else detected (and said so).
pub fn checks_for(env: &Env, root: &Path) -> BTreeMap<String, Check> {
    if !env.config.checks.is_empty() {
        return env.config.checks.clone();
    }
    match detect::detect(root) {
        Some(d) => {
            eprintln!(
                "itergate: no checks configured; detected a {} project (run `itergate init` to write them down)",
                d.toolchain
            );
            d.checks
        }
        None => {
            eprintln!(
                "itergate: no checks configured and no toolchain detected; scoring the commit only"
            );
            BTreeMap::new()
        }
    }
}

/// Reads reports an earlier step wrote (`FORMAT:PATH`) as the observation of the work tree.
pub fn ingest(env: &Env, reports: &[String]) -> Result<Observation, Failure> {
    // Every file's lines: which of them the change touched depends on the base.
    let keep_all = |_: &str| true;
    let opts = ParseOptions {
        keep_lines_for: Some(&keep_all),
    };
    let checks = reports
        .iter()
        .map(|spec| {
            let (format, path) = spec.split_once(':').ok_or_else(|| {
                user(format!(
                    "--report {spec}: expected FORMAT:PATH, e.g. junit:target/junit.xml"
                ))
            })?;
            let format: ReportFormat = format.parse().map_err(user)?;
            let path = env.path(Path::new(path));
            // A path into the work tree stays inside it, whatever a check did to its
            // directories; one the caller points elsewhere is read where it points.
            let report = if tree_file::names_a_place_inside(&env.root, &path) {
                report::parse_file_in_tree(format, &env.root, &path, &opts)
            } else {
                report::parse_file(format, &path, &opts)
            }
            .map_err(user)?;
            Ok(CheckOutcome {
                name: format.name().to_string(),
                visibility: Visibility::Full,
                void_on_violation: false,
                result: CheckResult::Report {
                    report,
                    exit_code: None,
                },
            })
        })
        .collect::<Result<Vec<_>, Failure>>()?;
    let mut observation = Observation {
        checks,
        execution_time_ms: None,
        flaky: Vec::new(),
    };
    observation.normalise(&env.root);
    refuse_coverage_outside(&observation, &env.root)?;
    Ok(observation)
}

/// A coverage report that names files, none of which is in the checkout, measured
/// something else (Go import paths without a go.mod, another checkout's absolute paths):
/// read as it is, it would say nothing about the change, silently. It is an error that
/// names the report's first file and the root it was looked for under.
fn refuse_coverage_outside(observation: &Observation, root: &Path) -> Result<(), Failure> {
    for outcome in &observation.checks {
        let CheckResult::Report {
            report: report::Report::Coverage(coverage),
            ..
        } = &outcome.result
        else {
            continue;
        };
        let Some(first) = coverage.files.keys().next() else {
            continue;
        };
        if coverage.files.keys().any(|f| root.join(f).is_file()) {
            continue;
        }
        return Err(Failure::Check(format!(
            "the coverage report of `{}` names {} file(s), none of them in {} (the first is `{first}`): its paths are not this repository's; write it from the repository root, or with paths relative to it",
            outcome.name,
            coverage.files.len(),
            root.display()
        )));
    }
    Ok(())
}

/// Where a holdout check's details go: inside the git directory, never in a record,
/// prompt or comment.
pub fn private_dir(repo: &Repository, commit: Oid) -> PathBuf {
    repo.path()
        .join("itergate")
        .join("private")
        .join(commit.to_string())
}

/// Writes the full results of `aggregate_only` checks to the private directory.
fn write_private_diagnostics(
    repo: &Repository,
    commit: Oid,
    observation: &Observation,
) -> Result<(), Failure> {
    let holdouts = observation
        .checks
        .iter()
        .filter(|o| o.visibility == Visibility::AggregateOnly);
    for outcome in holdouts {
        let dir = private_dir(repo, commit);
        std::fs::create_dir_all(&dir).map_err(anyhow::Error::from)?;
        let path = dir.join(format!("{}.json", outcome.name));
        let details = serde_json::to_vec_pretty(&outcome.result).map_err(anyhow::Error::from)?;
        std::fs::write(&path, details)
            .map_err(|e| anyhow::anyhow!("writing {}: {e}", path.display()))?;
    }
    Ok(())
}

/// How a commit is recorded.
#[derive(Debug, Clone, Copy)]
pub struct RecordOptions {
    pub progress: Progress,
    /// Run the checks again even when the tree's observation is cached.
    pub rescore: bool,
}

/// The observation of `commit`'s tree: cached, or made now (and cached by the caller).
pub(super) fn observation_of(
    env: &Env,
    store: &NotesStore,
    commit: Oid,
    label: Option<&str>,
    options: RecordOptions,
) -> Result<(Observation, bool), Failure> {
    let repo = store.repository();
    let fingerprint = fingerprint(&env.config);
    let tree = tree_of(repo, commit)?;
    if !options.rescore {
        if let Some(cached) = store.find_observation(tree, &fingerprint)? {
            return Ok((cached, false));
        }
    }
    let earlier = if options.rescore {
        store.find_observation(tree, &fingerprint)?
    } else {
        None
    };
    if label.is_none() && is_dirty_head(repo, commit) {
        eprintln!(
            "itergate: the work tree has uncommitted changes; checking HEAD's commit in a scratch worktree (uncommitted changes are not judged)"
        );
    }
    let observed = observe(
        env,
        repo,
        // Never in the work tree: its ignored build output (stale classes in `target/`,
        // bytecode in `__pycache__`) and what a checkout filter wrote there are not the
        // commit's. A scratch worktree is the commit's blobs and nothing else.
        &ObserveRequest {
            commit,
            in_place: false,
            progress: options.progress,
            label,
        },
    )?;
    let mut observed = observed;
    if let Some(earlier) = earlier {
        // The same tree and checks again: a test that changed its outcome is flaky.
        observed.mark_flaky_against(&earlier);
    }
    Ok((observed, true))
}

/// A commit's tree observation, made once per tree and cached (a base's, or one `score`
/// asks for).
pub fn cached_observation(
    env: &Env,
    store: &NotesStore,
    commit: Oid,
    label: Option<&str>,
    options: RecordOptions,
) -> Result<Observation, Failure> {
    let (observed, ran) = observation_of(env, store, commit, label, options)?;
    if ran && env.sealed.caches() {
        let fingerprint = fingerprint(&env.config);
        store.write(&[Note::Observation {
            tree: tree_of(store.repository(), commit)?,
            observation: &observed,
            fingerprint: &fingerprint,
        }])?;
    }
    Ok(observed)
}

pub(super) fn tree_of(repo: &Repository, commit: Oid) -> Result<Oid, Failure> {
    Ok(crate::git::commit_tree(repo, commit)?)
}

/// Whether `commit` is HEAD and the work tree has tracked changes (which are not judged).
fn is_dirty_head(repo: &Repository, commit: Oid) -> bool {
    if crate::git::resolve_commit(repo, "HEAD").ok() != Some(commit) {
        return false;
    }
    let mut options = git2::StatusOptions::new();
    options.include_untracked(false).include_ignored(false);
    repo.statuses(Some(&mut options))
        .is_ok_and(|s| !s.is_empty())
}
