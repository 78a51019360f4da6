//! `itergate loop`: its arguments parsed (the agent, the task, the flags that tighten the
//! base's budgets) and the flow run by the application layer (`app::agent_loop`), with this
//! command's report and prompt for what it decides.

use crate::agent::AgentCommand;
use crate::app::agent_loop::{self, LoopOptions, Terminal};
use crate::cli::{LoopArgs, OnExhaust, OutputFormat};

use super::report::{render_prompt, report};
use super::{user, Env, Failure};

pub fn agent_loop(env: &Env, args: &LoopArgs, quiet: bool) -> Result<(), Failure> {
    let agent =
        AgentCommand::parse(&args.agent, &split_args(args.agent_args.as_deref())?).map_err(user)?;
    let env = &tighten(env, args)?;
    let options = LoopOptions {
        agent,
        task_text: task_text(args)?,
        entry: args.entry.clone(),
        spec: args.spec.clone(),
        skip_context: args.skip_context,
        restore_best: args.on_exhaust == OnExhaust::Best,
        iteration_timeout: args.iteration_timeout,
        json: args.format == OutputFormat::Json,
        ignore_start_failures: args.ignore_start_failures,
        new_task: args.new_task,
        attempts: args.attempts,
        dry_run: args.dry_run,
        quiet,
        sandbox: args.sandbox.map(|mode| match mode {
            crate::cli::SandboxArg::WorkspaceWrite => crate::config::SandboxMode::WorkspaceWrite,
            crate::cli::SandboxArg::Off => crate::config::SandboxMode::Off,
        }),
    };
    let terminal = Terminal {
        report,
        revision_prompt: render_prompt,
        print: super::print,
    };
    agent_loop::run(env, &options, &terminal)
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

#[cfg(test)]
mod args_tests {
    use super::split_args;

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
