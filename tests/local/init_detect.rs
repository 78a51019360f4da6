//! `itergate init` measures what the toolchain can: a Python project that configures ruff
//! and can import pytest-cov gets one pytest check writing JUnit and Cobertura, and a ruff
//! check that never fixes; what is missing is named with the command that installs it.

use std::path::Path;
use std::process::{Command, Output};

use itergate::config::Config;

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}");
}

/// PATH without any directory holding `ruff`, so the test says what a newcomer sees.
fn path_without_ruff() -> String {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let kept: Vec<_> = std::env::split_paths(&path)
        .filter(|d| !d.join("ruff").exists())
        .collect();
    std::env::join_paths(kept)
        .expect("PATH joins")
        .to_string_lossy()
        .into_owned()
}

fn init(dir: &Path, python_path: Option<&Path>) -> (Output, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_itergate"));
    command
        .arg("init")
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env("PATH", path_without_ruff());
    if let Some(extra) = python_path {
        command.env("PYTHONPATH", extra);
    }
    let o = command.output().expect("itergate runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(dir.join(".itergate.yml")).expect("written");
    (o, text)
}

fn python_project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    git(dir.path(), &["init", "-q"]);
    std::fs::write(
        dir.path().join("pyproject.toml"),
        "[project]\nname = \"x\"\n\n[tool.ruff]\nfix = true\n",
    )
    .expect("write");
    dir
}

#[test]
fn a_python_project_with_ruff_and_pytest_cov_gets_both_reports_from_one_run() {
    let dir = python_project();
    // pytest-cov importable: a stand-in package on PYTHONPATH (the real one is not needed
    // to decide what to write).
    let site = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(site.path().join("pytest_cov")).expect("mkdir");
    std::fs::write(site.path().join("pytest_cov/__init__.py"), "").expect("write");
    let (o, text) = init(dir.path(), Some(site.path()));
    let config = Config::from_yaml(&text, Path::new(".itergate.yml")).expect("valid");
    let tests = &config.checks["tests"];
    let formats: Vec<&str> = tests.report.iter().map(|r| r.format.name()).collect();
    assert_eq!(formats, ["junit", "cobertura"], "{text}");
    let run = tests.run.as_deref().unwrap_or_default();
    assert!(
        run.contains("--junitxml=") && run.contains("--cov-report=xml:"),
        "{run}"
    );
    // ruff is configured but not installed: no check that could not run, and the way to
    // add it said in the file and on stderr.
    assert!(!config.checks.contains_key("lint"), "{text}");
    let stderr = String::from_utf8_lossy(&o.stderr);
    for said in [&text[..], &stderr[..]] {
        assert!(
            said.contains("`ruff` is not on PATH")
                && said.contains("-m pip install ruff`, then run `itergate init --force`"),
            "{said}"
        );
        assert!(!said.contains("pytest-cov is not importable"), "{said}");
    }
}

#[test]
fn without_pytest_cov_init_says_how_to_install_it() {
    let dir = python_project();
    let (o, text) = init(dir.path(), None);
    let config = Config::from_yaml(&text, Path::new(".itergate.yml")).expect("valid");
    assert_eq!(config.checks["tests"].report.len(), 1);
    let stderr = String::from_utf8_lossy(&o.stderr);
    for said in [&text[..], &stderr[..]] {
        assert!(
            said.contains("pytest-cov is not importable")
                && said.contains("-m pip install pytest-cov"),
            "{said}"
        );
    }
}

#[test]
fn init_keeps_the_report_files_out_of_git_once_and_names_what_it_cannot_measure() {
    let dir = python_project();
    let (o, text) = init(dir.path(), None);
    let exclude = dir.path().join(".git/info/exclude");
    let excluded = std::fs::read_to_string(&exclude).expect("written");
    assert_eq!(excluded.matches(".itergate-*").count(), 1, "{excluded}");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("to .git/info/exclude") || stderr.contains("info/exclude"),
        "{stderr}"
    );
    // The generated reports, and coverage.py's data file, are ignored by git now.
    std::fs::write(dir.path().join(".itergate-junit.xml"), "<testsuites/>").expect("write");
    std::fs::write(dir.path().join(".coverage"), "").expect("write");
    let status = Command::new("git")
        .args(["status", "--porcelain"])
        .current_dir(dir.path())
        .output()
        .expect("git runs");
    assert!(
        !String::from_utf8_lossy(&status.stdout).contains(".itergate-junit.xml")
            && !String::from_utf8_lossy(&status.stdout).contains(".coverage"),
        "{}",
        String::from_utf8_lossy(&status.stdout)
    );
    // Without lizard on PATH, complexity is named as not measured yet.
    if !std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .any(|d| d.join("lizard").is_file())
    {
        assert!(
            text.contains("# Not measured yet: complexity: lizard is not on PATH"),
            "{text}"
        );
    }
    // A second init adds nothing more.
    let again = Command::new(env!("CARGO_BIN_EXE_itergate"))
        .args(["init", "--force"])
        .current_dir(dir.path())
        .env("PATH", path_without_ruff())
        .output()
        .expect("itergate runs");
    assert!(again.status.success());
    let excluded = std::fs::read_to_string(&exclude).expect("written");
    assert_eq!(excluded.matches(".itergate-*").count(), 1, "{excluded}");
}

/// A FIFO named like a project file is not read: detection answers at once instead of
/// waiting for a writer that never comes.
#[test]
fn a_fifo_named_package_json_does_not_hang_detection() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("package-lock.json"), "{}").expect("write");
    let made = Command::new("mkfifo")
        .arg(dir.path().join("package.json"))
        .status()
        .expect("mkfifo runs");
    assert!(made.success(), "mkfifo");
    let root = dir.path().to_path_buf();
    let (done, wait) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = itergate::signals::detect::detect(&root);
        let _ = done.send(());
    });
    assert!(
        wait.recv_timeout(std::time::Duration::from_secs(10))
            .is_ok(),
        "detection hung on a FIFO named package.json"
    );
}

#[test]
fn ruff_without_the_projects_configuration_checks_errors_for_its_oldest_python() {
    let dir = tempfile::tempdir().expect("tempdir");
    git(dir.path(), &["init", "-q"]);
    std::fs::write(
        dir.path().join("pyproject.toml"),
        "[project]\nname = \"x\"\n",
    )
    .expect("write");
    std::fs::write(
        dir.path().join("setup.cfg"),
        "[options]\npython_requires = >=3.8\n",
    )
    .expect("write");
    // A `ruff` on PATH (init only looks for it).
    let bin = tempfile::tempdir().expect("tempdir");
    let ruff = bin.path().join("ruff");
    std::fs::write(&ruff, "#!/bin/sh\nexit 0\n").expect("write");
    std::fs::set_permissions(&ruff, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    // init with that `ruff` on PATH, in `dir`; what it wrote.
    let init_with_ruff = |dir: &Path, args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_itergate"))
            .args(args)
            .current_dir(dir)
            .env("NO_COLOR", "1")
            .env(
                "PATH",
                format!("{}:{}", bin.path().display(), path_without_ruff()),
            )
            .output()
            .expect("itergate runs");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        std::fs::read_to_string(dir.join(".itergate.yml")).expect("written")
    };
    let text = init_with_ruff(dir.path(), &["init"]);
    let config = Config::from_yaml(&text, Path::new(".itergate.yml")).expect("valid");
    let run = config.checks["lint"].run.clone().unwrap_or_default();
    assert!(
        run.contains("--select E4,E7,E9,F --target-version py38"),
        "{text}"
    );
    // Declared in pyproject.toml, ruff reads it itself (and follows a change to it).
    std::fs::write(
        dir.path().join("pyproject.toml"),
        "[project]\nname = \"x\"\nrequires-python = \">=3.9\"\n",
    )
    .expect("write");
    let text = init_with_ruff(dir.path(), &["init", "--force"]);
    assert!(text.contains("--select E4,E7,E9,F ."), "{text}");
    assert!(!text.contains("--target-version"), "{text}");
    // A project that configures ruff keeps its own rules.
    let configured = python_project();
    let text = init_with_ruff(configured.path(), &["init"]);
    let config = Config::from_yaml(&text, Path::new(".itergate.yml")).expect("valid");
    let run = config.checks["lint"].run.clone().unwrap_or_default();
    assert!(!run.contains("--select"), "{text}");
}

/// A project that runs its tests with mocha (`npm test`) and has vitest only for its
/// benchmarks: `init` runs mocha, the runner the `test` script names, and says why.
#[test]
fn init_runs_the_node_runner_the_test_script_names() {
    let dir = tempfile::tempdir().expect("tempdir");
    git(dir.path(), &["init", "-q"]);
    std::fs::write(
        dir.path().join("package.json"),
        r#"{"name":"neg","version":"1.0.0","scripts":{"bench":"vitest bench","test":"mocha --reporter spec --check-leaks test/"},"devDependencies":{"mocha":"10.8.2","vitest":"3.2.4"}}"#,
    )
    .expect("write");
    let (_, text) = init(dir.path(), None);
    let config = Config::from_yaml(&text, &dir.path().join(".itergate.yml")).expect("valid");
    let run = config.checks["tests"].run.clone().unwrap_or_default();
    assert!(run.contains("mocha") && !run.contains("vitest"), "{run}");
    assert!(
        text.contains("tests: mocha, the runner package.json's `test` script runs (`mocha --reporter spec --check-leaks test/`)"),
        "{text}"
    );
}

/// A committed Python project whose tests are `tests`.
fn committed_python_project(tests: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    git(dir.path(), &["init", "-q", "-b", "main"]);
    git(dir.path(), &["config", "user.name", "T"]);
    git(dir.path(), &["config", "user.email", "t@example.com"]);
    for (file, text) in [
        (
            "pyproject.toml",
            "[project]\nname = \"x\"\nversion = \"0.1\"\n\n[tool.pytest.ini_options]\npythonpath = [\".\"]\n",
        ),
        ("calc.py", "def add(a, b):\n    return a + b\n"),
        ("tests/test_calc.py", tests),
    ] {
        let path = dir.path().join(file);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }
    git(dir.path(), &["add", "-A"]);
    git(dir.path(), &["commit", "-q", "-m", "the project"]);
    dir
}

#[test]
fn init_runs_the_tests_it_wrote_once_and_says_what_they_counted() {
    let dir = committed_python_project(
        "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n\n\ndef test_wrong():\n    assert add(1, 1) == 3\n",
    );
    let (out, _) = init(dir.path(), None);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("itergate: a first run of the tests on HEAD: 2 tests ran, 1 failing, in "),
        "{said}"
    );
    // What the first run wrote is no change of the work tree's.
    let status = Command::new("git")
        .args(["status", "--porcelain"])
        .current_dir(dir.path())
        .output()
        .expect("git");
    assert_eq!(
        String::from_utf8_lossy(&status.stdout),
        "?? .itergate.yml\n"
    );
}

#[test]
fn init_warns_when_the_runner_it_wrote_counts_no_test() {
    // Functions pytest does not collect: the runner is not the one these were written for.
    let dir = committed_python_project(
        "from calc import add\n\n\ndef check_add():\n    assert add(1, 2) == 3\n",
    );
    let (out, _) = init(dir.path(), None);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("itergate: warning: a first run of `tests` on HEAD counted no test (the runner found no test"),
        "{said}"
    );
    assert!(
        said.contains("no iteration's behaviour is measured"),
        "{said}"
    );
    // `--no-verify` writes the file and runs nothing.
    let out = Command::new(env!("CARGO_BIN_EXE_itergate"))
        .args(["init", "--force", "--no-verify"])
        .current_dir(dir.path())
        .env("PATH", path_without_ruff())
        .output()
        .expect("itergate runs");
    assert!(out.status.success());
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("first run"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The lint check `init` writes does not walk the report directories other checks write
/// while it runs (vitest's HTML coverage report is JavaScript; eslint 9 lints dot
/// directories).
#[test]
fn the_lint_check_init_writes_leaves_the_report_directories_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path();
    git(p, &["init", "-q"]);
    crate::node_tools::node_tools_into(p);
    for (file, text) in [
        (
            "package.json",
            r#"{"name":"x","version":"1.0.0","type":"module","scripts":{"test":"node --test"}}"#,
        ),
        (
            "eslint.config.mjs",
            "import js from \"@eslint/js\";\nexport default [js.configs.recommended];\n",
        ),
        ("src/a.js", "export const a = 1;\n"),
        (".itergate-coverage/lcov-report/sorter.js", "var x = y;\n"),
    ] {
        let path = p.join(file);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }
    let (_, text) = init(p, None);
    let config = Config::from_yaml(&text, &p.join(".itergate.yml")).expect("valid");
    let lint = config.checks["lint"].run.clone().expect("a lint check");
    let out = Command::new("sh")
        .args(["-c", &lint])
        .current_dir(p)
        .output()
        .expect("eslint runs");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("src/a.js"), "eslint ran: {said}");
    assert!(!said.contains(".itergate-coverage"), "{lint}: {said}");
}

/// A project without packaging files whose tests are unittest's: found as Python; without
/// pytest, unittest's own runner through the real unittest-xml-reporting (from PyPI), and
/// a first run that counts its test; with neither, the way to get one said.
#[test]
fn a_unittest_project_gets_unittests_own_runner_or_the_way_to_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path();
    git(p, &["init", "-q", "-b", "main"]);
    std::fs::create_dir(p.join("tests")).expect("mkdir");
    std::fs::write(p.join("calc.py"), "def add(a, b):\n    return a + b\n").expect("write");
    std::fs::write(p.join("tests/__init__.py"), "").expect("write");
    std::fs::write(
        p.join("tests/test_calc.py"),
        "import unittest\n\nfrom calc import add\n\n\nclass AddTest(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n",
    )
    .expect("write");
    git(p, &["add", "."]);
    git(
        p,
        &[
            "-c",
            "user.name=T",
            "-c",
            "user.email=t@x",
            "commit",
            "-qm",
            "calc",
        ],
    );
    let venv = |name: &str, install: bool| {
        let venv = p.join(name);
        let made = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .status()
            .expect("python3 runs");
        assert!(made.success(), "python3 -m venv");
        if install {
            let pip = Command::new(venv.join("bin/pip"))
                .args(["install", "-q", "unittest-xml-reporting==3.2.0"])
                .output()
                .expect("pip runs");
            assert!(
                pip.status.success(),
                "`pip install unittest-xml-reporting` failed (is the package registry reachable?): {}",
                String::from_utf8_lossy(&pip.stderr)
            );
        }
        let mut path = std::ffi::OsString::from(venv.join("bin"));
        path.push(":");
        path.push(std::env::var_os("PATH").unwrap_or_default());
        path
    };
    let run_init = |path: &std::ffi::OsString| {
        let _ = std::fs::remove_file(p.join(".itergate.yml"));
        let o = Command::new(env!("CARGO_BIN_EXE_itergate"))
            .arg("init")
            .current_dir(p)
            .env("NO_COLOR", "1")
            .env("PATH", path)
            .output()
            .expect("itergate runs");
        let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(o.status.success(), "{stderr}");
        let text = std::fs::read_to_string(p.join(".itergate.yml")).expect("written");
        (stderr, text)
    };
    // Neither pytest nor a JUnit runner: the way to either.
    let (stderr, text) = run_init(&venv(".bare", false));
    assert!(
        text.contains("the project's tests are unittest's and `python` cannot import pytest")
            && text.contains("-m pip install unittest-xml-reporting"),
        "{text}\n{stderr}"
    );
    // unittest-xml-reporting installed: unittest's own runner, and its test counted.
    let (stderr, text) = run_init(&venv(".venv", true));
    assert!(
        stderr.contains("chose tests: unittest through xmlrunner"),
        "{stderr}"
    );
    let config = Config::from_yaml(&text, Path::new(".itergate.yml")).expect("valid");
    let run = config.checks["tests"].run.as_deref().unwrap_or_default();
    assert!(run.contains("-m xmlrunner --output-file"), "{run}");
    assert!(
        stderr.contains("a first run of the tests on HEAD: 1 test ran, 0 failing"),
        "{stderr}"
    );
}
