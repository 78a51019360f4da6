//! What may never be delivered, whoever asks and however:
//!
//! - **Holdout** (`visibility: aggregate_only`): its test ids, the files it lists (report
//!   paths, its working directory, the paths its command names, the files its tests are
//!   in), its output. A path under one of them is refused with the same neutral reason as
//!   a path that does not exist, so a refusal does not confirm a guess; a pattern's listing
//!   leaves them out; a check's output is refused; the configuration is delivered with the
//!   holdout check's command and reports left out; and any text delivered has each of these
//!   names replaced by `[withheld]` (a Makefile that names a holdout test file, a diff that
//!   mentions one).
//! - **Secrets**: files matching `context.deny` (default `.env*`, `*.pem`, `*.key`,
//!   `.git/`), matched like `.gitignore` patterns: a pattern without `/` matches the file
//!   name at any depth, one ending in `/` a directory at any depth, any other one the path
//!   from the repository root.

use std::collections::BTreeSet;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

use crate::config::{Config, Visibility};

/// What replaces a holdout name in delivered text.
pub const WITHHELD: &str = "[withheld]";

/// Names shorter than this are not replaced in delivered text (a two-letter test name
/// would blank out half a file); the path checks still refuse them.
const MIN_SCRUBBED_LEN: usize = 5;

/// The holdout's names and paths, from the configuration and (where the observation is at
/// hand) the holdout check's own report.
#[derive(Debug, Clone, Default)]
pub struct Holdout {
    pub checks: BTreeSet<String>,
    /// Files and directories (repository-relative, normalised).
    pub paths: BTreeSet<String>,
    /// Test ids and their last name component.
    pub names: BTreeSet<String>,
    /// Globs of holdout files (`checks.<name>.files`).
    pub globs: Vec<String>,
}

impl Holdout {
    /// Everything the configuration says about `aggregate_only` checks.
    pub fn from_config(config: &Config) -> Holdout {
        let mut holdout = Holdout::default();
        for (name, check) in &config.checks {
            if check.visibility != Visibility::AggregateOnly {
                continue;
            }
            holdout.checks.insert(name.clone());
            holdout.checks.extend(check.report_names(name));
            for report in &check.report {
                if let Some(path) = &report.path {
                    holdout.add_path(&path.to_string_lossy());
                }
            }
            if let Some(dir) = &check.workdir {
                holdout.add_path(&dir.to_string_lossy());
            }
            for pattern in &check.files {
                holdout.add_glob(pattern);
            }
            for word in check.run.iter().flat_map(|r| r.split_whitespace()) {
                let word = word.trim_matches(|c| matches!(c, '\'' | '"' | ';' | '&' | '|'));
                if !word.starts_with('-') && (word.contains('/') || has_extension(word)) {
                    holdout.add_path(word);
                }
            }
        }
        holdout
    }

    pub fn add_path(&mut self, path: &str) {
        if let Some(path) = super::request::normalise(path).filter(|p| !p.is_empty()) {
            self.paths.insert(path);
        }
    }

    /// A glob of holdout files; a plain path or `dir/**` is also a path (its name is then
    /// scrubbed from delivered text too).
    pub fn add_glob(&mut self, pattern: &str) {
        let literal = pattern.trim_end_matches("/**").trim_end_matches('/');
        if !literal.contains(['*', '?', '[', '{']) {
            self.add_path(literal);
        }
        self.globs.push(pattern.trim_start_matches('/').to_string());
    }

    /// A holdout test: its id, and its last component (`tests::secret_case` → `secret_case`).
    pub fn add_test(&mut self, id: &str) {
        self.names.insert(id.to_string());
        if let Some(last) = id.rsplit([':', '.', '/', ' ']).find(|s| !s.is_empty()) {
            self.names.insert(last.to_string());
        }
    }

    /// Whether `path` is a holdout file or lies under a holdout directory.
    pub fn covers(&self, path: &str) -> bool {
        let path = path.to_ascii_lowercase();
        self.paths.iter().any(|p| {
            let p = p.to_ascii_lowercase();
            path == p
                || path
                    .strip_prefix(p.as_str())
                    .is_some_and(|rest| rest.starts_with('/'))
        })
    }

    /// Whether `name` (a test id, a check name) is holdout.
    pub fn names_test(&self, id: &str) -> bool {
        self.names.contains(id)
            || id
                .rsplit([':', '.', '/', ' '])
                .find(|s| !s.is_empty())
                .is_some_and(|last| self.names.contains(last))
    }
}

fn has_extension(word: &str) -> bool {
    word.rsplit_once('.')
        .is_some_and(|(stem, ext)| !stem.is_empty() && (1..=5).contains(&ext.len()))
        && !word.chars().all(|c| c.is_ascii_digit() || c == '.')
}

/// Why an item is refused, in words the agent reads. One neutral reason covers "does not
/// exist" and "is holdout", so that a refusal never confirms a guess.
pub const NOT_AVAILABLE: &str = "not available at this iteration";
/// A file matching `context.deny`.
pub const DENIED: &str =
    "withheld: files matching the configured deny patterns (context.deny) are never sent";

/// The compiled rules.
pub struct Policy {
    deny: GlobSet,
    holdout_files: GlobSet,
    pub holdout: Holdout,
}

impl Policy {
    /// `deny` patterns (gitignore-like, see the module documentation) and the holdout.
    pub fn new(deny: &[String], holdout: Holdout) -> Result<Policy, String> {
        let mut builder = GlobSetBuilder::new();
        for pattern in deny {
            for glob in gitignore_like(pattern) {
                let compiled = GlobBuilder::new(&glob)
                    .literal_separator(true)
                    .case_insensitive(true)
                    .build()
                    .map_err(|e| format!("context.deny: `{pattern}` is not a glob: {e}"))?;
                builder.add(compiled);
            }
        }
        let deny = builder.build().map_err(|e| format!("context.deny: {e}"))?;
        let mut builder = GlobSetBuilder::new();
        for pattern in &holdout.globs {
            let compiled = GlobBuilder::new(pattern)
                .literal_separator(true)
                .case_insensitive(true)
                .build()
                .map_err(|e| format!("checks.*.files: `{pattern}` is not a glob: {e}"))?;
            builder.add(compiled);
        }
        let holdout_files = builder
            .build()
            .map_err(|e| format!("checks.*.files: {e}"))?;
        Ok(Policy {
            deny,
            holdout_files,
            holdout,
        })
    }

    /// From the configuration: its deny patterns and its holdout checks.
    pub fn from_config(config: &Config) -> Result<Policy, String> {
        Policy::new(&config.context.deny, Holdout::from_config(config))
    }

    /// Why `path` may not be delivered, if it may not.
    /// Globs match whatever the case (`Server.PEM` is a `*.pem`), on the normalised path
    /// (`tests/./holdout_a.py` is `tests/holdout_a.py`); a path that climbs out of the
    /// repository is refused.
    pub fn refusal(&self, path: &str) -> Option<&'static str> {
        let Some(path) = super::request::normalise(path) else {
            return Some(DENIED);
        };
        let path = path.as_str();
        if self.holdout.covers(path) || self.holdout_files.is_match(path) {
            Some(NOT_AVAILABLE)
        } else if self.deny.is_match(path) {
            Some(DENIED)
        } else {
            None
        }
    }

    /// `text` with every holdout name and path replaced by [`WITHHELD`].
    pub fn scrub(&self, text: &str) -> String {
        let text = self.scrub_paths(text);
        // A holdout file's name is scrubbed on its own too (`test_secret.py` in a listing
        // of another directory, or in the words of a request).
        let file_names = self
            .holdout
            .paths
            .iter()
            .filter_map(|p| p.rsplit('/').next())
            .filter(|name| name.contains('.'));
        let mut markers: Vec<&str> = self
            .holdout
            .names
            .iter()
            .chain(&self.holdout.paths)
            .map(String::as_str)
            .chain(file_names)
            .filter(|m| m.len() >= MIN_SCRUBBED_LEN)
            .collect();
        // Longest first, so a path is replaced whole before its file name.
        markers.sort_by_key(|m| std::cmp::Reverse(m.len()));
        markers.iter().fold(text, |text, marker| {
            if text.contains(marker) {
                text.replace(marker, WITHHELD)
            } else {
                text
            }
        })
    }

    /// `text` with every path-like word that is a holdout file (by its path or its glob)
    /// replaced: a file named only by a glob (`holdout/**`) has no literal name to look for.
    fn scrub_paths(&self, text: &str) -> String {
        let is_path_char = |c: char| c.is_alphanumeric() || matches!(c, '.' | '_' | '-' | '/');
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(start) = rest.find(is_path_char) {
            out.push_str(&rest[..start]);
            let word_len = rest[start..]
                .find(|c: char| !is_path_char(c))
                .unwrap_or(rest.len() - start);
            let word = &rest[start..start + word_len];
            let withheld = word.contains(['/', '.'])
                && super::request::normalise(word).is_some_and(|path| {
                    !path.is_empty()
                        && (self.holdout.covers(&path) || self.holdout_files.is_match(&path))
                });
            out.push_str(if withheld { WITHHELD } else { word });
            rest = &rest[start + word_len..];
        }
        out.push_str(rest);
        out
    }
}

/// The globs a gitignore-like pattern stands for.
fn gitignore_like(pattern: &str) -> Vec<String> {
    let trimmed = pattern.trim();
    if let Some(dir) = trimmed.strip_suffix('/') {
        let dir = dir.trim_start_matches('/');
        return vec![format!("{dir}/**"), format!("**/{dir}/**")];
    }
    if let Some(anchored) = trimmed.strip_prefix('/') {
        return vec![anchored.to_string(), format!("{anchored}/**")];
    }
    if trimmed.contains('/') {
        return vec![trimmed.to_string(), format!("{trimmed}/**")];
    }
    vec![trimmed.to_string(), format!("**/{trimmed}")]
}

/// The configuration in force as YAML, with every holdout check's command, reports,
/// working directory and environment left out (its name and visibility stay: the
/// aggregate score already names it).
pub fn redacted_config(config: &Config) -> String {
    let mut shown = config.clone();
    for check in shown.checks.values_mut() {
        if check.visibility == Visibility::AggregateOnly {
            check.run = None;
            check.report.clear();
            check.env.clear();
            check.workdir = None;
            check.files.clear();
        }
    }
    serde_norway::to_string(&shown)
        .unwrap_or_else(|e| format!("# the configuration could not be written: {e}\n"))
}
