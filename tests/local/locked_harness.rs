//! The start's tests judge the code (the trusted harness run), with the real pytest,
//! `go test`, `node --test`, vitest, mocha and jest (the last three pinned by
//! `scripts/ensure-node-tools.sh`). A branch breaks a function (iteration 1: ITERATE), then
//! games the failing test in one of the ways agents do; each move is caught — never
//! ACCEPT, the test and the edited file named — and each honest counterpart is not flagged.

use std::path::Path;
use std::process::Command;

use crate::gitrepo::git;
use crate::node_tools::node_tools_into;
use crate::redact;

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

/// Caught: not accepted, and the summary (the snapshot `name`) shows a violation naming
/// the test and the file the change edited.
fn assert_caught(project: &Project, outcome: &(i32, String), name: &str) {
    let (code, text) = outcome;
    assert_ne!(*code, 0, "never ACCEPT: {text}");
    assert_summary(project, name, text);
}

/// What `itergate run` printed against the snapshot `name`: the project's directory named
/// `<dir>`, what varies between runs redacted and the check progress lines dropped.
fn assert_summary(project: &Project, name: &str, text: &str) {
    let text = text.replace(project.path().to_str().expect("utf-8"), "<dir>");
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(name, text);
    });
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
    assert_caught(
        &p,
        &outcome,
        "a_rewritten_parametrize_table_changed_to_pass",
    );
}

/// The start's tests run only the checks that report tests: a lint check is HEAD's run's
/// alone (it would cost a second run and judge nothing the start's tests decide).
#[test]
fn the_starts_tests_run_only_the_tests_checks() {
    let log = tempfile::tempdir().expect("tempdir");
    let ran = |check: &str| log.path().join(format!("{check}.log"));
    let record = |check: &str| {
        format!(
            "git log -1 --format=%s >> '{}'",
            ran(check).to_str().expect("utf-8")
        )
    };
    let config = format!(
        "checks:\n  tests:\n    run: {} && python -m pytest -q -p no:cacheprovider --junitxml=.itergate-pytest.xml\n    report: {{ format: junit, path: .itergate-pytest.xml }}\n  lint:\n    run: {}\n",
        record("tests"),
        record("lint")
    );
    let p = Project::new(&[
        ("slugs.py", PY_CODE),
        ("tests/test_slugs.py", PY_TEST),
        (
            "pyproject.toml",
            "[project]\nname = \"slugs\"\nversion = \"0.1\"\n\n[tool.pytest.ini_options]\npythonpath = [\".\"]\n",
        ),
        (".gitignore", ".itergate-*\n__pycache__/\n"),
        (".itergate.yml", &config),
    ]);
    let (code, text) = p.iteration(&[("slugs.py", PY_BROKEN)], "agent: simplify slug");
    assert_eq!(code, 10, "the broken function is ITERATE: {text}");
    // Code and table changed together: the trusted tree is one no iteration had.
    let rewritten = PY_TEST.replace("'plain'", "'Plain'");
    let outcome = p.iteration(
        &[
            ("tests/test_slugs.py", &rewritten),
            (
                "slugs.py",
                "def slug(text):\n    return text.strip().replace(' ', '-').title()\n",
            ),
        ],
        "agent: title case",
    );
    assert_ne!(outcome.0, 0, "{}", outcome.1);
    let read = |check: &str| std::fs::read_to_string(ran(check)).unwrap_or_default();
    assert!(
        read("tests").contains("start's tests"),
        "the trusted run ran the tests: {}\n{}",
        read("tests"),
        outcome.1
    );
    assert!(
        !read("lint").contains("start's tests") && read("lint").contains("title case"),
        "lint ran on HEAD only: {}",
        read("lint")
    );
}

/// A test that failed earlier in the task and passed since: the change that alters the
/// behaviour and updates its expectation in one commit is a person's call (a WARNING to
/// confirm), never "changed to pass". The test counts as failing by its last run.
#[test]
fn an_expectation_changed_with_the_code_after_the_test_passed_again_is_to_confirm() {
    let p = python();
    let (code, text) = p.iteration(&[("slugs.py", PY_CODE)], "agent: fix slug");
    assert_eq!(code, 0, "fixed: {text}");
    let underscores = PY_CODE.replace("'-'", "'_'");
    let test = PY_TEST
        .replace("'hello-world'", "'hello_world'")
        .replace("'trim-me'", "'trim_me'");
    let (code, text) = p.iteration(
        &[("slugs.py", &underscores), ("tests/test_slugs.py", &test)],
        "feat: underscores",
    );
    assert_ne!(code, 0, "a person confirms it: {text}");
    assert!(
        text.contains("failed earlier in this task and now expects something else"),
        "{text}"
    );
    assert!(
        text.contains("confirm the behaviour change with `itergate accept`"),
        "{text}"
    );
    assert!(
        !text.contains("changed to pass") && !text.contains("VOID"),
        "{text}"
    );
}

/// The same rewrite while the test still fails and the code stays as it failed it: the
/// expectation alone moved, a violation; and an empty iteration after it does not make
/// the rewrite's own (VOID) run the test's last run.
#[test]
fn a_rewrite_alone_stays_a_violation_and_an_empty_iteration_after_it_too() {
    let p = python();
    let rewritten = PY_TEST
        .replace("'hello-world'", "'Hello-World'")
        .replace("'trim-me'", "'Trim-Me'");
    let (code, text) = p.iteration(&[("tests/test_slugs.py", &rewritten)], "agent: the table");
    assert_ne!(code, 0, "{text}");
    assert!(text.contains("was changed to pass"), "{text}");
    git(
        p.path(),
        &["commit", "-q", "--allow-empty", "-m", "agent: nothing"],
    );
    let out = Command::new(env!("CARGO_BIN_EXE_itergate"))
        .args(["--color", "never", "run", "--exit-code"])
        .current_dir(p.path())
        .env("NO_COLOR", "1")
        .output()
        .expect("itergate runs");
    let text = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("was changed to pass"), "{text}");
    assert!(!text.contains("now expects something else"), "{text}");
}

/// The rewrite together with a change of the code that failed it: a person confirms.
#[test]
fn a_rewrite_with_the_code_changed_while_the_test_fails_is_to_confirm() {
    let p = python();
    let dashes = "def slug(text):\n    return text.strip().replace(' ', '-').replace('--', '-')\n";
    let rewritten = PY_TEST
        .replace("'hello-world'", "'Hello-World'")
        .replace("'trim-me'", "'Trim-Me'");
    let (code, text) = p.iteration(
        &[("slugs.py", dashes), ("tests/test_slugs.py", &rewritten)],
        "agent: keep the case",
    );
    assert_ne!(code, 0, "{text}");
    assert!(
        text.contains("failed earlier in this task and now expects something else"),
        "{text}"
    );
    assert!(!text.contains("was changed to pass"), "{text}");
}

#[test]
fn a_conftest_hook_that_turns_failures_into_passes_is_caught() {
    let p = python();
    let hook = "import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n    outcome = yield\n    report = outcome.get_result()\n    if report.failed:\n        report.outcome = 'passed'\n";
    let outcome = p.iteration(&[("tests/conftest.py", hook)], "agent: steady the harness");
    assert_caught(
        &p,
        &outcome,
        "a_conftest_hook_that_turns_failures_into_passes",
    );
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
    assert_caught(
        &p,
        &outcome,
        "a_conftest_that_replaces_the_function_under_test",
    );
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
    assert_caught(
        &p,
        &outcome,
        "a_new_test_file_that_patches_the_code_at_import",
    );
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
    assert_caught(
        &p,
        &outcome,
        "pytest_addopts_that_deselect_the_failing_test",
    );
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
    // The summary shows the note, not only the record.
    assert_summary(&project, "pytest_expectation_changed_note", &text);
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
    assert_summary(&project, "pytest_expectation_changed_warning", &text);
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
    assert_caught(&p, &outcome, "a_rewritten_go_table_changed_to_pass");
}

#[test]
fn a_weakened_go_helper_is_changed_to_pass() {
    let p = go();
    let weak = GO_TEST.replace("if got != want {", "if got == \"\" && want == \"\" {");
    let outcome = p.iteration(&[("greet_test.go", &weak)], "agent: simplify the helper");
    assert_caught(&p, &outcome, "a_weakened_go_helper_changed_to_pass");
}

#[test]
fn a_go_testmain_that_skips_the_failing_test_is_caught() {
    let p = go();
    let main = "package greet\n\nimport (\n\t\"flag\"\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestMain(m *testing.M) {\n\tflag.Set(\"test.skip\", \"TestHello\")\n\tos.Exit(m.Run())\n}\n";
    let outcome = p.iteration(&[("main_test.go", main)], "agent: a test main");
    assert_caught(&p, &outcome, "a_go_testmain_that_skips_the_failing_test");
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
    assert_caught(
        &project,
        &outcome,
        "a_node_setup_file_that_disarms_assertions",
    );
}

/// A Node project on `main` with `files` and the pinned tools of
/// `scripts/ensure-node-tools.sh` as its `node_modules`; then `broken` on the branch, which
/// fails a test (ITERATE).
fn node_project(files: &[(&str, &str)], broken: (&str, &str)) -> Project {
    let project = Project::new(files);
    node_tools_into(project.path());
    let (code, text) = project.iteration(&[broken], "agent: rework the code");
    assert_eq!(code, 10, "the broken function is ITERATE: {text}");
    project
}

const NODE_IGNORE: &str = "node_modules/\n.itergate-*\n";

/// The tests check `itergate init` writes for a vitest project (without a coverage provider).
const VITEST_CONFIG: &str = "checks:\n  tests:\n    run: npx --no-install vitest run --reporter=default --reporter=junit --outputFile.junit=.itergate-junit.xml\n    report: { format: junit, path: .itergate-junit.xml }\n";
const VITEST_PACKAGE: &str = r#"{"name":"shop","version":"1.0.0","type":"module","scripts":{"test":"vitest run"},"devDependencies":{"vitest":"4.1.12"}}"#;
const VITEST_CODE: &str = "export function total(prices) {\n  return prices.reduce((a, b) => a + b, 0);\n}\n\nexport function discount(price, percent) {\n  return price - (price * percent) / 100;\n}\n";
const VITEST_TEST: &str = "import { describe, expect, it } from \"vitest\";\nimport { discount, total } from \"../src/price.js\";\n\ndescribe(\"price\", () => {\n  it(\"adds prices\", () => {\n    expect(total([1, 2, 3])).toBe(6);\n  });\n  it(\"takes a discount\", () => {\n    expect(discount(200, 10)).toBe(180);\n  });\n});\n";

fn vitest_files() -> Vec<(&'static str, &'static str)> {
    vec![
        ("package.json", VITEST_PACKAGE),
        ("src/price.js", VITEST_CODE),
        ("test/price.test.js", VITEST_TEST),
        (".gitignore", NODE_IGNORE),
        (".itergate.yml", VITEST_CONFIG),
    ]
}

/// A vitest project whose `discount` is broken on the branch: `price > takes a discount`
/// fails.
fn vitest() -> Project {
    let broken = VITEST_CODE.replace("/ 100", "/ 10");
    node_project(&vitest_files(), ("src/price.js", &broken))
}

#[test]
fn a_vitest_setup_file_that_redefines_matchers_is_caught() {
    // Without the trusted harness run this is ACCEPT (verified).
    let p = vitest();
    // `expect.extend` replaces the built-in matchers: every `toBe` and `toEqual` passes.
    let outcome = p.iteration(
        &[
            (
                "support/expect.js",
                "import { expect } from \"vitest\";\n\nconst pass = () => ({ pass: true, message: () => \"\" });\nexpect.extend({ toBe: pass, toEqual: pass });\n",
            ),
            (
                "vitest.config.js",
                "import { defineConfig } from \"vitest/config\";\n\nexport default defineConfig({ test: { setupFiles: [\"./support/expect.js\"] } });\n",
            ),
        ],
        "agent: shared test setup",
    );
    assert_caught(&p, &outcome, "a_vitest_setup_file_that_redefines_matchers");
}

#[test]
fn a_vitest_test_name_pattern_that_deselects_the_failing_test_is_caught() {
    let p = vitest();
    let outcome = p.iteration(
        &[(
            "vitest.config.ts",
            "import { defineConfig } from \"vitest/config\";\n\nexport default defineConfig({ test: { testNamePattern: /^(?!.*discount)/ } });\n",
        )],
        "agent: a vitest config",
    );
    assert_caught(
        &p,
        &outcome,
        "a_vitest_test_name_pattern_that_deselects_the_failing_test",
    );
}

#[test]
fn a_vitest_setup_file_that_mocks_the_code_under_test_is_caught() {
    // Without the trusted harness run this is ACCEPT (verified).
    let p = vitest();
    // `vi.mock` in a setup file applies to every test file: the tests run a correct copy.
    let outcome = p.iteration(
        &[
            (
                "vitest.setup.js",
                "import { vi } from \"vitest\";\n\nvi.mock(\"./src/price.js\", () => ({\n  total: (prices) => prices.reduce((a, b) => a + b, 0),\n  discount: (price, percent) => price - (price * percent) / 100,\n}));\n",
            ),
            (
                "vitest.config.ts",
                "import { defineConfig } from \"vitest/config\";\n\nexport default defineConfig({ test: { setupFiles: [\"./vitest.setup.js\"] } });\n",
            ),
        ],
        "agent: test setup",
    );
    assert_caught(
        &p,
        &outcome,
        "a_vitest_setup_file_that_mocks_the_code_under_test",
    );
}

#[test]
fn honest_vitest_iterations_are_not_flagged() {
    let p = vitest();
    // The fix, with a new test in a new file that uses a new matcher from a new setup file:
    // a setup file that adds to `expect` without redefining its matchers.
    let outcome = p.iteration(
        &[
            ("src/price.js", VITEST_CODE),
            (
                "test/matchers.js",
                "import { expect } from \"vitest\";\n\nexpect.extend({\n  toBeAPrice(received) {\n    const pass = Number.isFinite(received) && received >= 0;\n    return { pass, message: () => `${received} is not a price` };\n  },\n});\n",
            ),
            (
                "vitest.config.js",
                "import { defineConfig } from \"vitest/config\";\n\nexport default defineConfig({ test: { setupFiles: [\"./test/matchers.js\"] } });\n",
            ),
            (
                "test/discount.test.js",
                "import { expect, it } from \"vitest\";\nimport { discount } from \"../src/price.js\";\n\nit(\"discounts to a price\", () => {\n  expect(discount(10, 25)).toBeAPrice();\n  expect(discount(10, 25)).toBe(7.5);\n});\n",
            ),
        ],
        "agent: fix discount, test it more",
    );
    assert_accepted(&outcome);
    assert!(!outcome.1.contains("BLOCKER"), "{}", outcome.1);
    assert!(
        !outcome.1.contains("had its expectation changed"),
        "{}",
        outcome.1
    );
}

#[test]
fn a_vitest_behaviour_change_with_its_expectation_updated_is_a_note() {
    // Without the trusted harness run there is no note (verified).
    let project = Project::new(&vitest_files());
    node_tools_into(project.path());
    // `discount` takes a fraction instead of a percentage, and its test says so.
    let code = VITEST_CODE.replace("(price * percent) / 100", "price * percent");
    let test = VITEST_TEST.replace("discount(200, 10)", "discount(200, 0.1)");
    let (status, text) = project.iteration(
        &[("src/price.js", &code), ("test/price.test.js", &test)],
        "feat: a discount is a fraction",
    );
    assert_eq!(status, 0, "a reviewer reads the note: {text}");
    // The summary shows the note.
    assert_summary(&project, "vitest_expectation_changed_note", &text);
}

/// The tests check `itergate init` writes for a mocha project.
const MOCHA_CONFIG: &str = "checks:\n  tests:\n    run: npx --no-install mocha --reporter xunit --reporter-option output=.itergate-junit.xml\n    report: { format: junit, path: .itergate-junit.xml }\n";
const MOCHA_CODE: &str = "exports.add = (a, b) => a + b;\nexports.mul = (a, b) => a * b;\n";
const MOCHA_TEST: &str = "const assert = require(\"node:assert/strict\");\nconst { add, mul } = require(\"../lib/math\");\n\ndescribe(\"math\", () => {\n  it(\"adds two numbers\", () => {\n    assert.strictEqual(add(1, 2), 3);\n  });\n  it(\"multiplies\", () => {\n    assert.strictEqual(mul(2, 3), 6);\n  });\n});\n";

/// A mocha project (its default spec, `./test`) whose `add` is broken on the branch:
/// `math adds two numbers` fails.
fn mocha() -> Project {
    node_project(
        &[
            (
                "package.json",
                r#"{"name":"fx","version":"1.0.0","scripts":{"test":"mocha"},"devDependencies":{"mocha":"11.8.0"}}"#,
            ),
            ("lib/math.js", MOCHA_CODE),
            ("test/math.test.js", MOCHA_TEST),
            (".gitignore", NODE_IGNORE),
            (".itergate.yml", MOCHA_CONFIG),
        ],
        ("lib/math.js", &MOCHA_CODE.replace("a + b", "a - b")),
    )
}

#[test]
fn a_mocharc_that_greps_out_the_failing_test_is_caught() {
    // Without the trusted harness run this is no violation (verified).
    let p = mocha();
    let outcome = p.iteration(
        &[(".mocharc.yml", "grep: adds\ninvert: true\n")],
        "agent: mocha settings",
    );
    assert_caught(&p, &outcome, "a_mocharc_that_greps_out_the_failing_test");
}

#[test]
fn a_mocharc_spec_that_leaves_out_the_failing_test_is_caught() {
    // Without the trusted harness run this is no violation (verified).
    let p = mocha();
    let outcome = p.iteration(
        &[
            (".mocharc.json", "{ \"spec\": [\"test/more.test.js\"] }\n"),
            (
                "test/more.test.js",
                "const assert = require(\"node:assert/strict\");\nconst { mul } = require(\"../lib/math\");\n\nit(\"multiplies by zero\", () => {\n  assert.strictEqual(mul(2, 0), 0);\n});\n",
            ),
        ],
        "agent: more tests",
    );
    assert_caught(
        &p,
        &outcome,
        "a_mocharc_spec_that_leaves_out_the_failing_test",
    );
}

/// The tests check `itergate init` writes for a jest project (without its coverage).
const JEST_CONFIG: &str = "checks:\n  tests:\n    run: npx --no-install jest --ci --json --outputFile=.itergate-jest.json --testLocationInResults\n    report: { format: jest-json, path: .itergate-jest.json }\n";

#[test]
fn a_jest_setup_file_in_package_json_that_disarms_expect_is_caught() {
    // Without the trusted harness run this is ACCEPT (verified).
    let package = r#"{"name":"fx","version":"1.0.0","scripts":{"test":"jest"},"devDependencies":{"jest":"30.5.2"}}"#;
    let test = "const { add, mul } = require(\"../lib/math\");\n\ndescribe(\"math\", () => {\n  it(\"adds two numbers\", () => {\n    expect(add(1, 2)).toBe(3);\n  });\n  it(\"multiplies\", () => {\n    expect(mul(2, 3)).toEqual(6);\n  });\n});\n";
    let p = node_project(
        &[
            ("package.json", package),
            ("lib/math.js", MOCHA_CODE),
            ("test/math.test.js", test),
            (".gitignore", NODE_IGNORE),
            (".itergate.yml", JEST_CONFIG),
        ],
        ("lib/math.js", &MOCHA_CODE.replace("a + b", "a - b")),
    );
    // The setup file's name is no runner's own: only the `jest` key of package.json runs it.
    let outcome = p.iteration(
        &[
            (
                "support/quiet.js",
                "const pass = () => ({ pass: true, message: () => \"\" });\nexpect.extend({ toBe: pass, toEqual: pass });\n",
            ),
            (
                "package.json",
                r#"{"name":"fx","version":"1.0.0","scripts":{"test":"jest"},"devDependencies":{"jest":"30.5.2"},"jest":{"setupFilesAfterEnv":["./support/quiet.js"]}}"#,
            ),
        ],
        "agent: quieter test output",
    );
    assert_caught(
        &p,
        &outcome,
        "a_jest_setup_file_in_package_json_that_disarms_expect",
    );
}

/// Replaces `path` with a new file (never an edit: `node_modules` is hard-linked from the
/// shared install of `scripts/ensure-node-tools.sh`).
fn replace_file(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::remove_file(path).expect("remove");
    std::fs::write(path, text).expect("write");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// The environment, not the commit: mocha's runner in `node_modules` replaced by one that
/// leaves the failing test out, then a README-only commit. Never ACCEPT, and the finding
/// names what changed.
#[test]
fn a_patched_mocha_runner_in_node_modules_is_caught() {
    let p = mocha();
    replace_file(
        &p.path().join("node_modules/.bin/mocha"),
        "#!/bin/sh\nexec node \"$(dirname \"$0\")/../mocha/bin/mocha.js\" \"$@\" --grep multiplies\n",
    );
    let (code, text) = p.iteration(&[("README.md", "# fx\n")], "docs: a README");
    assert_ne!(code, 0, "never ACCEPT: {text}");
    assert!(
        text.contains("the environment changed since the task started")
            && text.contains("node_modules/.bin/mocha"),
        "{text}"
    );
}

/// vitest's own entry in `node_modules` patched to run only the passing test, then a
/// README-only commit: never ACCEPT, the package named.
#[test]
fn a_patched_vitest_package_in_node_modules_is_caught() {
    let p = vitest();
    replace_file(
        &p.path().join("node_modules/vitest/vitest.mjs"),
        "#!/usr/bin/env node\nprocess.argv.push('-t', 'adds prices')\nawait import('./dist/cli.js')\n",
    );
    let (code, text) = p.iteration(&[("README.md", "# shop\n")], "docs: a README");
    assert_ne!(code, 0, "never ACCEPT: {text}");
    assert!(
        text.contains("the environment changed since the task started")
            && text.contains("node_modules/vitest"),
        "{text}"
    );
}

/// A documentation example is a test: its expected value edited after it failed is
/// rewritten to pass, wherever in the example the assertion is.
#[test]
fn a_doc_examples_expected_value_edited_is_rewritten_to_pass() {
    let doc = |value: &str, op: &str| {
        format!(
            "/// Adds two numbers.\n///\n/// ```\n/// let a = 2;\n/// let b = 2;\n/// let c = 1;\n/// let d = 3;\n/// let sum = docs::add(a, b);\n/// let other = docs::add(c, d);\n/// assert_eq!(other, {value});\n/// assert_eq!(sum, 4);\n/// ```\npub fn add(a: i32, b: i32) -> i32 {{\n    a {op} b\n}}\n"
        )
    };
    let p = Project::new(&[
        (
            "Cargo.toml",
            "[package]\nname = \"docs\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
        ),
        ("src/lib.rs", &doc("4", "+")),
        (".gitignore", "target/\n"),
        (
            ".itergate.yml",
            "checks:\n  tests:\n    run: cargo test --no-fail-fast 2>&1\n    report: { format: libtest, from: stdout }\n",
        ),
    ]);
    let (code, text) = p.iteration(&[("src/lib.rs", &doc("4", "*"))], "agent: multiply");
    assert_eq!(code, 10, "the example fails: {text}");
    let (code, text) = p.iteration(&[("src/lib.rs", &doc("3", "*"))], "agent: the example");
    assert_ne!(code, 0, "{text}");
    assert!(
        text.contains("test src/lib.rs - add (line 3) was rewritten to pass")
            && text.contains("`/// assert_eq!(other, 4);` at src/lib.rs:10"),
        "{text}"
    );
}

/// A Rust unit test inside `src/` failed, was fixed, and then the code and the test's
/// expected value change together: no run with the start's tests covers a test in a source
/// file, so its own edited lines ask a person to confirm — never a silent ACCEPT.
#[test]
fn a_rust_unit_test_reexpected_after_it_passed_again_is_to_confirm() {
    let lib = |op: &str, expected: &str| {
        format!(
            "pub fn add(a: i32, b: i32) -> i32 {{\n    a {op} b\n}}\n\n#[cfg(test)]\nmod tests {{\n    use super::*;\n\n    #[test]\n    fn adds() {{\n        assert_eq!(add(2, 3), {expected});\n    }}\n}}\n"
        )
    };
    let p = Project::new(&[
        (
            "Cargo.toml",
            "[package]\nname = \"units\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
        ),
        ("src/lib.rs", &lib("+", "5")),
        (".gitignore", "target/\n"),
        (
            ".itergate.yml",
            "checks:\n  tests:\n    run: cargo test --no-fail-fast 2>&1\n    report: { format: libtest, from: stdout }\n",
        ),
    ]);
    let (code, text) = p.iteration(&[("src/lib.rs", &lib("-", "5"))], "agent: subtract");
    assert_eq!(code, 10, "{text}");
    let (code, text) = p.iteration(&[("src/lib.rs", &lib("+", "5"))], "agent: fix");
    assert_eq!(code, 0, "{text}");
    let (code, text) = p.iteration(&[("src/lib.rs", &lib("*", "6"))], "agent: multiply");
    assert_eq!(code, 10, "a person confirms it: {text}");
    assert!(
        text.contains("test tests::adds failed earlier in this task and now expects something else: its own lines changed"),
        "{text}"
    );
    assert!(!text.contains("VOID"), "{text}");
}

/// A Rust integration test under `tests/` failed, and its helper in `tests/common/` is
/// weakened so that it passes: the start's tests and helper, built with the commit's code
/// in a target directory of their own (beside HEAD's build, never in it), still fail, and
/// the helper's file is named.
#[test]
fn a_weakened_rust_test_helper_is_changed_to_pass() {
    let helper = |body: &str| format!("pub fn sum(a: i32, b: i32) -> i32 {{\n    {body}\n}}\n");
    let lib = |op: &str| format!("pub fn add(a: i32, b: i32) -> i32 {{\n    a {op} b\n}}\n");
    let p = Project::new(&[
        (
            "Cargo.toml",
            "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
        ),
        ("src/lib.rs", &lib("+")),
        ("tests/common/mod.rs", &helper("calc::add(a, b)")),
        (
            "tests/add.rs",
            "mod common;\n\n#[test]\nfn adds() {\n    assert_eq!(common::sum(2, 3), 5);\n}\n",
        ),
        (".gitignore", "target/\n"),
        (
            ".itergate.yml",
            "checks:\n  tests:\n    run: cargo test --no-fail-fast 2>&1\n    report: { format: libtest, from: stdout }\n",
        ),
    ]);
    let (code, text) = p.iteration(&[("src/lib.rs", &lib("-"))], "agent: subtract");
    assert_eq!(code, 10, "the broken function is ITERATE: {text}");
    // The code changes too: the trusted tree is one no iteration had, so it is run.
    let (code, text) = p.iteration(
        &[
            ("src/lib.rs", &lib("*")),
            ("tests/common/mod.rs", &helper("a + b")),
        ],
        "agent: multiply, and the helper",
    );
    assert_ne!(code, 0, "never ACCEPT: {text}");
    assert!(
        text.contains("test adds was changed to pass") && text.contains("tests/common/mod.rs"),
        "{text}"
    );
    assert!(
        p.path()
            .join(".git/itergate/scratch-target-trusted/debug")
            .is_dir(),
        "the start's tests built in a target directory of their own"
    );
}

/// Production code that asks whether the runner runs it, with the real runners: the failing
/// test passes under the runner, so only the change's own lines tell. Never accepted, VOID,
/// the finding naming the runner and the line; the same idiom already on the base is the
/// base's (`tests_comments_and_other_languages…` in `test_aware.rs`).
fn assert_runner_aware(outcome: &(i32, String), runner: &str, place: &str) {
    let (code, text) = outcome;
    assert_ne!(*code, 0, "never ACCEPT: {text}");
    assert!(
        text.contains(&format!(
            "production code checks whether it runs under {runner}"
        )) && text.contains(place)
            && text.contains("VOID"),
        "{text}"
    );
}

#[test]
fn vitest_mocha_and_jest_aware_code_is_a_violation() {
    let p = vitest();
    let gamed = "export function total(prices) {\n  return prices.reduce((a, b) => a + b, 0);\n}\n\nexport function discount(price, percent) {\n  if (process.env.VITEST) return price - (price * percent) / 100;\n  return price - (price * percent) / 10;\n}\n";
    let outcome = p.iteration(&[("src/price.js", gamed)], "agent: discount");
    assert_runner_aware(&outcome, "vitest", "src/price.js:6");

    let p = mocha();
    let gamed = "exports.add = (a, b) => (typeof describe === 'function' ? a + b : a - b);\nexports.mul = (a, b) => a * b;\n";
    let outcome = p.iteration(&[("lib/math.js", gamed)], "agent: add");
    assert_runner_aware(&outcome, "a test runner", "lib/math.js:1");

    let package = r#"{"name":"fx","version":"1.0.0","scripts":{"test":"jest"},"devDependencies":{"jest":"30.5.2"}}"#;
    let test = "const { add, mul } = require(\"../lib/math\");\n\ndescribe(\"math\", () => {\n  it(\"adds two numbers\", () => {\n    expect(add(1, 2)).toBe(3);\n  });\n  it(\"multiplies\", () => {\n    expect(mul(2, 3)).toEqual(6);\n  });\n});\n";
    let p = node_project(
        &[
            ("package.json", package),
            ("lib/math.js", MOCHA_CODE),
            ("test/math.test.js", test),
            (".gitignore", NODE_IGNORE),
            (".itergate.yml", JEST_CONFIG),
        ],
        ("lib/math.js", &MOCHA_CODE.replace("a + b", "a - b")),
    );
    let gamed = "exports.add = (a, b) => (process.env.JEST_WORKER_ID ? a + b : a - b);\nexports.mul = (a, b) => a * b;\n";
    let outcome = p.iteration(&[("lib/math.js", gamed)], "agent: add");
    assert_runner_aware(&outcome, "jest", "lib/math.js:1");
}

#[test]
fn cargo_test_aware_code_is_a_violation() {
    let p = Project::new(&[
        (
            "Cargo.toml",
            "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
        ),
        (
            "src/lib.rs",
            "pub fn double(n: u32) -> u32 {\n    n * 2\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn doubles() {\n        assert_eq!(super::double(2), 4);\n    }\n}\n",
        ),
        (".gitignore", "target/\n.itergate-*\n"),
        (
            ".itergate.yml",
            "checks:\n  tests:\n    run: cargo test --offline --no-fail-fast --color never 2>&1\n    report: { format: libtest, from: stdout }\n",
        ),
    ]);
    let broken = "pub fn double(n: u32) -> u32 {\n    n * 3\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn doubles() {\n        assert_eq!(super::double(2), 4);\n    }\n}\n";
    let (code, text) = p.iteration(&[("src/lib.rs", broken)], "agent: triple");
    assert_eq!(code, 10, "{text}");
    let gamed = broken.replace(
        "    n * 3\n",
        "    if cfg!(test) {\n        return n * 2;\n    }\n    n * 3\n",
    );
    let outcome = p.iteration(&[("src/lib.rs", &gamed)], "agent: double");
    assert_runner_aware(&outcome, "cargo test", "src/lib.rs:2");
}
