//! `itergate init`'s one run of the tests checks it wrote, on HEAD's commit in a scratch
//! worktree: a runner that counts no test measures nothing (vitest configured where the
//! project's `npm test` runs mocha), and a runner that cannot start is better named now
//! than on the first push.

use git2::Repository;

use crate::model::ReportKind;
use crate::signals::checks::Progress;
use crate::signals::observation::{CheckResult, Observation};
use crate::signals::report::Report;

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
    let env = Env {
        config,
        ..env.clone()
    };
    let started = std::time::Instant::now();
    let observed = match observe(
        &env,
        repo,
        &ObserveRequest {
            commit,
            in_place: false,
            progress,
            label: Some("a first run"),
        },
    ) {
        Ok(observed) => observed,
        Err(Failure::Check(said)) => return Ok(FirstRun::NotRun(said)),
        Err(Failure::Unrunnable(unrunnable)) => return Ok(FirstRun::NotRun(unrunnable.message)),
        Err(other) => return Err(other),
    };
    Ok(read(&observed, started.elapsed().as_secs_f64()))
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
