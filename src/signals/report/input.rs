//! The reader every parser pulls from: a `BufRead` wrapper that knows how far it has read
//! (bytes, and lines when asked) so an error can name its place, plus the line loop the
//! text formats share. Lines are handed out as slices of the read buffer; only a line that
//! straddles two buffer fills is copied.

use std::io::{self, BufRead, Read};

use super::error::{ParseError, Position};
use super::ReportFormat;

/// Longest line a text format may have; guards memory against newline-free garbage.
pub(crate) const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

pub(crate) struct Input<R> {
    inner: R,
    count_lines: bool,
    consumed: u64,
    /// Newlines consumed so far (when counting).
    newlines: u64,
    /// Offset just past the last consumed newline (when counting).
    line_start: u64,
}

impl<R: BufRead> Input<R> {
    pub(crate) fn new(inner: R, count_lines: bool) -> Self {
        Input {
            inner,
            count_lines,
            consumed: 0,
            newlines: 0,
            line_start: 0,
        }
    }

    /// Where reading stands now.
    pub(crate) fn position(&self) -> Position {
        self.position_at(self.consumed)
    }

    /// The place of byte `offset`, with line and column when they are known for it.
    pub(crate) fn position_at(&self, offset: u64) -> Position {
        let mut pos = Position {
            byte: Some(offset),
            ..Position::default()
        };
        if self.count_lines && offset >= self.line_start && offset <= self.consumed {
            pos.line = Some(self.newlines.saturating_add(1));
            pos.column = Some(offset - self.line_start + 1);
        }
        pos
    }

    /// 1-based number of the line reading stands on (valid while counting).
    fn line_number(&self) -> u64 {
        self.newlines.saturating_add(1)
    }

    /// Skips a UTF-8 byte order mark and leading whitespace; true when nothing else is left.
    pub(crate) fn skip_blank_prefix(&mut self) -> io::Result<bool> {
        loop {
            let buf = self.inner.fill_buf()?;
            if buf.is_empty() {
                return Ok(true);
            }
            let bom = if self.consumed == 0 && buf.starts_with(UTF8_BOM) {
                UTF8_BOM.len()
            } else {
                0
            };
            let rest = buf.get(bom..).unwrap_or_default();
            let blank = rest.iter().take_while(|b| b.is_ascii_whitespace()).count();
            let all_blank = bom + blank == buf.len();
            self.consume(bom + blank);
            if !all_blank {
                return Ok(false);
            }
        }
    }
}

impl<R: BufRead> Read for Input<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let buf = self.inner.fill_buf()?;
        let n = buf.len().min(out.len());
        if let (Some(dst), Some(src)) = (out.get_mut(..n), buf.get(..n)) {
            dst.copy_from_slice(src);
        }
        self.consume(n);
        Ok(n)
    }
}

impl<R: BufRead> BufRead for Input<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.inner.fill_buf()
    }

    fn consume(&mut self, amt: usize) {
        if self.count_lines && amt > 0 {
            if let Ok(buf) = self.inner.fill_buf() {
                let done = buf.get(..amt).unwrap_or(buf);
                let newlines = memchr::memchr_iter(b'\n', done).count() as u64;
                if let Some(last) = memchr::memrchr(b'\n', done) {
                    self.newlines = self.newlines.saturating_add(newlines);
                    self.line_start = self.consumed + last as u64 + 1;
                }
            }
        }
        self.consumed = self.consumed.saturating_add(amt as u64);
        self.inner.consume(amt);
    }
}

/// What a parser knows about the report it is reading, to build errors.
pub(crate) struct Ctx<'a> {
    pub format: ReportFormat,
    pub source: &'a str,
}

impl Ctx<'_> {
    pub(crate) fn at(&self, pos: Position, message: String) -> ParseError {
        ParseError {
            source_name: self.source.to_string(),
            line: pos.line,
            column: pos.column,
            byte: pos.byte,
            format: self.format,
            message,
        }
    }

    /// An error that says the input is not (or no longer) this format.
    pub(crate) fn expected(&self, pos: Position, what_went_wrong: &str) -> ParseError {
        self.at(
            pos,
            format!("{what_went_wrong}; expected {}", self.format.expected()),
        )
    }

    pub(crate) fn line(&self, line: u64, message: String) -> ParseError {
        self.at(Position::line(line), message)
    }

    pub(crate) fn io<R: BufRead>(&self, input: &Input<R>, err: &io::Error) -> ParseError {
        self.at(input.position(), format!("cannot read the report: {err}"))
    }
}

/// Calls `each(line_number, line)` for every line (without its `\n` or `\r\n`).
///
/// Lines with a NUL byte are rejected: no text report has one, and binary garbage does.
pub(crate) fn for_each_line<R: BufRead>(
    input: &mut Input<R>,
    ctx: &Ctx,
    mut each: impl FnMut(u64, &[u8]) -> Result<(), ParseError>,
) -> Result<u64, ParseError> {
    let mut line_no = input.line_number();
    input.count_lines = false;
    let mut carry: Vec<u8> = Vec::new();
    loop {
        let buf = match input.inner.fill_buf() {
            Ok(buf) => buf,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(ctx.line(line_no, format!("cannot read the report: {e}"))),
        };
        if buf.is_empty() {
            if !carry.is_empty() {
                checked_line(ctx, line_no, &carry, &mut each)?;
                line_no += 1;
            }
            return Ok(line_no.saturating_sub(1));
        }
        let mut start = 0;
        for newline in memchr::memchr_iter(b'\n', buf) {
            let piece = buf.get(start..newline).unwrap_or_default();
            if carry.is_empty() {
                checked_line(ctx, line_no, piece, &mut each)?;
            } else {
                carry.extend_from_slice(piece);
                checked_line(ctx, line_no, &carry, &mut each)?;
                carry.clear();
            }
            line_no += 1;
            start = newline + 1;
        }
        carry.extend_from_slice(buf.get(start..).unwrap_or_default());
        if carry.len() > MAX_LINE_BYTES {
            return Err(ctx.expected(
                Position::line(line_no),
                "line longer than 16 MiB (binary data?)",
            ));
        }
        let len = buf.len();
        input.consumed = input.consumed.saturating_add(len as u64);
        input.inner.consume(len);
    }
}

fn checked_line(
    ctx: &Ctx,
    line_no: u64,
    line: &[u8],
    each: &mut impl FnMut(u64, &[u8]) -> Result<(), ParseError>,
) -> Result<(), ParseError> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if memchr::memchr(0, line).is_some() {
        return Err(ctx.expected(Position::line(line_no), "binary data (a NUL byte)"));
    }
    each(line_no, line)
}
