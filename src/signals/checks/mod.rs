//! Running checks: each configured command runs concurrently (tokio) in its own process
//! group, with its environment, working directory and timeout; its report is read from a
//! file or from its standard output.
//!
//! What a check produced is either an observation of the work or an infrastructure
//! failure, and the two never mix:
//! - a report, an exit status (a check without a report), a build that failed before the
//!   report was written (the compiler's diagnostics, read from the output), or a timeout
//!   are observations of the tree — they are scored and cached;
//! - a command that cannot start or is not found (exit 126/127), a report that was not
//!   written or cannot be read while the output names no error of the code, are failures
//!   of the environment ([`CheckError`]) — never a score, never recorded.
//!
//! A check that times out is killed with its whole process group. A stale report file is
//! removed before the command runs, so an old report is never read as a new one.
//!
//! Running the commands is `process` (with `env`'s environment), reading their reports
//! `reports`, the progress line `progress`.

mod durations;
mod env;
pub mod leftovers;
mod process;
mod progress;
mod reports;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use crate::config::Check;

use super::observation::{CheckError, CheckOutcome, CheckResult};
use super::tree_file;
pub use env::{passes_scrubbed, EnvPolicy};
pub(crate) use process::interrupted;
use process::{execute, ProcessGroups};
use progress::Display;
pub use reports::failure_lines;
use reports::{is_pattern, read_reports, report_files, report_path};

/// How progress is shown while checks run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// Spinners on a terminal, plain lines otherwise.
    Auto,
    Quiet,
}

impl Progress {
    pub fn from_quiet(quiet: bool) -> Progress {
        if quiet {
            Progress::Quiet
        } else {
            Progress::Auto
        }
    }
}

/// Where and how a set of checks runs.
pub struct RunOptions<'a> {
    pub root: &'a Path,
    /// The slots check commands take to run (`--jobs`): shared by every tree checked at once.
    pub jobs: &'a Jobs,
    pub progress: Progress,
    /// What the checks inherit from itergate's environment.
    pub env_policy: EnvPolicy,
    /// Environment added to every check (e.g. a scratch worktree's own build directory).
    pub env: &'a [(String, String)],
    /// Variables removed from what the checks inherit.
    pub unset: &'a [String],
    /// Shown with each progress line (`base 1a2b3c4`), so runs of several commits are told apart.
    pub label: Option<&'a str>,
    /// Where each check's last duration is kept (`durations.rs`): the checks take their slots
    /// slowest first, so the run ends soonest. `None`: in name order.
    pub durations: Option<&'a Path>,
}

/// How many check commands may run at once in this process (`--jobs`, default the number
/// of cores): the base's checks and HEAD's take their slots from the same pool.
#[derive(Debug, Clone)]
pub struct Jobs {
    count: usize,
    slots: std::sync::Arc<tokio::sync::Semaphore>,
}

impl Jobs {
    pub fn new(count: usize) -> Jobs {
        let count = count.max(1);
        Jobs {
            count,
            slots: std::sync::Arc::new(tokio::sync::Semaphore::new(count)),
        }
    }

    /// One per core.
    pub fn per_core() -> Jobs {
        Jobs::new(std::thread::available_parallelism().map_or(1, usize::from))
    }

    pub fn count(&self) -> usize {
        self.count
    }
}

impl Default for Jobs {
    fn default() -> Jobs {
        Jobs::per_core()
    }
}

/// Runs every check in `checks` concurrently; results in name order. Report coverage keeps
/// every file's lines (the cache must not depend on which base the change is compared with).
pub fn run_all(
    options: &RunOptions,
    checks: &BTreeMap<String, Check>,
) -> anyhow::Result<Vec<Result<CheckOutcome, CheckError>>> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let display = Display::new(options.progress, options.label);
    let root = options.root;
    let groups = ProcessGroups::default();
    // A stale report must never pass for this run's: every check's reports are removed
    // before any check starts (a check that `needs` another may read what that one wrote).
    // One outside the work tree is neither removed nor read.
    for (_, check) in checks.iter().filter(|(_, c)| c.run.is_some()) {
        for path in check
            .report
            .iter()
            .filter_map(|r| report_path(root, check, r))
        {
            if is_pattern(&path) || path.is_dir() {
                // Every file a pattern names: a test class gone since must not be read.
                for file in report_files(&path).map(|(_, f)| f).unwrap_or_default() {
                    let _ = tree_file::remove_in_tree(root, &file);
                }
            } else {
                let _ = tree_file::remove_in_tree(root, &path);
            }
        }
    }
    // Each check says when its command finished; a check with `needs` waits for those.
    let finished: BTreeMap<&str, tokio::sync::watch::Sender<bool>> = checks
        .keys()
        .map(|name| (name.as_str(), tokio::sync::watch::channel(false).0))
        .collect();
    // Checks that need none take their slots in turn, the slowest (by its last run) first.
    let last = options.durations.map(durations::read).unwrap_or_default();
    let turns = durations::turns(checks, &last);
    let (turn, _) = tokio::sync::watch::channel(0usize);
    let outputs = runtime.block_on(async {
        let tasks: Vec<_> = checks
            .iter()
            .map(|(name, check)| {
                let my_turn = turns.get(name.as_str()).copied();
                let mut turn_now = turn.subscribe();
                let turn = turn.clone();
                let bar = display.start(name);
                let name = name.clone();
                let check = check.clone();
                let root = root.to_path_buf();
                let env = options.env.to_vec();
                let unset = options.unset.to_vec();
                let policy = options.env_policy;
                let groups = groups.clone();
                let waits: Vec<_> = check
                    .needs
                    .iter()
                    .filter_map(|n| finished.get(n.as_str()).map(|s| s.subscribe()))
                    .collect();
                let done = finished.get(name.as_str()).cloned();
                let slots = options.jobs.slots.clone();
                // Every line a check logs names it, and the tree it runs in.
                let span = tracing::info_span!(
                    "check",
                    name = %name,
                    tree = options.label.unwrap_or("HEAD")
                );
                tokio::spawn(tracing::Instrument::instrument(
                    async move {
                        for mut wait in waits {
                            let _ = wait.wait_for(|finished| *finished).await;
                        }
                        if let Some(mine) = my_turn {
                            let _ = turn_now.wait_for(|now| *now >= mine).await;
                        }
                        // The semaphore is never closed: a permit always comes.
                        let _slot = slots.acquire_owned().await.ok();
                        if my_turn.is_some() {
                            turn.send_modify(|now| *now += 1);
                        }
                        let started = Instant::now();
                        let out = execute(&root, &check, policy, (&env, &unset), &groups).await;
                        if let Some(done) = done {
                            done.send_replace(true);
                        }
                        tracing::debug!(elapsed_ms = started.elapsed().as_millis(), "check done");
                        (name, check, out, started.elapsed(), bar)
                    },
                    span,
                ))
            })
            .collect();
        let all = async {
            let mut done = Vec::new();
            for task in tasks {
                done.push(task.await);
            }
            done
        };
        tokio::select! {
            done = all => Ok(done),
            signal = interrupted() => Err(signal),
        }
    });
    let outputs = match outputs {
        Ok(outputs) => outputs,
        Err(signal) => {
            // Stop every check's whole process group before anything is cleaned up.
            groups.kill_all();
            drop(runtime);
            return Err(Interrupted { signal }.into());
        }
    };
    if let Some(path) = options.durations {
        let took = outputs
            .iter()
            .flatten()
            .map(|(name, _, _, elapsed, _)| (name.clone(), elapsed.as_secs_f64()));
        durations::write(path, last, took);
    }
    let mut results = Vec::new();
    for joined in outputs {
        let (name, check, out, elapsed, bar) =
            joined.map_err(|e| anyhow::anyhow!("a check task failed: {e}"))?;
        let names = check.report_names(&name);
        let (indices, read): (Vec<usize>, Vec<Result<CheckResult, CheckError>>) =
            read_reports(root, &check, out)
                .into_iter()
                .map(|(index, result)| {
                    let result = result.map_err(|(message, tail)| CheckError {
                        check: name.clone(),
                        command: check.run.clone(),
                        message,
                        tail,
                    });
                    (index, result)
                })
                .unzip();
        // The progress line tells the first problem, else the first result.
        let unwritten =
            |r: &&Result<CheckResult, CheckError>| matches!(r, Ok(CheckResult::NotWritten { .. }));
        let shown = read.iter().find(|r| r.is_err());
        if let Some(shown) = shown.or(read.iter().find(unwritten)).or(read.first()) {
            display.finish(bar, &name, shown, elapsed);
        }
        for (index, result) in indices.into_iter().zip(read) {
            let outcome_name = names.get(index).cloned().unwrap_or_else(|| name.clone());
            results.push(result.map(|result| CheckOutcome {
                name: outcome_name,
                visibility: check.visibility,
                void_on_violation: check.void_on_violation,
                result,
            }));
        }
    }
    Ok(results)
}

/// The run was interrupted (Ctrl-C, SIGTERM): the checks were stopped, nothing is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("interrupted by signal {signal}: the checks were stopped")]
pub struct Interrupted {
    pub signal: i32,
}
