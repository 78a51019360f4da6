//! Toolchain detection: the checks itergate runs when a repository has none configured, and
//! the starting point `itergate init` writes.
//!
//! It measures what the toolchain can measure: tests always; coverage where a coverage
//! tool is installed (pytest-cov when Python can import it, written by the same pytest run
//! as the JUnit report; cargo-llvm-cov, else cargo-tarpaulin); the linter the project
//! configures (`[tool.ruff]` in pyproject.toml or a ruff.toml; an eslint configuration),
//! even before it is installed. What is missing is said in [`Detected::notes`], each with
//! the command that installs it. Checks never change the work tree: ruff runs with
//! `--no-fix` whatever the project's `fix` setting.

use std::collections::BTreeMap;
use std::path::Path;

use crate::config::{Check, ReportSource, Visibility};
use crate::signals::report::ReportFormat;

/// A detected toolchain and the checks chosen for it.
#[derive(Debug, Clone, PartialEq)]
pub struct Detected {
    pub toolchain: &'static str,
    pub checks: BTreeMap<String, Check>,
    /// What could be measured but is not, and how to install what is missing.
    pub notes: Vec<String>,
}

fn source(format: ReportFormat, path: Option<&str>) -> ReportSource {
    ReportSource {
        format,
        path: path.map(Into::into),
        from: path.is_none().then(|| "stdout".into()),
    }
}

fn check(run: &str, format: ReportFormat, path: Option<&str>) -> Check {
    Check {
        run: Some(run.into()),
        report: vec![source(format, path)],
        timeout: 900,
        env: BTreeMap::new(),
        workdir: None,
        visibility: Visibility::Full,
        void_on_violation: false,
        files: Vec::new(),
    }
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

/// The first toolchain found at `root`: Cargo, Python, npm, Go.
pub fn detect(root: &Path) -> Option<Detected> {
    let has = |f: &str| root.join(f).exists();
    let mut checks = BTreeMap::new();
    let mut notes = Vec::new();
    let toolchain = if has("Cargo.toml") {
        cargo(&mut checks, &mut notes);
        "cargo"
    } else if has("pyproject.toml") || has("setup.py") || has("requirements.txt") {
        python(root, &mut checks, &mut notes);
        "python"
    } else if has("package.json") {
        checks.insert(
            "tests".into(),
            Check {
                report: Vec::new(),
                ..check("npm test --silent", ReportFormat::Junit, None)
            },
        );
        if eslint_configured(root) {
            checks.insert(
                "lint".into(),
                check(
                    "npx --no-install eslint -f json .",
                    ReportFormat::EslintJson,
                    None,
                ),
            );
        } else {
            notes.push("lint: no eslint configuration found (eslint.config.js or .eslintrc); with one, eslint is checked".into());
        }
        "npm"
    } else if has("go.mod") {
        checks.insert(
            "tests".into(),
            Check {
                report: Vec::new(),
                ..check("go test ./...", ReportFormat::Junit, None)
            },
        );
        checks.insert(
            "lint".into(),
            Check {
                report: Vec::new(),
                ..check("go vet ./...", ReportFormat::Junit, None)
            },
        );
        "go"
    } else {
        return None;
    };
    Some(Detected {
        toolchain,
        checks,
        notes,
    })
}

/// Where cargo coverage tools write their LCOV report (inside `target/`, never tracked).
const CARGO_LCOV_PATH: &str = "target/itergate-lcov.info";

fn cargo(checks: &mut BTreeMap<String, Check>, notes: &mut Vec<String>) {
    let tests = if on_path("cargo-llvm-cov") {
        // One run: libtest's output on stdout, coverage in the LCOV file.
        Check {
            report: vec![
                source(ReportFormat::Libtest, None),
                source(ReportFormat::Lcov, Some(CARGO_LCOV_PATH)),
            ],
            ..check(
                &format!("cargo llvm-cov --no-fail-fast --color never --lcov --output-path {CARGO_LCOV_PATH}"),
                ReportFormat::Libtest,
                None,
            )
        }
    } else {
        check(
            "cargo test --no-fail-fast --color never",
            ReportFormat::Libtest,
            None,
        )
    };
    checks.insert("tests".into(), tests);
    if !on_path("cargo-llvm-cov") {
        if on_path("cargo-tarpaulin") {
            checks.insert(
                "coverage".into(),
                check(
                    "cargo tarpaulin --skip-clean --out Lcov --output-dir target/itergate-tarpaulin",
                    ReportFormat::Lcov,
                    Some("target/itergate-tarpaulin/lcov.info"),
                ),
            );
        } else {
            notes.push(
                "coverage: neither cargo-llvm-cov nor cargo-tarpaulin is installed; \
                 `cargo install cargo-llvm-cov` (and `rustup component add llvm-tools-preview`), \
                 then run `itergate init --force`"
                    .into(),
            );
        }
    }
    checks.insert(
        "lint".into(),
        check(
            "cargo clippy --all-targets --message-format=json --color never",
            ReportFormat::CargoJson,
            None,
        ),
    );
}

const PYTEST_JUNIT_PATH: &str = ".itergate-pytest.xml";
const PYTEST_COVERAGE_PATH: &str = ".itergate-coverage.xml";

fn python(root: &Path, checks: &mut BTreeMap<String, Check>, notes: &mut Vec<String>) {
    let python = if on_path("python") {
        "python"
    } else {
        "python3"
    };
    let junit = format!("{python} -m pytest -q --junitxml={PYTEST_JUNIT_PATH}");
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
    let configured = ruff_configured(root);
    if configured || on_path("ruff") {
        if !on_path("ruff") {
            notes.push(format!(
                "lint: the project configures ruff, but `ruff` is not on PATH; `{python} -m pip install ruff`"
            ));
        }
        checks.insert(
            "lint".into(),
            check(
                "ruff check --no-fix --output-format=json --exit-zero .",
                ReportFormat::RuffJson,
                None,
            ),
        );
    }
}

/// `[tool.ruff]` (or a `[tool.ruff.…]` table) in pyproject.toml, or a ruff.toml.
fn ruff_configured(root: &Path) -> bool {
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

fn eslint_configured(root: &Path) -> bool {
    let files = [
        "eslint.config.js",
        "eslint.config.mjs",
        "eslint.config.cjs",
        "eslint.config.ts",
        ".eslintrc",
        ".eslintrc.js",
        ".eslintrc.cjs",
        ".eslintrc.json",
        ".eslintrc.yml",
        ".eslintrc.yaml",
    ];
    files.iter().any(|f| root.join(f).is_file())
        || project_file(root, "package.json").is_some_and(|text| text.contains("\"eslintConfig\""))
}

/// A project file detection reads: a regular file inside the work tree, at most 1 MiB (a
/// FIFO, a device or a link out of the tree named `package.json` is no project file).
fn project_file(root: &Path, name: &str) -> Option<String> {
    crate::signals::tree_file::read_text_in_tree(root, &root.join(name), 1024 * 1024)
}

/// Whether `python` can import `module` (it runs the interpreter once).
fn python_can_import(python: &str, module: &str) -> bool {
    std::process::Command::new(python)
        .args(["-c", &format!("import {module}")])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A commented `.itergate.yml` for the detected toolchain.
pub fn starter_config(detected: Option<&Detected>) -> anyhow::Result<String> {
    let mut text = String::from(
        "# itergate configuration. Every key and its default: `itergate config --default`\n",
    );
    match detected {
        Some(d) => {
            text.push_str(&format!(
                "# Checks detected for a {} project; edit freely.\n",
                d.toolchain
            ));
            for note in &d.notes {
                text.push_str(&format!("# Not measured yet: {note}\n"));
            }
            let mut wrapper = BTreeMap::new();
            wrapper.insert("checks", &d.checks);
            text.push_str(&serde_yaml::to_string(&wrapper)?);
        }
        None => text.push_str("# No toolchain detected: add your checks.\nchecks: {}\n"),
    }
    text.push_str(
        "\nstopping_criteria:\n  quality_threshold: { value: 0.95 }\n  iteration_limits: { min: 2, max: 10 }\n\nrevision:\n  max_iterations: 3\n",
    );
    Ok(text)
}
