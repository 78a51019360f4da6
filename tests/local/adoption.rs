//! The adoption steps end to end (README.md, docs/src/guide/first-run.md), as a newcomer
//! follows them: clone a remote that has no configuration, `itergate init`, commit the
//! configuration on local `main` (not pushed), work on a branch. The task starts where the
//! branch left `main`: the configuration commit is the base's, iterations are numbered from
//! the branch's first commit, and the rules are the base's.

use crate::gitrepo;

use std::path::Path;
use std::process::Output;

use gitrepo::{git, TestRepo};

const BIN: &str = env!("CARGO_BIN_EXE_itergate");

const CALC: &str = "def add(a, b):\n    return a + b\n\n\ndef neg(a):\n    return -a\n";
const TESTS: &str = "from calc import add, neg\n\n\ndef test_add():\n    assert add(1, 2) == 3\n\n\ndef test_neg():\n    assert neg(2) == -2\n";

fn itergate(dir: &Path, args: &[&str]) -> Output {
    std::process::Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .expect("itergate runs")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn json(dir: &Path, args: &[&str]) -> serde_json::Value {
    let out = itergate(dir, args);
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out)))
}

/// A remote holding a small Python package with no itergate configuration, and a fresh
/// clone of it (its `origin/HEAD` set, as `git clone` sets it).
fn clone_of_unconfigured_remote() -> (TestRepo, std::path::PathBuf) {
    let upstream = TestRepo::new();
    upstream.write("calc.py", CALC);
    upstream.write("tests/test_calc.py", TESTS);
    upstream.commit_file(
        "pyproject.toml",
        "[tool.pytest.ini_options]\npythonpath = [\".\"]\n",
        "calc",
    );
    let remote = upstream.add_bare_remote();
    upstream.git(&["push", "--quiet", "origin", "main"]);
    let clone = upstream.sibling("clone");
    git(
        upstream.root.path(),
        &["clone", "--quiet", remote.to_str().expect("utf-8"), "clone"],
    );
    git(&clone, &["config", "user.name", "Newcomer"]);
    git(&clone, &["config", "user.email", "new@example.com"]);
    (upstream, clone)
}

fn commit_all(dir: &Path, message: &str) {
    git(dir, &["add", "--all"]);
    git(dir, &["commit", "--quiet", "-m", message]);
}

fn iteration(report: &serde_json::Value) -> u64 {
    report["iterationDecision"]["budget"]["currentIteration"]
        .as_u64()
        .expect("currentIteration")
}

#[test]
fn the_readme_flow_numbers_the_branch_from_one_and_locks_the_rules_committed_on_local_main() {
    let (_upstream, clone) = clone_of_unconfigured_remote();
    let out = itergate(&clone, &["init", "--no-verify"]);
    assert!(out.status.success(), "{}", text(&out));
    commit_all(&clone, "adopt itergate");
    let adopted = git(&clone, &["rev-parse", "HEAD"]);
    let out = itergate(&clone, &["hook", "install"]);
    assert!(out.status.success(), "{}", text(&out));
    git(&clone, &["checkout", "--quiet", "-b", "agent"]);

    // Iteration 1 breaks `add`; 2 breaks `neg` too; 3 fixes both.
    std::fs::write(clone.join("calc.py"), CALC.replace("a + b", "a - b")).expect("write");
    commit_all(&clone, "agent: first try");
    let first = json(&clone, &["run", "--format", "json"]);
    assert_eq!(
        iteration(&first),
        1,
        "the configuration commit is the base's"
    );
    assert_eq!(
        first["iterationDecision"]["assessment"]["recommendation"],
        "iterate"
    );
    assert_eq!(first["task"]["base"], "refs/heads/main");
    assert_eq!(first["task"]["start"], adopted.as_str());
    assert_eq!(first["task"]["rulesLocked"], true);
    let steps = first["iterationDecision"]["nextSteps"].to_string();
    assert!(steps.contains("test_add"), "{steps}");

    // The agent narrows the tests check on its branch: reported, and not used.
    let config = std::fs::read_to_string(clone.join(".itergate.yml")).expect("config");
    let narrowed = config.replace("pytest -q", "pytest -q -k 'not test_add'");
    assert_ne!(narrowed, config, "the generated check runs `pytest -q`");
    std::fs::write(clone.join(".itergate.yml"), narrowed).expect("write");
    std::fs::write(
        clone.join("calc.py"),
        CALC.replace("a + b", "a - b").replace("-a", "a"),
    )
    .expect("write");
    commit_all(&clone, "agent: second try");
    let out = itergate(&clone, &["run", "--format", "json"]);
    let said = text(&out);
    assert!(
        said.contains("the configuration changed on this branch"),
        "{said}"
    );
    let second: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(iteration(&second), 2);
    let triggers = second["iterationDecision"]["triggers"].to_string();
    assert!(
        triggers.contains("2 of 2 tests failed"),
        "the base's check still runs the deselected test: {triggers}"
    );
    assert_ne!(
        second["iterationDecision"]["assessment"]["recommendation"],
        "accept"
    );

    std::fs::write(clone.join(".itergate.yml"), &config).expect("write");
    std::fs::write(clone.join("calc.py"), CALC).expect("write");
    commit_all(&clone, "agent: third try");
    let third = json(&clone, &["run", "--format", "json"]);
    assert_eq!(iteration(&third), 3);

    // The hook, asked about the same branch, counts the same way.
    let pushed = std::process::Command::new("git")
        .args(["push", "--quiet", "origin", "agent"])
        .current_dir(&clone)
        .env("NO_COLOR", "1")
        .env_remove("ITERGATE_SKIP")
        .output()
        .expect("git push");
    let said = text(&pushed);
    assert!(said.contains("iteration 3/"), "{said}");
    let status = json(&clone, &["status", "--format", "json"]);
    assert_eq!(iteration(&status), 3);
    assert_eq!(status["task"]["start"], adopted.as_str());
}

#[test]
fn on_a_base_without_configuration_init_and_run_work_and_say_the_rules_are_unlocked() {
    let (_upstream, clone) = clone_of_unconfigured_remote();
    git(&clone, &["checkout", "--quiet", "-b", "try-it"]);
    let out = itergate(&clone, &["init", "--no-verify"]);
    assert!(out.status.success(), "{}", text(&out));
    std::fs::write(clone.join("calc.py"), CALC.replace("a + b", "a - b")).expect("write");
    commit_all(&clone, "try itergate on a broken change");
    let out = itergate(&clone, &["run", "--format", "json"]);
    let said = text(&out);
    assert!(said.contains("the rules are not locked"), "{said}");
    assert!(said.contains("commit .itergate.yml on main"), "{said}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(report["task"]["rulesLocked"], false);
    assert_eq!(
        report["iterationDecision"]["assessment"]["recommendation"],
        "iterate"
    );
    assert_eq!(iteration(&report), 1);
    let status = itergate(&clone, &["status"]);
    assert!(
        text(&status).contains("Rules: the rules are not locked"),
        "{}",
        text(&status)
    );
}

#[test]
fn the_recorded_start_keeps_the_count_when_the_branch_takes_in_its_base() {
    let (_upstream, clone) = clone_of_unconfigured_remote();
    assert!(itergate(&clone, &["init", "--no-verify"]).status.success());
    commit_all(&clone, "adopt itergate");
    let adopted = git(&clone, &["rev-parse", "HEAD"]);
    git(&clone, &["checkout", "--quiet", "-b", "agent"]);
    std::fs::write(clone.join("calc.py"), CALC.replace("a + b", "a - b")).expect("write");
    commit_all(&clone, "agent: first try");
    assert_eq!(iteration(&json(&clone, &["run", "--format", "json"])), 1);
    std::fs::write(clone.join("calc.py"), CALC).expect("write");
    commit_all(&clone, "agent: second try");
    assert_eq!(iteration(&json(&clone, &["run", "--format", "json"])), 2);

    // Meanwhile main moves on, and the branch merges it in: the merge-base moves to main's
    // tip, the task's start and the base it is judged against (pinned there) do not.
    git(&clone, &["checkout", "--quiet", "main"]);
    std::fs::write(clone.join("README.md"), "calc\n").expect("write");
    commit_all(&clone, "docs");
    let main_tip = git(&clone, &["rev-parse", "HEAD"]);
    git(&clone, &["checkout", "--quiet", "agent"]);
    git(&clone, &["merge", "--quiet", "--no-edit", "main"]);
    let third = json(&clone, &["run", "--format", "json"]);
    assert_eq!(
        iteration(&third),
        3,
        "the merge is the task's third iteration"
    );
    assert_eq!(third["task"]["start"], adopted.as_str());
    assert_eq!(
        third["iterationDecision"]["assessment"]["recommendation"],
        "accept"
    );
    let status = itergate(&clone, &["status"]);
    let said = text(&status);
    assert!(
        said.contains(&format!(
            "(recorded; the change is judged against {}, the base pinned where the task started: main has since moved to {}",
            &adopted[..7],
            &main_tip[..7]
        )),
        "{said}"
    );

    // A rebase leaves the recorded start behind: the task starts again where it now
    // leaves main.
    git(&clone, &["reset", "--quiet", "--hard", "HEAD~1"]);
    git(&clone, &["rebase", "--quiet", "main"]);
    let rebased = json(&clone, &["run", "--format", "json"]);
    assert_eq!(rebased["task"]["start"], main_tip.as_str());
    assert_eq!(iteration(&rebased), 2);
}
