//! Small text helpers the parsers share: a bounded tail buffer for captured output, strict
//! number parsing (no panics, no silent overflow), and recognising where a Rust panic or a
//! pytest assertion happened.

use super::types::OUTPUT_CAP_BYTES;

/// Keeps the last [`OUTPUT_CAP_BYTES`] of everything pushed into it, without growing past
/// twice that, so capturing the output of a million passing tests costs nothing.
#[derive(Debug, Default)]
pub(crate) struct TailBuf {
    text: String,
}

impl TailBuf {
    pub(crate) fn clear(&mut self) {
        self.text.clear();
    }

    pub(crate) fn push(&mut self, piece: &str) {
        if piece.len() >= OUTPUT_CAP_BYTES {
            self.text.clear();
            self.text.push_str(tail(piece, OUTPUT_CAP_BYTES));
            return;
        }
        self.text.push_str(piece);
        if self.text.len() > 2 * OUTPUT_CAP_BYTES {
            let keep_from = self.text.len() - tail(&self.text, OUTPUT_CAP_BYTES).len();
            self.text.drain(..keep_from);
        }
    }

    /// Starts a new section (e.g. system-out after a failure body) on its own line.
    pub(crate) fn separate(&mut self) {
        if !self.text.is_empty() && !self.text.ends_with('\n') {
            self.text.push('\n');
        }
    }

    /// The captured tail, trimmed, or `None` if nothing but whitespace was captured.
    pub(crate) fn take(&mut self) -> Option<String> {
        let trimmed = tail(self.text.trim(), OUTPUT_CAP_BYTES);
        let out = (!trimmed.is_empty()).then(|| trimmed.to_string());
        self.text.clear();
        out
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.text
    }
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

/// The message a Rust panic printed: the line after `panicked at file:line:col:`.
pub(crate) fn rust_panic_message(text: &str) -> Option<String> {
    let after = text.split_once("panicked at ")?.1;
    let (head, rest) = after.split_once('\n').unwrap_or((after, ""));
    if let Some(quoted) = head.strip_prefix('\'') {
        // pre-1.73: panicked at 'message', src/lib.rs:1:1
        let end = quoted.rfind("', ")?;
        return quoted.get(..end).map(str::to_string);
    }
    let message = rest.lines().next()?.trim();
    (!message.is_empty()).then(|| message.to_string())
}

/// Decodes bytes as UTF-8, replacing invalid sequences (for free-form captured output).
pub(crate) fn lossy(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(bytes)
}
