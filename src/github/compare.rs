//! What changed between two commits, as GitHub's compare API tells it: the side that
//! publishes a record scored elsewhere (a fork's job, the App) has no checkout, and reads the
//! change since the previous head from GitHub, which the pull request's code cannot forge.
//!
//! A file's `patch` is the hunks of a unified diff (`@@ -a,b +c,d @@`, then ` `, `-` and `+`
//! lines). [`changed_lines`] reads them into the [`ChangedLines`] a local diff gives, and
//! refuses a patch it cannot read with the file, the patch's line and column and what was
//! expected there.

use crate::model::{AddedLine, ChangedLines, RemovedLine};

/// How the head relates to the base: `ahead` (the base is its ancestor), `identical`,
/// `behind` or `diverged` (a force push).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Comparison {
    pub status: String,
    pub files: Vec<ComparedFile>,
}

impl Comparison {
    /// Whether the diff is the change from the base to the head (not from a merge-base
    /// that lies behind the base).
    pub fn is_linear(&self) -> bool {
        matches!(self.status.as_str(), "ahead" | "identical")
    }
}

/// One changed file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ComparedFile {
    pub filename: String,
    /// The hunks; GitHub leaves them out for binary files and very large diffs.
    pub patch: Option<String>,
}

/// A patch that is not a unified diff's hunks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the patch of {file} from GitHub's compare, line {line}, column {column}: expected {expected}"
)]
pub struct PatchError {
    pub file: String,
    pub line: usize,
    pub column: usize,
    pub expected: &'static str,
}

/// The lines each file gained and lost, numbered as in the head and the base.
pub fn changed_lines(files: &[ComparedFile]) -> Result<ChangedLines, PatchError> {
    let mut changed = ChangedLines::default();
    for file in files {
        let Some(patch) = &file.patch else { continue };
        let (added, removed) = hunks(patch).map_err(|(line, column, expected)| PatchError {
            file: file.filename.clone(),
            line,
            column,
            expected,
        })?;
        if !added.is_empty() {
            changed.files.insert(file.filename.clone(), added);
        }
        if !removed.is_empty() {
            changed.removed.insert(file.filename.clone(), removed);
        }
    }
    Ok(changed)
}

type Position = (usize, usize, &'static str);

/// The added and removed lines of one file's hunks, or where they stop being readable.
fn hunks(patch: &str) -> Result<(Vec<AddedLine>, Vec<RemovedLine>), Position> {
    let (mut added, mut removed) = (Vec::new(), Vec::new());
    // The next old and new line numbers, and how many of each the hunk still holds.
    let mut old = 0u32;
    let mut new = 0u32;
    let mut left = (0u32, 0u32);
    let mut in_hunk = false;
    for (index, text) in patch.lines().enumerate() {
        let at = index + 1;
        if let Some(header) = text.strip_prefix("@@ ") {
            if in_hunk && left != (0, 0) {
                return Err((at, 1, "the rest of the hunk the previous header counted"));
            }
            let ((o, ol), (n, nl)) = header_ranges(header).map_err(|(c, e)| (at, c + 3, e))?;
            (old, new, left) = (o, n, (ol, nl));
            in_hunk = true;
            continue;
        }
        if !in_hunk {
            return Err((at, 1, "a hunk header `@@ -a,b +c,d @@`"));
        }
        let (kind, body) = match text.chars().next() {
            // A blank context line whose space was lost on the way.
            None => (' ', ""),
            Some(c) => (c, &text[c.len_utf8()..]),
        };
        match kind {
            ' ' if left.0 > 0 && left.1 > 0 => {
                (old, new) = (old.saturating_add(1), new.saturating_add(1));
                left = (left.0 - 1, left.1 - 1);
            }
            '-' if left.0 > 0 => {
                removed.push(RemovedLine {
                    line: old,
                    text: body.to_string(),
                });
                old = old.saturating_add(1);
                left.0 -= 1;
            }
            '+' if left.1 > 0 => {
                added.push(AddedLine {
                    line: new,
                    text: body.to_string(),
                });
                new = new.saturating_add(1);
                left.1 -= 1;
            }
            '\\' => {}
            ' ' | '-' | '+' => {
                return Err((at, 1, "a new hunk header (this hunk's lines are all read)"))
            }
            _ => return Err((at, 1, "` `, `-`, `+` or `\\` at the start of a hunk's line")),
        }
    }
    if in_hunk && left != (0, 0) {
        return Err((
            patch.lines().count() + 1,
            1,
            "the rest of the hunk the last header counted",
        ));
    }
    Ok((added, removed))
}

/// A hunk's range: its first line and how many lines it counts.
type Range = (u32, u32);

/// `-a[,b] +c[,d] @@…` → `((a, b), (c, d))`, counts 1 when left out; errors carry the
/// column (from 1) within `header`.
fn header_ranges(header: &str) -> Result<(Range, Range), (usize, &'static str)> {
    let (ranges, _) = header
        .split_once(" @@")
        .ok_or((header.len() + 1, "` @@` closing the hunk header"))?;
    let (old, new) = ranges.split_once(' ').ok_or((
        ranges.len() + 1,
        "a space between the old and the new range",
    ))?;
    let old = old
        .strip_prefix('-')
        .ok_or((1, "`-` before the old range"))?;
    let column = old.len() + 3;
    let new = new
        .strip_prefix('+')
        .ok_or((column, "`+` before the new range"))?;
    let old = range(old).map_err(|c| (1 + c, "the old range `a` or `a,b`"))?;
    let new = range(new).map_err(|c| (column + c, "the new range `c` or `c,d`"))?;
    Ok((old, new))
}

/// `a[,b]` → `(a, b)` (`b` 1 when left out); errors carry the column within it.
fn range(text: &str) -> Result<Range, usize> {
    let (start, count) = text.split_once(',').unwrap_or((text, "1"));
    let start = start.parse().map_err(|_| 1usize)?;
    let count = count.parse().map_err(|_| start_len(text) + 2)?;
    Ok((start, count))
}

fn start_len(text: &str) -> usize {
    text.find(',').unwrap_or(text.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(patch: &str) -> Vec<ComparedFile> {
        vec![ComparedFile {
            filename: "tests/test_x.py".into(),
            patch: Some(patch.into()),
        }]
    }

    #[test]
    fn hunks_number_the_removed_lines_as_in_the_base_and_the_added_as_in_the_head() {
        let patch = "@@ -2,4 +2,4 @@ def test_adds():\n     x = 1\n-    assert add(2, 2) == 4\n+    assert add(2, 2) == 5\n \n\\ No newline at end of file\n \n@@ -20 +20,2 @@\n-old\n+new\n+more";
        let changed = changed_lines(&file(patch)).expect("readable");
        let removed = &changed.removed["tests/test_x.py"];
        assert_eq!(
            removed
                .iter()
                .map(|l| (l.line, l.text.as_str()))
                .collect::<Vec<_>>(),
            [(3, "    assert add(2, 2) == 4"), (20, "old")]
        );
        assert_eq!(changed.line_numbers("tests/test_x.py"), [3, 20, 21]);
    }

    #[test]
    fn a_patch_that_is_not_hunks_is_refused_with_its_place() {
        let err = changed_lines(&file("diff --git a/x b/x\n")).expect_err("no header");
        assert_eq!((err.line, err.column), (1, 1));
        assert!(err.to_string().contains("tests/test_x.py"), "{err}");
        let err = changed_lines(&file("@@ -1,x +1 @@\n")).expect_err("bad count");
        assert_eq!(err.line, 1);
        assert_eq!(err.expected, "the old range `a` or `a,b`");
        let err = changed_lines(&file("@@ -1,2 +1,2 @@\n a\n")).expect_err("short");
        assert_eq!(err.line, 3);
        let err = changed_lines(&file("@@ -1 +1 @@\n-a\n+b\n+c\n")).expect_err("long");
        assert_eq!(
            (err.line, err.expected),
            (4, "a new hunk header (this hunk's lines are all read)")
        );
    }

    #[test]
    fn a_file_without_a_patch_has_no_lines() {
        let files = [ComparedFile {
            filename: "logo.png".into(),
            patch: None,
        }];
        assert!(changed_lines(&files).expect("nothing to read").is_empty());
    }
}
