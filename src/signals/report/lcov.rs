//! LCOV tracefiles (lcov/geninfo, coverage.py `coverage lcov`, cargo-llvm-cov, grcov, c8):
//! records of `SF:path` ... `end_of_record` with `DA:line,hits[,checksum]` lines and the
//! `LF:`/`LH:` totals.
//!
//! Line counts come from the `DA:` lines when a record has any (they are the data; `LF`/`LH`
//! are derived and some tools get them wrong); a record without `DA:` lines contributes its
//! `LF`/`LH`, which are believed only when plausible: `LH` is capped at `LF`, and an `LF`
//! above [`MAX_DECLARED_LINES`] is ignored (a record of `LF:18446744073709551615` must not
//! outweigh every real file). Repeated `DA:` entries for one line are merged (hits summed),
//! within a record and across records of the same `SF:` (as `lcov -a` merges tracefiles):
//! a file's line counts once however many records name it. So the executable lines of
//! every file are kept until the end, packed in four bytes each; per-line hit counts are
//! kept only for files the caller's filter accepts. Other record types (`TN`, `FN`,
//! `BRDA`, `VER`, ...) are skipped.
//!
//! This is the hot loop for big monorepo reports: lines are parsed as bytes straight out of
//! the read buffer, with no allocation per line.

use std::collections::HashMap;
use std::io::BufRead;

use super::error::Position;
use super::input::{for_each_block, Ctx, Input};
use super::text::parse_u64;
use super::types::{CoverageSummary, FileLines};
use super::{ParseError, ParseOptions};

pub(crate) fn parse<R: BufRead>(
    input: &mut Input<R>,
    ctx: &Ctx,
    opts: &ParseOptions,
) -> Result<CoverageSummary, ParseError> {
    let mut state = LcovState {
        opts,
        summary: CoverageSummary::default(),
        per_file: HashMap::new(),
        record: None,
        lines: Vec::new(),
        saw_any: false,
    };
    let last_line = for_each_block(input, ctx, |line_no, block| {
        state.block(ctx, line_no, block)
    })?;
    state.finish(ctx, last_line)
}

struct Record {
    start_line: u64,
    file: String,
    keep: bool,
    /// DA line numbers came strictly increasing (no duplicates to merge).
    ascending: bool,
    last_line: u32,
    found: u64,
    hit: u64,
    lf: Option<u64>,
    lh: Option<u64>,
}

/// Most lines a record's `LF:` may declare to be believed: no source file has 16 million
/// executable lines.
pub(crate) const MAX_DECLARED_LINES: u64 = 1 << 24;

/// What the records of one file said, merged.
#[derive(Default)]
struct FileTotals {
    /// Executable lines from `DA:` entries, sorted, each `line << 1 | covered`.
    lines: Vec<u32>,
    /// `LF`/`LH` of records without `DA:` lines (the larger, when several).
    declared: Option<(u64, u64)>,
}

impl FileTotals {
    fn add_lines(&mut self, sorted: &[(u32, u64)]) {
        let packed = sorted
            .iter()
            .map(|&(line, hits)| line << 1 | u32::from(hits > 0));
        if self.lines.is_empty() {
            self.lines.extend(packed);
            return;
        }
        let old = std::mem::take(&mut self.lines);
        let mut merged = Vec::with_capacity(old.len().max(sorted.len()));
        let (mut a, mut b) = (old.into_iter().peekable(), packed.peekable());
        loop {
            let next = match (a.peek(), b.peek()) {
                (Some(&x), Some(&y)) if x >> 1 == y >> 1 => {
                    a.next();
                    b.next();
                    x | y
                }
                (Some(&x), Some(&y)) if x < y => a.next().unwrap_or(x),
                (Some(_), Some(&y)) => b.next().unwrap_or(y),
                (Some(_), None) => a.next().unwrap_or_default(),
                (None, Some(_)) => b.next().unwrap_or_default(),
                (None, None) => break,
            };
            merged.push(next);
        }
        self.lines = merged;
    }

    /// (found, hit): the lines seen, else the declared totals.
    fn totals(&self) -> (u64, u64) {
        if self.lines.is_empty() {
            return self.declared.unwrap_or_default();
        }
        let hit = self.lines.iter().filter(|l| *l & 1 == 1).count();
        (self.lines.len() as u64, hit as u64)
    }
}

struct LcovState<'o> {
    opts: &'o ParseOptions<'o>,
    summary: CoverageSummary,
    per_file: HashMap<String, FileTotals>,
    record: Option<Record>,
    /// The current record's DA entries, for merging duplicates and keeping lines; reused.
    lines: Vec<(u32, u64)>,
    saw_any: bool,
}

impl LcovState<'_> {
    /// Parses a block of whole lines. A plain `DA:<line>,<hits>\n` (nearly every line of a
    /// big report) is parsed in the same pass that finds its end; anything else goes
    /// through [`Self::line`].
    fn block(&mut self, ctx: &Ctx, mut line_no: u64, block: &[u8]) -> Result<u64, ParseError> {
        let mut rest = block;
        while !rest.is_empty() {
            if let Some((number, hits, len)) = rest.strip_prefix(b"DA:").and_then(plain_da) {
                self.da_values(ctx, line_no, number, hits)?;
                rest = rest.get(3 + len..).unwrap_or_default();
            } else {
                let end = memchr::memchr(b'\n', rest).map_or(rest.len(), |i| i + 1);
                let (line, tail) = rest.split_at(end);
                let line = line.strip_suffix(b"\n").unwrap_or(line);
                self.line(ctx, line_no, line.strip_suffix(b"\r").unwrap_or(line))?;
                rest = tail;
            }
            line_no += 1;
        }
        Ok(line_no)
    }

    fn line(&mut self, ctx: &Ctx, line_no: u64, line: &[u8]) -> Result<(), ParseError> {
        if let Some(rest) = line.strip_prefix(b"DA:") {
            return self.da(ctx, line_no, rest);
        }
        if let Some(path) = line.strip_prefix(b"SF:") {
            return self.start_record(ctx, line_no, path);
        }
        if line == b"end_of_record" {
            return self.end_record(ctx, line_no);
        }
        if line.starts_with(b"TN:") {
            // A tracefile of no file at all (node writes `TN:` alone when nothing loaded)
            // is LCOV that covered nothing, not another format.
            self.saw_any = true;
            return Ok(());
        }
        let total = |rest: &[u8]| {
            parse_u64(rest.trim_ascii()).ok_or_else(|| {
                ctx.line(
                    line_no,
                    format!("bad LCOV total `{}`", String::from_utf8_lossy(line)),
                )
            })
        };
        if let Some(rest) = line.strip_prefix(b"LF:") {
            let value = total(rest)?;
            self.open(ctx, line_no, "LF")?.lf = Some(value);
        } else if let Some(rest) = line.strip_prefix(b"LH:") {
            let value = total(rest)?;
            self.open(ctx, line_no, "LH")?.lh = Some(value);
        } else if !is_record_line(line) {
            let shown = String::from_utf8_lossy(line.get(..line.len().min(40)).unwrap_or_default())
                .into_owned();
            return Err(ctx.expected(
                Position::line(line_no),
                &format!("unrecognised line `{shown}`"),
            ));
        }
        Ok(())
    }

    fn open(&mut self, ctx: &Ctx, line_no: u64, tag: &str) -> Result<&mut Record, ParseError> {
        self.record.as_mut().ok_or_else(|| {
            ctx.line(
                line_no,
                format!("{tag}: outside a record (no SF: line before it)"),
            )
        })
    }

    #[inline]
    fn da(&mut self, ctx: &Ctx, line_no: u64, rest: &[u8]) -> Result<(), ParseError> {
        let bad = || {
            let shown = String::from_utf8_lossy(rest.get(..rest.len().min(40)).unwrap_or_default())
                .into_owned();
            ctx.line(
                line_no,
                format!("bad DA line `DA:{shown}`; expected DA:<line>,<hits>"),
            )
        };
        let (number, tail) = leading_number(rest).ok_or_else(bad)?;
        let tail = tail.strip_prefix(b",").ok_or_else(bad)?;
        let (hits, tail) = leading_number(tail).ok_or_else(bad)?;
        if !(tail.is_empty() || tail.starts_with(b",")) {
            return Err(bad()); // anything but the optional checksum
        }
        let number = u32::try_from(number)
            .ok()
            .filter(|n| *n <= MAX_LINE_NUMBER)
            .ok_or_else(bad)?;
        self.da_values(ctx, line_no, number, hits)
    }

    #[inline]
    fn da_values(
        &mut self,
        ctx: &Ctx,
        line_no: u64,
        number: u32,
        hits: u64,
    ) -> Result<(), ParseError> {
        let Some(record) = self.record.as_mut() else {
            return Err(ctx.line(
                line_no,
                "DA: outside a record (no SF: line before it)".to_string(),
            ));
        };
        if number <= record.last_line {
            record.ascending = false;
        }
        record.last_line = number;
        record.found += 1;
        record.hit += u64::from(hits > 0);
        // Always kept (the vector is reused, so this is a store, not an allocation): a
        // duplicate can show up after many lines, and merging needs them all.
        self.lines.push((number, hits));
        Ok(())
    }

    fn start_record(&mut self, ctx: &Ctx, line_no: u64, path: &[u8]) -> Result<(), ParseError> {
        if let Some(open) = &self.record {
            let msg = format!(
                "SF: inside the record for {} opened at line {} (missing end_of_record)",
                open.file, open.start_line
            );
            return Err(ctx.line(line_no, msg));
        }
        let file = std::str::from_utf8(path)
            .map_err(|_| ctx.line(line_no, "SF: path is not valid UTF-8".to_string()))?
            .trim()
            .to_string();
        self.lines.clear();
        self.record = Some(Record {
            start_line: line_no,
            keep: self.opts.keeps_lines(&file),
            file,
            ascending: true,
            last_line: 0,
            found: 0,
            hit: 0,
            lf: None,
            lh: None,
        });
        self.saw_any = true;
        Ok(())
    }

    fn end_record(&mut self, ctx: &Ctx, line_no: u64) -> Result<(), ParseError> {
        let Some(record) = self.record.take() else {
            return Err(ctx.line(
                line_no,
                "end_of_record without an SF: line before it".to_string(),
            ));
        };
        let totals = self.per_file.entry(record.file.clone()).or_default();
        if record.found == 0 {
            let declared = record
                .lf
                .filter(|lf| *lf <= MAX_DECLARED_LINES)
                .map(|lf| (lf, record.lh.unwrap_or(0).min(lf)));
            if declared.map(|d| d.0) > totals.declared.map(|d| d.0) {
                totals.declared = declared;
            }
        } else {
            if !record.ascending {
                self.lines.sort_unstable_by_key(|&(line, _)| line);
                merge_duplicates(&mut self.lines);
            }
            totals.add_lines(&self.lines);
        }
        if record.keep {
            let file: &mut FileLines = self.summary.files.entry(record.file).or_default();
            for &(line, hits) in &self.lines {
                file.add(line, hits);
            }
        }
        self.lines.clear();
        Ok(())
    }

    fn finish(self, ctx: &Ctx, last_line: u64) -> Result<CoverageSummary, ParseError> {
        if let Some(open) = self.record {
            let msg = format!(
                "unexpected end of file inside the record for {} opened at line {} (no end_of_record)",
                open.file, open.start_line
            );
            return Err(ctx.expected(Position::line(last_line), &msg));
        }
        if !self.saw_any {
            return Err(ctx.expected(Position::line(last_line), "no SF: record"));
        }
        let mut summary = self.summary;
        for totals in self.per_file.values() {
            let (found, hit) = totals.totals();
            summary.lines_found = summary.lines_found.saturating_add(found);
            summary.lines_hit = summary.lines_hit.saturating_add(hit.min(found));
        }
        Ok(summary)
    }
}

/// Largest `DA:` line number (line numbers are packed with a covered bit into a `u32`).
const MAX_LINE_NUMBER: u32 = u32::MAX >> 1;

/// Sums the hits of adjacent entries for the same line (the vector is sorted by line).
fn merge_duplicates(lines: &mut Vec<(u32, u64)>) {
    lines.dedup_by(|later, earlier| {
        if later.0 == earlier.0 {
            earlier.1 = earlier.1.saturating_add(later.1);
            true
        } else {
            false
        }
    });
}

/// `<line>,<hits>\n` exactly (after `DA:`): the values and the length including the
/// newline. Anything else (a checksum, `\r`, a malformed line) is left to the slow path.
#[inline]
fn plain_da(bytes: &[u8]) -> Option<(u32, u64, usize)> {
    let (number, rest) = leading_number(bytes)?;
    let after_comma = rest.strip_prefix(b",")?;
    let (hits, rest) = leading_number(after_comma)?;
    if rest.first() != Some(&b'\n') {
        return None;
    }
    let len = bytes.len() - rest.len() + 1;
    let number = u32::try_from(number)
        .ok()
        .filter(|n| *n <= MAX_LINE_NUMBER)?;
    Some((number, hits, len))
}

/// The number the bytes start with, and the rest; `None` without digits or on overflow.
#[inline]
fn leading_number(bytes: &[u8]) -> Option<(u64, &[u8])> {
    let mut value: u64 = 0;
    let mut digits = 0;
    for &b in bytes {
        let digit = b.wrapping_sub(b'0');
        if digit > 9 {
            break;
        }
        value = value.checked_mul(10)?.checked_add(u64::from(digit))?;
        digits += 1;
    }
    (digits > 0).then(|| (value, bytes.get(digits..).unwrap_or_default()))
}

/// `TAG:...` with an upper-case tag (`TN`, `FN`, `FNDA`, `BRDA`, `VER`, ...), or a blank line.
fn is_record_line(line: &[u8]) -> bool {
    if line.trim_ascii().is_empty() {
        return true;
    }
    let tag_len = line
        .iter()
        .take_while(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || **b == b'_')
        .count();
    tag_len > 0 && line.get(tag_len) == Some(&b':')
}
