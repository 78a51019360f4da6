//! Running checks: each configured command runs concurrently (tokio) in its own process
//! group, with its environment, working directory and timeout; its report is read from a
//! file or from its standard output.
//!
//! What a check produced is either an observation of the work or an infrastructure
//! failure, and the two never mix:
//! - a report, an exit status (a check without a report), a build that failed before the
//!   report was written (the compiler's diagnostics, read from the output), or a timeout
//!   are observations of the tree — they are scored and cached;
//! - a command that cannot start or is not found (exit 126/127), a report that was not
//!   written or cannot be read while the output names no error of the code, are failures
//!   of the environment ([`CheckError`]) — never a score, never recorded.
//!
//! A check that times out is killed with its whole process group. A stale report file is
//! removed before the command runs, so an old report is never read as a new one.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use tokio::io::AsyncReadExt;

use crate::config::{Check, ReportSource};

use super::diagnostics;
use super::observation::{CheckError, CheckOutcome, CheckResult};
use super::report::{self, ParseOptions};
use super::tree_file;

/// Bytes of output kept for error messages.
const TAIL_BYTES: usize = 2048;
/// Bytes of each output stream searched for diagnostics when a build fails.
const DIAGNOSTIC_SCAN_BYTES: usize = 4 * 1024 * 1024;

/// How progress is shown while checks run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// Spinners on a terminal, plain lines otherwise.
    Auto,
    Quiet,
}

impl Progress {
    pub fn from_quiet(quiet: bool) -> Progress {
        if quiet {
            Progress::Quiet
        } else {
            Progress::Auto
        }
    }
}

/// What a check's process inherits from itergate's environment.
///
/// A check runs the code under review. Locally (the hook, `run`, `score`) that is the user's
/// own code in the user's own shell, so it inherits everything. In CI (`itergate ci`) it may
/// be a pull request's code, and the job's environment holds credentials and the files
/// through which a step speaks to the runner (`GITHUB_OUTPUT`, `GITHUB_ENV`): the check then
/// gets only an allow-listed environment, and never a variable whose name says it is a
/// credential.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EnvPolicy {
    /// The whole environment of the itergate process.
    #[default]
    Inherit,
    /// Only [`passes_scrubbed`] variables, then the check's own `env`.
    Scrubbed,
}

/// Variables a check keeps under [`EnvPolicy::Scrubbed`]: what toolchains need to find
/// themselves and the runner's description of the machine.
const SCRUBBED_ALLOW_EXACT: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "TERM",
    "TZ",
    "TMPDIR",
    "TEMP",
    "TMP",
    "HOSTNAME",
    "CI",
    "NO_COLOR",
    "FORCE_COLOR",
    "CLICOLOR",
    "LD_LIBRARY_PATH",
    "PKG_CONFIG_PATH",
    "JAVA_HOME",
    "GOPATH",
    "GOROOT",
    "GOCACHE",
    "GOFLAGS",
    "VIRTUAL_ENV",
    "CONDA",
    "pythonLocation",
    "ImageOS",
    "ImageVersion",
    "RUNNER_OS",
    "RUNNER_ARCH",
    "RUNNER_TEMP",
    "RUNNER_TOOL_CACHE",
    "GITHUB_ACTIONS",
    "GITHUB_WORKSPACE",
    "GITHUB_REPOSITORY",
    "GITHUB_SHA",
    "GITHUB_REF",
    "GITHUB_EVENT_NAME",
];
/// Prefixes of toolchain variables a check keeps under [`EnvPolicy::Scrubbed`].
const SCRUBBED_ALLOW_PREFIXES: &[&str] = &[
    "LC_",
    "XDG_",
    "CARGO_",
    "RUSTUP_",
    "RUSTFLAGS",
    "RUSTDOCFLAGS",
    "RUSTC",
    "RUST_",
    "PYTHON",
    "PIP_",
    "UV_",
    "NODE_",
    "NPM_CONFIG_",
    "JAVA_",
    "GRADLE_",
    "MAVEN_",
    "DOTNET_",
];
/// Words that make a variable a credential, whatever the allow-list says
/// (`CARGO_REGISTRY_TOKEN`, `NPM_CONFIG__AUTH`, `PIP_INDEX_PASSWORD`).
const CREDENTIAL_WORDS: &[&str] = &[
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "CREDENTIAL",
    "PRIVATE",
    "AUTH",
    "_KEY",
    "APIKEY",
];

/// Whether a variable of itergate's environment reaches a check under
/// [`EnvPolicy::Scrubbed`]. `GITHUB_TOKEN`, `ACTIONS_*` (`ACTIONS_RUNTIME_TOKEN`,
/// `ACTIONS_ID_TOKEN_REQUEST_*`), `GITHUB_OUTPUT`, `GITHUB_ENV`, `GITHUB_PATH`,
/// `GITHUB_STATE`, `GITHUB_STEP_SUMMARY` and `INPUT_*` are not on the allow-list.
pub fn passes_scrubbed(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    if CREDENTIAL_WORDS.iter().any(|w| upper.contains(w)) {
        return false;
    }
    SCRUBBED_ALLOW_EXACT.contains(&name)
        || SCRUBBED_ALLOW_PREFIXES.iter().any(|p| name.starts_with(p))
}

/// Where and how a set of checks runs.
pub struct RunOptions<'a> {
    pub root: &'a Path,
    /// The slots check commands take to run (`--jobs`): shared by every tree checked at once.
    pub jobs: &'a Jobs,
    pub progress: Progress,
    /// What the checks inherit from itergate's environment.
    pub env_policy: EnvPolicy,
    /// Environment added to every check (e.g. a scratch worktree's own build directory).
    pub env: &'a [(String, String)],
    /// Shown with each progress line (`base 1a2b3c4`), so runs of several commits are told apart.
    pub label: Option<&'a str>,
}

/// How many check commands may run at once in this process (`--jobs`, default the number
/// of cores): the base's checks and HEAD's take their slots from the same pool.
#[derive(Debug, Clone)]
pub struct Jobs {
    count: usize,
    slots: std::sync::Arc<tokio::sync::Semaphore>,
}

impl Jobs {
    pub fn new(count: usize) -> Jobs {
        let count = count.max(1);
        Jobs {
            count,
            slots: std::sync::Arc::new(tokio::sync::Semaphore::new(count)),
        }
    }

    /// One per core.
    pub fn per_core() -> Jobs {
        Jobs::new(std::thread::available_parallelism().map_or(1, usize::from))
    }

    pub fn count(&self) -> usize {
        self.count
    }
}

impl Default for Jobs {
    fn default() -> Jobs {
        Jobs::per_core()
    }
}

/// Runs every check in `checks` concurrently; results in name order. Report coverage keeps
/// every file's lines (the cache must not depend on which base the change is compared with).
pub fn run_all(
    options: &RunOptions,
    checks: &BTreeMap<String, Check>,
) -> anyhow::Result<Vec<Result<CheckOutcome, CheckError>>> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let display = Display::new(options.progress, options.label);
    let root = options.root;
    let groups = ProcessGroups::default();
    // A stale report must never pass for this run's: every check's reports are removed
    // before any check starts (a check that `needs` another may read what that one wrote).
    // One outside the work tree is neither removed nor read.
    for (_, check) in checks.iter().filter(|(_, c)| c.run.is_some()) {
        for path in check
            .report
            .iter()
            .filter_map(|r| report_path(root, check, r))
        {
            if is_pattern(&path) || path.is_dir() {
                // Every file a pattern names: a test class gone since must not be read.
                for file in report_files(&path).map(|(_, f)| f).unwrap_or_default() {
                    let _ = tree_file::remove_in_tree(root, &file);
                }
            } else {
                let _ = tree_file::remove_in_tree(root, &path);
            }
        }
    }
    // Each check says when its command finished; a check with `needs` waits for those.
    let finished: BTreeMap<&str, tokio::sync::watch::Sender<bool>> = checks
        .keys()
        .map(|name| (name.as_str(), tokio::sync::watch::channel(false).0))
        .collect();
    let outputs = runtime.block_on(async {
        let tasks: Vec<_> = checks
            .iter()
            .map(|(name, check)| {
                let bar = display.start(name);
                let name = name.clone();
                let check = check.clone();
                let root = root.to_path_buf();
                let env = options.env.to_vec();
                let policy = options.env_policy;
                let groups = groups.clone();
                let waits: Vec<_> = check
                    .needs
                    .iter()
                    .filter_map(|n| finished.get(n.as_str()).map(|s| s.subscribe()))
                    .collect();
                let done = finished.get(name.as_str()).cloned();
                let slots = options.jobs.slots.clone();
                tokio::spawn(async move {
                    for mut wait in waits {
                        let _ = wait.wait_for(|finished| *finished).await;
                    }
                    // The semaphore is never closed: a permit always comes.
                    let _slot = slots.acquire_owned().await.ok();
                    let started = Instant::now();
                    let out = execute(&root, &check, policy, &env, &groups).await;
                    if let Some(done) = done {
                        done.send_replace(true);
                    }
                    (name, check, out, started.elapsed(), bar)
                })
            })
            .collect();
        let all = async {
            let mut done = Vec::new();
            for task in tasks {
                done.push(task.await);
            }
            done
        };
        tokio::select! {
            done = all => Ok(done),
            signal = interrupted() => Err(signal),
        }
    });
    let outputs = match outputs {
        Ok(outputs) => outputs,
        Err(signal) => {
            // Stop every check's whole process group before anything is cleaned up.
            groups.kill_all();
            drop(runtime);
            return Err(Interrupted { signal }.into());
        }
    };
    let mut results = Vec::new();
    for joined in outputs {
        let (name, check, out, elapsed, bar) =
            joined.map_err(|e| anyhow::anyhow!("a check task failed: {e}"))?;
        let names = check.report_names(&name);
        let (indices, read): (Vec<usize>, Vec<Result<CheckResult, CheckError>>) =
            read_reports(root, &check, out)
                .into_iter()
                .map(|(index, result)| {
                    let result = result.map_err(|(message, tail)| CheckError {
                        check: name.clone(),
                        command: check.run.clone(),
                        message,
                        tail,
                    });
                    (index, result)
                })
                .unzip();
        // The progress line tells the first problem, else the first result.
        let unwritten =
            |r: &&Result<CheckResult, CheckError>| matches!(r, Ok(CheckResult::NotWritten { .. }));
        let shown = read.iter().find(|r| r.is_err());
        if let Some(shown) = shown.or(read.iter().find(unwritten)).or(read.first()) {
            display.finish(bar, &name, shown, elapsed);
        }
        for (index, result) in indices.into_iter().zip(read) {
            let outcome_name = names.get(index).cloned().unwrap_or_else(|| name.clone());
            results.push(result.map(|result| CheckOutcome {
                name: outcome_name,
                visibility: check.visibility,
                void_on_violation: check.void_on_violation,
                result,
            }));
        }
    }
    Ok(results)
}

/// The run was interrupted (Ctrl-C, SIGTERM): the checks were stopped, nothing is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("interrupted by signal {signal}: the checks were stopped")]
pub struct Interrupted {
    pub signal: i32,
}

/// The process groups of the checks running now, so an interrupt can stop them all.
#[derive(Clone, Default)]
struct ProcessGroups(std::sync::Arc<std::sync::Mutex<Vec<i32>>>);

impl ProcessGroups {
    fn add(&self, pid: Option<u32>) {
        if let (Some(pid), Ok(mut groups)) =
            (pid.and_then(|p| i32::try_from(p).ok()), self.0.lock())
        {
            groups.push(pid);
        }
    }

    fn kill_all(&self) {
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
enum Execution {
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

fn report_path(root: &Path, check: &Check, source: &ReportSource) -> Option<PathBuf> {
    let path = source.path.as_ref()?;
    let base = match &check.workdir {
        Some(dir) => root.join(dir),
        None => root.to_path_buf(),
    };
    Some(base.join(path))
}

async fn execute(
    root: &Path,
    check: &Check,
    policy: EnvPolicy,
    env: &[(String, String)],
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
        Ok((Ok(status), stdout, stderr)) => Execution::Finished {
            exit_code: status.code().unwrap_or(-1),
            stdout,
            stderr,
        },
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

fn kill_group(pid: Option<u32>) {
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
fn last_error_line(stderr: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(&stderr[stderr.len().saturating_sub(64 * 1024)..]);
    let line = text
        .lines()
        .map(|l| report::strip_ansi(l).trim().to_string())
        .rfind(|l| l.to_ascii_lowercase().contains("error"))?;
    Some(line.chars().take(300).collect())
}

fn tail(stdout: &[u8], stderr: &[u8]) -> String {
    let text = if stderr.iter().all(u8::is_ascii_whitespace) {
        stdout
    } else {
        stderr
    };
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

/// Exit statuses of `sh` for a command it could not find (127) or execute (126).
const SHELL_NOT_FOUND: [i32; 2] = [126, 127];

/// The check's results, one per report (one when it has none), or why the environment kept
/// it from producing one (message, tail). A build that failed before writing its reports is
/// one result: the reports it did not write are not read.
fn read_reports(root: &Path, check: &Check, out: Execution) -> Vec<(usize, ReadResult)> {
    let (exit_code, stdout, stderr) = match out {
        Execution::Broken { message } => return vec![(0, Err((message, String::new())))],
        Execution::TimedOut { seconds } => {
            return vec![(
                0,
                Ok(CheckResult::TimedOut {
                    seconds,
                    tail: String::new(),
                }),
            )]
        }
        Execution::NotRun => (None, Vec::new(), Vec::new()),
        Execution::Finished {
            exit_code,
            stdout,
            stderr,
        } => (Some(exit_code), stdout, stderr),
    };
    let tail = tail(&stdout, &stderr);
    if let Some(code) = exit_code.filter(|c| SHELL_NOT_FOUND.contains(c)) {
        return vec![(
            0,
            Err((
                format!("the command was not found or is not executable (exit status {code})"),
                tail,
            )),
        )];
    }
    if check.report.is_empty() {
        // No report: the exit status is the signal, and a failing build's output names
        // its errors.
        return vec![(
            0,
            match exit_code {
                Some(code) => Ok(build_failure(Some(code), &stdout, &stderr, tail.clone())
                    .unwrap_or(CheckResult::Exited {
                        exit_code: code,
                        failures: if code == 0 {
                            Vec::new()
                        } else {
                            failure_lines(&stdout, &stderr)
                        },
                        tail,
                    })),
                None => Err(("the check has neither `run` nor `report`".into(), tail)),
            },
        )];
    }
    let mut results = Vec::with_capacity(check.report.len());
    let mut build_failed = false;
    let mut unwritten = Vec::new();
    for (index, source) in check.report.iter().enumerate() {
        let result = match read_one(root, check, source, &stdout) {
            Ok(report) => Ok(CheckResult::Report { report, exit_code }),
            Err(ReadError::NotWritten(message)) => {
                unwritten.push((index, message));
                continue;
            }
            Err(ReadError::Unreadable(error)) => {
                match build_failure(exit_code, &stdout, &stderr, tail.clone()) {
                    Some(_) if build_failed => continue,
                    Some(failed) => {
                        build_failed = true;
                        Ok(failed)
                    }
                    None => Err((error, tail.clone())),
                }
            }
        };
        results.push((index, result));
    }
    // A report the run did not write: when another of its reports was read, the check
    // ran and that one is its result (vitest writes no coverage when a test fails; a Go
    // build failure writes no profile), and the missing dimension goes unmeasured.
    let read_one_report = results
        .iter()
        .any(|(_, r)| matches!(r, Ok(CheckResult::Report { .. })));
    for (index, message) in unwritten {
        if read_one_report {
            let source = &check.report[index];
            let path = report_path(root, check, source)
                .map(|p| p.strip_prefix(root).unwrap_or(&p).display().to_string())
                .unwrap_or_default();
            results.push((
                index,
                Ok(CheckResult::NotWritten {
                    path,
                    format: source.format,
                    said: last_error_line(&stderr),
                }),
            ));
            continue;
        }
        match build_failure(exit_code, &stdout, &stderr, tail.clone()) {
            Some(_) if build_failed => continue,
            Some(failed) => {
                build_failed = true;
                results.push((index, Ok(failed)));
            }
            None => results.push((index, Err((message, tail.clone())))),
        }
    }
    results.sort_by_key(|(index, _)| *index);
    results
}

/// One report's result (by its place in the check's list), or why the environment kept
/// the check from producing it (message, tail).
type ReadResult = Result<CheckResult, (String, String)>;

/// Why a report could not be read.
enum ReadError {
    /// The command did not write it.
    NotWritten(String),
    /// It is there but is not a report of its format.
    Unreadable(String),
}

/// The most failure lines an exited check keeps.
const MAX_FAILURE_LINES: usize = 200;

/// The lines of a failing command's output that name a failure, as test runners and
/// compilers print them, each trimmed, its colours and durations removed, once each: what
/// tells a base's failures from new ones when there is no report to compare.
pub fn failure_lines(stdout: &[u8], stderr: &[u8]) -> Vec<String> {
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for bytes in [stdout, stderr] {
        let end = bytes.len().min(DIAGNOSTIC_SCAN_BYTES);
        let text = String::from_utf8_lossy(&bytes[..end]);
        for raw in text.lines() {
            let clean = report::strip_ansi(raw);
            let line = without_durations(clean.trim());
            if out.len() < MAX_FAILURE_LINES && names_a_failure(&line) && seen.insert(line.clone())
            {
                out.push(line);
            }
        }
    }
    out
}

fn names_a_failure(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    let starts = [
        "--- fail",
        "fail ",
        "fail:",
        "not ok",
        "✗",
        "✖",
        "×",
        "❌",
        "error",
        "failed ",
        "panic:",
        "assertionerror",
    ];
    // Counts and summaries (`# fail 6`, `Tests: 1 failed`) say how many, not which.
    !lower.starts_with('#')
        && !lower.contains(" failed, ")
        && (starts.iter().any(|s| lower.starts_with(s))
            || lower.contains(": error")
            || lower.contains("error ts")
            || lower.contains(") error")
            || lower.contains("_test.go:"))
}

/// `--- FAIL: TestX (0.01s)` → `--- FAIL: TestX`; `✗ adds (3 ms)` → `✗ adds`.
fn without_durations(line: &str) -> String {
    let mut out = line.to_string();
    if let Some(open) = out.rfind(" (") {
        let inner = &out[open + 2..];
        let is_duration = inner.ends_with(')')
            && inner
                .trim_end_matches(')')
                .trim_end_matches(|c: char| c.is_ascii_alphabetic() || c == 'µ')
                .trim()
                .parse::<f64>()
                .is_ok();
        if is_duration {
            out.truncate(open);
        }
    }
    out
}

/// One report of a check, from its file or from the command's standard output.
fn read_one(
    root: &Path,
    check: &Check,
    source: &ReportSource,
    stdout: &[u8],
) -> Result<report::Report, ReadError> {
    // Every file's lines: which of them the change touched depends on the base.
    let keep_all = |_: &str| true;
    let opts = ParseOptions {
        keep_lines_for: Some(&keep_all),
    };
    match report_path(root, check, source) {
        Some(path) if is_pattern(&path) || path.is_dir() => read_many(root, source, &path, &opts),
        Some(path) if path.exists() => {
            report::parse_file_in_tree(source.format, root, &path, &opts)
                .map_err(|e| ReadError::Unreadable(e.to_string()))
        }
        Some(path) => Err(ReadError::NotWritten(format!(
            "the report {} was not written (checks run concurrently: when another check writes it, add `needs: [that check]` to this one, or list the report under the check that writes it, since a check can read several reports)",
            path.display()
        ))),
        None => report::parse(source.format, stdout, "standard output", &opts)
            .map_err(|e| ReadError::Unreadable(e.to_string())),
    }
}

/// The files a directory or glob report path names (sorted), with the pattern as text.
fn report_files(path: &Path) -> Result<(String, Vec<PathBuf>), ReadError> {
    let pattern = if path.is_dir() {
        path.join("*.{xml,json}")
    } else {
        path.to_path_buf()
    };
    let text = pattern.to_string_lossy().into_owned();
    let glob = globset::GlobBuilder::new(&text)
        .literal_separator(true)
        .build()
        .map_err(|e| ReadError::Unreadable(format!("report path `{text}` is not a glob: {e}")))?
        .compile_matcher();
    // Walk from the pattern's literal directory prefix.
    let mut walk_root = PathBuf::new();
    for part in pattern.components() {
        if part
            .as_os_str()
            .to_string_lossy()
            .contains(['*', '?', '[', '{'])
        {
            break;
        }
        walk_root.push(part);
    }
    let mut files = Vec::new();
    let mut stack = vec![walk_root];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let found = entry.path();
            let name = entry.file_name();
            if kind.is_dir() && name != ".git" && name != "node_modules" {
                stack.push(found);
            } else if kind.is_file() && glob.is_match(&found) {
                files.push(found);
            }
            if files.len() > MAX_REPORT_FILES {
                return Err(ReadError::Unreadable(format!(
                    "report path `{text}` matches more than {MAX_REPORT_FILES} files"
                )));
            }
        }
    }
    files.sort();
    Ok((text, files))
}

/// Whether a report path names several files: a glob (`*`, `?`, `[`).
fn is_pattern(path: &Path) -> bool {
    path.to_string_lossy().contains(['*', '?', '['])
}

/// The most files one report pattern reads.
const MAX_REPORT_FILES: usize = 10_000;

/// The reports a directory (each of its `*.xml`/`*.json` files) or a glob names, read and
/// merged into one: Maven Surefire writes one JUnit file per test class. Test, lint and
/// coverage reports merge (coverage of disjoint files, a module's each); complexity must
/// come from one file.
fn read_many(
    root: &Path,
    source: &ReportSource,
    path: &Path,
    opts: &ParseOptions,
) -> Result<report::Report, ReadError> {
    let (text, files) = report_files(path)?;
    if files.is_empty() {
        return Err(ReadError::NotWritten(format!(
            "no report file matches {text} (checks run concurrently: when another check writes it, add `needs: [that check]` to this one)"
        )));
    }
    let mut merged: Option<report::Report> = None;
    for file in &files {
        let next = report::parse_file_in_tree(source.format, root, file, opts)
            .map_err(|e| ReadError::Unreadable(e.to_string()))?;
        merged = Some(match (merged, next) {
            (None, next) => next,
            (Some(report::Report::Tests(mut a)), report::Report::Tests(b)) => {
                a.passed += b.passed;
                a.failed += b.failed;
                a.errored += b.errored;
                a.skipped += b.skipped;
                a.problems.extend(b.problems);
                a.passing.extend(b.passing);
                report::Report::Tests(a)
            }
            (Some(report::Report::Lint(mut a)), report::Report::Lint(b)) => {
                a.findings.extend(b.findings);
                report::Report::Lint(a)
            }
            // A module's report each (JaCoCo in a multi-module build): their files add up.
            (Some(report::Report::Coverage(mut a)), report::Report::Coverage(b)) => {
                a.lines_found = a.lines_found.saturating_add(b.lines_found);
                a.lines_hit = a.lines_hit.saturating_add(b.lines_hit);
                for (file, lines) in b.files {
                    let merged = a.files.entry(file).or_default();
                    for (line, hits) in lines.lines {
                        merged.add(line, hits);
                    }
                }
                a.sources.extend(b.sources);
                report::Report::Coverage(a)
            }
            (Some(_), _) => {
                return Err(ReadError::Unreadable(format!(
                    "report path `{text}` matches {} files; a {} report is read from one file",
                    files.len(),
                    source.format.name()
                )))
            }
        });
    }
    merged.ok_or_else(|| ReadError::NotWritten(format!("no report file matches {text}")))
}

/// No readable report, but a failing command whose output names errors in the code: the
/// build failed, which is the work's result (a test build that fails passes no test).
fn build_failure(
    exit_code: Option<i32>,
    stdout: &[u8],
    stderr: &[u8],
    tail: String,
) -> Option<CheckResult> {
    let exit_code = exit_code.filter(|c| *c != 0)?;
    let scan = |bytes: &[u8]| {
        let end = bytes.len().min(DIAGNOSTIC_SCAN_BYTES);
        diagnostics::parse(&String::from_utf8_lossy(&bytes[..end]))
    };
    let mut found = scan(stderr);
    found.extend(scan(stdout));
    (!found.is_empty()).then_some(CheckResult::BuildFailed {
        exit_code,
        diagnostics: found,
        tail,
    })
}

struct Display {
    bars: Option<MultiProgress>,
    quiet: bool,
    label: String,
}

impl Display {
    fn new(progress: Progress, label: Option<&str>) -> Display {
        let quiet = progress == Progress::Quiet;
        let bars = (!quiet && std::io::stderr().is_terminal()).then(MultiProgress::new);
        Display {
            bars,
            quiet,
            label: label.map(|l| format!(" ({l})")).unwrap_or_default(),
        }
    }

    fn start(&self, name: &str) -> Option<ProgressBar> {
        match &self.bars {
            Some(m) => {
                let bar = m.add(ProgressBar::new_spinner());
                if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} {elapsed}") {
                    bar.set_style(style);
                }
                bar.set_message(format!("check {name}{}", self.label));
                bar.enable_steady_tick(Duration::from_millis(120));
                Some(bar)
            }
            None => {
                if !self.quiet {
                    eprintln!("itergate: check {name}{}: running", self.label);
                }
                None
            }
        }
    }

    fn finish(
        &self,
        bar: Option<ProgressBar>,
        name: &str,
        result: &Result<CheckResult, CheckError>,
        elapsed: Duration,
    ) {
        let verdict = match result {
            Err(error) => format!("could not run: {}", error.message),
            Ok(CheckResult::Exited { exit_code: 0, .. }) => "passed".into(),
            Ok(CheckResult::Exited { exit_code, .. }) => {
                format!("failed (exit status {exit_code})")
            }
            Ok(CheckResult::Report { .. }) => "report read".into(),
            Ok(CheckResult::BuildFailed { diagnostics, .. }) => {
                format!("build failed ({} errors)", diagnostics.len())
            }
            Ok(CheckResult::TimedOut { seconds, .. }) => format!("timed out after {seconds}s"),
            Ok(CheckResult::TrackedFilesChanged { files, .. }) => {
                format!("changed {} tracked file(s)", files.len())
            }
            Ok(CheckResult::NotWritten { path, said, .. }) => {
                let said = said.as_ref().map(|s| format!(": {s}")).unwrap_or_default();
                format!("report read; {path} was not written (unmeasured this time){said}")
            }
        };
        let line = format!(
            "check {name}{}: {verdict} in {:.1}s",
            self.label,
            elapsed.as_secs_f64()
        );
        match bar {
            Some(b) => b.finish_with_message(line),
            None if !self.quiet => eprintln!("itergate: {line}"),
            None => {}
        }
    }
}
