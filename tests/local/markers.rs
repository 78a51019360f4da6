//! Markers of unfinished work through the real binary on real repositories: an edited or
//! moved `TODO` is the same marker, a `todo!()` in source asks for a revision at its line,
//! a `TODO` comment is a note (in tests always), and `detection.marker_comments: warning`
//! makes comments in source ask for one.

use crate::gitrepo;

use std::path::Path;
use std::process::Output;

use gitrepo::{write_script, TestRepo};

const BIN: &str = env!("CARGO_BIN_EXE_itergate");

/// Four passing tests, as JUnit.
const CHECK: &str = r#"#!/bin/sh
mkdir -p out
{
  echo '<testsuite name="s">'
  for i in 1 2 3 4; do echo "<testcase classname=\"s\" name=\"ok$i\"/>"; done
  echo '</testsuite>'
} > out/junit.xml
"#;

const LIB: &str = "pub fn a() -> u32 {\n    // TODO: remove once the MSRC is 1.60\n    1\n}\n\npub fn b() -> u32 {\n    2\n}\n";

/// A repository on branch `feature` off `main`; `extra` is appended to the configuration.
fn fixture(extra: &str) -> TestRepo {
    let repo = TestRepo::new();
    write_script(&repo.path.join("check.sh"), CHECK);
    repo.write(
        ".itergate.yml",
        &format!(
            "checks:\n  tests:\n    run: ./check.sh\n    report: {{ format: junit, path: out/junit.xml }}\nhook:\n  base: main\n{extra}"
        ),
    );
    repo.write(".gitignore", "out/\n");
    repo.write("tests/a_test.rs", "#[test]\nfn one() {}\n");
    repo.commit_file("src/lib.rs", LIB, "base");
    repo.git(&["checkout", "--quiet", "-b", "feature"]);
    repo
}

fn run(dir: &Path) -> (i32, String) {
    let out: Output = std::process::Command::new(BIN)
        .args(["run", "--exit-code"])
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env_remove("ITERGATE_SKIP")
        .output()
        .expect("itergate runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().expect("exit status"), text)
}

fn commit(repo: &TestRepo, file: &str, content: &str, message: &str) -> (i32, String) {
    repo.commit_file(file, content, message);
    run(&repo.path)
}

fn prompt(repo: &TestRepo) -> String {
    std::fs::read_to_string(repo.path.join(".git/itergate/revision-prompt.md")).expect("prompt")
}

#[test]
fn an_edited_todo_is_the_same_marker_on_this_and_every_later_commit() {
    let repo = fixture("");
    let (code, out) = commit(&repo, "src/lib.rs", &LIB.replace("MSRC", "MSRV"), "typo");
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("ACCEPT"), "{out}");
    assert!(!out.contains("incomplete_output"), "{out}");
    let later = LIB
        .replace("MSRC", "MSRV")
        .replace("    2\n", "    2 + 0\n");
    let (code, out) = commit(&repo, "src/lib.rs", &later, "later");
    assert_eq!(code, 0, "{out}");
}

#[test]
fn a_moved_todo_is_no_new_marker() {
    let repo = fixture("");
    let moved = "pub fn a() -> u32 {\n    1\n}\n\npub fn b() -> u32 {\n        // TODO: remove once the MSRC is 1.60\n    2\n}\n";
    let (code, out) = commit(&repo, "src/lib.rs", moved, "move");
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("Notes:"), "{out}");
}

#[test]
fn a_todo_macro_in_source_is_a_warning_at_its_line_and_asks_for_a_revision() {
    let repo = fixture("");
    let lib = LIB.replace("    2\n", "    todo!()\n");
    let (code, out) = commit(&repo, "src/lib.rs", &lib, "stub b");
    assert_eq!(code, 10, "ITERATE: {out}");
    assert!(out.contains("incomplete_output"), "{out}");
    let prompt = prompt(&repo);
    assert!(
        prompt.contains("src/lib.rs:7") && prompt.contains("todo!()"),
        "{prompt}"
    );
    assert!(prompt.contains("severity: WARNING"), "{prompt}");
    // Implementing it is accepted.
    let (code, out) = commit(&repo, "src/lib.rs", LIB, "implement b");
    assert_eq!(code, 0, "{out}");
}

#[test]
fn a_todo_comment_is_a_note_and_in_a_test_file_never_more() {
    let repo = fixture("detection: { marker_comments: warning }\n");
    let test = "#[test]\nfn one() {}\n// TODO: cover the empty input\n";
    let (code, out) = commit(&repo, "tests/a_test.rs", test, "note in a test");
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("Notes:") && out.contains("TODO comment added at tests/a_test.rs:3"),
        "{out}"
    );
}

#[test]
fn comments_in_source_are_notes_by_default_and_warnings_when_configured() {
    let lib = LIB.replace("    2\n", "    // FIXME: overflow\n    2\n");
    let lenient = fixture("");
    let (code, out) = commit(&lenient, "src/lib.rs", &lib, "note");
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("FIXME comment added at src/lib.rs:7"), "{out}");

    let strict = fixture("detection: { marker_comments: warning }\n");
    let (code, out) = commit(&strict, "src/lib.rs", &lib, "note");
    assert_eq!(code, 10, "ITERATE: {out}");
    let prompt = prompt(&strict);
    assert!(
        prompt.contains("src/lib.rs:7") && prompt.contains("FIXME"),
        "{prompt}"
    );
}
