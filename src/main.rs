use std::process::ExitCode;

use clap::Parser;
use tracing_subscriber::EnvFilter;

use itergate::cli::Cli;
use itergate::commands;

fn main() -> ExitCode {
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
    let filter = EnvFilter::try_from_env("ITERGATE_LOG").unwrap_or_else(|_| EnvFilter::new(level));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    if serving {
        use std::io::IsTerminal as _;
        builder.with_ansi(std::io::stderr().is_terminal()).init();
    } else {
        use std::io::IsTerminal as _;
        builder
            .with_ansi(std::io::stderr().is_terminal())
            .without_time()
            .init();
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
