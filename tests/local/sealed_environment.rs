//! The sealed environment, with the real pytest in a real virtual environment: what the
//! checks execute besides the commit (the venv's `site-packages`, its entry points, the
//! runners' configuration above the repository, the variables they read) is fingerprinted
//! where the task starts. A pytest plugin registered through a `pytest11` entry point, a
//! `.pth` import hook and a `sitecustomize.py` dropped into the venv, then a README-only
//! commit: never accepted, the finding names what was added, and once the tampering is
//! removed the cached result is not replayed. A dependency installed with its manifest
//! committed is not flagged.

use std::path::PathBuf;
use std::process::Command;

use crate::gitrepo::git;

const CONFIG: &str = "checks:\n  tests:\n    run: python -m pytest -q -p no:cacheprovider --junitxml=.itergate-pytest.xml\n    report: { format: junit, path: .itergate-pytest.xml }\n";
const CODE: &str = "def slug(text):\n    return text.strip().lower().replace(' ', '-')\n";
const BROKEN: &str = "def slug(text):\n    return text.strip().replace(' ', '-')\n";
const TEST: &str = "from slugs import slug\n\n\ndef test_hello():\n    assert slug('Hello World') == 'hello-world'\n\n\ndef test_plain():\n    assert slug('plain') == 'plain'\n";
const PYPROJECT: &str = "[project]\nname = \"slugs\"\nversion = \"0.1\"\n\n[tool.pytest.ini_options]\npythonpath = [\".\"]\n";

/// A pytest plugin that reports every failure as a pass.
const CHEAT: &str = "import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n    outcome = yield\n    report = outcome.get_result()\n    if report.failed:\n        report.outcome = 'passed'\n";

/// A project on `main` with a venv (`.venv`, ignored) that sees the machine's pytest, and a
/// branch `agent` whose first commit breaks `slug` (ITERATE: the task's start is recorded,
/// its environment fingerprinted).
struct Project {
    dir: tempfile::TempDir,
}

impl Project {
    fn new() -> Project {
        let dir = tempfile::tempdir().expect("tempdir");
        let project = Project { dir };
        let p = &project.path().to_path_buf();
        std::fs::create_dir_all(p).expect("mkdir");
        git(p, &["init", "-q", "-b", "main"]);
        project.write(&[
            ("slugs.py", CODE),
            ("tests/test_slugs.py", TEST),
            ("pyproject.toml", PYPROJECT),
            (".gitignore", ".itergate-*\n__pycache__/\n.venv/\n"),
            (".itergate.yml", CONFIG),
        ]);
        let venv = Command::new("python3")
            .args(["-m", "venv", "--system-site-packages", ".venv"])
            .current_dir(p)
            .status()
            .expect("python3 runs");
        assert!(venv.success(), "python3 -m venv");
        project.commit("the project");
        git(p, &["checkout", "-q", "-b", "agent"]);
        let (code, text) = project.iteration(&[("slugs.py", BROKEN)], "agent: simplify slug");
        assert_eq!(code, 10, "the broken function is ITERATE: {text}");
        project
    }

    /// The repository: one level below the temporary directory, whose own directory is
    /// the test's to write ("above the repository").
    fn path(&self) -> PathBuf {
        self.dir.path().join("repo")
    }

    fn site_packages(&self) -> PathBuf {
        let lib = self.path().join(".venv/lib");
        let python = std::fs::read_dir(&lib)
            .expect("the venv's lib")
            .flatten()
            .find(|e| e.file_name().to_string_lossy().starts_with("python"))
            .expect("lib/pythonX.Y");
        python.path().join("site-packages")
    }

    fn write(&self, files: &[(&str, &str)]) {
        for (file, text) in files {
            let path = self.path().join(file);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(path, text).expect("write");
        }
    }

    fn commit(&self, message: &str) {
        git(&self.path(), &["add", "-A"]);
        git(&self.path(), &["commit", "-q", "-m", message]);
    }

    /// Runs itergate as a person whose venv is active: the exit status and the output.
    fn run(&self) -> (i32, String) {
        self.run_with(&[])
    }

    /// [`Project::run`] with more variables set.
    fn run_with(&self, vars: &[(&str, &str)]) -> (i32, String) {
        let venv = self.path().join(".venv");
        let path = format!(
            "{}:{}",
            venv.join("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let out = Command::new(env!("CARGO_BIN_EXE_itergate"))
            .args(["--color", "never", "run", "--exit-code"])
            .current_dir(self.path())
            .env("NO_COLOR", "1")
            .env("PATH", path)
            .env("VIRTUAL_ENV", &venv)
            .envs(vars.iter().copied())
            .output()
            .expect("itergate runs");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.code().unwrap_or(-1), text)
    }

    fn iteration(&self, files: &[(&str, &str)], message: &str) -> (i32, String) {
        self.write(files);
        self.commit(message);
        self.run()
    }

    /// Drops `files` into the venv's `site-packages`.
    fn plant(&self, files: &[(&str, &str)]) {
        let site = self.site_packages();
        for (file, text) in files {
            let path = site.join(file);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(path, text).expect("write");
        }
    }

    fn unplant(&self, files: &[&str]) {
        let site = self.site_packages();
        for file in files {
            let path = site.join(file);
            if path.is_dir() {
                std::fs::remove_dir_all(path).expect("remove");
            } else {
                std::fs::remove_file(path).expect("remove");
            }
        }
    }
}

fn assert_void_naming(outcome: &(i32, String), named: &str) {
    let (code, text) = outcome;
    assert_ne!(*code, 0, "never ACCEPT: {text}");
    assert!(
        text.contains("the environment changed since the task started"),
        "{text}"
    );
    assert!(text.contains(named), "the finding names {named}: {text}");
    assert!(text.contains("VOID"), "{text}");
}

/// The iteration was measured again in the judge's own environment (`what` it says it
/// built), where the code's failing test fails.
fn assert_remeasured(outcome: &(i32, String), what: &str) {
    let (code, text) = outcome;
    assert_eq!(*code, 10, "VOID, iterate: {text}");
    assert!(
        text.contains("the checks ran again in an environment itergate built for them"),
        "{text}"
    );
    assert!(text.contains(what), "{what}: {text}");
    assert!(
        text.contains("iteration is VOID: what the checks execute changed since the task started"),
        "{text}"
    );
    assert!(
        text.contains("test tests.test_slugs::test_hello failed"),
        "the code's own failure: {text}"
    );
    assert!(!text.contains("Tests Passing: 100%"), "{text}");
}

const README: (&str, &str) = ("README.md", "# slugs\n");

#[test]
fn a_pytest_plugin_registered_in_the_venv_is_caught_and_never_replayed() {
    let p = Project::new();
    p.plant(&[
        ("cheat_plugin.py", CHEAT),
        (
            "cheat-1.0.dist-info/METADATA",
            "Metadata-Version: 2.1\nName: cheat\nVersion: 1.0\n",
        ),
        (
            "cheat-1.0.dist-info/entry_points.txt",
            "[pytest11]\ncheat = cheat_plugin\n",
        ),
    ]);
    let outcome = p.iteration(&[README], "docs: a README");
    assert_void_naming(&outcome, "`pytest11` entry point `cheat`");
    assert!(outcome.1.contains("cheat_plugin.py"), "{}", outcome.1);
    // Measured again in an environment itergate built: the code's own failure, not the
    // plugin's pass.
    assert_remeasured(&outcome, "a virtual environment made by");
    // The plugin gone, the same commit is judged again in the start's environment: its
    // code still fails, and the tampered observation is not replayed.
    p.unplant(&["cheat_plugin.py", "cheat-1.0.dist-info"]);
    let (code, text) = p.run();
    assert_ne!(code, 0, "{text}");
    assert!(
        text.contains("test tests.test_slugs::test_hello failed"),
        "the code's own failure: {text}"
    );
    assert!(!text.contains("environment changed"), "{text}");
}

#[test]
fn a_pth_import_hook_in_the_venv_is_caught() {
    let p = Project::new();
    p.plant(&[(
        "zz_quiet.pth",
        "import os; os.environ.setdefault('PYTEST_ADDOPTS', '-k \"not hello\"')\n",
    )]);
    let outcome = p.iteration(&[README], "docs: a README");
    assert_void_naming(&outcome, "zz_quiet.pth");
    assert_remeasured(&outcome, "a virtual environment made by");
}

#[test]
fn a_sitecustomize_in_the_venv_is_caught() {
    let p = Project::new();
    p.plant(&[(
        "sitecustomize.py",
        "import os\nos.environ.setdefault('PYTEST_ADDOPTS', '-k \"not hello\"')\n",
    )]);
    let outcome = p.iteration(&[README], "docs: a README");
    assert_void_naming(&outcome, "sitecustomize.py");
    assert_remeasured(&outcome, "a virtual environment made by");
    // Twice: a person decides, told that the environment is what changed.
    let (code, text) = p.iteration(&[("README.md", "# slugs, again\n")], "docs: again");
    assert_eq!(code, 20, "{text}");
    assert!(
        text.contains("changed the tests or the environment they run in instead of the code"),
        "{text}"
    );
}

#[test]
fn a_variable_the_runner_reads_is_caught() {
    let p = Project::new();
    p.write(&[README]);
    p.commit("docs: a README");
    let outcome = p.run_with(&[("PYTEST_ADDOPTS", "-k 'not hello'")]);
    assert_void_naming(&outcome, "variable `PYTEST_ADDOPTS` added");
    assert_remeasured(&outcome, "`PYTEST_ADDOPTS` unset");
}

/// A program on `PATH` that itergate cannot put back: nothing measures the iteration
/// again, and a person decides at once.
#[test]
fn a_change_it_cannot_rebuild_goes_to_a_person_at_once() {
    let p = Project::new();
    let shadow = p.dir.path().join("shadow");
    std::fs::create_dir_all(&shadow).expect("mkdir");
    let pytest = shadow.join("pytest");
    std::fs::write(&pytest, "#!/bin/sh\nexit 0\n").expect("write");
    std::fs::set_permissions(&pytest, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    p.write(&[README]);
    p.commit("docs: a README");
    let path = format!(
        "{}:{}:{}",
        p.path().join(".venv/bin").display(),
        shadow.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let (code, text) = p.run_with(&[("PATH", &path)]);
    assert_eq!(code, 20, "escalated at the first: {text}");
    assert!(text.contains("program `pytest`"), "{text}");
    assert!(text.contains("cannot put it back"), "{text}");
    assert!(
        text.contains("itergate could not build an environment of its own to measure it in"),
        "{text}"
    );
}

#[test]
fn a_runner_configuration_above_the_repository_is_caught() {
    let p = Project::new();
    let repo = p.path();
    let above = repo.parent().expect("the project's parent");
    std::fs::create_dir_all(above.join(".cargo")).expect("mkdir");
    std::fs::write(
        above.join(".cargo/config.toml"),
        "[alias]\ntest = \"test -- --skip hello\"\n",
    )
    .expect("write");
    let outcome = p.iteration(&[README], "docs: a README");
    assert_void_naming(&outcome, ".cargo/config.toml");
    assert_remeasured(&outcome, "out of the scratch checkout's reach");
}

/// A dependency installed with its manifest committed is not flagged, and moves the
/// reference: a later change is explained only by what is committed after it.
#[test]
fn a_dependency_installed_with_its_manifest_committed_is_not_flagged() {
    let p = Project::new();
    p.plant(&[
        ("extra/__init__.py", "VALUE = 1\n"),
        (
            "extra-1.0.dist-info/METADATA",
            "Metadata-Version: 2.1\nName: extra\nVersion: 1.0\n",
        ),
    ]);
    let manifest = PYPROJECT.replace(
        "version = \"0.1\"\n",
        "version = \"0.1\"\ndependencies = [\"extra\"]\n",
    );
    let (code, text) = p.iteration(
        &[("slugs.py", CODE), ("pyproject.toml", &manifest)],
        "fix slug; depend on extra",
    );
    assert_eq!(code, 0, "ACCEPT: {text}");
    assert!(!text.contains("environment changed"), "{text}");
    // The manifest explained that change, not the next one: a `.pth` dropped in later,
    // then a README-only commit, is VOID.
    p.plant(&[("zz_quiet.pth", "import os\n")]);
    let outcome = p.iteration(&[README], "docs: a README");
    assert_void_naming(&outcome, "zz_quiet.pth");
}

/// The checks of a mocha project as `itergate init` writes them.
const MOCHA_CONFIG: &str = "checks:\n  tests:\n    run: npx --no-install mocha --reporter xunit --reporter-option output=.itergate-junit.xml\n    report: { format: junit, path: .itergate-junit.xml }\n";
const MOCHA_CODE: &str = "exports.add = (a, b) => a + b;\n";
const MOCHA_TEST: &str = "const assert = require(\"node:assert/strict\");\nconst { add } = require(\"../lib/math\");\n\ndescribe(\"math\", () => {\n  it(\"adds two numbers\", () => {\n    assert.strictEqual(add(1, 2), 3);\n  });\n});\n";

/// mocha's program replaced in `node_modules`: it writes a passing report and exits 0.
const FAKE_MOCHA: &str = "#!/usr/bin/env node\nrequire('fs').writeFileSync('.itergate-junit.xml', '<testsuite name=\"Mocha Tests\" tests=\"1\" failures=\"0\" errors=\"0\" skipped=\"0\"><testcase classname=\"math\" name=\"math adds two numbers\" time=\"0\"/></testsuite>');\n";

/// A patched mocha in `node_modules`, then a README-only commit: VOID, and measured again
/// with `node_modules` installed from the committed lockfile, where the code still fails.
#[test]
fn a_patched_runner_in_node_modules_is_caught_and_measured_again_from_the_lockfile() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path();
    git(p, &["init", "-q", "-b", "main"]);
    let write = |file: &str, text: &str| {
        let path = p.join(file);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    };
    write(
        "package.json",
        r#"{"name":"fx","version":"1.0.0","scripts":{"test":"mocha"},"devDependencies":{"mocha":"11.8.0"}}"#,
    );
    write("lib/math.js", MOCHA_CODE);
    write("test/math.test.js", MOCHA_TEST);
    write(".gitignore", "node_modules/\n.itergate-*\n");
    write(".itergate.yml", MOCHA_CONFIG);
    crate::node_tools::node_tools_into(p);
    // The lockfile, from npm's cache (the pinned tools put mocha there).
    let lock = Command::new("npm")
        .args([
            "install",
            "--package-lock-only",
            "--prefer-offline",
            "--no-audit",
            "--no-fund",
        ])
        .current_dir(p)
        .output()
        .expect("npm runs");
    assert!(
        lock.status.success(),
        "{}",
        String::from_utf8_lossy(&lock.stderr)
    );
    git(p, &["add", "-A"]);
    git(p, &["commit", "-q", "-m", "the project"]);
    git(p, &["checkout", "-q", "-b", "agent"]);
    // A state directory of its own: the judge's node_modules is built here first.
    let state = tempfile::tempdir().expect("tempdir");
    let state = state.path();
    let run = || {
        let out = Command::new(env!("CARGO_BIN_EXE_itergate"))
            .args(["--color", "never", "run", "--exit-code"])
            .current_dir(p)
            .env("NO_COLOR", "1")
            .env("ITERGATE_STATE_DIR", state)
            .output()
            .expect("itergate runs");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.code().unwrap_or(-1), text)
    };
    write("lib/math.js", &MOCHA_CODE.replace("a + b", "a - b"));
    git(p, &["commit", "-q", "-am", "agent: add"]);
    let (code, text) = run();
    assert_eq!(code, 10, "the broken add is ITERATE: {text}");

    // The package's file is replaced, never written through: node_modules is a hard-linked
    // copy of the pinned tools.
    let program = p.join("node_modules/mocha/bin/mocha.js");
    std::fs::remove_file(&program).expect("remove");
    std::fs::write(&program, FAKE_MOCHA).expect("write");
    std::fs::set_permissions(
        &program,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .expect("chmod");
    write("README.md", "# fx\n");
    git(p, &["add", "-A"]);
    git(p, &["commit", "-q", "-m", "docs: a README"]);
    let outcome = run();
    assert_void_naming(&outcome, "node_modules/mocha");
    let (code, text) = outcome;
    assert_eq!(code, 10, "{text}");
    assert!(
        text.contains("`node_modules` installed from package-lock.json"),
        "{text}"
    );
    assert!(text.contains("building node_modules of its own"), "{text}");
    assert!(
        text.contains("adds two numbers failed"),
        "the code's own failure: {text}"
    );
    // Judged again: the judge's node_modules is kept by lockfile, not installed anew.
    let (code, again) = run();
    assert_eq!(code, 10, "{again}");
    assert!(again.contains("adds two numbers failed"), "{again}");
    assert!(
        !again.contains("building node_modules of its own"),
        "{again}"
    );
}
