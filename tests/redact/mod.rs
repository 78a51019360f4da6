//! What varies between two runs of the same test, redacted in snapshots of rendered
//! messages: `insta::with_settings!({ filters => redact::filters() }, { ... })`.

/// Regex and replacement pairs, applied in order: the signed state first (its base64 may
/// hold anything), then commit SHAs, times, temporary paths, ports and durations.
pub fn filters() -> Vec<(&'static str, &'static str)> {
    vec![
        (
            r"<!-- itergate:state v1 [^>]*-->",
            "<!-- itergate:state v1 [state] -->",
        ),
        // Why an edited state does not decode depends on where the edit fell in it.
        (
            r"the state is not valid[^)]*",
            "the state is not valid [why]",
        ),
        (r"\b[0-9a-f]{40}\b", "[sha]"),
        (r"\b[0-9a-f]{7,12}\b", "[short-sha]"),
        (
            r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2}| UTC)?",
            "[time]",
        ),
        // The temporary directory only: the file names and positions after it are kept.
        (r"/tmp/\.tmp[A-Za-z0-9_]+", "[tmp]"),
        // A scratch worktree's directory names the process that made it.
        (r"itergate-wt-\d+-\d+-", "itergate-wt-[pid]-"),
        (r"(127\.0\.0\.1|localhost):\d+", "$1:[port]"),
        (r"\b\d+(\.\d+)?(ms|s)\b", "[duration]"),
    ]
}

/// Filters that show the invisible characters itergate puts in untrusted text to break
/// mentions, references, links and HTML comments: a word joiner (U+2060) and a zero-width
/// space (U+200B). A snapshot would otherwise hide them.
#[allow(dead_code)] // not every test binary that includes this module escapes text
pub fn invisible() -> Vec<(&'static str, &'static str)> {
    vec![("\u{2060}", "[U+2060]"), ("\u{200B}", "[U+200B]")]
}

/// [`filters`], and the lines that say a check started or finished dropped: a change's
/// checks and its base's run at once, so theirs come in either order.
#[allow(dead_code)] // not every test binary that includes this module runs checks
pub fn without_progress() -> Vec<(&'static str, &'static str)> {
    let mut filters = filters();
    filters.push((r"(?m)^itergate: check [^\n]*\n", ""));
    filters
}

/// A snapshot of a rendered message, redacted: `assert_message!("name", &text)`. A macro, so
/// the snapshot stays beside the test that takes it.
#[allow(unused_macros)] // the local binary snapshots through its own helper
macro_rules! assert_message {
    ($name:expr, $message:expr $(,)?) => {{
        let (name, message): (&str, &str) = ($name, $message);
        insta::with_settings!({ filters => $crate::redact::filters() }, {
            insta::assert_snapshot!(name, message);
        })
    }};
}
#[allow(unused_imports)]
pub(crate) use assert_message;
