//! Python: pytest with its JUnit report (and pytest-cov when Python can import it), ruff
//! or the configured linter, mypy where configured, the supported Python floor.

use std::collections::BTreeMap;
use std::path::Path;

use crate::config::Check;
use crate::signals::report::ReportFormat;

use super::{check, on_path, project_file, source};

pub(super) const PYTEST_JUNIT_PATH: &str = ".itergate-pytest.xml";
pub(super) const PYTEST_COVERAGE_PATH: &str = ".itergate-coverage.xml";

pub(super) const UNITTEST_JUNIT_PATH: &str = ".itergate-unittest.xml";

pub(super) fn python(
    root: &Path,
    checks: &mut BTreeMap<String, Check>,
    (notes, chosen): (&mut Vec<String>, &mut Vec<String>),
) {
    let python = if on_path("python") {
        "python"
    } else {
        "python3"
    };
    let junit = format!("{python} -m pytest -q --junitxml={PYTEST_JUNIT_PATH}");
    // A project whose tests are unittest's: pytest runs them too; without pytest,
    // unittest's own runner with a JUnit-writing one (unittest-xml-reporting).
    let unittest = uses_unittest(root);
    let pytest = !unittest || python_can_import(python, "pytest");
    if unittest && !pytest && python_can_import(python, "xmlrunner") {
        chosen.push(format!(
            "tests: unittest through xmlrunner (the tests are unittest's, and `{python}` cannot import pytest)"
        ));
        checks.insert(
            "tests".into(),
            check(
                &format!("{python} -m xmlrunner --output-file {UNITTEST_JUNIT_PATH} discover -t ."),
                ReportFormat::Junit,
                Some(UNITTEST_JUNIT_PATH),
            ),
        );
        python_lint_and_types(root, python, checks, notes);
        return;
    }
    if unittest {
        if pytest {
            chosen.push("tests: pytest (it runs the project's unittest tests)".into());
        } else {
            notes.push(format!(
                "tests: the project's tests are unittest's and `{python}` cannot import pytest: `{python} -m pip install pytest` (it runs unittest tests and writes the JUnit report itergate reads), or `{python} -m pip install unittest-xml-reporting` for unittest's own runner; then run `itergate init --force`"
            ));
        }
    }
    let tests = if python_can_import(python, "pytest_cov") {
        // One pytest run writes both reports.
        Check {
            report: vec![
                source(ReportFormat::Junit, Some(PYTEST_JUNIT_PATH)),
                source(ReportFormat::Cobertura, Some(PYTEST_COVERAGE_PATH)),
            ],
            ..check(
                &format!("{junit} --cov --cov-report=xml:{PYTEST_COVERAGE_PATH}"),
                ReportFormat::Junit,
                None,
            )
        }
    } else {
        notes.push(format!(
            "coverage: pytest-cov is not importable by `{python}`; `{python} -m pip install pytest-cov`, \
             then run `itergate init --force`"
        ));
        check(&junit, ReportFormat::Junit, Some(PYTEST_JUNIT_PATH))
    };
    checks.insert("tests".into(), tests);
    python_lint_and_types(root, python, checks, notes);
}

/// Ruff (or the configured linter), mypy where configured, pyright where configured.
fn python_lint_and_types(
    root: &Path,
    python: &str,
    checks: &mut BTreeMap<String, Check>,
    notes: &mut Vec<String>,
) {
    let configured = ruff_configured(root);
    if configured && !on_path("ruff") {
        // Left out, like every tool that is missing: a check that cannot run stops every
        // run (exit 3) until it is installed.
        notes.push(format!(
            "lint: the project configures ruff, but `ruff` is not on PATH; `{python} -m pip install ruff`, then run `itergate init --force`"
        ));
    } else if on_path("ruff") {
        // Without its own configuration, ruff's defaults grow with each release (style
        // rules, the newest Python): a project that never chose them is held to the
        // errors pyflakes and pycodestyle report, for the oldest Python it supports.
        let command = if configured {
            "ruff check --no-fix --output-format=json --exit-zero .".to_string()
        } else {
            let target = python_floor(root)
                .map(|(major, minor)| format!(" --target-version py{major}{}", minor.max(7)))
                .unwrap_or_default();
            format!(
                "ruff check --no-fix --output-format=json --exit-zero --select {RUFF_BASELINE}{target} ."
            )
        };
        checks.insert("lint".into(), check(&command, ReportFormat::RuffJson, None));
    }
    if let Some(files_configured) = mypy_configured(root) {
        if python_can_import(python, "mypy") {
            // `--output json` is mypy 1.11+; a status over 1 (mypy could not check) prints
            // a line that is not its JSON, so the check is refused, never read as clean.
            let targets = if files_configured { "" } else { " ." };
            let command = format!(
                "{python} -m mypy --output json{targets}; s=$?; [ $s -le 1 ] || echo \"mypy exited with status $s\""
            );
            checks.insert(
                "types".into(),
                check(&command, ReportFormat::MypyJson, None),
            );
        } else {
            let install = match listed_in(root, "mypy") {
                Some(Listed::Group(group)) => format!(
                    "`{python} -m pip install --group {group}` (the project's group that lists it; pip 25.1 or later)"
                ),
                Some(Listed::Extra(extra)) => format!(
                    "`{python} -m pip install -e '.[{extra}]'` (the project's extra that lists it)"
                ),
                None => format!("`{python} -m pip install mypy`"),
            };
            notes.push(format!(
                "types: the project configures mypy, but `{python}` cannot import it; {install}, then run `itergate init --force`"
            ));
        }
    }
    if pyright_configured(root) {
        if on_path("pyright") {
            // pyright exits 1 when it found errors, more when it could not check: then it
            // prints no JSON and the check is refused, never read as clean.
            let name = if checks.contains_key("types") {
                "pyright"
            } else {
                "types"
            };
            checks.insert(
                name.into(),
                check(
                    "pyright --outputjson; s=$?; [ $s -le 1 ] || echo \"pyright exited with status $s\"",
                    ReportFormat::PyrightJson,
                    None,
                ),
            );
        } else {
            notes.push(
                "types: the project configures pyright, but `pyright` is not on PATH; `npm install -g pyright` (or `pip install pyright`), then run `itergate init --force`"
                    .into(),
            );
        }
    }
}

/// Whether the project configures pyright (`pyrightconfig.json`, or `[tool.pyright]` in
/// pyproject.toml).
pub(super) fn pyright_configured(root: &Path) -> bool {
    root.join("pyrightconfig.json").is_file()
        || std::fs::read_to_string(root.join("pyproject.toml"))
            .is_ok_and(|text| text.lines().any(|l| l.trim() == "[tool.pyright]"))
}

/// Whether the project configures mypy (`[tool.mypy]` in pyproject.toml, `mypy.ini`,
/// `.mypy.ini`, `[mypy]` in setup.cfg), and if so whether that configuration names the
/// `files` to check.
pub(super) fn mypy_configured(root: &Path) -> Option<bool> {
    let section = |text: &str, header: &str| -> Option<bool> {
        let mut lines = text.lines().skip_while(|l| l.trim() != header);
        lines.next()?;
        Some(
            lines
                .take_while(|l| !l.trim_start().starts_with('['))
                .any(|l| l.trim_start().starts_with("files")),
        )
    };
    for (file, header) in [
        ("mypy.ini", "[mypy]"),
        (".mypy.ini", "[mypy]"),
        ("pyproject.toml", "[tool.mypy]"),
        ("setup.cfg", "[mypy]"),
    ] {
        if let Some(found) = project_file(root, file).and_then(|text| section(&text, header)) {
            return Some(found);
        }
    }
    None
}

/// Where pyproject.toml lists a tool to install: a dependency group (PEP 735) or an extra.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Listed {
    Group(String),
    Extra(String),
}

/// The first dependency group (else extra) of pyproject.toml that lists `package`: it holds
/// what the project installs beside it (mypy's stub packages, its plugins).
pub(super) fn listed_in(root: &Path, package: &str) -> Option<Listed> {
    let text = project_file(root, "pyproject.toml")?;
    let mut found: Option<Listed> = None;
    let mut section = "";
    let mut key = String::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('[')
            && !trimmed.starts_with("[[")
            && trimmed.ends_with(']')
            && !trimmed.contains('"')
        {
            section = trimmed;
            key.clear();
            continue;
        }
        let in_groups = section == "[dependency-groups]";
        let in_extras = section == "[project.optional-dependencies]";
        if !in_groups && !in_extras {
            continue;
        }
        let mut rest = trimmed;
        if let Some((name, value)) = trimmed.split_once('=') {
            let name = name.trim();
            if value.trim_start().starts_with('[')
                && !name.is_empty()
                && !name.contains(['"', '\'', '{'])
            {
                key = name.to_string();
                rest = value;
            }
        }
        let lists = rest.split(['"', '\'']).skip(1).step_by(2).any(|item| {
            item.strip_prefix(package).is_some_and(|tail| {
                tail.is_empty() || tail.starts_with(['>', '<', '=', '~', '!', '[', ';', ' '])
            })
        });
        if lists && !key.is_empty() {
            if in_groups {
                return Some(Listed::Group(key));
            }
            found.get_or_insert(Listed::Extra(key.clone()));
        }
    }
    found
}

/// ruff's long-standing default rules: syntax and import errors, undefined and unused names.
pub(super) const RUFF_BASELINE: &str = "E4,E7,E9,F";

/// The oldest Python 3 the project declares where ruff does not look: `python_requires`
/// in setup.cfg or setup.py, as (3, minor). (ruff reads pyproject.toml's
/// `requires-python` itself, and follows it when it changes.)
pub(super) fn python_floor(root: &Path) -> Option<(u32, u32)> {
    let in_pyproject = project_file(root, "pyproject.toml").is_some_and(|t| {
        t.lines()
            .any(|l| l.trim_start().starts_with("requires-python"))
    });
    if in_pyproject {
        return None;
    }
    let declared = [
        ("setup.cfg", "python_requires"),
        ("setup.py", "python_requires"),
    ]
    .iter()
    .find_map(|(file, key)| {
        let text = project_file(root, file)?;
        text.lines()
            .map(str::trim)
            .find(|l| l.starts_with(key))
            .map(|l| l[key.len()..].to_string())
    })?;
    // `>=3.8`, `>= 3.8, <4`, `~=3.9`, `>=2.7, !=3.0.*, …, >=3.6`: the lowest 3.x floor.
    declared
        .split(',')
        .filter_map(|clause| {
            let clause = clause.trim_matches(|c: char| c.is_whitespace() || "\"'=".contains(c));
            let version = clause
                .strip_prefix(">=")
                .or_else(|| clause.strip_prefix("~="))?;
            let mut parts = version.trim().split('.');
            let major: u32 = parts.next()?.trim().parse().ok()?;
            let minor: u32 = parts
                .next()?
                .chars()
                .take_while(char::is_ascii_digit)
                .collect::<String>()
                .parse()
                .ok()?;
            (major == 3).then_some((major, minor))
        })
        .min()
}

/// `[tool.ruff]` (or a `[tool.ruff.…]` table) in pyproject.toml, or a ruff.toml.
pub(super) fn ruff_configured(root: &Path) -> bool {
    if root.join("ruff.toml").is_file() || root.join(".ruff.toml").is_file() {
        return true;
    }
    project_file(root, "pyproject.toml").is_some_and(|text| {
        text.lines().any(|l| {
            let l = l.trim();
            l == "[tool.ruff]" || l.starts_with("[tool.ruff.")
        })
    })
}

/// The Python test files a runner would discover: `test_*.py` and `*_test.py` at the root
/// and one level into `tests/` and `test/`.
pub(super) fn test_files(root: &Path) -> impl Iterator<Item = std::path::PathBuf> + use<'_> {
    ["", "tests", "test"].into_iter().flat_map(move |dir| {
        let dir = root.join(dir);
        let mut found: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| {
                let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
                p.is_file()
                    && name.ends_with(".py")
                    && (name.starts_with("test_") || name.ends_with("_test.py"))
            })
            .collect();
        found.sort();
        found
    })
}

/// Whether the project's tests are unittest's: a test file imports it, and none imports
/// pytest.
fn uses_unittest(root: &Path) -> bool {
    let texts: Vec<String> = test_files(root)
        .take(50)
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .collect();
    let imports = |module: &str| {
        texts.iter().any(|t| {
            t.lines().any(|l| {
                let l = l.trim_start();
                l.starts_with(&format!("import {module}"))
                    || l.starts_with(&format!("from {module} "))
                    || l.starts_with(&format!("from {module}."))
            })
        })
    };
    imports("unittest") && !imports("pytest")
}

/// Whether `python` can import `module` (it runs the interpreter once).
pub(super) fn python_can_import(python: &str, module: &str) -> bool {
    std::process::Command::new(python)
        .args(["-c", &format!("import {module}")])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}
