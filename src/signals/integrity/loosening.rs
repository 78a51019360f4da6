//! Edits that loosen a tool's own configuration (rules turned off, coverage `omit`, a
//! weaker `strict`): a WARNING at the edited line.

use super::*;

/// Tools' configuration files and what in an added line loosens them.
pub(super) const TOOL_CONFIG: [(&str, &[&str]); 9] = [
    (
        "pyproject.toml",
        &[
            "ignore",
            "omit",
            "exclude_lines",
            "fail_under",
            "ignore_errors",
            "= false",
            "disable",
        ],
    ),
    (
        "setup.cfg",
        &[
            "ignore",
            "omit",
            "exclude_lines",
            "fail_under",
            "ignore_errors",
            "= False",
            "disable",
        ],
    ),
    ("ruff.toml", &["ignore", "exclude"]),
    (".coveragerc", &["omit", "exclude_lines", "fail_under"]),
    (
        "mypy.ini",
        &["ignore_errors", "= False", "ignore_missing_imports"],
    ),
    (
        "tsconfig.json",
        &[
            "\"strict\": false",
            "\"noImplicitAny\": false",
            "\"exclude\"",
        ],
    ),
    ("Cargo.toml", &["= \"allow\"", "allow"]),
    ("clippy.toml", &["allow"]),
    (".golangci.yml", &["disable", "exclude"]),
];

/// ESLint's configuration files (any of `eslint.config.*`, `.eslintrc*`).
pub(super) fn is_eslint_config(name: &str) -> bool {
    name.starts_with("eslint.config.") || name.starts_with(".eslintrc")
}

pub(super) fn loosened_tools(changed: &ChangedLines) -> Vec<Finding> {
    let mut out = Vec::new();
    for (path, l) in changed.iter() {
        let name = path.rsplit('/').next().unwrap_or(path);
        let loosens = if is_eslint_config(name) {
            ["\"off\"", "'off'", ": 0", "ignores"]
                .iter()
                .any(|t| l.text.contains(t))
        } else {
            TOOL_CONFIG
                .iter()
                .find(|(file, _)| *file == name)
                .is_some_and(|(_, tokens)| tokens.iter().any(|t| l.text.contains(t)))
        };
        let removed_same = changed
            .removed
            .get(path)
            .is_some_and(|r| r.iter().any(|x| normalise(&x.text) == normalise(&l.text)));
        if loosens && !removed_same {
            out.push(finding(
                Severity::Warning,
                format!(
                    "a tool's configuration was loosened: `{}` at {path}:{}",
                    l.text.trim(),
                    l.line
                ),
                format!("{path}:{}", l.line),
                "keep the tools' configuration as the base has it; fix what they report instead"
                    .into(),
            ).about(crate::model::FindingKind::HarnessEdited, path.to_string()));
        }
    }
    out
}
