//! The one error every parser returns: where in which report, and what was expected there.
//! It is user-facing: the message reads like a compiler diagnostic so a person (or an
//! agent) can open the file at the place and see the problem.

use serde::{Deserialize, Serialize};

use super::ReportFormat;

/// A report that could not be read: `"junit.xml: line 12, column 5: unexpected end of file
/// inside <testcase>; expected a complete JUnit XML document"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{source_name}: {}{message}", place(.line, .column, .byte))]
pub struct ParseError {
    /// The report's name as the caller gave it (usually its path).
    pub source_name: String,
    /// 1-based line, when the format has lines and the place is known.
    pub line: Option<u64>,
    /// 1-based column in bytes, when known.
    pub column: Option<u64>,
    /// 0-based byte offset, when known.
    pub byte: Option<u64>,
    pub format: ReportFormat,
    pub message: String,
}

fn place(line: &Option<u64>, column: &Option<u64>, byte: &Option<u64>) -> String {
    match (line, column, byte) {
        (Some(l), Some(c), _) => format!("line {l}, column {c}: "),
        (Some(l), None, _) => format!("line {l}: "),
        (None, _, Some(b)) => format!("byte {b}: "),
        (None, _, None) => String::new(),
    }
}

/// A place in the input; any part may be unknown.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Position {
    pub line: Option<u64>,
    pub column: Option<u64>,
    pub byte: Option<u64>,
}

impl Position {
    pub(crate) fn line(line: u64) -> Self {
        Position {
            line: Some(line),
            ..Position::default()
        }
    }
}
