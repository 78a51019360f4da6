//! Reading what a check reported: its report files (one, a list or a pattern), parsed by
//! format, and a build failure or a failing run without a report said as such.

use std::path::{Path, PathBuf};

use crate::config::{Check, ReportSource};
use crate::signals::observation::CheckResult;
use crate::signals::report::ParseOptions;
use crate::signals::{diagnostics, report};

use super::process::{last_error_line, tail, Execution, DIAGNOSTIC_SCAN_BYTES, SHELL_NOT_FOUND};

pub(super) fn report_path(root: &Path, check: &Check, source: &ReportSource) -> Option<PathBuf> {
    let path = source.path.as_ref()?;
    let base = match &check.workdir {
        Some(dir) => root.join(dir),
        None => root.to_path_buf(),
    };
    Some(base.join(path))
}

/// The check's results, one per report (one when it has none), or why the environment kept
/// it from producing one (message, tail). A build that failed before writing its reports is
/// one result: the reports it did not write are not read.
pub(super) fn read_reports(root: &Path, check: &Check, out: Execution) -> Vec<(usize, ReadResult)> {
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
    let mut missing: Option<usize> = None;
    // Said only where another check's file may be what is missing: a check without a
    // command of its own, or one whose command said a file does not exist.
    let said_missing = || {
        [&stdout[..], &stderr[..]].iter().any(|out| {
            let text = String::from_utf8_lossy(out);
            MISSING_FILE.iter().any(|words| text.contains(words))
        })
    };
    let hint = if check.needs.is_empty() && (check.run.is_none() || said_missing()) {
        NOT_WRITTEN_HINT
    } else {
        ""
    };
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
            None => {
                // One error for the check, however many of its reports are missing: its
                // output is shown once.
                if let Some((_, Err((said, _)))) = missing.and_then(|at| results.get_mut(at)) {
                    let hint_at = said.len() - hint.len();
                    said.insert_str(hint_at, &format!("; {message}"));
                    continue;
                }
                // A command that failed wrote nothing: that is said first, the hint about
                // a report another check writes after it.
                let message = match exit_code {
                    Some(code) if code != 0 => {
                        format!("it exited with status {code} and wrote no report: {message}")
                    }
                    _ => message,
                };
                let message = format!("{message}{hint}");
                missing = Some(results.len());
                results.push((index, Err((message, tail.clone()))))
            }
        }
    }
    results.sort_by_key(|(index, _)| *index);
    results
}

/// How tools say a file they were to read is not there.
const MISSING_FILE: [&str; 4] = [
    "No such file or directory",
    "cannot stat",
    "ENOENT",
    "does not exist",
];

/// Said once after the reports a check did not write.
const NOT_WRITTEN_HINT: &str = " (checks run concurrently: when another check writes it, add `needs: [that check]` to this one, or list the report under the check that writes it, since a check can read several reports)";

/// One report's result (by its place in the check's list), or why the environment kept
/// the check from producing it (message, tail).
pub(super) type ReadResult = Result<CheckResult, (String, String)>;

/// Why a report could not be read.
pub(super) enum ReadError {
    /// The command did not write it.
    NotWritten(String),
    /// It is there but is not a report of its format.
    Unreadable(String),
}

/// The most failure lines an exited check keeps.
pub(super) const MAX_FAILURE_LINES: usize = 200;

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

pub(super) fn names_a_failure(line: &str) -> bool {
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
pub(super) fn without_durations(line: &str) -> String {
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
pub(super) fn read_one(
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
            "the report {} was not written",
            path.display()
        ))),
        None => report::parse(source.format, stdout, "standard output", &opts)
            .map_err(|e| ReadError::Unreadable(e.to_string())),
    }
}

/// The files a directory or glob report path names (sorted), with the pattern as text.
pub(super) fn report_files(path: &Path) -> Result<(String, Vec<PathBuf>), ReadError> {
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
pub(super) fn is_pattern(path: &Path) -> bool {
    path.to_string_lossy().contains(['*', '?', '['])
}

/// The most files one report pattern reads.
pub(super) const MAX_REPORT_FILES: usize = 10_000;

/// The reports a directory (each of its `*.xml`/`*.json` files) or a glob names, read and
/// merged into one: Maven Surefire writes one JUnit file per test class. Test, lint and
/// coverage reports merge (coverage of disjoint files, a module's each); complexity must
/// come from one file.
pub(super) fn read_many(
    root: &Path,
    source: &ReportSource,
    path: &Path,
    opts: &ParseOptions,
) -> Result<report::Report, ReadError> {
    let (text, files) = report_files(path)?;
    if files.is_empty() {
        return Err(ReadError::NotWritten(format!(
            "no report file matches {text}"
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
pub(super) fn build_failure(
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
