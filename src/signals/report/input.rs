//! The reader every parser pulls from: a `BufRead` that knows where it is (byte, line and
//! column) so an error can name its place, plus the line loop the text formats share.
//!
//! It reads the caller's input in chunks into its own buffer and counts newlines once per
//! chunk, when the chunk has been used up, rather than on every `consume`: XML parsing
//! consumes once per event, and counting there cost a tenth of a JUnit parse. A position
//! inside the current chunk is computed on demand (only errors ask). Lines are handed out as
//! slices of the chunk; only a line that straddles two chunks is copied.

use std::io::{self, BufRead, Read};

use super::error::{ParseError, Position};
use super::ReportFormat;

/// Longest line a text format may have; guards memory against newline-free garbage.
pub(crate) const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// Most bytes taken from the caller's reader at once.
const CHUNK_BYTES: usize = 256 * 1024;

const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

pub(crate) struct Input<R> {
    inner: R,
    chunk: Vec<u8>,
    /// Bytes of `chunk` already consumed.
    pos: usize,
    /// Offset of `chunk[0]` in the whole input.
    chunk_start: u64,
    /// Newlines before `chunk_start`.
    newlines_before: u64,
    /// Offset just past the last newline before `chunk_start` (0 if none).
    line_start_before: u64,
}

impl<R: BufRead> Input<R> {
    pub(crate) fn new(inner: R) -> Self {
        Input {
            inner,
            chunk: Vec::new(),
            pos: 0,
            chunk_start: 0,
            newlines_before: 0,
            line_start_before: 0,
        }
    }

    /// The byte offset reading stands at (cheap: no line counting).
    pub(crate) fn offset(&self) -> u64 {
        self.chunk_start + self.pos as u64
    }

    /// Where reading stands now.
    pub(crate) fn position(&self) -> Position {
        self.position_at(self.chunk_start + self.pos as u64)
    }

    /// The place of byte `offset`, with line and column when `offset` is in the current
    /// chunk (always so for the current position and the end of the input).
    pub(crate) fn position_at(&self, offset: u64) -> Position {
        let mut pos = Position {
            byte: Some(offset),
            ..Position::default()
        };
        let Some(prefix) = offset
            .checked_sub(self.chunk_start)
            .and_then(|within| usize::try_from(within).ok())
            .and_then(|within| self.chunk.get(..within))
        else {
            return pos;
        };
        let newlines = memchr::memchr_iter(b'\n', prefix).count() as u64;
        let line_start = match memchr::memrchr(b'\n', prefix) {
            Some(i) => self.chunk_start + i as u64 + 1,
            None => self.line_start_before,
        };
        pos.line = Some(self.newlines_before + newlines + 1);
        pos.column = Some(offset - line_start + 1);
        pos
    }

    /// Drops the used-up chunk (counting its newlines) and reads the next one.
    fn refill(&mut self) -> io::Result<()> {
        let newlines = memchr::memchr_iter(b'\n', &self.chunk).count() as u64;
        if let Some(last) = memchr::memrchr(b'\n', &self.chunk) {
            self.newlines_before += newlines;
            self.line_start_before = self.chunk_start + last as u64 + 1;
        }
        self.chunk_start += self.chunk.len() as u64;
        self.chunk.clear();
        self.pos = 0;
        loop {
            match self.inner.fill_buf() {
                Ok(src) => {
                    let take = src.len().min(CHUNK_BYTES);
                    self.chunk
                        .extend_from_slice(src.get(..take).unwrap_or_default());
                    self.inner.consume(take);
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Skips a UTF-8 byte order mark and leading whitespace; true when nothing else is left.
    pub(crate) fn skip_blank_prefix(&mut self) -> io::Result<bool> {
        loop {
            let at_start = self.chunk_start + self.pos as u64 == 0;
            let buf = self.fill_buf()?;
            if buf.is_empty() {
                return Ok(true);
            }
            let bom = if at_start && buf.starts_with(UTF8_BOM) {
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
        let buf = self.fill_buf()?;
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
        if self.pos >= self.chunk.len() {
            self.refill()?;
        }
        Ok(self.chunk.get(self.pos..).unwrap_or_default())
    }

    fn consume(&mut self, amt: usize) {
        self.pos = self.pos.saturating_add(amt).min(self.chunk.len());
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
    for_each_block(input, ctx, |mut line_no, block| {
        for line in split_lines(block) {
            each(line_no, line)?;
            line_no += 1;
        }
        Ok(line_no)
    })
}

/// The lines of a block from [`for_each_block`], without their `\n` or `\r\n`.
pub(crate) fn split_lines(block: &[u8]) -> impl Iterator<Item = &[u8]> {
    let block = block.strip_suffix(b"\n").unwrap_or(block);
    block
        .split(|&b| b == b'\n')
        .map(|line| line.strip_suffix(b"\r").unwrap_or(line))
}

/// Calls `each(first_line_number, block)` with runs of whole lines straight out of the read
/// buffer; each block ends with `\n` except perhaps the input's last. `each` returns the
/// number of the line after the block. Formats with a hot line type (LCOV's `DA:`) scan
/// blocks themselves; the rest use [`for_each_line`].
///
/// Blocks with a NUL byte are rejected: no text report has one, and binary garbage does.
pub(crate) fn for_each_block<R: BufRead>(
    input: &mut Input<R>,
    ctx: &Ctx,
    mut each: impl FnMut(u64, &[u8]) -> Result<u64, ParseError>,
) -> Result<u64, ParseError> {
    let mut line_no = input.position().line.unwrap_or(1);
    let mut carry: Vec<u8> = Vec::new();
    loop {
        let buf = match input.fill_buf() {
            Ok(buf) => buf,
            Err(e) => return Err(ctx.line(line_no, format!("cannot read the report: {e}"))),
        };
        if buf.is_empty() {
            if !carry.is_empty() {
                line_no = checked_block(ctx, line_no, &carry, &mut each)?;
            }
            return Ok(line_no.saturating_sub(1));
        }
        let len = buf.len();
        let Some(last_newline) = memchr::memrchr(b'\n', buf) else {
            carry.extend_from_slice(buf);
            if carry.len() > MAX_LINE_BYTES {
                let msg = "line longer than 16 MiB (binary data?)";
                return Err(ctx.expected(Position::line(line_no), msg));
            }
            input.consume(len);
            continue;
        };
        let (whole, partial) = buf.split_at(last_newline + 1);
        let mut whole = whole;
        if !carry.is_empty() {
            // Finish the line that started in the previous chunk.
            let end = memchr::memchr(b'\n', whole).map_or(whole.len(), |i| i + 1);
            let (head, tail) = whole.split_at(end);
            carry.extend_from_slice(head);
            line_no = checked_block(ctx, line_no, &carry, &mut each)?;
            carry.clear();
            whole = tail;
        }
        if !whole.is_empty() {
            line_no = checked_block(ctx, line_no, whole, &mut each)?;
        }
        carry.extend_from_slice(partial);
        input.consume(len);
    }
}

fn checked_block(
    ctx: &Ctx,
    line_no: u64,
    block: &[u8],
    each: &mut impl FnMut(u64, &[u8]) -> Result<u64, ParseError>,
) -> Result<u64, ParseError> {
    if let Some(nul) = memchr::memchr(0, block) {
        let before = block.get(..nul).unwrap_or_default();
        let line = line_no + memchr::memchr_iter(b'\n', before).count() as u64;
        return Err(ctx.expected(Position::line(line), "binary data (a NUL byte)"));
    }
    each(line_no, block)
}
