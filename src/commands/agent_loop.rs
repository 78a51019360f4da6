//! `itergate loop`: drive a coding agent on the current branch. Each iteration starts a
//! fresh agent process with the prompt (the task first, then the revision prompt), folds
//! what it left (its commits and its uncommitted changes) into one commit with itergate's
//! trailers, and judges that commit as `itergate run` does: the checks on it and on the
//! base, the tamper-evidence, the engine. ACCEPT stops with 0; ITERATE goes round again;
//! ESCALATE, ABORT or a spent budget stops with 20 and a hand-off summary. The budgets
//! are itergate's, kept from outside the agent: the agent's wall clock here, its tokens,
//! dollars and tool calls (from its own output, in the trailers) in the engine.

use std::io::IsTerminal as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use git2::{Oid, Repository};
use serde::Serialize;

use crate::agent::process::{Overspend, SpendCap};
use crate::agent::{run_agent, AgentCommand, AgentExit, AgentRun, CostSource, Usage};
use crate::app::exit::ExitStatus;
use crate::app::local::{self as task, RecordOptions};
use crate::cli::{LoopArgs, OnExhaust, OutputFormat};
use crate::engine::{BudgetStopReport, Evaluation, Recommendation};
use crate::git;
use crate::model::IterationRecord;
use crate::signals::checks::Progress;

use super::report::{render_prompt, report};
use super::run::current_task;
use super::{user, Env, Failure};

/// One thing that happened, as `--format json` streams it (one JSON object per line).
#[derive(Debug, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum LoopEvent<'a> {
    /// A context round before the first iteration (seed 003): the agent was asked what it
    /// needs (round 0), or given what it asked for.
    ContextRound {
        round: u32,
        /// `ready`, `delivered` (items), `execute_now`, `escalated`, `worked` (it went
        /// ahead and changed the code) or `no_report`.
        outcome: &'static str,
        items: usize,
    },
    IterationStarted {
        iteration: u32,
        agent: &'a str,
        prompt_file: String,
    },
    AgentFinished {
        iteration: u32,
        exit: String,
        seconds: f64,
        usage: &'a Usage,
    },
    /// `--attempts N`: every attempt of the iteration as judged, and the one kept.
    Attempts {
        iteration: u32,
        attempts: &'a [super::attempts::Judged],
        winner: u32,
        why: &'a str,
    },
    Judged {
        iteration: u32,
        commit: String,
        recommendation: &'static str,
        quality: Option<f64>,
        stopping_reason: Option<String>,
    },
    Stopped {
        outcome: &'static str,
        exit_code: u8,
        iteration: u32,
        best_iteration: Option<u32>,
        commit: String,
        summary: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        budget_stop_report: Option<&'a BudgetStopReport>,
    },
}

pub fn agent_loop(env: &Env, args: &LoopArgs, quiet: bool) -> Result<(), Failure> {
    let agent =
        AgentCommand::parse(&args.agent, &split_args(args.agent_args.as_deref())?).map_err(user)?;
    let env = &tighten(env, args)?;
    let task_text = task_text(args)?;
    let repo = task::open_repository(env)?;
    let branch = git::head_branch(&repo)?.ok_or_else(|| {
        user(
            "`itergate loop` works on a branch, and HEAD is detached: `git switch -c <name>` first",
        )
    })?;
    require_clean(&env.root)?;
    let events = Events::new(args.format, quiet);
    if args.dry_run {
        return dry_run(env, &repo, &branch, &agent, &task_text, args);
    }
    // Before anything is paid for: the start observed (every check must run on it), and its
    // failing tests recorded as the task's targets.
    record_start(env, &repo, &branch, &task_text, args, &events)?;
    // What the checks left in the work tree (`.coverage`, caches): never the agent's work.
    let mut leftovers = untracked(&env.root)?;
    let limit = per_run_limit(env, args);
    // A hard stop beside the engine's iteration limit (which a person's `itergate budget`
    // raises), should a decision keep iterating past it.
    let mut max = env.config.stopping_criteria.iteration_limits.max.max(1) + 1;
    let started = Instant::now();
    let mut previous_quality: Option<f64> = None;
    let mut first_prompt = task_prompt(env, &branch, &task_text)?;
    // What the context rounds cost, counted with the first iteration.
    let mut carried = Usage::unknown();
    // A context round in which the agent went ahead and changed the code: the first
    // iteration's work.
    let mut worked: Option<(Oid, AgentRun)> = None;
    let fresh = {
        let store = task::open_store(env, &repo)?;
        let current = current_task(env, store.repository(), None)?;
        current.history(env, &store)?.is_empty()
    };
    if fresh && !args.skip_context {
        let seed = Seed {
            agent: &agent,
            branch: &branch,
            task: &task_text,
            entry: args.entry.as_deref(),
            spec: args.spec.as_deref(),
            limit,
            started,
        };
        match context_rounds(env, &repo, &seed, &events, &mut carried, &leftovers)? {
            Seeded::Execute(prompt) => first_prompt = prompt,
            Seeded::Worked(before, run) => worked = Some((before, *run)),
            Seeded::Escalate(reason) => {
                let summary =
                    format!("\nitergate loop: escalated before any iteration: {reason}\n");
                events.emit(&LoopEvent::Stopped {
                    outcome: "escalated",
                    exit_code: ExitStatus::Escalate.code(),
                    iteration: 0,
                    best_iteration: None,
                    commit: git::resolve_commit(&repo, "HEAD")
                        .map(|o| o.to_string())
                        .unwrap_or_default(),
                    summary: summary.clone(),
                    budget_stop_report: None,
                });
                if !events.json && !quiet {
                    eprint!("{summary}");
                }
                return Err(Failure::Decided(ExitStatus::Escalate.code()));
            }
        }
    }
    let mut iteration = 0;
    loop {
        iteration += 1;
        let store = task::open_store(env, &repo)?;
        let current = current_task(env, store.repository(), None)?;
        let history = current.history(env, &store)?;
        if clock_spent(env, started) {
            // The loop's wall clock ran out (in a context round, or in the last run): no
            // agent starts with what is not left.
            return clock_stop(env, &repo, args, &current, history, &events, quiet);
        }
        let prompt = if history.is_empty() {
            first_prompt.clone()
        } else {
            let feedback = current.feedback(&store, &history)?;
            let base = task::stored_base(env, &store, &current)?;
            let evaluation =
                task::evaluate_task(env, &current, &history, &feedback, base.as_ref())?;
            // The task comes first in every prompt; then what to revise.
            format!(
                "{}\n{}",
                task_prompt(env, &branch, &task_text)?,
                render_prompt(env, &history, &evaluation.decision)?
            )
        };
        // The engine numbers iterations by their place on the branch: the commit this run
        // makes comes after the branch's commits so far.
        let number = next_position(env, &repo, &current);
        let logs = loop_dir(&repo).join(format!("iteration-{number}"));
        events.emit(&LoopEvent::IterationStarted {
            iteration: number,
            agent: &agent.name,
            prompt_file: logs.join("prompt.md").display().to_string(),
        });
        let remaining = total_remaining(env, started);
        let cap = spend_cap(env, &history, &carried);
        let (before, mut run) = match worked.take() {
            Some(done) => done,
            None if args.attempts > 1 => {
                let before =
                    git::resolve_commit(&repo, "HEAD").map_err(|e| user(format!("{e:#}")))?;
                events.phase(number, &format!("{} attempts running", args.attempts));
                let notes = NotesGuard::take(&repo, &env.config.hook.notes_ref);
                let outcome = super::attempts::best_of(
                    env,
                    &repo,
                    &agent,
                    &prompt,
                    (number, args.attempts),
                    before,
                    (limit.min(remaining), cap),
                    &logs,
                )?;
                notes.restore(&repo)?;
                events.clear_line();
                events.emit(&LoopEvent::Attempts {
                    iteration: number,
                    attempts: &outcome.judged,
                    winner: outcome.won,
                    why: &outcome.why,
                });
                if !events.json && !quiet {
                    eprintln!(
                        "itergate loop: iteration {number}: attempt {} of {} kept, {}",
                        outcome.won, args.attempts, outcome.why
                    );
                }
                (before, outcome.run)
            }
            None => {
                let before =
                    git::resolve_commit(&repo, "HEAD").map_err(|e| user(format!("{e:#}")))?;
                let tick =
                    |t: Duration| events.phase(number, &format!("agent running {}", minutes(t)));
                let mut asked = Usage::unknown();
                let mut rounds = 0;
                let mut prompt_now = prompt.clone();
                let run = loop {
                    let notes = NotesGuard::take(&repo, &env.config.hook.notes_ref);
                    let mut run = run_agent(
                        &agent,
                        &prompt_now,
                        &env.root,
                        &logs,
                        (limit.min(total_remaining(env, started)), cap),
                        &tick,
                    )
                    .map_err(|e| user(format!("running the agent `{}`: {e}", agent.name)))?;
                    notes.restore(&repo)?;
                    // A context report instead of work, after an iteration: answered by
                    // `itergate context`'s rules, and the agent runs again with what it got.
                    let report = (!history.is_empty()
                        && rounds < env.config.context.max_rounds
                        && !matches!(run.exit, AgentExit::Interrupted(_))
                        && !changed(&env.root, &repo, before, &leftovers)?)
                    .then(|| crate::context::parse_gap_report(&run.text))
                    .flatten()
                    .filter(|r| !r.is_ready());
                    let Some(report) = report else {
                        run.usage.add(&asked);
                        break run;
                    };
                    rounds += 1;
                    let store = task::open_store(env, &repo)?;
                    let answer = crate::app::context::answer(env, &store, &current, &report)?;
                    events.emit(&LoopEvent::ContextRound {
                        round: rounds,
                        outcome: if answer.escalated {
                            "escalated"
                        } else {
                            "delivered"
                        },
                        items: answer.reply.items.len(),
                    });
                    if answer.escalated {
                        // Filed on the latest iteration: nothing of this run is committed.
                        let summary = format!(
                            "\nitergate loop: escalated at iteration {number}: the agent asked for context that cannot be given ({})\n",
                            crate::context::escalation_reason(&answer.reply, "itergate loop")
                        );
                        events.emit(&LoopEvent::Stopped {
                            outcome: "escalated",
                            exit_code: ExitStatus::Escalate.code(),
                            iteration: number,
                            best_iteration: None,
                            commit: before.to_string(),
                            summary: summary.clone(),
                            budget_stop_report: None,
                        });
                        if !events.json && !quiet {
                            eprint!("{summary}");
                        }
                        return Err(Failure::Decided(ExitStatus::Escalate.code()));
                    }
                    asked.add(&run.usage);
                    let view =
                        crate::context::delivery_view(&answer.reply, Some(&answer.commit), false);
                    let delivery = env.renderer()?.render("context-delivery.md.j2", &view)?;
                    prompt_now = format!("{prompt}\n{delivery}");
                };
                (before, run)
            }
        };
        run.usage
            .add(&std::mem::replace(&mut carried, Usage::unknown()));
        // The limit that stopped a run is the one that was smaller: say which.
        let allowance = Allowance::of(limit, remaining);
        events.emit(&LoopEvent::AgentFinished {
            iteration: number,
            exit: exit_text(&run, &allowance),
            seconds: run.elapsed.as_secs_f64(),
            usage: &run.usage,
        });
        if let AgentExit::Interrupted(signal) = run.exit {
            events.clear_line();
            eprintln!(
                "itergate: interrupted: the agent was stopped; the branch is at {}, nothing of this iteration was committed or recorded",
                short(git::resolve_commit(&repo, "HEAD").unwrap_or(before))
            );
            return Err(Failure::Interrupted(signal));
        }
        if git::head_branch(&repo)?.as_deref() != Some(branch.as_str()) {
            return Err(user(format!(
                "the agent left the branch `{branch}`; itergate stops (switch back and run `itergate loop` again)"
            )));
        }
        let head = git::resolve_commit(&repo, "HEAD").map_err(|e| user(format!("{e:#}")))?;
        if !git::is_ancestor(&repo, before, head)? {
            return Err(user(format!(
                "the agent rewrote the branch's history: HEAD no longer contains {}, where its run started; itergate stops (see `git reflog`)",
                short(before)
            )));
        }
        let tip = commit_iteration(&env.root, &repo, before, number, &agent, &run, &leftovers)?;
        events.phase(number, "checks");
        let store = task::open_store(env, &repo)?;
        let current = current_task(env, store.repository(), None)?;
        let options = RecordOptions {
            progress: Progress::from_quiet(true),
            rescore: false,
        };
        task::record_commit(env, &store, &current, tip, options)?;
        leftovers = untracked(&env.root)?;
        let history = current.history(env, &store)?;
        let feedback = current.feedback(&store, &history)?;
        let base = task::stored_base(env, &store, &current)?;
        let evaluation = task::evaluate_task(env, &current, &history, &feedback, base.as_ref())?;
        events.clear_line();
        report(
            env,
            store.repository(),
            &current,
            &history,
            &evaluation,
            quiet || events.json,
        )?;
        let records = history.into_records();
        let latest = records.last();
        let decision = &evaluation.decision;
        let recommendation = decision.recommendation();
        let number = latest.map_or(number, |r| r.iteration);
        events.emit(&LoopEvent::Judged {
            iteration: number,
            commit: tip.to_string(),
            recommendation: recommendation.as_str(),
            quality: latest.and_then(|r| r.quality),
            stopping_reason: decision.stopping_reason.as_ref().map(|r| r.summary.clone()),
        });
        let report_json = serde_json::to_vec(&crate::engine::DecisionReport {
            iteration_decision: decision.clone(),
            task: Some(current.report(env)),
        })
        .map_err(|e| Failure::Internal(e.into()))?;
        run_hooks(
            env,
            "on_iteration",
            &env.config.agent_loop.on_iteration,
            &report_json,
        );
        let quality = latest.and_then(|r| r.quality);
        if let (Some(now), Some(before)) = (quality, previous_quality) {
            if now < before {
                run_hooks(
                    env,
                    "on_regression",
                    &env.config.agent_loop.on_regression,
                    &report_json,
                );
            }
        }
        previous_quality = quality.or(previous_quality);
        max = max.max(decision.budget.max_iterations.saturating_add(1));
        if recommendation == Recommendation::Iterate && iteration < max {
            continue;
        }
        let stop = stop(
            env,
            &repo,
            (args.on_exhaust, false),
            &records,
            &evaluation,
            tip,
        )?;
        events.emit(&LoopEvent::Stopped {
            outcome: stop.outcome,
            exit_code: stop.exit_code,
            iteration: number,
            best_iteration: decision.best_iteration,
            commit: stop.commit.to_string(),
            summary: stop.summary.clone(),
            budget_stop_report: decision.budget_stop_report.as_ref(),
        });
        if !events.json && !quiet {
            eprint!("{}", stop.summary);
        }
        run_hooks(env, "on_stop", &env.config.agent_loop.on_stop, &report_json);
        if stop.exit_code == 0 {
            end_task(env, &repo, &branch)?;
        }
        return match stop.exit_code {
            0 => Ok(()),
            code => Err(Failure::Decided(code)),
        };
    }
}

/// What the first agent is asked: the task, where it starts, and where its spec is.
struct Seed<'a> {
    agent: &'a AgentCommand,
    branch: &'a str,
    task: &'a str,
    entry: Option<&'a str>,
    spec: Option<&'a str>,
    limit: Duration,
    /// When the loop started: a round gets at most what is left of its wall clock.
    started: Instant,
}

/// What the context rounds ended with.
enum Seeded {
    /// Execute with this prompt (the task, and what was delivered).
    Execute(String),
    /// The agent changed the code already: its run, and HEAD before it.
    Worked(Oid, Box<AgentRun>),
    /// An item marked `none — required` cannot be provided.
    Escalate(String),
}

/// Seed 003's rounds before the first iteration: round 0 asks the agent what it needs
/// (without doing the work); each CONTEXT_GAP_REPORT is answered with exactly the items it
/// names (`itergate context`'s rules, from HEAD), until it is ready or the round cap says
/// "execute with the context available". Each round is a fresh agent process, given the
/// task again with the delivery.
fn context_rounds(
    env: &Env,
    repo: &Repository,
    seed: &Seed,
    events: &Events,
    spent: &mut Usage,
    leftovers: &Leftovers,
) -> Result<Seeded, Failure> {
    let checks: Vec<&str> = env.config.checks.keys().map(String::as_str).collect();
    let mut prompt = env.renderer()?.render(
        "loop-seed.md.j2",
        &serde_json::json!({
            "task_name": task_name(seed.task, seed.branch),
            "task": seed.task.trim_end(),
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
        let notes = NotesGuard::take(repo, &env.config.hook.notes_ref);
        let allowance = seed.limit.min(total_remaining(env, seed.started));
        let cap = spend_cap(env, &[], spent);
        let run = run_agent(
            seed.agent,
            &prompt,
            &env.root,
            &logs,
            (allowance, cap),
            &tick,
        )
        .map_err(|e| user(format!("running the agent `{}`: {e}", seed.agent.name)))?;
        notes.restore(repo)?;
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
            return Ok(Seeded::Worked(before, Box::new(run)));
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

/// The iteration number the engine will give the next commit: its place among the
/// branch's commits since the base (a fresh branch has none yet).
fn next_position(env: &Env, repo: &Repository, task: &crate::app::local::Task) -> u32 {
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

/// Whether the agent moved HEAD or left changes in the work tree.
fn changed(
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
type Leftovers = std::collections::BTreeMap<String, Option<Oid>>;

fn untracked(root: &Path) -> Result<Leftovers, Failure> {
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

fn task_name(task: &str, branch: &str) -> String {
    task.lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or(branch)
        .trim()
        .chars()
        .take(80)
        .collect()
}

/// itergate's notes as they were before an agent ran: whatever the agent wrote there
/// (`itergate budget`, `accept`, `adjust`, a note by hand) is undone, since it runs as the
/// same user and people's decisions must come from people.
struct NotesGuard {
    name: String,
    target: Option<Oid>,
}

impl NotesGuard {
    fn take(repo: &Repository, notes_ref: &str) -> NotesGuard {
        let name = if notes_ref.starts_with("refs/") {
            notes_ref.to_string()
        } else {
            format!("refs/notes/{notes_ref}")
        };
        let target = repo.find_reference(&name).ok().and_then(|r| r.target());
        NotesGuard { name, target }
    }

    fn restore(&self, repo: &Repository) -> Result<(), Failure> {
        let now = repo
            .find_reference(&self.name)
            .ok()
            .and_then(|r| r.target());
        if now == self.target {
            return Ok(());
        }
        let dir = repo.workdir().unwrap_or_else(|| repo.path()).to_path_buf();
        let undo = match self.target {
            Some(oid) => vec!["update-ref".to_string(), self.name.clone(), oid.to_string()],
            None => vec!["update-ref".into(), "-d".into(), self.name.clone()],
        };
        git::run_git(git::git_command(&dir).args(&undo))?;
        eprintln!(
            "itergate: the agent changed {}; undone (people's decisions come from people)",
            self.name
        );
        Ok(())
    }
}

/// How the loop ended.
struct Stop {
    outcome: &'static str,
    exit_code: u8,
    /// Where the branch is left.
    commit: Oid,
    summary: String,
}

fn stop(
    env: &Env,
    repo: &Repository,
    (on_exhaust, clock_out): (OnExhaust, bool),
    records: &[IterationRecord],
    evaluation: &Evaluation,
    tip: Oid,
) -> Result<Stop, Failure> {
    let decision = &evaluation.decision;
    let best = decision
        .best_iteration
        .and_then(|i| records.iter().find(|r| r.iteration == i));
    // `run --exit-code`'s statuses: a budget that ran out stops for a person, as an
    // escalation does.
    let recommendation = decision.recommendation();
    let (outcome, exit_code) = match recommendation {
        Recommendation::Accept => ("accepted", ExitStatus::Success),
        _ if clock_out || decision.budget_stop_report.is_some() => {
            ("budget_exhausted", ExitStatus::Escalate)
        }
        Recommendation::Abort => ("aborted", ExitStatus::Abort),
        _ => ("escalated", ExitStatus::Escalate),
    };
    let exit_code = exit_code.code();
    let mut commit = tip;
    let mut restored = None;
    // Whatever stopped the loop short of an accept, the branch is left at the best
    // iteration (never a VOID one: it has no score), the last kept as a ref.
    if outcome != "accepted" && on_exhaust == OnExhaust::Best {
        if let Some(best) = best.filter(|b| b.commit.0 != tip.to_string()) {
            let oid = Oid::from_str(&best.commit.0).map_err(anyhow::Error::from)?;
            restore(repo, tip, oid)?;
            commit = oid;
            restored = Some(best.iteration);
        } else if best.is_none() {
            // No iteration is worth keeping (every one VOID or unscored): the branch goes
            // back to where the task started, never left on a tampered commit.
            if let Some(start) = loop_start(env, repo)?.filter(|s| *s != tip) {
                restore(repo, tip, start)?;
                commit = start;
                restored = Some(0);
            }
        }
    }
    if outcome != "accepted" {
        // Where the branch is left, the history alone may read as "iterate" (a limit that
        // a flag tightened for this run only, a wall clock): the escalation is filed there,
        // so the next loop waits for a person's accept, adjust or budget all the same.
        let reason = if clock_out {
            "the loop's wall clock ran out".to_string()
        } else {
            decision
                .stopping_reason
                .as_ref()
                .map_or_else(|| outcome.to_string(), |r| r.summary.clone())
        };
        let last = if restored.is_some() {
            "; its last iteration is refs/itergate/loop/last"
        } else {
            ""
        };
        let store = task::open_store(env, repo)?;
        store.append_decision(
            commit,
            &crate::history::notes::HumanDecision {
                action: crate::history::notes::HumanAction::Escalate {
                    reason: Some(format!("itergate loop stopped ({reason}){last}")),
                },
                by: crate::app::local::LOOP.into(),
                email: None,
                at: chrono::Utc::now(),
            },
        )?;
    }
    let summary = hand_off(records, evaluation, outcome, restored, tip);
    Ok(Stop {
        outcome,
        exit_code,
        commit,
        summary,
    })
}

/// The branch back at the best iteration; the last one is kept under
/// `refs/itergate/loop/last`, so nothing is lost.
fn restore(repo: &Repository, last: Oid, best: Oid) -> Result<(), Failure> {
    let dir = repo.workdir().unwrap_or_else(|| repo.path()).to_path_buf();
    git::run_git(git::git_command(&dir).args([
        "update-ref",
        "refs/itergate/loop/last",
        &last.to_string(),
    ]))?;
    git::run_git(git::git_command(&dir).args(["reset", "--hard", "--quiet", &best.to_string()]))?;
    Ok(())
}

/// What a person taking over needs: what was tried, the best iteration, what remains.
fn hand_off(
    records: &[IterationRecord],
    evaluation: &Evaluation,
    outcome: &str,
    restored: Option<u32>,
    tip: Oid,
) -> String {
    let decision = &evaluation.decision;
    let mut text = format!("\nitergate loop: {}", outcome.replace('_', " "));
    if let Some(reason) = &decision.stopping_reason {
        text.push_str(&format!(" ({})", reason.summary));
    }
    text.push_str(&format!(" after {} iteration(s)\n", records.len()));
    for record in records {
        let quality = record.quality.map_or_else(
            || "unscored".to_string(),
            |q| format!("quality {}", crate::summary::format_score(None, q)),
        );
        let issues = record
            .issues
            .iter()
            .filter(|i| i.severity != crate::model::Severity::Info)
            .count();
        let best = if decision.best_iteration == Some(record.iteration) {
            "  <- best"
        } else {
            ""
        };
        text.push_str(&format!(
            "  iteration {}: {} {quality}, {issues} blocker/warning issue(s){best}\n",
            record.iteration,
            &record.commit.0[..record.commit.0.len().min(12)],
        ));
    }
    if let Some(report) = &decision.budget_stop_report {
        for name in &report.budgets.exhausted {
            let of = |map: &std::collections::BTreeMap<String, serde_json::Value>| {
                map.get(name)
                    .map_or_else(|| "?".to_string(), |v| v.to_string())
            };
            text.push_str(&format!(
                "Budget spent: {name} {} of {}\n",
                of(&report.budgets.observed),
                of(&report.budgets.limits)
            ));
        }
    }
    match restored {
        Some(0) => text.push_str(&format!(
            "No iteration is worth keeping: the branch is back where the task started; the last ({}) is kept as refs/itergate/loop/last.\n",
            short(tip)
        )),
        Some(iteration) => text.push_str(&format!(
            "The branch is back at iteration {iteration}, the best; the last ({}) is kept as refs/itergate/loop/last.\n",
            short(tip)
        )),
        None => {}
    }
    if outcome != "accepted" && !decision.next_steps.is_empty() {
        text.push_str("What remains:\n");
        for step in decision.next_steps.iter().take(5) {
            text.push_str(&format!("  - {step}\n"));
        }
    }
    text
}

/// Folds what the agent left into one commit on `before`: its commits and its uncommitted
/// changes, with itergate's trailers last (the agent's own messages are kept above them,
/// where they cannot pass for trailers). An agent that changed nothing still makes an
/// iteration, an empty one, so that a stall is seen.
fn commit_iteration(
    root: &Path,
    repo: &Repository,
    before: Oid,
    iteration: u32,
    agent: &AgentCommand,
    run: &AgentRun,
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
                messages.push(commit.summary().unwrap_or_default().to_string());
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
    let message = iteration_message(iteration, agent, run, &messages);
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

fn iteration_message(
    iteration: u32,
    agent: &AgentCommand,
    run: &AgentRun,
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
        (
            "Agent-Exit",
            exit_text(run, &Allowance::of(run.elapsed, Duration::MAX)),
        ),
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

/// How the run ended, with the agent's own word that it failed (an error result, a failed
/// turn), without control characters.
/// What the next run may spend: the budgets less what the task's iterations and the
/// context rounds reported (enforced during the run where the agent streams its usage).
fn spend_cap(env: &Env, records: &[crate::model::IterationRecord], extra: &Usage) -> SpendCap {
    let budget = &env.config.stopping_criteria.budget_limits;
    let tokens: u64 =
        records.iter().filter_map(|r| r.tokens_used).sum::<u64>() + extra.total_tokens.unwrap_or(0);
    let usd: f64 =
        records.iter().filter_map(|r| r.cost_usd).sum::<f64>() + extra.cost_usd.unwrap_or(0.0);
    SpendCap {
        tokens: budget.total_tokens.map(|b| b.saturating_sub(tokens)),
        usd: budget.spend_usd.map(|b| (b.get() - usd).max(0.0)),
    }
}

fn exit_text(run: &AgentRun, allowance: &Allowance) -> String {
    let ended = match run.exit {
        AgentExit::Exited(code) => format!("exited {code}"),
        AgentExit::TimedOut if allowance.whole_loop => format!(
            "stopped at the loop's wall clock (budget_limits.wall_clock_minutes: {} left)",
            minutes(allowance.time)
        ),
        AgentExit::TimedOut => format!(
            "stopped at the per-run limit ({}, --iteration-timeout or loop.iteration_minutes)",
            minutes(allowance.time)
        ),
        AgentExit::Interrupted(signal) => format!("interrupted by signal {signal}"),
        AgentExit::OverBudget(Overspend::Tokens { used, cap }) => format!(
            "stopped: it reported {used} tokens, and {cap} were left of budget_limits.total_tokens (over by {})",
            used.saturating_sub(cap)
        ),
        AgentExit::OverBudget(Overspend::Cents { used, cap }) => format!(
            "stopped: it reported ${:.2}, and ${:.2} was left of budget_limits.spend_usd (over by ${:.2})",
            used as f64 / 100.0,
            cap as f64 / 100.0,
            used.saturating_sub(cap) as f64 / 100.0
        ),
    };
    match &run.usage.failure {
        Some(why) => {
            let why: String = why.chars().filter(|c| !c.is_control()).take(120).collect();
            format!("{ended}, reporting a failure: {why}")
        }
        None => ended,
    }
}

/// How long one agent run may take, and whether the whole loop's wall clock set it.
struct Allowance {
    time: Duration,
    whole_loop: bool,
}

impl Allowance {
    /// The smaller of the per-run limit and what is left of the loop's wall clock.
    fn of(per_run: Duration, loop_left: Duration) -> Allowance {
        Allowance {
            time: per_run.min(loop_left),
            whole_loop: loop_left < per_run,
        }
    }
}

fn minutes(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

/// Where the current branch's loop task started, while it is below HEAD.
fn loop_start(env: &Env, repo: &Repository) -> Result<Option<Oid>, Failure> {
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

/// How long one agent run may take: `loop.iteration_minutes` of the base's configuration,
/// which `--iteration-timeout` can only shorten.
fn per_run_limit(env: &Env, args: &LoopArgs) -> Duration {
    let base = Duration::from_secs(60 * env.config.agent_loop.iteration_minutes.max(1));
    args.iteration_timeout.map_or(base, |flag| flag.min(base))
}

/// The loop's wall clock (`budget_limits.wall_clock_minutes`) has run out.
fn clock_spent(env: &Env, started: Instant) -> bool {
    env.config
        .stopping_criteria
        .budget_limits
        .wall_clock_minutes
        .is_some_and(|m| started.elapsed() >= Duration::from_secs(m.saturating_mul(60)))
}

/// Stops the loop on its wall clock: the branch at the best iteration, the hand-off, 20.
fn clock_stop(
    env: &Env,
    repo: &Repository,
    args: &LoopArgs,
    current: &crate::app::local::Task,
    history: crate::history::History,
    events: &Events,
    quiet: bool,
) -> Result<(), Failure> {
    let minutes = env
        .config
        .stopping_criteria
        .budget_limits
        .wall_clock_minutes
        .unwrap_or_default();
    let head = git::resolve_commit(repo, "HEAD").map_err(|e| user(format!("{e:#}")))?;
    let (summary, commit, iteration, best) = if history.is_empty() {
        (
            format!("\nitergate loop: stopped: the loop's wall clock (budget_limits.wall_clock_minutes: {minutes}) ran out before the first iteration; nothing was committed\n"),
            head,
            0,
            None,
        )
    } else {
        let store = task::open_store(env, repo)?;
        let feedback = current.feedback(&store, &history)?;
        let base = task::stored_base(env, &store, current)?;
        let evaluation = task::evaluate_task(env, current, &history, &feedback, base.as_ref())?;
        let records = history.into_records();
        let stop = stop(
            env,
            repo,
            (args.on_exhaust, true),
            &records,
            &evaluation,
            head,
        )?;
        (
            format!(
                "\nitergate loop: the loop's wall clock (budget_limits.wall_clock_minutes: {minutes}) ran out{}",
                stop.summary
            ),
            stop.commit,
            records.last().map_or(0, |r| r.iteration),
            evaluation.decision.best_iteration,
        )
    };
    events.clear_line();
    events.emit(&LoopEvent::Stopped {
        outcome: "budget_exhausted",
        exit_code: ExitStatus::Escalate.code(),
        iteration,
        best_iteration: best,
        commit: commit.to_string(),
        summary: summary.clone(),
        budget_stop_report: None,
    });
    if !events.json && !quiet {
        eprint!("{summary}");
    }
    Err(Failure::Decided(ExitStatus::Escalate.code()))
}

/// What is left of `budget_limits.wall_clock_minutes` since the loop started.
fn total_remaining(env: &Env, started: Instant) -> Duration {
    match env
        .config
        .stopping_criteria
        .budget_limits
        .wall_clock_minutes
    {
        Some(m) => Duration::from_secs(m.saturating_mul(60))
            .saturating_sub(started.elapsed())
            .max(Duration::from_secs(1)),
        None => Duration::MAX,
    }
}

fn task_text(args: &LoopArgs) -> Result<String, Failure> {
    let text = match (&args.task, &args.task_file) {
        (Some(text), None) => text.clone(),
        (None, Some(file)) => std::fs::read_to_string(file)
            .map_err(|e| user(format!("reading the task from {}: {e}", file.display())))?,
        _ => return Err(user("give the task: --task TEXT or --task-file FILE")),
    };
    if text.trim().is_empty() {
        return Err(user("the task is empty; say what the agent should do"));
    }
    Ok(text)
}

fn task_prompt(env: &Env, branch: &str, task: &str) -> Result<String, Failure> {
    let repo = task::open_repository(env)?;
    let targets = task::open_store(env, &repo)?
        .read_task_start(branch)?
        .filter(|s| !s.ended)
        .map(|s| s.targets)
        .unwrap_or_default();
    task_prompt_with(env, branch, task, &targets)
}

fn task_prompt_with(
    env: &Env,
    branch: &str,
    task: &str,
    targets: &[String],
) -> Result<String, Failure> {
    let checks: Vec<&str> = env.config.checks.keys().map(String::as_str).collect();
    Ok(env.renderer()?.render(
        "loop-task.md.j2",
        &serde_json::json!({
            "task_name": task_name(task, branch),
            "task": task.trim_end(),
            "branch": branch,
            "checks": checks.join(", "),
            "targets": targets,
        }),
    )?)
}

/// `--agent-args` as shell words: quotes keep `--allowedTools "Edit Bash(npm test:*)"` one
/// argument.
fn split_args(args: Option<&str>) -> Result<Vec<String>, Failure> {
    match args {
        Some(text) => shell_words::split(text).map_err(|e| {
            user(format!(
                "--agent-args `{text}`: {e} (quote as a shell would)"
            ))
        }),
        None => Ok(Vec::new()),
    }
}

/// The base's budgets, tightened by `--max-iterations`, `--max-cost` and `--max-tokens`
/// (a flag never loosens what the base's configuration sets).
fn tighten(env: &Env, args: &LoopArgs) -> Result<Env, Failure> {
    let mut env = env.clone();
    let criteria = &mut env.config.stopping_criteria;
    if let Some(n) = args.max_iterations {
        let limits = &mut criteria.iteration_limits;
        limits.max = limits.max.min(n);
        limits.min = limits.min.min(limits.max);
    }
    let budget = &mut criteria.budget_limits;
    if let Some(usd) = args.max_cost {
        let usd = crate::config::NonNegative::try_from(usd)
            .map_err(|e| user(format!("--max-cost: {e}")))?;
        budget.spend_usd = Some(match budget.spend_usd {
            Some(base) if base.get() < usd.get() => base,
            _ => usd,
        });
    }
    if let Some(tokens) = args.max_tokens {
        budget.total_tokens = Some(budget.total_tokens.map_or(tokens, |b| b.min(tokens)));
    }
    Ok(env)
}

/// Records where this task starts, unless a task started on this branch is in progress
/// (its start still below HEAD): HEAD is observed — every check must run there, so a
/// missing tool stops the loop before an agent is paid for — and its failing tests become
/// the task's targets (`--ignore-start-failures`: none).
fn record_start(
    env: &Env,
    repo: &Repository,
    branch: &str,
    task_text: &str,
    args: &LoopArgs,
    events: &Events,
) -> Result<(), Failure> {
    let store = task::open_store(env, repo)?;
    let head = git::resolve_commit(repo, "HEAD").map_err(|e| user(format!("{e:#}")))?;
    if let Some(start) = store
        .read_task_start(branch)?
        .filter(|s| !s.ended && s.is_loop() && !args.new_task)
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
                let feedback = current.feedback(&store, &history)?;
                let base = task::stored_base(env, &store, &current)?;
                let evaluation =
                    task::evaluate_task(env, &current, &history, &feedback, base.as_ref())?;
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
    let targets = start_targets(env, &store, head, args, events.json)?;
    events.clear_line();
    if !targets.is_empty() {
        eprintln!(
            "itergate loop: {} test(s) fail where the task starts; they are its targets (`--ignore-start-failures` makes them debt): {}",
            targets.len(),
            targets
                .iter()
                .take(5)
                .map(|t| format!("`{t}`"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let start = crate::history::notes::TaskStart {
        branch: branch.to_string(),
        commit: head.to_string(),
        targets,
        task: task_name(task_text, branch),
        rules: Some(crate::app::observe::fingerprint(&env.config)),
        ended: false,
        at: chrono::Utc::now(),
    };
    store.write(&[crate::history::notes::Note::TaskStart { start: &start }])?;
    Ok(())
}

/// The checks run on the start (every one must run: the preflight), and the tests failing
/// there, the task's targets (none with `--ignore-start-failures`).
fn start_targets(
    env: &Env,
    store: &crate::history::notes::NotesStore,
    start: Oid,
    args: &LoopArgs,
    quiet: bool,
) -> Result<Vec<String>, Failure> {
    let options = RecordOptions {
        progress: Progress::from_quiet(quiet),
        rescore: false,
    };
    let observed = task::cached_observation(env, store, start, Some("start"), options)?;
    Ok(if args.ignore_start_failures {
        Vec::new()
    } else {
        observed.failing_test_ids()
    })
}

/// `--dry-run`: the plan, and the checks run on the start (cached like any observation);
/// no agent runs and nothing is committed or recorded but the start's observation.
fn dry_run(
    env: &Env,
    repo: &Repository,
    branch: &str,
    agent: &AgentCommand,
    task_text: &str,
    args: &LoopArgs,
) -> Result<(), Failure> {
    let store = task::open_store(env, repo)?;
    let head = git::resolve_commit(repo, "HEAD").map_err(|e| user(format!("{e:#}")))?;
    let targets = start_targets(env, &store, head, args, false)?;
    let dir = loop_dir(repo).join("dry-run");
    let argv = agent.argv(
        "<the prompt>",
        &dir.join("prompt.md"),
        &dir.join("usage.jsonl"),
    );
    let criteria = &env.config.stopping_criteria;
    let budget = &criteria.budget_limits;
    let per_run = per_run_limit(env, args);
    let mut plan = format!(
        "itergate loop --dry-run on `{branch}` at {}: no agent runs, nothing is committed\n\nAgent: {}\n\nChecks (they ran on the start):\n",
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
            targets
                .iter()
                .map(|t| format!("`{t}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    });
    plan.push_str("\nFirst prompt:\n");
    plan.push_str(&task_prompt_with(env, branch, task_text, &targets)?);
    super::print(&plan)
}

/// Marks the branch's task as ended (accepted): a later loop starts a new task.
fn end_task(env: &Env, repo: &Repository, branch: &str) -> Result<(), Failure> {
    let store = task::open_store(env, repo)?;
    if let Some(mut start) = store.read_task_start(branch)? {
        start.ended = true;
        store.write(&[crate::history::notes::Note::TaskStart { start: &start }])?;
    }
    Ok(())
}

fn require_clean(root: &Path) -> Result<(), Failure> {
    if tree_is_clean(root)? {
        return Ok(());
    }
    Err(user(
        "the working tree has uncommitted changes; commit or stash them first, so that what the agent changes is its own",
    ))
}

/// Whether the work tree has no change, staged or not, and no untracked file.
fn tree_is_clean(root: &Path) -> Result<bool, Failure> {
    let status = git::run_git(git::git_command(root).args(["status", "--porcelain"]))?;
    Ok(status.trim().is_empty())
}

/// Where the loop keeps each iteration's prompt, output and usage.
fn loop_dir(repo: &Repository) -> PathBuf {
    repo.path().join("itergate").join("loop")
}

fn short(oid: Oid) -> String {
    oid.to_string()[..12].to_string()
}

/// Runs a hook's commands with the decision report on stdin; a failure is reported only.
fn run_hooks(env: &Env, point: &str, commands: &[String], report: &[u8]) {
    use std::io::Write as _;
    for command in commands {
        let child = std::process::Command::new("sh")
            .args(["-c", command])
            .current_dir(&env.root)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .spawn();
        let result = child.and_then(|mut child| {
            if let Some(mut stdin) = child.stdin.take() {
                let _ = stdin.write_all(report);
            }
            child.wait()
        });
        match result {
            Ok(status) if status.success() => {}
            Ok(status) => eprintln!("itergate: loop.{point} `{command}` failed ({status})"),
            Err(e) => eprintln!("itergate: loop.{point} `{command}` could not run: {e}"),
        }
    }
}

/// The loop's output: JSON lines on stdout, or a phase line on a terminal's stderr.
struct Events {
    json: bool,
    quiet: bool,
    live: bool,
}

impl Events {
    fn new(format: OutputFormat, quiet: bool) -> Events {
        Events {
            json: format == OutputFormat::Json,
            quiet,
            live: !quiet && format == OutputFormat::Text && std::io::stderr().is_terminal(),
        }
    }

    fn emit(&self, event: &LoopEvent) {
        if self.json {
            if let Ok(line) = serde_json::to_string(event) {
                let _ = super::print(&(line + "\n"));
            }
            return;
        }
        match event {
            LoopEvent::IterationStarted { iteration, .. } => {
                self.phase(*iteration, "agent running")
            }
            LoopEvent::AgentFinished {
                iteration,
                exit,
                seconds,
                ..
            } => {
                self.clear_line();
                if !self.quiet {
                    eprintln!(
                        "itergate loop: iteration {iteration}: agent {exit} after {seconds:.1}s"
                    );
                }
            }
            _ => {}
        }
    }

    fn phase(&self, iteration: u32, what: &str) {
        if self.live {
            let place = match iteration {
                0 => String::new(),
                n => format!("iteration {n}: "),
            };
            eprint!("\r\x1b[2Kitergate loop: {place}{what}…");
        }
    }

    fn clear_line(&self) {
        if self.live {
            eprint!("\r\x1b[2K");
        }
    }
}

#[cfg(test)]
mod args_tests {
    use super::{split_args, Allowance};
    use std::time::Duration;

    #[test]
    fn a_run_is_allowed_the_smaller_limit_and_knows_which_it_was() {
        let per_run = Duration::from_secs(1800);
        let tight = Allowance::of(per_run, Duration::from_secs(60));
        assert_eq!(tight.time, Duration::from_secs(60));
        assert!(tight.whole_loop, "the loop's wall clock set it");
        let roomy = Allowance::of(per_run, Duration::MAX);
        assert_eq!(roomy.time, per_run);
        assert!(!roomy.whole_loop);
    }

    #[test]
    fn agent_args_are_shell_words() {
        assert_eq!(
            split_args(Some(r#"--allowedTools "Edit Bash(npm test:*)" --model x"#)).unwrap(),
            ["--allowedTools", "Edit Bash(npm test:*)", "--model", "x"]
        );
        assert!(split_args(Some(r#"--flag "unclosed"#)).is_err());
        assert!(split_args(None).unwrap().is_empty());
    }
}
