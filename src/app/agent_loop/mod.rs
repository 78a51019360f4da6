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

use std::path::Path;
use std::time::{Duration, Instant};

use git2::{Oid, Repository};

use crate::agent::{run_agent, AgentCommand, AgentExit, AgentRun, Usage};
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
use stop::{announce, clock_stop, stop, tamper_stop, Cause, LoopOutcome};
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
    /// The summary on stderr and the revision prompt file, as `itergate run` reports;
    /// returns what it printed.
    #[allow(clippy::type_complexity)] // one signature, named by its field
    pub report: fn(
        &Env,
        &Repository,
        &Task,
        &[IterationRecord],
        &Evaluation,
        bool,
    ) -> Result<String, Failure>,
    /// The revision prompt for the latest iteration of a history.
    pub revision_prompt: fn(&Env, &[IterationRecord], &Decision) -> Result<String, Failure>,
    /// Text on stdout.
    pub print: fn(&str) -> Result<(), Failure>,
}

/// Runs the loop on the current branch until the engine accepts, escalates or aborts, or a
/// budget is spent: `Ok` on an accept, [`Failure::Decided`] with the exit status otherwise.
/// `env`'s budgets are the ones in force (the command tightened them by its flags).
pub fn run(env: &Env, options: &LoopOptions, terminal: &Terminal) -> Result<(), Failure> {
    let repo = task::open_repository(env)?;
    let branch = git::head_branch(&repo)?.ok_or_else(|| {
        user(
            "`itergate loop` works on a branch, and HEAD is detached: `git switch -c <name>` first",
        )
    })?;
    require_clean(&env.root)?;
    let events = Events::new(options.json, options.quiet, terminal.print);
    let sandbox = options.sandbox.unwrap_or(env.config.agent_loop.sandbox);
    let confinement = Confinement::prepare(env, &repo, sandbox)?;
    if options.dry_run {
        let with = (terminal, confinement.as_ref());
        return dry_run(
            env,
            &repo,
            &branch,
            &options.agent,
            &options.task_text,
            options,
            with,
        );
    }
    // Before anything is paid for: the start observed (every check must run on it), and its
    // failing tests recorded as the task's targets.
    record_start(env, &repo, &branch, &options.task_text, options, &events)?;
    let mut run = LoopRun {
        // What the checks left in the work tree (`.coverage`, caches): never the agent's work.
        leftovers: untracked(&env.root)?,
        limit: per_run_limit(env, options),
        // A hard stop beside the engine's iteration limit (which a person's `itergate
        // budget` raises), should a decision keep iterating past it.
        max: env.config.stopping_criteria.iteration_limits.max.max(1) + 1,
        started: Instant::now(),
        previous_quality: None,
        tried: Vec::new(),
        first_prompt: task_prompt(env, &branch, &options.task_text)?,
        carried: Usage::unknown(),
        env,
        options,
        terminal,
        repo,
        branch,
        events,
        confinement,
    };
    let mut worked = match run.seed()? {
        Step::Again(worked) => worked,
        Step::Done => return Ok(()),
    };
    for iteration in 1.. {
        match run.iteration(iteration, worked.take().map(|w| *w))? {
            Step::Again(_) => {}
            Step::Done => return Ok(()),
        }
    }
    unreachable!("the loop ends by a stop")
}

/// A context round in which the agent went ahead and changed the code (the first
/// iteration's work), or an agent's run: HEAD before it, the run, what was left of the
/// loop's wall clock when it started.
type Work = (Oid, AgentRun, Duration);

/// What the loop does next.
enum Step {
    /// Another iteration (with work already done for it, from a context round).
    Again(Option<Box<Work>>),
    /// Stopped, and said so: `Ok` returned by an accept; every other stop is the
    /// [`Failure::Decided`] its step returned.
    Done,
}

/// One `itergate loop`: what it was given and what it has learnt so far.
struct LoopRun<'a> {
    env: &'a Env,
    options: &'a LoopOptions,
    terminal: &'a Terminal,
    repo: Repository,
    branch: String,
    events: Events,
    confinement: Option<Confinement>,
    /// One agent run's limit.
    limit: Duration,
    max: u32,
    started: Instant,
    leftovers: work::Leftovers,
    previous_quality: Option<f64>,
    /// The writes the sandbox refused the agent, as its output said (a few).
    tried: Vec<String>,
    first_prompt: String,
    /// What the context rounds cost, counted with the first iteration.
    carried: Usage,
}

impl LoopRun<'_> {
    /// Seed 003's context rounds, on a task with no iteration yet.
    fn seed(&mut self) -> Result<Step, Failure> {
        let (env, options) = (self.env, self.options);
        let fresh = {
            let store = task::open_store(env, &self.repo)?;
            let current = current_task(env, store.repository(), None)?;
            current.history(env, &store)?.is_empty()
        };
        if !fresh || options.skip_context {
            return Ok(Step::Again(None));
        }
        let seed = Seed {
            agent: &options.agent,
            branch: &self.branch,
            task: &options.task_text,
            entry: options.entry.as_deref(),
            spec: options.spec.as_deref(),
            limit: self.limit,
            started: self.started,
            confinement: self.confinement.as_ref(),
        };
        let rounds = context_rounds(
            env,
            &self.repo,
            &seed,
            &self.events,
            &mut self.carried,
            &self.leftovers,
        )?;
        match rounds {
            Seeded::Execute(prompt) => self.first_prompt = prompt,
            Seeded::Worked(before, run, loop_left) => {
                return Ok(Step::Again(Some(Box::new((before, *run, loop_left)))))
            }
            Seeded::Tampered(before, what) => {
                let quiet = options.quiet;
                tamper_stop(env, &self.repo, (before, 0), &what, &self.events, quiet)?;
            }
            Seeded::Escalate(reason) => {
                let summary =
                    format!("\nitergate loop: escalated before any iteration: {reason}\n");
                let head = git::resolve_commit(&self.repo, "HEAD").ok();
                self.stopped(LoopOutcome::Escalated, (0, None, head), &summary, None)?;
            }
        }
        Ok(Step::Again(None))
    }

    /// One iteration: the prompt, the agent's work (or a context round's), its commit and
    /// its judgement.
    fn iteration(&mut self, iteration: u32, worked: Option<Work>) -> Result<Step, Failure> {
        let (env, options) = (self.env, self.options);
        let store = task::open_store(env, &self.repo)?;
        let current = current_task(env, store.repository(), None)?;
        let history = current.history(env, &store)?;
        // A round that already worked is committed and judged, whatever the clock says.
        if clock_spent(env, self.started) && worked.is_none() {
            // The loop's wall clock ran out (in a context round, or in the last run): no
            // agent starts with what is not left.
            let (repo, events, quiet) = (&self.repo, &self.events, options.quiet);
            clock_stop(env, repo, options, &current, history, events, quiet)?;
            return Ok(Step::Done);
        }
        let prompt = if history.is_empty() {
            self.first_prompt.clone()
        } else {
            let evaluation = current.evaluate(env, &store, &history)?;
            // The task comes first in every prompt; then what to revise.
            format!(
                "{}\n{}",
                task_prompt(env, &self.branch, &options.task_text)?,
                (self.terminal.revision_prompt)(env, &history, &evaluation.decision)?
            )
        };
        // The engine numbers iterations by their place on the branch: the commit this run
        // makes comes after the branch's commits so far.
        let number = next_position(env, &self.repo, &current);
        let logs = loop_dir(&self.repo).join(format!("iteration-{number}"));
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
        self.events.emit(&LoopEvent::IterationStarted {
            iteration: number,
            agent: &options.agent.name,
            prompt_file: prompt_file.display().to_string(),
        });
        let remaining = total_remaining(env, self.started);
        let cap = spend_cap(env, &history, &self.carried);
        // The run's limit, the loop's wall clock left when it starts, the spend cap.
        let budget = (self.limit.min(remaining), remaining, cap);
        let work = match worked {
            Some(done) => Some(done),
            None if options.attempts > 1 => self.attempts(number, &prompt, &logs, budget)?,
            None => self.agent(number, &prompt, &logs, (&history, &current), budget)?,
        };
        let Some((before, run, remaining)) = work else {
            return Ok(Step::Done);
        };
        drop(store);
        let tip = self.commit(number, before, run, remaining)?;
        self.judge(iteration, number, tip)
    }

    /// Best of `--attempts` agents; `None` when one changed what the loop owns (stopped).
    fn attempts(
        &self,
        number: u32,
        prompt: &str,
        logs: &Path,
        (limit, remaining, cap): (Duration, Duration, crate::agent::process::SpendCap),
    ) -> Result<Option<Work>, Failure> {
        let (env, options) = (self.env, self.options);
        let before = git::resolve_commit(&self.repo, "HEAD").map_err(|e| user(format!("{e:#}")))?;
        self.events
            .phase(number, &format!("{} attempts running", options.attempts));
        let outcome = attempts::best_of(
            env,
            &self.repo,
            &options.agent,
            prompt,
            (number, options.attempts),
            before,
            (limit, cap),
            (logs, self.confinement.as_ref()),
        )?;
        if !outcome.tampered.is_empty() {
            let (repo, events) = (&self.repo, &self.events);
            tamper_stop(
                env,
                repo,
                (before, number),
                &outcome.tampered,
                events,
                options.quiet,
            )?;
            return Ok(None);
        }
        self.events.clear_line();
        self.events.emit(&LoopEvent::Attempts {
            iteration: number,
            attempts: &outcome.judged,
            winner: outcome.won,
            why: &outcome.why,
        });
        if !self.events.json && !options.quiet {
            eprintln!(
                "itergate loop: iteration {number}: attempt {} of {} kept, {}",
                outcome.won, options.attempts, outcome.why
            );
        }
        Ok(Some((before, outcome.run, remaining)))
    }

    /// One agent, run again with what it asked for while it sends a context report instead
    /// of work (`itergate context`'s rules); `None` when the loop stopped (the agent changed
    /// what the loop owns, or asked for what cannot be given).
    fn agent(
        &self,
        number: u32,
        prompt: &str,
        logs: &Path,
        (history, current): (&crate::history::History, &Task),
        (limit, remaining, cap): (Duration, Duration, crate::agent::process::SpendCap),
    ) -> Result<Option<Work>, Failure> {
        let (env, options, repo) = (self.env, self.options, &self.repo);
        let before = git::resolve_commit(repo, "HEAD").map_err(|e| user(format!("{e:#}")))?;
        let tick = |t: Duration| {
            self.events
                .phase(number, &format!("agent running {}", minutes(t)))
        };
        let mut asked = Usage::unknown();
        let mut rounds = 0;
        let mut prompt_now = prompt.to_string();
        loop {
            let guard = GitGuard::take(repo, &self.branch, before)?;
            let sandbox = self.confinement.as_ref().map(|c| c.policy(&env.root, logs));
            let budget = (limit.min(total_remaining(env, self.started)), cap);
            let mut run = run_agent(
                &options.agent,
                &prompt_now,
                (&env.root, logs),
                sandbox.as_ref(),
                budget,
                &tick,
            )
            .map_err(|e| user(format!("running the agent `{}`: {e}", options.agent.name)))?;
            let tampered = guard.restore(repo)?;
            if !tampered.is_empty() {
                tamper_stop(
                    env,
                    repo,
                    (before, number),
                    &tampered,
                    &self.events,
                    options.quiet,
                )?;
                return Ok(None);
            }
            // A context report instead of work, after an iteration: answered by `itergate
            // context`'s rules, and the agent runs again with what it got.
            let report = (!history.is_empty()
                && rounds < env.config.context.max_rounds
                && !matches!(run.exit, AgentExit::Interrupted(_))
                && !changed(&env.root, repo, before, &self.leftovers)?)
            .then(|| crate::context::parse_gap_report(&run.text))
            .flatten()
            .filter(|r| !r.is_ready());
            let Some(report) = report else {
                run.usage.add(&asked);
                return Ok(Some((before, run, remaining)));
            };
            rounds += 1;
            let store = task::open_store(env, repo)?;
            let answer = crate::app::context::answer(env, &store, current, &report)?;
            self.events.emit(&LoopEvent::ContextRound {
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
                self.stopped(
                    LoopOutcome::Escalated,
                    (number, None, Some(before)),
                    &summary,
                    None,
                )?;
            }
            asked.add(&run.usage);
            let view = crate::context::delivery_view(&answer.reply, Some(&answer.commit), false);
            let delivery = env.renderer()?.render("context-delivery.md.j2", &view)?;
            prompt_now = format!("{prompt}\n{delivery}");
        }
    }

    /// What the agent left, as the iteration's commit (with the dependencies a sandboxed
    /// agent named, installed).
    fn commit(
        &mut self,
        number: u32,
        before: Oid,
        mut run: AgentRun,
        remaining: Duration,
    ) -> Result<Oid, Failure> {
        let (env, repo) = (self.env, &self.repo);
        run.usage
            .add(&std::mem::replace(&mut self.carried, Usage::unknown()));
        // The limit that stopped a run is the one that was smaller: say which.
        let allowance = Allowance::of(self.limit, remaining);
        let refused = match self.confinement {
            Some(_) => confine::refused(&run),
            None => Vec::new(),
        };
        for line in &refused {
            if self.tried.len() < 5 && !self.tried.contains(line) {
                self.tried.push(line.clone());
            }
        }
        self.events.emit(&LoopEvent::AgentFinished {
            iteration: number,
            exit: exit_text(&run, &allowance),
            seconds: run.elapsed.as_secs_f64(),
            usage: &run.usage,
            refused: &refused,
        });
        if let AgentExit::Interrupted(signal) = run.exit {
            self.events.clear_line();
            eprintln!(
                "itergate: interrupted: the agent was stopped; the branch is at {}, nothing of this iteration was committed or recorded",
                short(git::resolve_commit(repo, "HEAD").unwrap_or(before))
            );
            return Err(Failure::Interrupted(signal));
        }
        let agent = &self.options.agent;
        let tip = commit_iteration(
            &env.root,
            repo,
            before,
            number,
            agent,
            (&run, &allowance),
            &self.leftovers,
        )?;
        // A dependency the sandboxed agent named in a manifest: installed by the loop.
        if self.confinement.is_some() {
            for said in install::install_dependencies(&env.root, repo, (before, tip))? {
                if !self.options.quiet {
                    eprintln!("itergate loop: iteration {number}: {said}");
                }
            }
        }
        Ok(tip)
    }

    /// The iteration's commit judged as `itergate run` judges it; the hooks told; then
    /// another iteration, or the stop.
    fn judge(&mut self, iteration: u32, number: u32, tip: Oid) -> Result<Step, Failure> {
        let (env, options, repo) = (self.env, self.options, &self.repo);
        // The agent ran: what the checks execute is scanned again and compared with the
        // start's (`app::sealed`).
        env.sealed.rescan();
        self.events.phase(number, "checks");
        let store = task::open_store(env, repo)?;
        let current = current_task(env, store.repository(), None)?;
        let record = RecordOptions {
            progress: Progress::from_quiet(true),
            rescore: false,
        };
        task::record_commit(env, &store, &current, tip, record)?;
        self.leftovers = untracked(&env.root)?;
        let history = current.history(env, &store)?;
        let evaluation = current.evaluate(env, &store, &history)?;
        self.events.clear_line();
        let quiet = options.quiet || self.events.json;
        (self.terminal.report)(
            env,
            store.repository(),
            &current,
            &history,
            &evaluation,
            quiet,
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
        self.events.emit(&LoopEvent::Judged {
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
        let hooks = &env.config.agent_loop;
        run_hooks(env, "on_iteration", &hooks.on_iteration, &report_json);
        if quality
            .zip(self.previous_quality)
            .is_some_and(|(now, before)| now < before)
        {
            run_hooks(env, "on_regression", &hooks.on_regression, &report_json);
        }
        self.previous_quality = quality.or(self.previous_quality);
        self.max = self
            .max
            .max(decision.budget.max_iterations.saturating_add(1));
        // A test that failed earlier and now expects something else is a person's call,
        // not another round for the agent.
        let to_confirm = latest
            .filter(|_| recommendation == Recommendation::Iterate)
            .and_then(|r| {
                r.issues.iter().find(|i| {
                    i.severity == crate::model::Severity::Warning
                        && i.is(crate::model::FindingKind::ExpectationToConfirm)
                })
            })
            .map(|i| {
                let said = i.finding.split(": ").next().unwrap_or(&i.finding);
                format!("a person confirms the behaviour change: {said}")
            });
        if recommendation == Recommendation::Iterate && iteration < self.max && to_confirm.is_none()
        {
            return Ok(Step::Again(None));
        }
        let cause = to_confirm.as_deref().map_or(Cause::Decided, Cause::Confirm);
        let targets = (records.as_slice(), current.targets.as_slice());
        let mut stop = stop(
            env,
            repo,
            (options.restore_best, cause),
            targets,
            &evaluation,
            tip,
        )?;
        if !self.tried.is_empty() {
            // What the agent tried that the sandbox refused: a person should know.
            stop.summary.push_str(&format!(
                "The sandbox refused some of the agent's writes; its output said:\n{}\n",
                confine::quoted(&self.tried)
            ));
        }
        let at = (number, stop.best, Some(stop.commit));
        let said = self.stopped(
            stop.outcome,
            at,
            &stop.summary,
            decision.budget_stop_report.as_ref(),
        );
        run_hooks(env, "on_stop", &hooks.on_stop, &report_json);
        if stop.outcome == LoopOutcome::Accepted {
            end_task(env, repo, &self.branch)?;
        }
        said.map(|()| Step::Done)
    }

    /// Says how the loop ended (the `stopped` event, the hand-off on stderr): `Ok` for an
    /// accept, else the outcome's exit status as [`Failure::Decided`].
    fn stopped(
        &self,
        outcome: LoopOutcome,
        (iteration, best, commit): (u32, Option<u32>, Option<Oid>),
        summary: &str,
        budget_stop_report: Option<&crate::engine::BudgetStopReport>,
    ) -> Result<(), Failure> {
        announce(
            &self.events,
            self.options.quiet,
            outcome,
            (iteration, best, commit),
            summary,
            budget_stop_report,
        )
    }
}
