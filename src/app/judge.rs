//! Judging a commit: its tree's observation compared with its base's, plus what the commit
//! itself says (trailers), becomes the iteration's record. Everything relative to a base
//! happens here, each time a commit is evaluated against a base, never in the cache.

use chrono::{TimeZone, Utc};
use git2::{Oid, Repository};
use globset::{Glob, GlobSet, GlobSetBuilder};

use crate::config::{Config, PathFilter, Scope};
use crate::engine::trajectory::weighted_quality;
use crate::git;
use crate::model::{CommitSha, IterationRecord, TreeId};
use crate::signals::observation::{CheckOutcome, CheckResult, Observation};
use crate::signals::report::{Report, TestCase, TestOutcome, TestSummary};
use crate::signals::score::{self, ScoreInput};
use crate::signals::trailers;
use crate::signals::{integrity, markers};

use super::{user, Failure};

/// One commit to judge.
pub struct Judgement<'a> {
    pub commit: Oid,
    /// The commit it is compared with (the merge-base with the base branch).
    pub base: Option<Oid>,
    pub iteration: u32,
    pub observed: &'a Observation,
    pub base_observed: Option<&'a Observation>,
    /// The task's earlier iterations (commit and observation), oldest first; empty when
    /// the commit is the first or is judged on its own.
    pub earlier: &'a [(Oid, Observation)],
    /// Those of `earlier` whose iteration was VOID: their own runs are no test's last run.
    pub void: &'a [Oid],
    /// Integrity findings a person accepted on an earlier iteration.
    pub accepted: &'a [String],
    /// The commit's code under the task's start's tests and harness (`app::trusted`).
    pub trusted: Option<&'a integrity::Trusted<'a>>,
    /// The tests the task set out to make pass (`itergate loop`'s start).
    pub targets: &'a [String],
    /// The environment's unexplained changes since the task's start (`app::sealed`).
    pub environment: &'a crate::signals::environment::Unsealed,
}

/// The iteration record of `judgement.commit`.
pub fn judge(
    config: &Config,
    repo: &Repository,
    judgement: &Judgement,
) -> Result<IterationRecord, Failure> {
    let commit = repo
        .find_commit(judgement.commit)
        .map_err(|e| Failure::Internal(e.into()))?;
    let changed = git::added_lines(repo, judgement.base, judgement.commit)?;
    // A commit's date is whatever its author wrote: one dated in the future would keep the
    // wall-clock budget from ever running out, so it counts from when itergate saw it.
    let timestamp = Utc
        .timestamp_opt(commit.time().seconds(), 0)
        .single()
        .map_or_else(Utc::now, |t| t.min(Utc::now()));
    let mut record = IterationRecord::new(judgement.iteration, timestamp);
    record.commit = CommitSha(judgement.commit.to_string());
    record.tree = TreeId(commit.tree_id().to_string());
    record.execution_time_ms = judgement.observed.execution_time_ms;
    trailers::apply(&git::commit_trailers(repo, judgement.commit)?, &mut record);
    let previous = judgement.earlier.last().map(|(commit, _)| *commit);
    tracing::debug!(
        earlier = judgement.earlier.len(),
        "judging against earlier iterations"
    );
    let since_previous = match previous {
        Some(previous) => Some(git::added_lines(repo, Some(previous), judgement.commit)?),
        None => None,
    };
    let previous_tree = previous.and_then(|p| repo.find_commit(p).ok()?.tree().ok());
    let previous_source = |path: &str| source_in(repo, previous_tree.as_ref(), path);
    let head_tree = commit.tree().ok();
    let head_source = |path: &str| source_in(repo, head_tree.as_ref(), path);
    let observations: Vec<&Observation> = judgement.earlier.iter().map(|(_, o)| o).collect();
    let earlier = integrity::Earlier {
        observations: &observations,
        since_previous: since_previous.as_ref(),
        previous_source: &previous_source,
    };
    let sources = PathMatcher::new("detection.markers", &config.detection.markers)?;
    let tests = PathMatcher::new("detection.tests", &config.detection.tests)?;
    let last_runs: Vec<&Observation> = judgement
        .earlier
        .iter()
        .filter(|(commit, _)| !judgement.void.contains(commit))
        .map(|(_, o)| o)
        .collect();
    let trusted = match judgement.trusted {
        Some(trusted) => {
            let is_harness = super::trusted::harness_files(config)?;
            let step = since_previous.as_ref().unwrap_or(&changed);
            let code_changed = step.files.keys().chain(step.removed.keys()).any(|path| {
                sources.matches(path) && crate::signals::harness::part(path, &is_harness).is_none()
            });
            Some(integrity::Trusted {
                last_runs: &last_runs,
                code_changed,
                ..*trusted
            })
        }
        None => None,
    };
    score::score(
        &ScoreInput {
            config,
            head: judgement.observed,
            base: judgement.base_observed,
            changed: Some(&changed),
            paths: &markers::Paths {
                is_source: &|path| sources.matches(path),
                is_test: &|path| tests.matches(path),
            },
            earlier: &earlier,
            head_source: &head_source,
            accepted: judgement.accepted,
            trusted: trusted.as_ref(),
            targets: judgement.targets,
            environment: judgement.environment,
            test_file: test_file(head_tree.as_ref(), &tests).as_deref(),
        },
        &mut record,
    );
    record.quality = weighted_quality(&record.scores, &config.quality_weights);
    Ok(record)
}

/// The first file of `tree` that `tests` matches.
fn test_file(tree: Option<&git2::Tree>, tests: &PathMatcher) -> Option<String> {
    let mut found = None;
    tree?
        .walk(git2::TreeWalkMode::PreOrder, |dir, entry| {
            if entry.kind() != Some(git2::ObjectType::Blob) {
                return git2::TreeWalkResult::Ok;
            }
            let path = format!("{dir}{}", entry.name().unwrap_or(""));
            if tests.matches(&path) {
                found = Some(path);
                return git2::TreeWalkResult::Abort;
            }
            git2::TreeWalkResult::Ok
        })
        .ok();
    found
}

/// `path` in `tree`, as text, unless it is missing or too large.
fn source_in(repo: &Repository, tree: Option<&git2::Tree>, path: &str) -> Option<String> {
    let entry = tree?.get_path(std::path::Path::new(path)).ok()?;
    let blob = repo.find_blob(entry.id()).ok()?;
    (blob.size() <= MAX_SOURCE_BYTES).then(|| String::from_utf8_lossy(blob.content()).into_owned())
}

/// The failing tests `record` names (`test ID failed` at `file:line`), as what each of
/// `like`'s test-reporting checks observed: a pull request's previous iteration, of which
/// only the record is kept (in itergate's comment), for tamper evidence to compare with.
pub fn failures_of(record: &IterationRecord, like: &Observation) -> Observation {
    let failing: Vec<TestCase> = record
        .issues
        .iter()
        .filter_map(|issue| {
            let (id, _) = crate::engine::grouping::failed_test(issue)?;
            let mut case = TestCase::new(id.to_string(), TestOutcome::Failed);
            if let Some((file, line)) = issue
                .affected_field
                .as_deref()
                .and_then(|a| a.rsplit_once(':'))
            {
                case.file = Some(file.to_string());
                case.line = line.parse().ok();
            }
            Some(case)
        })
        .collect();
    let checks = like
        .checks
        .iter()
        .filter(|c| {
            matches!(
                c.result,
                CheckResult::Report {
                    report: Report::Tests(_),
                    ..
                }
            )
        })
        .map(|c| CheckOutcome {
            name: c.name.clone(),
            visibility: c.visibility,
            void_on_violation: c.void_on_violation,
            result: CheckResult::Report {
                report: Report::Tests(TestSummary {
                    failed: failing.len() as u64,
                    problems: failing.clone(),
                    ..TestSummary::default()
                }),
                exit_code: Some(1),
            },
        })
        .collect();
    Observation {
        checks,
        ..Observation::default()
    }
}

/// Source files larger than this are not read to locate a test.
const MAX_SOURCE_BYTES: usize = 4 << 20;

/// A tree judged as a whole, with nothing to compare it with: the base's record for the
/// decision's baseline comparison.
pub fn whole_tree_record(config: &Config, commit: Oid, observed: &Observation) -> IterationRecord {
    let mut config = config.clone();
    config.scoring.scope = Scope::Whole;
    let mut record = IterationRecord::new(0, Utc::now());
    record.commit = CommitSha(commit.to_string());
    record.execution_time_ms = observed.execution_time_ms;
    score::score(
        &ScoreInput {
            config: &config,
            head: observed,
            base: None,
            changed: None,
            paths: &markers::Paths {
                is_source: &|_| false,
                is_test: &|_| false,
            },
            earlier: &integrity::Earlier::NONE,
            head_source: &|_| None,
            accepted: &[],
            trusted: None,
            targets: &[],
            environment: &crate::signals::environment::Unsealed::default(),
            test_file: None,
        },
        &mut record,
    );
    record.quality = weighted_quality(&record.scores, &config.quality_weights);
    record
}

/// A compiled [`PathFilter`].
#[derive(Clone)]
pub struct PathMatcher {
    include: GlobSet,
    exclude: GlobSet,
}

impl PathMatcher {
    /// `key` names the filter in errors (`detection.markers`). Compiled once per process
    /// for each filter: building a glob set's regular expressions is most of what a
    /// cached push costs.
    pub fn new(key: &str, filter: &PathFilter) -> Result<PathMatcher, Failure> {
        type Compiled = std::collections::HashMap<(Vec<String>, Vec<String>), PathMatcher>;
        static COMPILED: std::sync::Mutex<Option<Compiled>> = std::sync::Mutex::new(None);
        let id = (filter.include.clone(), filter.exclude.clone());
        if let Some(known) = COMPILED
            .lock()
            .ok()
            .and_then(|c| c.as_ref().and_then(|c| c.get(&id).cloned()))
        {
            return Ok(known);
        }
        let matcher = PathMatcher {
            include: glob_set(key, &filter.include)?,
            exclude: glob_set(key, &filter.exclude)?,
        };
        if let Ok(mut compiled) = COMPILED.lock() {
            compiled
                .get_or_insert_with(Default::default)
                .insert(id, matcher.clone());
        }
        Ok(matcher)
    }

    pub fn matches(&self, path: &str) -> bool {
        self.include.is_match(path) && !self.exclude.is_match(path)
    }
}

fn glob_set(key: &str, patterns: &[String]) -> Result<GlobSet, Failure> {
    let mut builder = GlobSetBuilder::new();
    for pattern in patterns {
        let glob = Glob::new(pattern)
            .map_err(|e| user(format!("{key}: `{pattern}` is not a glob: {e}")))?;
        builder.add(glob);
    }
    builder.build().map_err(|e| user(format!("{key}: {e}")))
}
