//! Toolchain detection: the checks itergate runs when a repository has none configured, and
//! the starting point `itergate init` writes.

use std::collections::BTreeMap;
use std::path::Path;

use crate::config::{Check, ReportSource, Visibility};
use crate::signals::report::ReportFormat;

/// A detected toolchain and the checks chosen for it.
#[derive(Debug, Clone, PartialEq)]
pub struct Detected {
    pub toolchain: &'static str,
    pub checks: BTreeMap<String, Check>,
}

fn check(run: &str, format: ReportFormat, path: Option<&str>) -> Check {
    Check {
        run: Some(run.into()),
        report: Some(ReportSource {
            format,
            path: path.map(Into::into),
            from: path.is_none().then(|| "stdout".into()),
        }),
        timeout: 900,
        env: BTreeMap::new(),
        workdir: None,
        visibility: Visibility::Full,
        void_on_violation: false,
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
    let toolchain = if has("Cargo.toml") {
        checks.insert(
            "tests".into(),
            check(
                "cargo test --no-fail-fast --color never",
                ReportFormat::Libtest,
                None,
            ),
        );
        checks.insert(
            "lint".into(),
            check(
                "cargo clippy --all-targets --message-format=json --color never",
                ReportFormat::CargoJson,
                None,
            ),
        );
        "cargo"
    } else if has("pyproject.toml") || has("setup.py") || has("requirements.txt") {
        checks.insert(
            "tests".into(),
            check(
                "python -m pytest -q --junitxml=.itergate-pytest.xml",
                ReportFormat::Junit,
                Some(".itergate-pytest.xml"),
            ),
        );
        if on_path("ruff") {
            checks.insert(
                "lint".into(),
                check(
                    "ruff check --output-format=json --exit-zero .",
                    ReportFormat::RuffJson,
                    None,
                ),
            );
        }
        "python"
    } else if has("package.json") {
        checks.insert(
            "tests".into(),
            Check {
                report: None,
                ..check("npm test --silent", ReportFormat::Junit, None)
            },
        );
        checks.insert(
            "lint".into(),
            check(
                "npx --no-install eslint -f json .",
                ReportFormat::EslintJson,
                None,
            ),
        );
        "npm"
    } else if has("go.mod") {
        checks.insert(
            "tests".into(),
            Check {
                report: None,
                ..check("go test ./...", ReportFormat::Junit, None)
            },
        );
        checks.insert(
            "lint".into(),
            Check {
                report: None,
                ..check("go vet ./...", ReportFormat::Junit, None)
            },
        );
        "go"
    } else {
        return None;
    };
    Some(Detected { toolchain, checks })
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
