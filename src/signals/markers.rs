//! Markers of unfinished work in a change, judged like lint findings: new only when the
//! base does not already have them.
//!
//! Two kinds:
//! - **code that cannot run as written** — `todo!()`, `unimplemented!()`,
//!   `raise NotImplementedError`, `throw new Error("not implemented")`, `panic("TODO")` —
//!   is incomplete output: a WARNING with its file:line and an `incomplete_output` trigger
//!   in non-test source;
//! - **a comment** — `TODO`, `FIXME`, `XXX` — is a note (INFO), shown and never a revision
//!   by itself, unless `detection.marker_comments: warning`.
//!
//! In test files (`detection.tests`) every marker is a note.
//!
//! A marker is new when the change adds more of them, per file and kind, than it removes
//! with the same text: moving or re-indenting a `TODO` adds none. An added marker whose
//! text is close to a removed one's (an edited `TODO: … MSRC` → `MSRV`) is the same marker.
//! Counting the removed lines of the diff is counting the base's file: the lines the diff
//! does not touch are in both.

use crate::config::MarkerComments;
use crate::model::{ChangedLines, CheckerIssue, Severity, Trigger, TriggerType};

/// The dimension of a marker's issue.
pub const DIMENSION: &str = "incomplete_output";

/// Lines longer than this are compared by their first this many characters.
const MAX_COMPARED: usize = 240;

/// Whether two lines (normalised) are one line, edited: at least 60% alike by normalised
/// Levenshtein distance. Also how an edited untested line is told from new code.
pub fn same_line_edited(a: &str, b: &str) -> bool {
    strsim::normalized_levenshtein(a, b) >= 0.6
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Code that stops the program where it stands.
    Code(&'static str),
    /// A comment word.
    Comment(&'static str),
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Code(name) | Kind::Comment(name) => name,
        }
    }
}

/// Where the classifier looks.
pub struct Paths<'a> {
    /// Files markers count in at all (`detection.markers`).
    pub is_source: &'a dyn Fn(&str) -> bool,
    /// Test files (`detection.tests`).
    pub is_test: &'a dyn Fn(&str) -> bool,
}

/// The markers `changed` adds that its removed lines do not account for, as issues, each
/// with the trigger it raises when it asks for a revision.
pub fn new_markers(
    changed: &ChangedLines,
    paths: &Paths,
    comments: MarkerComments,
) -> Vec<(CheckerIssue, Option<Trigger>)> {
    let mut out = Vec::new();
    for (path, added) in &changed.files {
        if !(paths.is_source)(path) {
            continue;
        }
        let mut removed: Vec<(Kind, String)> = changed
            .removed
            .get(path)
            .into_iter()
            .flatten()
            .filter_map(|l| marker(&l.text).map(|k| (k, normalise(&l.text))))
            .collect();
        let found: Vec<(Kind, String, u32)> = added
            .iter()
            .filter_map(|l| marker(&l.text).map(|k| (k, normalise(&l.text), l.line)))
            .collect();
        if found.is_empty() {
            continue;
        }
        // Exact text first, so that an edit never takes the partner of a pure move.
        let mut unmatched = Vec::new();
        for (kind, text, line) in found {
            match removed.iter().position(|(k, t)| *k == kind && *t == text) {
                Some(i) => {
                    removed.swap_remove(i);
                }
                None => unmatched.push((kind, text, line)),
            }
        }
        for (kind, text, line) in unmatched {
            let edited = removed
                .iter()
                .position(|(k, t)| *k == kind && same_line_edited(t, &text));
            match edited {
                Some(i) => {
                    removed.swap_remove(i);
                }
                None => out.push(judged(path, line, kind, (paths.is_test)(path), comments)),
            }
        }
    }
    out
}

fn judged(
    path: &str,
    line: u32,
    kind: Kind,
    in_test: bool,
    comments: MarkerComments,
) -> (CheckerIssue, Option<Trigger>) {
    let at = format!("{path}:{line}");
    let (severity, finding) = match kind {
        Kind::Code(name) if !in_test => (
            Severity::Warning,
            format!("`{name}` added at {at}: this code cannot run as written; implement it"),
        ),
        Kind::Comment(name) if !in_test && comments == MarkerComments::Warning => (
            Severity::Warning,
            format!("{name} comment added at {at}: finish the work it names, or remove it"),
        ),
        Kind::Code(name) => (Severity::Info, format!("`{name}` added at {at}")),
        Kind::Comment(name) => (Severity::Info, format!("{name} comment added at {at}")),
    };
    let trigger = (severity == Severity::Warning).then(|| Trigger {
        kind: TriggerType::IncompleteOutput,
        source: "diff".into(),
        severity: 0.6,
        details: format!("`{}` added at {at}", kind.name()),
        fixable: true,
    });
    let issue = CheckerIssue {
        dimension: DIMENSION.into(),
        severity,
        finding,
        affected_field: Some(at),
        suggested_fix: None,
        kind: None,
        subject: None,
    };
    (issue, trigger)
}

/// The line's text without its indentation and with runs of whitespace as one space.
pub fn normalise(line: &str) -> String {
    let mut out = String::new();
    for word in line.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
        if out.len() >= MAX_COMPARED {
            break;
        }
    }
    out
}

/// The marker a line carries, if any: code in the part before a comment opener, a comment
/// word in the part after it.
fn marker(line: &str) -> Option<Kind> {
    let (code, comment) = split_comment(line);
    code_marker(code).or_else(|| comment.and_then(comment_marker))
}

const CODE_MARKERS: [(&str, &str); 2] = [
    ("todo!(", "todo!()"),
    ("unimplemented!(", "unimplemented!()"),
];

/// Messages that say "this is not written yet" in a `throw new Error(…)` or `panic(…)`.
const UNFINISHED_MESSAGES: [&str; 5] = [
    "not implemented",
    "not yet implemented",
    "unimplemented",
    "todo",
    "fixme",
];

fn code_marker(code: &str) -> Option<Kind> {
    if let Some((_, name)) = CODE_MARKERS.iter().find(|(m, _)| code.contains(m)) {
        return Some(Kind::Code(name));
    }
    if code.contains("raise NotImplementedError") {
        return Some(Kind::Code("raise NotImplementedError"));
    }
    let says_unfinished = |rest: &str| {
        let message = rest
            .trim_start()
            .trim_start_matches(['"', '\'', '`'])
            .to_ascii_lowercase();
        UNFINISHED_MESSAGES.iter().any(|m| message.starts_with(m))
    };
    for (opener, name) in [
        ("throw new Error(", "throw new Error(\"not implemented\")"),
        ("panic(", "panic(\"TODO\")"),
    ] {
        if let Some(at) = code.find(opener) {
            if says_unfinished(&code[at + opener.len()..]) {
                return Some(Kind::Code(name));
            }
        }
    }
    None
}

const COMMENT_WORDS: [&str; 3] = ["TODO", "FIXME", "XXX"];

fn comment_marker(comment: &str) -> Option<Kind> {
    COMMENT_WORDS.iter().find_map(|word| {
        comment.match_indices(word).find_map(|(at, _)| {
            let before = comment[..at].chars().next_back();
            let after = comment[at + word.len()..].chars().next();
            let boundary = |c: Option<char>| !c.is_some_and(|c| c.is_alphanumeric() || c == '_');
            (boundary(before) && boundary(after)).then_some(Kind::Comment(word))
        })
    })
}

/// The line split at its first comment opener (`//`, `#`, `/*`, `--`, or a leading `*`
/// of a block comment): code before, comment after. Strings are not parsed; a `#` or
/// `//` inside one starts a "comment" that is searched for comment words only.
fn split_comment(line: &str) -> (&str, Option<&str>) {
    let trimmed = line.trim_start();
    if trimmed.starts_with('*') {
        return ("", Some(trimmed));
    }
    let at = ["//", "#", "/*", "-- "]
        .iter()
        .filter_map(|opener| line.find(opener))
        .min();
    match at {
        Some(at) => (&line[..at], Some(&line[at..])),
        None => (line, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{AddedLine, RemovedLine};

    fn change(path: &str, added: &[&str], removed: &[&str]) -> ChangedLines {
        let mut changed = ChangedLines::default();
        changed.files.insert(
            path.into(),
            added
                .iter()
                .enumerate()
                .map(|(i, t)| AddedLine {
                    line: i as u32 + 1,
                    text: t.to_string(),
                })
                .collect(),
        );
        changed.removed.insert(
            path.into(),
            removed
                .iter()
                .enumerate()
                .map(|(i, t)| RemovedLine {
                    line: i as u32 + 1,
                    text: t.to_string(),
                })
                .collect(),
        );
        changed
    }

    fn judge(changed: &ChangedLines, comments: MarkerComments) -> Vec<(Severity, String)> {
        let paths = Paths {
            is_source: &|p| !p.ends_with(".md"),
            is_test: &|p| p.starts_with("tests/"),
        };
        new_markers(changed, &paths, comments)
            .into_iter()
            .map(|(i, t)| {
                assert_eq!(t.is_some(), i.severity == Severity::Warning);
                (i.severity, i.affected_field.unwrap())
            })
            .collect()
    }

    #[test]
    fn code_that_cannot_run_is_a_warning_in_source_and_a_note_in_tests() {
        for line in [
            "    todo!()",
            "    unimplemented!(\"later\")",
            "        raise NotImplementedError",
            "  throw new Error(\"Not implemented\");",
            "\tpanic(\"TODO: parse\")",
            "  throw new Error('not yet implemented')",
        ] {
            let found = judge(&change("src/a.rs", &[line], &[]), MarkerComments::Info);
            assert_eq!(found, [(Severity::Warning, "src/a.rs:1".into())], "{line}");
            let found = judge(&change("tests/a.rs", &[line], &[]), MarkerComments::Info);
            assert_eq!(found, [(Severity::Info, "tests/a.rs:1".into())], "{line}");
        }
    }

    #[test]
    fn ordinary_code_and_words_are_no_markers() {
        for line in [
            "throw new Error(\"bad input\")",
            "panic(err)",
            "let todos = load_todos();",
            "// TODOS are listed in the issue tracker",
            "const XXXL = 4;",
            "# raise NotImplemented if the other is no Version",
            "assert 'TODO' in text",
        ] {
            assert!(
                judge(&change("src/a.py", &[line], &[]), MarkerComments::Warning).is_empty(),
                "{line}"
            );
        }
    }

    #[test]
    fn comments_are_notes_unless_configured() {
        let changed = change("src/a.rs", &["// TODO: handle MSRV", "# FIXME later"], &[]);
        assert_eq!(
            judge(&changed, MarkerComments::Info),
            [
                (Severity::Info, "src/a.rs:1".into()),
                (Severity::Info, "src/a.rs:2".into())
            ]
        );
        assert_eq!(
            judge(&changed, MarkerComments::Warning),
            [
                (Severity::Warning, "src/a.rs:1".into()),
                (Severity::Warning, "src/a.rs:2".into())
            ]
        );
        let in_test = change("tests/a.rs", &["// TODO: more cases"], &[]);
        assert_eq!(
            judge(&in_test, MarkerComments::Warning),
            [(Severity::Info, "tests/a.rs:1".into())]
        );
    }

    #[test]
    fn moved_and_edited_markers_are_the_same_markers() {
        let moved = change("src/a.rs", &["        todo!()"], &["    todo!()"]);
        assert!(judge(&moved, MarkerComments::Warning).is_empty());
        let edited = change(
            "src/a.rs",
            &["    // TODO: remove once the MSRV is 1.60"],
            &["    // TODO: remove once the MSRC is 1.60"],
        );
        assert!(judge(&edited, MarkerComments::Warning).is_empty());
        // One removed, two added: one is new.
        let more = change(
            "src/a.rs",
            &["// TODO: a", "// TODO: something else entirely"],
            &["// TODO: a"],
        );
        assert_eq!(
            judge(&more, MarkerComments::Warning),
            [(Severity::Warning, "src/a.rs:2".into())]
        );
        // A removed comment does not excuse added code of another kind.
        let swapped = change("src/a.rs", &["    todo!() // TODO"], &["    // TODO"]);
        assert_eq!(
            judge(&swapped, MarkerComments::Info),
            [(Severity::Warning, "src/a.rs:1".into())]
        );
    }

    #[test]
    fn files_outside_the_sources_are_not_read() {
        assert!(judge(
            &change("README.md", &["todo!()"], &[]),
            MarkerComments::Warning
        )
        .is_empty());
    }
}
