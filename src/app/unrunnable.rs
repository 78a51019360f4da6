//! A check the change stopped from running is the change's result, not the machine's. When
//! a check that ran where the task started (the base's observation has it) cannot run on
//! an iteration, and the change edited what the check reads — a test file, the runner's
//! configuration, the build file — the iteration is judged with that check as a failed
//! build: a BLOCKER naming the tool's own error line and the files the change edited, never
//! exit 3 with nothing recorded (a `process.exit(0)` in a test file, a duplicated
//! `addopts`, a broken `pom.xml`). Otherwise the failure stays the environment's
//! ([`Failure::Unrunnable`]): fix it and run again.

use git2::{Oid, Repository};

use crate::signals::diagnostics::Diagnostic;
use crate::signals::harness;
use crate::signals::observation::{CheckOutcome, CheckResult, Observation};

use super::observe::{cached_observation, RecordOptions};
use super::{trusted, Env, Failure, Unrunnable};
use crate::history::notes::NotesStore;

/// Build files: a change to one can stop any check from running.
const BUILD_FILES: &[&str] = &[
    "Cargo.toml",
    "Cargo.lock",
    "go.mod",
    "go.sum",
    "go.work",
    "pom.xml",
    "build.gradle",
    "build.gradle.kts",
    "settings.gradle",
    "settings.gradle.kts",
    "tsconfig.json",
    "package-lock.json",
    "requirements.txt",
    "tox.ini",
    "Makefile",
];

/// The observation of a commit with the checks it stopped from running as failed builds,
/// when `base` ran them and the change `edited` what they read ([`edited_inputs`]);
/// otherwise the failure as it came.
pub fn judged_as_broken(
    env: &Env,
    edited: &[String],
    base: &Observation,
    unrunnable: Box<Unrunnable>,
) -> Result<Observation, Failure> {
    let ran_at_base = unrunnable
        .errors
        .iter()
        .all(|e| base.checks.iter().any(|c| c.name == e.check));
    if !ran_at_base || edited.is_empty() {
        return Err(Failure::Unrunnable(unrunnable));
    }
    let Unrunnable {
        errors, observed, ..
    } = *unrunnable;
    let mut observed = observed;
    let files = edited
        .iter()
        .take(5)
        .map(|f| format!("`{f}`"))
        .collect::<Vec<_>>()
        .join(", ");
    for error in errors {
        let said = last_line(&error.tail).unwrap_or(&error.message).to_string();
        let visibility = env
            .config
            .checks
            .get(&error.check)
            .map(|c| c.visibility)
            .unwrap_or_default();
        let diagnostic = Diagnostic {
            tool: "itergate".into(),
            code: None,
            message: format!(
                "check `{}` could not run on this commit, though it ran where the task started; the change edited {files}: {said}",
                error.check
            ),
            file: edited.first().cloned(),
            line: None,
            column: None,
            detail: error.to_string(),
            frames: Vec::new(),
        };
        observed.checks.push(CheckOutcome {
            name: error.check.clone(),
            visibility,
            void_on_violation: false,
            result: CheckResult::BuildFailed {
                exit_code: 1,
                diagnostics: vec![diagnostic],
                tail: error.tail,
            },
        });
    }
    Ok(observed)
}

/// The files changed between `start` and `commit` that the checks read: test and harness
/// files, the runners' configuration, build files.
pub fn edited_inputs(
    env: &Env,
    repo: &Repository,
    start: Oid,
    commit: Oid,
) -> Result<Vec<String>, Failure> {
    let is_harness = trusted::harness_files(&env.config)?;
    Ok(crate::git::changed_paths(repo, start, commit)?
        .into_iter()
        .filter(|path| {
            let name = path.rsplit('/').next().unwrap_or(path);
            BUILD_FILES.contains(&name) || harness::part(path, &is_harness).is_some()
        })
        .collect())
}

fn last_line(text: &str) -> Option<&str> {
    text.lines().map(str::trim).rfind(|l| !l.is_empty())
}

/// A commit whose checks could not all run: judged with them as failed builds when the
/// change stopped them (this module), never cached; else the failure as it came.
pub(super) fn observe_broken(
    env: &Env,
    store: &NotesStore,
    start: Option<Oid>,
    base: Option<Oid>,
    unrunnable: Box<Unrunnable>,
    options: RecordOptions,
) -> Result<(Observation, bool, Option<Observation>), Failure> {
    let Some(base) = base.filter(|_| env.config.scoring.compare_base) else {
        return Err(Failure::Unrunnable(unrunnable));
    };
    let start = start.unwrap_or(base);
    let edited = edited_inputs(env, store.repository(), start, unrunnable.commit)?;
    if edited.is_empty() {
        return Err(Failure::Unrunnable(unrunnable));
    }
    let label = format!("base {}", super::local::short(base));
    let options = RecordOptions {
        rescore: false,
        ..options
    };
    let Ok(base_observed) = cached_observation(env, store, base, Some(&label), options) else {
        return Err(Failure::Unrunnable(unrunnable));
    };
    let observed = judged_as_broken(env, &edited, &base_observed, unrunnable)?;
    Ok((observed, false, Some(base_observed)))
}
