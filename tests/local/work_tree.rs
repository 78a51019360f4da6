//! The work tree is the user's: checks run in a checkout of the commit, so a check that
//! rewrites tracked files while it runs (a formatter, `ruff` with `fix = true`) leaves the
//! user's files alone and is reported as a WARNING naming the files and the checks that
//! ran, on a real repository through the real binary.

use std::path::Path;
use std::process::{Command, Output};

use crate::gitrepo;
use gitrepo::git;

fn itergate(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_itergate"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .expect("itergate runs")
}

/// `fix` drops the unused import from the file it lints, as `ruff check` with `fix = true`
/// does, and reports nothing; `tests` leaves the tree alone.
const CONFIG: &str = r#"
checks:
  fix:
    run: sed -i '/^import os$/d' src/enc.py
  tests:
    run: "true"
"#;

fn repo(config: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path();
    git(p, &["init", "-q", "-b", "main"]);
    std::fs::create_dir_all(p.join("src")).expect("mkdir");
    std::fs::write(p.join("src/enc.py"), "x = 1\n").expect("write");
    std::fs::write(p.join(".itergate.yml"), config).expect("write");
    git(p, &["add", "."]);
    git(p, &["commit", "-q", "-m", "base"]);
    git(p, &["checkout", "-q", "-b", "feature"]);
    std::fs::write(p.join("src/enc.py"), "import os\nx = 1\n").expect("write");
    git(p, &["commit", "-q", "-am", "import os"]);
    dir
}

fn issues_of(o: &Output) -> Vec<serde_json::Value> {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json record");
    r["issues"].as_array().cloned().unwrap_or_default()
}

#[test]
fn a_check_that_rewrites_a_tracked_file_in_the_work_tree_is_reported() {
    let dir = repo(CONFIG);
    let p = dir.path();
    let o = itergate(p, &["score", "--format", "json"]);
    let stderr = String::from_utf8_lossy(&o.stderr).to_string();
    let issues = issues_of(&o);
    // The checks ran in a checkout of the commit: the user's file is as it was.
    assert_eq!(
        std::fs::read_to_string(p.join("src/enc.py")).expect("read"),
        "import os\nx = 1\n"
    );
    let warning = issues
        .iter()
        .find(|i| i["dimension"] == "checks")
        .unwrap_or_else(|| panic!("a warning about rewritten files: {issues:?}"));
    assert_eq!(warning["severity"], "WARNING");
    assert_eq!(warning["affected_field"], "src/enc.py");
    let finding = warning["finding"].as_str().unwrap_or_default();
    assert!(
        finding.contains("src/enc.py") && finding.contains("`fix`") && finding.contains("`tests`"),
        "names the file and the checks that ran: {finding}"
    );
    assert!(
        warning["suggested_fix"]
            .as_str()
            .is_some_and(|s| s.contains("ruff check --no-fix")),
        "{warning}"
    );
    assert!(
        !stderr.contains("tracked files in your work tree changed"),
        "{stderr}"
    );
}

#[test]
fn a_single_rewriting_check_is_named_alone_and_read_only_checks_say_nothing() {
    let only = "checks:\n  fix:\n    run: sed -i '/^import os$/d' src/enc.py\n";
    let dir = repo(only);
    let issues = issues_of(&itergate(dir.path(), &["score", "--format", "json", "-q"]));
    let warning = issues
        .iter()
        .find(|i| i["dimension"] == "checks")
        .unwrap_or_else(|| panic!("{issues:?}"));
    let finding = warning["finding"].as_str().unwrap_or_default();
    assert!(
        finding.starts_with("check `fix` changed tracked files"),
        "{finding}"
    );

    let read_only = "checks:\n  lint:\n    run: grep -q x src/enc.py\n";
    let dir = repo(read_only);
    let issues = issues_of(&itergate(dir.path(), &["score", "--format", "json", "-q"]));
    assert!(
        issues.iter().all(|i| i["dimension"] != "checks"),
        "{issues:?}"
    );
}
