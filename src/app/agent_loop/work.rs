//! The agent's work in the work tree: whether it changed anything, what the checks left
//! there (never the agent's), its notes undone, and what it left folded into one commit
//! with itergate's trailers.

use std::path::{Path, PathBuf};

use git2::{Oid, Repository};

use crate::agent::{AgentCommand, AgentRun, CostSource};
use crate::app::{user, Failure};
use crate::git;

use super::spend::{exit_text, Allowance};

/// Whether the agent moved HEAD or left changes in the work tree.
pub(super) fn changed(
    root: &Path,
    repo: &Repository,
    before: Oid,
    leftovers: &Leftovers,
) -> Result<bool, Failure> {
    let head = git::resolve_commit(repo, "HEAD").map_err(|e| user(format!("{e:#}")))?;
    if head != before {
        return Ok(true);
    }
    let tracked = git::run_git(git::git_command(root).args([
        "status",
        "--porcelain",
        "--untracked-files=no",
    ]))?;
    Ok(!tracked.trim().is_empty() || untracked(root)? != *leftovers)
}

/// Untracked files git would add (ignored ones left out), with their content's id.
pub(super) type Leftovers = std::collections::BTreeMap<String, Option<Oid>>;

pub(super) fn untracked(root: &Path) -> Result<Leftovers, Failure> {
    let out = git::run_git(git::git_command(root).args([
        "status",
        "--porcelain=v1",
        "-z",
        "--untracked-files=all",
    ]))?;
    Ok(out
        .split('\0')
        .filter_map(|entry| entry.strip_prefix("?? "))
        .map(|path| {
            let hash = Oid::hash_file(git2::ObjectType::Blob, root.join(path)).ok();
            (path.to_string(), hash)
        })
        .collect())
}

/// Folds what the agent left into one commit on `before`: its commits and its uncommitted
/// changes, with itergate's trailers last (the agent's own messages are kept above them,
/// where they cannot pass for trailers). An agent that changed nothing still makes an
/// iteration, an empty one, so that a stall is seen.
pub(super) fn commit_iteration(
    root: &Path,
    repo: &Repository,
    before: Oid,
    iteration: u32,
    agent: &AgentCommand,
    (run, allowance): (&AgentRun, &Allowance),
    leftovers: &Leftovers,
) -> Result<Oid, Failure> {
    let head = git::resolve_commit(repo, "HEAD").map_err(|e| user(format!("{e:#}")))?;
    let mut messages = Vec::new();
    if head != before {
        let mut walk = repo.revwalk().map_err(anyhow::Error::from)?;
        walk.push(head).map_err(anyhow::Error::from)?;
        walk.hide(before).map_err(anyhow::Error::from)?;
        for oid in walk.flatten() {
            if let Ok(commit) = repo.find_commit(oid) {
                messages.push(
                    commit
                        .summary()
                        .ok()
                        .flatten()
                        .unwrap_or_default()
                        .to_string(),
                );
            }
        }
        messages.reverse();
    }
    git::run_git(git::git_command(root).args(["add", "--all"]))?;
    // What the checks left, unchanged by the agent, stays out of its iteration.
    let now = untracked(root)?;
    let left: Vec<&String> = leftovers
        .iter()
        .filter(|(path, hash)| {
            !now.contains_key(*path) && root.join(path).exists() && {
                Oid::hash_file(git2::ObjectType::Blob, root.join(path)).ok() == **hash
            }
        })
        .map(|(path, _)| path)
        .collect();
    for chunk in left.chunks(200) {
        let mut reset = git::git_command(root);
        reset
            .args(["reset", "--quiet", "--"])
            .args(chunk.iter().map(|p| p.as_str()));
        git::run_git(&mut reset)?;
    }
    if head != before {
        git::run_git(git::git_command(root).args([
            "reset",
            "--soft",
            "--quiet",
            &before.to_string(),
        ]))?;
    }
    let message = iteration_message(iteration, agent, (run, allowance), &messages);
    let file = run.stdout.with_file_name("commit-message.txt");
    std::fs::write(&file, message).map_err(|e| Failure::Internal(e.into()))?;
    let file = file.display().to_string();
    git::run_git(git::git_command(root).args([
        "commit",
        "--quiet",
        "--no-verify",
        "--allow-empty",
        "--file",
        &file,
    ]))?;
    git::resolve_commit(repo, "HEAD").map_err(|e| user(format!("{e:#}")))
}

pub(super) fn iteration_message(
    iteration: u32,
    agent: &AgentCommand,
    (run, allowance): (&AgentRun, &Allowance),
    messages: &[String],
) -> String {
    let mut text = match messages.last() {
        Some(subject) if !subject.trim().is_empty() => subject.clone(),
        _ => format!("itergate loop: iteration {iteration} by {}", agent.name),
    };
    text.push_str("\n\n");
    if messages.len() > 1 {
        text.push_str("The agent's commits, folded into this one:\n");
        for subject in messages {
            text.push_str(&format!("- {subject}\n"));
        }
        text.push('\n');
    }
    let usage = &run.usage;
    let mut trailers = vec![
        ("Itergate-Iteration", iteration.to_string()),
        ("Agent", agent.name.clone()),
        ("Agent-Exit", exit_text(run, allowance)),
    ];
    if let Some(tokens) = usage.total_tokens {
        trailers.push(("Tokens-Used", tokens.to_string()));
    }
    if let Some(tokens) = usage.output_tokens {
        trailers.push(("Output-Tokens", tokens.to_string()));
    }
    if let Some(calls) = usage.tool_calls {
        trailers.push(("Tool-Calls", calls.to_string()));
    }
    if let Some(cost) = usage.cost_usd {
        trailers.push(("Cost-USD", format!("{cost:.4}")));
    }
    let source = match usage.cost_source {
        CostSource::Reported => "reported by the agent",
        CostSource::None => "none",
    };
    trailers.push(("Cost-Source", source.into()));
    for (key, value) in trailers {
        text.push_str(&format!("{key}: {value}\n"));
    }
    text
}

pub(super) fn require_clean(root: &Path) -> Result<(), Failure> {
    if tree_is_clean(root)? {
        return Ok(());
    }
    Err(user(
        "the working tree has uncommitted changes; commit or stash them first, so that what the agent changes is its own",
    ))
}

/// Whether the work tree has no change, staged or not, and no untracked file.
pub(super) fn tree_is_clean(root: &Path) -> Result<bool, Failure> {
    let status = git::run_git(git::git_command(root).args(["status", "--porcelain"]))?;
    Ok(status.trim().is_empty())
}

/// Where the loop keeps each iteration's prompt, output and usage.
pub(super) fn loop_dir(repo: &Repository) -> PathBuf {
    repo.path().join("itergate").join("loop")
}

pub(super) fn short(oid: Oid) -> String {
    oid.to_string()[..12].to_string()
}
