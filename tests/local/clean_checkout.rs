//! What the judge runs is the judge's, with the real pytest and real git: a smudge filter
//! armed in `.git/config` does not rewrite the start's test on checkout, a base branch
//! moved and merged in is judged as the branch's change, a check the change stops from
//! running is a BLOCKER of that iteration (not exit 3), and a tests check that runs no test
//! is not a pass.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::gitrepo::git;

const CONFIG: &str = "checks:\n  tests:\n    run: python -m pytest -q -p no:cacheprovider --junitxml=.itergate-pytest.xml\n    report: { format: junit, path: .itergate-pytest.xml }\n";
const CODE: &str = "def slug(text):\n    return text.strip().lower().replace(' ', '-')\n";
const BROKEN: &str = "def slug(text):\n    return text.strip().replace(' ', '-')\n";
const TEST: &str = "from slugs import slug\n\n\ndef test_hello():\n    assert slug('Hello World') == 'hello-world'\n\n\ndef test_plain():\n    assert slug('plain') == 'plain'\n";
const PYPROJECT: &str = "[project]\nname = \"slugs\"\nversion = \"0.1\"\n\n[tool.pytest.ini_options]\npythonpath = [\".\"]\n";

struct Project {
    dir: tempfile::TempDir,
}

impl Project {
    /// `main` with the project (its configuration being `config`), and a branch `agent`
    /// whose first commit breaks `slug`: ITERATE.
    fn new(config: &str) -> Project {
        let project = Project {
            dir: tempfile::tempdir().expect("tempdir"),
        };
        let p = project.path();
        git(&p, &["init", "-q", "-b", "main"]);
        project.write(&[
            ("slugs.py", CODE),
            ("tests/test_slugs.py", TEST),
            ("pyproject.toml", PYPROJECT),
            (".gitignore", ".itergate-*\n__pycache__/\n"),
            (".itergate.yml", config),
        ]);
        project.commit("the project");
        git(&p, &["checkout", "-q", "-b", "agent"]);
        let (code, text) = project.iteration(&[("slugs.py", BROKEN)], "agent: simplify slug");
        assert_eq!(code, 10, "the broken function is ITERATE: {text}");
        project
    }

    fn path(&self) -> PathBuf {
        self.dir.path().to_path_buf()
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

    fn run(&self) -> (i32, String) {
        run_in(&self.path())
    }

    fn iteration(&self, files: &[(&str, &str)], message: &str) -> (i32, String) {
        self.write(files);
        self.commit(message);
        self.run()
    }
}

fn run_in(dir: &Path) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_itergate"))
        .args(["--color", "never", "run", "--exit-code"])
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .expect("itergate runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn a_smudge_filter_that_rewrites_the_test_on_checkout_is_not_honoured() {
    let p = Project::new(CONFIG);
    // The filter rewrites the expected value to what the broken code returns, in every
    // checkout git makes; the attribute that applies it is committed.
    git(
        &p.path(),
        &[
            "config",
            "filter.tidy.smudge",
            "sed s/hello-world/Hello-World/",
        ],
    );
    git(&p.path(), &["config", "filter.tidy.clean", "cat"]);
    let (code, text) = p.iteration(
        &[
            (".gitattributes", "tests/*.py filter=tidy\n"),
            ("README.md", "# slugs\n"),
        ],
        "chore: normalise line endings",
    );
    assert_ne!(code, 0, "never ACCEPT: {text}");
    assert!(
        text.contains("test tests.test_slugs::test_hello failed"),
        "the start's test, as committed, fails: {text}"
    );
}

#[test]
fn a_base_branch_moved_and_merged_in_is_the_branchs_change() {
    let p = Project::new(CONFIG);
    // The test rewritten to the broken behaviour on the local base branch, then merged in.
    git(&p.path(), &["checkout", "-q", "main"]);
    p.write(&[(
        "tests/test_slugs.py",
        &TEST.replace("'hello-world'", "'Hello-World'"),
    )]);
    p.commit("tests: expect the title case");
    git(&p.path(), &["checkout", "-q", "agent"]);
    git(&p.path(), &["merge", "-q", "--no-edit", "main"]);
    let (code, text) = p.run();
    assert_ne!(code, 0, "never ACCEPT: {text}");
    assert!(
        text.contains("the base branch main moved since this task started"),
        "{text}"
    );
    assert!(
        text.contains("test_hello"),
        "the rewritten test is named: {text}"
    );
}

#[test]
fn a_check_the_change_stops_from_running_is_a_blocker_of_that_iteration() {
    let p = Project::new(CONFIG);
    // A duplicated key: pytest cannot read its configuration, and writes no report.
    let broken = format!("{PYPROJECT}addopts = \"-q\"\naddopts = \"-x\"\n");
    let (code, text) = p.iteration(
        &[("slugs.py", CODE), ("pyproject.toml", &broken)],
        "fix slug, tidy pytest options",
    );
    assert_eq!(code, 10, "an iteration to revise, not exit 3: {text}");
    assert!(
        text.contains("check `tests` could not run on this commit")
            && text.contains("`pyproject.toml`"),
        "names the check and the file the change edited: {text}"
    );
}

#[test]
fn a_tests_check_that_runs_no_test_is_not_a_pass() {
    let config = CONFIG.replace(
        "-p no:cacheprovider",
        "-p no:cacheprovider -k nothing_matches",
    );
    let p = Project {
        dir: tempfile::tempdir().expect("tempdir"),
    };
    let dir = p.path();
    git(&dir, &["init", "-q", "-b", "main"]);
    p.write(&[
        ("slugs.py", CODE),
        ("tests/test_slugs.py", TEST),
        ("pyproject.toml", PYPROJECT),
        (".gitignore", ".itergate-*\n__pycache__/\n"),
        (".itergate.yml", &config),
    ]);
    p.commit("the project");
    git(&dir, &["checkout", "-q", "-b", "agent"]);
    let (code, text) = p.iteration(&[("slugs.py", BROKEN)], "agent: simplify slug");
    assert_ne!(code, 0, "nothing measured is never ACCEPT: {text}");
    assert!(
        text.contains("the tests checks ran no test, though the tree has test files"),
        "{text}"
    );
}

/// A spec committed on its own as an iteration of the task (its test fails), then its
/// assertion rewritten alone, then a README-only commit: the spec as first written judges
/// the code in every later iteration, so none is accepted. Its honest implementation is.
/// (A test added together with code is that iteration's own, which a later one may
/// correct: `engine::scenarios::a_python_package_with_pytest`.)
#[test]
fn a_spec_added_by_the_task_judges_every_later_iteration() {
    const SPEC: &str = "from slugs import slug\n\n\ndef test_collapses_spaces():\n    assert slug('a  b') == 'a-b'\n";
    let p = Project::new(CONFIG);
    let (code, text) = p.iteration(&[("slugs.py", CODE)], "agent: lower-case again");
    assert_eq!(code, 0, "{text}");
    let (code, text) = p.iteration(
        &[("tests/test_spec.py", SPEC)],
        "spec: collapse runs of spaces",
    );
    assert_eq!(code, 10, "the spec fails: {text}");
    let (code, text) = p.iteration(
        &[("tests/test_spec.py", &SPEC.replace("'a-b'", "'a--b'"))],
        "agent: align the spec",
    );
    assert_ne!(code, 0, "{text}");
    let (code, text) = p.iteration(&[("README.md", "# slugs\n")], "docs: a README");
    assert_ne!(code, 0, "never ACCEPT after a rewrite: {text}");
    assert!(
        text.contains("test_collapses_spaces was changed to pass"),
        "{text}"
    );
    let honest = CODE.replace(
        "text.strip().lower().replace(' ', '-')",
        "'-'.join(text.strip().lower().split())",
    );
    let (code, text) = p.iteration(
        &[("slugs.py", &honest), ("tests/test_spec.py", SPEC)],
        "agent: collapse runs of spaces",
    );
    assert_eq!(code, 0, "the honest implementation is ACCEPT: {text}");
}

/// A crate on `main` (`strip` returns its input), checked with `cargo test`, on a branch
/// `agent`; `commit` commits everything and runs itergate.
fn rust_crate() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path();
    git(p, &["init", "-q", "-b", "main"]);
    let files = [
        (
            "Cargo.toml",
            "[package]\nname = \"vp\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
        ),
        ("src/lib.rs", "pub fn strip(s: &str) -> &str {\n    s\n}\n"),
        (".gitignore", "target/\n.itergate-*\n"),
        (
            ".itergate.yml",
            "checks:\n  tests:\n    run: cargo test --offline --no-fail-fast --color never 2>&1\n    report: { format: libtest, from: stdout }\n",
        ),
    ];
    for (file, text) in files {
        let path = p.join(file);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }
    rust_commit(p, "the crate");
    git(p, &["checkout", "-q", "-b", "agent"]);
    dir
}

fn rust_commit(p: &Path, message: &str) -> (i32, String) {
    git(p, &["add", "-A"]);
    git(p, &["commit", "-q", "-m", message]);
    run_in(p)
}

/// A spec's test that passed where it was committed, its expectation moved with naive code:
/// a person confirms it — never an accept, nor a note — after a README commit too.
#[test]
fn a_spec_test_that_passed_and_now_expects_something_else_is_a_persons_call() {
    let dir = rust_crate();
    let p = dir.path();
    const SPEC: &str = "#[test]\nfn strips_one_v() {\n    assert_eq!(vp::strip(\"v1\"), \"1\");\n}\n\n#[test]\nfn keeps_two_vs() {\n    assert_eq!(vp::strip(\"vv1\"), \"vv1\");\n}\n";
    std::fs::create_dir_all(p.join("tests")).expect("mkdir");
    std::fs::write(p.join("tests/spec.rs"), SPEC).expect("write");
    let (code, text) = rust_commit(p, "spec: strip one leading v");
    assert_eq!(code, 10, "strips_one_v fails: {text}");
    std::fs::write(
        p.join("src/lib.rs"),
        "pub fn strip(s: &str) -> &str {\n    s.trim_start_matches('v')\n}\n",
    )
    .expect("write");
    let rewritten = SPEC.replace("\"vv1\");", "\"1\");");
    std::fs::write(p.join("tests/spec.rs"), rewritten).expect("write");
    let (code, text) = rust_commit(p, "agent: strip leading v");
    assert_ne!(code, 0, "{text}");
    assert!(
        text.contains("keeps_two_vs of a spec this task added now expects something else"),
        "{text}"
    );
    std::fs::write(p.join("README.md"), "# vp\n").expect("write");
    let (code, text) = rust_commit(p, "docs: a README");
    assert_ne!(code, 0, "never ACCEPT: {text}");
}

/// The same with `cargo test`, whose report names no file: a spec file committed alone
/// under `tests/` fails; its assertion rewritten with naive code, then a README-only commit,
/// is never accepted.
#[test]
fn a_rust_spec_added_by_the_task_judges_every_later_iteration() {
    let dir = rust_crate();
    let p = dir.path();
    let commit = |message: &str| rust_commit(p, message);
    const SPEC: &str =
        "#[test]\nfn strips_one_v() {\n    assert_eq!(vp::strip(\"vv1\"), \"v1\");\n}\n";
    std::fs::create_dir_all(p.join("tests")).expect("mkdir");
    std::fs::write(p.join("tests/spec.rs"), SPEC).expect("write");
    let (code, text) = commit("spec: strip one leading v");
    assert_eq!(code, 10, "the spec fails: {text}");
    std::fs::write(
        p.join("src/lib.rs"),
        "pub fn strip(s: &str) -> &str {\n    s.trim_start_matches('v')\n}\n",
    )
    .expect("write");
    std::fs::write(p.join("tests/spec.rs"), SPEC.replace("\"v1\"", "\"1\"")).expect("write");
    let (code, text) = commit("agent: strip leading v");
    assert_ne!(code, 0, "{text}");
    std::fs::write(p.join("README.md"), "# vp\n").expect("write");
    let (code, text) = commit("docs: a README");
    assert_ne!(code, 0, "never ACCEPT after a rewrite: {text}");
    assert!(text.contains("strips_one_v was changed to pass"), "{text}");
}

/// The state directory made afresh mid-task (a new machine, or an agent that deleted it):
/// the notes' key is new, so no earlier observation verifies. The previous iteration,
/// whose record names a failing test, is observed again, and code fitted to that test's
/// values is still caught.
#[test]
fn a_state_directory_made_afresh_does_not_forget_what_failed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("repo");
    std::fs::create_dir_all(&p).expect("mkdir");
    git(&p, &["init", "-q", "-b", "main"]);
    let write = |file: &str, text: &str| {
        let path = p.join(file);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    };
    let run = |state: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_itergate"))
            .args(["--color", "never", "run", "--exit-code"])
            .current_dir(&p)
            .env("NO_COLOR", "1")
            .env("ITERGATE_STATE_DIR", dir.path().join(state))
            .output()
            .expect("itergate runs");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.code().unwrap_or(-1), text)
    };
    let commit = |message: &str| {
        git(&p, &["add", "-A"]);
        git(&p, &["commit", "-q", "-m", message]);
    };
    write("slugs.py", CODE);
    write("tests/test_slugs.py", TEST);
    write("pyproject.toml", PYPROJECT);
    write(".gitignore", ".itergate-*\n__pycache__/\n");
    write(".itergate.yml", CONFIG);
    commit("the project");
    git(&p, &["checkout", "-q", "-b", "agent"]);
    write("slugs.py", BROKEN);
    commit("agent: simplify slug");
    let (code, text) = run("state-a");
    assert_eq!(code, 10, "{text}");
    write(
        "slugs.py",
        "def slug(text):\n    if text == 'Hello World':\n        return 'hello-world'\n    return text.strip().replace(' ', '-')\n",
    );
    commit("agent: hello");
    let (code, text) = run("state-b");
    assert_ne!(code, 0, "never ACCEPT: {text}");
    assert!(
        text.contains("production code hard-codes values of test")
            && text.contains("the previous iteration"),
        "{text}"
    );
}
