//! Small text helpers the parsers share: a bounded buffer for captured output that cuts
//! the middle, never the end, strict
//! number parsing (no panics, no silent overflow), and recognising where a Rust panic or a
//! pytest assertion happened.

use super::types::OUTPUT_CAP_BYTES;

/// Keeps the first [`OUTPUT_HEAD_BYTES`] and the last bytes of everything pushed into it,
/// [`OUTPUT_CAP_BYTES`] in all, and counts what it cut between them, so capturing the
/// output of a million passing tests costs nothing and a long failure keeps both its start
/// (the panic and the assertion message) and its end (the `right:` value, the last error).
#[derive(Debug, Default)]
pub(crate) struct TailBuf {
    head: String,
    /// Everything after `head`, kept to at most twice the tail's share before trimming.
    rest: String,
    cut_bytes: usize,
}

/// What the start of a long output keeps; the rest of `OUTPUT_CAP_BYTES` is its end.
pub const OUTPUT_HEAD_BYTES: usize = OUTPUT_CAP_BYTES / 4;
const OUTPUT_TAIL_BYTES: usize = OUTPUT_CAP_BYTES - OUTPUT_HEAD_BYTES;

impl TailBuf {
    pub(crate) fn clear(&mut self) {
        self.head.clear();
        self.rest.clear();
        self.cut_bytes = 0;
    }

    pub(crate) fn push(&mut self, mut piece: &str) {
        // The head fills first; once anything went past it, it is closed.
        if self.rest.is_empty() && self.cut_bytes == 0 && self.head.len() < OUTPUT_HEAD_BYTES {
            let room = floor_boundary(piece, OUTPUT_HEAD_BYTES - self.head.len());
            let (first, later) = piece.split_at(room);
            self.head.push_str(first);
            piece = later;
            if piece.is_empty() {
                return;
            }
        }
        if piece.len() >= OUTPUT_TAIL_BYTES {
            let kept = tail(piece, OUTPUT_TAIL_BYTES);
            self.cut_bytes += self.rest.len() + piece.len() - kept.len();
            self.rest.clear();
            self.rest.push_str(kept);
            return;
        }
        self.rest.push_str(piece);
        if self.rest.len() > 2 * OUTPUT_TAIL_BYTES {
            let keep_from = self.rest.len() - tail(&self.rest, OUTPUT_TAIL_BYTES).len();
            self.cut_bytes += keep_from;
            self.rest.drain(..keep_from);
        }
    }

    /// Starts a new section (e.g. system-out after a failure body) on its own line.
    pub(crate) fn separate(&mut self) {
        let last = if self.rest.is_empty() {
            &self.head
        } else {
            &self.rest
        };
        if !last.is_empty() && !last.ends_with('\n') {
            self.push("\n");
        }
    }

    /// The captured text, its middle cut if it was too long, trimmed; `None` if nothing
    /// but whitespace was captured.
    pub(crate) fn take(&mut self) -> Option<String> {
        let text = self.contents();
        let trimmed = text.trim();
        let out =
            (!trimmed.is_empty()).then(|| cut_middle(trimmed, OUTPUT_CAP_BYTES + CUT_NOTE_ROOM));
        self.clear();
        out
    }

    /// The captured text: start, a note saying how much was cut, end.
    pub(crate) fn contents(&self) -> String {
        let (rest, more_cut) = if self.rest.len() > OUTPUT_TAIL_BYTES {
            let kept = tail(&self.rest, OUTPUT_TAIL_BYTES);
            (kept, self.rest.len() - kept.len())
        } else {
            (self.rest.as_str(), 0)
        };
        let cut = self.cut_bytes + more_cut;
        if cut == 0 {
            format!("{}{rest}", self.head)
        } else {
            format!("{}{}{rest}", self.head, cut_note(cut))
        }
    }
}

/// Room left for the note [`cut_middle`] puts where it cut.
const CUT_NOTE_ROOM: usize = 48;

fn cut_note(bytes: usize) -> String {
    format!("\n… [{bytes} bytes cut] …\n")
}

/// `text` if it is at most `cap` bytes long, else its start and its end with a note in
/// between saying how many bytes were cut: the middle of a long output is what matters
/// least (the cause is stated first, the final error last).
pub fn cut_middle(text: &str, cap: usize) -> String {
    if text.len() <= cap {
        return text.to_string();
    }
    let budget = cap.saturating_sub(CUT_NOTE_ROOM);
    let head = &text[..floor_boundary(text, budget / 4)];
    let end = tail(text, budget - head.len());
    let cut = text.len() - head.len() - end.len();
    format!("{head}{}{end}", cut_note(cut))
}

/// The largest character boundary of `s` at or below `at`.
fn floor_boundary(s: &str, at: usize) -> usize {
    let mut at = at.min(s.len());
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The last at most `cap` bytes of `s`, cut at a character boundary.
pub(crate) fn tail(s: &str, cap: usize) -> &str {
    if s.len() <= cap {
        return s;
    }
    let mut start = s.len() - cap;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    s.get(start..).unwrap_or_default()
}

/// Parses ASCII digits into a `u64`; `None` on anything else, on empty input or overflow.
pub(crate) fn parse_u64(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() {
        return None;
    }
    let mut value: u64 = 0;
    for &b in digits {
        let digit = b.wrapping_sub(b'0');
        if digit > 9 {
            return None;
        }
        value = value.checked_mul(10)?.checked_add(u64::from(digit))?;
    }
    Some(value)
}

pub(crate) fn parse_u32(digits: &[u8]) -> Option<u32> {
    parse_u64(digits).and_then(|v| u32::try_from(v).ok())
}

/// A line or column number as text: digits, or a number-looking float (`"12.0"`).
pub(crate) fn parse_u32_str(text: &str) -> Option<u32> {
    let text = text.trim();
    parse_u32(text.as_bytes()).or_else(|| {
        let int = text.strip_suffix(".0")?;
        parse_u32(int.as_bytes())
    })
}

/// A source location mentioned in failure text: a Rust panic (`panicked at src/x.rs:17:9`)
/// or a Python traceback line (`tests/test_x.py:11: AssertionError`).
pub(crate) fn failure_location(text: &str) -> Option<(String, u32)> {
    rust_panic_location(text).or_else(|| pytest_location(text))
}

/// `thread 'x' (123) panicked at src/lib.rs:17:9:` (and the pre-1.73 `'msg', src/lib.rs:17:9`).
pub(crate) fn rust_panic_location(text: &str) -> Option<(String, u32)> {
    let after = text.split_once("panicked at ")?.1;
    let line_end = after.find('\n').unwrap_or(after.len());
    let head = after.get(..line_end)?.trim_end().trim_end_matches(':');
    let spot = head.rsplit(", ").next()?;
    let mut parts = spot.rsplitn(3, ':');
    let _column = parts.next()?;
    let line = parse_u32(parts.next()?.as_bytes())?;
    let file = parts.next()?;
    (!file.is_empty() && !file.contains(' ')).then(|| (file.to_string(), line))
}

/// The last `path.py:NN: Error` line of a pytest failure.
fn pytest_location(text: &str) -> Option<(String, u32)> {
    text.lines().rev().find_map(|l| {
        let (file, rest) = l.trim().split_once(".py:")?;
        let (line, _) = rest.split_once(':')?;
        let line = parse_u32(line.as_bytes())?;
        (!file.is_empty() && !file.contains(' ')).then(|| (format!("{file}.py"), line))
    })
}

/// The message a Rust panic printed: the lines after `panicked at file:line:col:` up to
/// the `note:` or backtrace that follows, so a failed `assert_eq!` keeps its own message
/// and its `left:` and `right:` values (each line trimmed; at most
/// [`MAX_PANIC_MESSAGE_LINES`] lines).
pub(crate) fn rust_panic_message(text: &str) -> Option<String> {
    let after = text.split_once("panicked at ")?.1;
    let (head, rest) = after.split_once('\n').unwrap_or((after, ""));
    if let Some(quoted) = head.strip_prefix('\'') {
        // pre-1.73: panicked at 'message', src/lib.rs:1:1
        let end = quoted.rfind("', ")?;
        return quoted.get(..end).map(str::to_string);
    }
    let lines: Vec<&str> = rest
        .lines()
        .map(str::trim)
        .take_while(|l| {
            !l.is_empty()
                && !l.starts_with("note: ")
                && !l.starts_with("stack backtrace:")
                && !l.starts_with("thread '")
        })
        .take(MAX_PANIC_MESSAGE_LINES)
        .collect();
    (!lines.is_empty()).then(|| lines.join("\n"))
}

/// Lines of a panic message kept: an assertion with its values, not a dumped document.
pub const MAX_PANIC_MESSAGE_LINES: usize = 12;

/// Decodes bytes as UTF-8, replacing invalid sequences (for free-form captured output).
pub(crate) fn lossy(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(bytes)
}

/// Removes ANSI escape sequences (CSI such as colours, OSC such as hyperlinks, and two-byte
/// escapes); borrows when there are none.
pub fn strip_ansi(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains('\x1b') {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\x1b' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('[') => {
                // Parameters and intermediates, then one final byte in @..=~.
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            Some(']') => {
                // Ends at BEL or ST (ESC \).
                while let Some(c) = chars.next() {
                    if c == '\x07' || (c == '\x1b' && chars.next_if_eq(&'\\').is_some()) {
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Lines of a failure's text [`failure_lead`] keeps at most.
const MAX_LEAD_LINES: usize = 12;

/// The first nonblank line of a failure's text; when it ends in `:` (Node's assert under
/// mocha: `Expected values to be strictly equal:`, then `-1 !== 3`), the lines after it up
/// to the stack or the runner's own diff, so the values compared are kept.
pub fn failure_lead(text: &str) -> String {
    let mut lines = text
        .lines()
        .map(str::trim_end)
        .skip_while(|l| l.trim().is_empty());
    let Some(first) = lines.next() else {
        return String::new();
    };
    let first = first.trim();
    if !first.ends_with(':') {
        return first.to_string();
    }
    let ends = |l: &str| {
        let t = l.trim_start();
        t.starts_with("at ") || t.starts_with("AssertionError") || t == "+ expected - actual"
    };
    let rest = lines
        .take_while(|l| !ends(l))
        .filter(|l| !l.trim().is_empty())
        .take(MAX_LEAD_LINES - 1);
    std::iter::once(first.to_string())
        .chain(rest.map(str::to_string))
        .collect::<Vec<_>>()
        .join("\n")
}
