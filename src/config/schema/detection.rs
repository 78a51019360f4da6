//! What is detected in a change: `detection` (markers, paths of tests and harness) and
//! `integrity` (tamper-evidence and what a violation does).

use serde::{Deserialize, Serialize};

use crate::config::values::Fraction;

/// Thresholds for trigger detection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Detection {
    /// A `Confidence:` trailer below this raises `low_confidence`.
    pub min_confidence: Fraction,
    /// Where a marker of unfinished work counts (`todo!()`, `raise NotImplementedError`,
    /// a `TODO` comment ...): source files, not prose or test data.
    pub markers: PathFilter,
    /// What an added `TODO`, `FIXME` or `XXX` comment in non-test source is: a note
    /// (`info`, the default) or unfinished work to revise (`warning`). Code that cannot
    /// run as written (`todo!()`, `throw new Error("not implemented")` ...) is always a
    /// warning there.
    pub marker_comments: MarkerComments,
    /// Test files: markers there are notes, never a revision.
    pub tests: PathFilter,
}

/// Tamper evidence: what a change that removes, skips, rewrites or deselects a failing
/// test (a violation) does to its iteration.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Integrity {
    /// `void`: a violating iteration is VOID (no score, never the best output) and sent
    /// back with what to restore; a second violation in the task escalates. `iterate`:
    /// violations are BLOCKERs like any other.
    pub on_violation: OnViolation,
    /// What a test that passed at the task's start, fails under the start's version of
    /// itself, and passes as the change rewrote it, is: the change altered an expectation
    /// together with the code.
    pub expectation_changes: ExpectationChanges,
    /// Test-harness files beyond `detection.tests` and the built-in names (globs from the
    /// repository root): the trusted harness run takes them from the task's start.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub harness: Vec<String>,
}

/// `integrity.expectation_changes`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ExpectationChanges {
    /// An INFO note for the reviewer ("expectation changed: confirm the behaviour change").
    #[default]
    Note,
    /// A WARNING: the iteration is sent back, or a person accepts the change.
    Warn,
}

/// `integrity.on_violation`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum OnViolation {
    /// The iteration is VOID: no score, never the best output, no trend point; it is sent
    /// back with what to restore, and a second violation in the task escalates.
    #[default]
    Void,
    /// The findings are BLOCKERs like any other; the iteration keeps its score.
    Iterate,
}

/// The weight of a marker comment (`detection.marker_comments`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum MarkerComments {
    #[default]
    Info,
    Warning,
}

impl Default for Detection {
    fn default() -> Self {
        Detection {
            min_confidence: Fraction::new_const(0.75),
            markers: PathFilter {
                include: vec!["**".into()],
                exclude: [
                    "**/*.md",
                    "**/*.markdown",
                    "**/*.rst",
                    "**/*.adoc",
                    "**/*.txt",
                    "**/CHANGELOG*",
                    "**/docs/**",
                    "**/doc/**",
                    "**/fixtures/**",
                    "**/testdata/**",
                    "**/snapshots/**",
                    "**/*.snap",
                    "**/*.json",
                ]
                .map(String::from)
                .to_vec(),
            },
            marker_comments: MarkerComments::Info,
            tests: PathFilter {
                include: [
                    "**/tests/**",
                    "**/test/**",
                    "**/__tests__/**",
                    "**/testing/**",
                    "**/*_test.go",
                    "**/test_*.py",
                    "**/*_test.py",
                    "**/conftest.py",
                    "**/*.test.*",
                    "**/*.spec.*",
                    "**/tests.rs",
                    "**/benches/**",
                ]
                .map(String::from)
                .to_vec(),
                exclude: vec![],
            },
        }
    }
}

/// Files chosen by glob patterns (`**` any directories, `*` within one name), matched
/// against repository-relative paths: included and not excluded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PathFilter {
    /// Globs of the files chosen.
    pub include: Vec<String>,
    /// Globs of the files set aside from those `include` chose.
    pub exclude: Vec<String>,
}
