//! `itergate score` (score one commit into an iteration record) and `itergate init`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use chrono::{TimeZone, Utc};
use git2::{Oid, Repository};

use crate::cli::{DecideFormat, InitArgs, ScoreArgs};
use crate::config::Config;
use crate::engine::trajectory::weighted_quality;
use crate::git::{self, ChangedLines, TempWorktree};
use crate::model::{CommitSha, IterationRecord, TreeId};
use crate::signals::checks::{self, Progress};
use crate::signals::detect;
use crate::signals::report::{self, ParseOptions, ReportFormat};
use crate::signals::score::{self, CheckOutcome, CheckResult, ScoreInput};
use crate::signals::trailers;

use super::decide::print;
use super::{user, Env, Failure};

/// Where a commit sits in its task.
pub struct Position {
    pub commit: Oid,
    pub merge_base: Option<Oid>,
    pub iteration: u32,
}

pub fn locate(repo: &Repository, rev: &str, base: Option<&str>) -> Result<Position, Failure> {
    let commit = git::resolve_commit(repo, rev).map_err(|e| user(format!("{e:#}")))?;
    let merge_base = match git::default_base_branch(repo, base, "origin") {
        Ok(branch) => match git::resolve_commit(repo, &branch) {
            Ok(base) => git::merge_base(repo, commit, base)?,
            Err(_) => None,
        },
        Err(_) => None,
    };
    let commits = git::first_parent_commits(repo, commit, merge_base)?;
    let iteration = u32::try_from(commits.len().max(1)).unwrap_or(u32::MAX);
    Ok(Position {
        commit,
        merge_base,
        iteration,
    })
}

/// How to score one commit.
pub struct ScoreRequest<'a> {
    pub position: &'a Position,
    /// Existing reports to read instead of running checks (`FORMAT:PATH`).
    pub reports: &'a [String],
    pub progress: Progress,
    /// Run the checks in the user's work tree (HEAD) rather than a temporary worktree.
    pub in_place: bool,
    /// The base's record: findings already there are pre-existing.
    pub base: Option<&'a IterationRecord>,
}

/// Scores a commit: runs or ingests the checks and reads the commit itself.
pub fn score_commit(
    env: &Env,
    repo: &Repository,
    request: &ScoreRequest,
) -> Result<IterationRecord, Failure> {
    let position = request.position;
    let commit = repo
        .find_commit(position.commit)
        .map_err(|e| Failure::Internal(e.into()))?;
    let changed = git::added_lines(repo, position.merge_base, position.commit)?;
    let started = Instant::now();
    let outcomes = if request.reports.is_empty() {
        run_checks(
            env,
            repo,
            position.commit,
            &changed,
            request.progress,
            request.in_place,
        )?
    } else {
        ingest(env, request.reports, &changed)?
    };
    write_private_diagnostics(repo, position.commit, &outcomes)?;
    let timestamp = Utc
        .timestamp_opt(commit.time().seconds(), 0)
        .single()
        .unwrap_or_else(Utc::now);
    let mut record = IterationRecord::new(position.iteration, timestamp);
    record.commit = CommitSha(position.commit.to_string());
    record.tree = TreeId(commit.tree_id().to_string());
    record.execution_time_ms = Some(started.elapsed().as_millis() as u64);
    let trailer_pairs = git::commit_trailers(repo, position.commit)?;
    trailers::apply(&trailer_pairs, &mut record);
    score::score(
        &ScoreInput {
            config: &env.config,
            checks: &outcomes,
            changed: Some(&changed),
            base: request.base,
        },
        &mut record,
    );
    record.quality = weighted_quality(&record.scores, &env.config.quality_weights);
    Ok(record)
}

/// Scores a base commit (a merge-base): in a temporary worktree, with nothing to compare to.
pub fn score_base(
    env: &Env,
    repo: &Repository,
    base: Oid,
    progress: Progress,
) -> Result<IterationRecord, Failure> {
    let position = Position {
        commit: base,
        merge_base: None,
        iteration: 0,
    };
    score_commit(
        env,
        repo,
        &ScoreRequest {
            position: &position,
            reports: &[],
            progress,
            in_place: false,
            base: None,
        },
    )
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
    outcomes: &[CheckOutcome],
) -> Result<(), Failure> {
    let holdouts = outcomes
        .iter()
        .filter(|o| o.visibility == crate::config::Visibility::AggregateOnly);
    for outcome in holdouts {
        let dir = private_dir(repo, commit);
        std::fs::create_dir_all(&dir).map_err(anyhow::Error::from)?;
        let details = match &outcome.result {
            CheckResult::Report { report, exit_code } => {
                serde_json::json!({ "exit_code": exit_code, "report": report })
            }
            CheckResult::Exited { exit_code, tail } => {
                serde_json::json!({ "exit_code": exit_code, "output": tail })
            }
            CheckResult::Failed { message, tail } => {
                serde_json::json!({ "error": message, "output": tail })
            }
        };
        let path = dir.join(format!("{}.json", outcome.name));
        std::fs::write(
            &path,
            serde_json::to_vec_pretty(&details).map_err(anyhow::Error::from)?,
        )
        .map_err(|e| anyhow::anyhow!("writing {}: {e}", path.display()))?;
    }
    Ok(())
}

/// The checks to run: configured, else detected (and said so).
pub fn checks_for(env: &Env, root: &Path) -> BTreeMap<String, crate::config::Check> {
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

fn run_checks(
    env: &Env,
    repo: &Repository,
    commit: Oid,
    changed: &ChangedLines,
    progress: Progress,
    in_place: bool,
) -> Result<Vec<CheckOutcome>, Failure> {
    let worktree = if in_place {
        None
    } else {
        Some(TempWorktree::create(repo, commit)?)
    };
    let root: PathBuf = match (&worktree, repo.workdir()) {
        (Some(w), _) => w.path().to_path_buf(),
        (None, Some(dir)) => dir.to_path_buf(),
        (None, None) => return Err(user("a bare repository has no work tree to run checks in")),
    };
    let checks = checks_for(env, &root);
    let keep = |path: &str| changed.files.keys().any(|p| path.ends_with(p.as_str()));
    Ok(checks::run_all(&root, &checks, progress, &keep)?)
}

fn ingest(
    env: &Env,
    reports: &[String],
    changed: &ChangedLines,
) -> Result<Vec<CheckOutcome>, Failure> {
    let keep = |path: &str| changed.files.keys().any(|p| path.ends_with(p.as_str()));
    let opts = ParseOptions {
        keep_lines_for: Some(&keep),
    };
    reports
        .iter()
        .map(|spec| {
            let (format, path) = spec.split_once(':').ok_or_else(|| {
                user(format!(
                    "--report {spec}: expected FORMAT:PATH, e.g. junit:target/junit.xml"
                ))
            })?;
            let format: ReportFormat = format.parse().map_err(user)?;
            let report =
                report::parse_file(format, &env.path(Path::new(path)), &opts).map_err(user)?;
            Ok(CheckOutcome {
                name: format.name().to_string(),
                visibility: Default::default(),
                void_on_violation: false,
                result: CheckResult::Report {
                    report,
                    exit_code: None,
                },
            })
        })
        .collect()
}

pub fn score(env: &Env, args: &ScoreArgs, quiet: bool) -> Result<(), Failure> {
    let repo = git::open(&env.root).map_err(|e| user(format!("{e:#}")))?;
    let base = args.base.as_deref().or(env.config.hook.base.as_deref());
    let position = locate(&repo, &args.rev, base)?;
    let progress = if quiet {
        Progress::Quiet
    } else {
        Progress::Auto
    };
    // HEAD is scored in place, as a test run would be; any other commit in a worktree.
    let in_place = git::resolve_commit(&repo, "HEAD").ok() == Some(position.commit);
    let record = score_commit(
        env,
        &repo,
        &ScoreRequest {
            position: &position,
            reports: &args.reports,
            progress,
            in_place,
            base: None,
        },
    )?;
    let text = match args.format {
        DecideFormat::Json => {
            serde_json::to_string_pretty(&record).map_err(|e| Failure::Internal(e.into()))? + "\n"
        }
        DecideFormat::Yaml => {
            serde_yaml::to_string(&record).map_err(|e| Failure::Internal(e.into()))?
        }
        DecideFormat::Text => record_text(&env.config, &record),
    };
    print(&text)
}

fn record_text(config: &Config, r: &IterationRecord) -> String {
    let mut out = format!(
        "iteration {} · {} · {:?}\n",
        r.iteration,
        r.commit.0.get(..12).unwrap_or(&r.commit.0),
        r.status
    );
    if let Some(q) = weighted_quality(&r.scores, &config.quality_weights) {
        out.push_str(&format!("quality {q:.2}\n"));
    }
    for (d, v) in r.scores.observed() {
        out.push_str(&format!(
            "  {}: {}\n",
            d.label(),
            crate::summary::format_score(Some(d), v)
        ));
    }
    for (k, v) in &r.metrics {
        out.push_str(&format!("  {k}: {v}\n"));
    }
    for i in &r.issues {
        let at = i.affected_field.as_deref().unwrap_or("-");
        let first = i.finding.lines().next().unwrap_or("");
        out.push_str(&format!(
            "{} {} {at}: {first}\n",
            i.severity.as_str(),
            i.dimension
        ));
    }
    for t in &r.triggers {
        out.push_str(&format!(
            "trigger {} ({:.2}): {}\n",
            t.kind.as_str(),
            t.severity,
            t.details
        ));
    }
    out
}

pub fn init(env: &Env, args: &InitArgs) -> Result<(), Failure> {
    let path = env.root.join(".itergate.yml");
    if path.exists() && !args.force {
        return Err(user(format!(
            "{} exists; use --force to overwrite it",
            path.display()
        )));
    }
    let detected = detect::detect(&env.root);
    let text = detect::starter_config(detected.as_ref())?;
    // The file we write must be one we accept.
    Config::from_yaml(&text, &path)
        .map_err(|e| Failure::Internal(anyhow::anyhow!("generated config is invalid: {e}")))?;
    std::fs::write(&path, text).map_err(|e| user(format!("{}: {e}", path.display())))?;
    eprintln!(
        "itergate: wrote {} ({})",
        path.display(),
        detected
            .map(|d| format!("{} checks", d.toolchain))
            .unwrap_or_else(|| "no toolchain detected".into())
    );
    Ok(())
}
