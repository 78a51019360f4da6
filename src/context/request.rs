//! What a `NEEDS:` line asks for: a file (whole, or a line range), a pattern or directory
//! (the names of the files it matches), or a concept itergate owns (a check's failure
//! output, a test, the configuration, the decision, the iteration's diff). Reading a
//! request never touches anything; it only says what would be delivered.

use serde::Serialize;

/// One request, as understood.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Request {
    /// A repository file, or `lines` of it (1-based, inclusive).
    File {
        path: String,
        lines: Option<(u32, u32)>,
    },
    /// A glob (`tests/**/*.py`) or a directory (`src/engine/`): the names of the files it
    /// matches, never their content.
    Pattern { pattern: String },
    /// `check <name>`: the check's full failure output.
    Check { name: String },
    /// `test <id>`: the failing test's assertion and source.
    Test { id: String },
    /// `config`: the configuration in force.
    Config,
    /// `decision`: the decision's reasoning.
    Decision,
    /// `diff`: the iteration's change.
    Diff,
    /// A path that leaves the repository (`../x`).
    OutsideRepository,
    /// Neither a path nor a concept itergate knows.
    Unknown,
}

/// The configuration files: asked for by path, they are delivered as the configuration in
/// force, with what must stay hidden left out.
const CONFIG_FILES: [&str; 2] = crate::config::CONFIG_LOCATIONS;

/// What `needs` asks for.
pub fn classify(needs: &str) -> Request {
    let text = unquote(needs.trim());
    let lower = text.to_ascii_lowercase();
    if let Some(name) = concept_argument(text, &lower, &["check", "output of check"]) {
        return Request::Check { name };
    }
    if let Some(id) = concept_argument(text, &lower, &["test", "failing test"]) {
        return Request::Test { id };
    }
    match lower.trim_start_matches("the ").trim_end_matches('.') {
        "config" | "configuration" | "the configuration in force" | "configuration in force" => {
            return Request::Config
        }
        "decision"
        | "reasoning"
        | "decision reasoning"
        | "the decision's reasoning"
        | "decision's reasoning"
        | "why" => return Request::Decision,
        "diff"
        | "iteration diff"
        | "diff of the iteration"
        | "the iteration's diff"
        | "iteration's diff"
        | "change" => return Request::Diff,
        _ => {}
    }
    if text.is_empty() || text.chars().any(char::is_whitespace) {
        return Request::Unknown;
    }
    path_request(text)
}

/// `KEYWORD NAME` or `KEYWORD: NAME` for one of `keywords`: the name, unquoted.
fn concept_argument(text: &str, lower: &str, keywords: &[&str]) -> Option<String> {
    keywords.iter().find_map(|keyword| {
        let rest = lower.strip_prefix(keyword)?;
        let start = text.len() - rest.len();
        let rest = &text[start..];
        let rest = rest
            .strip_prefix(':')
            .or_else(|| rest.strip_prefix(char::is_whitespace))?;
        let name = unquote(rest.trim());
        (!name.is_empty() && !name.contains(char::is_whitespace)).then(|| name.to_string())
    })
}

fn unquote(text: &str) -> &str {
    text.trim_matches(|c| matches!(c, '`' | '"' | '\'' | '<' | '>'))
        .trim()
}

fn path_request(text: &str) -> Request {
    let (path, lines) = split_lines(text);
    let Some(path) = normalise(path) else {
        return Request::OutsideRepository;
    };
    if CONFIG_FILES.contains(&path.as_str()) {
        return Request::Config;
    }
    if path.contains(['*', '?', '[', '{']) || text.ends_with('/') {
        let pattern = if text.ends_with('/') {
            format!("{path}/")
        } else {
            path
        };
        return Request::Pattern { pattern };
    }
    if path.is_empty() {
        return Request::Pattern {
            pattern: String::new(),
        };
    }
    Request::File { path, lines }
}

/// `path:12`, `path:12-40`, `path#L12-L40`, `path:L12`: the path and the range.
fn split_lines(text: &str) -> (&str, Option<(u32, u32)>) {
    let split = text
        .rsplit_once("#L")
        .map(|(p, r)| (p, r.replace('L', "")))
        .or_else(|| {
            text.rsplit_once(':')
                .map(|(p, r)| (p, r.trim_start_matches('L').replace("-L", "-")))
        });
    let Some((path, range)) = split else {
        return (text, None);
    };
    let parse = |s: &str| s.trim().parse::<u32>().ok().filter(|n| *n > 0);
    let lines = match range.split_once('-') {
        Some((a, b)) => parse(a).zip(parse(b)).filter(|(a, b)| a <= b),
        None => parse(&range).map(|n| (n, n)),
    };
    match lines {
        Some(lines) => (path, Some(lines)),
        None => (text, None),
    }
}

/// A repository-relative path with `/` separators and no `.` or empty components; `None`
/// when it climbs out of the repository.
pub fn normalise(path: &str) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split(['/', '\\']) {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            part => parts.push(part),
        }
    }
    Some(parts.join("/"))
}

/// What a request is called in a delivery: the path (with its range), or the concept.
pub fn title(request: &Request) -> String {
    match request {
        Request::File {
            path,
            lines: Some((a, b)),
        } if a == b => format!("{path}:{a}"),
        Request::File {
            path,
            lines: Some((a, b)),
        } => format!("{path}:{a}-{b}"),
        Request::File { path, lines: None } => path.clone(),
        Request::Pattern { pattern } if pattern.is_empty() => "the repository's files".into(),
        Request::Pattern { pattern } => pattern.clone(),
        Request::Check { name } => format!("check {name}"),
        Request::Test { id } => format!("test {id}"),
        Request::Config => "the configuration in force".into(),
        Request::Decision => "the decision's reasoning".into(),
        Request::Diff => "the iteration's diff".into(),
        Request::OutsideRepository | Request::Unknown => String::new(),
    }
}
