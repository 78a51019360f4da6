//! Diagnostics from a failing check's text output: when a build fails before the check can
//! write its report, its stdout/stderr is all there is, and this module turns that text into
//! located errors (tool, code, message, file, line, column, the block as printed, and for
//! tracebacks every frame).
//!
//! The rule: only errors count (warnings, notes and summary lines such as `error: could not
//! compile` are dropped), in order of appearance, deduplicated on (tool, code, message, file,
//! line), at most [`MAX_DIAGNOSTICS`]. The scan is line by line with bounded state (a block's
//! detail keeps at most [`DETAIL_CAP_BYTES`], its head and its tail), so [`Parser`] can be fed
//! lines as a command prints them and stops early once full. ANSI colour codes are ignored when
//! recognising lines and kept in `detail`, which is never altered beyond cutting its middle.
//!
//! Recognised: rustc/cargo human output, gcc/clang, tsc (plain and `--pretty`), `go build` and
//! `go vet`, Python tracebacks (with or without the `Traceback` header, as a `SyntaxError`
//! prints), pytest's `ERROR collecting` sections, Node's load-time errors (a script's
//! `path:line`, then `SyntaxError: msg`), javac (Maven's `[ERROR] File.java:[l,c]` and the
//! plain form) and kotlinc (`e: file:///x.kt:l:c msg`).

use super::report::strip_ansi;
use std::collections::HashSet;

/// One compiler/interpreter error found in a failing check's output.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Diagnostic {
    /// `rustc`, `gcc`, `tsc`, `go`, `python`, `pytest`.
    pub tool: String,
    /// Error code when the tool gives one: `E0425`, `TS2304`; else None.
    pub code: Option<String>,
    /// The one-line message: "cannot find value `x` in this scope".
    pub message: String,
    /// Path as printed (relative or absolute; the caller makes it repository-relative).
    pub file: Option<String>,
    pub line: Option<u32>,
    pub column: Option<u32>,
    /// The diagnostic's whole text block as the tool printed it (rustc's snippet with `-->`
    /// and the caret lines, a Python traceback), capped at DETAIL_CAP_BYTES keeping the head
    /// and the tail (cut the middle, never the end), never escaped or altered.
    pub detail: String,
    /// For tracebacks: every frame (file, line), outermost first, so the caller can pick the
    /// deepest frame inside the repository. Empty for other tools.
    pub frames: Vec<(String, u32)>,
}

/// The most bytes a diagnostic's `detail` keeps (and its `message`).
pub const DETAIL_CAP_BYTES: usize = 4 * 1024;

/// The most diagnostics [`parse`] returns.
pub const MAX_DIAGNOSTICS: usize = 50;

/// The most frames a traceback keeps: the outermost half and the innermost half (a runaway
/// recursion prints thousands).
pub const MAX_FRAMES: usize = 200;

/// Errors only (warnings and notes are dropped), in order of appearance, deduplicated (same
/// tool, code, message, file, line), at most MAX_DIAGNOSTICS.
pub fn parse(text: &str) -> Vec<Diagnostic> {
    let mut parser = Parser::default();
    for line in text.split('\n') {
        if parser.is_full() {
            break;
        }
        parser.push_line(line);
    }
    parser.finish()
}

/// The line-at-a-time form of [`parse`], for output read as it is printed.
#[derive(Default)]
pub struct Parser {
    current: Option<Block>,
    found: Vec<Diagnostic>,
    seen: HashSet<DedupKey>,
}

type DedupKey = (String, Option<String>, String, Option<String>, Option<u32>);

impl Parser {
    /// Feeds one line (without its `\n`; a trailing `\r` is ignored).
    pub fn push_line(&mut self, raw: &str) {
        if self.is_full() {
            return;
        }
        let raw = raw.strip_suffix('\r').unwrap_or(raw);
        let clean = strip_ansi(raw);
        let clean = clean.as_ref();
        let indented = starts_indented(clean);
        let mut header = None;
        let mut looked = false;
        if let Some(block) = self.current.as_mut() {
            if block.kind.yields_to_headers() && !indented {
                header = header_of(clean);
                looked = true;
            }
            let step = match &header {
                None => block.continues(clean),
                Some(h) if h.kind == Kind::GccNote && block.kind == Kind::Gcc => Continue::Yes,
                Some(_) => Continue::No,
            };
            match step {
                Continue::Yes => return block.add(raw, clean),
                Continue::Last => {
                    block.add(raw, clean);
                    return self.close();
                }
                Continue::No => self.close(),
            }
        }
        if !looked && !indented {
            header = header_of(clean);
        }
        if let Some(header) = header.or_else(|| python_file_header(clean)) {
            let mut block = Block::open(header);
            block.add(raw, clean);
            self.current = Some(block);
        }
    }

    /// True once MAX_DIAGNOSTICS were found: further lines change nothing.
    pub fn is_full(&self) -> bool {
        self.found.len() >= MAX_DIAGNOSTICS
    }

    /// Closes the open block (the output ended) and returns what was found.
    pub fn finish(mut self) -> Vec<Diagnostic> {
        self.close();
        self.found
    }

    fn close(&mut self) {
        let Some(block) = self.current.take() else {
            return;
        };
        let Some(diagnostic) = block.into_diagnostic() else {
            return;
        };
        if self.is_full() {
            return;
        }
        let key = (
            diagnostic.tool.clone(),
            diagnostic.code.clone(),
            diagnostic.message.clone(),
            diagnostic.file.clone(),
            diagnostic.line,
        );
        if self.seen.insert(key) {
            self.found.push(diagnostic);
        }
    }
}

// ---------------------------------------------------------------- blocks

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Rust,
    Gcc,
    /// A gcc/clang `note:` line: part of the error above it, else dropped.
    GccNote,
    TscPlain,
    TscPretty,
    Go,
    Traceback,
    Pytest,
    /// Node's load-time error: `file:///x/math.mjs:2`, the line, a caret, then
    /// `SyntaxError: msg` (the stack after it is Node's own).
    Node,
    /// javac, as Maven prints it (`[ERROR] /x/Calc.java:[5,16] msg`, then `[ERROR]   symbol:`
    /// lines) or plain (`/x/Calc.java:5: error: msg`, as Gradle prints it).
    Javac,
    /// kotlinc, as Gradle prints it: `e: file:///x/Calc.kt:5:16 msg`.
    Kotlinc,
}

impl Kind {
    fn tool(self) -> &'static str {
        match self {
            Kind::Rust => "rustc",
            Kind::Gcc | Kind::GccNote => "gcc",
            Kind::TscPlain | Kind::TscPretty => "tsc",
            Kind::Go => "go",
            Kind::Traceback => "python",
            Kind::Pytest => "pytest",
            Kind::Node => "node",
            Kind::Javac => "javac",
            Kind::Kotlinc => "kotlinc",
        }
    }

    /// Whether another tool's header ends this block. A traceback's last line and a pytest
    /// section's `E` lines hold arbitrary text, so those blocks end only by their own rules.
    fn yields_to_headers(self) -> bool {
        !matches!(self, Kind::Traceback | Kind::Pytest)
    }
}

/// A header line: where a diagnostic (or a dropped warning) starts.
struct Header {
    kind: Kind,
    error: bool,
    diagnostic: Diagnostic,
}

impl Header {
    fn new(kind: Kind, error: bool, message: &str) -> Header {
        let diagnostic = Diagnostic {
            tool: kind.tool().to_string(),
            code: None,
            message: capped(message.trim().to_string()),
            file: None,
            line: None,
            column: None,
            detail: String::new(),
            frames: Vec::new(),
        };
        Header {
            kind,
            error,
            diagnostic,
        }
    }

    fn code(mut self, code: Option<String>) -> Header {
        self.diagnostic.code = code;
        self
    }

    fn at(mut self, file: &str, line: u32, column: Option<u32>) -> Header {
        self.diagnostic.file = Some(file.to_string());
        (self.diagnostic.line, self.diagnostic.column) = (Some(line), column);
        self
    }
}

enum Continue {
    Yes,
    /// The line belongs to the block and ends it (a traceback's exception line).
    Last,
    No,
}

struct Block {
    kind: Kind,
    error: bool,
    diagnostic: Diagnostic,
    detail: Detail,
    after_blank_line: bool,
    /// pytest: the `E` line chosen as the message.
    has_exception_line: bool,
    /// Lines read so far (a Node block is a few lines, or none).
    lines: usize,
}

impl Block {
    fn open(header: Header) -> Block {
        let kind = match header.kind {
            Kind::GccNote => Kind::Gcc,
            kind => kind,
        };
        Block {
            kind,
            error: header.error,
            diagnostic: header.diagnostic,
            detail: Detail::default(),
            after_blank_line: false,
            has_exception_line: false,
            lines: 0,
        }
    }

    fn continues(&self, clean: &str) -> Continue {
        let blank = clean.trim().is_empty();
        let indented = starts_indented(clean);
        let yes = |b: bool| if b { Continue::Yes } else { Continue::No };
        match self.kind {
            Kind::Rust if is_cargo_status(clean) => Continue::No,
            Kind::Rust => yes(blank || indented || !self.after_blank_line),
            Kind::Gcc | Kind::GccNote | Kind::TscPlain | Kind::Go => yes(indented && !blank),
            Kind::TscPretty => yes(blank || indented || is_snippet_line(clean)),
            Kind::Traceback if blank || indented => Continue::Yes,
            Kind::Traceback => Continue::Last,
            Kind::Pytest => yes(!clean.starts_with("____") && !clean.starts_with("====")),
            Kind::Node if js_error_name(clean).is_some() => Continue::Last,
            Kind::Node => yes(self.lines < NODE_BLOCK_LINES),
            // Maven's detail lines keep its prefix: `[ERROR]   symbol:   method m(int)`.
            Kind::Javac => match clean.strip_prefix("[ERROR]") {
                Some(rest) => yes(rest.starts_with("  ") && !rest.trim().is_empty()),
                None => yes(indented && !blank || is_snippet_line(clean)),
            },
            Kind::Kotlinc => Continue::No,
        }
    }

    /// Appends a line to the detail and reads what the block's kind finds in it.
    fn add(&mut self, raw: &str, clean: &str) {
        self.lines += 1;
        self.after_blank_line = clean.trim().is_empty();
        if self.error {
            self.detail.push_line(raw, self.after_blank_line);
        }
        if self.after_blank_line {
            return;
        }
        match self.kind {
            Kind::Rust => self.read_rust_line(clean),
            Kind::Traceback => self.read_traceback_line(clean),
            Kind::Pytest => self.read_pytest_line(clean),
            Kind::Node => {
                if let Some(name) = js_error_name(clean) {
                    self.diagnostic.code = Some(name.to_string());
                    self.diagnostic.message = capped(clean.trim().to_string());
                }
            }
            _ => {}
        }
    }

    fn read_rust_line(&mut self, clean: &str) {
        if self.diagnostic.file.is_some() {
            return;
        }
        if let Some(place) = clean.trim_start().strip_prefix("--> ") {
            if let Some((file, line, column)) = split_place(place.trim_end()) {
                self.diagnostic.file = Some(file.to_string());
                self.diagnostic.line = Some(line);
                self.diagnostic.column = column;
            }
        }
    }

    fn read_traceback_line(&mut self, clean: &str) {
        if let Some(frame) = python_frame(clean) {
            self.push_frame(frame);
        } else if !starts_indented(clean) && traceback_header(clean).is_none() {
            self.diagnostic.message = capped(clean.trim().to_string());
        }
    }

    fn read_pytest_line(&mut self, clean: &str) {
        let Some(text) = clean.strip_prefix('E').filter(|t| starts_indented(t)) else {
            if let Some(frame) = pytest_frame(clean) {
                self.push_frame(frame);
            }
            return;
        };
        if let Some(frame) = python_frame(text) {
            // A SyntaxError's place, printed inside the `E` lines: the innermost frame.
            return self.push_frame(frame);
        }
        let is_first_level = text.starts_with("   ") && !starts_indented(&text[3..]);
        if !self.has_exception_line && is_first_level && looks_like_exception(&text[3..]) {
            self.diagnostic.message = capped(text[3..].trim_end().to_string());
            self.has_exception_line = true;
        }
    }

    fn push_frame(&mut self, frame: (String, u32)) {
        let frames = &mut self.diagnostic.frames;
        frames.push(frame);
        if frames.len() > MAX_FRAMES {
            frames.remove(MAX_FRAMES / 2);
        }
    }

    fn into_diagnostic(self) -> Option<Diagnostic> {
        if !self.error {
            return None;
        }
        let mut diagnostic = self.diagnostic;
        diagnostic.detail = self.detail.finish();
        if matches!(self.kind, Kind::Traceback | Kind::Pytest) {
            if let Some((file, line)) = diagnostic.frames.last() {
                diagnostic.file = Some(file.clone());
                diagnostic.line = Some(*line);
                diagnostic.column = None;
            }
        }
        if diagnostic.message.is_empty() && self.kind == Kind::Node {
            // A `path:line` line that no error followed: not a diagnostic.
            return None;
        }
        if diagnostic.message.is_empty() && self.kind == Kind::Traceback {
            diagnostic.message = "traceback without its exception line".to_string();
        }
        Some(diagnostic)
    }
}

// ---------------------------------------------------------------- headers

fn header_of(clean: &str) -> Option<Header> {
    rust_header(clean)
        .or_else(|| tsc_header(clean))
        .or_else(|| node_header(clean))
        .or_else(|| maven_javac_header(clean))
        .or_else(|| kotlinc_header(clean))
        .or_else(|| located_header(clean))
        .or_else(|| traceback_header(clean))
        .or_else(|| pytest_header(clean))
}

/// Maven's compiler plugin: `[ERROR] /x/Calc.java:[5,16] msg` (a `[WARNING]` is dropped).
fn maven_javac_header(clean: &str) -> Option<Header> {
    let (error, rest) = match clean.strip_prefix("[ERROR] ") {
        Some(rest) => (true, rest),
        None => (false, clean.strip_prefix("[WARNING] ")?),
    };
    let (file, place) = rest.split_once(":[")?;
    if !JVM_SOURCES.iter().any(|x| file.ends_with(x)) {
        return None;
    }
    let (place, message) = place.split_once("] ")?;
    let (line, column) = place.split_once(',')?;
    Some(Header::new(Kind::Javac, error, message).at(file, number(line)?, number(column)))
}

/// kotlinc under Gradle: `e: file:///x/Calc.kt:5:16 msg`, or the older
/// `e: /x/Calc.kt: (5, 16): msg` (`w:` warnings are dropped).
fn kotlinc_header(clean: &str) -> Option<Header> {
    let (error, rest) = match clean.strip_prefix("e: ") {
        Some(rest) => (true, rest),
        None => (false, clean.strip_prefix("w: ")?),
    };
    let rest = rest.strip_prefix("file://").unwrap_or(rest);
    if let Some((file, after)) = rest.split_once(": (") {
        let (place, message) = after.split_once("): ")?;
        let (line, column) = place.split_once(", ")?;
        return Some(Header::new(Kind::Kotlinc, error, message).at(
            file,
            number(line)?,
            number(column),
        ));
    }
    let (place, message) = rest.split_once(' ')?;
    let (file, line, column) = split_place(place)?;
    file.ends_with(".kt")
        .then(|| Header::new(Kind::Kotlinc, error, message).at(file, line, column))
}

/// The JVM languages' source files.
const JVM_SOURCES: [&str; 4] = [".java", ".kt", ".scala", ".groovy"];

/// How many lines a Node error block may take before its error line: the place, the
/// source line, the caret, a blank.
const NODE_BLOCK_LINES: usize = 6;

/// Node's `file:///abs/x.mjs:2` or `/abs/x.js:2`: a script's path and line, alone.
fn node_header(clean: &str) -> Option<Header> {
    let text = clean.trim_end();
    let path = text.strip_prefix("file://").unwrap_or(text);
    let (file, line) = path.rsplit_once(':')?;
    let line = number(line)?;
    const SCRIPTS: [&str; 8] = [".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".jsx", ".tsx"];
    let script = SCRIPTS.iter().any(|x| file.ends_with(x));
    (script && file.starts_with('/') && !file.contains(' '))
        .then(|| Header::new(Kind::Node, true, "").at(file, line, None))
}

/// `SyntaxError: msg`, `ReferenceError: msg`, `Error [ERR_X]: msg`: the error's name.
fn js_error_name(clean: &str) -> Option<&str> {
    let (name, _) = clean.trim_start().split_once(": ")?;
    let name = name.split(" [").next()?;
    let valid = name.ends_with("Error")
        && name.chars().next().is_some_and(|c| c.is_ascii_uppercase())
        && name.chars().all(|c| c.is_ascii_alphanumeric());
    valid.then_some(name)
}

/// `error[E0425]: msg`, `error: msg`, `warning: msg` (dropped), and cargo's summaries.
fn rust_header(clean: &str) -> Option<Header> {
    let (error, rest) = if let Some(rest) = clean.strip_prefix("error") {
        (true, rest)
    } else {
        (false, clean.strip_prefix("warning")?)
    };
    let (code, message) = if let Some(message) = rest.strip_prefix(':') {
        (None, message)
    } else {
        let (code, message) = rest.strip_prefix('[')?.split_once("]:")?;
        let valid = !code.is_empty() && code.len() <= 16;
        if !valid || !code.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return None;
        }
        (Some(code.to_string()), message)
    };
    let error = error && !is_rust_summary(message.trim());
    Some(Header::new(Kind::Rust, error, message).code(code))
}

fn is_rust_summary(message: &str) -> bool {
    const STARTS: &str = "could not compile `|aborting due to |test failed, to rerun pass |could not document `|build failed, waiting for other jobs";
    STARTS.split('|').any(|start| message.starts_with(start))
        || message.ends_with(" target failed:")
        || message.ends_with(" targets failed:")
}

/// `a.ts(12,5): error TS2304: msg`, `a.ts:12:5 - error TS2304: msg`, `error TS5083: msg`.
/// The `TS` code is required: it is what tells tsc from any other ` - error ` line.
fn tsc_header(clean: &str) -> Option<Header> {
    if let Some(rest) = clean.strip_prefix("error ") {
        let (code, message) = tsc_code(rest)?;
        return Some(Header::new(Kind::TscPlain, true, message).code(Some(code)));
    }
    let (kind, place, rest) = if let Some(at) = clean.find("): error TS") {
        let (file, position) = clean[..at].rsplit_once('(')?;
        let (line, column) = position.split_once(',')?;
        let place = (file, number(line)?, Some(number(column)?));
        (Kind::TscPlain, place, &clean[at + 9..])
    } else {
        let at = clean.find(" - error TS")?;
        let place = split_place(&clean[..at])?;
        (Kind::TscPretty, place, &clean[at + 9..])
    };
    let (code, message) = tsc_code(rest)?;
    let (file, line, column) = place;
    Some(
        Header::new(kind, true, message)
            .code(Some(code))
            .at(file, line, column),
    )
}

/// Splits `TS2304: msg` into the code and the message.
fn tsc_code(rest: &str) -> Option<(String, &str)> {
    let (code, message) = rest.split_once(':')?;
    let digits = code.strip_prefix("TS")?;
    let valid = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit());
    valid.then(|| (code.to_string(), message))
}

/// gcc/clang `file:line:col: error: msg` (and `fatal error`, `warning`, `note`), and go's
/// `file.go:line:col: msg` (also after `vet: `).
fn located_header(clean: &str) -> Option<Header> {
    let unprefixed = clean.strip_prefix("vet: ").unwrap_or(clean);
    let (file, line, column, rest) = located(unprefixed)?;
    const GCC: [(&str, Kind, bool); 4] = [
        ("error:", Kind::Gcc, true),
        ("fatal error:", Kind::Gcc, true),
        ("warning:", Kind::Gcc, false),
        ("note:", Kind::GccNote, false),
    ];
    let gcc = GCC.iter().find_map(|&(severity, kind, error)| {
        rest.strip_prefix(severity)
            .map(|message| (kind, error, message))
    });
    let (kind, error, message) = match gcc {
        // javac prints gcc's shape without a column: `/x/Calc.java:5: error: msg`.
        Some((Kind::Gcc, error, message)) if file.ends_with(".java") => {
            (Kind::Javac, error, message)
        }
        Some(found) => found,
        None if file.ends_with(".go") => (Kind::Go, true, rest),
        None => return None,
    };
    Some(Header::new(kind, error, message).at(file, line, column))
}

fn traceback_header(clean: &str) -> Option<Header> {
    let is_header = clean.trim_end() == "Traceback (most recent call last):";
    is_header.then(|| Header::new(Kind::Traceback, true, ""))
}

/// `____ ERROR collecting tests/test_x.py ____`.
fn pytest_header(clean: &str) -> Option<Header> {
    if !clean.starts_with('_') {
        return None;
    }
    let (_, rest) = clean.split_once(" ERROR collecting ")?;
    let path = rest.trim_end_matches(['_', ' ']);
    let mut header = Header::new(Kind::Pytest, true, &format!("ERROR collecting {path}"));
    header.diagnostic.file = (!path.is_empty()).then(|| path.to_string());
    Some(header)
}

/// A `  File "x.py", line 3` line outside any block: a traceback without its header, as
/// Python prints a `SyntaxError` in the main script.
fn python_file_header(clean: &str) -> Option<Header> {
    python_frame(clean)?;
    Some(Header::new(Kind::Traceback, true, ""))
}

// ---------------------------------------------------------------- line shapes

/// `path:line:col: rest` or `path:line: rest`: the first `:` followed by a line number,
/// so Windows drive letters and odd paths still split.
fn located(text: &str) -> Option<(&str, u32, Option<u32>, &str)> {
    for (at, _) in text.match_indices(':').filter(|&(at, _)| at > 0) {
        let Some((line, after)) = leading_number(&text[at + 1..]) else {
            continue;
        };
        let (column, after) = match after.strip_prefix(':').and_then(leading_number) {
            Some((column, after)) => (Some(column), after),
            None => (None, after),
        };
        if let Some(rest) = after.strip_prefix(": ") {
            let file = &text[..at];
            return (!file.contains(" | ")).then_some((file, line, column, rest));
        }
    }
    None
}

/// `path:line:col` or `path:line` (rustc's `-->` and tsc's pretty place).
fn split_place(place: &str) -> Option<(&str, u32, Option<u32>)> {
    let (before, last) = place.rsplit_once(':')?;
    let last = number(last)?;
    match before.rsplit_once(':') {
        Some((file, line)) if !file.is_empty() => match number(line) {
            Some(line) => Some((file, line, Some(last))),
            None => Some((before, last, None)),
        },
        _ => (!before.is_empty()).then_some((before, last, None)),
    }
}

/// `  File "x.py", line 3, in f` (any indentation) → (`x.py`, 3).
fn python_frame(clean: &str) -> Option<(String, u32)> {
    let rest = clean.trim_start().strip_prefix("File \"")?;
    let (file, rest) = rest.split_once("\", line ")?;
    let (line, _) = leading_number(rest)?;
    Some((file.to_string(), line))
}

/// pytest's `tests/test_x.py:3: in <module>` → (`tests/test_x.py`, 3).
fn pytest_frame(clean: &str) -> Option<(String, u32)> {
    if starts_indented(clean) {
        return None;
    }
    clean.match_indices(": in ").find_map(|(at, _)| {
        let (file, line) = clean[..at].rsplit_once(':')?;
        let line = number(line)?;
        (!file.is_empty()).then(|| (file.to_string(), line))
    })
}

/// `NameError: msg`, `pkg.mod.Error`, `KeyboardInterrupt`: a dotted name, then `:` or end.
fn looks_like_exception(text: &str) -> bool {
    let name = text.split(':').next().unwrap_or_default().trim_end();
    name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && (name.bytes()).all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.')
}

/// tsc's pretty snippet lines start with the line number: `12   const x = 1;`.
fn is_snippet_line(clean: &str) -> bool {
    let digits = clean.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0 && clean.as_bytes().get(digits) == Some(&b' ')
}

/// cargo's right-aligned status lines (`   Compiling foo`), which can follow a diagnostic
/// when crates build in parallel.
fn is_cargo_status(clean: &str) -> bool {
    const STATUSES: &str =
        "Compiling Checking Finished Running Doc-tests Fresh Building Documenting Downloaded Updating";
    let word = clean.trim_start();
    let indent = clean.len() - word.len();
    STATUSES.split(' ').any(|status| {
        word.strip_prefix(status)
            .is_some_and(|after| after.starts_with(' ') || after.is_empty())
            && indent + status.len() == 12
    })
}

fn starts_indented(text: &str) -> bool {
    text.starts_with([' ', '\t'])
}

fn leading_number(text: &str) -> Option<(u32, &str)> {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    let value = number(&text[..digits])?;
    Some((value, &text[digits..]))
}

fn number(text: &str) -> Option<u32> {
    let ok = !text.is_empty() && text.len() <= 10 && text.bytes().all(|b| b.is_ascii_digit());
    ok.then(|| text.parse().ok()).flatten()
}

// ---------------------------------------------------------------- detail

/// A block's text, bounded while it grows: the first half of the cap is kept as it comes,
/// then only a window at the end, and the bytes dropped between them are counted. Blank
/// lines at the end belong to what follows the block and are dropped when it closes.
#[derive(Default)]
struct Detail {
    head: String,
    tail: String,
    cut_bytes: usize,
    trailing_blank_bytes: usize,
}

const HEAD_BYTES: usize = DETAIL_CAP_BYTES / 2;
/// Room for `\n[... N bytes cut ...]\n`.
const MARKER_MAX_BYTES: usize = 48;

impl Detail {
    fn push_line(&mut self, line: &str, blank: bool) {
        let before = self.head.len() + self.tail.len() + self.cut_bytes;
        if before > 0 {
            self.push_str("\n");
        }
        self.push_str(line);
        let pushed = self.head.len() + self.tail.len() + self.cut_bytes - before;
        self.trailing_blank_bytes = if blank {
            self.trailing_blank_bytes + pushed
        } else {
            0
        };
    }

    fn push_str(&mut self, text: &str) {
        if self.tail.is_empty() && self.cut_bytes == 0 {
            let room = HEAD_BYTES.saturating_sub(self.head.len());
            let split = floor_char_boundary(text, room);
            self.head.push_str(&text[..split]);
            self.tail.push_str(&text[split..]);
        } else {
            self.tail.push_str(text);
        }
        if self.tail.len() > 2 * DETAIL_CAP_BYTES {
            let start = ceil_char_boundary(&self.tail, self.tail.len() - DETAIL_CAP_BYTES);
            self.tail.drain(..start);
            self.cut_bytes += start;
        }
    }

    fn finish(self) -> String {
        let Detail {
            mut head,
            mut tail,
            cut_bytes,
            trailing_blank_bytes,
        } = self;
        let from_tail = trailing_blank_bytes.min(tail.len());
        tail.truncate(tail.len() - from_tail);
        if cut_bytes == 0 {
            head.truncate(head.len() - (trailing_blank_bytes - from_tail).min(head.len()));
        }
        if cut_bytes == 0 && head.len() + tail.len() <= DETAIL_CAP_BYTES {
            head.push_str(&tail);
            return head;
        }
        let budget = DETAIL_CAP_BYTES - head.len() - MARKER_MAX_BYTES;
        let start = ceil_char_boundary(&tail, tail.len().saturating_sub(budget));
        head.push_str(&format!("\n[... {} bytes cut ...]\n", cut_bytes + start));
        head.push_str(&tail[start..]);
        head
    }
}

/// Caps a message at DETAIL_CAP_BYTES (a one-line message can still be a megabyte long).
fn capped(mut text: String) -> String {
    let end = floor_char_boundary(&text, DETAIL_CAP_BYTES);
    text.truncate(end);
    text
}

fn floor_char_boundary(text: &str, mut at: usize) -> usize {
    if at >= text.len() {
        return text.len();
    }
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn ceil_char_boundary(text: &str, mut at: usize) -> usize {
    while at < text.len() && !text.is_char_boundary(at) {
        at += 1;
    }
    at.min(text.len())
}
