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
