//! What the loop tells the world as it goes: the events `--format json` streams (one JSON
//! object per line), the phase line on a terminal, and the hooks (`loop.on_iteration`,
//! `on_regression`, `on_stop`) given the decision report.

use std::io::IsTerminal as _;

use serde::Serialize;

use crate::agent::Usage;
use crate::app::{Env, Failure};
use crate::engine::BudgetStopReport;

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
        /// What the sandbox refused it, as its own output said (a few lines at most).
        refused: &'a [String],
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

/// Runs a hook's commands with the decision report on stdin; a failure is reported only.
pub(super) fn run_hooks(env: &Env, point: &str, commands: &[String], report: &[u8]) {
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
pub(super) struct Events {
    pub(super) json: bool,
    quiet: bool,
    live: bool,
    /// Text on stdout.
    print: fn(&str) -> Result<(), Failure>,
}

impl Events {
    pub(super) fn new(json: bool, quiet: bool, print: fn(&str) -> Result<(), Failure>) -> Events {
        Events {
            json,
            quiet,
            live: !quiet && !json && std::io::stderr().is_terminal(),
            print,
        }
    }

    pub(super) fn emit(&self, event: &LoopEvent) {
        if self.json {
            if let Ok(line) = serde_json::to_string(event) {
                let _ = (self.print)(&(line + "\n"));
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
                refused,
                ..
            } => {
                self.clear_line();
                if !self.quiet {
                    eprintln!(
                        "itergate loop: iteration {iteration}: agent {exit} after {seconds:.1}s"
                    );
                    if !refused.is_empty() {
                        eprintln!(
                            "itergate loop: iteration {iteration}: the sandbox refused the agent's writes; its output said:\n{}",
                            super::confine::quoted(refused)
                        );
                    }
                }
            }
            _ => {}
        }
    }

    pub(super) fn phase(&self, iteration: u32, what: &str) {
        if self.live {
            let place = match iteration {
                0 => String::new(),
                n => format!("iteration {n}: "),
            };
            eprint!("\r\x1b[2Kitergate loop: {place}{what}…");
        }
    }

    pub(super) fn clear_line(&self) {
        if self.live {
            eprint!("\r\x1b[2K");
        }
    }
}
