//! The test harness: the files that decide which tests run and what they check, as
//! opposed to the code under test. The trusted harness run (`app::trusted`) takes these from
//! the task's start and everything else from the iteration, so a change is judged by the
//! tests as they were when the task started.
//!
//! A file is part of the harness when it is a test file (`detection.tests`), a file a check
//! runs, a name in `integrity.harness`, or one of the test runners' own files: `conftest.py`,
//! `pytest.ini`, `tox.ini`, `.mocharc.*`, `vitest.config.*`, `vitest.workspace.*`,
//! `vite.config.*`, `jest.config.*`, jest/vitest setup files, `ava.config.*`, `.c8rc*`,
//! `.nycrc*`, `karma.conf.*`, every `*_test.go`, `.cargo/config.toml`. Three files mix build
//! and test settings; only their test settings are the harness's:
//!
//! - `pyproject.toml`: the `[tool.pytest…]` tables (and `[tool.coverage…]`);
//! - `setup.cfg`: the `[tool:pytest]` and `[coverage:…]` sections;
//! - `package.json`: the `scripts`, `jest`, `mocha`, `ava`, `c8` and `nyc` keys.
//!
//! `Cargo.toml` stays the iteration's: its features and targets build the code too, and a
//! test gated behind a feature is an edit to a test file (or to a `#[cfg(test)]` module,
//! which shares its file with the code: the line-based detections watch those).

/// How much of a file belongs to the harness.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The whole file.
    Whole,
    /// `pyproject.toml`'s pytest and coverage tables.
    PyprojectTables,
    /// `setup.cfg`'s pytest and coverage sections.
    SetupCfgSections,
    /// `package.json`'s test keys.
    PackageTestKeys,
}

/// The test runners' own files, by name.
const WHOLE_NAMES: [&str; 4] = ["conftest.py", "pytest.ini", "tox.ini", "noxfile.py"];

/// Names whose stem marks a runner's configuration or setup file, whatever the extension.
const WHOLE_STEMS: [&str; 14] = [
    ".mocharc",
    "vitest.config",
    "vitest.workspace",
    "vitest.setup",
    "vite.config",
    "jest.config",
    "jest.setup",
    "setupTests",
    "ava.config",
    ".c8rc",
    ".nycrc",
    "karma.conf",
    "playwright.config",
    "cypress.config",
];

/// Whether (and how much of) `path` belongs to the harness. `is_harness` answers for test
/// files, the checks' own files and configured globs.
pub fn part(path: &str, is_harness: &dyn Fn(&str) -> bool) -> Option<Part> {
    let name = path.rsplit('/').next().unwrap_or(path);
    match name {
        "pyproject.toml" => return Some(Part::PyprojectTables),
        "setup.cfg" => return Some(Part::SetupCfgSections),
        "package.json" => return Some(Part::PackageTestKeys),
        _ => {}
    }
    let stem_matches = WHOLE_STEMS.iter().any(|stem| {
        name == *stem
            || name
                .strip_prefix(stem)
                .is_some_and(|rest| rest.starts_with('.'))
    });
    let whole = WHOLE_NAMES.contains(&name)
        || stem_matches
        || name.ends_with("_test.go")
        || path == ".cargo/config.toml"
        || path == ".cargo/config"
        || path == ".mvn/maven.config"
        || path == ".mvn/jvm.config"
        || is_harness(path);
    whole.then_some(Part::Whole)
}

/// The file to test with: the iteration's (`head`) with the harness's part taken from the
/// start's (`start`); `None` for a file neither side has, or whose harness part is the whole.
/// A side without the file is `None`.
pub fn merge(part: Part, head: Option<&str>, start: Option<&str>) -> Option<String> {
    match part {
        Part::Whole => start.map(str::to_string),
        Part::PyprojectTables => Some(merge_sections(head, start, &|header| {
            let table = header.trim_matches(['[', ']', ' ']);
            table.starts_with("tool.pytest") || table.starts_with("tool.coverage")
        })),
        Part::SetupCfgSections => Some(merge_sections(head, start, &|header| {
            let section = header.trim_matches(['[', ']', ' ']);
            section == "tool:pytest" || section == "pytest" || section.starts_with("coverage:")
        })),
        Part::PackageTestKeys => merge_package(head, start),
    }
}

/// One `[header]` section of an INI or TOML file: the header line (empty for the lines
/// before the first) and its lines.
fn sections(text: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = vec![(String::new(), String::new())];
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim();
        if trimmed.starts_with('[') && trimmed.ends_with(']') {
            out.push((trimmed.to_string(), String::new()));
        }
        if let Some(last) = out.last_mut() {
            last.1.push_str(line);
        }
    }
    out
}

/// `head`'s sections without those `is_test` names, then `start`'s sections it names.
fn merge_sections(
    head: Option<&str>,
    start: Option<&str>,
    is_test: &dyn Fn(&str) -> bool,
) -> String {
    let is_test = |header: &str| {
        // `[[tool.pytest…]]` arrays of tables count with their table.
        let bare = header.trim_start_matches('[').trim_end_matches(']');
        !header.is_empty() && is_test(&format!("[{bare}]"))
    };
    let mut out = String::new();
    for (header, text) in sections(head.unwrap_or_default()) {
        if !is_test(&header) {
            out.push_str(&text);
        }
    }
    for (header, text) in sections(start.unwrap_or_default()) {
        if is_test(&header) {
            if !out.is_empty() && !out.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(&text);
        }
    }
    out
}

/// The keys of `package.json` that say how tests run.
const PACKAGE_TEST_KEYS: [&str; 6] = ["scripts", "jest", "mocha", "ava", "c8", "nyc"];

fn merge_package(head: Option<&str>, start: Option<&str>) -> Option<String> {
    let parse = |text: Option<&str>| {
        text.and_then(|t| {
            serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(t).ok()
        })
    };
    let (Some(mut merged), start) = (parse(head), parse(start)) else {
        // Not JSON on the iteration's side: the start's file as it was.
        return start.map(str::to_string);
    };
    for key in PACKAGE_TEST_KEYS {
        match start.as_ref().and_then(|s| s.get(key)) {
            Some(value) => {
                merged.insert(key.to_string(), value.clone());
            }
            None => {
                merged.remove(key);
            }
        }
    }
    serde_json::to_string_pretty(&merged).ok().map(|t| t + "\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runner_files_are_the_harness_and_code_is_not() {
        let none = |_: &str| false;
        assert_eq!(part("tests/conftest.py", &none), Some(Part::Whole));
        assert_eq!(part("vitest.config.ts", &none), Some(Part::Whole));
        assert_eq!(part(".mocharc.yml", &none), Some(Part::Whole));
        assert_eq!(part("pkg/thing_test.go", &none), Some(Part::Whole));
        assert_eq!(part("pyproject.toml", &none), Some(Part::PyprojectTables));
        assert_eq!(part("web/package.json", &none), Some(Part::PackageTestKeys));
        assert_eq!(part("src/lib.rs", &none), None);
        assert_eq!(part("Cargo.toml", &none), None);
        assert_eq!(part("vitest.configuration.md", &none), None);
        assert_eq!(part("src/x.py", &|p| p == "src/x.py"), Some(Part::Whole));
    }

    #[test]
    fn pyproject_keeps_the_iterations_build_and_the_starts_pytest_tables() {
        let start = "[project]\nname = \"a\"\n\n[tool.pytest.ini_options]\naddopts = \"-q\"\n";
        let head = "[project]\nname = \"a\"\ndependencies = [\"b\"]\n\n[tool.pytest.ini_options]\naddopts = [\"-k\", \"not test_x\"]\n\n[tool.ruff]\nline-length = 100\n";
        let merged = merge(Part::PyprojectTables, Some(head), Some(start)).expect("merged");
        assert!(merged.contains("dependencies = [\"b\"]"), "{merged}");
        assert!(merged.contains("[tool.ruff]"), "{merged}");
        assert!(merged.contains("addopts = \"-q\""), "{merged}");
        assert!(!merged.contains("not test_x"), "{merged}");
        // A pytest table the change added where the start had none is left out.
        let merged = merge(Part::PyprojectTables, Some(head), Some("[project]\n")).expect("merged");
        assert!(!merged.contains("tool.pytest"), "{merged}");
    }

    #[test]
    fn package_json_keeps_the_iterations_dependencies_and_the_starts_scripts() {
        let start = r#"{"name":"a","scripts":{"test":"vitest run"},"dependencies":{"x":"1"}}"#;
        let head = r#"{"name":"a","scripts":{"test":"vitest run -t adds"},"dependencies":{"x":"2"},"mocha":{"spec":"none"}}"#;
        let merged = merge(Part::PackageTestKeys, Some(head), Some(start)).expect("merged");
        let v: serde_json::Value = serde_json::from_str(&merged).expect("json");
        assert_eq!(v["scripts"]["test"], "vitest run");
        assert_eq!(v["dependencies"]["x"], "2");
        assert!(v.get("mocha").is_none());
    }

    #[test]
    fn setup_cfg_takes_the_starts_pytest_section() {
        let start = "[metadata]\nname = a\n\n[tool:pytest]\ntestpaths = tests\n";
        let head = "[metadata]\nname = a\nversion = 2\n\n[tool:pytest]\naddopts = --deselect tests/test_a.py::test_b\n";
        let merged = merge(Part::SetupCfgSections, Some(head), Some(start)).expect("merged");
        assert!(merged.contains("version = 2") && merged.contains("testpaths = tests"));
        assert!(!merged.contains("--deselect"), "{merged}");
    }
}
