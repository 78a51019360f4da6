//! `.itergate.yml`: where it is found, how it is read, and what a bad one says.
//!
//! The file is optional; without one every default applies. A file that does not parse,
//! names an unknown key or holds a bad value is refused with errors naming the file, the
//! line and column, the key path and what was expected (plus a "did you mean" for a
//! near-miss key): all of a file's errors in one run, one per line. Defaults are documented in `config/default.itergate.yml`.

mod reference;
mod schema;
mod values;

use std::fmt;
use std::path::{Path, PathBuf};

pub use reference::reference_markdown;
pub use schema::*;
pub use values::{Fraction, Metric, NonNegative, Permission, PermissionError, QualityWeights};

/// The commented default configuration; `itergate init` starts from it.
pub const DEFAULT_CONFIG_YAML: &str = include_str!("../../config/default.itergate.yml");

/// Where a repository's configuration is looked for, first match wins.
pub const CONFIG_LOCATIONS: [&str; 2] = [".itergate.yml", ".github/itergate.yml"];

/// A configuration file that cannot be used, with the place and the expectation.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub struct ConfigError {
    pub file: PathBuf,
    pub line: Option<usize>,
    pub column: Option<usize>,
    /// Dotted key path, e.g. `stopping_criteria.quality_threshold.value`.
    pub key: Option<String>,
    pub message: String,
    /// Further errors in the same file, found after setting this one's entry aside (a boxed
    /// slice keeps the error small).
    pub more: Box<[ConfigError]>,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let (Some(line), Some(column)) = (self.line, self.column) {
            write!(f, ":{line}:{column}")?;
        }
        write!(f, ": ")?;
        if let Some(key) = &self.key {
            write!(f, "`{key}`: ")?;
        }
        f.write_str(&self.message)?;
        for more in &self.more {
            write!(f, "\n{more}")?;
        }
        Ok(())
    }
}

/// Errors collected from one file at most: enough for a bad file, bounded for a garbled one.
const MAX_CONFIG_ERRORS: usize = 20;

impl Config {
    /// Parses configuration text; `file` is only used to name the source in errors.
    pub fn from_yaml(text: &str, file: &Path) -> Result<Config, ConfigError> {
        if text.trim().is_empty() {
            return Ok(Config::default());
        }
        let mut first = match parse_once(text, file) {
            Ok(config) => return check_needs(&config, text, file).map(|()| config),
            Err(e) => e,
        };
        // serde stops at the first error. To report the others in one run, the entry the
        // error is in is blanked out (lines kept, so positions stay true) and the text
        // parsed again; a `missing field` found then may be one the blanking caused, so
        // those are left out, and a syntax error (no key) ends the search.
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        let mut current = first.clone();
        let mut more = Vec::new();
        while more.len() + 1 < MAX_CONFIG_ERRORS {
            let (Some(line), Some(_)) = (current.line, &current.key) else {
                break;
            };
            if !blank_entry(&mut lines, line) {
                break;
            }
            match parse_once(&lines.join("\n"), file) {
                Ok(_) => break,
                Err(next) if next.message.starts_with("missing field") => break,
                Err(next) if next.line == current.line && next.key == current.key => break,
                Err(next) => {
                    more.push(next.clone());
                    current = next;
                }
            }
        }
        first.more = more.into_boxed_slice();
        Err(first)
    }

    /// The same configuration with only the checks `keep` names, and the checks those
    /// `needs` (a check that reads a report another writes keeps its writer). Its
    /// fingerprint is its own.
    pub fn only_checks(&self, keep: impl Fn(&str) -> bool) -> Config {
        let mut kept: std::collections::BTreeSet<&str> = self
            .checks
            .keys()
            .map(String::as_str)
            .filter(|name| keep(name))
            .collect();
        let mut pending: Vec<&str> = kept.iter().copied().collect();
        while let Some(name) = pending.pop() {
            for need in self.checks.get(name).into_iter().flat_map(|c| &c.needs) {
                if self.checks.contains_key(need) && kept.insert(need) {
                    pending.push(need);
                }
            }
        }
        Config {
            checks: self
                .checks
                .iter()
                .filter(|(name, _)| kept.contains(name.as_str()))
                .map(|(name, check)| (name.clone(), check.clone()))
                .collect(),
            fingerprint: Default::default(),
            ..self.clone()
        }
    }

    /// Reads a configuration file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            file: path.to_path_buf(),
            line: None,
            column: None,
            key: None,
            message: format!("cannot read the file: {e}"),
            more: Box::default(),
        })?;
        Config::from_yaml(&text, path)
    }

    /// The configuration of the repository at `root`, or the defaults when it has none.
    /// Returns the file used, if any.
    pub fn discover(root: &Path) -> Result<(Config, Option<PathBuf>), ConfigError> {
        for name in CONFIG_LOCATIONS {
            let path = root.join(name);
            if path.is_file() {
                return Config::load(&path).map(|c| (c, Some(path)));
            }
        }
        Ok((Config::default(), None))
    }
}

/// `checks.<name>.needs` names other checks and never goes round in a circle.
fn check_needs(config: &Config, text: &str, file: &Path) -> Result<(), ConfigError> {
    let error = |name: &str, message: String| {
        // The place of the check's `needs:` line, after the line that opens the check.
        let lines: Vec<&str> = text.lines().collect();
        let opens = lines
            .iter()
            .position(|l| l.trim_start().starts_with(&format!("{name}:")));
        let at = opens.and_then(|o| {
            lines[o..]
                .iter()
                .position(|l| l.trim_start().starts_with("needs:"))
                .map(|n| o + n)
        });
        ConfigError {
            file: file.to_path_buf(),
            line: at.map(|l| l + 1),
            column: at.map(|l| lines[l].len() - lines[l].trim_start().len() + 1),
            key: Some(format!("checks.{name}.needs")),
            message,
            more: Box::default(),
        }
    };
    for (name, check) in &config.checks {
        for need in &check.needs {
            if need == name {
                return Err(error(name, format!("`{name}` cannot need itself")));
            }
            if !config.checks.contains_key(need) {
                let hint = did_you_mean(need, config.checks.keys().map(String::as_str))
                    .map(|s| format!(" (did you mean `{s}`?)"))
                    .unwrap_or_default();
                return Err(error(
                    name,
                    format!(
                        "no check is named `{need}`{hint}; expected one of the keys of `checks`"
                    ),
                ));
            }
        }
    }
    // A cycle: walk each check's needs depth-first, carrying the path.
    fn walk<'a>(
        checks: &'a std::collections::BTreeMap<String, schema::Check>,
        name: &'a str,
        path: &mut Vec<&'a str>,
    ) -> Option<Vec<&'a str>> {
        if let Some(at) = path.iter().position(|n| *n == name) {
            let mut cycle = path[at..].to_vec();
            cycle.push(name);
            return Some(cycle);
        }
        path.push(name);
        for need in checks
            .get(name)
            .map(|c| c.needs.as_slice())
            .unwrap_or_default()
        {
            if let Some(cycle) = walk(checks, need, path) {
                return Some(cycle);
            }
        }
        path.pop();
        None
    }
    for name in config.checks.keys() {
        if let Some(cycle) = walk(&config.checks, name, &mut Vec::new()) {
            return Err(error(
                name,
                format!(
                    "the checks need each other in a circle ({}); expected an order they can run in",
                    cycle.join(" -> ")
                ),
            ));
        }
    }
    Ok(())
}

/// One parse: the first error, with its place.
fn parse_once(text: &str, file: &Path) -> Result<Config, ConfigError> {
    let de = serde_norway::Deserializer::from_str(text);
    serde_path_to_error::deserialize(de).map_err(|err| {
        let key = Some(err.path().to_string()).filter(|p| p != ".");
        let inner = err.into_inner();
        let location = inner.location();
        ConfigError {
            file: file.to_path_buf(),
            line: location.as_ref().map(|l| l.line()),
            column: location.as_ref().map(|l| l.column()),
            message: explain(&inner.to_string(), key.as_deref()),
            key,
            more: Box::default(),
        }
    })
}

/// Blanks the entry on 1-based `line` (the line and the more indented lines after it);
/// false when there is nothing to blank.
fn blank_entry(lines: &mut [String], line: usize) -> bool {
    let Some(index) = line.checked_sub(1).filter(|i| *i < lines.len()) else {
        return false;
    };
    let indent = |l: &str| l.len() - l.trim_start().len();
    if lines[index].trim().is_empty() {
        return false;
    }
    let own = indent(&lines[index]);
    let mut end = index + 1;
    while end < lines.len() && (lines[end].trim().is_empty() || indent(&lines[end]) > own) {
        end += 1;
    }
    for l in &mut lines[index..end] {
        l.clear();
    }
    true
}

/// Rewrites serde_norway's message: drops its own position and key path (we print ours) and
/// adds a "did you mean" to unknown-field errors.
fn explain(raw: &str, key: Option<&str>) -> String {
    let mut message = match raw.rfind(" at line ") {
        Some(at) => &raw[..at],
        None => raw,
    };
    if let Some((path, rest)) = message.split_once(": ") {
        if !path.contains(' ') && key.is_some_and(|k| k.starts_with(path)) {
            message = rest;
        }
    }
    let Some(rest) = message.strip_prefix("unknown field `") else {
        return message.to_string();
    };
    let Some((unknown, expected)) = rest.split_once('`') else {
        return message.to_string();
    };
    let candidates = expected.split('`').skip(1).step_by(2).collect::<Vec<_>>();
    match did_you_mean(unknown, candidates.iter().copied()) {
        Some(best) => format!("{message}; did you mean `{best}`?"),
        None => message.to_string(),
    }
}

/// The closest candidate to a misspelt name, if any is close enough to be a likely typo.
pub fn did_you_mean<'a>(name: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .map(|c| (c, strsim::jaro_winkler(name, c)))
        .filter(|(_, score)| *score >= 0.8)
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(c, _)| c)
}

/// The JSON Schema of `.itergate.yml`, generated from the configuration's types (what
/// `itergate config --schema` prints and `config/itergate.schema.json` holds).
pub fn json_schema() -> String {
    let mut schema = schemars::schema_for!(Config);
    schema.insert(
        "$id".into(),
        "https://raw.githubusercontent.com/itergate/itergate/main/config/itergate.schema.json"
            .into(),
    );
    schema.insert("title".into(), ".itergate.yml".into());
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    text
}
