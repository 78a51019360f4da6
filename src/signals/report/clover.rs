//! Clover XML (istanbul/nyc/vitest/jest `--coverage.reporter=clover`, PHPUnit
//! `--coverage-clover`, Kover): `<coverage>` / `<project>` / (`<package>` /) `<file
//! name path>` / `<line num count type>`.
//!
//! A `<line>` of type `stmt` or `cond` is an executable line, hit when `count > 0` (a
//! `cond` line also carries `truecount`/`falsecount`; its `count` says whether it ran). A
//! `method` line is the function's declaration and is not counted, as LCOV's `DA:` lines
//! do not count it. A line listed twice in a file (a statement and a condition on the same
//! line) is found once. A file's name is its `path` when given (istanbul writes the
//! absolute path there), else its `name` (PHPUnit's absolute path); absolute paths are made
//! relative to the checkout afterwards, like every report's. A report with no `<line>` at
//! all falls back to the project's `<metrics statements coveredstatements>`.

use std::collections::btree_map::Entry;
use std::io::BufRead;

use quick_xml::events::BytesStart;

use super::input::{Ctx, Input};
use super::types::{CoverageSummary, FileLines};
use super::xml::{drive, for_each_attr, number_attr, XmlHandler};
use super::{ParseError, ParseOptions};

pub(crate) fn parse<R: BufRead>(
    input: &mut Input<R>,
    ctx: &Ctx,
    opts: &ParseOptions,
) -> Result<CoverageSummary, ParseError> {
    let mut handler = CloverHandler {
        opts,
        summary: CoverageSummary::default(),
        declared: (None, None),
        project_depth: None,
        file: None,
        saw_line: false,
    };
    drive(input, ctx, &mut handler)?;
    Ok(handler.finish())
}

struct OpenFile {
    depth: usize,
    name: String,
    /// (line, count) as listed; summed per line when the file ends.
    lines: Vec<(u32, u64)>,
}

struct CloverHandler<'o> {
    opts: &'o ParseOptions<'o>,
    summary: CoverageSummary,
    /// The project's `<metrics statements coveredstatements>`.
    declared: (Option<u64>, Option<u64>),
    project_depth: Option<usize>,
    file: Option<OpenFile>,
    saw_line: bool,
}

impl XmlHandler for CloverHandler<'_> {
    fn roots(&self) -> &'static [&'static str] {
        &["coverage"]
    }

    fn start(&mut self, name: &[u8], depth: usize, e: &BytesStart) -> Result<(), String> {
        match name {
            b"coverage" if depth == 0 => Ok(()),
            b"packages" | b"sources" if depth == 1 => Err(format!(
                "a <{}> under <coverage> is Cobertura's layout, not Clover's <project>; give it as `cobertura`",
                String::from_utf8_lossy(name)
            )),
            b"project" if depth == 1 => {
                self.project_depth = Some(depth);
                Ok(())
            }
            b"metrics" if self.project_depth.is_some_and(|d| d + 1 == depth) => {
                self.project_metrics(e)
            }
            b"file" => self.open_file(depth, e),
            b"line" => self.line(depth, e),
            _ => Ok(()),
        }
    }

    fn end(&mut self, name: &[u8], depth: usize) -> Result<(), String> {
        if name == b"file" && self.file.as_ref().is_some_and(|f| f.depth == depth) {
            let mut file = self.file.take().expect("checked above");
            file.lines.sort_unstable_by_key(|(line, _)| *line);
            let mut summed: Vec<(u32, u64)> = Vec::with_capacity(file.lines.len());
            for (line, hits) in file.lines {
                match summed.last_mut() {
                    Some((last, total)) if *last == line => *total = total.saturating_add(hits),
                    _ => summed.push((line, hits)),
                }
            }
            let file_lines = FileLines {
                lines: summed.into_iter().collect(),
            };
            self.summary.lines_found = self
                .summary
                .lines_found
                .saturating_add(file_lines.lines.len() as u64);
            self.summary.lines_hit = self
                .summary
                .lines_hit
                .saturating_add(file_lines.lines.values().filter(|h| **h > 0).count() as u64);
            if self.opts.keeps_lines(&file.name) {
                match self.summary.files.entry(file.name) {
                    Entry::Vacant(slot) => {
                        slot.insert(file_lines);
                    }
                    Entry::Occupied(mut merged) => {
                        for (line, hits) in file_lines.lines {
                            merged.get_mut().add(line, hits);
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

impl CloverHandler<'_> {
    fn project_metrics(&mut self, e: &BytesStart) -> Result<(), String> {
        for_each_attr(e, &[b"statements", b"coveredstatements"], |key, value| {
            match key {
                b"statements" => self.declared.0 = Some(number_attr("statements", &value)?),
                b"coveredstatements" => {
                    self.declared.1 = Some(number_attr("coveredstatements", &value)?)
                }
                _ => {}
            }
            Ok(())
        })
    }

    fn open_file(&mut self, depth: usize, e: &BytesStart) -> Result<(), String> {
        if self.file.is_some() {
            return Err("a <file> nested inside another <file>".to_string());
        }
        let (mut path, mut name) = (None, None);
        for_each_attr(e, &[b"path", b"name"], |key, value| {
            match key {
                b"path" => path = Some(value.into_owned()),
                b"name" => name = Some(value.into_owned()),
                _ => {}
            }
            Ok(())
        })?;
        let name = path
            .or(name)
            .ok_or_else(|| "a <file> with neither a path nor a name attribute".to_string())?;
        self.file = Some(OpenFile {
            depth,
            name,
            lines: Vec::new(),
        });
        Ok(())
    }

    fn line(&mut self, depth: usize, e: &BytesStart) -> Result<(), String> {
        let Some(file) = self.file.as_mut().filter(|f| f.depth + 1 == depth) else {
            return Ok(());
        };
        let (mut number, mut count, mut kind) = (None, None, None);
        for_each_attr(e, &[b"num", b"count", b"type"], |key, value| {
            match key {
                b"num" => number = Some(number_attr("num", &value)?),
                b"count" => count = Some(number_attr("count", &value)?),
                b"type" => kind = Some(value),
                _ => {}
            }
            Ok(())
        })?;
        let number = number.ok_or("a <line> without a num attribute")?;
        let number =
            u32::try_from(number).map_err(|_| format!("line number {number} is too large"))?;
        let count = count.ok_or("a <line> without a count attribute")?;
        self.saw_line = true;
        match kind.as_deref() {
            Some("method") => {}
            Some("stmt" | "cond") | None => file.lines.push((number, count)),
            Some(other) => {
                return Err(format!(
                    "a <line> of type `{other}`; expected `stmt`, `cond` or `method`"
                ))
            }
        }
        Ok(())
    }

    fn finish(mut self) -> CoverageSummary {
        if !self.saw_line {
            if let (Some(statements), Some(covered)) = self.declared {
                self.summary.lines_found = statements;
                self.summary.lines_hit = covered.min(statements);
            }
        }
        self.summary
    }
}
