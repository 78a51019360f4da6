//! Where a loop's task starts and ends: the start recorded and observed (its failing tests
//! the task's targets), a task in progress continued, `--dry-run`'s plan, the iteration
//! number the next commit gets, and the task ended on an accept.

use git2::{Oid, Repository};

use crate::agent::AgentCommand;
use crate::app::local::{self as task, current_task};
use crate::app::observe::{cached_observation, RecordOptions};
use crate::app::{user, Env, Failure};
use crate::engine::Recommendation;
use crate::git;
use crate::signals::checks::Progress;

use super::confine::Confinement;
use super::events::Events;
use super::seed::{task_name, task_prompt_with};
use super::spend::{minutes, per_run_limit};
use super::work::{loop_dir, short};
use super::{LoopOptions, Terminal};

/// Records where this task starts, unless a task started on this branch is in progress
/// (its start still below HEAD): HEAD is observed — every check must run there, so a
/// missing tool stops the loop before an agent is paid for — and its failing tests become
/// the task's targets (`--ignore-start-failures`: none).
pub(super) fn record_start(
    env: &Env,
    repo: &Repository,
    branch: &str,
    task_text: &str,
    options: &LoopOptions,
    events: &Events,
) -> Result<(), Failure> {
    let store = task::open_store(env, repo)?;
    let head = git::resolve_commit(repo, "HEAD").map_err(|e| user(format!("{e:#}")))?;
    if let Some(start) = store
        .read_task_start(branch)?
        .filter(|s| !s.ended && s.is_loop() && !options.new_task)
    {
        let below = Oid::from_str(&start.commit)
            .ok()
            .is_some_and(|c| c == head || git::is_ancestor(repo, c, head).unwrap_or(false));
        if below && start.task != task_name(task_text, branch) {
            return Err(user(format!(
                "a loop for another task is in progress on `{branch}` (\"{}\", started at {}); run it with that task to continue it, or add --new-task to start this one from HEAD",
                start.task,
                &start.commit[..12.min(start.commit.len())]
            )));
        }
        if below {
            // A loop that escalated waits for a person: it never restarts on its own.
            let current = current_task(env, store.repository(), Some(branch))?;
            let history = current.history(env, &store)?;
            if !history.is_empty() {
                let evaluation = current.evaluate(env, &store, &history)?;
                if evaluation.decision.recommendation() == Recommendation::Escalate {
                    let why = evaluation
                        .decision
                        .stopping_reason
                        .as_ref()
                        .map(|r| r.summary.clone())
                        .unwrap_or_else(|| "escalated".into());
                    return Err(user(format!(
                        "this task was escalated ({why}): a person decides first — `itergate accept [reason]`, `itergate adjust <guidance>` or `itergate budget <n>` — then the loop can go on"
                    )));
                }
            } else if let Some(why) = task::waiting_at(&store, branch)? {
                // Back where it started (no iteration was worth keeping): the escalation
                // filed there waits for a person all the same.
                return Err(user(format!(
                    "this task was escalated ({why}) and its branch is back where it started: a person decides first — `itergate adjust <guidance>` or `itergate budget <n>` lets the loop go on with it from here, `itergate loop --new-task` starts a new task"
                )));
            }
            eprintln!(
                "itergate loop: continuing the task started at {} ({} target test(s))",
                short(Oid::from_str(&start.commit).unwrap_or(head)),
                start.targets.len()
            );
            return Ok(());
        }
    }
    events.phase(0, "checking the start");
    let targets = start_targets(env, &store, head, options, events.json)?;
    events.clear_line();
    if !targets.is_empty() {
        eprintln!(
            "itergate loop: {} test(s) fail where the task starts; they are its targets (`--ignore-start-failures` makes them debt): {}",
            targets.len(),
            shown(&targets, 5)
        );
    }
    let start = crate::history::notes::TaskStart {
        branch: branch.to_string(),
        commit: head.to_string(),
        targets,
        task: task_name(task_text, branch),
        rules: Some(crate::app::observe::fingerprint(&env.config)),
        ended: false,
        base: current_task(env, repo, Some(branch))?
            .merge_base
            .map(|b| b.to_string()),
        environment: crate::app::sealed::current(env, store.repository())
            .map(|s| s.fingerprint.clone()),
        environment_at: None,
        at: chrono::Utc::now(),
    };
    store.write(&[crate::history::notes::Note::TaskStart { start: &start }])?;
    Ok(())
}

/// The checks run on the start (every one must run: the preflight), and the tests failing
/// there, the task's targets (none with `--ignore-start-failures`).
pub(super) fn start_targets(
    env: &Env,
    store: &crate::history::notes::NotesStore,
    start: Oid,
    options: &LoopOptions,
    quiet: bool,
) -> Result<Vec<String>, Failure> {
    let record = RecordOptions {
        progress: Progress::from_quiet(quiet),
        rescore: false,
    };
    let observed = cached_observation(env, store, start, Some("start"), record)?;
    Ok(if options.ignore_start_failures {
        Vec::new()
    } else {
        // A holdout failing at the start is the task's too: never the base's debt.
        let holdout = observed.holdout_failing_ids();
        let mut targets = observed.failing_test_ids();
        targets.extend(holdout.iter().map(|id| crate::model::target::holdout(id)));
        targets
    })
}

/// `--dry-run`: the plan, and the checks run on the start (cached like any observation);
/// no agent runs and nothing is committed or recorded but the start's observation.
pub(super) fn dry_run(
    env: &Env,
    repo: &Repository,
    branch: &str,
    agent: &AgentCommand,
    task_text: &str,
    options: &LoopOptions,
    (terminal, confinement): (&Terminal, Option<&Confinement>),
) -> Result<(), Failure> {
    let store = task::open_store(env, repo)?;
    let head = git::resolve_commit(repo, "HEAD").map_err(|e| user(format!("{e:#}")))?;
    let targets = start_targets(env, &store, head, options, false)?;
    let dir = loop_dir(repo).join("dry-run");
    let argv = agent.argv(
        "<the prompt>",
        &dir.join("prompt.md"),
        &dir.join("usage.jsonl"),
    );
    let criteria = &env.config.stopping_criteria;
    let budget = &criteria.budget_limits;
    let per_run = per_run_limit(env, options);
    let sandbox = match confinement {
        Some(c) => c.describe(&env.root, &dir),
        None => "off: the agent writes what you can".to_string(),
    };
    let mut plan = format!(
        "itergate loop --dry-run on `{branch}` at {}: no agent runs, nothing is committed\n\nAgent: {}\nSandbox: {sandbox}\n\nChecks (they ran on the start):\n",
        short(head),
        argv.join(" ")
    );
    for (name, check) in &env.config.checks {
        plan.push_str(&format!(
            "  {name}: {}\n",
            check.run.as_deref().unwrap_or("(reads a report)")
        ));
    }
    let or_none = |v: Option<String>| v.unwrap_or_else(|| "no limit".into());
    plan.push_str(&format!(
        "\nBudgets: at most {} iterations; {} a run; the loop's wall clock: {}; tokens: {}; spend: {}\n",
        criteria.iteration_limits.max,
        minutes(per_run),
        or_none(budget.wall_clock_minutes.map(|m| format!("{m} min"))),
        or_none(budget.total_tokens.map(|t| t.to_string())),
        or_none(budget.spend_usd.map(|d| format!("${:.2}", d.get()))),
    ));
    plan.push_str(&match targets.len() {
        0 => "\nTargets: none (no test fails at the start)\n".to_string(),
        n => format!(
            "\nTargets ({n}, failing at the start): {}\n",
            shown(&targets, usize::MAX)
        ),
    });
    plan.push_str("\nFirst prompt:\n");
    plan.push_str(&task_prompt_with(env, branch, task_text, (&targets, &[]))?);
    (terminal.print)(&plan)
}

/// The first `most` visible targets by name, the holdouts' by number only.
fn shown(targets: &[String], most: usize) -> String {
    let mut text = crate::model::target::visible(targets)
        .take(most)
        .map(|t| format!("`{t}`"))
        .collect::<Vec<_>>()
        .join(", ");
    let holdout = targets.len() - crate::model::target::visible(targets).count();
    if holdout > 0 {
        if !text.is_empty() {
            text.push_str(", and ");
        }
        text.push_str(&format!("{holdout} of the holdout checks' tests"));
    }
    text
}

/// Marks the branch's task as ended (accepted): a later loop starts a new task.
pub(super) fn end_task(env: &Env, repo: &Repository, branch: &str) -> Result<(), Failure> {
    let store = task::open_store(env, repo)?;
    if let Some(mut start) = store.read_task_start(branch)? {
        start.ended = true;
        store.write(&[crate::history::notes::Note::TaskStart { start: &start }])?;
    }
    Ok(())
}

/// Where the current branch's loop task started, while it is below HEAD.
pub(super) fn loop_start(env: &Env, repo: &Repository) -> Result<Option<Oid>, Failure> {
    let Some(branch) = git::head_branch(repo)? else {
        return Ok(None);
    };
    let head = git::resolve_commit(repo, "HEAD").map_err(|e| user(format!("{e:#}")))?;
    Ok(task::open_store(env, repo)?
        .read_task_start(&branch)?
        .filter(|s| !s.ended && s.is_loop())
        .and_then(|s| Oid::from_str(&s.commit).ok())
        .filter(|c| *c == head || git::is_ancestor(repo, *c, head).unwrap_or(false)))
}

/// The iteration number the engine will give the next commit: its place among the
/// branch's commits since the base (a fresh branch has none yet).
pub(super) fn next_position(env: &Env, repo: &Repository, task: &crate::app::local::Task) -> u32 {
    let recorded = task::open_store(env, repo)
        .ok()
        .and_then(|store| store.read_task_start(&task.name).ok().flatten())
        .filter(|s| !s.ended);
    let fresh = match recorded {
        // The loop's start is recorded: the tip is that start, or iterations follow it.
        Some(start) => start.commit == task.tip.to_string(),
        None => {
            let (base, start) = git::task_start(repo, env.config.hook.base.as_deref(), task.tip);
            base.is_some() && start.is_none()
        }
    };
    let so_far = if fresh { 0 } else { task.commits.len() };
    u32::try_from(so_far).unwrap_or(u32::MAX).saturating_add(1)
}
