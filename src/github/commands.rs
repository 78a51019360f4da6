//! The `/iterate` commands people write in PR comments, and who may give them.
//!
//! A command is a line of a top-level paragraph that starts with `/iterate` — not in a code
//! block (fenced or indented), a block quote, a list, a heading, an HTML comment, an HTML
//! element left open around it (`<details>` … `</details>`, even with blank lines inside, so a
//! command can never be hidden from readers), a link's text, nor after other text on the same
//! line — so quoting someone's `/iterate accept` in a reply never repeats it. Markdown is read with pulldown-cmark, and a comment that does
//! not contain `/iterate` at all is rejected before any parsing. A command's argument runs to
//! the end of its paragraph or to the next command line.
//!
//! Grammar (keywords case-insensitive):
//! `/iterate` · `/iterate <feedback>` · `/iterate accept` · `/iterate adjust <guidance>` ·
//! `/iterate escalate [reason]` · `/iterate status` · `/iterate budget <n>` · `/iterate help`.
//! A lone word one or two typos away from a keyword (`/iterate acept`) is an error with a
//! suggestion rather than feedback.
//!
//! Error messages are posted as the bot's words, so they echo what someone typed only
//! escaped and cut to [`ECHO_CHARS`] characters ([`escape_markdown_excerpt`]): never a
//! mention, a link, an issue reference or markup.
//!
//! Review bodies are never read for commands: only comments carry them (see `help.md.j2`).

use std::ops::Range;

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

use crate::markup::escape_markdown_excerpt;

/// The command prefix.
pub const TRIGGER: &str = "/iterate";
/// The largest `/iterate budget`.
pub const MAX_BUDGET_ITERATIONS: u32 = 100;

/// Commands read from one comment; the rest are ignored (and the reply says so).
pub const MAX_COMMANDS_PER_COMMENT: usize = 10;
/// The most characters of someone's text an error message repeats.
pub const ECHO_CHARS: usize = 40;

const KEYWORDS: [&str; 6] = ["accept", "adjust", "escalate", "status", "budget", "help"];

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `/iterate`: re-request the checks and re-post the current revision prompt.
    Reevaluate,
    /// `/iterate <text>`: explicit feedback for the next iteration.
    Feedback(String),
    /// `/iterate accept`: proceed anyway.
    Accept,
    /// `/iterate adjust <guidance>`: change approach; the revision loop restarts.
    Adjust(String),
    /// `/iterate escalate [reason]`: call a human.
    Escalate(Option<String>),
    /// `/iterate status`: post the analytics.
    Status,
    /// `/iterate budget <n>`: the PR's iteration limit becomes `n`.
    Budget(u32),
    /// `/iterate help`.
    Help,
}

impl Command {
    /// Whether the command changes the PR's state and so needs the configured permission.
    pub fn changes_state(&self) -> bool {
        matches!(
            self,
            Command::Accept
                | Command::Adjust(_)
                | Command::Escalate(_)
                | Command::Budget(_)
                | Command::Feedback(_)
        )
    }

    /// Whether the command loosens the rules the PR is held to (accepting it, more
    /// iterations, a fresh revision count): the PR's own author may not give it unless
    /// `github.author_can_decide`.
    pub fn loosens_rules(&self) -> bool {
        matches!(
            self,
            Command::Accept | Command::Adjust(_) | Command::Budget(_)
        )
    }

    /// The command as written, without its argument: `/iterate accept`.
    pub fn name(&self) -> &'static str {
        match self {
            Command::Reevaluate => "/iterate",
            Command::Feedback(_) => "/iterate <feedback>",
            Command::Accept => "/iterate accept",
            Command::Adjust(_) => "/iterate adjust",
            Command::Escalate(_) => "/iterate escalate",
            Command::Status => "/iterate status",
            Command::Budget(_) => "/iterate budget",
            Command::Help => "/iterate help",
        }
    }
}

/// A malformed command; the message is written for the person who typed it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    #[error("“/iterate {}” is not a command; did you mean `/iterate {suggestion}`? (`/iterate help` lists the commands)", echo(.word))]
    UnknownSubcommand { word: String, suggestion: String },
    #[error("`/iterate {keyword}` takes no arguments; to send feedback, write `/iterate` followed by your text")]
    TakesNoArguments { keyword: String },
    #[error("`/iterate adjust` needs guidance: `/iterate adjust <what to do differently>`")]
    AdjustWithoutGuidance,
    #[error("`/iterate budget` needs a number of iterations, e.g. `/iterate budget 5`")]
    BudgetMissing,
    #[error("`/iterate budget`: “{}” is not a whole number of iterations", echo(.0))]
    BudgetNotANumber(String),
    #[error("`/iterate budget`: “{}” is not between 1 and {MAX_BUDGET_ITERATIONS} iterations", echo(.0))]
    BudgetOutOfRange(String),
}

/// Someone's text as an error message may repeat it: escaped, one line, cut short.
fn echo(text: &str) -> String {
    escape_markdown_excerpt(text, ECHO_CHARS)
}

/// The reply to `/iterate help`.
pub const HELP_MARKDOWN: &str = "\
| command | what it does |
| --- | --- |
| `/iterate` | re-run the checks and post the current revision prompt |
| `/iterate <feedback>` | feedback for the next iteration (quoted in the revision prompt) |
| `/iterate accept` | accept the current iteration and remove the review label |
| `/iterate adjust <guidance>` | change approach: the revision count starts again |
| `/iterate escalate [reason]` | ask a human to decide |
| `/iterate status` | show the iteration analytics |
| `/iterate budget <n>` | set this pull request's iteration limit to `n` |
| `/iterate help` | this list |

Commands count at the start of a line, outside code blocks, quotes and HTML blocks, and only \
in comments (never in review bodies); at most 10 per comment. \
`accept`, `adjust`, `escalate`, `budget` and feedback need write access to the repository; \
the pull request's own author may not `accept`, `adjust` or `budget` it.";

/// Every command in a comment, in order. A comment without `/iterate` costs one substring
/// search.
pub fn parse_comment(body: &str) -> Vec<Result<Command, CommandError>> {
    if !body.contains(TRIGGER) {
        return Vec::new();
    }
    command_spans(body)
        .into_iter()
        .map(|span| parse_command(&body[span]))
        .collect()
}

fn starts_command(text: &str) -> bool {
    text.strip_prefix(TRIGGER)
        .is_some_and(|rest| rest.chars().next().is_none_or(char::is_whitespace))
}

/// Blocks and inlines whose text is never a command.
fn is_excluded(tag: &Tag) -> bool {
    !matches!(
        tag,
        Tag::Paragraph | Tag::Emphasis | Tag::Strong | Tag::Strikethrough
    )
}

fn is_excluded_end(tag: &TagEnd) -> bool {
    !matches!(
        tag,
        TagEnd::Paragraph | TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough
    )
}

/// The source ranges of the command lines: each from `/iterate` to the end of its paragraph
/// or the start of the next command.
fn command_spans(body: &str) -> Vec<Range<usize>> {
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH;
    let mut spans: Vec<Range<usize>> = Vec::new();
    let mut open: Option<usize> = None;
    let mut excluded_depth = 0usize;
    let mut in_paragraph = false;
    let mut at_line_start = false;
    let mut in_html_comment = false;
    let mut open_html_elements = 0usize;
    for (event, range) in Parser::new_ext(body, options).into_offset_iter() {
        let line_start = std::mem::take(&mut at_line_start);
        match event {
            Event::Start(Tag::Paragraph) => {
                in_paragraph = true;
                at_line_start = true;
            }
            Event::End(TagEnd::Paragraph) => {
                in_paragraph = false;
                if let Some(start) = open.take() {
                    spans.push(start..range.end);
                }
            }
            Event::Start(tag) if is_excluded(&tag) => excluded_depth += 1,
            Event::End(tag) if is_excluded_end(&tag) => {
                excluded_depth = excluded_depth.saturating_sub(1)
            }
            Event::SoftBreak | Event::HardBreak => at_line_start = !in_html_comment,
            Event::Html(html) | Event::InlineHtml(html) => {
                if html.contains("<!--") && !html.contains("-->") {
                    in_html_comment = true;
                } else if html.contains("-->") {
                    in_html_comment = false;
                }
                if !in_html_comment {
                    open_html_elements = html_depth_after(open_html_elements, &html);
                }
            }
            Event::Text(_)
                if line_start
                    && in_paragraph
                    && excluded_depth == 0
                    && !in_html_comment
                    && open_html_elements == 0
                    && starts_command(&body[range.start..]) =>
            {
                if let Some(start) = open.replace(range.start) {
                    spans.push(start..range.start);
                }
            }
            _ => {}
        }
    }
    if let Some(start) = open {
        spans.push(start..body.len());
    }
    spans
}

/// Elements that have no closing tag.
const VOID_ELEMENTS: [&str; 14] = [
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track",
    "wbr", "param",
];

/// How many HTML elements are open after `html`, given `depth` before it: opening tags count
/// up (not void or self-closing ones), closing tags down; comments are skipped.
fn html_depth_after(mut depth: usize, html: &str) -> usize {
    let mut rest = html;
    while let Some(at) = rest.find('<') {
        rest = &rest[at + 1..];
        if let Some(after) = rest.strip_prefix("!--") {
            rest = after.find("-->").map_or("", |end| &after[end + 3..]);
            continue;
        }
        let closing = rest.starts_with('/');
        let name: String = rest
            .trim_start_matches('/')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect::<String>()
            .to_ascii_lowercase();
        if name.is_empty() || !name.starts_with(|c: char| c.is_ascii_alphabetic()) {
            continue;
        }
        let tag_end = rest.find('>').unwrap_or(rest.len());
        let self_closing = rest[..tag_end].ends_with('/');
        if closing {
            depth = depth.saturating_sub(1);
        } else if !self_closing && !VOID_ELEMENTS.contains(&name.as_str()) {
            depth += 1;
        }
    }
    depth
}

fn suggestion(word: &str) -> Option<&'static str> {
    if word.chars().count() < 4 {
        return None;
    }
    KEYWORDS
        .into_iter()
        .map(|k| (strsim::osa_distance(word, k), k))
        .filter(|(distance, _)| *distance <= 2)
        .min()
        .map(|(_, k)| k)
}

/// Parses one command's text, which starts with `/iterate`.
pub fn parse_command(text: &str) -> Result<Command, CommandError> {
    let rest = text.strip_prefix(TRIGGER).unwrap_or(text).trim();
    if rest.is_empty() {
        return Ok(Command::Reevaluate);
    }
    let (word, args) = match rest.split_once(char::is_whitespace) {
        Some((word, args)) => (word, args.trim()),
        None => (rest, ""),
    };
    let keyword = word.to_ascii_lowercase();
    let no_args = |command: Command| {
        if args.is_empty() {
            Ok(command)
        } else {
            Err(CommandError::TakesNoArguments {
                keyword: keyword.clone(),
            })
        }
    };
    match keyword.as_str() {
        "accept" => no_args(Command::Accept),
        "status" => no_args(Command::Status),
        "help" => no_args(Command::Help),
        "adjust" if args.is_empty() => Err(CommandError::AdjustWithoutGuidance),
        "adjust" => Ok(Command::Adjust(args.to_string())),
        "escalate" => Ok(Command::Escalate(
            (!args.is_empty()).then(|| args.to_string()),
        )),
        "budget" => parse_budget(args).map(Command::Budget),
        _ => match suggestion(&keyword).filter(|_| args.is_empty()) {
            Some(suggestion) => Err(CommandError::UnknownSubcommand {
                word: word.to_string(),
                suggestion: suggestion.to_string(),
            }),
            None => Ok(Command::Feedback(rest.to_string())),
        },
    }
}

fn parse_budget(args: &str) -> Result<u32, CommandError> {
    if args.is_empty() {
        return Err(CommandError::BudgetMissing);
    }
    let digits = args.strip_prefix(['+', '-']).unwrap_or(args);
    if args.contains(char::is_whitespace)
        || digits.is_empty()
        || !digits.bytes().all(|b| b.is_ascii_digit())
    {
        return Err(CommandError::BudgetNotANumber(args.to_string()));
    }
    match args.parse::<i64>() {
        Ok(n) if (1..=i64::from(MAX_BUDGET_ITERATIONS)).contains(&n) => Ok(n as u32),
        _ => Err(CommandError::BudgetOutOfRange(args.to_string())),
    }
}

pub use crate::config::{Permission, PermissionError};
