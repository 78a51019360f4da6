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
//!
//! One module per ecosystem; what they share (the check builders, `on_path`) is here.

mod go;
mod java;
mod node;
mod python;
mod rust;

use std::collections::BTreeMap;
use std::path::Path;

use crate::config::{Check, ReportSource, Visibility};
use crate::signals::report::ReportFormat;
use go::go;
use java::{gradle, maven, GRADLE_BUILDS};
use node::node;
pub use node::{node_install_command, node_package_manager, node_unlocked_install_command};
use python::python;
use rust::cargo;

/// A detected toolchain and the checks chosen for it.
#[derive(Debug, Clone, PartialEq)]
pub struct Detected {
    pub toolchain: &'static str,
    pub checks: BTreeMap<String, Check>,
    /// What could be measured but is not, and how to install what is missing.
    pub notes: Vec<String>,
    /// What was chosen where the project offers several (the test runner its `test`
    /// script runs), and why.
    pub chosen: Vec<String>,
    /// What in the project's own build the checks (or `.itergate.yml`) run into, and what
    /// to change there.
    pub warnings: Vec<String>,
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
        needs: Vec::new(),
    }
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

/// The first toolchain found at `root`: Cargo, Python, Node (npm, pnpm, yarn, bun), Go,
/// Maven, Gradle.
pub fn detect(root: &Path) -> Option<Detected> {
    let has = |f: &str| root.join(f).exists();
    let mut checks = BTreeMap::new();
    let mut notes = Vec::new();
    let mut chosen = Vec::new();
    let mut warnings = Vec::new();
    let toolchain = if has("Cargo.toml") {
        cargo(root, &mut checks, &mut notes);
        "cargo"
    } else if has("pyproject.toml")
        || has("setup.py")
        || has("setup.cfg")
        || has("requirements.txt")
        || python::test_files(root).next().is_some()
    {
        python(root, &mut checks, (&mut notes, &mut chosen));
        "python"
    } else if has("package.json") {
        node(root, &mut checks, (&mut notes, &mut chosen))
    } else if has("go.mod") {
        go(root, &mut checks, &mut notes);
        "go"
    } else if has("pom.xml") {
        maven(root, &mut checks, &mut notes, &mut warnings);
        "maven"
    } else if GRADLE_BUILDS.iter().any(|f| has(f)) {
        gradle(root, &mut checks, &mut notes);
        "gradle"
    } else {
        return None;
    };
    complexity(&mut checks, &mut notes);
    Some(Detected {
        toolchain,
        checks,
        notes,
        chosen,
        warnings,
    })
}

/// Cyclomatic complexity with lizard (every language here) when it is on PATH.
fn complexity(checks: &mut BTreeMap<String, Check>, notes: &mut Vec<String>) {
    if on_path("lizard") {
        checks.insert(
            "complexity".into(),
            check(
                "lizard --csv -x './node_modules/*' -x './target/*' -x './.venv/*' -x './vendor/*' -x './.itergate-*' .",
                ReportFormat::Lizard,
                None,
            ),
        );
    } else {
        notes.push(
            "complexity: lizard is not on PATH; `pipx install lizard` (or `pip install lizard`), then run `itergate init --force`"
                .into(),
        );
    }
}

/// A project file detection reads: a regular file inside the work tree, at most 1 MiB (a
/// FIFO, a device or a link out of the tree named `package.json` is no project file).
fn project_file(root: &Path, name: &str) -> Option<String> {
    crate::signals::tree_file::read_text_in_tree(root, &root.join(name), 1024 * 1024)
}

fn article(word: &str) -> &'static str {
    // "an npm project": the letter's name starts with a vowel sound.
    match word.chars().next() {
        Some('a' | 'e' | 'i' | 'o' | 'u' | 'n') => "an",
        _ => "a",
    }
}

/// A commented `.itergate.yml` for the detected toolchain.
pub fn starter_config(detected: Option<&Detected>) -> anyhow::Result<String> {
    let mut text = String::from(
        "# yaml-language-server: $schema=https://raw.githubusercontent.com/itergate/itergate/main/config/itergate.schema.json\n# itergate configuration. Every key and its default: `itergate config --default`\n",
    );
    match detected {
        Some(d) => {
            text.push_str(&format!(
                "# Checks detected for {} {} project; edit freely.\n",
                article(d.toolchain),
                d.toolchain
            ));
            for choice in &d.chosen {
                text.push_str(&format!("# Chosen: {choice}\n"));
            }
            for note in &d.notes {
                text.push_str(&format!("# Not measured yet: {note}\n"));
            }
            for warning in &d.warnings {
                text.push_str(&format!("# Warning: {warning}\n"));
            }
            let mut wrapper = BTreeMap::new();
            wrapper.insert("checks", &d.checks);
            text.push_str(&serde_norway::to_string(&wrapper)?);
        }
        None => text.push_str("# No toolchain detected: add your checks.\nchecks: {}\n"),
    }
    text.push_str(
        "\nstopping_criteria:\n  quality_threshold: { value: 0.95 }\n  iteration_limits: { min: 2, max: 10 }\n\nrevision:\n  max_iterations: 3\n",
    );
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::python::{listed_in, python_floor, Listed};

    #[test]
    fn the_group_or_extra_that_lists_a_tool_is_the_one_to_install() {
        let listed = |pyproject: &str| {
            let dir = tempfile::tempdir().expect("tempdir");
            std::fs::write(dir.path().join("pyproject.toml"), pyproject).expect("write");
            listed_in(dir.path(), "mypy")
        };
        // structlog's layout: the group spans lines, the version is pinned.
        let groups = "[project]\nname = \"x\"\n\n[dependency-groups]\ntests = [\"pytest\"]\ntyping = [\n  \"mypy>=1.4\",\n  \"types-requests\",\n]\ndev = [{ include-group = \"typing\" }]\n";
        assert_eq!(listed(groups), Some(Listed::Group("typing".into())));
        let extras = "[project.optional-dependencies]\ndev = ['mypy[reports]', 'pytest']\n";
        assert_eq!(listed(extras), Some(Listed::Extra("dev".into())));
        // A group wins over an extra; a name that only starts like it is not it.
        let both = format!(
            "{extras}\n[dependency-groups]\nlint = [\"mypy-extensions\"]\ntypes = [\"mypy\"]\n"
        );
        assert_eq!(listed(&both), Some(Listed::Group("types".into())));
        assert_eq!(listed("[tool.mypy]\nstrict = true\n"), None);
    }

    fn detected_in(files: &[(&str, &str)]) -> super::Detected {
        let dir = tempfile::tempdir().expect("tempdir");
        for (file, text) in files {
            let path = dir.path().join(file);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(path, text).expect("write");
        }
        super::detect(dir.path()).expect("a toolchain")
    }

    #[test]
    fn a_gradle_build_runs_its_wrapper_and_reads_jacoco_when_the_build_applies_it() {
        let build = "plugins {\n    java\n    jacoco\n    checkstyle\n}\n";
        let found = detected_in(&[("build.gradle.kts", build), ("gradlew", "#!/bin/sh\n")]);
        assert_eq!(found.toolchain, "gradle");
        let tests = &found.checks["tests"];
        let run = tests.run.as_deref().unwrap_or("");
        assert_eq!(
            run,
            "./gradlew test --continue --console=plain jacocoTestReport"
        );
        let formats: Vec<_> = tests.report.iter().map(|r| r.format.name()).collect();
        assert_eq!(formats, ["junit", "jacoco"]);
        assert!(found.checks.contains_key("lint"));
        let bare = detected_in(&[("build.gradle", "apply plugin: 'java'\n")]);
        assert_eq!(bare.checks["tests"].report.len(), 1);
        assert!(
            bare.notes.iter().any(|n| n.contains("jacoco plugin")),
            "{:?}",
            bare.notes
        );
    }

    #[test]
    fn a_rust_library_is_found_at_the_root_or_in_a_workspace_member() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        std::fs::write(
            root.join("Cargo.toml"),
            "[workspace]\nmembers = [\"crates/*\"]\n",
        )
        .unwrap();
        assert!(!super::rust::has_library(root));
        std::fs::create_dir_all(root.join("crates/app/src")).unwrap();
        std::fs::write(root.join("crates/app/src/main.rs"), "fn main() {}\n").unwrap();
        assert!(!super::rust::has_library(root), "a binary has no doctests");
        std::fs::create_dir_all(root.join("crates/core/src")).unwrap();
        std::fs::write(root.join("crates/core/src/lib.rs"), "").unwrap();
        assert!(super::rust::has_library(root));
    }

    #[test]
    fn mocha_is_measured_through_the_coverage_wrapper_the_project_declares() {
        let detected = |dev: &str| {
            let dir = tempfile::tempdir().expect("tempdir");
            std::fs::write(
                dir.path().join("package.json"),
                format!(r#"{{"name":"m","scripts":{{"test":"mocha"}},"devDependencies":{{"mocha":"11.0.0"{dev}}}}}"#),
            )
            .expect("write");
            super::detect(dir.path()).expect("a node project")
        };
        let with_nyc = detected(r#","nyc":"17.0.0""#);
        let tests = &with_nyc.checks["tests"];
        let run = tests.run.as_deref().unwrap_or("");
        assert!(
            run.starts_with("npx --no-install nyc --reporter=lcov"),
            "{run}"
        );
        assert!(run.contains("mocha --reporter xunit"), "{run}");
        assert_eq!(tests.report.len(), 2, "JUnit and LCOV");
        let bare = detected("");
        assert_eq!(bare.checks["tests"].report.len(), 1);
        assert!(
            bare.notes
                .iter()
                .any(|n| n.contains("mocha has none of its own")),
            "{:?}",
            bare.notes
        );
    }

    fn floor(file: &str, text: &str) -> Option<(u32, u32)> {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join(file), text).expect("write");
        python_floor(dir.path())
    }

    #[test]
    fn the_oldest_python_a_project_declares_is_read_where_ruff_does_not_look() {
        // ruff reads pyproject.toml's own.
        let pyproject = "[project]\nrequires-python = \">=3.9\"\n";
        assert_eq!(floor("pyproject.toml", pyproject), None);
        let cfg = "[options]\npython_requires = >= 3.6\n";
        assert_eq!(floor("setup.cfg", cfg), Some((3, 6)));
        let py = "setup(\n    python_requires=\">=2.7, !=3.0.*, >=3.5\",\n)\n";
        assert_eq!(floor("setup.py", py), Some((3, 5)));
        assert_eq!(
            floor("setup.cfg", "python_requires = ~=3.10\n"),
            Some((3, 10))
        );
        assert_eq!(floor("setup.cfg", "python_requires = ==3.12.*\n"), None);
        assert_eq!(floor("setup.cfg", "[metadata]\nname = x\n"), None);
    }
}
