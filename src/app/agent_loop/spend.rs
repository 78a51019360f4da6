//! What an agent run may spend: the per-run limit and the loop's wall clock (the smaller
//! one, and which it was), the token and dollar caps left of the budgets, and how a run
//! that hit one is described.

use std::time::{Duration, Instant};

use crate::agent::process::{Overspend, SpendCap};
use crate::agent::{AgentExit, AgentRun, Usage};
use crate::app::Env;

use super::LoopOptions;

/// What the next run may spend: the budgets less what the task's iterations and the
/// context rounds reported (enforced during the run where the agent streams its usage).
pub(super) fn spend_cap(
    env: &Env,
    records: &[crate::model::IterationRecord],
    extra: &Usage,
) -> SpendCap {
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

/// How the run ended, with the agent's own word that it failed (an error result, a failed
/// turn), without control characters.
pub(super) fn exit_text(run: &AgentRun, allowance: &Allowance) -> String {
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
pub(super) struct Allowance {
    time: Duration,
    whole_loop: bool,
}

impl Allowance {
    /// The smaller of the per-run limit and what is left of the loop's wall clock.
    pub(super) fn of(per_run: Duration, loop_left: Duration) -> Allowance {
        Allowance {
            time: per_run.min(loop_left),
            whole_loop: loop_left < per_run,
        }
    }
}

pub(super) fn minutes(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

/// How long one agent run may take: `loop.iteration_minutes` of the base's configuration,
/// which `--iteration-timeout` can only shorten.
pub(super) fn per_run_limit(env: &Env, options: &LoopOptions) -> Duration {
    let base = Duration::from_secs(60 * env.config.agent_loop.iteration_minutes.max(1));
    options
        .iteration_timeout
        .map_or(base, |flag| flag.min(base))
}

/// The loop's wall clock (`budget_limits.wall_clock_minutes`) has run out.
pub(super) fn clock_spent(env: &Env, started: Instant) -> bool {
    env.config
        .stopping_criteria
        .budget_limits
        .wall_clock_minutes
        .is_some_and(|m| started.elapsed() >= Duration::from_secs(m.saturating_mul(60)))
}

/// What is left of `budget_limits.wall_clock_minutes` since the loop started.
pub(super) fn total_remaining(env: &Env, started: Instant) -> Duration {
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

#[cfg(test)]
mod tests {
    use super::Allowance;
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
}
