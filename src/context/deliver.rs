//! Answering a gap report: a report, the rounds already answered for this iteration, a
//! source of items and the rules in; the reply out. Pure: the source is whatever the mode
//! has (the local repository at the iteration's commit, or GitHub at the pull request's
//! head, prefetched), and nothing here reads git, the network or the clock.
//!
//! Rounds follow `iterative-retrieval`: the revision prompt is round 0; each gap report
//! that asks for something is the next round; rounds before `context.max_rounds` get a
//! `CONTEXT_DELIVERY` of exactly the items asked for; the round that reaches the cap, and
//! every report after it, gets "Execute with the context available. Document any
//! assumptions made in your result." and nothing else. A report that says
//! `READY_TO_EXECUTE: true` uses no round.
//!
//! Each item is delivered or refused on its own line, by number. A refused item's words
//! are never repeated (a guessed holdout name must not come back in itergate's reply), nor
//! is a malformed line's. When an item the agent marked `none — required` cannot be
//! delivered, the reply says a human was called and the caller escalates.

use serde::Serialize;

use super::parse::{GapItem, GapReport};
use super::policy::{redacted_config, Policy, NOT_AVAILABLE};
use super::request::{classify, title, Request};
use crate::config::Config;

/// The seed's last word, sent at the round cap and after it.
pub const EXECUTE_NOW: &str =
    "Execute with the context available. Document any assumptions made in your result.";
/// The end of a delivery.
pub const PROCEED: &str = "Proceed with execution now. Return results per the task contract.";

/// File names a pattern lists at most.
pub const MAX_LISTED_FILES: usize = 200;
/// Items of one report answered at most; the rest are refused (each one may cost a read).
pub const MAX_ITEMS: usize = 20;
/// Lines of a test's source delivered at most.
const MAX_TEST_SOURCE_LINES: usize = 120;

/// A file as the source found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    Found(Vec<u8>),
    Missing,
    /// Larger than the source reads (bytes).
    TooLarge(u64),
    /// The source could not answer (an API error): said, not retried.
    Failed(String),
}

/// A failing test as the iteration's record and observation know it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestDetail {
    pub id: String,
    /// The finding: the assertion and its message.
    pub finding: String,
    pub file: Option<String>,
    pub line: Option<u32>,
}

/// Where items come from. Every method answers for the iteration being revised.
pub trait ItemSource {
    fn file(&self, path: &str) -> Lookup;
    /// Every file path of the iteration's tree; `None` where a tree cannot be listed.
    fn files(&self) -> Option<Vec<String>>;
    /// A check's full failure output; `None` for a check that did not fail or is unknown.
    fn check_output(&self, name: &str) -> Option<String>;
    fn test(&self, id: &str) -> Option<TestDetail>;
    fn config(&self) -> &Config;
    /// The decision's reasoning (the decision report).
    fn decision(&self) -> Option<String>;
    /// The iteration's change, one `(path, patch)` per file; or why there is none here.
    fn diff(&self) -> Result<Vec<(String, String)>, String>;
}

/// Size caps and the round cap (`context.*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_rounds: u32,
    pub item_max_bytes: usize,
    pub delivery_max_bytes: usize,
}

impl Limits {
    pub fn from_config(config: &Config) -> Limits {
        let c = &config.context;
        Limits {
            max_rounds: c.max_rounds,
            item_max_bytes: c.item_max_bytes,
            delivery_max_bytes: c.delivery_max_bytes,
        }
    }
}

/// What kind of reply a report gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplyKind {
    /// A `CONTEXT_DELIVERY`.
    Delivery,
    /// `READY_TO_EXECUTE: true`: go ahead; no round used.
    Ready,
    /// The round cap: execute with what is there.
    ExecuteNow,
}

/// One item's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ItemReply {
    /// Its place in the report, from 1.
    pub number: usize,
    /// What was delivered (the path or concept); `None` when refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The content, as text; `None` when refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// A fence info string for the content (`rust`, `diff`, `yaml`, `text`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    /// A note on what was delivered (`lines 10-30 of 120`, `cut at 16384 bytes`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Why it was not delivered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
    pub required: bool,
}

/// A malformed line, without its words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LineProblem {
    pub line: usize,
    pub expected: String,
}

/// The answer to one report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Reply {
    pub kind: ReplyKind,
    /// The round this report is (0 for a ready report that used none).
    pub round: u32,
    pub max_rounds: u32,
    pub items: Vec<ItemReply>,
    pub malformed: Vec<LineProblem>,
    /// Items marked `none — required` that could not be delivered: a human is called.
    pub missing_required: Vec<usize>,
    /// The closing line.
    pub closing: String,
    /// Bytes of content delivered.
    pub bytes: usize,
}

impl Reply {
    pub fn escalates(&self) -> bool {
        !self.missing_required.is_empty()
    }
}

/// What a report asks, answered. `answered` is the number of rounds already used for this
/// iteration.
pub fn deliver(
    report: &GapReport,
    answered: u32,
    source: &dyn ItemSource,
    policy: &Policy,
    limits: &Limits,
) -> Reply {
    let malformed = report
        .malformed
        .iter()
        .map(|m| LineProblem {
            line: m.line,
            expected: m.expected.clone(),
        })
        .collect();
    let mut reply = Reply {
        kind: ReplyKind::Delivery,
        round: answered + 1,
        max_rounds: limits.max_rounds,
        items: Vec::new(),
        malformed,
        missing_required: Vec::new(),
        closing: PROCEED.into(),
        bytes: 0,
    };
    if report.is_ready() && report.malformed.is_empty() {
        reply.kind = ReplyKind::Ready;
        reply.round = answered;
        return reply;
    }
    if reply.round >= limits.max_rounds {
        reply.kind = ReplyKind::ExecuteNow;
        reply.round = reply.round.min(limits.max_rounds);
        reply.closing = EXECUTE_NOW.into();
        return reply;
    }
    let mut budget = limits.delivery_max_bytes;
    for (index, item) in report.items.iter().enumerate() {
        let answer = if index < MAX_ITEMS {
            let caps = Caps {
                bytes: limits.item_max_bytes.min(budget),
                full_below: MIN_CUT_BYTES.min(limits.item_max_bytes),
            };
            answer_item(item, source, policy, caps)
        } else {
            Err(format!(
                "a report is answered for its first {MAX_ITEMS} items; ask for the rest in the next round"
            ))
        };
        let mut item_reply = ItemReply {
            number: index + 1,
            title: None,
            content: None,
            language: None,
            note: None,
            refused: None,
            required: item.required(),
        };
        match answer {
            Ok(found) => {
                let content = policy.scrub(&found.content);
                budget = budget.saturating_sub(content.len());
                reply.bytes += content.len();
                item_reply.title = Some(policy.scrub(&found.title));
                item_reply.content = Some(content);
                item_reply.language = found.language;
                item_reply.note = found.note;
            }
            Err(reason) => {
                if item.required() {
                    reply.missing_required.push(index + 1);
                }
                item_reply.refused = Some(reason);
            }
        }
        reply.items.push(item_reply);
    }
    reply
}

/// An item cut shorter than this (by the delivery's cap) is not delivered at all: the
/// delivery is full.
const MIN_CUT_BYTES: usize = 256;

/// How much of one item may be delivered.
#[derive(Clone, Copy)]
struct Caps {
    bytes: usize,
    /// Cut shorter than this, the item is refused instead.
    full_below: usize,
}

/// A delivered item before scrubbing.
struct Found {
    title: String,
    content: String,
    language: Option<String>,
    note: Option<String>,
}

fn answer_item(
    item: &GapItem,
    source: &dyn ItemSource,
    policy: &Policy,
    caps: Caps,
) -> Result<Found, String> {
    let full = || {
        format!(
            "the delivery is full ({} bytes); ask for it in the next round, or for a line range",
            source.config().context.delivery_max_bytes
        )
    };
    if caps.bytes == 0 {
        return Err(full());
    }
    let request = classify(&item.needs);
    let found = fetch(&request, source, policy)?;
    if found.content.len() > caps.bytes && caps.bytes < caps.full_below {
        return Err(full());
    }
    let (content, cut) = cut_to(&found.content, caps.bytes);
    let note = match (found.note, cut) {
        (note, None) => note,
        (Some(note), Some(cut)) => Some(format!("{note}; {cut}")),
        (None, Some(cut)) => Some(cut),
    };
    Ok(Found {
        content,
        note,
        ..found
    })
}

/// What `request` asks for, whole, or why it is refused.
fn fetch(request: &Request, source: &dyn ItemSource, policy: &Policy) -> Result<Found, String> {
    let found = |content: String, language: &str, note: Option<String>| {
        Ok(Found {
            title: title(request),
            content,
            language: Some(language.to_string()),
            note,
        })
    };
    match request {
        Request::File { path, lines } => {
            if let Some(reason) = policy.refusal(path) {
                return Err(reason.into());
            }
            let text = read_text(source, path)?;
            let (text, note) = select_lines(&text, *lines)?;
            found(text, language_of(path), note)
        }
        Request::Pattern { pattern } => found(list(source, policy, pattern)?, "text", None),
        Request::Check { name } => {
            if policy.holdout.checks.contains(name) {
                return Err("its details are not available to agents".into());
            }
            let output = source
                .check_output(name)
                .ok_or_else(|| "no check of that name failed at this iteration".to_string())?;
            found(output, "text", None)
        }
        Request::Test { id } => {
            if policy.holdout.names_test(id) {
                return Err(NOT_AVAILABLE.into());
            }
            let test = test_id_forms(id)
                .iter()
                .find_map(|form| source.test(form))
                .ok_or_else(|| NOT_AVAILABLE.to_string())?;
            let (text, language) = test_text(&test, source, policy);
            found(text, language, None)
        }
        Request::Config => found(redacted_config(source.config()), "yaml", None),
        Request::Decision => {
            let text = source.decision().ok_or_else(|| NOT_AVAILABLE.to_string())?;
            found(text, "yaml", None)
        }
        Request::Diff => {
            let (text, withheld) = diff_text(&source.diff()?, policy);
            let note = (withheld > 0).then(|| format!("{withheld} file(s) withheld"));
            found(text, "diff", note)
        }
        Request::OutsideRepository => Err("not a path inside the repository".into()),
        Request::Unknown => Err(
            "not a file path or a concept itergate knows; ask for a file (`path` or \
             `path:START-END`), a directory (`dir/`) or glob, `check NAME`, `test ID`, \
             `config`, `decision` or `diff`"
                .into(),
        ),
    }
}

fn read_text(source: &dyn ItemSource, path: &str) -> Result<String, String> {
    match source.file(path) {
        Lookup::Found(bytes) => String::from_utf8(bytes)
            .map_err(|e| format!("a binary file ({} bytes)", e.as_bytes().len())),
        Lookup::Missing => Err(NOT_AVAILABLE.into()),
        Lookup::TooLarge(size) => Err(format!(
            "the file is {size} bytes, more than is read; ask for a line range"
        )),
        Lookup::Failed(why) => Err(format!("could not be read: {why}")),
    }
}

/// The lines asked for (all when `None`), with a note saying which.
fn select_lines(text: &str, lines: Option<(u32, u32)>) -> Result<(String, Option<String>), String> {
    let Some((start, end)) = lines else {
        return Ok((text.to_string(), None));
    };
    let all: Vec<&str> = text.lines().collect();
    let total = all.len();
    let start = start as usize;
    if start > total {
        return Err(format!("the file has {total} lines"));
    }
    let end = (end as usize).min(total);
    let mut selected = all[start - 1..end].join("\n");
    selected.push('\n');
    Ok((selected, Some(format!("lines {start}-{end} of {total}"))))
}

/// `text` cut to `cap` bytes at a line end (or a character boundary), with a note.
fn cut_to(text: &str, cap: usize) -> (String, Option<String>) {
    if text.len() <= cap {
        return (text.to_string(), None);
    }
    let mut end = cap;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    if let Some(newline) = text[..end].rfind('\n') {
        end = newline + 1;
    }
    (
        text[..end].to_string(),
        Some(format!(
            "cut at {end} of {} bytes; ask for a line range for the rest",
            text.len()
        )),
    )
}

fn list(source: &dyn ItemSource, policy: &Policy, pattern: &str) -> Result<String, String> {
    let files = source.files().ok_or_else(|| {
        "patterns and directories are not listed here; name the files".to_string()
    })?;
    let matcher = if let Some(dir) = pattern.strip_suffix('/') {
        let prefix = format!("{dir}/");
        Matcher::Prefix(prefix)
    } else if pattern.is_empty() {
        Matcher::Prefix(String::new())
    } else {
        let glob = globset::GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            // The error quotes the pattern: only its kind is said.
            .map_err(|e| format!("not a glob ({})", e.kind()))?
            .compile_matcher();
        Matcher::Glob(glob)
    };
    let matching: Vec<&String> = files
        .iter()
        .filter(|f| matcher.matches(f) && policy.refusal(f).is_none())
        .collect();
    if matching.is_empty() {
        return Err("no file matches at this iteration".into());
    }
    let mut text: String = matching
        .iter()
        .take(MAX_LISTED_FILES)
        .map(|f| format!("{f}\n"))
        .collect();
    if matching.len() > MAX_LISTED_FILES {
        text.push_str(&format!(
            "... and {} more; narrow the pattern\n",
            matching.len() - MAX_LISTED_FILES
        ));
    }
    Ok(text)
}

enum Matcher {
    Prefix(String),
    Glob(globset::GlobMatcher),
}

impl Matcher {
    fn matches(&self, path: &str) -> bool {
        match self {
            Matcher::Prefix(prefix) => path.starts_with(prefix.as_str()),
            Matcher::Glob(glob) => glob.is_match(path),
        }
    }
}

/// A test's finding, then its source: the function that defines it when the file names it,
/// else the lines around the failure.
fn test_text(
    test: &TestDetail,
    source: &dyn ItemSource,
    policy: &Policy,
) -> (String, &'static str) {
    let mut text = format!("{}\n", test.finding.trim_end());
    let Some(file) = test.file.as_deref() else {
        return (text, "text");
    };
    if policy.refusal(file).is_some() {
        return (text, "text");
    }
    let Ok(content) = read_text(source, file) else {
        return (text, "text");
    };
    let name = test
        .id
        .rsplit([':', '.', '/', ' '])
        .find(|s| !s.is_empty())
        .unwrap_or(&test.id);
    if let Some((start, body)) = function_source(&content, name, test.line) {
        text.push_str(&format!("\n{file}:{start}:\n{body}"));
    } else if let Some(line) = test.line {
        // Ten lines either side, within the file: the range said is the range shown.
        let last = u32::try_from(content.lines().count())
            .unwrap_or(u32::MAX)
            .max(1);
        let (start, end) = (line.saturating_sub(10).max(1), (line + 10).min(last));
        if let Ok((body, _)) = select_lines(&content, Some((start, end))) {
            text.push_str(&format!("\n{file}:{start}-{end}:\n{body}"));
        }
    }
    (text, "text")
}

/// The definition of `name` in `content` (the one nearest before `line`): from its line to
/// the end of its block (the first line indented no deeper; a closing bracket included).
fn function_source(content: &str, name: &str, line: Option<u32>) -> Option<(usize, String)> {
    let lines: Vec<&str> = content.lines().collect();
    let defines = |l: &str| {
        let t = l.trim_start();
        [
            "fn ",
            "def ",
            "async def ",
            "async fn ",
            "pub fn ",
            "function ",
        ]
        .iter()
        .any(|kw| t.starts_with(kw) && t[kw.len()..].starts_with(name))
            || (t.starts_with("it(") || t.starts_with("test(")) && t.contains(name)
    };
    let limit = line.map_or(lines.len(), |l| (l as usize).min(lines.len()));
    let start = (0..limit)
        .rev()
        .find(|&i| defines(lines[i]))
        .or_else(|| (0..lines.len()).find(|&i| defines(lines[i])))?;
    let indent = |l: &str| l.len() - l.trim_start().len();
    let base = indent(lines[start]);
    let mut end = start;
    for (i, l) in lines.iter().enumerate().skip(start + 1) {
        if i - start >= MAX_TEST_SOURCE_LINES {
            break;
        }
        end = i;
        if !l.trim().is_empty() && indent(l) <= base {
            let t = l.trim_start();
            if !(t.starts_with('}') || t.starts_with(')') || t.starts_with(']')) {
                end = i - 1;
            }
            break;
        }
    }
    let mut body = lines[start..=end].join("\n");
    body.push('\n');
    Some((start + 1, body))
}

/// The diff without withheld files; how many were withheld.
fn diff_text(files: &[(String, String)], policy: &Policy) -> (String, usize) {
    let mut text = String::new();
    let mut withheld = 0;
    for (path, patch) in files {
        if policy.refusal(path).is_some() {
            withheld += 1;
            continue;
        }
        text.push_str(patch);
        if !patch.ends_with('\n') {
            text.push('\n');
        }
    }
    (text, withheld)
}

/// A fence info string for a file, from its extension.
fn language_of(path: &str) -> &'static str {
    match path.rsplit_once('.').map(|(_, ext)| ext) {
        Some("rs") => "rust",
        Some("py") => "python",
        Some("js" | "mjs" | "cjs") => "javascript",
        Some("ts" | "tsx") => "typescript",
        Some("go") => "go",
        Some("toml") => "toml",
        Some("yml" | "yaml") => "yaml",
        Some("json") => "json",
        Some("md") => "markdown",
        Some("sh") => "sh",
        _ => "text",
    }
}

/// The ways an agent may name a test, each as itergate's reports name it (`module::case`):
/// the id as given; pytest's node id (`tests/test_x.py::TestC::test_y` is
/// `tests.test_x.TestC::test_y`); Surefire's `Class#method`; and `Class.method`.
pub fn test_id_forms(id: &str) -> Vec<String> {
    let id = id.trim();
    let mut forms = vec![id.to_string()];
    let parts: Vec<&str> = id.split("::").collect();
    if let [file, rest @ .., name] = parts.as_slice() {
        if let Some(module) = file.strip_suffix(".py") {
            let mut class = module.replace(['/', '\\'], ".");
            for part in rest {
                class.push('.');
                class.push_str(part);
            }
            forms.push(format!("{class}::{name}"));
        }
    }
    if let Some((class, method)) = id.split_once('#') {
        forms.push(format!("{class}::{method}"));
    }
    if !id.contains("::") && !id.contains('#') {
        // `Class.method` (or `module.Class.method`): the last dot separates the case; a
        // parametrised case's brackets may hold dots of their own.
        let head = id.split('[').next().unwrap_or(id);
        if let Some(at) = head.rfind('.') {
            forms.push(format!("{}::{}", &id[..at], &id[at + 1..]));
        }
    }
    forms.dedup();
    forms
}

#[cfg(test)]
mod test_ids {
    use super::test_id_forms;

    #[test]
    fn each_runners_own_test_id_is_understood() {
        let forms = |id: &str| test_id_forms(id);
        assert!(forms("tests/test_parse.py::test_dates[iso]")
            .contains(&"tests.test_parse::test_dates[iso]".to_string()));
        assert!(forms("tests/test_parse.py::TestDates::test_iso")
            .contains(&"tests.test_parse.TestDates::test_iso".to_string()));
        assert!(forms("com.example.DiffTest#testIgnoreWhitespace")
            .contains(&"com.example.DiffTest::testIgnoreWhitespace".to_string()));
        assert!(forms("DiffTest.testIgnoreWhitespace")
            .contains(&"DiffTest::testIgnoreWhitespace".to_string()));
        assert!(forms("test_x.test_y[a.b]").contains(&"test_x::test_y[a.b]".to_string()));
        // Go's names and itergate's own ids stay as they are.
        assert_eq!(forms("TestParse/dates"), vec!["TestParse/dates"]);
        assert_eq!(forms("pkg::TestParse"), vec!["pkg::TestParse"]);
    }
}
