//! One run of an agent: a fresh process in its own process group, the prompt handed over
//! as its preset says, its output kept in files (it can be large), and a wall clock that
//! ends it (SIGTERM to the group, SIGKILL after a grace period). Ctrl-C or SIGTERM to
//! itergate stops the agent the same way and says so. An agent that streams its usage
//! (JSON lines: Claude Code's `stream-json`, Codex's `exec --json`, opencode's `run --format
//! json`) is stopped the same way once what it reports reaches the run's [`SpendCap`]; one
//! that reports at the end (Gemini's `json`) is held to the budget after its run.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::AsyncWriteExt as _;

use super::preset::{AgentCommand, PromptInput};
use super::sandbox::Policy;
use super::usage::{read_text, read_usage, Usage, UsageFormat};

/// How long an agent asked to stop may take before it is killed.
const GRACE: Duration = Duration::from_secs(5);
/// The most of an agent's stdout read back for its usage.
const MAX_OUTPUT_READ: u64 = 16 * 1024 * 1024;

/// What one run may still spend (the budgets' remainder); `None`: no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SpendCap {
    pub tokens: Option<u64>,
    pub usd: Option<f64>,
}

impl SpendCap {
    fn is_set(&self) -> bool {
        self.tokens.is_some() || self.usd.is_some()
    }

    /// What `usage` overspends, if anything.
    fn overspent(&self, usage: &Usage) -> Option<Overspend> {
        if let (Some(cap), Some(used)) = (self.tokens, usage.total_tokens) {
            if used >= cap {
                return Some(Overspend::Tokens { used, cap });
            }
        }
        if let (Some(cap), Some(used)) = (self.usd, usage.cost_usd) {
            if used >= cap {
                let cents = |usd: f64| (usd * 100.0).round() as u64;
                return Some(Overspend::Cents {
                    used: cents(used),
                    cap: cents(cap),
                });
            }
        }
        None
    }
}

/// The budget a streamed usage reached, with what it reported then.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overspend {
    Tokens { used: u64, cap: u64 },
    Cents { used: u64, cap: u64 },
}

/// How the agent's process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentExit {
    /// It exited by itself with this status (a signal counts as -1).
    Exited(i32),
    /// The wall clock ran out; it was stopped.
    TimedOut,
    /// itergate was asked to stop (the signal); the agent was stopped.
    Interrupted(i32),
    /// Its streamed usage reached what the run may spend; it was stopped.
    OverBudget(Overspend),
}

/// One run's outcome.
#[derive(Debug, Clone)]
pub struct AgentRun {
    pub exit: AgentExit,
    pub elapsed: Duration,
    pub usage: Usage,
    /// What it said in words (its final message, for the JSON formats).
    pub text: String,
    pub stdout: PathBuf,
    pub stderr: PathBuf,
}

/// Runs `agent` in `dir` with `prompt`, its files in `logs`, inside `sandbox` when there is
/// one, for at most `limit` and, when its output streams usage, at most `cap`; `tick` is
/// called every second with the time it has run.
pub fn run_agent(
    agent: &AgentCommand,
    prompt: &str,
    (dir, logs): (&Path, &Path),
    sandbox: Option<&Policy>,
    (limit, cap): (Duration, SpendCap),
    tick: &dyn Fn(Duration),
) -> std::io::Result<AgentRun> {
    std::fs::create_dir_all(logs)?;
    let prompt_file = logs.join("prompt.md");
    let usage_file = logs.join("usage.jsonl");
    std::fs::write(&prompt_file, prompt)?;
    let _ = std::fs::remove_file(&usage_file);
    let (stdout, stderr) = (logs.join("stdout.txt"), logs.join("stderr.txt"));
    let mut argv = agent.argv(prompt, &prompt_file, &usage_file);
    if let Some(policy) = sandbox {
        argv = policy.wrap(&argv)?;
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let started = Instant::now();
    let watch = (agent.usage.streams() && cap.is_set()).then_some((agent.usage, cap));
    let exit = runtime.block_on(spawn_and_wait(
        &argv,
        agent.prompt,
        prompt,
        dir,
        (&stdout, &stderr),
        (limit, watch),
        tick,
    ))?;
    let elapsed = started.elapsed();
    let printed = read_prefix(&stdout).unwrap_or_default();
    let usage = match agent.usage {
        UsageFormat::AiderAnalytics => {
            read_usage(agent.usage, &read_prefix(&usage_file).unwrap_or_default())
        }
        format => read_usage(format, &printed),
    };
    Ok(AgentRun {
        exit,
        elapsed,
        usage,
        text: read_text(agent.usage, &printed),
        stdout,
        stderr,
    })
}

async fn spawn_and_wait(
    argv: &[String],
    input: PromptInput,
    prompt: &str,
    dir: &Path,
    (stdout, stderr): (&Path, &Path),
    (limit, watch): (Duration, Option<(UsageFormat, SpendCap)>),
    tick: &dyn Fn(Duration),
) -> std::io::Result<AgentExit> {
    let (program, args) = argv
        .split_first()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "an empty command"))?;
    let mut command = tokio::process::Command::new(program);
    command
        .args(args)
        .current_dir(dir)
        .stdin(if input == PromptInput::Stdin {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(std::fs::File::create(stdout)?)
        .stderr(std::fs::File::create(stderr)?)
        .process_group(0)
        .kill_on_drop(true);
    let mut child = command
        .spawn()
        .map_err(|e| std::io::Error::new(e.kind(), format!("cannot start `{program}`: {e}")))?;
    let group = child.id().and_then(|p| i32::try_from(p).ok());
    if let Some(mut stdin) = child.stdin.take() {
        // An agent that does not read its stdin is not an error.
        let _ = stdin.write_all(prompt.as_bytes()).await;
        drop(stdin);
    }
    let started = Instant::now();
    // Every second: the progress line, and what a streaming agent has reported so far.
    let ticking = async {
        let mut every = tokio::time::interval(Duration::from_secs(1));
        let mut read = 0u64;
        loop {
            every.tick().await;
            tick(started.elapsed());
            let Some((format, cap)) = watch else { continue };
            let size = std::fs::metadata(stdout).map_or(0, |m| m.len());
            if size == read {
                continue;
            }
            read = size;
            let usage = read_usage(format, &read_prefix(stdout).unwrap_or_default());
            if let Some(over) = cap.overspent(&usage) {
                return over;
            }
        }
    };
    let ended = tokio::select! {
        status = child.wait() => return Ok(AgentExit::Exited(status?.code().unwrap_or(-1))),
        _ = tokio::time::sleep(limit) => AgentExit::TimedOut,
        signal = crate::signals::checks::interrupted() => AgentExit::Interrupted(signal),
        over = ticking => AgentExit::OverBudget(over),
    };
    signal_group(group, libc::SIGTERM);
    if tokio::time::timeout(GRACE, child.wait()).await.is_err() {
        signal_group(group, libc::SIGKILL);
        let _ = child.wait().await;
    }
    // What the agent started in its group and left behind goes too.
    signal_group(group, libc::SIGKILL);
    Ok(ended)
}

fn signal_group(group: Option<i32>, signal: i32) {
    if let Some(pid) = group {
        // The agent leads its own process group (pgid = pid).
        unsafe {
            libc::kill(-pid, signal);
        }
    }
}

fn read_prefix(path: &Path) -> std::io::Result<String> {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(MAX_OUTPUT_READ)
        .read_to_end(&mut bytes)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}
