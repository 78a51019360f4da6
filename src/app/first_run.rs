//! `itergate init`'s one run of the tests checks it wrote, on HEAD's commit in a scratch
//! worktree: a runner that counts no test measures nothing (vitest configured where the
//! project's `npm test` runs mocha), and a runner that cannot start is better named now
//! than on the first push.

use git2::Repository;

use crate::model::ReportKind;
use crate::signals::checks::Progress;
use crate::signals::observation::{CheckResult, Observation};
use crate::signals::report::Report;
use crate::signals::report::ReportFormat;

use super::observe::{observe, ObserveRequest};
use super::{Env, Failure};

/// What the run showed.
#[derive(Debug, PartialEq)]
pub enum FirstRun {
    /// The tests checks counted tests: `executed` ran, `failing` of them failed.
    Counted {
        executed: u64,
        failing: u64,
        seconds: f64,
    },
    /// The checks ran and counted no test (or their build failed before any ran).
    NoTests { checks: Vec<String>, why: String },
    /// A check could not run: what it said.
    NotRun(String),
    /// Nothing to run: no tests check, or no commit yet.
    Nothing(String),
}

/// Runs the checks of `env`'s configuration whose reports are tests (with the checks
/// they need) on HEAD's commit, once.
pub fn run_tests_once(
    env: &Env,
    repo: &Repository,
    progress: Progress,
) -> Result<FirstRun, Failure> {
    let config = env.config.only_checks(|name| {
        env.config.checks[name]
            .report
            .iter()
            .any(|r| r.format.kind() == ReportKind::Tests)
    });
    if config.checks.is_empty() {
        return Ok(FirstRun::Nothing("no check reports tests".into()));
    }
    let Ok(commit) = crate::git::resolve_commit(repo, "HEAD") else {
        return Ok(FirstRun::Nothing(
            "the repository has no commit yet: the first `itergate run` runs them".into(),
        ));
    };
    match observe_once(env, repo, config, commit, progress)? {
        Ok((observed, seconds)) => Ok(read(&observed, seconds)),
        Err(said) => Ok(FirstRun::NotRun(said)),
    }
}

/// The types checks (`tsc`, `mypy`, `pyright`: what `init` names `types`) run once on
/// HEAD's commit, after the tests: their names and how long they took, or what stopped
/// them. `None` when there are none.
pub fn time_types_once(
    env: &Env,
    repo: &Repository,
    progress: Progress,
) -> Result<Option<Timed>, Failure> {
    let is_types = |name: &str| {
        name == "types"
            || env.config.checks[name].report.iter().any(|r| {
                matches!(
                    r.format,
                    ReportFormat::Tsc | ReportFormat::MypyJson | ReportFormat::PyrightJson
                )
            })
    };
    let config = env.config.only_checks(is_types);
    let Ok(commit) = crate::git::resolve_commit(repo, "HEAD") else {
        return Ok(None);
    };
    if config.checks.is_empty() {
        return Ok(None);
    }
    let checks: Vec<String> = config.checks.keys().cloned().collect();
    Ok(Some(
        match observe_once(env, repo, config, commit, progress)? {
            Ok((_, seconds)) => Timed::Ran { checks, seconds },
            Err(said) => Timed::NotRun(said),
        },
    ))
}

/// How a types check's first run went.
#[derive(Debug, PartialEq)]
pub enum Timed {
    Ran { checks: Vec<String>, seconds: f64 },
    NotRun(String),
}

/// A types check this much slower than the tests, and at least [`SLOW_TYPES_SECONDS`],
/// is said once: every decision waits for it.
const DWARFS: f64 = 3.0;
const SLOW_TYPES_SECONDS: f64 = 5.0;

/// What `init` says of a types check that took `types_seconds` where the tests took
/// `tests_seconds`, if it dwarfs them.
pub fn slow_types_note(
    checks: &[String],
    types_seconds: f64,
    tests_seconds: f64,
) -> Option<String> {
    if types_seconds < SLOW_TYPES_SECONDS || types_seconds < DWARFS * tests_seconds {
        return None;
    }
    Some(format!(
        "`{}` took {types_seconds:.1}s on HEAD, {:.0}x the tests' {tests_seconds:.1}s: every decision waits for it. \
         Later runs are faster where the checker keeps a cache (mypy's is in itergate's state directory); \
         to judge without it, remove the check from .itergate.yml and keep it in the project's CI",
        checks.join("`, `"),
        types_seconds / tests_seconds.max(0.1),
    ))
}

/// `config`'s checks observed once on `commit` in a scratch worktree, and how long that
/// took; what a check that could not run said.
fn observe_once(
    env: &Env,
    repo: &Repository,
    config: crate::config::Config,
    commit: git2::Oid,
    progress: Progress,
) -> Result<Result<(Observation, f64), String>, Failure> {
    let env = Env {
        config,
        ..env.clone()
    };
    let started = std::time::Instant::now();
    match observe(
        &env,
        repo,
        &ObserveRequest {
            commit,
            in_place: false,
            progress,
            label: Some("a first run"),
        },
    ) {
        Ok(observed) => Ok(Ok((observed, started.elapsed().as_secs_f64()))),
        Err(Failure::Check(said)) => Ok(Err(said)),
        Err(Failure::Unrunnable(unrunnable)) => Ok(Err(unrunnable.message)),
        Err(other) => Err(other),
    }
}

/// What an observation of the tests checks says about them.
fn read(observed: &Observation, seconds: f64) -> FirstRun {
    let mut executed = 0;
    let mut failing = 0;
    let mut broken = None;
    for outcome in &observed.checks {
        match &outcome.result {
            CheckResult::Report {
                report: Report::Tests(tests),
                ..
            } => {
                executed += tests.executed();
                failing += tests.failures().count() as u64;
            }
            CheckResult::BuildFailed { diagnostics, .. } => {
                broken.get_or_insert_with(|| {
                    diagnostics
                        .first()
                        .map_or("the tests did not build".to_string(), |d| {
                            format!("the tests did not build: {}", d.message)
                        })
                });
            }
            _ => {}
        }
    }
    if executed > 0 {
        return FirstRun::Counted {
            executed,
            failing,
            seconds,
        };
    }
    let checks = observed
        .checks
        .iter()
        .map(|c| c.name.clone())
        .collect::<Vec<_>>();
    FirstRun::NoTests {
        checks,
        why: broken.unwrap_or_else(|| {
            "the runner found no test: it may not be the one the project's tests are written for"
                .into()
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_types_check_is_said_only_when_it_dwarfs_the_tests() {
        let types = ["types".to_string()];
        let note = slow_types_note(&types, 10.0, 0.4).expect("mypy 10 s beside tests 0.4 s");
        assert!(
            note.starts_with("`types` took 10.0s on HEAD, 25x the tests' 0.4s"),
            "{note}"
        );
        // Slow beside the tests, but quick: not worth a word.
        assert_eq!(slow_types_note(&types, 4.0, 0.1), None);
        // Slow, but the tests are slower still.
        assert_eq!(slow_types_note(&types, 30.0, 12.0), None);
        assert!(slow_types_note(&types, 36.0, 12.0).is_some());
    }
}
