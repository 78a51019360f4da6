//! The commands behind the CLI. Each returns `Failure::User` for what a person can fix
//! (exit status 2) and `Failure::Internal` for everything else (exit status 1).

mod agent_loop;
mod ci;
mod context;
mod decide;
mod decisions;
mod hook;
mod report;
mod run;
mod score;

use std::io::Write;

use crate::cli::{Cli, Command};

pub use crate::app::{user, Env, Failure};

/// Writes `text` to stdout; a closed pipe (`| head`) is not an error.
fn print(text: &str) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|_| out.flush())
        .or_else(|e| match e.kind() {
            // A closed pipe (`| head`) is not an error worth reporting.
            std::io::ErrorKind::BrokenPipe => Ok(()),
            _ => Err(e),
        })
        .map_err(|e| Failure::Internal(e.into()))
}

pub fn run(cli: Cli) -> Result<(), Failure> {
    // The App serves many repositories and reads none from the disk.
    if let Command::Serve(args) = &cli.command {
        return crate::serve::serve(&args.settings());
    }
    // The agent's sandbox: entered in a fresh process, which then becomes the agent.
    if let Command::SandboxExec(args) = &cli.command {
        let policy = crate::agent::sandbox::Policy {
            writable: args.write.clone(),
            read_only: args.read_only.clone(),
            hidden: args.hide.clone(),
            tmp: args.tmp.clone(),
            cache: args.cache.clone(),
        };
        let error = crate::agent::sandbox::exec(&policy, &args.command);
        eprintln!("itergate: sandbox: {error}");
        std::process::exit(126);
    }
    // Every line a command logs names it (`itergate -v run`: `command{name=run}: ...`).
    let span = tracing::info_span!("command", name = cli.command.name());
    let _entered = span.enter();
    // What needs no configuration works with a broken one: `config --default` and `init
    // --force` are what a user reaches for to fix it.
    match &cli.command {
        Command::Completions { shell } => return completions(*shell),
        Command::Man => return man(),
        Command::Config(args) if args.default => {
            return print(crate::config::DEFAULT_CONFIG_YAML);
        }
        Command::Config(args) if args.schema => return print(&crate::config::json_schema()),
        Command::Config(args) if args.reference => {
            return print(&crate::config::reference_markdown());
        }
        Command::Init(args) => {
            let env = Env::load_without_config(&cli.global.settings())?;
            return score::init(&env, args, cli.global.quiet);
        }
        _ => {}
    }
    let settings = cli.global.settings();
    let env = match Env::load(&settings) {
        Ok(env) => env,
        // A broken configuration must not make pushing impossible: fail open, loudly.
        Err(e)
            if matches!(
                cli.command,
                Command::Hook(crate::cli::HookCommand::PrePush { .. })
            ) =>
        {
            return hook::fail(crate::config::OnError::Allow, &e);
        }
        Err(e) => return Err(e),
    };
    // Commands that judge the current branch do it with the base's configuration.
    let judges_the_branch = matches!(
        cli.command,
        Command::Score(_)
            | Command::Run(_)
            | Command::Loop(_)
            | Command::Status(_)
            | Command::Prompt
            | Command::Accept(_)
            | Command::Escalate(_)
            | Command::Adjust(_)
            | Command::Feedback(_)
            | Command::Budget(_)
            | Command::Context(_)
            | Command::Hook(crate::cli::HookCommand::PrePush { .. })
    );
    let env = if judges_the_branch {
        match env.locked_to_base(&settings, cli.global.quiet) {
            Ok(env) => env,
            Err(e) if matches!(cli.command, Command::Hook(_)) => {
                return hook::fail(crate::config::OnError::Allow, &e);
            }
            Err(e) => return Err(e),
        }
    } else {
        env
    };
    match cli.command {
        Command::Decide(args) => decide::decide(&env, &args),
        Command::Analytics(args) => decide::analytics(&env, &args),
        Command::Score(args) => score::score(&env, &args, cli.global.quiet),
        Command::Init(args) => score::init(&env, &args, cli.global.quiet),
        Command::Run(args) => run::run(&env, &args, cli.global.quiet),
        Command::Loop(args) => agent_loop::agent_loop(&env, &args, cli.global.quiet),
        Command::Status(output) => run::status(&env, &output),
        Command::Prompt => run::prompt(&env),
        Command::Accept(args) => decisions::accept(&env, &args, cli.global.quiet),
        Command::Escalate(args) => decisions::escalate(&env, &args, cli.global.quiet),
        Command::Adjust(args) => decisions::adjust(&env, &args, cli.global.quiet),
        Command::Feedback(args) => decisions::feedback(&env, &args, cli.global.quiet),
        Command::Budget(args) => decisions::budget(&env, &args, cli.global.quiet),
        Command::Context(args) => context::context(&env, &args, cli.global.quiet),
        Command::Hook(command) => hook::hook(&env, command, cli.global.quiet),
        Command::Notes(command) => run::notes_command(&env, &command),
        Command::Completions { shell } => completions(shell),
        Command::Man => man(),
        Command::Config(args) => print(&if args.default {
            crate::config::DEFAULT_CONFIG_YAML.to_string()
        } else {
            serde_norway::to_string(&env.config).map_err(|e| Failure::Internal(e.into()))?
        }),
        Command::Ci(args) => ci::ci(&env, &args, cli.global.quiet),
        Command::Serve(args) => crate::serve::serve(&args.settings()),
        Command::SandboxExec(_) => unreachable!("entered before any configuration"),
    }
}

/// Whether `gate` stops a push or a CI step on this recommendation.
pub fn gate_blocks(
    gate: crate::config::Gate,
    recommendation: crate::engine::Recommendation,
) -> bool {
    use crate::config::Gate;
    use crate::engine::Recommendation;
    match gate {
        Gate::Warn => false,
        Gate::BlockOnEscalate => matches!(
            recommendation,
            Recommendation::Escalate | Recommendation::Abort
        ),
        Gate::BlockOnIterate => recommendation != Recommendation::Accept,
    }
}

fn completions(shell: clap_complete::Shell) -> Result<(), Failure> {
    let mut command = <Cli as clap::CommandFactory>::command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut command, "itergate", &mut out);
    print(&String::from_utf8_lossy(&out))
}

fn man() -> Result<(), Failure> {
    let mut out = Vec::new();
    clap_mangen::Man::new(<Cli as clap::CommandFactory>::command())
        .render(&mut out)
        .map_err(|e| Failure::Internal(e.into()))?;
    print(&String::from_utf8_lossy(&out))
}
