//! Istanbul's `coverage-final.json` (jest, vitest, nyc, c8 `--reporter=json`): an object
//! keyed by file, each `{path, statementMap: {id: {start: {line}, end}}, s: {id: count}}`.
//!
//! Line coverage is istanbul's own: a statement counts on the line it starts, and a line's
//! hits are the most of any statement starting there, so the figures equal the LCOV the
//! same run writes. `coverage-summary.json` has totals only, no lines: it is refused (a
//! file without a `statementMap`).

use std::collections::BTreeMap;
use std::io::BufRead;

use serde::Deserialize;

use super::input::{Ctx, Input};
use super::json::from_input;
use super::types::{CoverageSummary, FileLines};
use super::{ParseError, ParseOptions};

pub(crate) fn parse<R: BufRead>(
    input: &mut Input<R>,
    ctx: &Ctx,
    opts: &ParseOptions,
) -> Result<CoverageSummary, ParseError> {
    let files: BTreeMap<String, FileCoverage> = from_input(input, ctx)?;
    let mut summary = CoverageSummary::default();
    for (key, file) in files {
        let name = file.path.unwrap_or(key);
        let mut lines = FileLines::default();
        for (id, statement) in &file.statement_map {
            let hits = file.s.get(id).copied().unwrap_or(0);
            let entry = lines.lines.entry(statement.start.line).or_insert(0);
            *entry = (*entry).max(hits);
        }
        summary.lines_found = summary.lines_found.saturating_add(lines.lines.len() as u64);
        summary.lines_hit = summary
            .lines_hit
            .saturating_add(lines.lines.values().filter(|h| **h > 0).count() as u64);
        if opts.keeps_lines(&name) {
            summary.files.insert(name, lines);
        }
    }
    Ok(summary)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FileCoverage {
    path: Option<String>,
    statement_map: BTreeMap<String, Span>,
    s: BTreeMap<String, u64>,
}

#[derive(Deserialize)]
struct Span {
    start: Position,
}

#[derive(Deserialize)]
struct Position {
    line: u32,
}
