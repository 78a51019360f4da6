//! The first prompt: the task as the agent is given it (with the start's failing tests as
//! its targets), and seed 003's context rounds before the first iteration.

use std::time::{Duration, Instant};

use git2::{Oid, Repository};

use crate::agent::{run_agent, AgentCommand, AgentExit, AgentRun, Usage};
use crate::app::local as task;
use crate::app::{user, Env, Failure};
use crate::git;

use super::confine::Confinement;
use super::events::{Events, LoopEvent};
use super::guard::GitGuard;
use super::spend::{minutes, spend_cap, total_remaining};
use super::work::{changed, loop_dir, Leftovers};

/// What the first agent is asked: the task, where it starts, and where its spec is.
pub(super) struct Seed<'a> {
    pub(super) agent: &'a AgentCommand,
    pub(super) branch: &'a str,
    pub(super) task: &'a str,
    pub(super) entry: Option<&'a str>,
    pub(super) spec: Option<&'a str>,
    pub(super) limit: Duration,
    /// When the loop started: a round gets at most what is left of its wall clock.
    pub(super) started: Instant,
    pub(super) confinement: Option<&'a Confinement>,
}

/// What the context rounds ended with.
pub(super) enum Seeded {
    /// Execute with this prompt (the task, and what was delivered).
    Execute(String),
    /// The agent changed the code already: HEAD before its run, the run, and what was left
    /// of the loop's wall clock when it started.
    Worked(Oid, Box<AgentRun>, Duration),
    /// An item marked `none — required` cannot be provided.
    Escalate(String),
    /// The agent changed what the loop owns (put back and named), HEAD before its run.
    Tampered(Oid, Vec<String>),
}

/// Seed 003's rounds before the first iteration: round 0 asks the agent what it needs
/// (without doing the work); each CONTEXT_GAP_REPORT is answered with exactly the items it
/// names (`itergate context`'s rules, from HEAD), until it is ready or the round cap says
/// "execute with the context available". Each round is a fresh agent process, given the
/// task again with the delivery.
pub(super) fn context_rounds(
    env: &Env,
    repo: &Repository,
    seed: &Seed,
    events: &Events,
    spent: &mut Usage,
    leftovers: &Leftovers,
) -> Result<Seeded, Failure> {
    let checks: Vec<&str> = env.config.checks.keys().map(String::as_str).collect();
    // The targets are named in every prompt, round 0's too (the holdouts' never).
    let targets: Vec<String> = task::open_store(env, repo)?
        .read_task_start(seed.branch)?
        .filter(|s| !s.ended)
        .map(|s| crate::model::target::visible(&s.targets).cloned().collect())
        .unwrap_or_default();
    let mut prompt = env.renderer()?.render(
        "loop-seed.md.j2",
        &serde_json::json!({
            "task_name": task_name(seed.task, seed.branch),
            "task": seed.task.trim_end(),
            "targets": targets,
            "entry": seed.entry,
            "spec": seed.spec,
            "branch": seed.branch,
            "checks": checks.join(", "),
        }),
    )?;
    let task = task_prompt(env, seed.branch, seed.task)?;
    // Each round that does not end the rounds answers one report: `round` came before.
    for round in 0..=env.config.context.max_rounds {
        let before = git::resolve_commit(repo, "HEAD").map_err(|e| user(format!("{e:#}")))?;
        let logs = loop_dir(repo).join(format!("context-{round}"));
        let tick = |t: Duration| {
            events.phase(
                0,
                &format!("context round {round}: agent running {}", minutes(t)),
            );
        };
        let guard = GitGuard::take(repo, seed.branch, before)?;
        let loop_left = total_remaining(env, seed.started);
        let allowance = seed.limit.min(loop_left);
        let cap = spend_cap(env, &[], spent);
        let sandbox = seed.confinement.map(|c| c.policy(&env.root, &logs));
        let run = run_agent(
            seed.agent,
            &prompt,
            (&env.root, &logs),
            sandbox.as_ref(),
            (allowance, cap),
            &tick,
        )
        .map_err(|e| user(format!("running the agent `{}`: {e}", seed.agent.name)))?;
        let tampered = guard.restore(repo)?;
        if !tampered.is_empty() {
            return Ok(Seeded::Tampered(before, tampered));
        }
        if let AgentExit::Interrupted(signal) = run.exit {
            events.clear_line();
            return Err(Failure::Interrupted(signal));
        }
        let round_event = |outcome, items| {
            events.emit(&LoopEvent::ContextRound {
                round,
                outcome,
                items,
            });
        };
        if changed(&env.root, repo, before, leftovers)? {
            round_event("worked", 0);
            return Ok(Seeded::Worked(before, Box::new(run), loop_left));
        }
        spent.add(&run.usage);
        let Some(report) = crate::context::parse_gap_report(&run.text) else {
            round_event("no_report", 0);
            return Ok(Seeded::Execute(task));
        };
        if report.is_ready() {
            round_event("ready", 0);
            return Ok(Seeded::Execute(task));
        }
        let store = task::open_store(env, repo)?;
        let reply = crate::app::context::answer_before_work(env, &store, before, &report, round)?;
        if reply.escalates() {
            round_event("escalated", reply.items.len());
            // The agent's words: without control characters, for a terminal.
            let asked: Vec<String> = reply
                .missing_required
                .iter()
                .filter_map(|n| report.items.get(n.wrapping_sub(1)))
                .map(|item| {
                    format!(
                        "`{}`",
                        item.needs
                            .chars()
                            .filter(|c| !c.is_control())
                            .collect::<String>()
                    )
                })
                .collect();
            let reason = crate::context::escalation_reason(&reply, "itergate loop");
            return Ok(Seeded::Escalate(format!("{reason}: {}", asked.join(", "))));
        }
        let view = crate::context::delivery_view(&reply, Some(&before.to_string()), false);
        let delivery = env.renderer()?.render("context-delivery.md.j2", &view)?;
        let execute = reply.kind != crate::context::deliver::ReplyKind::Delivery;
        round_event(
            if execute { "execute_now" } else { "delivered" },
            reply.items.len(),
        );
        let next = format!("{task}\n{delivery}");
        if execute {
            return Ok(Seeded::Execute(next));
        }
        prompt = next;
    }
    Ok(Seeded::Execute(task))
}

pub(super) fn task_name(task: &str, branch: &str) -> String {
    task.lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or(branch)
        .trim()
        .chars()
        .take(80)
        .collect()
}

pub(super) fn task_prompt(env: &Env, branch: &str, task: &str) -> Result<String, Failure> {
    let repo = task::open_repository(env)?;
    let store = task::open_store(env, &repo)?;
    // A task the loop took back to its start carries what a person said there since.
    let guidance = task::guidance_at(&store, branch)?;
    let targets = store
        .read_task_start(branch)?
        .filter(|s| !s.ended)
        .map(|s| s.targets)
        .unwrap_or_default();
    task_prompt_with(env, branch, task, (&targets, &guidance))
}

pub(super) fn task_prompt_with(
    env: &Env,
    branch: &str,
    task: &str,
    (targets, guidance): (&[String], &[String]),
) -> Result<String, Failure> {
    let checks: Vec<&str> = env.config.checks.keys().map(String::as_str).collect();
    // The holdouts' targets are never named to the agent.
    let targets: Vec<&String> = crate::model::target::visible(targets).collect();
    Ok(env.renderer()?.render(
        "loop-task.md.j2",
        &serde_json::json!({
            "task_name": task_name(task, branch),
            "task": task.trim_end(),
            "branch": branch,
            "checks": checks.join(", "),
            "targets": targets,
            "guidance": guidance,
        }),
    )?)
}
