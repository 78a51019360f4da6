//! Best of N for `itergate loop --attempts N`: N fresh agents start from the same
//! iteration, each in a temporary worktree of its own (up to `--jobs` at once); each one's
//! work is committed there and judged as any iteration is; the best measured one (a VOID
//! one never; on a tie, the smaller change) becomes the iteration, the others are kept as
//! `refs/itergate/loop/attempts/<iteration>/<k>`, and what all of them spent counts.

use std::path::Path;
use std::time::Duration;

use git2::{Oid, Repository};
use serde::Serialize;

use crate::agent::process::SpendCap;
use crate::agent::{run_agent, AgentCommand, AgentExit, AgentRun};
use crate::app::local::{self as task, current_task};
use crate::app::observe::RecordOptions;
use crate::git;
use crate::model::Status;
use crate::signals::checks::Progress;

use crate::app::{user, Env, Failure};

use super::confine::Confinement;
use super::guard::GitGuard;

/// One attempt, as judged.
#[derive(Debug, Clone, Serialize)]
pub struct Judged {
    pub attempt: u32,
    pub commit: String,
    pub quality: Option<f64>,
    pub status: &'static str,
    /// Lines added and removed since the iteration's start.
    pub changed_lines: usize,
    /// How the agent's process ended.
    pub exit: String,
}

/// What the attempts came to: the winner's run (its usage the sum of all of them, the work
/// tree at its commit), and every attempt as judged.
pub struct Outcome {
    pub run: AgentRun,
    pub judged: Vec<Judged>,
    pub won: u32,
    pub why: String,
    /// What the attempts changed of what the loop owns (put back): when any, nothing was
    /// judged.
    pub tampered: Vec<String>,
}

/// Runs `n` agents from `before`, judges each, and moves the work tree to the best.
#[allow(clippy::too_many_arguments)]
pub fn best_of(
    env: &Env,
    repo: &Repository,
    agent: &AgentCommand,
    prompt: &str,
    (iteration, n): (u32, u32),
    before: Oid,
    (limit, cap): (Duration, SpendCap),
    (logs, confinement): (&Path, Option<&Confinement>),
) -> Result<Outcome, Failure> {
    let mut trees = Vec::new();
    for _ in 0..n {
        trees.push(
            git::TempWorktree::create(repo, before)
                .map_err(|e| user(format!("a worktree for an attempt: {e:#}")))?,
        );
    }
    // Each attempt may spend what one run may: together they count against the budget.
    let per_attempt = SpendCap {
        tokens: cap.tokens.map(|t| t / u64::from(n.max(1))),
        usd: cap.usd.map(|d| d / f64::from(n.max(1))),
    };
    let branch = git::head_branch(repo)?.unwrap_or_default();
    let guard = GitGuard::take(repo, &branch, before)?;
    let jobs = env.jobs.count().max(1);
    let mut runs: Vec<Option<std::io::Result<AgentRun>>> = (0..n).map(|_| None).collect();
    for batch in (0..n as usize).collect::<Vec<_>>().chunks(jobs) {
        std::thread::scope(|scope| {
            let handles: Vec<_> = batch
                .iter()
                .map(|&k| {
                    let dir = trees[k].path().to_path_buf();
                    let logs = logs.join(format!("attempt-{}", k + 1));
                    let sandbox = confinement.map(|c| c.policy(&dir, &logs));
                    let handle = scope.spawn(move || {
                        run_agent(
                            agent,
                            prompt,
                            (&dir, &logs),
                            sandbox.as_ref(),
                            (limit, per_attempt),
                            &|_| {},
                        )
                    });
                    (k, handle)
                })
                .collect();
            for (k, handle) in handles {
                runs[k] = Some(handle.join().unwrap_or_else(|_| {
                    Err(std::io::Error::other("the attempt's thread panicked"))
                }));
            }
        });
    }
    let tampered = guard.restore(repo)?;
    if !tampered.is_empty() {
        let run = runs
            .into_iter()
            .flatten()
            .find_map(Result::ok)
            .ok_or_else(|| user("no attempt ran"))?;
        return Ok(Outcome {
            run,
            judged: Vec::new(),
            won: 0,
            why: String::new(),
            tampered,
        });
    }
    let store = task::open_store(env, repo)?;
    let current = current_task(env, store.repository(), None)?;
    let mut judged = Vec::new();
    let mut finished = Vec::new();
    for (k, (tree, run)) in trees.iter().zip(runs).enumerate() {
        let attempt = u32::try_from(k + 1).unwrap_or(u32::MAX);
        let run = run
            .unwrap_or_else(|| Err(std::io::Error::other("the attempt did not run")))
            .map_err(|e| user(format!("running the agent `{}`: {e}", agent.name)))?;
        if let AgentExit::Interrupted(signal) = run.exit {
            return Err(Failure::Interrupted(signal));
        }
        let root = tree.path();
        git::run_git(git::git_command(root).args(["add", "--all"]))?;
        git::run_git(git::git_command(root).args([
            "-c",
            "core.hooksPath=/dev/null",
            "commit",
            "--quiet",
            "--no-verify",
            "--allow-empty",
            "-m",
            &format!("itergate loop: iteration {iteration}, attempt {attempt} of {n}"),
        ]))?;
        let tip = git::resolve_commit(
            &Repository::open(root).map_err(anyhow::Error::from)?,
            "HEAD",
        )
        .map_err(|e| user(format!("{e:#}")))?;
        repo.reference(
            &format!("refs/itergate/loop/attempts/{iteration}/{attempt}"),
            tip,
            true,
            "itergate loop: an attempt",
        )
        .map_err(anyhow::Error::from)?;
        let options = RecordOptions {
            progress: Progress::Quiet,
            rescore: false,
        };
        let (record, _) = task::record_commit(env, &store, &current, tip, options)?;
        let changed = git::added_lines(repo, Some(before), tip)?;
        let changed_lines = changed.files.values().map(Vec::len).sum::<usize>()
            + changed.removed.values().map(Vec::len).sum::<usize>();
        judged.push(Judged {
            attempt,
            commit: tip.to_string(),
            quality: record.quality.filter(|_| record.status != Status::Void),
            status: match record.status {
                Status::Pass => "pass",
                Status::Fail => "fail",
                Status::Void => "void",
                Status::Error => "error",
            },
            changed_lines,
            exit: match run.exit {
                AgentExit::Exited(code) => format!("exited {code}"),
                AgentExit::TimedOut => "stopped at its time limit".into(),
                AgentExit::OverBudget(_) => "stopped at its share of the budget".into(),
                AgentExit::Interrupted(signal) => format!("interrupted by signal {signal}"),
            },
        });
        finished.push((tip, run));
    }
    drop(trees);
    // The best measured: the highest quality (a VOID or unscored attempt ranks last), then
    // the smaller change.
    let best = judged
        .iter()
        .enumerate()
        .max_by(|(_, a), (_, b)| {
            let q = |j: &Judged| j.quality.unwrap_or(-1.0);
            q(a).total_cmp(&q(b))
                .then_with(|| b.changed_lines.cmp(&a.changed_lines))
                .then_with(|| b.attempt.cmp(&a.attempt))
        })
        .map(|(i, _)| i)
        .ok_or_else(|| user("--attempts needs at least one attempt"))?;
    let won = &judged[best];
    let ties = judged
        .iter()
        .filter(|j| j.attempt != won.attempt && j.quality == won.quality)
        .count();
    let why = match (won.quality, ties) {
        (None, _) => "no attempt could be scored; the first is kept".to_string(),
        (Some(q), 0) => format!("the highest quality ({q:.2})"),
        (Some(q), _) => format!(
            "the highest quality ({q:.2}), and the smallest change among those as good ({} lines)",
            won.changed_lines
        ),
    };
    let mut usage = crate::agent::Usage::unknown();
    for (_, run) in &finished {
        usage.add(&run.usage);
    }
    let (winner, mut run) = finished.swap_remove(best);
    run.usage = usage;
    // The work tree (clean, at `before`) takes the winner's commit.
    git::run_git(git::git_command(&env.root).args([
        "merge",
        "--ff-only",
        "--quiet",
        &winner.to_string(),
    ]))?;
    let won = won.attempt;
    Ok(Outcome {
        run,
        judged,
        won,
        why,
        tampered: Vec::new(),
    })
}
