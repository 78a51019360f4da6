//! Running checks: each configured command runs concurrently (tokio) in its own process
//! group, with its environment, working directory and timeout; its report is read from a
//! file or from its standard output.
//!
//! A check that times out is killed with its whole process group and becomes a `Failed`
//! result carrying the tail of its output; so does one that cannot start or whose report is
//! missing or malformed. Nothing hangs and no result is lost. A stale report file is removed
//! before the command runs, so an old report is never read as a new one.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use tokio::io::AsyncReadExt;

use crate::config::Check;

use super::report::{self, ParseOptions, ReportFormat};
use super::score::{CheckOutcome, CheckResult};

/// Bytes of output kept for error messages.
const TAIL_BYTES: usize = 2048;

/// How progress is shown while checks run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// Spinners on a terminal, plain lines otherwise.
    Auto,
    Quiet,
}

/// Runs every check in `checks` from `root`, concurrently; results in name order.
pub fn run_all(
    root: &Path,
    checks: &BTreeMap<String, Check>,
    progress: Progress,
    keep_lines_for: &(dyn Fn(&str) -> bool + Sync),
) -> anyhow::Result<Vec<CheckOutcome>> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let display = Display::new(progress);
    let outputs = runtime.block_on(async {
        let tasks: Vec<_> = checks
            .iter()
            .map(|(name, check)| {
                let bar = display.start(name);
                let name = name.clone();
                let check = check.clone();
                let root = root.to_path_buf();
                tokio::spawn(async move {
                    let started = Instant::now();
                    let out = execute(&root, &check).await;
                    (name, check, out, started.elapsed(), bar)
                })
            })
            .collect();
        let mut done = Vec::new();
        for task in tasks {
            done.push(task.await);
        }
        done
    });
    let mut results = Vec::new();
    for joined in outputs {
        let (name, check, out, elapsed, bar) =
            joined.map_err(|e| anyhow::anyhow!("a check task failed: {e}"))?;
        let result = read_report(root, &check, out, keep_lines_for);
        display.finish(bar, &name, &result, elapsed);
        results.push(CheckOutcome {
            name,
            visibility: check.visibility,
            void_on_violation: check.void_on_violation,
            result,
        });
    }
    Ok(results)
}

/// What running the command produced.
enum Execution {
    NotRun,
    Finished {
        exit_code: i32,
        stdout: Vec<u8>,
        tail: String,
    },
    Failed {
        message: String,
        tail: String,
    },
}

fn report_path(root: &Path, check: &Check) -> Option<PathBuf> {
    let path = check.report.as_ref()?.path.as_ref()?;
    let base = match &check.workdir {
        Some(dir) => root.join(dir),
        None => root.to_path_buf(),
    };
    Some(base.join(path))
}

async fn execute(root: &Path, check: &Check) -> Execution {
    let Some(run) = &check.run else {
        return Execution::NotRun;
    };
    if let Some(path) = report_path(root, check) {
        // A stale report must never pass for this run's.
        let _ = std::fs::remove_file(path);
    }
    let dir = match &check.workdir {
        Some(d) => root.join(d),
        None => root.to_path_buf(),
    };
    let mut command = tokio::process::Command::new("sh");
    command
        .arg("-c")
        .arg(run)
        .current_dir(&dir)
        .envs(&check.env)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = match command.spawn() {
        Ok(c) => c,
        Err(e) => {
            return Execution::Failed {
                message: format!("cannot start `{run}` in {}: {e}", dir.display()),
                tail: String::new(),
            }
        }
    };
    let pid = child.id();
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let read_out = async move {
        let mut buf = Vec::new();
        if let Some(s) = stdout.as_mut() {
            let _ = s.read_to_end(&mut buf).await;
        }
        buf
    };
    let read_err = async move {
        let mut buf = Vec::new();
        if let Some(s) = stderr.as_mut() {
            let _ = s.read_to_end(&mut buf).await;
        }
        buf
    };
    let timeout = Duration::from_secs(check.timeout.max(1));
    let work = async { tokio::join!(child.wait(), read_out, read_err) };
    match tokio::time::timeout(timeout, work).await {
        Ok((status, out, err)) => {
            let tail = tail(&out, &err);
            match status {
                Ok(s) => Execution::Finished {
                    exit_code: s.code().unwrap_or(-1),
                    stdout: out,
                    tail,
                },
                Err(e) => Execution::Failed {
                    message: format!("waiting for `{run}`: {e}"),
                    tail,
                },
            }
        }
        Err(_) => {
            kill_group(pid);
            Execution::Failed {
                message: format!("timed out after {}s and was stopped", timeout.as_secs()),
                tail: String::new(),
            }
        }
    }
}

fn kill_group(pid: Option<u32>) {
    if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
        // The command runs in its own process group (pgid = pid): stop all of it.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
}

fn tail(stdout: &[u8], stderr: &[u8]) -> String {
    let text = if stderr.is_empty() { stdout } else { stderr };
    let start = text.len().saturating_sub(TAIL_BYTES);
    let s = String::from_utf8_lossy(&text[start..]);
    s.lines()
        .rev()
        .take(20)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect::<Vec<_>>()
        .join("\n")
}

fn read_report(
    root: &Path,
    check: &Check,
    out: Execution,
    keep_lines_for: &(dyn Fn(&str) -> bool + Sync),
) -> CheckResult {
    let (exit_code, stdout, tail) = match out {
        Execution::Failed { message, tail } => return CheckResult::Failed { message, tail },
        Execution::NotRun => (None, Vec::new(), String::new()),
        Execution::Finished {
            exit_code,
            stdout,
            tail,
        } => (Some(exit_code), stdout, tail),
    };
    let Some(source) = &check.report else {
        return match exit_code {
            Some(code) => CheckResult::Exited {
                exit_code: code,
                tail,
            },
            None => CheckResult::Failed {
                message: "the check has neither `run` nor `report`".into(),
                tail,
            },
        };
    };
    let format: ReportFormat = match source.format.parse() {
        Ok(f) => f,
        Err(e) => {
            return CheckResult::Failed {
                message: e.to_string(),
                tail,
            }
        }
    };
    let keep = |p: &str| keep_lines_for(p);
    let opts = ParseOptions {
        keep_lines_for: Some(&keep),
    };
    let parsed = match report_path(root, check) {
        Some(path) if path.exists() => report::parse_file(format, &path, &opts),
        Some(path) => {
            return CheckResult::Failed {
                message: format!("the report {} was not written", path.display()),
                tail,
            }
        }
        None => report::parse(format, stdout.as_slice(), "standard output", &opts),
    };
    match parsed {
        Ok(report) => CheckResult::Report { report, exit_code },
        Err(e) => CheckResult::Failed {
            message: e.to_string(),
            tail,
        },
    }
}

struct Display {
    bars: Option<MultiProgress>,
    quiet: bool,
}

impl Display {
    fn new(progress: Progress) -> Display {
        let quiet = progress == Progress::Quiet;
        let bars = (!quiet && std::io::stderr().is_terminal()).then(MultiProgress::new);
        Display { bars, quiet }
    }

    fn start(&self, name: &str) -> Option<ProgressBar> {
        match &self.bars {
            Some(m) => {
                let bar = m.add(ProgressBar::new_spinner());
                if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} {elapsed}") {
                    bar.set_style(style);
                }
                bar.set_message(format!("check {name}"));
                bar.enable_steady_tick(Duration::from_millis(120));
                Some(bar)
            }
            None => {
                if !self.quiet {
                    eprintln!("itergate: check {name}: running");
                }
                None
            }
        }
    }

    fn finish(
        &self,
        bar: Option<ProgressBar>,
        name: &str,
        result: &CheckResult,
        elapsed: Duration,
    ) {
        let verdict = match result {
            CheckResult::Failed { message, .. } => format!("error: {message}"),
            CheckResult::Exited { exit_code: 0, .. } => "passed".into(),
            CheckResult::Exited { exit_code, .. } => format!("failed (exit status {exit_code})"),
            CheckResult::Report { .. } => "report read".into(),
        };
        let line = format!("check {name}: {verdict} in {:.1}s", elapsed.as_secs_f64());
        match bar {
            Some(b) => b.finish_with_message(line),
            None if !self.quiet => eprintln!("itergate: {line}"),
            None => {}
        }
    }
}
