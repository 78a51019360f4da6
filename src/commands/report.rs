//! Telling the person or agent at the terminal what was decided: the summary on stderr and
//! the revision prompt in `.git/itergate/revision-prompt.md`. The prompt file exists only
//! while the decision is `iterate`, so it never contradicts `itergate prompt`.

use std::path::PathBuf;

use anyhow::Context as _;
use git2::Repository;

use crate::app::local::Task;
use crate::engine::{Decision, Evaluation, Recommendation};
use crate::model::IterationRecord;
use crate::prompt::{changes_block, render_within_budget};
use crate::summary::decision_view;

use super::{Env, Failure};

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
    let previous = history.len().checked_sub(2).and_then(|i| history.get(i));
    let changes = git2::Repository::discover(&env.root)
        .ok()
        .and_then(|repo| iteration_changes(&repo, latest, previous));
    Ok(render_within_budget(
        &env.renderer()?,
        latest,
        decision,
        changes,
        env.config.context.prompt_budget_bytes,
    )?)
}

/// Files listed in a prompt's diff stat; the totals count them all.
const MAX_CHANGED_FILES_LISTED: usize = 30;

/// The iteration's change, fenced: its commit against the previous iteration's, or against
/// its first parent for the first iteration. `None` when a commit is not in this clone (a
/// history read from elsewhere) or nothing changed.
fn iteration_changes(
    repo: &Repository,
    latest: &IterationRecord,
    previous: Option<&IterationRecord>,
) -> Option<String> {
    let new = git2::Oid::from_str(&latest.commit.0).ok()?;
    let old = match previous {
        Some(p) => Some(git2::Oid::from_str(&p.commit.0).ok()?),
        None => None,
    };
    let changes = crate::git::change_stat(repo, old, new, MAX_CHANGED_FILES_LISTED)?;
    changes_block(&changes.files, changes.files_changed)
}

/// Prints the summary (stderr) and writes the revision prompt, or removes a stale one;
/// returns what it printed (a push's memo keeps it, [`crate::hook::memo`]).
pub fn report(
    env: &Env,
    repo: &Repository,
    task: &Task,
    history: &[IterationRecord],
    evaluation: &Evaluation,
    quiet: bool,
) -> Result<String, Failure> {
    use std::fmt::Write as _;
    let decision = &evaluation.decision;
    let mut printed = String::new();
    if !quiet {
        let view = decision_view(history, evaluation);
        printed = env.renderer_stderr()?.render("decision.txt.j2", &view)?;
        if let Some(notice) = env.rules.unlocked_notice(task.base_branch.as_deref()) {
            let _ = writeln!(printed, "itergate: {notice}");
        }
        if let Some(moved) = task.base_moved {
            let _ = writeln!(
                printed,
                "itergate: the base branch {} moved since this task started (to {}) and the branch merged it in: the change is judged against the task's base {}, so what the merge brought counts as this branch's work",
                task.base_branch
                    .as_deref()
                    .map_or("base", |b| b.strip_prefix("refs/heads/").unwrap_or(b)),
                crate::app::local::short(moved),
                task.merge_base.map(crate::app::local::short).unwrap_or_default()
            );
        }
        eprint!("{printed}");
    }
    let path = prompt_path(repo);
    if decision.recommendation() != Recommendation::Iterate {
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(anyhow::anyhow!("removing {}: {e}", path.display()).into()),
        }
        return Ok(printed);
    }
    let prompt = render_prompt(env, history, decision)?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(&path, prompt).with_context(|| format!("writing {}", path.display()))?;
    if !quiet {
        let line = format!("Revision prompt: {}\n", path.display());
        eprint!("{line}");
        printed.push_str(&line);
    }
    Ok(printed)
}
