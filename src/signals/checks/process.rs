//! Running one check's command: its process group (killed whole on a timeout or an
//! interrupt), its output kept, and the last error line of a command that failed.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncReadExt;

use crate::config::Check;
use crate::signals::report;

use super::env::{passes_scrubbed, EnvPolicy};

/// Bytes of output kept for error messages.
pub(super) const TAIL_BYTES: usize = 2048;
/// Bytes of each output stream searched for diagnostics when a build fails.
pub(super) const DIAGNOSTIC_SCAN_BYTES: usize = 4 * 1024 * 1024;

/// The process groups of the checks running now, so an interrupt can stop them all.
#[derive(Clone, Default)]
pub(super) struct ProcessGroups(std::sync::Arc<std::sync::Mutex<Vec<i32>>>);

impl ProcessGroups {
    pub(super) fn add(&self, pid: Option<u32>) {
        if let (Some(pid), Ok(mut groups)) =
            (pid.and_then(|p| i32::try_from(p).ok()), self.0.lock())
        {
            groups.push(pid);
        }
    }

    pub(super) fn kill_all(&self) {
        if let Ok(groups) = self.0.lock() {
            for pid in groups.iter() {
                // Each check leads its own process group (pgid = pid).
                unsafe {
                    libc::kill(-pid, libc::SIGKILL);
                }
            }
        }
    }
}

/// Resolves when the process is asked to stop: SIGINT (Ctrl-C) or SIGTERM.
pub(crate) async fn interrupted() -> i32 {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut int), Ok(mut term)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        // No handler could be installed: never resolve, the default action applies.
        return std::future::pending().await;
    };
    tokio::select! {
        _ = int.recv() => libc::SIGINT,
        _ = term.recv() => libc::SIGTERM,
    }
}

/// What running the command produced.
pub(super) enum Execution {
    NotRun,
    Finished {
        exit_code: i32,
        stdout: Vec<u8>,
        stderr: Vec<u8>,
    },
    TimedOut {
        seconds: u64,
    },
    /// It could not be started or waited for: the environment's fault.
    Broken {
        message: String,
    },
}

pub(super) async fn execute(
    root: &Path,
    check: &Check,
    policy: EnvPolicy,
    (env, unset): (&[(String, String)], &[String]),
    groups: &ProcessGroups,
) -> Execution {
    let Some(run) = &check.run else {
        return Execution::NotRun;
    };
    let dir = match &check.workdir {
        Some(d) => root.join(d),
        None => root.to_path_buf(),
    };
    let mut command = tokio::process::Command::new("sh");
    if policy == EnvPolicy::Scrubbed {
        command.env_clear().envs(
            std::env::vars_os().filter(|(name, _)| name.to_str().is_some_and(passes_scrubbed)),
        );
    }
    for name in unset {
        command.env_remove(name);
    }
    command
        .arg("-c")
        .arg(run)
        .current_dir(&dir)
        .envs(&check.env)
        // What a scratch worktree needs wins over the check's own `env`: a check that sets
        // `CARGO_TARGET_DIR` would otherwise build the base where HEAD builds, at the same
        // time. The check's `PYTHONPATH` follows the checkout's import roots; its
        // `NODE_OPTIONS` come before the self-check's `--import`.
        .envs(env.iter().map(|(k, v)| match check.env.get(k) {
            Some(own) if k == "PYTHONPATH" => (k.clone(), format!("{v}:{own}")),
            Some(own) if k == "NODE_OPTIONS" => (k.clone(), format!("{own} {v}")),
            _ => (k.clone(), v.clone()),
        }))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = match command.spawn() {
        Ok(c) => c,
        Err(e) => {
            return Execution::Broken {
                message: format!("cannot start `{run}` in {}: {e}", dir.display()),
            }
        }
    };
    let pid = child.id();
    groups.add(pid);
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
        Ok((Ok(status), stdout, stderr)) => {
            // What it left running in its group ends with it.
            kill_group(pid);
            Execution::Finished {
                exit_code: status.code().unwrap_or(-1),
                stdout,
                stderr,
            }
        }
        Ok((Err(e), _, _)) => Execution::Broken {
            message: format!("waiting for `{run}`: {e}"),
        },
        Err(_) => {
            kill_group(pid);
            Execution::TimedOut {
                seconds: timeout.as_secs(),
            }
        }
    }
}

pub(super) fn kill_group(pid: Option<u32>) {
    if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
        // The command runs in its own process group (pgid = pid): stop all of it.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
}

/// The last lines of the output, stderr preferred: where a tool says what went wrong.
/// The last line of a tool's error output that says `error` (cargo-llvm-cov's
/// `error: ...`), without colour, cut to a line's length: why a report was not written.
pub(super) fn last_error_line(stderr: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(&stderr[stderr.len().saturating_sub(64 * 1024)..]);
    let line = text
        .lines()
        .map(|l| report::strip_ansi(l).trim().to_string())
        .rfind(|l| l.to_ascii_lowercase().contains("error"))?;
    Some(line.chars().take(300).collect())
}

pub(super) fn tail(stdout: &[u8], stderr: &[u8]) -> String {
    // Maven leaves only colour resets on stderr: what has no visible text says nothing.
    let says_nothing = |bytes: &[u8]| {
        let end = bytes.len().min(TAIL_BYTES);
        report::strip_ansi(&String::from_utf8_lossy(&bytes[bytes.len() - end..]))
            .trim()
            .is_empty()
    };
    let text = if says_nothing(stderr) { stdout } else { stderr };
    let start = text.len().saturating_sub(TAIL_BYTES);
    let s = String::from_utf8_lossy(&text[start..]);
    let s = report::strip_ansi(&s);
    s.lines()
        .rev()
        .take(20)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect::<Vec<_>>()
        .join("\n")
}

/// Exit statuses of `sh` for a command it could not find (127) or execute (126).
pub(super) const SHELL_NOT_FOUND: [i32; 2] = [126, 127];
