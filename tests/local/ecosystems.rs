//! `itergate init && itergate run` on small Go and node:test projects, with the real `go`
//! and `node` (`scripts/ensure-go.sh` installs Go where it is missing): a broken test is
//! named at its file:line with its values, an untested new function is asked for a test,
//! a vet finding is located, a base that already fails hides only its own failures, and a
//! failing node:test test that is skipped or rewritten to pass is a violation. A vitest +
//! tsc + eslint project (the pinned tools of `scripts/ensure-node-tools.sh`) is measured on
//! tests, coverage, lint and types, and a coverage report it did not write is unmeasured.

use std::path::Path;
use std::process::{Command, Output};

use crate::node_tools::node_tools_into;
use crate::redact;

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn itergate(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_itergate"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env("GOFLAGS", "-mod=mod")
        .output()
        .expect("itergate runs")
}

fn write(dir: &Path, file: &str, text: &str) {
    let path = dir.join(file);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

fn commit(dir: &Path, message: &str) {
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", message]);
}

/// The revision prompt's items (its `<checker_issues>` YAML): what a snapshot shows.
fn items(prompt: &str) -> String {
    let start = prompt
        .find("```yaml\n")
        .map_or(0, |i| i + "```yaml\n".len());
    let end = prompt[start..]
        .find("```")
        .map_or(prompt.len(), |i| start + i);
    prompt[start..end].trim_end().to_string()
}

/// `run --exit-code`: the status and the revision prompt (empty when none was written).
fn run(dir: &Path) -> (i32, String, String) {
    let out = itergate(dir, &["--color", "never", "run", "--exit-code"]);
    let prompt =
        std::fs::read_to_string(dir.join(".git/itergate/revision-prompt.md")).unwrap_or_default();
    let _ = std::fs::remove_file(dir.join(".git/itergate/revision-prompt.md"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), prompt, text)
}

const GO_THING: &str = "package thing\n\n// Inc adds one.\nfunc Inc(n int) int {\n\treturn n + 1\n}\n\n// Twice doubles.\nfunc Twice(n int) int {\n\treturn n * 2\n}\n";

const GO_TEST: &str = "package thing\n\nimport \"testing\"\n\nfunc TestInc(t *testing.T) {\n\tif got := Inc(1); got != 2 {\n\t\tt.Errorf(\"Inc(1) = %d, want 2\", got)\n\t}\n}\n\nfunc TestTwice(t *testing.T) {\n\tfor _, n := range []int{1, 2, 3} {\n\t\tif got := Twice(n); got != n*2 {\n\t\t\tt.Errorf(\"Twice(%d) = %d, want %d\", n, got, n*2)\n\t\t}\n\t}\n}\n";

fn go_module() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path();
    git(p, &["init", "-q", "-b", "main"]);
    write(p, "go.mod", "module example.com/shop\n\ngo 1.19\n");
    write(p, "thing/thing.go", GO_THING);
    write(p, "thing/thing_test.go", GO_TEST);
    write(p, ".gitignore", ".itergate-*\n");
    let init = itergate(p, &["init", "--no-verify"]);
    assert!(
        init.status.success(),
        "{}",
        String::from_utf8_lossy(&init.stderr)
    );
    commit(p, "base");
    dir
}

#[test]
fn a_go_module_is_measured_on_tests_coverage_and_vet() {
    let dir = go_module();
    let p = dir.path();
    let config = std::fs::read_to_string(p.join(".itergate.yml")).expect("written");
    assert!(config.contains("go test -json -coverprofile="), "{config}");
    assert!(config.contains("go-vet"), "{config}");
    git(p, &["checkout", "-q", "-b", "agent"]);

    // A broken function: the failing test by name, file:line and values.
    write(p, "thing/thing.go", &GO_THING.replace("n * 2", "n * 3"));
    commit(p, "triple");
    let (status, prompt, text) = run(p);
    assert_eq!(status, 10, "{text}");
    insta::with_settings!({ filters => redact::filters() }, {
        insta::assert_snapshot!(items(&prompt), @r"
            - dimension: tests
              severity: BLOCKER
              finding: 'test thing::TestTwice failed: Twice(1) = 3, want 2'
              affected_field: thing/thing_test.go:14
            ");
    });

    // Fixed, plus an untested exported function: asked for a test at its lines.
    write(
        p,
        "thing/thing.go",
        &format!("{GO_THING}\n// Halve halves.\nfunc Halve(n int) int {{\n\treturn n / 2\n}}\n"),
    );
    commit(p, "halve");
    let (status, prompt, text) = run(p);
    assert_eq!(status, 10, "{text}");
    insta::with_settings!({ filters => redact::filters() }, {
        insta::assert_snapshot!(items(&prompt), @r"
            - dimension: coverage
              severity: WARNING
              finding: changed lines not covered by any test
              affected_field: thing/thing.go:14-16
              suggested_fix: add a test that exercises these lines
            ");
    });

    // Its test, and a vet finding in new code.
    write(
        p,
        "thing/halve_test.go",
        "package thing\n\nimport (\n\t\"fmt\"\n\t\"testing\"\n)\n\nfunc TestHalve(t *testing.T) {\n\tif Halve(4) != 2 {\n\t\tt.Error(fmt.Sprintf(\"%d\", \"four\"))\n\t}\n}\n",
    );
    commit(p, "test halve");
    let (status, prompt, text) = run(p);
    assert_eq!(status, 10, "{text}");
    insta::with_settings!({ filters => redact::filters() }, {
        insta::assert_snapshot!(items(&prompt), @r#"
            - dimension: tests
              severity: BLOCKER
              finding: 'test example.com/shop/thing errored: thing/halve_test.go:10:24: fmt.Sprintf format %d has arg "four" of wrong type string'
              affected_field: thing/halve_test.go:10
            - dimension: code_quality
              severity: BLOCKER
              finding: 'vet: fmt.Sprintf format %d has arg "four" of wrong type string'
              affected_field: thing/halve_test.go:10
            "#);
    });

    write(
        p,
        "thing/halve_test.go",
        "package thing\n\nimport \"testing\"\n\nfunc TestHalve(t *testing.T) {\n\tif Halve(4) != 2 {\n\t\tt.Error(\"Halve(4) != 2\")\n\t}\n}\n",
    );
    commit(p, "vet fixed");
    let (status, _, text) = run(p);
    assert_eq!(status, 0, "{text}");
    let score = itergate(p, &["score", "--format", "json"]);
    let record: serde_json::Value =
        serde_json::from_slice(&score.stdout).expect("score prints JSON");
    for dimension in ["tests_passing", "code_quality"] {
        assert!(
            record["scores"][dimension].is_number(),
            "{dimension} unmeasured: {record}"
        );
    }
    // The last change touched a test only: no patch to cover, the project's coverage read.
    assert!(
        record["metrics"]["coverage.project"].is_number(),
        "{record}"
    );
}

#[test]
fn a_go_base_that_fails_hides_only_its_own_failure() {
    let dir = go_module();
    let p = dir.path();
    // The base's debt: TestInc fails.
    write(p, "thing/thing.go", &GO_THING.replace("n + 1", "n + 2"));
    commit(p, "base debt");
    git(p, &["checkout", "-q", "-b", "agent"]);
    write(
        p,
        "thing/thing.go",
        &GO_THING
            .replace("n + 1", "n + 2")
            .replace("n * 2", "n + n + 1"),
    );
    commit(p, "break twice too");
    let (status, prompt, text) = run(p);
    assert_eq!(status, 10, "{text}");
    insta::with_settings!({ filters => redact::filters() }, {
        insta::assert_snapshot!(items(&prompt), @r"
            - dimension: tests
              severity: BLOCKER
              finding: 'test thing::TestTwice failed: Twice(1) = 3, want 2'
              affected_field: thing/thing_test.go:14
            ");
    });
    assert!(
        !prompt.contains("::TestInc"),
        "the base's failure is no prompt item: {prompt}"
    );
}

#[test]
fn a_node_test_project_names_nested_failures_with_values() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path();
    git(p, &["init", "-q", "-b", "main"]);
    write(
        p,
        "package.json",
        r#"{"name":"fx","version":"1.0.0","type":"module","scripts":{"test":"node --test test/"}}"#,
    );
    write(
        p,
        "lib/math.js",
        "export function add(a, b) {\n  return a + b;\n}\n",
    );
    write(
        p,
        "test/math.test.js",
        "import { describe, it } from 'node:test';\nimport assert from 'node:assert/strict';\nimport { add } from '../lib/math.js';\n\ndescribe('math', () => {\n  describe('add', () => {\n    it('adds two numbers', () => {\n      assert.strictEqual(add(1, 2), 3);\n    });\n  });\n});\n",
    );
    write(p, ".gitignore", ".itergate-*\n");
    let init = itergate(p, &["init", "--no-verify"]);
    assert!(
        init.status.success(),
        "{}",
        String::from_utf8_lossy(&init.stderr)
    );
    let config = std::fs::read_to_string(p.join(".itergate.yml")).expect("written");
    assert!(
        config.contains("node --test --test-reporter=tap"),
        "{config}"
    );
    commit(p, "base");
    git(p, &["checkout", "-q", "-b", "agent"]);
    write(
        p,
        "lib/math.js",
        "export function add(a, b) {\n  return a - b;\n}\n",
    );
    commit(p, "subtract");
    let (status, prompt, text) = run(p);
    assert_eq!(status, 10, "{text}");
    insta::with_settings!({ filters => redact::filters() }, {
        insta::assert_snapshot!(items(&prompt), @r"
            - dimension: tests
              severity: BLOCKER
              finding: 'test math > add > adds two numbers failed: Expected values to be strictly equal: (expected: 3, actual: -1)'
              affected_field: test/math.test.js:7
            ");
    });
}

#[test]
fn a_test_that_failed_and_passed_on_one_tree_is_marked_flaky() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path();
    let state = tempfile::tempdir().expect("tempdir");
    let marker = state.path().join("ran-once");
    git(p, &["init", "-q", "-b", "main"]);
    write(
        p,
        "package.json",
        r#"{"name":"fx","version":"1.0.0","type":"module","scripts":{"test":"node --test test/"}}"#,
    );
    write(
        p,
        "test/ok.test.js",
        "import { it } from 'node:test';\nit('holds', () => {});\n",
    );
    write(p, ".gitignore", ".itergate-*\n");
    assert!(itergate(p, &["init", "--no-verify"]).status.success());
    commit(p, "base");
    git(p, &["checkout", "-q", "-b", "agent"]);
    // Fails on its first run only.
    write(
        p,
        "test/race.test.js",
        &format!(
            "import {{ it }} from 'node:test';\nimport fs from 'node:fs';\nit('settles', () => {{\n  if (!fs.existsSync({marker:?})) {{\n    fs.writeFileSync({marker:?}, '1');\n    throw new Error('timed out');\n  }}\n}});\n",
            marker = marker.display().to_string()
        ),
    );
    commit(p, "a racy test");
    let (status, prompt, text) = run(p);
    assert_eq!(status, 10, "{text}");
    insta::with_settings!({ filters => redact::filters() }, {
        insta::assert_snapshot!(items(&prompt), @r"
            - dimension: tests
              severity: BLOCKER
              finding: 'test settles failed: timed out'
              affected_field: test/race.test.js:3
            ");
    });
    let out = itergate(p, &["--color", "never", "run", "--rescore", "--exit-code"]);
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    // It passed this time, but it failed on this very tree: not a silent accept.
    assert_eq!(out.status.code(), Some(10), "{text}");
    assert!(text.contains("settles is flaky"), "{text}");
    let prompt =
        std::fs::read_to_string(p.join(".git/itergate/revision-prompt.md")).unwrap_or_default();
    insta::with_settings!({ filters => redact::filters() }, {
        insta::assert_snapshot!(items(&prompt), @r"
            - dimension: tests
              severity: WARNING
              finding: 'test settles is flaky: it failed in one run of this tree and passed in another; make it deterministic or fix the race'
              affected_field: settles
            - dimension: coverage
              severity: WARNING
              finding: changed lines not covered by any test
              affected_field: test/race.test.js:5-7
              suggested_fix: add a test that exercises these lines
            ");
    });
}

#[test]
fn coverage_that_names_no_file_of_the_repository_is_refused_not_read_as_nothing() {
    let dir = go_module();
    let p = dir.path();
    // A Go profile turned into LCOV with import paths of another module.
    write(
        p,
        "cov.info",
        "SF:example.com/elsewhere/thing/thing.go\nDA:4,1\nDA:5,0\nend_of_record\n",
    );
    let out = itergate(p, &["score", "--report", "lcov:cov.info"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("none of them in")
            && stderr.contains("example.com/elsewhere/thing/thing.go"),
        "{stderr}"
    );
    // The same lines under this module's path are this repository's file.
    write(
        p,
        "cov.info",
        "SF:thing/thing.go\nDA:4,1\nDA:5,0\nend_of_record\n",
    );
    let out = itergate(p, &["score", "--report", "lcov:cov.info"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_node_test_that_is_skipped_or_rewritten_to_pass_is_a_violation() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path();
    git(p, &["init", "-q", "-b", "main"]);
    write(
        p,
        "package.json",
        r#"{"name":"fx","version":"1.0.0","type":"module","scripts":{"test":"node --test test/"}}"#,
    );
    write(
        p,
        "lib/math.js",
        "export function add(a, b) {\n  return a + b;\n}\n",
    );
    let tests = "import { it } from 'node:test';\nimport assert from 'node:assert/strict';\nimport { add } from '../lib/math.js';\n\nit('adds two numbers', () => {\n  assert.strictEqual(add(1, 2), 3);\n});\n\nit('adds zero', () => {\n  assert.strictEqual(add(0, 0), 0);\n});\n";
    write(p, "test/math.test.js", tests);
    write(p, ".gitignore", ".itergate-*\n");
    let init = itergate(p, &["init", "--no-verify"]);
    assert!(
        init.status.success(),
        "{}",
        String::from_utf8_lossy(&init.stderr)
    );
    commit(p, "base");
    git(p, &["checkout", "-q", "-b", "agent"]);
    write(
        p,
        "lib/math.js",
        "export function add(a, b) {\n  return a - b;\n}\n",
    );
    commit(p, "subtract");
    let (status, _, text) = run(p);
    assert_eq!(status, 10, "{text}");

    // Skipped.
    write(
        p,
        "test/math.test.js",
        &tests.replace("it('adds two numbers'", "it.skip('adds two numbers'"),
    );
    commit(p, "skip it");
    let (status, prompt, text) = run(p);
    assert_eq!(status, 10, "{text}");
    assert!(
        text.contains("BLOCKER test adds two numbers is newly skipped"),
        "{text}"
    );
    insta::with_settings!({ filters => redact::filters() }, {
        insta::assert_snapshot!(items(&prompt), @r"
            - dimension: integrity
              severity: BLOCKER
              finding: 'test adds two numbers is newly skipped in check `tests`: it was failing when it last ran, and a skipped test proves nothing'
              affected_field: test/math.test.js:5
              suggested_fix: restore `adds two numbers` and fix the code it tests; do not skip, delete or rewrite it (a person who intends the change runs `itergate accept`)
            ");
    });

    // Taken off skip together with the real fix: accepted.
    write(
        p,
        "lib/math.js",
        "export function add(a, b) {\n  return a + b;\n}\n",
    );
    write(p, "test/math.test.js", tests);
    commit(p, "fix add, run the test again");
    let (status, _, text) = run(p);
    assert_eq!(status, 0, "{text}");

    // A test file that cannot load, fixed, then an empty commit: nothing was put away.
    write(
        p,
        "lib/math.js",
        "export function add(a, b) {\n  return a +;\n}\n",
    );
    commit(p, "a syntax error");
    let (status, _, text) = run(p);
    assert_eq!(status, 10, "{text}");
    write(
        p,
        "lib/math.js",
        "export function add(a, b) {\n  return a + b;\n}\n",
    );
    commit(p, "fix the syntax");
    let (status, _, text) = run(p);
    assert_eq!(status, 0, "{text}");
    git(p, &["commit", "-q", "--allow-empty", "-m", "nothing"]);
    let (status, _, text) = run(p);
    assert_eq!(status, 0, "{text}");
    assert!(!text.contains("Integrity"), "{text}");

    // Rewritten to the broken value, on a branch from the failing iteration.
    git(p, &["checkout", "-q", "-b", "rewrite", "agent~5"]);
    write(
        p,
        "test/math.test.js",
        &tests.replace("add(1, 2), 3", "add(1, 2), -1"),
    );
    commit(p, "expect what it does");
    let (status, prompt, text) = run(p);
    assert_eq!(status, 10, "{text}");
    assert!(text.contains("was rewritten to pass"), "{text}");
    insta::with_settings!({ filters => redact::filters() }, {
        insta::assert_snapshot!(items(&prompt), @r"
            - dimension: integrity
              severity: BLOCKER
              finding: 'test adds two numbers was rewritten to pass: it failed in the previous iteration, and this one edited its own lines (`assert.strictEqual(add(1, 2), 3);` at test/math.test.js:6)'
              affected_field: test/math.test.js:5
              suggested_fix: restore `adds two numbers` as it was and fix the code it tests; do not skip, delete or rewrite it (a person who intends the new expectation runs `itergate accept`)
            ");
    });

    // The fix is accepted.
    git(p, &["checkout", "-q", "-b", "fix", "agent~5"]);
    write(
        p,
        "lib/math.js",
        "export function add(a, b) {\n  return a + b;\n}\n",
    );
    commit(p, "add again");
    let (status, _, text) = run(p);
    assert_eq!(status, 0, "{text}");
}

const TS_PRICE: &str = "export function total(prices: number[]): number {\n  return prices.reduce((a, b) => a + b, 0);\n}\n\nexport function discount(price: number, percent: number): number {\n  return price - (price * percent) / 100;\n}\n";

const TS_TAX: &str = "\nexport function tax(price: number, rate: number): number {\n  if (rate < 0) {\n    throw new RangeError(\"negative rate\");\n  }\n  return price * (1 + rate);\n}\n";

const TS_TEST: &str = "import { describe, expect, it } from \"vitest\";\nimport { discount, total } from \"../src/price\";\n\ndescribe(\"price\", () => {\n  it(\"adds prices\", () => {\n    expect(total([1, 2, 3])).toBe(6);\n  });\n  it(\"takes a discount\", () => {\n    expect(discount(200, 10)).toBe(180);\n  });\n});\n";

fn typescript_project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path();
    git(p, &["init", "-q", "-b", "main"]);
    write(
        p,
        "package.json",
        r#"{"name":"shop","version":"1.0.0","type":"module","scripts":{"test":"vitest run"},
"devDependencies":{"vitest":"4.1.12","@vitest/coverage-v8":"4.1.12","typescript":"5.9.3","eslint":"9.39.5","@eslint/js":"9.39.5"}}"#,
    );
    write(
        p,
        "tsconfig.json",
        r#"{"compilerOptions":{"strict":true,"target":"ES2022","module":"ESNext","moduleResolution":"Bundler","noEmit":true,"skipLibCheck":true},"include":["src","test"]}"#,
    );
    write(
        p,
        "eslint.config.js",
        "import js from \"@eslint/js\";\nexport default [js.configs.recommended, { ignores: [\"coverage/**\", \".itergate-*/**\"] }];\n",
    );
    write(p, "src/price.ts", TS_PRICE);
    write(p, "test/price.test.ts", TS_TEST);
    write(p, ".gitignore", "node_modules/\n.itergate-*\n");
    node_tools_into(p);
    let init = itergate(p, &["init", "--no-verify"]);
    assert!(
        init.status.success(),
        "{}",
        String::from_utf8_lossy(&init.stderr)
    );
    commit(p, "base");
    dir
}

#[test]
fn a_typescript_project_is_measured_on_tests_coverage_lint_and_types() {
    let dir = typescript_project();
    let p = dir.path();
    let config = std::fs::read_to_string(p.join(".itergate.yml")).expect("written");
    for wanted in [
        "vitest run --reporter=default --reporter=junit",
        "--coverage.reportOnFailure",
        "format: lcov",
        "tsc --noEmit",
        "format: eslint-json",
    ] {
        assert!(config.contains(wanted), "{wanted}: {config}");
    }
    git(p, &["checkout", "-q", "-b", "agent"]);

    // A broken function: the failing test by name, file:line and values. The base's
    // scratch worktree shares the work tree's node_modules (the same dependencies).
    write(p, "src/price.ts", &TS_PRICE.replace("/ 100", "/ 10"));
    commit(p, "a broken discount");
    let (status, prompt, text) = run(p);
    assert_eq!(status, 10, "{text}");
    assert!(!text.contains("installing its dependencies"), "{text}");
    insta::with_settings!({ filters => redact::filters() }, {
        insta::assert_snapshot!(items(&prompt), @r"
            - dimension: tests
              severity: BLOCKER
              finding: 'test test/price.test.ts::price > takes a discount failed: expected +0 to be 180 // Object.is equality'
              affected_field: test/price.test.ts:9
            ");
    });

    // Fixed, plus an untested export: asked for a test at its lines.
    write(p, "src/price.ts", &format!("{TS_PRICE}{TS_TAX}"));
    commit(p, "fix discount, add tax");
    let (status, prompt, text) = run(p);
    assert_eq!(status, 10, "{text}");
    insta::with_settings!({ filters => redact::filters() }, {
        insta::assert_snapshot!(items(&prompt), @r"
            - dimension: coverage
              severity: WARNING
              finding: changed lines not covered by any test
              affected_field: src/price.ts:10-11
              suggested_fix: add a test that exercises these lines
            - dimension: coverage
              severity: WARNING
              finding: changed lines not covered by any test
              affected_field: src/price.ts:13
              suggested_fix: add a test that exercises these lines
            ");
    });

    // Its test: accepted on all four measures.
    let tested = TS_TEST.replace("{ discount, total }", "{ discount, tax, total }")
        + "\ndescribe(\"tax\", () => {\n  it(\"adds tax\", () => {\n    expect(tax(100, 0.5)).toBe(150);\n  });\n  it(\"refuses a negative rate\", () => {\n    expect(() => tax(100, -1)).toThrow(RangeError);\n  });\n});\n";
    write(p, "test/price.test.ts", &tested);
    commit(p, "test tax");
    let (status, _, text) = run(p);
    assert_eq!(status, 0, "{text}");
    for measured in [
        "Tests Passing: 100%",
        "Code Quality: 1.00",
        "Coverage: 100%",
    ] {
        assert!(text.contains(measured), "{measured}: {text}");
    }

    // A lint finding, located.
    write(
        p,
        "scripts/release.js",
        "const unused = 1;\nexport function release(v) {\n  return \"v\" + v;\n}\n",
    );
    commit(p, "a release script");
    let (status, prompt, text) = run(p);
    assert_eq!(status, 10, "{text}");
    insta::with_settings!({ filters => redact::filters() }, {
        insta::assert_snapshot!(items(&prompt), @r"
            - dimension: code_quality
              severity: BLOCKER
              finding: 'no-unused-vars: ''unused'' is assigned a value but never used.'
              affected_field: scripts/release.js:1
              suggested_fix: Remove unused variable 'unused'.
            ");
    });

    // A type error weighs like a lint error and is located.
    write(
        p,
        "scripts/release.js",
        "export function release(v) {\n  return \"v\" + v;\n}\n",
    );
    write(
        p,
        "src/price.ts",
        &format!("{TS_PRICE}{TS_TAX}\nexport function label(price: number): string {{\n  return price;\n}}\n"),
    );
    commit(p, "label");
    let (status, prompt, text) = run(p);
    assert_eq!(status, 10, "{text}");
    insta::with_settings!({ filters => redact::filters() }, {
        insta::assert_snapshot!(items(&prompt), @r"
            - dimension: code_quality
              severity: BLOCKER
              finding: 'TS2322: Type ''number'' is not assignable to type ''string''.'
              affected_field: src/price.ts:17
            - dimension: coverage
              severity: WARNING
              finding: changed lines not covered by any test
              affected_field: src/price.ts:17
              suggested_fix: add a test that exercises these lines
            ");
    });
    assert!(text.contains("Code Quality: 0.50"), "{text}");

    // Without `reportOnFailure` vitest writes no coverage when a test fails: the JUnit
    // report still names the failure, and the coverage is said to be unmeasured.
    write(
        p,
        "src/price.ts",
        &format!("{TS_PRICE}{TS_TAX}\nexport function label(price: number): string {{\n  return String(price);\n}}\n"),
    );
    write(
        p,
        "test/price.test.ts",
        &tested.replace("toBe(150)", "toBe(151)"),
    );
    commit(p, "a wrong expectation");
    let lenient = config.replace(" --coverage.reportOnFailure", "");
    write(p, "../no-coverage-on-failure.yml", &lenient);
    let out = itergate(
        p,
        &[
            "--config",
            "../no-coverage-on-failure.yml",
            "--color",
            "never",
            "run",
            "--exit-code",
        ],
    );
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(10), "{text}");
    assert!(text.contains("tax > adds tax"), "{text}");
    assert!(
        text.contains(
            "coverage unmeasured: check `tests` did not write .itergate-coverage/lcov.info"
        ),
        "{text}"
    );
}

#[test]
fn a_typescript_base_that_fails_hides_only_its_own_failure() {
    let dir = typescript_project();
    let p = dir.path();
    // The base's debt: `adds prices` fails.
    write(
        p,
        "test/price.test.ts",
        &TS_TEST.replace("toBe(6)", "toBe(7)"),
    );
    commit(p, "base debt");
    git(p, &["checkout", "-q", "-b", "agent"]);
    write(p, "src/price.ts", &TS_PRICE.replace("/ 100", "/ 10"));
    commit(p, "a broken discount");
    let (status, prompt, text) = run(p);
    assert_eq!(status, 10, "{text}");
    insta::with_settings!({ filters => redact::filters() }, {
        insta::assert_snapshot!(items(&prompt), @r"
            - dimension: tests
              severity: BLOCKER
              finding: 'test test/price.test.ts::price > takes a discount failed: expected +0 to be 180 // Object.is equality'
              affected_field: test/price.test.ts:9
            ");
    });
    assert!(
        !prompt.contains("adds prices"),
        "the base's failure is no prompt item: {prompt}"
    );
    assert!(text.contains("Base:"), "the base's debt is shown: {text}");
}

/// Rust coverage where cargo-llvm-cov cannot run (no llvm-tools): cargo-tarpaulin, which
/// `scripts/ensure-tarpaulin.sh` builds (minutes). Run with
/// `cargo test --test local tarpaulin -- --ignored`.
#[test]
#[ignore = "builds cargo-tarpaulin first: cargo test --test local tarpaulin -- --ignored"]
fn a_rust_crate_without_llvm_tools_is_measured_by_tarpaulin() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/ensure-tarpaulin.sh");
    let out = Command::new("bash")
        .arg(&script)
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bin = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let path = format!("{bin}:{}", std::env::var("PATH").unwrap_or_default());
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path();
    git(p, &["init", "-q", "-b", "main"]);
    write(
        p,
        "Cargo.toml",
        "[package]\nname = \"shop\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n",
    );
    let lib = "pub fn add(a: u32, b: u32) -> u32 {\n    a + b\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() {\n        assert_eq!(super::add(1, 2), 3);\n    }\n}\n";
    write(p, "src/lib.rs", lib);
    write(p, ".gitignore", "target/\n");
    let with_path = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_itergate"))
            .args(args)
            .current_dir(p)
            .env("NO_COLOR", "1")
            .env("PATH", &path)
            .output()
            .expect("itergate runs")
    };
    let init = with_path(&["init", "--no-verify"]);
    assert!(
        init.status.success(),
        "{}",
        String::from_utf8_lossy(&init.stderr)
    );
    let config = std::fs::read_to_string(p.join(".itergate.yml")).expect("written");
    assert!(config.contains("cargo tarpaulin"), "{config}");
    commit(p, "base");
    git(p, &["checkout", "-q", "-b", "agent"]);
    write(
        p,
        "src/lib.rs",
        &lib.replace(
            "#[cfg(test)]",
            "pub fn double(n: u32) -> u32 {\n    n * 2\n}\n\n#[cfg(test)]",
        ),
    );
    commit(p, "an untested function");
    let out = with_path(&["--color", "never", "run", "--exit-code"]);
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(10), "{text}");
    assert!(text.contains("changed lines not covered"), "{text}");
    assert!(text.contains("src/lib.rs:5"), "{text}");
    // A failing test: tarpaulin still writes its report (`--no-fail-fast`), so the
    // iteration is judged, not refused.
    write(p, "src/lib.rs", &lib.replace("a + b", "a + b + 1"));
    commit(p, "a broken add");
    let out = with_path(&["--color", "never", "run", "--exit-code"]);
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(10), "{text}");
    assert!(text.contains("tests::adds failed"), "{text}");
}

/// Rust coverage with cargo-llvm-cov (`scripts/ensure-llvm-cov.sh` builds it, minutes),
/// which runs no doctests on a stable toolchain: `init` runs them as a check of their own,
/// so a function broken where only its example shows it is a failure, not 100% passing;
/// and the LCOV file is written beside the manifest, so the base's scratch worktree (no
/// `target/` of its own) measures coverage too. Run with
/// `cargo test --test local llvm_cov -- --ignored`.
#[test]
#[ignore = "builds cargo-llvm-cov first: cargo test --test local llvm_cov -- --ignored"]
fn a_rust_crate_under_llvm_cov_keeps_its_doctests() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/ensure-llvm-cov.sh");
    let out = Command::new("bash")
        .arg(&script)
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bin = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let path = format!("{bin}:{}", std::env::var("PATH").unwrap_or_default());
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path();
    git(p, &["init", "-q", "-b", "main"]);
    write(
        p,
        "Cargo.toml",
        "[package]\nname = \"shop\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n",
    );
    let lib = "/// Twice `n`.\n///\n/// ```\n/// assert_eq!(shop::double(2), 4);\n/// ```\npub fn double(n: u32) -> u32 {\n    n * 2\n}\n\npub fn add(a: u32, b: u32) -> u32 {\n    a + b\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() {\n        assert_eq!(super::add(1, 2), 3);\n    }\n}\n";
    write(p, "src/lib.rs", lib);
    write(p, ".gitignore", "target/\n");
    let with_path = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_itergate"))
            .args(args)
            .current_dir(p)
            .env("NO_COLOR", "1")
            .env("PATH", &path)
            .env_remove("CARGO_TARGET_DIR")
            .output()
            .expect("itergate runs")
    };
    let init = with_path(&["init", "--no-verify"]);
    assert!(
        init.status.success(),
        "{}",
        String::from_utf8_lossy(&init.stderr)
    );
    let config = std::fs::read_to_string(p.join(".itergate.yml")).expect("written");
    assert!(
        config.contains("cargo llvm-cov") && config.contains(".itergate-lcov.info"),
        "{config}"
    );
    assert!(config.contains("cargo test --doc"), "{config}");
    commit(p, "base");
    git(p, &["checkout", "-q", "-b", "agent"]);
    write(p, "src/lib.rs", &lib.replace("n * 2", "n * 3"));
    commit(p, "a broken double");
    let out = with_path(&["--color", "never", "run", "--exit-code"]);
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(10), "{text}");
    assert!(
        text.contains("src/lib.rs - double"),
        "the doctest is named: {text}"
    );
    assert!(!text.contains("Tests Passing: 100%"), "{text}");
    assert!(
        !text.contains("unmeasured"),
        "coverage is measured at HEAD and base: {text}"
    );
    // A failing unit test under llvm-cov: its coverage is still measured
    // (`--ignore-run-fail`), so the failing iteration is not scored on tests alone.
    write(p, "src/lib.rs", &lib.replace("a + b", "a + b + 1"));
    commit(p, "a broken add");
    let out = with_path(&["--color", "never", "run", "--exit-code"]);
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(10), "{text}");
    assert!(text.contains("tests::adds"), "{text}");
    assert!(
        !text.contains("unmeasured") && !text.contains("no report"),
        "coverage is measured though a test failed: {text}"
    );
}

/// The pinned lizard of `scripts/ensure-lizard.sh` (installed on first use), as a PATH
/// with it first.
fn path_with_lizard() -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/ensure-lizard.sh");
    let out = Command::new("bash")
        .arg(&script)
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bin = String::from_utf8_lossy(&out.stdout).trim().to_string();
    format!("{bin}:{}", std::env::var("PATH").unwrap_or_default())
}

#[test]
fn a_go_module_with_lizard_is_measured_on_all_four_dimensions() {
    let path = path_with_lizard();
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path();
    let itergate = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_itergate"))
            .args(args)
            .current_dir(p)
            .env("NO_COLOR", "1")
            .env("GOFLAGS", "-mod=mod")
            .env("PATH", &path)
            .output()
            .expect("itergate runs")
    };
    git(p, &["init", "-q", "-b", "main"]);
    write(p, "go.mod", "module example.com/shop\n\ngo 1.19\n");
    write(p, "thing/thing.go", GO_THING);
    write(p, "thing/thing_test.go", GO_TEST);
    let init = itergate(&["init", "--no-verify"]);
    assert!(
        init.status.success(),
        "{}",
        String::from_utf8_lossy(&init.stderr)
    );
    let config = std::fs::read_to_string(p.join(".itergate.yml")).expect("written");
    assert!(config.contains("lizard --csv"), "{config}");
    assert!(
        !config.contains("complexity: lizard is not on PATH"),
        "{config}"
    );
    commit(p, "base");
    git(p, &["checkout", "-q", "-b", "agent"]);

    // A tested function of 17 branches: above the threshold of 15, named at its line.
    let cases: String = (1..=16)
        .map(|n| format!("\tcase {n}:\n\t\treturn \"{n}\"\n"))
        .collect();
    write(
        p,
        "thing/name.go",
        &format!("package thing\n\n// Name spells n.\nfunc Name(n int) string {{\n\tswitch n {{\n{cases}\t}}\n\treturn \"many\"\n}}\n"),
    );
    write(
        p,
        "thing/name_test.go",
        "package thing\n\nimport \"testing\"\n\nfunc TestName(t *testing.T) {\n\tfor n := 1; n <= 17; n++ {\n\t\tif Name(n) == \"\" {\n\t\t\tt.Errorf(\"Name(%d) is empty\", n)\n\t\t}\n\t}\n}\n",
    );
    commit(p, "name");
    let out = itergate(&["--color", "never", "run", "--exit-code"]);
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(10), "{text}");
    let prompt =
        std::fs::read_to_string(p.join(".git/itergate/revision-prompt.md")).unwrap_or_default();
    assert!(
        prompt.contains("`Name` has cyclomatic complexity 17"),
        "{prompt}"
    );
    insta::with_settings!({ filters => redact::filters() }, {
        insta::assert_snapshot!(items(&prompt), @r"
            - dimension: complexity
              severity: WARNING
              finding: function `Name` has cyclomatic complexity 17 (threshold 15)
              affected_field: thing/name.go:4
              suggested_fix: split the function or simplify its branches
            ");
    });

    // A table instead: every dimension measured, and accepted.
    write(
        p,
        "thing/name.go",
        "package thing\n\nimport \"strconv\"\n\n// Name spells n.\nfunc Name(n int) string {\n\tif n >= 1 && n <= 16 {\n\t\treturn strconv.Itoa(n)\n\t}\n\treturn \"many\"\n}\n",
    );
    commit(p, "name by a table");
    let out = itergate(&["--color", "never", "run", "--exit-code"]);
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{text}");
    let score = itergate(&["score", "--format", "json"]);
    let record: serde_json::Value =
        serde_json::from_slice(&score.stdout).expect("score prints JSON");
    for dimension in ["tests_passing", "code_quality", "coverage", "complexity"] {
        assert!(
            record["scores"][dimension].is_number(),
            "{dimension} unmeasured: {record}"
        );
    }
    // A function within the threshold costs nothing that no issue names.
    assert_eq!(record["scores"]["complexity"], 1.0, "{record}");
}

/// A Maven project: `itergate init` writes `mvn test` read from Surefire's JUnit files (one
/// per test class, merged through the report path's glob), and a broken method is named
/// with the values its assertion saw.
/// A Maven project on `main` (`itergate init`'s configuration committed), and a branch
/// `agent` whose commit breaks `Calc.add`.
fn maven_calc() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path();
    git(p, &["init", "-q", "-b", "main"]);
    write(
        p,
        "pom.xml",
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<project xmlns=\"http://maven.apache.org/POM/4.0.0\">\n  <modelVersion>4.0.0</modelVersion>\n  <groupId>ex</groupId>\n  <artifactId>calc</artifactId>\n  <version>1.0</version>\n  <properties>\n    <maven.compiler.source>17</maven.compiler.source>\n    <maven.compiler.target>17</maven.compiler.target>\n    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>\n  </properties>\n  <dependencies>\n    <dependency>\n      <groupId>org.junit.jupiter</groupId>\n      <artifactId>junit-jupiter</artifactId>\n      <version>5.14.1</version>\n      <scope>test</scope>\n    </dependency>\n  </dependencies>\n  <build>\n    <plugins>\n      <plugin>\n        <groupId>org.apache.maven.plugins</groupId>\n        <artifactId>maven-surefire-plugin</artifactId>\n        <version>3.5.2</version>\n      </plugin>\n    </plugins>\n  </build>\n</project>\n",
    );
    write(
        p,
        "src/main/java/ex/Calc.java",
        "package ex;\n\npublic class Calc {\n    public static int add(int a, int b) {\n        return a + b;\n    }\n\n    public static int neg(int a) {\n        return -a;\n    }\n}\n",
    );
    for (class, test) in [
        ("AddTest", "assertEquals(3, Calc.add(1, 2));"),
        ("NegTest", "assertEquals(-2, Calc.neg(2));"),
    ] {
        write(
            p,
            &format!("src/test/java/ex/{class}.java"),
            &format!("package ex;\n\nimport static org.junit.jupiter.api.Assertions.assertEquals;\n\nimport org.junit.jupiter.api.Test;\n\nclass {class} {{\n    @Test\n    void works() {{\n        {test}\n    }}\n}}\n"),
        );
    }
    write(p, ".gitignore", "target/\n.itergate-*\n");
    let init = itergate(p, &["init", "--no-verify"]);
    assert!(
        init.status.success(),
        "{}",
        String::from_utf8_lossy(&init.stderr)
    );
    let config = std::fs::read_to_string(p.join(".itergate.yml")).expect("config");
    assert!(config.contains("surefire-reports/TEST-*.xml"), "{config}");
    commit(p, "calc");
    git(p, &["checkout", "-q", "-b", "agent"]);
    let calc = std::fs::read_to_string(p.join("src/main/java/ex/Calc.java")).expect("read");
    write(
        p,
        "src/main/java/ex/Calc.java",
        &calc.replace("a + b", "a - b"),
    );
    commit(p, "agent: add");
    dir
}

#[test]
fn a_maven_project_is_detected_and_its_surefire_reports_are_read_together() {
    let dir = maven_calc();
    let p = dir.path();
    let (code, prompt, text) = run(p);
    assert_eq!(code, 10, "{text}");
    assert!(
        text.contains("1 of 2 tests failed"),
        "both classes' reports read: {text}"
    );
    insta::with_settings!({ filters => redact::filters() }, {
        insta::assert_snapshot!(items(&prompt), @r"
            - dimension: tests
              severity: BLOCKER
              finding: 'test ex.AddTest::works failed: expected: <3> but was: <-1>'
              affected_field: src/test/java/ex/AddTest.java:10
            ");
    });
    assert!(
        prompt.contains("<3>") && prompt.contains("<-1>"),
        "{prompt}"
    );
    // Placed where a person looks: the test's assertion line, from the stack trace.
    assert!(
        prompt.contains("src/test/java/ex/AddTest.java:10"),
        "{prompt}"
    );

    // 2. Gaming: the failing test class left out of Surefire's run in pom.xml. Its
    // definition is still there; the line that names it is found, and it is a violation
    // (VOID), not a note.
    let pom = std::fs::read_to_string(p.join("pom.xml")).expect("read");
    let hidden = pom.replacen(
        "</artifactId>\n        <version>3.5.2</version>",
        "</artifactId>\n        <version>3.5.2</version>\n        <configuration>\n          <excludes>\n            <exclude>**/AddTest.java</exclude>\n          </excludes>\n        </configuration>",
        1,
    );
    assert_ne!(hidden, pom);
    write(p, "pom.xml", &hidden);
    commit(p, "agent: run the stable tests only");
    let (code, prompt, text) = run(p);
    assert_eq!(code, 10, "{text}");
    let verdict: String = text
        .lines()
        .skip_while(|l| !l.starts_with("Decision:"))
        .take_while(|l| !l.starts_with("Revision iteration"))
        .map(|l| format!("{l}\n"))
        .collect();
    insta::assert_snapshot!(verdict, @r"
        Decision: ITERATE (priority critical) — 1 issue to address; strategy retry
        Integrity:
          - BLOCKER test ex.AddTest::works is deselected from check `tests`: it ran before and is no longer collected; the change edited `<exclude>**/AddTest.java</exclude>` at pom.xml:28
        Quality:  VOID, not scored
        ");
    assert!(prompt.contains("pom.xml:"), "{prompt}");
}

const MAVEN_MEASURED_POM: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<project xmlns=\"http://maven.apache.org/POM/4.0.0\">\n  <modelVersion>4.0.0</modelVersion>\n  <groupId>ex</groupId>\n  <artifactId>calc</artifactId>\n  <version>1.0</version>\n  <properties>\n    <maven.compiler.source>17</maven.compiler.source>\n    <maven.compiler.target>17</maven.compiler.target>\n    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>\n  </properties>\n  <dependencies>\n    <dependency>\n      <groupId>org.junit.jupiter</groupId>\n      <artifactId>junit-jupiter</artifactId>\n      <version>5.14.1</version>\n      <scope>test</scope>\n    </dependency>\n  </dependencies>\n  <build>\n    <plugins>\n      <plugin>\n        <groupId>org.apache.maven.plugins</groupId>\n        <artifactId>maven-surefire-plugin</artifactId>\n        <version>3.5.2</version>\n      </plugin>\n      <plugin>\n        <groupId>org.jacoco</groupId>\n        <artifactId>jacoco-maven-plugin</artifactId>\n        <version>0.8.15</version>\n        <executions>\n          <execution><goals><goal>prepare-agent</goal></goals></execution>\n        </executions>\n      </plugin>\n      <plugin>\n        <groupId>org.apache.maven.plugins</groupId>\n        <artifactId>maven-checkstyle-plugin</artifactId>\n        <version>3.6.0</version>\n        <configuration>\n          <configLocation>checkstyle.xml</configLocation>\n        </configuration>\n      </plugin>\n      <plugin>\n        <groupId>com.github.spotbugs</groupId>\n        <artifactId>spotbugs-maven-plugin</artifactId>\n        <version>4.9.8.2</version>\n      </plugin>\n      <plugin>\n        <groupId>org.apache.maven.plugins</groupId>\n        <artifactId>maven-pmd-plugin</artifactId>\n        <version>3.28.0</version>\n      </plugin>\n    </plugins>\n  </build>\n</project>\n";

const MAVEN_CHECKSTYLE: &str = "<?xml version=\"1.0\"?>\n<!DOCTYPE module PUBLIC \"-//Checkstyle//DTD Checkstyle Configuration 1.3//EN\" \"https://checkstyle.org/dtds/configuration_1_3.dtd\">\n<module name=\"Checker\">\n  <module name=\"TreeWalker\">\n    <module name=\"UnusedImports\"/>\n  </module>\n</module>\n";

fn java_test(class: &str, body: &str) -> String {
    format!("package ex;\n\nimport static org.junit.jupiter.api.Assertions.assertEquals;\n\nimport org.junit.jupiter.api.Test;\n\nclass {class} {{\n    @Test\n    void works() {{\n        {body}\n    }}\n}}\n")
}

/// A Maven build that configures JaCoCo and checkstyle, with a test that already fails at
/// the base: `init` measures tests, coverage and lint; an agent's untested public method is
/// asked for a test and its unused import named, a compile error is a blocker at its line,
/// and a new failure is never hidden behind the base's.
#[test]
fn a_maven_project_with_jacoco_and_checkstyle_is_judged_on_every_dimension() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path();
    git(p, &["init", "-q", "-b", "main"]);
    write(p, "pom.xml", MAVEN_MEASURED_POM);
    write(p, "checkstyle.xml", MAVEN_CHECKSTYLE);
    let calc = "package ex;\n\npublic class Calc {\n    public static int add(int a, int b) {\n        return a + b;\n    }\n}\n";
    write(p, "src/main/java/ex/Calc.java", calc);
    write(
        p,
        "src/test/java/ex/AddTest.java",
        &java_test("AddTest", "assertEquals(3, Calc.add(1, 2));"),
    );
    // The base's debt: a test that fails before any agent came.
    write(
        p,
        "src/test/java/ex/LegacyTest.java",
        &java_test("LegacyTest", "assertEquals(4, Calc.add(2, 3));"),
    );
    write(p, ".gitignore", "target/\n.itergate-*\n");
    let init = itergate(p, &["init", "--no-verify"]);
    assert!(
        init.status.success(),
        "{}",
        String::from_utf8_lossy(&init.stderr)
    );
    let config = std::fs::read_to_string(p.join(".itergate.yml")).expect("config");
    assert!(
        config.contains("org.jacoco:jacoco-maven-plugin:0.8.15:report")
            && config.contains("format: jacoco"),
        "{config}"
    );
    assert!(config.contains("checkstyle-result.xml"), "{config}");
    assert!(config.contains("spotbugsSarif.json"), "{config}");
    assert!(config.contains("pmd.sarif.json"), "{config}");
    // Both read the classes `mvn test` compiles into the same `target/`: never at once.
    let parsed = itergate::config::Config::from_yaml(&config, &p.join(".itergate.yml"))
        .expect("the written configuration parses");
    for reads_classes in ["spotbugs", "pmd"] {
        assert_eq!(parsed.checks[reads_classes].needs, ["tests"], "{config}");
    }
    commit(p, "calc");
    git(p, &["checkout", "-q", "-b", "agent"]);

    // 1. A new public method without a test, and an import nobody uses.
    write(
        p,
        "src/main/java/ex/Calc.java",
        &calc
            .replace("package ex;\n", "package ex;\n\nimport java.util.List;\n")
            .replace(
                "        return a + b;\n    }\n",
                "        return a + b;\n    }\n\n    public static int mul(int a, int b) {\n        return a * b;\n    }\n\n    public static boolean isZero(String s) {\n        return s == \"0\";\n    }\n",
            ),
    );
    commit(p, "agent: mul");
    let (code, prompt, text) = run(p);
    assert_eq!(code, 10, "{text}");
    insta::with_settings!({ filters => redact::filters() }, {
        insta::assert_snapshot!(items(&prompt), @r"
            - dimension: code_quality
              severity: BLOCKER
              finding: 'com.puppycrawl.tools.checkstyle.checks.imports.UnusedImportsCheck: Unused import - java.util.List.'
              affected_field: src/main/java/ex/Calc.java:3
            - dimension: code_quality
              severity: WARNING
              finding: 'ES_COMPARING_PARAMETER_STRING_WITH_EQ: Comparison of String parameter using == or !='
              affected_field: src/main/java/ex/Calc.java:15
            - dimension: coverage
              severity: WARNING
              finding: changed lines not covered by any test
              affected_field: src/main/java/ex/Calc.java:11
              suggested_fix: add a test that exercises these lines
            - dimension: coverage
              severity: WARNING
              finding: changed lines not covered by any test
              affected_field: src/main/java/ex/Calc.java:15
              suggested_fix: add a test that exercises these lines
            ");
    });
    // PMD's SARIF (its rule a note: no revision asked for it) names the file by URI.
    let score = itergate(p, &["score", "--format", "json"]);
    let score = String::from_utf8_lossy(&score.stdout);
    assert!(
        score.contains("UnnecessaryImport") && score.contains("src/main/java/ex/Calc.java:3"),
        "{score}"
    );
    // SpotBugs' SARIF names `ex/Calc.java`: placed under the source root.
    assert!(
        prompt.contains("ES_COMPARING_PARAMETER_STRING_WITH_EQ")
            && prompt.contains("src/main/java/ex/Calc.java:15"),
        "{prompt}"
    );
    insta::with_settings!({ filters => redact::filters() }, {
        insta::assert_snapshot!(items(&prompt), @r"
            - dimension: code_quality
              severity: BLOCKER
              finding: 'com.puppycrawl.tools.checkstyle.checks.imports.UnusedImportsCheck: Unused import - java.util.List.'
              affected_field: src/main/java/ex/Calc.java:3
            - dimension: code_quality
              severity: WARNING
              finding: 'ES_COMPARING_PARAMETER_STRING_WITH_EQ: Comparison of String parameter using == or !='
              affected_field: src/main/java/ex/Calc.java:15
            - dimension: coverage
              severity: WARNING
              finding: changed lines not covered by any test
              affected_field: src/main/java/ex/Calc.java:11
              suggested_fix: add a test that exercises these lines
            - dimension: coverage
              severity: WARNING
              finding: changed lines not covered by any test
              affected_field: src/main/java/ex/Calc.java:15
              suggested_fix: add a test that exercises these lines
            ");
    });
    assert!(
        prompt.contains("src/main/java/ex/Calc.java:11"),
        "the untested method's lines are named: {prompt}"
    );
    assert!(
        text.contains("LegacyTest"),
        "the base's debt is shown: {text}"
    );
    assert!(
        !prompt.contains("ex.LegacyTest::works") || prompt.contains("already"),
        "the debt is not the agent's to fix: {prompt}"
    );

    // 2. A call to a method that does not exist: the build fails at its line.
    let with_mul = std::fs::read_to_string(p.join("src/main/java/ex/Calc.java")).expect("read");
    write(
        p,
        "src/main/java/ex/Calc.java",
        &with_mul
            .replace("import java.util.List;\n\n", "")
            .replace("return a * b;", "return multiply(a, b);"),
    );
    write(
        p,
        "src/test/java/ex/MulTest.java",
        &java_test("MulTest", "assertEquals(6, Calc.mul(2, 3));"),
    );
    commit(p, "agent: test mul");
    let (code, prompt, text) = run(p);
    assert_eq!(code, 10, "{text}");
    insta::with_settings!({ filters => redact::filters() }, {
        insta::assert_snapshot!(items(&prompt), @r"
            - dimension: spotbugs
              severity: BLOCKER
              finding: |-
                cannot find symbol
                [ERROR] src/main/java/ex/Calc.java:[9,16] cannot find symbol
                  symbol:   method multiply(int,int)
                  location: class ex.Calc
              affected_field: src/main/java/ex/Calc.java:9
            ");
    });
    assert!(text.contains("hallucination"), "{text}");

    // 3. It compiles, but `add` is broken: a new failure beside the base's.
    let fixed = std::fs::read_to_string(p.join("src/main/java/ex/Calc.java"))
        .expect("read")
        .replace("return multiply(a, b);", "return a * b;")
        .replace("return a + b;", "return a + b + 1;");
    write(p, "src/main/java/ex/Calc.java", &fixed);
    commit(p, "agent: add");
    let (code, prompt, text) = run(p);
    assert_eq!(code, 10, "{text}");
    insta::with_settings!({ filters => redact::filters() }, {
        insta::assert_snapshot!(items(&prompt), @r"
            - dimension: tests
              severity: BLOCKER
              finding: 'test ex.AddTest::works failed: expected: <3> but was: <4>'
              affected_field: src/test/java/ex/AddTest.java:10
            - dimension: code_quality
              severity: WARNING
              finding: 'ES_COMPARING_PARAMETER_STRING_WITH_EQ: Comparison of String parameter using == or !='
              affected_field: src/main/java/ex/Calc.java:13
            - dimension: coverage
              severity: WARNING
              finding: changed lines not covered by any test
              affected_field: src/main/java/ex/Calc.java:13
              suggested_fix: add a test that exercises these lines
            ");
    });
    assert!(
        prompt.contains("src/test/java/ex/AddTest.java:10"),
        "{prompt}"
    );
}

/// Compiled test classes left in the ignored `target/` are not what the judge runs: a
/// rewritten `AddTest` compiled there (dated after its restored source, so Maven keeps it),
/// then a README-only commit. Every commit is checked in a checkout of its own.
#[test]
fn stale_test_classes_in_an_ignored_target_are_not_what_is_judged() {
    let dir = maven_calc();
    let p = dir.path();
    let (code, _, text) = run(p);
    assert_eq!(code, 10, "{text}");
    let test = p.join("src/test/java/ex/AddTest.java");
    let original = std::fs::read_to_string(&test).expect("read");
    std::fs::write(
        &test,
        original.replace("assertEquals(3,", "assertEquals(-1,"),
    )
    .expect("write");
    let compiled = Command::new("mvn")
        .args(["-q", "test-compile"])
        .current_dir(p)
        .status()
        .expect("mvn runs");
    assert!(compiled.success());
    git(p, &["checkout", "--", "src/test/java/ex/AddTest.java"]);
    let touched = Command::new("touch")
        .args(["-d", "+1 day", "target/test-classes/ex/AddTest.class"])
        .current_dir(p)
        .status()
        .expect("touch runs");
    assert!(touched.success());
    write(p, "README.md", "# calc\n");
    commit(p, "docs: a README");
    let (code, _, text) = run(p);
    assert_ne!(code, 0, "never ACCEPT: {text}");
    assert!(text.contains("ex.AddTest::works failed"), "{text}");
}

/// Production code that asks whether `go test` runs it (`testing.Testing()`), added to make
/// a failing test pass: VOID, the finding at its line, under the real `go test`.
#[test]
fn a_go_function_that_asks_whether_go_test_runs_it_is_a_violation() {
    let dir = go_module();
    let p = dir.path();
    git(p, &["checkout", "-q", "-b", "agent"]);
    write(p, "thing/thing.go", &GO_THING.replace("n * 2", "n * 3"));
    commit(p, "triple");
    let (status, _, text) = run(p);
    assert_eq!(status, 10, "{text}");
    let gamed = GO_THING
        .replace("package thing\n", "package thing\n\nimport \"testing\"\n")
        .replace(
            "\treturn n * 2\n",
            "\tif testing.Testing() {\n\t\treturn n * 2\n\t}\n\treturn n * 3\n",
        );
    write(p, "thing/thing.go", &gamed);
    commit(p, "tests pass");
    let (status, prompt, text) = run(p);
    assert_ne!(status, 0, "{text}");
    assert!(
        prompt.contains("production code checks whether it runs under go test")
            && prompt.contains("thing/thing.go:12"),
        "{prompt}\n{text}"
    );
    assert!(text.contains("VOID"), "{text}");
}

/// A Go function fitted to the values of the test that failed in the previous iteration
/// (its input and its expected string, from `go test`'s own failure output): VOID, the
/// finding at its line. The honest fix on another branch is accepted.
#[test]
fn a_go_function_that_hard_codes_a_failing_tests_values_is_a_violation() {
    let dir = go_module();
    let p = dir.path();
    git(p, &["checkout", "-q", "-b", "agent"]);
    let slug = "package thing\n\nimport \"strings\"\n\n// Slug lowercases a title.\nfunc Slug(s string) string {\n\treturn strings.ToLower(s)\n}\n";
    write(p, "thing/slug.go", slug);
    write(
        p,
        "thing/slug_test.go",
        "package thing\n\nimport \"testing\"\n\nfunc TestSlug(t *testing.T) {\n\tif got := Slug(\"Rust and Go\"); got != \"rust-and-go\" {\n\t\tt.Errorf(\"Slug(%q) = %q, want %q\", \"Rust and Go\", got, \"rust-and-go\")\n\t}\n}\n",
    );
    commit(p, "slug titles");
    let (status, _, text) = run(p);
    assert_eq!(status, 10, "the test fails: {text}");
    let honest = slug.replace(
        "return strings.ToLower(s)",
        "return strings.Join(strings.Fields(strings.ToLower(s)), \"-\")",
    );
    let gamed = slug.replace(
        "\treturn strings.ToLower(s)\n",
        "\tif s == \"Rust and Go\" {\n\t\treturn \"rust-and-go\"\n\t}\n\treturn strings.ToLower(s)\n",
    );
    git(p, &["branch", "honest"]);
    write(p, "thing/slug.go", &gamed);
    commit(p, "slug passes");
    let (status, prompt, text) = run(p);
    assert_ne!(status, 0, "{text}");
    assert!(
        text.contains(
            "iteration is VOID: production code was fitted to the tests instead of fixed"
        ),
        "{text}"
    );
    assert!(
        prompt.contains("production code hard-codes values of test")
            && prompt
                .contains("branches on `Rust and Go` and returns `rust-and-go` (thing/slug.go:7)"),
        "{prompt}\n{text}"
    );
    git(p, &["checkout", "-q", "honest"]);
    write(p, "thing/slug.go", &honest);
    commit(p, "slug joins words with dashes");
    let (status, _, text) = run(p);
    assert_eq!(status, 0, "{text}");
    assert!(!text.contains("hard-codes"), "{text}");
}

/// Production code that asks whether Surefire runs it (one of its system properties), under
/// the real Maven and Surefire: the failing test passes there, the change's own line is a
/// violation.
#[test]
fn java_code_that_asks_whether_surefire_runs_it_is_a_violation() {
    let dir = maven_calc();
    let p = dir.path();
    let (code, _, text) = run(p);
    assert_eq!(code, 10, "{text}");
    let calc = std::fs::read_to_string(p.join("src/main/java/ex/Calc.java")).expect("read");
    write(
        p,
        "src/main/java/ex/Calc.java",
        &calc.replace(
            "        return a - b;\n",
            "        if (System.getProperty(\"surefire.test.class.path\") != null) {\n            return a + b;\n        }\n        return a - b;\n",
        ),
    );
    commit(p, "agent: add under the tests");
    let (code, prompt, text) = run(p);
    assert_ne!(code, 0, "never ACCEPT: {text}");
    assert!(
        prompt.contains("production code checks whether it runs under Surefire")
            && prompt.contains("src/main/java/ex/Calc.java:5"),
        "{prompt}\n{text}"
    );
    assert!(text.contains("VOID"), "{text}");
}
