//! What a revision prompt quotes is the project's, not the machine's: no absolute path of
//! the checkout, no terminal colour codes, whatever the tools printed.

use std::path::Path;
use std::process::{Command, Output};

use crate::gitrepo::git;

fn write(dir: &Path, file: &str, text: &str) {
    let path = dir.join(file);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

fn run(dir: &Path) -> (Output, String) {
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
    (out, text)
}

fn prompt(dir: &Path) -> String {
    std::fs::read_to_string(dir.join(".git/itergate/revision-prompt.md")).expect("a prompt")
}

/// pytest prints `cannot import name 'nothere' from 'calc' (/tmp/…/calc.py)`.
#[test]
fn a_python_import_error_is_quoted_without_the_checkouts_path() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path();
    git(p, &["init", "-q", "-b", "main"]);
    write(p, "calc.py", "def add(a, b):\n    return a + b\n");
    write(
        p,
        "tests/test_calc.py",
        "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
    );
    write(
        p,
        "pyproject.toml",
        "[tool.pytest.ini_options]\npythonpath = [\".\"]\n",
    );
    write(
        p,
        ".itergate.yml",
        "checks:\n  tests:\n    run: python3 -m pytest -q -p no:cacheprovider --junitxml=.itergate-pytest.xml\n    report: { format: junit, path: .itergate-pytest.xml }\n",
    );
    write(p, ".gitignore", ".itergate-*\n__pycache__/\n");
    git(p, &["add", "-A"]);
    git(p, &["commit", "-q", "-m", "calc"]);
    git(p, &["checkout", "-q", "-b", "agent"]);
    write(
        p,
        "tests/test_more.py",
        "from calc import nothere\n\n\ndef test_more():\n    assert nothere() == 1\n",
    );
    git(p, &["add", "-A"]);
    git(p, &["commit", "-q", "-m", "more"]);
    let (out, said) = run(p);
    assert_eq!(out.status.code(), Some(10), "{said}");
    let prompt = prompt(p);
    assert!(prompt.contains("cannot import name"), "{prompt}");
    let root = std::fs::canonicalize(p).expect("canonical");
    for shown in [p.to_string_lossy(), root.to_string_lossy()] {
        assert!(
            !prompt.contains(&*shown),
            "the checkout's path {shown}: {prompt}"
        );
    }
}

/// `cargo test --color=always`: rustc's coloured error block, quoted without its escapes.
#[test]
fn a_coloured_compiler_error_is_quoted_without_colour_codes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path();
    git(p, &["init", "-q", "-b", "main"]);
    write(
        p,
        "Cargo.toml",
        "[package]\nname = \"colours\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n",
    );
    write(
        p,
        "src/lib.rs",
        "pub fn add(a: u32, b: u32) -> u32 {\n    a + b\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() {\n        assert_eq!(super::add(1, 2), 3);\n    }\n}\n",
    );
    write(
        p,
        ".itergate.yml",
        "checks:\n  tests:\n    run: cargo test --color=always --no-fail-fast\n    report: { format: libtest, from: stdout }\n",
    );
    write(p, ".gitignore", "target/\nCargo.lock\n");
    git(p, &["add", "-A"]);
    git(p, &["commit", "-q", "-m", "add"]);
    git(p, &["checkout", "-q", "-b", "agent"]);
    write(
        p,
        "src/lib.rs",
        "pub fn add(a: u32, b: u32) -> u32 {\n    a + bb\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() {\n        assert_eq!(super::add(1, 2), 3);\n    }\n}\n",
    );
    git(p, &["commit", "-q", "-am", "typo"]);
    let (out, said) = run(p);
    assert_eq!(out.status.code(), Some(10), "{said}");
    let prompt = prompt(p);
    assert!(prompt.contains("E0425"), "{prompt}");
    assert!(!prompt.contains('\u{1b}'), "colour codes: {prompt:?}");
    assert!(!prompt.contains("\\e["), "colour codes: {prompt}");
}

/// A failing doctest is placed at its example (the line its name gives), not at the line
/// rustdoc's generated program panicked on.
#[test]
fn a_failing_doctest_is_placed_at_its_example() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path();
    git(p, &["init", "-q", "-b", "main"]);
    write(
        p,
        "Cargo.toml",
        "[package]\nname = \"doubles\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n",
    );
    let lib = "/// Adds two numbers.\npub fn add(a: u32, b: u32) -> u32 {\n    a + b\n}\n\n/// Doubles `x`.\n///\n/// ```\n/// assert_eq!(doubles::double(21), 42);\n/// ```\npub fn double(x: u32) -> u32 {\n    x * 2\n}\n";
    write(p, "src/lib.rs", lib);
    write(
        p,
        ".itergate.yml",
        "checks:\n  tests:\n    run: cargo test --no-fail-fast --color never\n    report: { format: libtest, from: stdout }\n",
    );
    write(p, ".gitignore", "target/\nCargo.lock\n");
    git(p, &["add", "-A"]);
    git(p, &["commit", "-q", "-m", "doubles"]);
    git(p, &["checkout", "-q", "-b", "agent"]);
    write(p, "src/lib.rs", &lib.replace("x * 2", "x * 2 + 1"));
    git(p, &["commit", "-q", "-am", "off by one"]);
    let (out, said) = run(p);
    assert_eq!(out.status.code(), Some(10), "{said}");
    let prompt = prompt(p);
    assert!(prompt.contains("src/lib.rs - double (line 8)"), "{prompt}");
    assert!(prompt.contains("src/lib.rs:8"), "at the example: {prompt}");
    assert!(
        !prompt.contains("src/lib.rs:1\n") && !prompt.contains("src/lib.rs:1)"),
        "{prompt}"
    );
}

/// A script that does not parse, under a runner that then writes no report (mocha does
/// this): Node's `SyntaxError` is the finding, at the script's line, and the iteration is
/// recorded (ITERATE), not refused as an environment problem.
#[test]
fn a_node_syntax_error_before_any_report_is_a_located_finding() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path();
    git(p, &["init", "-q", "-b", "main"]);
    write(
        p,
        "package.json",
        r#"{"name":"m","version":"1.0.0","type":"module"}"#,
    );
    write(
        p,
        "lib/math.js",
        "export function add(a, b) {\n  return a + b;\n}\n",
    );
    write(
        p,
        "test/math.test.js",
        "import { test } from 'node:test';\nimport assert from 'node:assert/strict';\nimport { add } from '../lib/math.js';\n\ntest('adds', () => {\n  assert.equal(add(1, 2), 3);\n});\n",
    );
    // The runner loads the code first, as mocha does, and reports only after.
    write(
        p,
        "run-tests.mjs",
        "await import('./lib/math.js');\nconst { spawnSync } = await import('node:child_process');\nconst r = spawnSync('node', ['--test', '--test-reporter=tap', 'test/'], { stdio: 'inherit' });\nprocess.exit(r.status);\n",
    );
    write(
        p,
        ".itergate.yml",
        "checks:\n  tests:\n    run: node run-tests.mjs\n    report: { format: tap, from: stdout }\n",
    );
    git(p, &["add", "-A"]);
    git(p, &["commit", "-q", "-m", "math"]);
    git(p, &["checkout", "-q", "-b", "agent"]);
    write(
        p,
        "lib/math.js",
        "export function add(a, b) {\n  return a +;\n}\n",
    );
    git(p, &["commit", "-q", "-am", "typo"]);
    let (out, said) = run(p);
    assert_eq!(out.status.code(), Some(10), "{said}");
    let prompt = prompt(p);
    assert!(
        prompt.contains("SyntaxError: Unexpected token ';'"),
        "{prompt}"
    );
    assert!(prompt.contains("lib/math.js:2"), "{prompt}");
}
