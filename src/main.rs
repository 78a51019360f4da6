use std::io::IsTerminal as _;
use std::process::ExitCode;

use clap::Parser;

use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

use itergate::cli::Cli;
use itergate::commands;

fn main() -> ExitCode {
    cache_git_objects();
    let cli = Cli::parse();
    let serving = matches!(cli.command, itergate::cli::Command::Serve(_));
    init_tracing(cli.global.verbose, cli.global.quiet, serving);
    match commands::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(itergate::app::Failure::Decided(code)) => ExitCode::from(code),
        Err(failure) => {
            eprintln!(
                "itergate: error: {}",
                without_libgit2_codes(&format!("{failure:#}"))
            );
            ExitCode::from(failure.exit_code())
        }
    }
}

/// libgit2 caches commits and trees of up to 4 KiB: a notes tree of some 60 notes is
/// larger, and every note read inflated it again. A branch's notes tree and long commit
/// messages fit in these.
fn cache_git_objects() {
    for (kind, size) in [
        (git2::ObjectType::Tree, 4 << 20),
        (git2::ObjectType::Commit, 256 << 10),
    ] {
        // SAFETY: libgit2's limits are globals written without a lock; no other thread
        // exists yet.
        let _ = unsafe { git2::opts::set_cache_object_limit(kind, size) };
    }
}

/// Warnings by default; the App (a service) logs what it does, with timestamps.
fn init_tracing(verbose: u8, quiet: bool, serving: bool) {
    let level = match (quiet, verbose) {
        (true, _) => "error",
        (false, 0) if serving => "info,sqlx=warn",
        (false, 0) => "warn",
        (false, 1) => "info",
        (false, 2) => "debug",
        _ => "trace",
    };
    // Directives by target (`info,itergate=debug`): a filter without regular expressions,
    // so no process pays for building them at start.
    let from_env = std::env::var("ITERGATE_LOG").ok();
    let targets: Targets = from_env
        .as_deref()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| level.parse().unwrap_or_default());
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    if serving {
        tracing_subscriber::registry()
            .with(layer)
            .with(targets)
            .init();
    } else {
        tracing_subscriber::registry()
            .with(layer.without_time())
            .with(targets)
            .init();
    }
    if let Some(value) = from_env.filter(|v| v.parse::<Targets>().is_err()) {
        tracing::warn!(
            "ITERGATE_LOG `{value}` is not a list of [target=]level directives; logging at {level}"
        );
    }
}

/// libgit2's messages end in `; class=Reference (4); code=NotFound (-3)`: internal codes a
/// person cannot act on.
fn without_libgit2_codes(message: &str) -> String {
    message
        .lines()
        .map(|line| match line.find("; class=") {
            Some(at) => &line[..at],
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}
