//! What a tree's checks observed, before anything is compared with a base: the raw test
//! outcomes, lint findings, line coverage, complexity and build diagnostics. This is what
//! the tree determines, so it is what the cache keeps (keyed by tree and check
//! fingerprint); pre-existing markings, patch coverage, added-line triggers and the
//! iteration number depend on a base or a history and are computed when a commit is
//! evaluated (`signals::score`).
//!
//! Paths are repository-relative ([`super::paths`]) and lint findings carry their source
//! line, so an observation made in a scratch worktree compares with one made in place.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::config::Visibility;

use super::diagnostics::Diagnostic;
use super::paths::{frames, is_repository_path, line_text, RepoPaths, SOURCE_FILE_BYTES_MAX};
use super::report::{Report, ReportFormat};
use super::tree_file::read_text_in_tree;

/// The observation of one tree: every check's result, in check-name order.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Observation {
    pub checks: Vec<CheckOutcome>,
    /// How long the checks took, when they ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_time_ms: Option<u64>,
    /// Tests that failed in one observation of this tree and passed in another
    /// (`--rescore`): flaky, whatever this observation says of them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flaky: Vec<String>,
}

impl Observation {
    /// The ids of every failing or errored test, with the check that ran it.
    pub fn failing_tests(&self) -> std::collections::BTreeSet<(String, String)> {
        self.checks
            .iter()
            .filter_map(|c| match &c.result {
                CheckResult::Report {
                    report: Report::Tests(t),
                    ..
                } => Some(
                    t.failures()
                        .map(|f| (c.name.clone(), f.id.clone()))
                        .collect::<Vec<_>>(),
                ),
                _ => None,
            })
            .flatten()
            .collect()
    }

    /// The ids of the failing or errored tests of the checks whose details may be shown
    /// (holdout checks' never are), sorted and without repeats.
    pub fn failing_test_ids(&self) -> Vec<String> {
        self.failing_ids_where(false)
    }

    /// The ids of the failing or errored tests of the holdout checks (`aggregate_only`).
    pub fn holdout_failing_ids(&self) -> Vec<String> {
        self.failing_ids_where(true)
    }

    fn failing_ids_where(&self, holdout: bool) -> Vec<String> {
        let mut ids: Vec<String> = self
            .checks
            .iter()
            .filter(|c| (c.visibility == crate::config::Visibility::AggregateOnly) == holdout)
            .filter_map(|c| match &c.result {
                CheckResult::Report {
                    report: Report::Tests(t),
                    ..
                } => Some(t.failures().map(|f| f.id.clone()).collect::<Vec<_>>()),
                _ => None,
            })
            .flatten()
            .collect();
        ids.sort();
        ids.dedup();
        ids
    }

    /// Marks as flaky the tests whose outcome differs between `earlier` (an observation
    /// of the same tree with the same checks) and this one, keeping earlier marks.
    pub fn mark_flaky_against(&mut self, earlier: &Observation) {
        let before = earlier.failing_tests();
        let now = self.failing_tests();
        let mut flaky: std::collections::BTreeSet<String> = earlier.flaky.iter().cloned().collect();
        flaky.extend(self.flaky.drain(..));
        flaky.extend(before.symmetric_difference(&now).map(|(_, id)| id.clone()));
        self.flaky = flaky.into_iter().collect();
    }
}

/// What one check produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckOutcome {
    pub name: String,
    #[serde(default)]
    pub visibility: Visibility,
    #[serde(default)]
    pub void_on_violation: bool,
    pub result: CheckResult,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CheckResult {
    /// The report was read (with the command's exit status, when one ran).
    Report {
        report: Report,
        exit_code: Option<i32>,
    },
    /// A command without a report: its exit status is the signal. `failures` are the
    /// lines of its output that name a failure (`--- FAIL: TestX`, `not ok 3 - adds`,
    /// `✗ parses`, `error: …`), durations and this checkout's root removed, so a base that
    /// fails too is compared by what failed, not by its exit status alone.
    Exited {
        exit_code: i32,
        tail: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        failures: Vec<String>,
    },
    /// The command failed before writing its report, and its output names the errors
    /// (a test build that does not compile, a collection error).
    BuildFailed {
        exit_code: i32,
        diagnostics: Vec<Diagnostic>,
        tail: String,
    },
    /// The command did not finish in time and was stopped.
    TimedOut { seconds: u64, tail: String },
    /// One of the check's reports was not written while another was read (vitest writes
    /// no coverage when a test fails; a Go build failure writes no profile): what it
    /// measures is unmeasured this time, and the other report is the check's result.
    NotWritten {
        /// Its path, relative to the checkout.
        path: String,
        format: ReportFormat,
        /// The tool's own last error line, when it printed one (why it wrote nothing).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        said: Option<String>,
    },
    /// Not a check: tracked files changed while the checks ran (a formatter or `ruff` with
    /// `fix = true`), so their results describe the rewritten files, not the commit. Kept
    /// as the outcome named [`WORK_TREE_OUTCOME`]; `checks` are those that ran (checks run
    /// concurrently, so which of them wrote is not known unless only one ran a command).
    TrackedFilesChanged {
        files: Vec<String>,
        checks: Vec<String>,
    },
}

/// The name of the outcome that says tracked files changed while the checks ran.
pub const WORK_TREE_OUTCOME: &str = "itergate:work-tree";

/// A check the environment kept from running: not the work's result, never recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckError {
    pub check: String,
    pub command: Option<String>,
    pub message: String,
    /// The end of the command's output (stderr preferred).
    pub tail: String,
}

impl fmt::Display for CheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "check `{}`", self.check)?;
        if let Some(command) = &self.command {
            write!(f, " (`{command}`)")?;
        }
        write!(f, " could not run: {}", self.message)?;
        if !self.tail.trim().is_empty() {
            write!(f, "\n{}", indent(self.tail.trim_end()))?;
        }
        Ok(())
    }
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

impl Observation {
    /// Makes the observation independent of where the checks ran: repository-relative
    /// paths everywhere, failing tests located inside the repository, and each lint
    /// finding's source line read from `root` (the checkout the checks ran in).
    pub fn normalise(&mut self, root: &Path) {
        let paths = RepoPaths::new(root);
        let mut sources = SourceLines::new(root);
        for check in &mut self.checks {
            match &mut check.result {
                CheckResult::Report { report, .. } => {
                    paths.normalise(report);
                    if let Report::Lint(lint) = report {
                        for finding in &mut lint.findings {
                            if let (Some(file), Some(line)) = (&finding.file, finding.line) {
                                finding.context = sources.line(file, line);
                            }
                        }
                    }
                }
                CheckResult::BuildFailed { diagnostics, .. } => {
                    for d in diagnostics.iter_mut() {
                        locate_diagnostic(&paths, d);
                    }
                }
                CheckResult::Exited { failures, tail, .. } => {
                    for line in failures.iter_mut() {
                        *line = paths.without_root(line);
                    }
                    *tail = paths.without_root(tail);
                }
                CheckResult::TimedOut { .. }
                | CheckResult::TrackedFilesChanged { .. }
                | CheckResult::NotWritten { .. } => {}
            }
        }
    }
}

/// A diagnostic's place: its own when inside the repository, else the deepest frame of
/// its traceback that is.
fn locate_diagnostic(paths: &RepoPaths, d: &mut Diagnostic) {
    d.message = paths.without_root(&d.message);
    d.detail = paths.without_root(&d.detail);
    if let Some(file) = &mut d.file {
        *file = paths.relative(file);
    }
    for frame in &mut d.frames {
        frame.0 = paths.relative(&frame.0);
    }
    let inside = d.file.as_deref().is_some_and(is_repository_path);
    if inside && d.frames.is_empty() {
        return;
    }
    let from_frames = d
        .frames
        .iter()
        .rev()
        .find(|(file, _)| is_repository_path(file))
        .cloned()
        .or_else(|| {
            frames(&d.detail)
                .into_iter()
                .map(|(f, l)| (paths.relative(&f), l))
                .rfind(|(f, _)| is_repository_path(f))
        });
    if let Some((file, line)) = from_frames {
        d.file = Some(file);
        d.line = Some(line);
        d.column = None;
    } else if !inside {
        d.file = None;
        d.line = None;
        d.column = None;
    }
}

/// Source lines read once per file.
struct SourceLines<'r> {
    root: &'r Path,
    files: HashMap<String, Option<Vec<String>>>,
}

impl<'r> SourceLines<'r> {
    fn new(root: &'r Path) -> Self {
        SourceLines {
            root,
            files: HashMap::new(),
        }
    }

    fn line(&mut self, file: &str, line: u32) -> Option<String> {
        if !is_repository_path(file) {
            return None;
        }
        let root = self.root;
        let lines = self.files.entry(file.to_string()).or_insert_with(|| {
            read_text_in_tree(root, &root.join(file), SOURCE_FILE_BYTES_MAX)
                .map(|t| t.lines().map(|l| l.trim().to_string()).collect())
        });
        match lines {
            Some(lines) => lines
                .get(usize::try_from(line).ok()?.checked_sub(1)?)
                .cloned(),
            None => line_text(root, file, line),
        }
    }
}
