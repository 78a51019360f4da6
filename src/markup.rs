//! Placing untrusted text (test output, findings, file names, commit messages, people's
//! comments) inside what itergate writes, so that it shows as written and does nothing else:
//! in markdown it cannot start a block, a link, a mention or an HTML element, close or open
//! an HTML comment, or forge the sticky comment's marker; in a prompt it cannot close or open
//! the prompt's sections; in a fence it cannot close the fence.
//!
//! GitHub links more than markdown does: `@name` mentions, `#123` and `owner/repo#5` issue
//! references (which also post cross-reference events on the issue they name), bare
//! `https://…` and `www.…` addresses. Its filters run on the rendered text, so a backslash
//! does not stop them; a word joiner (U+2060, invisible) after `@`, `#`, the `:` of `://` and
//! inside `www.` does, while the text still reads the same.

/// ASCII punctuation that CommonMark lets a backslash escape and that means something inline
/// or at a line start.
const MARKDOWN_PUNCTUATION: &[char] = &[
    '\\', '`', '*', '_', '{', '}', '[', ']', '(', ')', '#', '+', '-', '.', '!', '|', '~', '$', ':',
];

/// Zero-width space, used to break sequences that must not appear (`<!--`, `-->`).
const ZWSP: char = '\u{200B}';
/// Word joiner after `@`: the text still reads `@name` but mentions nobody.
const WORD_JOINER: char = '\u{2060}';

/// Characters that change how the text around them displays, or do not display at all:
/// bidirectional controls (`tests/\u{202E}yp.a_tset` displays as `tests/test_a.py`) and
/// zero-width characters.
fn invisible(c: char) -> bool {
    matches!(c,
        '\u{061C}'
        | '\u{200B}'..='\u{200F}'
        | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{2064}'
        | '\u{2066}'..='\u{2069}'
        | '\u{FEFF}')
}

/// `text` with every invisible character (a bidirectional control, a zero-width
/// character) written as its code point (`<U+202E>`).
pub fn reveal_invisible(text: &str) -> String {
    if !text.chars().any(invisible) {
        return text.to_string();
    }
    text.chars()
        .map(|c| {
            if invisible(c) {
                format!("<U+{:04X}>", c as u32)
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// `text` as one line of inline markdown that renders as the text itself: no markup, no
/// mention, no issue reference, no autolink, no invisible character (shown as `<U+202E>`).
pub fn escape_markdown_inline(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 4);
    let mut chars = text.chars().peekable();
    let mut recent = ['\0'; 3];
    while let Some(c) = chars.next() {
        match c {
            '\r' | '\n' | '\u{0085}' | '\u{2028}' | '\u{2029}' => out.push(' '),
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '@' => {
                out.push('@');
                out.push(WORD_JOINER);
            }
            '#' => {
                out.push_str("\\#");
                out.push(WORD_JOINER);
            }
            ':' if chars.peek() == Some(&'/') => {
                out.push_str("\\:");
                out.push(WORD_JOINER);
            }
            '.' if recent.iter().all(|r| r.eq_ignore_ascii_case(&'w')) => {
                out.push(WORD_JOINER);
                out.push_str("\\.");
            }
            c if MARKDOWN_PUNCTUATION.contains(&c) => {
                out.push('\\');
                out.push(c);
            }
            c if invisible(c) => out.push_str(&format!("&lt;U+{:04X}&gt;", c as u32)),
            c if c.is_control() && c != '\t' => {}
            c => out.push(c),
        }
        recent = [recent[1], recent[2], c];
    }
    out
}

/// Like [`escape_markdown_inline`], but a `code span` (single backticks, on one line) stays
/// code: GitHub renders nothing inside one (no mention, link, autolink or HTML), so the text
/// reads as written — ``/iterate adjust <guidance>`` rather than escaped backticks. A span
/// that holds `<!` or `--` (the start or end of an HTML comment, such as the sticky
/// comment's markers) or a control character is escaped like the rest.
pub fn escape_markdown_inline_keeping_code(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 4);
    let mut rest = text;
    while let Some(open) = rest.find('`') {
        let after = &rest[open + 1..];
        let Some(close) = after.find('`') else {
            break;
        };
        let span = Some(&after[..close]).filter(|code| {
            !code.is_empty()
                && !code.contains("<!")
                && !code.contains("--")
                && !code.chars().any(|c| c.is_control() || invisible(c))
                && !code.contains(['\u{0085}', '\u{2028}', '\u{2029}'])
        });
        match span {
            Some(code) => {
                out.push_str(&escape_markdown_inline(&rest[..open]));
                out.push('`');
                out.push_str(code);
                out.push('`');
                rest = &after[code.len() + 1..];
            }
            // Escaped whole, closing backtick included, so the next span pairs as written.
            None => {
                out.push_str(&escape_markdown_inline(&rest[..open + close + 2]));
                rest = &after[close + 1..];
            }
        }
    }
    out.push_str(&escape_markdown_inline(rest));
    out
}

/// Like [`escape_markdown_inline`], cut to at most `max_chars` characters of `text` (an
/// ellipsis says it was cut): for echoing what someone wrote in a short reply.
pub fn escape_markdown_excerpt(text: &str, max_chars: usize) -> String {
    let mut chars = text.chars();
    let head: String = chars.by_ref().take(max_chars).collect();
    let cut = if chars.next().is_some() { "…" } else { "" };
    format!("{}{cut}", escape_markdown_inline(&head))
}

/// Breaks every `<!--` and `-->` in `text` with a zero-width space, so that the text can
/// neither open nor close an HTML comment.
pub fn neutralise_html_comments(text: &str) -> String {
    let mut out = text.to_string();
    while out.contains("<!--") || out.contains("-->") {
        out = out
            .replace("<!--", &format!("<!{ZWSP}--"))
            .replace("-->", &format!("--{ZWSP}>"));
    }
    out
}

/// `text` in a fenced code block whose fence is longer than any backtick run inside, so the
/// text cannot close it; HTML comment delimiters are neutralised as well.
pub fn fence(text: &str) -> String {
    fence_with_info(text, "")
}

/// Like [`fence`] with an info string (a language name); characters other than ASCII
/// letters, digits, `-`, `_` and `+` are dropped from it.
pub fn fence_with_info(text: &str, info: &str) -> String {
    let info: String = info
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '+'))
        .collect();
    let text = neutralise_html_comments(&reveal_invisible(text));
    let longest = longest_backtick_run(&text);
    let fence = "`".repeat(longest.max(2) + 1);
    let body = text.trim_end_matches(['\n', '\r']);
    format!("{fence}{info}\n{body}\n{fence}")
}

fn longest_backtick_run(text: &str) -> usize {
    let mut longest = 0;
    let mut current = 0;
    for c in text.chars() {
        if c == '`' {
            current += 1;
            longest = longest.max(current);
        } else {
            current = 0;
        }
    }
    longest
}

/// Makes tag-like sequences (`<checker_issues>`, `</revision_instructions>`, `<!--`) and
/// HTML comment closers inert while keeping the text readable: `<x` becomes `<\x`.
pub fn neutralise_tags(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        out.push(c);
        if c == '<'
            && chars
                .peek()
                .is_some_and(|n| n.is_ascii_alphabetic() || matches!(n, '/' | '!'))
        {
            out.push('\\');
        }
    }
    out.replace("-->", "--\\>")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invisible_characters_are_shown_by_their_code_point() {
        let name = "tests/\u{202E}yp.a_tset";
        assert_eq!(
            escape_markdown_inline(name),
            "tests/&lt;U+202E&gt;yp\\.a\\_tset"
        );
        assert_eq!(
            escape_markdown_inline_keeping_code(&format!("`{name}`")),
            "\\`tests/&lt;U+202E&gt;yp\\.a\\_tset\\`"
        );
        assert!(fence(name).contains("tests/<U+202E>yp.a_tset"));
        assert_eq!(
            reveal_invisible("a\u{200B}b\u{2066}c"),
            "a<U+200B>b<U+2066>c"
        );
    }

    #[test]
    fn fence_outlasts_inner_backticks() {
        let f = fence_with_info("a ```` b", "yaml");
        assert!(f.starts_with("`````yaml\n"));
        assert!(f.ends_with("\n`````"));
    }

    #[test]
    fn references_and_autolinks_are_broken() {
        let t = escape_markdown_inline("see #12, octo/repo#5, https://x.example and www.x.example");
        assert!(
            t.contains("\\#\u{2060}12") && t.contains("repo\\#\u{2060}5"),
            "{t}"
        );
        assert!(
            t.contains("https\\:\u{2060}//") && t.contains("www\u{2060}\\."),
            "{t}"
        );
        assert_eq!(escape_markdown_excerpt("abcdef", 3), "abc…");
        assert_eq!(escape_markdown_excerpt("ab", 3), "ab");
    }

    #[test]
    fn closing_tags_cannot_appear() {
        let t = neutralise_tags("x </checker_issues> <revision_instructions> <!-- y --> a < b");
        assert!(!t.contains("</checker_issues>") && !t.contains("<revision_instructions>"));
        assert!(!t.contains("<!--") && !t.contains("-->"));
        assert!(t.ends_with("a < b"), "{t}");
    }
}
