//! The machinery `run`, `status`, `prompt` and the pre-push hook share: find a branch's
//! iterations, score a commit once per tree (cached in git notes), decide, and tell the
//! person or agent what to do next.

use std::path::PathBuf;

use anyhow::Context as _;
use chrono::{TimeZone, Utc};
use git2::{Oid, Repository, StatusOptions};
use sha2::{Digest, Sha256};

use crate::engine::{self, DecideInput, Decision, Feedback};
use crate::git;
use crate::history::notes::NotesStore;
use crate::model::{CommitSha, IterationRecord};
use crate::prompt::prompt_view;
use crate::signals::checks::Progress;
use crate::signals::trailers;
use crate::summary::decision_view;

use super::score::{score_base, score_commit, Position, ScoreRequest};
use super::{Env, Failure};

/// One branch's iterations: the first-parent commits since the merge-base with the base.
pub struct Task {
    pub name: String,
    pub tip: Oid,
    pub merge_base: Option<Oid>,
    pub commits: Vec<Oid>,
}

impl Task {
    pub fn locate(env: &Env, repo: &Repository, name: &str, tip: Oid) -> Result<Task, Failure> {
        let base = env.config.hook.base.as_deref();
        let merge_base = match git::default_base_branch(repo, base, "origin") {
            Ok(branch) => match git::resolve_commit(repo, &branch) {
                Ok(base_oid) if base_oid != tip => git::merge_base(repo, tip, base_oid)?,
                _ => None,
            },
            Err(_) => None,
        };
        let commits = git::first_parent_commits(repo, tip, merge_base)?;
        Ok(Task {
            name: name.to_string(),
            tip,
            merge_base,
            commits,
        })
    }

    pub fn iteration_of(&self, commit: Oid) -> u32 {
        let position = self
            .commits
            .iter()
            .position(|c| *c == commit)
            .map_or(self.commits.len(), |p| p + 1);
        u32::try_from(position.max(1)).unwrap_or(u32::MAX)
    }

    /// The recorded iterations, renumbered by position in the branch.
    pub fn history(&self, store: &NotesStore) -> Result<Vec<IterationRecord>, Failure> {
        let mut records = Vec::new();
        for (index, commit) in self.commits.iter().enumerate() {
            if let Some(mut record) = store.read(*commit)? {
                record.iteration = u32::try_from(index + 1).unwrap_or(u32::MAX);
                records.push(record);
            }
        }
        Ok(records)
    }
}

/// What a cached record depends on besides the tree: the check configuration and itergate.
pub fn fingerprint(env: &Env) -> String {
    let config = &env.config;
    let material = serde_json::json!({
        "version": env!("CARGO_PKG_VERSION"),
        "checks": config.checks,
        "scoring": config.scoring,
        "requirements": config.requirements,
    });
    format!("{:x}", Sha256::digest(material.to_string().as_bytes()))
}

/// The repository the command runs in.
pub fn open_repository(env: &Env) -> Result<Repository, Failure> {
    git::open(&env.root).map_err(|e| super::user(format!("{e:#}")))
}

/// The notes store of the configured notes ref. Commands use one repository handle for
/// everything (`store.repository()`), so objects read once stay cached.
pub fn open_store<'r>(env: &Env, repo: &'r Repository) -> Result<NotesStore<'r>, Failure> {
    Ok(NotesStore::open(repo, Some(&env.config.hook.notes_ref))?)
}

/// Scores `commit` unless a record for its tree with the same fingerprint exists; writes the
/// note. Returns the record and whether checks ran.
pub fn score_once(
    env: &Env,
    store: &NotesStore,
    task: &Task,
    commit: Oid,
    progress: Progress,
) -> Result<(IterationRecord, bool), Failure> {
    let repo = store.repository();
    let fingerprint = fingerprint(env);
    let iteration = task.iteration_of(commit);
    let tree = repo
        .find_commit(commit)
        .map_err(anyhow::Error::from)?
        .tree_id();
    if let Some(stored) = store.read_stored(commit)? {
        if stored.fingerprint.as_deref() == Some(fingerprint.as_str()) {
            // Re-pushing a commit already recorded: nothing to score or write.
            return Ok((stored.record, false));
        }
    }
    if let Some(record) = store.find_by_tree(tree, &fingerprint)? {
        let record = reuse(repo, record, commit, iteration)?;
        store.write(commit, &record, &fingerprint)?;
        return Ok((record, false));
    }
    let base = base_record(env, store, task, progress)?;
    let position = Position {
        commit,
        merge_base: task.merge_base,
        iteration,
    };
    let mut record = score_commit(
        env,
        repo,
        &ScoreRequest {
            position: &position,
            reports: &[],
            progress,
            in_place: is_clean_head(repo, commit),
            base: base.as_ref(),
        },
    )?;
    mark_flaky(store, task, commit, &mut record)?;
    store.write(commit, &record, &fingerprint)?;
    Ok((record, true))
}

/// The base's record (the merge-base with the base branch), scored once and cached like any
/// other tree, so findings already there count as pre-existing.
pub fn base_record(
    env: &Env,
    store: &NotesStore,
    task: &Task,
    progress: Progress,
) -> Result<Option<IterationRecord>, Failure> {
    let repo = store.repository();
    let Some(base) = task.merge_base.filter(|_| env.config.scoring.compare_base) else {
        return Ok(None);
    };
    let fingerprint = fingerprint(env);
    if let Some(stored) = store.read_stored(base)? {
        if stored.fingerprint.as_deref() == Some(fingerprint.as_str()) {
            return Ok(Some(stored.record));
        }
    }
    let tree = repo
        .find_commit(base)
        .map_err(anyhow::Error::from)?
        .tree_id();
    let record = match store.find_by_tree(tree, &fingerprint)? {
        Some(cached) => reuse(repo, cached, base, 0)?,
        None => score_base(env, repo, base, progress)?,
    };
    store.write(base, &record, &fingerprint)?;
    Ok(Some(record))
}

/// The base's record if it was scored already (never scores anything).
pub fn stored_base(
    env: &Env,
    store: &NotesStore,
    task: &Task,
) -> Result<Option<IterationRecord>, Failure> {
    match task.merge_base.filter(|_| env.config.scoring.compare_base) {
        Some(base) => Ok(store.read(base)?),
        None => Ok(None),
    }
}

/// Marks failures that flip across iterations without related changes as flaky.
fn mark_flaky(
    store: &NotesStore,
    task: &Task,
    commit: Oid,
    record: &mut IterationRecord,
) -> Result<(), Failure> {
    let Some(index) = task
        .commits
        .iter()
        .position(|c| *c == commit)
        .filter(|i| *i > 0)
    else {
        return Ok(());
    };
    let earlier = store.history(&task.commits[..index])?;
    let touched = git::added_lines(store.repository(), Some(task.commits[index - 1]), commit)?;
    let count =
        crate::signals::flaky::mark(record, &earlier, &|path| touched.files.contains_key(path));
    if count > 0 {
        tracing::info!(count, "marked flaky test failures");
    }
    Ok(())
}

/// A cached record made this commit's: same scores, this commit's id, time and trailers.
fn reuse(
    repo: &Repository,
    mut record: IterationRecord,
    commit: Oid,
    iteration: u32,
) -> Result<IterationRecord, Failure> {
    let c = repo.find_commit(commit).map_err(anyhow::Error::from)?;
    record.commit = CommitSha(commit.to_string());
    record.iteration = iteration;
    record.timestamp = Utc
        .timestamp_opt(c.time().seconds(), 0)
        .single()
        .unwrap_or(record.timestamp);
    record.issues.retain(|i| i.dimension != "trailers");
    record.tokens_used = None;
    record.output_tokens = None;
    record.cost_usd = None;
    record.tool_calls = None;
    record.confidence = None;
    record.experiment = Default::default();
    trailers::apply(&git::commit_trailers(repo, commit)?, &mut record);
    Ok(record)
}

/// Whether `commit` is HEAD and the work tree has no tracked changes: then checks can run
/// in place; otherwise they run in a temporary worktree of exactly that commit.
fn is_clean_head(repo: &Repository, commit: Oid) -> bool {
    if git::resolve_commit(repo, "HEAD").ok() != Some(commit) {
        return false;
    }
    let mut options = StatusOptions::new();
    options.include_untracked(false).include_ignored(false);
    repo.statuses(Some(&mut options))
        .is_ok_and(|s| s.is_empty())
}

pub fn decide(
    env: &Env,
    task: &Task,
    history: &[IterationRecord],
    baseline: Option<&IterationRecord>,
) -> Result<Decision, Failure> {
    engine::decide(&DecideInput {
        task_id: &task.name,
        config: &env.config,
        history,
        feedback: &Feedback::default(),
        baseline,
        now: Utc::now(),
    })
    .map_err(|e| super::user(format!("{}: {e}", task.name)))
}

/// Where the revision prompt for agents is written.
pub fn prompt_path(repo: &Repository) -> PathBuf {
    repo.path().join("itergate").join("revision-prompt.md")
}

pub fn render_prompt(
    env: &Env,
    history: &[IterationRecord],
    decision: &Decision,
) -> Result<String, Failure> {
    let Some(latest) = history.last() else {
        return Ok(String::new());
    };
    Ok(env
        .renderer()?
        .render("revision-prompt.md.j2", &prompt_view(latest, decision))?)
}

/// Prints the summary (stderr) and writes the revision prompt; returns the prompt path.
pub fn report(
    env: &Env,
    repo: &Repository,
    history: &[IterationRecord],
    decision: &Decision,
) -> Result<Option<PathBuf>, Failure> {
    let view = decision_view(&env.config, history, decision);
    let summary = env.renderer_stderr()?.render("decision.txt.j2", &view)?;
    eprint!("{summary}");
    if decision.recommendation() != crate::engine::Recommendation::Iterate {
        return Ok(None);
    }
    let path = prompt_path(repo);
    let prompt = render_prompt(env, history, decision)?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(&path, prompt).with_context(|| format!("writing {}", path.display()))?;
    eprintln!("Revision prompt: {}", path.display());
    Ok(Some(path))
}
