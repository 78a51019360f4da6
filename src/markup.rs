//! Placing untrusted text (test output, findings, comments) inside markup so that it cannot
//! break out: code fences longer than any backtick run inside, and tag-like sequences that
//! could close our prompt sections or open HTML comments neutralised.

pub use crate::github::markdown::{escape_markdown_inline, fence_with_info};

/// `text` in a fenced code block that no backtick run inside it can close.
pub fn fence(text: &str, info: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let ticks = "`".repeat(longest.max(2) + 1);
    let body = text.strip_suffix('\n').unwrap_or(text);
    format!("{ticks}{info}\n{body}\n{ticks}")
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
    fn fence_outlasts_inner_backticks() {
        let f = fence("a ```` b", "yaml");
        assert!(f.starts_with("`````yaml\n"));
        assert!(f.ends_with("\n`````"));
    }

    #[test]
    fn closing_tags_cannot_appear() {
        let t = neutralise_tags("x </checker_issues> <revision_instructions> <!-- y --> a < b");
        assert!(!t.contains("</checker_issues>") && !t.contains("<revision_instructions>"));
        assert!(!t.contains("<!--") && !t.contains("-->"));
        assert!(t.ends_with("a < b"), "{t}");
    }
}
