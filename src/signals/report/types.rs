//! The normalized summaries every parser produces. They carry only what scoring and the
//! revision prompt need: counts for everything, details only for what went wrong.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Longest `TestCase::output` kept (plus a note where the middle was cut): the start of the
/// failure text (the panic, the assertion message) and its end (the last error).
pub const OUTPUT_CAP_BYTES: usize = 4 * 1024;

/// One parsed report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Report {
    Tests(TestSummary),
    Lint(LintSummary),
    Coverage(CoverageSummary),
    Complexity(ComplexitySummary),
}

impl Report {
    /// Which summary this is.
    pub fn kind(&self) -> super::ReportKind {
        match self {
            Report::Tests(_) => super::ReportKind::Tests,
            Report::Lint(_) => super::ReportKind::Lint,
            Report::Coverage(_) => super::ReportKind::Coverage,
            Report::Complexity(_) => super::ReportKind::Complexity,
        }
    }
}

/// Test counts plus the cases that did not pass.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestSummary {
    pub passed: u64,
    pub failed: u64,
    pub errored: u64,
    pub skipped: u64,
    /// Only non-passing cases, in the order the report lists them.
    pub problems: Vec<TestCase>,
    /// The passing cases the report names (the test inventory, with `problems`): ids
    /// only, and where the report gives them, their file and line.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub passing: Vec<TestRef>,
}

/// A test by name and place.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestRef {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
}

impl TestRef {
    pub fn named(id: String) -> Self {
        TestRef {
            id,
            file: None,
            line: None,
        }
    }
}

impl TestSummary {
    /// Every case the report counted, skipped ones included.
    pub fn total(&self) -> u64 {
        self.passed
            .saturating_add(self.failed)
            .saturating_add(self.errored)
            .saturating_add(self.skipped)
    }

    /// Cases that ran (not skipped).
    pub fn executed(&self) -> u64 {
        self.total().saturating_sub(self.skipped)
    }

    /// Passed over executed; `None` when nothing ran.
    pub fn pass_rate(&self) -> Option<f64> {
        let executed = self.executed();
        (executed > 0).then(|| self.passed as f64 / executed as f64)
    }

    /// Cases that failed or errored.
    pub fn failures(&self) -> impl Iterator<Item = &TestCase> {
        self.problems
            .iter()
            .filter(|c| matches!(c.outcome, TestOutcome::Failed | TestOutcome::Errored))
    }

    pub(crate) fn record(&mut self, case: TestCase) {
        self.count(case.outcome);
        if case.outcome == TestOutcome::Passed {
            self.passing.push(TestRef {
                id: case.id,
                file: case.file,
                line: case.line,
            });
        } else {
            self.problems.push(case);
        }
    }

    /// A passing test, counted and named.
    pub(crate) fn pass(&mut self, test: TestRef) {
        self.count(TestOutcome::Passed);
        self.passing.push(test);
    }

    /// Every test the report names, with its outcome.
    pub fn inventory(&self) -> impl Iterator<Item = (&str, TestOutcome)> {
        self.passing
            .iter()
            .map(|t| (t.id.as_str(), TestOutcome::Passed))
            .chain(self.problems.iter().map(|c| (c.id.as_str(), c.outcome)))
    }

    pub(crate) fn count(&mut self, outcome: TestOutcome) {
        self.add_count(outcome, 1);
    }

    pub(crate) fn add_count(&mut self, outcome: TestOutcome, n: u64) {
        let counter = match outcome {
            TestOutcome::Passed => &mut self.passed,
            TestOutcome::Failed => &mut self.failed,
            TestOutcome::Errored => &mut self.errored,
            TestOutcome::Skipped => &mut self.skipped,
        };
        *counter = counter.saturating_add(n);
    }
}

/// One test that did not pass.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestCase {
    /// Stable across runs: `classname::name` for JUnit, the test path for libtest, the
    /// description for TAP.
    pub id: String,
    pub outcome: TestOutcome,
    pub message: Option<String>,
    /// The failure text and captured output, its middle cut past `OUTPUT_CAP_BYTES`.
    pub output: Option<String>,
    pub file: Option<String>,
    pub line: Option<u32>,
}

impl TestCase {
    pub(crate) fn new(id: String, outcome: TestOutcome) -> Self {
        TestCase {
            id,
            outcome,
            message: None,
            output: None,
            file: None,
            line: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TestOutcome {
    Passed,
    Failed,
    Errored,
    Skipped,
}

/// Every finding a linter reported.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LintSummary {
    pub findings: Vec<LintFinding>,
}

impl LintSummary {
    /// How many findings have `level`.
    pub fn count(&self, level: LintLevel) -> usize {
        self.findings.iter().filter(|f| f.level == level).count()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct LintFinding {
    /// The tool that reported it: `clippy`, `rustc`, `ruff`, `eslint`, the SARIF driver name.
    pub tool: String,
    /// Rule or error code: `clippy::needless_return`, `E0425`, `F401`, `no-unused-vars`.
    pub rule: Option<String>,
    pub level: LintLevel,
    pub message: String,
    pub file: Option<String>,
    pub line: Option<u32>,
    pub column: Option<u32>,
    /// Machine-applicable replacement text, a SARIF fix, or ruff's fix message.
    pub suggested_fix: Option<String>,
    /// The trimmed source line the finding is on, read from the checkout after parsing:
    /// what matches a finding on the base to the same finding moved by the change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
}

/// Severity of a lint finding; see the module docs for each tool's mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LintLevel {
    Error,
    Warning,
    Note,
}

/// Line coverage over the whole report, with per-line hits for the files the caller kept.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CoverageSummary {
    pub lines_found: u64,
    pub lines_hit: u64,
    /// Only files accepted by [`super::ParseOptions::keep_lines_for`].
    pub files: BTreeMap<String, FileLines>,
    /// The directories file names are relative to (Cobertura's `<source>`s), as written.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<String>,
}

impl CoverageSummary {
    /// Hit over found; `None` when the report has no instrumented lines.
    pub fn line_rate(&self) -> Option<f64> {
        (self.lines_found > 0).then(|| self.lines_hit as f64 / self.lines_found as f64)
    }
}

/// Per-line hits of one file. Serialised compactly, as the covered and the uncovered line
/// ranges (`"1-5,9"`): a cached observation keeps every file's lines, and only hit or not
/// matters once the report is read.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "LineRanges", try_from = "LineRanges")]
pub struct FileLines {
    /// Line number to hit count.
    pub lines: BTreeMap<u32, u64>,
}

#[derive(Serialize, Deserialize)]
struct LineRanges {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    hit: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    missed: String,
}

impl From<FileLines> for LineRanges {
    fn from(file: FileLines) -> Self {
        let ranges = |hit: bool| {
            let mut out: Vec<(u32, u32)> = Vec::new();
            for (&line, _) in file.lines.iter().filter(|(_, h)| (**h > 0) == hit) {
                match out.last_mut() {
                    Some((_, end)) if end.checked_add(1) == Some(line) => *end = line,
                    _ => out.push((line, line)),
                }
            }
            out.iter()
                .map(|(a, b)| {
                    if a == b {
                        a.to_string()
                    } else {
                        format!("{a}-{b}")
                    }
                })
                .collect::<Vec<_>>()
                .join(",")
        };
        LineRanges {
            hit: ranges(true),
            missed: ranges(false),
        }
    }
}

impl TryFrom<LineRanges> for FileLines {
    type Error = String;

    fn try_from(ranges: LineRanges) -> Result<Self, Self::Error> {
        let mut file = FileLines::default();
        for (text, hits) in [(&ranges.hit, 1), (&ranges.missed, 0)] {
            for part in text.split(',').filter(|p| !p.is_empty()) {
                let (a, b) = part.split_once('-').unwrap_or((part, part));
                let parse = |n: &str| {
                    n.parse::<u32>()
                        .map_err(|e| format!("line range `{part}`: {e}"))
                };
                let (a, b) = (parse(a)?, parse(b)?);
                if b < a || b - a > 10_000_000 {
                    return Err(format!("line range `{part}` is not ascending"));
                }
                for line in a..=b {
                    file.lines.insert(line, hits);
                }
            }
        }
        Ok(file)
    }
}

impl FileLines {
    /// Lines with no hits, in order.
    pub fn uncovered(&self) -> impl Iterator<Item = u32> + '_ {
        self.lines
            .iter()
            .filter(|(_, hits)| **hits == 0)
            .map(|(line, _)| *line)
    }

    pub(crate) fn add(&mut self, line: u32, hits: u64) {
        let entry = self.lines.entry(line).or_insert(0);
        *entry = entry.saturating_add(hits);
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ComplexitySummary {
    pub functions: Vec<FunctionComplexity>,
}

impl ComplexitySummary {
    /// The most complex function, if any.
    pub fn max_cyclomatic(&self) -> Option<&FunctionComplexity> {
        self.functions.iter().max_by_key(|f| f.cyclomatic)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FunctionComplexity {
    pub name: String,
    pub file: String,
    pub line: Option<u32>,
    pub cyclomatic: u32,
}
