//! `itergate loop`'s flow: drive a coding agent on the current branch. Each iteration
//! starts a fresh agent process with the prompt (the task first, then the revision prompt),
//! folds what it left (its commits and its uncommitted changes) into one commit with
//! itergate's trailers, and judges that commit as `itergate run` does: the checks on it and
//! on the base, the tamper-evidence, the engine. ACCEPT stops with 0; ITERATE goes round
//! again; ESCALATE, ABORT or a spent budget stops with 20 and a hand-off summary. The
//! budgets are itergate's, kept from outside the agent: the agent's wall clock here, its
//! tokens, dollars and tool calls (from its own output, in the trailers) in the engine.
//! `commands/agent_loop.rs` parses the arguments into [`LoopOptions`] and supplies the
//! [`Terminal`] that tells a person what was decided.

pub mod attempts;
mod confine;
mod events;
mod guard;
mod install;
mod seed;
mod spend;
mod start;
mod stop;
mod work;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use git2::{Oid, Repository};

use crate::agent::{run_agent, AgentCommand, AgentExit, AgentRun, Usage};
use crate::app::exit::ExitStatus;
use crate::app::local::{self as task, current_task, Task};
use crate::app::observe::RecordOptions;
use crate::engine::{Decision, Evaluation, Recommendation};
use crate::git;
use crate::model::IterationRecord;
use crate::signals::checks::Progress;

use super::{user, Env, Failure};

use confine::Confinement;
use events::run_hooks;
use events::Events;
pub use events::LoopEvent;
use guard::GitGuard;
use seed::{context_rounds, task_prompt, Seed, Seeded};
use spend::{
    clock_spent, exit_text, minutes, per_run_limit, spend_cap, total_remaining, Allowance,
};
use start::{dry_run, end_task, next_position, record_start};
use stop::{clock_stop, stop, tamper_stop, Cause};
use work::{changed, commit_iteration, loop_dir, require_clean, short, untracked};

/// What `itergate loop` was asked to do, its arguments parsed.
pub struct LoopOptions {
    pub agent: AgentCommand,
    /// The task, as the agent is given it (never empty).
    pub task_text: String,
    /// `--entry`: where the work starts, for the context rounds.
    pub entry: Option<String>,
    /// `--spec`: where the task's specification is, for the context rounds.
    pub spec: Option<String>,
    pub skip_context: bool,
    /// `--on-exhaust best`: a loop stopped short of an accept leaves the branch at the best
    /// iteration.
    pub restore_best: bool,
    /// `--iteration-timeout`: it can only shorten `loop.iteration_minutes`.
    pub iteration_timeout: Option<Duration>,
    /// `--format json`: events as JSON lines on stdout.
    pub json: bool,
    pub ignore_start_failures: bool,
    pub new_task: bool,
    /// `--attempts N`: best of N agents for each iteration.
    pub attempts: u32,
    pub dry_run: bool,
    pub quiet: bool,
    /// `--sandbox`: overrides the base's `loop.sandbox`.
    pub sandbox: Option<crate::config::SandboxMode>,
}

/// How the command tells a person what happened (the loop's own flow never prints a
/// decision itself).
pub struct Terminal {
    /// The summary on stderr and the revision prompt file, as `itergate run` reports.
    #[allow(clippy::type_complexity)] // one signature, named by its field
    pub report: fn(
        &Env,
        &Repository,
        &Task,
        &[IterationRecord],
        &Evaluation,
        bool,
    ) -> Result<Option<PathBuf>, Failure>,
    /// The revision prompt for the latest iteration of a history.
    pub revision_prompt: fn(&Env, &[IterationRecord], &Decision) -> Result<String, Failure>,
    /// Text on stdout.
    pub print: fn(&str) -> Result<(), Failure>,
}

/// Runs the loop on the current branch until the engine accepts, escalates or aborts, or a
/// budget is spent: `Ok` on an accept, [`Failure::Decided`] with the exit status otherwise.
/// `env`'s budgets are the ones in force (the command tightened them by its flags).
pub fn run(env: &Env, options: &LoopOptions, terminal: &Terminal) -> Result<(), Failure> {
    let agent = &options.agent;
    let task_text = &options.task_text;
    let quiet = options.quiet;
    let repo = task::open_repository(env)?;
    let branch = git::head_branch(&repo)?.ok_or_else(|| {
        user(
            "`itergate loop` works on a branch, and HEAD is detached: `git switch -c <name>` first",
        )
    })?;
    require_clean(&env.root)?;
    let events = Events::new(options.json, quiet, terminal.print);
    let confinement = Confinement::prepare(
        env,
        &repo,
        options.sandbox.unwrap_or(env.config.agent_loop.sandbox),
    )?;
    if options.dry_run {
        return dry_run(
            env,
            &repo,
            &branch,
            agent,
            task_text,
            options,
            (terminal, confinement.as_ref()),
        );
    }
    // Before anything is paid for: the start observed (every check must run on it), and its
    // failing tests recorded as the task's targets.
    record_start(env, &repo, &branch, task_text, options, &events)?;
    // What the checks left in the work tree (`.coverage`, caches): never the agent's work.
    let mut leftovers = untracked(&env.root)?;
    let limit = per_run_limit(env, options);
    // A hard stop beside the engine's iteration limit (which a person's `itergate budget`
    // raises), should a decision keep iterating past it.
    let mut max = env.config.stopping_criteria.iteration_limits.max.max(1) + 1;
    let started = Instant::now();
    let mut previous_quality: Option<f64> = None;
    // The writes the sandbox refused the agent, as its output said (a few).
    let mut tried: Vec<String> = Vec::new();
    let mut first_prompt = task_prompt(env, &branch, task_text)?;
    // What the context rounds cost, counted with the first iteration.
    let mut carried = Usage::unknown();
    // A context round in which the agent went ahead and changed the code: the first
    // iteration's work.
    let mut worked: Option<(Oid, AgentRun, Duration)> = None;
    let fresh = {
        let store = task::open_store(env, &repo)?;
        let current = current_task(env, store.repository(), None)?;
        current.history(env, &store)?.is_empty()
    };
    if fresh && !options.skip_context {
        let seed = Seed {
            agent,
            branch: &branch,
            task: task_text,
            entry: options.entry.as_deref(),
            spec: options.spec.as_deref(),
            limit,
            started,
            confinement: confinement.as_ref(),
        };
        match context_rounds(env, &repo, &seed, &events, &mut carried, &leftovers)? {
            Seeded::Execute(prompt) => first_prompt = prompt,
            Seeded::Worked(before, run, loop_left) => worked = Some((before, *run, loop_left)),
            Seeded::Tampered(before, what) => {
                return tamper_stop(env, &repo, (before, 0), &what, &events, quiet);
            }
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
        // A round that already worked is committed and judged, whatever the clock says.
        if clock_spent(env, started) && worked.is_none() {
            // The loop's wall clock ran out (in a context round, or in the last run): no
            // agent starts with what is not left.
            return clock_stop(env, &repo, options, &current, history, &events, quiet);
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
                task_prompt(env, &branch, task_text)?,
                (terminal.revision_prompt)(env, &history, &evaluation.decision)?
            )
        };
        // The engine numbers iterations by their place on the branch: the commit this run
        // makes comes after the branch's commits so far.
        let number = next_position(env, &repo, &current);
        let logs = loop_dir(&repo).join(format!("iteration-{number}"));
        // The prompt the iteration's work was asked with, in a file that exists: a context
        // round's that already worked, else this one's (written before any agent starts).
        let prompt_file = match &worked {
            Some((_, run, _)) => run.stdout.with_file_name("prompt.md"),
            None => {
                let file = logs.join("prompt.md");
                std::fs::create_dir_all(&logs)
                    .and_then(|()| std::fs::write(&file, &prompt))
                    .map_err(|e| user(format!("{}: {e}", file.display())))?;
                file
            }
        };
        events.emit(&LoopEvent::IterationStarted {
            iteration: number,
            agent: &agent.name,
            prompt_file: prompt_file.display().to_string(),
        });
        let remaining = total_remaining(env, started);
        let cap = spend_cap(env, &history, &carried);
        let (before, mut run, remaining) = match worked.take() {
            Some(done) => done,
            None if options.attempts > 1 => {
                let before =
                    git::resolve_commit(&repo, "HEAD").map_err(|e| user(format!("{e:#}")))?;
                events.phase(number, &format!("{} attempts running", options.attempts));
                let outcome = attempts::best_of(
                    env,
                    &repo,
                    agent,
                    &prompt,
                    (number, options.attempts),
                    before,
                    (limit.min(remaining), cap),
                    (&logs, confinement.as_ref()),
                )?;
                if !outcome.tampered.is_empty() {
                    return tamper_stop(
                        env,
                        &repo,
                        (before, number),
                        &outcome.tampered,
                        &events,
                        quiet,
                    );
                }
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
                        outcome.won, options.attempts, outcome.why
                    );
                }
                (before, outcome.run, remaining)
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
                    let guard = GitGuard::take(&repo, &branch, before)?;
                    let sandbox = confinement.as_ref().map(|c| c.policy(&env.root, &logs));
                    let mut run = run_agent(
                        agent,
                        &prompt_now,
                        (&env.root, &logs),
                        sandbox.as_ref(),
                        (limit.min(total_remaining(env, started)), cap),
                        &tick,
                    )
                    .map_err(|e| user(format!("running the agent `{}`: {e}", agent.name)))?;
                    let tampered = guard.restore(&repo)?;
                    if !tampered.is_empty() {
                        return tamper_stop(
                            env,
                            &repo,
                            (before, number),
                            &tampered,
                            &events,
                            quiet,
                        );
                    }
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
                (before, run, remaining)
            }
        };
        run.usage
            .add(&std::mem::replace(&mut carried, Usage::unknown()));
        // The limit that stopped a run is the one that was smaller: say which.
        let allowance = Allowance::of(limit, remaining);
        let refused = match confinement {
            Some(_) => confine::refused(&run),
            None => Vec::new(),
        };
        for line in &refused {
            if tried.len() < 5 && !tried.contains(line) {
                tried.push(line.clone());
            }
        }
        events.emit(&LoopEvent::AgentFinished {
            iteration: number,
            exit: exit_text(&run, &allowance),
            seconds: run.elapsed.as_secs_f64(),
            usage: &run.usage,
            refused: &refused,
        });
        if let AgentExit::Interrupted(signal) = run.exit {
            events.clear_line();
            eprintln!(
                "itergate: interrupted: the agent was stopped; the branch is at {}, nothing of this iteration was committed or recorded",
                short(git::resolve_commit(&repo, "HEAD").unwrap_or(before))
            );
            return Err(Failure::Interrupted(signal));
        }
        let tip = commit_iteration(
            &env.root,
            &repo,
            before,
            number,
            agent,
            (&run, &allowance),
            &leftovers,
        )?;
        // A dependency the sandboxed agent named in a manifest: installed by the loop.
        if confinement.is_some() {
            for said in install::install_dependencies(&env.root, &repo, (before, tip))? {
                if !quiet {
                    eprintln!("itergate loop: iteration {number}: {said}");
                }
            }
        }
        // The agent ran: what the checks execute is scanned again and compared with the
        // start's (`app::sealed`).
        env.sealed.rescan();
        events.phase(number, "checks");
        let store = task::open_store(env, &repo)?;
        let current = current_task(env, store.repository(), None)?;
        let record = RecordOptions {
            progress: Progress::from_quiet(true),
            rescore: false,
        };
        task::record_commit(env, &store, &current, tip, record)?;
        leftovers = untracked(&env.root)?;
        let history = current.history(env, &store)?;
        let feedback = current.feedback(&store, &history)?;
        let base = task::stored_base(env, &store, &current)?;
        let evaluation = task::evaluate_task(env, &current, &history, &feedback, base.as_ref())?;
        events.clear_line();
        (terminal.report)(
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
        // A VOID iteration has no score, whatever its checks measured.
        let quality = latest
            .filter(|r| r.status != crate::model::Status::Void)
            .and_then(|r| r.quality);
        events.emit(&LoopEvent::Judged {
            iteration: number,
            commit: tip.to_string(),
            recommendation: recommendation.as_str(),
            quality,
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
        // A test that failed earlier and now expects something else is a person's call,
        // not another round for the agent.
        let to_confirm = latest
            .filter(|_| recommendation == Recommendation::Iterate)
            .and_then(|r| {
                r.issues.iter().find(|i| {
                    i.severity == crate::model::Severity::Warning
                        && i.finding
                            .contains(crate::signals::integrity::EXPECTATION_TO_CONFIRM)
                })
            })
            .map(|i| {
                let said = i.finding.split(": ").next().unwrap_or(&i.finding);
                format!("a person confirms the behaviour change: {said}")
            });
        if recommendation == Recommendation::Iterate && iteration < max && to_confirm.is_none() {
            continue;
        }
        let cause = to_confirm.as_deref().map_or(Cause::Decided, Cause::Confirm);
        let mut stop = stop(
            env,
            &repo,
            (options.restore_best, cause),
            (&records, &current.targets),
            &evaluation,
            tip,
        )?;
        if !tried.is_empty() {
            // What the agent tried that the sandbox refused: a person should know.
            stop.summary.push_str(&format!(
                "The sandbox refused some of the agent's writes; its output said:\n{}\n",
                confine::quoted(&tried)
            ));
        }
        events.emit(&LoopEvent::Stopped {
            outcome: stop.outcome,
            exit_code: stop.exit_code,
            iteration: number,
            best_iteration: stop.best,
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
