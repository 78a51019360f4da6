//! Go coverage profiles (`go test -coverprofile`): a `mode: set|count|atomic` line, then
//! one block a line, `file.go:startLine.startCol,endLine.endCol statements count`.
//!
//! Every line a block spans counts as instrumented, hit when any block over it ran (blocks
//! share their boundary lines, and `-coverpkg` repeats a file's blocks once per package).
//! Files are named by import path (`example.com/mod/pkg/file.go`); the repository's
//! `go.mod` turns them into repository paths when the report is normalised. A profile
//! without its `mode:` line, or a block that does not parse, is an error naming the line.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::BufRead;

use super::error::Position;
use super::input::{for_each_line, Ctx, Input};
use super::text::{lossy, parse_u32, parse_u64};
use super::types::{CoverageSummary, FileLines};
use super::{ParseError, ParseOptions};

pub(crate) fn parse<R: BufRead>(
    input: &mut Input<R>,
    ctx: &Ctx,
    opts: &ParseOptions,
) -> Result<CoverageSummary, ParseError> {
    let mut saw_mode = false;
    // Each file's (line, hits) as the blocks list them; merged once at the end.
    let mut files: BTreeMap<String, Vec<(u32, u64)>> = BTreeMap::new();
    let last_line = for_each_line(input, ctx, |line_no, raw| {
        let line = raw.trim_ascii();
        if line.is_empty() {
            return Ok(());
        }
        if let Some(mode) = line.strip_prefix(b"mode: ") {
            if !matches!(mode.trim_ascii(), b"set" | b"count" | b"atomic") {
                return Err(ctx.line(
                    line_no,
                    format!(
                        "unknown coverage mode `{}`; expected set, count or atomic",
                        lossy(mode)
                    ),
                ));
            }
            // `go test ./...` with several packages concatenates profiles: a mode line each.
            saw_mode = true;
            return Ok(());
        }
        if !saw_mode {
            return Err(ctx.line(
                line_no,
                "expected the profile's first line `mode: set|count|atomic`".to_string(),
            ));
        }
        let (file, start, end, count) = block(line).ok_or_else(|| {
            ctx.line(
                line_no,
                format!(
                    "expected a block `file.go:line.col,line.col statements count`, found `{}`",
                    lossy(line)
                ),
            )
        })?;
        let lines = match files.get_mut(file.as_ref()) {
            Some(lines) => lines,
            None => files.entry(file.into_owned()).or_default(),
        };
        lines.extend((start..=end).map(|n| (n, count)));
        Ok(())
    })?;
    if !saw_mode {
        return Err(ctx.expected(
            Position::line(last_line),
            "no `mode:` line: not a Go coverage profile",
        ));
    }
    let mut summary = CoverageSummary::default();
    for (file, mut spans) in files {
        // By line, the most hits first: the one kept of each line.
        spans.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        spans.dedup_by_key(|(line, _)| *line);
        let lines = FileLines {
            lines: spans.into_iter().collect(),
        };
        let found = lines.lines.len() as u64;
        let hit = lines.lines.values().filter(|h| **h > 0).count() as u64;
        summary.lines_found = summary.lines_found.saturating_add(found);
        summary.lines_hit = summary.lines_hit.saturating_add(hit);
        if opts.keeps_lines(&file) {
            summary.files.insert(file, lines);
        }
    }
    Ok(summary)
}

/// `file.go:3.14,5.2 1 0` → (file, 3, 5, 0).
fn block(line: &[u8]) -> Option<(Cow<'_, str>, u32, u32, u64)> {
    let colon = line.iter().rposition(|b| *b == b':')?;
    let (file, rest) = (line.get(..colon)?, line.get(colon + 1..)?);
    if file.is_empty() {
        return None;
    }
    let mut fields = rest.split(|b| *b == b' ').filter(|f| !f.is_empty());
    let span = fields.next()?;
    let _statements = parse_u64(fields.next()?)?;
    let count = parse_u64(fields.next()?)?;
    if fields.next().is_some() {
        return None;
    }
    let comma = span.iter().position(|b| *b == b',')?;
    let line_of = |pos: &[u8]| -> Option<u32> {
        let dot = pos.iter().position(|b| *b == b'.')?;
        parse_u32(pos.get(dot + 1..)?)?;
        parse_u32(pos.get(..dot)?)
    };
    let start = line_of(span.get(..comma)?)?;
    let end = line_of(span.get(comma + 1..)?)?;
    if end < start || end - start > 1_000_000 {
        return None;
    }
    Some((lossy(file), start, end, count))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_is_read() {
        assert_eq!(
            block(b"example.com/m/pkg/a.go:3.14,5.2 1 0"),
            Some(("example.com/m/pkg/a.go".into(), 3, 5, 0))
        );
        assert_eq!(block(b"a.go:5.2,3.14 1 0"), None);
        assert_eq!(block(b"a.go:3.14,5.2 1"), None);
    }
}
