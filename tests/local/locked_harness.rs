//! The start's tests judge the code (the trusted harness run), with the real pytest,
//! `go test` and `node --test`. A branch breaks a function (iteration 1: ITERATE), then
//! games the failing test in one of the ways agents do; each move is caught — never
//! ACCEPT, the test and the edited file named — and each honest counterpart is not flagged.

use std::path::Path;
use std::process::Command;

use crate::gitrepo::git;

/// A repository on `main` with `files`, and a branch `agent` to work on.
struct Project {
    dir: tempfile::TempDir,
}

impl Project {
    fn new(files: &[(&str, &str)]) -> Project {
        let dir = tempfile::tempdir().expect("tempdir");
        git(dir.path(), &["init", "-q", "-b", "main"]);
        let project = Project { dir };
        project.write(files);
        project.commit("the project");
        git(project.path(), &["checkout", "-q", "-b", "agent"]);
        project
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn write(&self, files: &[(&str, &str)]) {
        for (file, text) in files {
            let path = self.path().join(file);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(path, text).expect("write");
        }
    }

    fn commit(&self, message: &str) {
        git(self.path(), &["add", "-A"]);
        git(self.path(), &["commit", "-q", "-m", message]);
    }

    /// Commits `files` as one iteration and runs itergate: the exit status (0 accept, 10
    /// iterate, 20 escalate) and everything it printed.
    fn iteration(&self, files: &[(&str, &str)], message: &str) -> (i32, String) {
        self.write(files);
        self.commit(message);
        let out = Command::new(env!("CARGO_BIN_EXE_itergate"))
            .args(["--color", "never", "run", "--exit-code"])
            .current_dir(self.path())
            .env("NO_COLOR", "1")
            .env("GOFLAGS", "-mod=mod")
            .output()
            .expect("itergate runs");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.code().unwrap_or(-1), text)
    }

    fn remove(&self, file: &str) {
        std::fs::remove_file(self.path().join(file)).expect("remove");
    }
}

/// Caught: not accepted, a violation naming the test and the file the change edited.
fn assert_caught(outcome: &(i32, String), test: &str, file: &str) {
    let (code, text) = outcome;
    assert_ne!(*code, 0, "never ACCEPT: {text}");
    assert!(text.contains("BLOCKER"), "a violation: {text}");
    assert!(text.contains(test), "names {test}: {text}");
    assert!(text.contains(file), "names {file}: {text}");
}

fn assert_accepted(outcome: &(i32, String)) {
    let (code, text) = outcome;
    assert_eq!(*code, 0, "ACCEPT: {text}");
    assert!(!text.contains("changed to pass"), "{text}");
}

const PY_CONFIG: &str = "checks:\n  tests:\n    run: python -m pytest -q -p no:cacheprovider --junitxml=.itergate-pytest.xml\n    report: { format: junit, path: .itergate-pytest.xml }\n";
const PY_CODE: &str = "def slug(text):\n    return text.strip().lower().replace(' ', '-')\n";
const PY_BROKEN: &str = "def slug(text):\n    return text.strip().replace(' ', '-')\n";
const PY_TEST: &str = "import pytest\n\nfrom slugs import slug\n\n\n@pytest.mark.parametrize(\n    ('text', 'expected'),\n    [\n        ('Hello World', 'hello-world'),\n        ('  Trim Me ', 'trim-me'),\n        ('plain', 'plain'),\n    ],\n)\ndef test_slug(text, expected):\n    assert slug(text) == expected\n";

fn python() -> Project {
    let project = Project::new(&[
        ("slugs.py", PY_CODE),
        ("tests/test_slugs.py", PY_TEST),
        (
            "pyproject.toml",
            "[project]\nname = \"slugs\"\nversion = \"0.1\"\n\n[tool.pytest.ini_options]\npythonpath = [\".\"]\n",
        ),
        (".gitignore", ".itergate-*\n__pycache__/\n"),
        (".itergate.yml", PY_CONFIG),
    ]);
    let (code, text) = project.iteration(&[("slugs.py", PY_BROKEN)], "agent: simplify slug");
    assert_eq!(code, 10, "the broken function is ITERATE: {text}");
    project
}

#[test]
fn a_rewritten_parametrize_table_is_changed_to_pass() {
    let p = python();
    let rewritten = PY_TEST
        .replace("'hello-world'", "'Hello-World'")
        .replace("'trim-me'", "'Trim-Me'");
    let outcome = p.iteration(
        &[("tests/test_slugs.py", &rewritten)],
        "agent: fix the table",
    );
    assert_caught(&outcome, "test_slug[", "tests/test_slugs.py");
    assert!(outcome.1.contains("changed to pass"), "{}", outcome.1);
}

#[test]
fn a_conftest_hook_that_turns_failures_into_passes_is_caught() {
    let p = python();
    let hook = "import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n    outcome = yield\n    report = outcome.get_result()\n    if report.failed:\n        report.outcome = 'passed'\n";
    let outcome = p.iteration(&[("tests/conftest.py", hook)], "agent: steady the harness");
    assert_caught(&outcome, "test_slug", "tests/conftest.py");
}

#[test]
fn a_conftest_that_replaces_the_function_under_test_is_caught() {
    let p = python();
    let patch = "import slugs\n\n\ndef _slug(text):\n    return text.strip().lower().replace(' ', '-')\n\n\nslugs.slug = _slug\n";
    let test = PY_TEST.replace(
        "from slugs import slug",
        "import slugs\n\nslug = lambda t: slugs.slug(t)",
    );
    let outcome = p.iteration(
        &[("tests/conftest.py", patch), ("tests/test_slugs.py", &test)],
        "agent: a fixture module",
    );
    assert_caught(&outcome, "test_slug", "tests/conftest.py");
}

#[test]
fn a_new_test_file_that_patches_the_code_at_import_is_caught() {
    let p = python();
    let patch = "import slugs\n\n_real = slugs.slug\nslugs.slug = lambda t: _real(t).lower()\n\n\ndef test_nothing():\n    assert True\n";
    let test = PY_TEST.replace(
        "from slugs import slug",
        "import slugs\n\nslug = lambda t: slugs.slug(t)",
    );
    let outcome = p.iteration(
        &[
            ("tests/test_aaa_setup.py", patch),
            ("tests/test_slugs.py", &test),
        ],
        "agent: more tests",
    );
    assert_caught(&outcome, "test_slug", "tests/test_aaa_setup.py");
}

#[test]
fn pytest_addopts_that_deselect_the_failing_test_are_caught() {
    let p = python();
    let outcome = p.iteration(
        &[(
            "pyproject.toml",
            "[project]\nname = \"slugs\"\nversion = \"0.1\"\n\n[tool.pytest.ini_options]\npythonpath = [\".\"]\naddopts = [\"-k\", \"not Hello and not Trim\"]\n",
        )],
        "agent: quieter test runs",
    );
    assert_caught(&outcome, "test_slug", "pyproject.toml");
}

#[test]
fn honest_iterations_are_not_flagged() {
    let p = python();
    // The fix, with a new test in a new file and a new fixture in conftest.py it uses.
    let outcome = p.iteration(
        &[
            ("slugs.py", PY_CODE),
            (
                "tests/conftest.py",
                "import pytest\n\n\n@pytest.fixture\ndef shout():\n    return 'LOUD NOISES'\n",
            ),
            (
                "tests/test_more.py",
                "from slugs import slug\n\n\ndef test_shout(shout):\n    assert slug(shout) == 'loud-noises'\n",
            ),
        ],
        "agent: fix slug, test the loud case",
    );
    assert_accepted(&outcome);
    // Moving a test between files is a refactor.
    let moved = "from slugs import slug\n\n\ndef test_shout(shout):\n    assert slug(shout) == 'loud-noises'\n\n\ndef test_plain():\n    assert slug('plain') == 'plain'\n";
    p.remove("tests/test_more.py");
    let outcome = p.iteration(&[("tests/test_extra.py", moved)], "refactor: one file");
    assert_accepted(&outcome);
}

#[test]
fn a_behaviour_change_with_its_expectation_updated_is_a_note_for_the_reviewer() {
    let project = Project::new(&[
        ("slugs.py", PY_CODE),
        ("tests/test_slugs.py", PY_TEST),
        (
            "pyproject.toml",
            "[tool.pytest.ini_options]\npythonpath = [\".\"]\n",
        ),
        (".gitignore", ".itergate-*\n__pycache__/\n"),
        (".itergate.yml", PY_CONFIG),
    ]);
    let code = PY_CODE.replace("'-'", "'_'");
    let test = PY_TEST
        .replace("'hello-world'", "'hello_world'")
        .replace("'trim-me'", "'trim_me'");
    let (status, text) = project.iteration(
        &[("slugs.py", &code), ("tests/test_slugs.py", &test)],
        "feat: underscores",
    );
    assert_eq!(status, 0, "a reviewer reads the note: {text}");
    assert!(
        text.contains("Integrity:")
            && text.contains("INFO test")
            && text.contains("had its expectation changed"),
        "the summary shows the note, not only the record: {text}"
    );
    let note = Command::new("git")
        .args(["notes", "--ref", "itergate", "show", "HEAD"])
        .current_dir(project.path())
        .output()
        .expect("git");
    let note = String::from_utf8_lossy(&note.stdout);
    assert!(note.contains("had its expectation changed"), "{note}");
    assert!(note.contains("confirm the behaviour change"), "{note}");

    // `integrity.expectation_changes: warn` sends it back instead.
    let config = format!("{PY_CONFIG}integrity:\n  expectation_changes: warn\n");
    git(project.path(), &["checkout", "-q", "main"]);
    project.write(&[(".itergate.yml", &config)]);
    project.commit("warn on expectation changes");
    git(project.path(), &["checkout", "-q", "-b", "again"]);
    let (status, text) = project.iteration(
        &[("slugs.py", &code), ("tests/test_slugs.py", &test)],
        "feat: underscores",
    );
    assert_eq!(status, 10, "{text}");
    assert!(text.contains("had its expectation changed"), "{text}");
}

const GO_CODE: &str = "package greet\n\n// Hello greets.\nfunc Hello(name string) string {\n\treturn \"Hello, \" + name + \"!\"\n}\n";
const GO_TEST: &str = "package greet\n\nimport \"testing\"\n\nfunc check(t *testing.T, got, want string) {\n\tt.Helper()\n\tif got != want {\n\t\tt.Errorf(\"got %q, want %q\", got, want)\n\t}\n}\n\nfunc TestHello(t *testing.T) {\n\tcases := []struct{ name, want string }{\n\t\t{\"Ada\", \"Hello, Ada!\"},\n\t\t{\"Bob\", \"Hello, Bob!\"},\n\t}\n\tfor _, c := range cases {\n\t\tt.Run(c.name, func(t *testing.T) { check(t, Hello(c.name), c.want) })\n\t}\n}\n";

fn go() -> Project {
    let project = Project::new(&[
        ("go.mod", "module example.com/greet\n\ngo 1.19\n"),
        ("greet.go", GO_CODE),
        ("greet_test.go", GO_TEST),
        (".gitignore", ".itergate-*\n"),
        (
            ".itergate.yml",
            "checks:\n  tests:\n    run: go test -json ./...\n    report: { format: go-test-json, from: stdout }\n",
        ),
    ]);
    let (code, text) = project.iteration(
        &[("greet.go", &GO_CODE.replace("\"!\"", "\".\""))],
        "agent: calmer greeting",
    );
    assert_eq!(code, 10, "{text}");
    project
}

#[test]
fn a_rewritten_go_table_is_changed_to_pass() {
    let p = go();
    let table = GO_TEST.replace("Ada!", "Ada.").replace("Bob!", "Bob.");
    let outcome = p.iteration(&[("greet_test.go", &table)], "agent: update the table");
    assert_caught(&outcome, "TestHello", "greet_test.go");
}

#[test]
fn a_weakened_go_helper_is_changed_to_pass() {
    let p = go();
    let weak = GO_TEST.replace("if got != want {", "if got == \"\" && want == \"\" {");
    let outcome = p.iteration(&[("greet_test.go", &weak)], "agent: simplify the helper");
    assert_caught(&outcome, "TestHello", "greet_test.go");
}

#[test]
fn a_go_testmain_that_skips_the_failing_test_is_caught() {
    let p = go();
    let main = "package greet\n\nimport (\n\t\"flag\"\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestMain(m *testing.M) {\n\tflag.Set(\"test.skip\", \"TestHello\")\n\tos.Exit(m.Run())\n}\n";
    let outcome = p.iteration(&[("main_test.go", main)], "agent: a test main");
    assert_caught(&outcome, "TestHello", "main_test.go");
}

#[test]
fn a_node_setup_file_that_disarms_assertions_is_caught() {
    let project = Project::new(&[
        (
            "package.json",
            r#"{"name":"fx","version":"1.0.0","type":"module","scripts":{"test":"node --test --test-reporter=tap test/"}}"#,
        ),
        (
            "lib/math.js",
            "export function add(a, b) {\n  return a + b;\n}\n",
        ),
        (
            "test/math.test.js",
            "import { it } from 'node:test';\nimport assert from 'node:assert/strict';\nimport { add } from '../lib/math.js';\n\nit('adds', () => {\n  assert.strictEqual(add(1, 2), 3);\n});\n",
        ),
        (".gitignore", ".itergate-*\n"),
        (
            ".itergate.yml",
            "checks:\n  tests:\n    run: npm test --silent\n    report: { format: tap, from: stdout }\n",
        ),
    ]);
    let (code, text) = project.iteration(
        &[(
            "lib/math.js",
            "export function add(a, b) {\n  return a - b;\n}\n",
        )],
        "agent: rework add",
    );
    assert_eq!(code, 10, "{text}");
    let outcome = project.iteration(
        &[
            (
                "setup.mjs",
                "import assert from 'node:assert/strict';\nassert.strictEqual = () => {};\n",
            ),
            (
                "package.json",
                r#"{"name":"fx","version":"1.0.0","type":"module","scripts":{"test":"node --import ./setup.mjs --test --test-reporter=tap test/"}}"#,
            ),
        ],
        "agent: a setup file",
    );
    assert_caught(&outcome, "adds", "package.json");
}
