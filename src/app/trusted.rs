//! The trusted harness run: the code is judged by the tests as they were when the task
//! started (seed 002's locked harness). When the change since the task's start touches test
//! or harness files ([`crate::signals::harness`]), the checks that report tests run once
//! more on a tree made of the commit's files with exactly the start's test and harness
//! files: those the change edited or deleted are the start's, those it added are left out
//! (a new test file can patch the code under test at import as well as a `conftest.py`
//! can; the tests it holds are judged by the commit's own run). Files that mix build and
//! test settings keep the commit's build settings and the start's test settings.
//!
//! That tree is an ordinary git tree (with a commit object no ref names), so its
//! observation is made in a scratch worktree and cached by tree like any other: judging
//! the same commit again runs nothing.

use git2::{Oid, Repository};

use crate::config::Config;
use crate::signals::harness::{self, Part};
use crate::signals::integrity::{files_run_by, Trusted};
use crate::signals::observation::{CheckResult, Observation};
use crate::signals::report::Report;

use super::judge::PathMatcher;
use super::observe::{cached_observation, fingerprint, RecordOptions};
use crate::history::notes::NotesStore;

use super::{Env, Failure};

/// How the trusted run's scratch checkout is named (in progress lines, and to give Cargo a
/// target directory of its own: `app::scratch`).
pub const LABEL: &str = "the start's tests";

/// Where the task started: its recorded start, the merge-base with the base branch below
/// it, and its iterations before the judged commit (commit and observation, oldest first).
pub struct Start<'a> {
    pub commit: Oid,
    pub merge_base: Option<Oid>,
    pub earlier: &'a [(Oid, Observation)],
}

/// What the trusted run of one commit needs: the tree to check and the environment whose
/// checks run there.
pub struct Plan {
    /// A commit (named by no ref) of the trusted tree.
    pub commit: Oid,
    pub tree: Oid,
    /// The environment whose checks run there (the task's own).
    pub env: Env,
    /// The test and harness files the change edited, added or deleted since the start.
    pub edited: Vec<String>,
    /// Those of them that are a spec the task added (their first failing version runs).
    pub specs: Vec<String>,
}

/// A trusted run: what it observed, the test and harness files the change edited, and the
/// specs among them.
pub struct Run {
    pub observation: Observation,
    pub edited: Vec<String>,
    pub specs: Vec<String>,
}

/// A trusted run as the cache has it.
pub enum Cached {
    /// The change touched no test or harness file.
    NotNeeded,
    /// Needed, and not observed yet.
    Missing,
    Found(Run),
}

/// The trusted run of `commit` against the task's `start`, when the change touched tests:
/// cached, or made now. `observed` is the commit's own observation (which checks report
/// tests).
pub fn observe(
    env: &Env,
    store: &NotesStore,
    start: &Start,
    commit: Oid,
    observed: &Observation,
    options: RecordOptions,
) -> Result<Option<Run>, Failure> {
    let Some(plan) = plan(env, store.repository(), start, commit, observed)? else {
        return Ok(None);
    };
    let options = RecordOptions {
        rescore: false,
        ..options
    };
    let observation = match found(env, store, &plan)? {
        Some(observation) => observation,
        None => cached_observation(&plan.env, store, plan.commit, Some(LABEL), options)?,
    };
    Ok(Some(Run {
        observation,
        edited: plan.edited,
        specs: plan.specs,
    }))
}

/// The trusted run of `commit` from the cache only (judging again runs nothing).
pub fn cached(
    env: &Env,
    store: &NotesStore,
    start: &Start,
    commit: Oid,
    observed: &Observation,
) -> Result<Cached, Failure> {
    let Some(plan) = plan(env, store.repository(), start, commit, observed)? else {
        return Ok(Cached::NotNeeded);
    };
    Ok(match found(env, store, &plan)? {
        Some(observation) => Cached::Found(Run {
            observation,
            edited: plan.edited,
            specs: plan.specs,
        }),
        None => Cached::Missing,
    })
}

/// The trusted tree's observation when the task has one: made with the trusted run's
/// checks, or with every check (the trusted tree is often an earlier iteration's own),
/// narrowed to the trusted run's checks.
pub(super) fn found(
    env: &Env,
    store: &NotesStore,
    plan: &Plan,
) -> Result<Option<Observation>, Failure> {
    if let Some(observation) = store.find_observation(plan.tree, &fingerprint(&plan.env.config))? {
        return Ok(Some(observation));
    }
    let Some(mut observation) = store.find_observation(plan.tree, &fingerprint(&env.config))?
    else {
        return Ok(None);
    };
    let kept = &plan.env.config.checks;
    observation
        .checks
        .retain(|c| kept.contains_key(c.name.split('.').next().unwrap_or(&c.name)));
    Ok(Some(observation))
}

/// The verdict's input, borrowing a trusted run.
pub fn verdict<'a>(config: &Config, run: Option<&'a Run>) -> Option<Trusted<'a>> {
    run.map(|run| Trusted {
        observation: &run.observation,
        edited: &run.edited,
        specs: &run.specs,
        expectation_changes: config.integrity.expectation_changes,
        last_runs: &[],
        code_changed: false,
    })
}

/// Which files are the harness: test files (`detection.tests`), `integrity.harness`, and
/// the files the checks' commands run.
pub fn harness_files(config: &Config) -> Result<impl Fn(&str) -> bool, Failure> {
    let tests = PathMatcher::new("detection.tests", &config.detection.tests)?;
    let extra = PathMatcher::new(
        "integrity.harness",
        &crate::config::PathFilter {
            include: config.integrity.harness.clone(),
            exclude: Vec::new(),
        },
    )?;
    let run_files: Vec<String> = config
        .checks
        .values()
        .filter_map(|c| c.run.as_deref())
        .flat_map(files_run_by)
        .filter(|f| f != "package.json")
        .collect();
    Ok(move |path: &str| {
        tests.matches(path) || extra.matches(path) || run_files.iter().any(|f| f == path)
    })
}

/// The trusted tree of `commit` against `start`, or `None` when the change touched no
/// test or harness file (or no check reports tests). `earlier` are the task's iterations
/// before `commit` (commit and observation, oldest first): a test file the task added whose
/// tests failed in one of them (a spec committed as the task's first iteration) takes the
/// version they failed with, as the start's files do.
pub fn plan(
    env: &Env,
    repo: &Repository,
    start: &Start,
    commit: Oid,
    observed: &Observation,
) -> Result<Option<Plan>, Failure> {
    let test_checks: Vec<&str> = observed
        .checks
        .iter()
        // A check whose build failed ran none of its tests: the start's may still run.
        .filter(|c| {
            matches!(
                c.result,
                CheckResult::Report {
                    report: Report::Tests(_),
                    ..
                } | CheckResult::BuildFailed { .. }
            )
        })
        .map(|c| c.name.split('.').next().unwrap_or(&c.name))
        .collect();
    plan_for(env, repo, (start, commit), &test_checks)
}

/// The trusted tree [`plan`] will most likely ask for, before the commit's own checks ran:
/// the configured checks that write a tests report. Observed at the same time as the
/// commit (`local::record_commit`), it is found cached when the plan asks for it.
pub fn predicted(
    env: &Env,
    repo: &Repository,
    start: &Start,
    commit: Oid,
) -> Result<Option<Plan>, Failure> {
    let test_checks: Vec<&str> = env
        .config
        .checks
        .iter()
        .filter(|(_, c)| {
            c.report
                .iter()
                .any(|r| r.format.kind() == crate::model::ReportKind::Tests)
        })
        .map(|(name, _)| name.as_str())
        .collect();
    plan_for(env, repo, (start, commit), &test_checks)
}

fn plan_for(
    env: &Env,
    repo: &Repository,
    (start, commit): (&Start, Oid),
    test_checks: &[&str],
) -> Result<Option<Plan>, Failure> {
    let config = &env.config;
    if test_checks.is_empty() {
        return Ok(None);
    }
    let is_harness = harness_files(config)?;

    let start_tree = repo
        .find_commit(start.commit)
        .and_then(|c| c.tree())
        .map_err(anyhow::Error::from)?;
    // The branch's commits before the recorded start (a spec committed before the work):
    // the files they changed are specs.
    let below = start
        .merge_base
        .filter(|base| *base != start.commit)
        .and_then(|base| repo.find_commit(base).and_then(|c| c.tree()).ok());
    let committed_on_the_branch = |path: &str| {
        below.as_ref().is_some_and(|tree| {
            let at = |t: &git2::Tree| t.get_path(std::path::Path::new(path)).ok().map(|e| e.id());
            at(tree) != at(&start_tree)
        })
    };
    let head_commit = repo.find_commit(commit).map_err(anyhow::Error::from)?;
    let head_tree = head_commit.tree().map_err(anyhow::Error::from)?;
    let diff = repo
        .diff_tree_to_tree(Some(&start_tree), Some(&head_tree), None)
        .map_err(anyhow::Error::from)?;
    let mut edited = Vec::new();
    let mut specs = Vec::new();
    let mut update = git2::build::TreeUpdateBuilder::new();
    for delta in diff.deltas() {
        let paths = [delta.old_file().path(), delta.new_file().path()];
        let mut seen = Vec::new();
        for path in paths.into_iter().flatten() {
            let Some(path) = path.to_str().map(str::to_string) else {
                continue;
            };
            if seen.contains(&path) {
                continue;
            }
            seen.push(path.clone());
            let Some(part) = harness::part(&path, &is_harness) else {
                continue;
            };
            let start_entry = start_tree.get_path(std::path::Path::new(&path)).ok();
            let head_entry = head_tree.get_path(std::path::Path::new(&path)).ok();
            let head_text = text(repo, head_entry.as_ref());
            let merged = match part {
                Part::Whole => None,
                _ => harness::merge(
                    part,
                    head_text.as_deref(),
                    text(repo, start_entry.as_ref()).as_deref(),
                ),
            };
            let target = match (part, merged, &start_entry) {
                (Part::Whole, _, Some(e)) => {
                    if committed_on_the_branch(&path) {
                        specs.push(path.clone());
                    }
                    Some((e.id(), e.filemode()))
                }
                (Part::Whole, _, None) => {
                    let spec = spec_version(repo, start.earlier, &path, &is_harness);
                    if spec.is_some() {
                        specs.push(path.clone());
                    }
                    spec
                }
                (_, Some(text), _) => {
                    if Some(&text) == head_text.as_ref() {
                        continue; // its test settings did not change
                    }
                    let mode = head_entry
                        .as_ref()
                        .or(start_entry.as_ref())
                        .map_or(0o100_644, git2::TreeEntry::filemode);
                    let blob = repo.blob(text.as_bytes()).map_err(anyhow::Error::from)?;
                    Some((blob, mode))
                }
                (_, None, _) => None,
            };
            match target {
                Some((oid, mode)) => {
                    let mode = if mode == 0o100_755 {
                        git2::FileMode::BlobExecutable
                    } else if mode == 0o120_000 {
                        git2::FileMode::Link
                    } else {
                        git2::FileMode::Blob
                    };
                    update.upsert(&path, oid, mode);
                }
                None => {
                    update.remove(&path);
                }
            }
            edited.push(path);
        }
    }
    if edited.is_empty() {
        return Ok(None);
    }
    let tree = update
        .create_updated(repo, &head_tree)
        .map_err(anyhow::Error::from)?;
    if tree == head_tree.id() {
        return Ok(None);
    }
    let tree_object = repo.find_tree(tree).map_err(anyhow::Error::from)?;
    // A fixed signature and time: the same trees make the same commit.
    let signature = git2::Signature::new("itergate", "itergate@localhost", &git2::Time::new(0, 0))
        .map_err(anyhow::Error::from)?;
    let trusted_commit = repo
        .commit(
            None,
            &signature,
            &signature,
            "itergate: the commit's code with the task's start's tests and harness",
            &tree_object,
            &[&head_commit],
        )
        .map_err(anyhow::Error::from)?;
    edited.sort();
    edited.dedup();
    // Only the checks whose verdict the start's tests decide (the tests and the reports
    // they write): lint, types and complexity of the commit's own code are HEAD's run's.
    let env = Env {
        config: config.only_checks(|name| test_checks.contains(&name)),
        ..env.clone()
    };
    Ok(Some(Plan {
        commit: trusted_commit,
        tree,
        env,
        edited,
        specs,
    }))
}

/// The version of `path` in the task's earliest iteration where a test of that file failed
/// an assertion, when that iteration was a spec: a commit of tests alone (a person's
/// failing spec, before the work). A test file added with code is that iteration's own, which a later one may
/// correct.
fn spec_version(
    repo: &Repository,
    earlier: &[(Oid, Observation)],
    path: &str,
    is_harness: &dyn Fn(&str) -> bool,
) -> Option<(Oid, i32)> {
    // The commit changed `path`, and tests and harness alone.
    let spec_commit = |commit: Oid| -> Option<bool> {
        let commit = repo.find_commit(commit).ok()?;
        let parent = commit.parent(0).ok()?.tree().ok()?;
        let diff = repo
            .diff_tree_to_tree(Some(&parent), Some(&commit.tree().ok()?), None)
            .ok()?;
        let paths: Vec<&str> = diff
            .deltas()
            .flat_map(|d| [d.old_file().path(), d.new_file().path()])
            .flatten()
            .filter_map(|p| p.to_str())
            .collect();
        Some(paths.contains(&path) && paths.iter().all(|p| harness::part(p, is_harness).is_some()))
    };
    // An assertion that failed there, in `path` or in a test whose report names no file
    // (libtest, Go): a test file that did not build or import is the test's own defect,
    // which the next iteration may fix.
    let failed_there = |observed: &Observation| {
        observed.checks.iter().any(|c| match &c.result {
            CheckResult::Report {
                report: Report::Tests(t),
                ..
            } => t.problems.iter().any(|case| {
                case.outcome == crate::signals::report::TestOutcome::Failed
                    && case.file.as_deref().is_none_or(|f| f == path)
            }),
            _ => false,
        })
    };
    let (commit, _) = earlier
        .iter()
        .find(|(commit, observed)| failed_there(observed) && spec_commit(*commit) == Some(true))?;
    let tree = repo.find_commit(*commit).ok()?.tree().ok()?;
    let entry = tree.get_path(std::path::Path::new(path)).ok()?;
    Some((entry.id(), entry.filemode()))
}

fn text(repo: &Repository, entry: Option<&git2::TreeEntry>) -> Option<String> {
    let blob = repo.find_blob(entry?.id()).ok()?;
    Some(String::from_utf8_lossy(blob.content()).into_owned())
}
