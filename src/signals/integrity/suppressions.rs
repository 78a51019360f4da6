//! Suppressions added in changed lines (`# noqa`, `#[allow(…)]`, `// eslint-disable…`,
//! `@ts-ignore` …): a WARNING naming the rule silenced, a note in test code or with a reason.

use super::*;

/// The words of a check's command that run each tool of [`SUPPRESSIONS`].
pub(super) const TOOL_WORDS: [(&str, &[&str]); 11] = [
    ("ruff/flake8", &["ruff", "flake8"]),
    ("mypy", &["mypy"]),
    ("pyright", &["pyright"]),
    (
        "coverage",
        &["cov", "coverage", "coverprofile", "c8", "nyc", "tarpaulin"],
    ),
    ("pylint", &["pylint"]),
    ("eslint", &["eslint"]),
    ("tsc", &["tsc"]),
    ("rustc/clippy", &["cargo", "rustc", "clippy"]),
    ("golangci-lint", &["golangci"]),
    ("gosec", &["gosec", "golangci"]),
    ("staticcheck", &["staticcheck", "golangci"]),
];

/// Whether a check may run `tool`: a command names it, or a check's command cannot be
/// read that way (a package or shell script, `make`, a report read without a command).
pub(super) fn tool_may_run(tool: &str, commands: &[Option<String>]) -> bool {
    let words = TOOL_WORDS
        .iter()
        .find(|(t, _)| *t == tool)
        .map_or(&[][..], |(_, w)| *w);
    commands.iter().any(|command| {
        let Some(command) = command else { return true };
        let opaque =
            !files_run_by(command).is_empty() || command.split_whitespace().any(|w| w == "make");
        opaque
            || command
                .split(|c: char| !c.is_ascii_alphanumeric())
                .any(|w| words.contains(&w))
    })
}

/// Comment markers that silence a tool, with where the rule's name follows.
pub(super) const SUPPRESSIONS: [(&str, &str); 18] = [
    ("# noqa", "ruff/flake8"),
    ("# type: ignore", "mypy"),
    ("# pyright: ignore", "pyright"),
    ("# pragma: no cover", "coverage"),
    ("# pylint: disable", "pylint"),
    ("eslint-disable", "eslint"),
    ("@ts-ignore", "tsc"),
    ("@ts-expect-error", "tsc"),
    ("@ts-nocheck", "tsc"),
    ("istanbul ignore", "coverage"),
    ("c8 ignore", "coverage"),
    ("#[allow(", "rustc/clippy"),
    ("#![allow(", "rustc/clippy"),
    ("//nolint", "golangci-lint"),
    ("#nosec", "gosec"),
    ("// lint:ignore", "staticcheck"),
    ("//lint:ignore", "staticcheck"),
    ("//lint:file-ignore", "staticcheck"),
];

/// What a suppression silences: `E501` of `# noqa: E501`, `clippy::unwrap_used` of
/// `#[allow(clippy::unwrap_used)]`; "every rule" when it names none.
pub(super) fn silenced(text: &str, marker: &str) -> String {
    let rest = &text[text.find(marker).map_or(0, |i| i + marker.len())..];
    let rest = rest.trim_start_matches([':', '=', ' ', '[', '(', '-']);
    let rest = rest
        .trim_start_matches("next-line")
        .trim_start_matches("line")
        .trim_start();
    let end = rest
        .find([']', ')', '*', '#'])
        .unwrap_or(rest.len())
        .min(120);
    let rules = rest[..end].trim().trim_end_matches(',').trim();
    if rules.is_empty() || rules.starts_with("//") {
        "every rule".into()
    } else {
        rules.to_string()
    }
}

/// (file, rule) of every lint finding the base or an earlier iteration of the task
/// reported: what a suppression must not silence, whatever reason it gives.
pub(super) fn reported_findings(input: &Input) -> BTreeSet<(String, String)> {
    input
        .base
        .into_iter()
        .chain(input.earlier.observations.iter().copied())
        .flat_map(|o| &o.checks)
        .filter_map(|c| match &c.result {
            CheckResult::Report {
                report: Report::Lint(lint),
                ..
            } => Some(&lint.findings),
            _ => None,
        })
        .flatten()
        .filter_map(|f| Some((f.file.clone()?, f.rule.clone().unwrap_or_default())))
        .collect()
}

/// Whether a suppression gives its reason: on its own line (eslint's `-- why`,
/// `#[allow(…, reason = "…")]`, a comment after `# noqa: X` or `//nolint:x`, text after
/// `@ts-expect-error`) or in a comment line added right above it.
pub(super) fn gives_reason(text: &str, marker: &str, above: Option<&str>) -> bool {
    let rest = &text[text.find(marker).map_or(0, |i| i + marker.len())..];
    let on_line = match marker {
        "eslint-disable" => rest
            .split_once(" -- ")
            .is_some_and(|(_, r)| !r.trim().is_empty()),
        "#[allow(" | "#![allow(" => rest.contains("reason"),
        // staticcheck's directive takes the checks, then the reason, as plain words.
        "//lint:ignore" | "//lint:file-ignore" | "// lint:ignore" => {
            rest.split_whitespace().count() >= 2
        }
        "@ts-expect-error" => {
            rest.trim_start_matches([':', ' ', '-'])
                .trim()
                .trim_end_matches("*/")
                .len()
                > 3
        }
        _ => {
            // `# noqa: E501  # the URL cannot be split`, `//nolint:errcheck // best effort`
            let after = rest.trim_start_matches([':', ' ']);
            let after = after.split_once([' ', '\t']).map_or("", |(_, a)| a).trim();
            after.len() > 3 && (after.starts_with('#') || after.starts_with("//"))
        }
    };
    let comment_above = above.is_some_and(|a| {
        let a = a.trim();
        let comment = ["//", "#", "/*", "*", "--"]
            .iter()
            .any(|c| a.starts_with(c) && !a.starts_with("#[") && !a.starts_with("#!["));
        comment && a.len() > 6 && !SUPPRESSIONS.iter().any(|(m, _)| a.contains(m))
    });
    on_line || comment_above
}

/// Whether `line` (1-based) of a Rust source lies inside a `#[cfg(test)]` module (found by
/// its braces; a brace inside a string literal can mislead it, and then the suppression is
/// judged as in code: the stricter reading).
pub(super) fn in_rust_test_module(source: &str, line: u32) -> bool {
    let lines: Vec<&str> = source.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        if !lines[i].trim_start().starts_with("#[cfg(test)]") {
            i += 1;
            continue;
        }
        let Some(start) = (i..lines.len().min(i + 6)).find(|&k| {
            let text = lines[k].trim_start();
            (text.contains("mod ") || text.starts_with("mod")) && text.contains('{')
        }) else {
            i += 1;
            continue;
        };
        let mut depth = 0i64;
        let mut end = lines.len() - 1;
        for (k, text) in lines.iter().enumerate().skip(start) {
            depth += text.matches('{').count() as i64 - text.matches('}').count() as i64;
            if depth <= 0 {
                end = k;
                break;
            }
        }
        let at = line as usize;
        if at > i && at <= end + 1 {
            return true;
        }
        i = end + 1;
    }
    false
}

/// Suppressions added in changed lines. Each is a WARNING, unless it gives its reason
/// and silences nothing the base or an earlier iteration reported (a note then): a
/// careful reviewer reads a justified suppression, but never accepts one that puts a
/// finding the task was asked to fix out of sight.
pub(super) fn suppressions(
    changed: &ChangedLines,
    is_test: &dyn Fn(&str) -> bool,
    reported: &BTreeSet<(String, String)>,
    silences_a_check: &dyn Fn(&str) -> bool,
    head_source: &dyn Fn(&str) -> Option<String>,
) -> Vec<Finding> {
    let mut out = Vec::new();
    for (path, added) in &changed.files {
        // Rust's attributes span lines: a lint added to an existing `#![allow(` list.
        // The file is read only for an added line that could be one.
        let source = std::cell::OnceCell::new();
        let source = || {
            source
                .get_or_init(|| path.ends_with(".rs").then(|| head_source(path)).flatten())
                .as_deref()
        };
        let added_at: BTreeSet<u32> = added.iter().map(|l| l.line).collect();
        let mut removed: Vec<String> = changed
            .removed
            .get(path)
            .into_iter()
            .flatten()
            .filter(|l| SUPPRESSIONS.iter().any(|(m, _)| l.text.contains(m)))
            .map(|l| normalise(&l.text))
            .collect();
        for (at, l) in added.iter().enumerate() {
            let found = SUPPRESSIONS
                .iter()
                .find(|(m, _)| l.text.contains(m))
                .map(|(m, tool)| (*m, *tool, silenced(&l.text, m)))
                .or_else(|| {
                    if !lint_name(l.text.trim()) {
                        return None;
                    }
                    let opener = source().and_then(|s| inside_allow(s, l.line, &added_at))?;
                    let rules = l.text.trim().trim_end_matches([',', ')', ']']).trim();
                    Some((opener, "rustc/clippy", rules.to_string()))
                });
            let Some((marker, tool, rules)) = found else {
                continue;
            };
            let text = normalise(&l.text);
            if let Some(i) = removed
                .iter()
                .position(|r| *r == text)
                .or_else(|| removed.iter().position(|r| same_line_edited(r, &text)))
            {
                removed.swap_remove(i);
                continue;
            }
            let silences_reported = reported.iter().any(|(file, rule)| {
                file == path
                    && (rules == "every rule"
                        || (!rule.is_empty()
                            && rules.split([',', ' ']).any(|r| {
                                !r.is_empty() && (rule.ends_with(r) || r.ends_with(rule.as_str()))
                            })))
            });
            let above = at
                .checked_sub(1)
                .map(|i| &added[i])
                .filter(|prev| prev.line + 1 == l.line)
                .map(|prev| prev.text.as_str());
            let justified = !silences_reported && gives_reason(&l.text, marker, above);
            // A tool no check runs measures nothing here: silencing it games nothing.
            let unjudged = !silences_a_check(tool);
            // Test code: a test file, or a Rust `#[cfg(test)]` module in a source file.
            let test_code =
                is_test(path) || source().is_some_and(|s| in_rust_test_module(s, l.line));
            let severity = if test_code || justified || unjudged {
                Severity::Info
            } else {
                Severity::Warning
            };
            let shown = marker.trim_start_matches("# ").trim_end_matches('(');
            let why = if silences_reported {
                ", which an earlier run reported"
            } else if justified {
                ", with its reason"
            } else if unjudged {
                ", which no check runs"
            } else {
                ""
            };
            out.push(finding(
                severity,
                format!(
                    "{SUPPRESSION}: `{shown}` silences {tool} ({rules}){why} at {path}:{}",
                    l.line
                ),
                format!("{path}:{}", l.line),
                "fix what the tool reports instead of silencing it, or say in the commit why it is wrong".into(),
            ).about(crate::model::FindingKind::Suppression, format!("{path}:{}", l.line)));
        }
    }
    out
}

/// The `#[allow(` or `#![allow(` a lint name on `line` (1-based) of `source` continues,
/// when that attribute opened on an earlier line the change did not add (an added opener
/// is found on its own line).
pub(super) fn inside_allow(source: &str, line: u32, added: &BTreeSet<u32>) -> Option<&'static str> {
    let lines: Vec<&str> = source.lines().collect();
    let index = usize::try_from(line).ok()?.checked_sub(1)?;
    let text = lines.get(index)?.trim();
    if !lint_name(text) {
        return None;
    }
    // Upwards through the list's other names to the line that opened it.
    for back in (index.saturating_sub(ALLOW_LIST_LINES)..index).rev() {
        let above = lines.get(back)?.trim();
        for opener in ["#![allow(", "#[allow("] {
            if above.starts_with(opener) && !above.contains(")]") {
                let opened_here = u32::try_from(back + 1).is_ok_and(|n| added.contains(&n));
                return (!opened_here).then_some(opener);
            }
        }
        if !(lint_name(above) || above.is_empty() || above.starts_with("//")) {
            return None;
        }
    }
    None
}

/// A line that is one lint's name in a list (`clippy::unwrap_used,`, `dead_code`).
pub(super) fn lint_name(line: &str) -> bool {
    let name = line.trim_end_matches([',', ')', ']', ' ']);
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

/// How far above a lint name its attribute's opening line is looked for.
pub(super) const ALLOW_LIST_LINES: usize = 200;
