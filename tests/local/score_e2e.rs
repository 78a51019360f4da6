//! `itergate score` on a real temporary git repository whose checks are small scripts.

use std::path::Path;
use std::process::{Command, Output};

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
        .output()
        .expect("itergate runs")
}

const CONFIG: &str = r#"
checks:
  tests:
    run: sh checks/tests.sh
    report: { format: junit, path: out/junit.xml }
  coverage:
    run: sh checks/coverage.sh
    report: { format: lcov, path: out/lcov.info }
  lint:
    run: sh checks/lint.sh
    report: { format: sarif, from: stdout }
"#;

const TESTS: &str = r#"mkdir -p out
cat > out/junit.xml <<'X'
<?xml version="1.0" encoding="UTF-8"?>
<testsuites><testsuite name="calc" tests="4" failures="1" skipped="0">
<testcase classname="calc" name="adds"/>
<testcase classname="calc" name="subtracts"/>
<testcase classname="calc" name="multiplies"/>
<testcase classname="calc" name="divides" file="src/calc.py" line="7"><failure message="ZeroDivisionError: division by zero">trace</failure></testcase>
</testsuite></testsuites>
X
exit 1
"#;

/// Every line of src/calc.py is executable; lines 3 and 4 are never run.
const COVERAGE: &str = r#"mkdir -p out
n=$(wc -l < src/calc.py)
{
  echo SF:src/calc.py
  i=1; while [ $i -le $n ]; do
    case $i in 3|4) echo "DA:$i,0" ;; *) echo "DA:$i,1" ;; esac; i=$((i+1))
  done
  echo end_of_record
} > out/lcov.info
"#;

/// One warning at line 2 of src/calc.py, once it has a line 2.
const LINT: &str = r#"if [ "$(wc -l < src/calc.py)" -lt 2 ]; then
  echo '{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"lint"}},"results":[]}]}'
  exit 0
fi
cat <<'X'
{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"lint"}},"results":[
 {"ruleId":"W1","level":"warning","message":{"text":"line too long"},
  "locations":[{"physicalLocation":{"artifactLocation":{"uri":"src/calc.py"},"region":{"startLine":2}}}]}]}]}
X
"#;

fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path();
    git(p, &["init", "-q", "-b", "main"]);
    std::fs::create_dir_all(p.join("src")).expect("mkdir");
    std::fs::create_dir_all(p.join("checks")).expect("mkdir");
    std::fs::write(p.join("src/calc.py"), "a = 1\n").expect("write");
    std::fs::write(p.join(".itergate.yml"), CONFIG).expect("write");
    std::fs::write(p.join("checks/tests.sh"), TESTS).expect("write");
    std::fs::write(p.join("checks/coverage.sh"), COVERAGE).expect("write");
    std::fs::write(p.join("checks/lint.sh"), LINT).expect("write");
    std::fs::write(p.join(".gitignore"), "out/\n").expect("write");
    git(p, &["add", "."]);
    git(p, &["commit", "-q", "-m", "base"]);
    git(p, &["checkout", "-q", "-b", "feature"]);
    std::fs::write(
        p.join("src/calc.py"),
        "a = 1\nb = 2\nc = 3\nd = 4 # TODO handle e\ne = 5\n",
    )
    .expect("write");
    git(
        p,
        &[
            "commit",
            "-q",
            "-am",
            "Add b..e\n\nTokens-Used: 1200\nConfidence: 0.9\nCost-USD: lots",
        ],
    );
    dir
}

#[test]
fn scores_the_change_from_real_reports() {
    let dir = repo();
    let o = itergate(dir.path(), &["score", "--format", "json", "-q"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json record");
    assert_eq!(r["iteration"], 1);
    // The failing test fails on the base too: the base's debt, not the change's.
    assert_eq!(r["scores"]["tests_passing"], 1.0);
    assert_eq!(r["base_debt"]["failing_tests"], 1);
    assert_eq!(r["base_debt"]["examples"][0], "calc::divides");
    // Coverage is patch coverage: changed lines 2..5; 3 and 4 are uncovered.
    assert_eq!(r["scores"]["coverage"], 0.5);
    assert_eq!(r["metrics"]["patch_coverage"], 0.5);
    assert_eq!(r["metrics"]["coverage.project"], 0.6);
    // One new warning in a 4-line change: 1 / (1 + 0.5).
    let quality = r["scores"]["code_quality"].as_f64().expect("code quality");
    assert!((quality - 1.0 / 1.5).abs() < 1e-9, "{quality}");
    assert_eq!(r["status"], "pass");
    assert_eq!(r["tokens_used"], 1200);
    assert_eq!(r["confidence"], 0.9);
    let issues = r["issues"].as_array().expect("issues");
    let find = |s: &str| issues.iter().any(|i| i.to_string().contains(s));
    assert!(
        !find("src/calc.py:7"),
        "the base's failure is not an issue: {issues:?}"
    );
    assert!(find("src/calc.py:3-4"), "uncovered span: {issues:?}");
    assert!(
        find("Cost-USD: lots"),
        "malformed trailer reported: {issues:?}"
    );
    let triggers = r["triggers"].to_string();
    assert!(!triggers.contains("validation_failure"), "{triggers}");
    // A TODO comment is a note, not a revision.
    assert!(!triggers.contains("incomplete_output"), "{triggers}");
    let note = issues
        .iter()
        .find(|i| i["affected_field"] == "src/calc.py:4")
        .expect("the TODO comment is noted");
    assert_eq!(note["severity"], "INFO", "{note}");
    assert_eq!(note["dimension"], "incomplete_output", "{note}");

    // The whole tree, on request (a configuration of the branch's, so named): the same
    // (cached) observation, judged as a whole.
    let config = format!("{CONFIG}scoring: {{ scope: whole }}\n");
    std::fs::write(dir.path().join(".itergate.yml"), config).expect("write");
    git(dir.path(), &["commit", "-q", "-am", "judge the whole tree"]);
    let o = itergate(
        dir.path(),
        &[
            "--config",
            ".itergate.yml",
            "score",
            "--format",
            "json",
            "-q",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json record");
    assert_eq!(r["scores"]["tests_passing"], 0.75);
    assert_eq!(r["scores"]["coverage"], 0.6);
    assert_eq!(r["status"], "fail");
    let issues = r["issues"].to_string();
    assert!(
        issues.contains("src/calc.py:7"),
        "failing test location: {issues}"
    );
    let triggers = r["triggers"].to_string();
    assert!(triggers.contains("1 of 4 tests failed"), "{triggers}");
}

#[test]
fn ingests_reports_without_running_anything() {
    let dir = repo();
    let p = dir.path();
    std::fs::create_dir_all(p.join("given")).expect("mkdir");
    std::fs::write(
        p.join("given/lcov.info"),
        "SF:src/calc.py\nDA:1,1\nDA:2,1\nend_of_record\n",
    )
    .expect("write");
    let o = itergate(
        p,
        &[
            "score",
            "--report",
            "lcov:given/lcov.info",
            "--format",
            "json",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(r["scores"]["coverage"], 1.0);
    assert!(
        r["scores"].get("tests_passing").is_none(),
        "nothing ran: {r}"
    );
    assert!(
        !p.join("out/junit.xml").exists(),
        "the tests check must not have run"
    );
    let o = itergate(p, &["score", "--report", "nope:x"]);
    assert_eq!(o.status.code(), Some(2));
    insta::assert_snapshot!(String::from_utf8_lossy(&o.stderr), @"itergate: error: unknown report format `nope`; expected one of: junit, tap, libtest, lcov, cobertura, clover, jacoco, sarif, cargo-json, checkstyle, ruff-json, mypy-json, pyright-json, eslint-json, lizard, go-test-json, go-cover, go-vet, tsc, jest-json, istanbul-json");
}

#[test]
fn a_given_report_path_through_a_link_out_of_the_work_tree_is_refused() {
    let dir = repo();
    let p = dir.path();
    let elsewhere = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        elsewhere.path().join("lcov.info"),
        "SF:src/calc.py\nDA:1,1\nend_of_record\n",
    )
    .expect("write");
    std::os::unix::fs::symlink(elsewhere.path(), p.join("given")).expect("symlink");
    let o = itergate(p, &["score", "--report", "lcov:given/lcov.info"]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    let stderr = stderr
        .replace(elsewhere.path().to_str().expect("utf-8"), "<elsewhere>")
        .replace(p.to_str().expect("utf-8"), "<dir>");
    insta::with_settings!({ filters => redact::filters() }, {
        insta::assert_snapshot!(stderr, @"itergate: error: <dir>/given/lcov.info: cannot open the report: `given` is a symbolic link to <elsewhere>, outside the work tree <dir>");
    });
    // Named outside the work tree by the caller, the same file is read.
    let outside = format!("lcov:{}", elsewhere.path().join("lcov.info").display());
    let o = itergate(p, &["score", "--report", &outside, "--format", "json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn a_hanging_check_is_stopped_at_its_timeout() {
    let dir = repo();
    let p = dir.path();
    // Only the branch hangs: its tree has the file `hang`.
    std::fs::write(
        p.join(".itergate.yml"),
        "checks:\n  slow:\n    run: echo started; if [ -f hang ]; then sleep 30; fi\n    timeout: 1\n",
    )
    .expect("write");
    std::fs::write(p.join("hang"), "").expect("write");
    git(p, &["add", "."]);
    git(p, &["commit", "-q", "-m", "hang"]);
    let started = std::time::Instant::now();
    let o = itergate(
        p,
        &[
            "--config",
            ".itergate.yml",
            "score",
            "--format",
            "json",
            "-q",
        ],
    );
    assert!(
        started.elapsed().as_secs() < 10,
        "took {:?}",
        started.elapsed()
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    // A hang is the work's failure (on this tree, not on the base).
    assert_eq!(r["status"], "fail");
    assert!(
        r["issues"].to_string().contains("did not finish within 1s"),
        "{r}"
    );
}

#[test]
fn a_non_head_commit_is_scored_in_a_worktree() {
    let dir = repo();
    let p = dir.path();
    let before = std::fs::read_to_string(p.join("src/calc.py")).expect("read");
    let o = itergate(p, &["score", "--rev", "main", "--format", "json", "-q"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        std::fs::read_to_string(p.join("src/calc.py")).expect("read"),
        before
    );
    assert!(
        !p.join("out").exists(),
        "checks ran in the user's work tree"
    );
}

#[test]
fn init_writes_a_config_we_accept() {
    let dir = tempfile::tempdir().expect("tempdir");
    git(dir.path(), &["init", "-q"]);
    std::fs::write(dir.path().join("Cargo.toml"), "[package]\nname = \"x\"\n").expect("write");
    let o = itergate(dir.path(), &["init", "--no-verify"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(dir.path().join(".itergate.yml")).expect("written");
    assert!(
        text.contains("cargo clippy") && text.contains("cargo-json"),
        "{text}"
    );
    let o = itergate(dir.path(), &["init", "--no-verify"]);
    assert_eq!(o.status.code(), Some(2), "refuses to overwrite");
}

#[test]
fn holdout_details_go_to_the_private_path_only() {
    let dir = repo();
    let p = dir.path();
    std::fs::write(
        p.join(".itergate.yml"),
        "checks:\n  holdout:\n    run: sh checks/tests.sh\n    report: { format: junit, path: out/junit.xml }\n    visibility: aggregate_only\nscoring: { scope: whole }\n",
    )
    .expect("write");
    let o = itergate(
        p,
        &[
            "--config",
            ".itergate.yml",
            "score",
            "--format",
            "json",
            "-q",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let visible = String::from_utf8_lossy(&o.stdout);
    assert!(
        !visible.contains("divides") && !visible.contains("ZeroDivisionError"),
        "{visible}"
    );
    assert!(visible.contains("3 of 4 passed"), "{visible}");
    let r: serde_json::Value = serde_json::from_str(&visible).expect("json");
    let commit = r["commit"].as_str().expect("commit");
    let private = std::fs::read_to_string(
        p.join(".git/itergate/private")
            .join(commit)
            .join("holdout.json"),
    )
    .expect("private diagnostics written");
    assert!(private.contains("divides"), "{private}");
}

#[test]
fn a_scratch_worktree_left_by_a_killed_run_is_pruned_by_the_next() {
    let dir = repo();
    let p = dir.path();
    // A process that has exited: its pid names the abandoned worktree.
    let mut child = Command::new("true").spawn().expect("true");
    let dead = child.id();
    child.wait().expect("wait");
    let abandoned = std::env::temp_dir().join(format!("itergate-wt-{dead}-0-deadbeef"));
    git(
        p,
        &[
            "worktree",
            "add",
            "--detach",
            "--quiet",
            &abandoned.to_string_lossy(),
            "HEAD",
        ],
    );
    let listed = |p: &Path| {
        let out = Command::new("git")
            .args(["worktree", "list", "--porcelain"])
            .current_dir(p)
            .output()
            .expect("git");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert!(listed(p).contains("itergate-wt-"), "{}", listed(p));
    // A non-HEAD commit is scored in a scratch worktree: creating it prunes the old one.
    let o = itergate(p, &["score", "--rev", "HEAD~1", "--format", "json", "-q"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!listed(p).contains("itergate-wt-"), "{}", listed(p));
    assert!(!abandoned.exists(), "the abandoned checkout is deleted");
}

#[test]
fn run_and_status_speak_json_and_exit_by_recommendation() {
    let dir = repo();
    let p = dir.path();
    // The feature branch adds a warning the base does not have: iterate.
    let o = itergate(p, &["-q", "run", "--format", "json", "--exit-code"]);
    assert_eq!(
        o.status.code(),
        Some(10),
        "iterate exits 10: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        String::from_utf8_lossy(&o.stderr).trim().is_empty(),
        "-q prints only errors: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json report");
    let decision = &report["iterationDecision"];
    assert_eq!(
        decision["assessment"]["recommendation"], "iterate",
        "{report}"
    );
    assert!(decision["triggers"].is_array(), "{report}");
    // status reads the same decision, runs nothing.
    let o = itergate(p, &["status", "--format", "json", "--exit-code"]);
    assert_eq!(o.status.code(), Some(10));
    let again: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json report");
    assert_eq!(
        again["iterationDecision"]["assessment"],
        report["iterationDecision"]["assessment"]
    );
    // Without --exit-code a decision is not an error.
    let o = itergate(p, &["status"]);
    assert_eq!(o.status.code(), Some(0));
    insta::with_settings!({ filters => redact::filters() }, {
        insta::assert_snapshot!("score_e2e_status", String::from_utf8_lossy(&o.stdout));
    });
}

/// `itergate score` of a non-HEAD commit with one slow check, stopped by `signal` once the
/// check runs: the exit status, how long it took, and what is left.
fn interrupted_by(signal: i32) -> (Option<i32>, std::time::Duration, String, bool) {
    let dir = repo();
    let p = dir.path();
    let marks = tempfile::tempdir().expect("tempdir");
    let started = marks.path().join("started");
    let finished = marks.path().join("finished");
    std::fs::write(
        p.join(".itergate.yml"),
        format!(
            "checks:\n  slow:\n    run: touch {}; sleep 20; touch {}\n",
            started.display(),
            finished.display()
        ),
    )
    .expect("write");
    git(p, &["commit", "-q", "-am", "a slow check"]);
    let mut child = Command::new(env!("CARGO_BIN_EXE_itergate"))
        .args([
            "--config",
            ".itergate.yml",
            "score",
            "--rev",
            "HEAD~1",
            "-q",
        ])
        .current_dir(p)
        .spawn()
        .expect("itergate runs");
    let begun = std::time::Instant::now();
    while !started.exists() {
        assert!(begun.elapsed().as_secs() < 20, "the check never started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let pid = i32::try_from(child.id()).expect("pid");
    unsafe {
        libc::kill(pid, signal);
    }
    let status = child.wait().expect("wait");
    let took = begun.elapsed();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let out = Command::new("git")
        .args(["worktree", "list", "--porcelain"])
        .current_dir(p)
        .output()
        .expect("git");
    (
        status.code(),
        took,
        String::from_utf8_lossy(&out.stdout).into_owned(),
        finished.exists(),
    )
}

#[test]
fn ctrl_c_and_sigterm_stop_the_checks_and_leave_no_worktree() {
    for (signal, code) in [(libc::SIGINT, 130), (libc::SIGTERM, 143)] {
        let (status, took, worktrees, finished) = interrupted_by(signal);
        assert_eq!(status, Some(code), "signal {signal}");
        assert!(
            took.as_secs() < 10,
            "stopped at once, not after the check: {took:?}"
        );
        assert!(!worktrees.contains("itergate-wt-"), "{worktrees}");
        assert!(!finished, "the check's process group was stopped too");
    }
}

#[test]
fn one_check_writes_two_reports_and_both_are_scored() {
    let dir = repo();
    let p = dir.path();
    let config = r#"
checks:
  tests:
    run: sh checks/tests.sh; status=$?; sh checks/coverage.sh; exit $status
    report:
      - { format: junit, path: out/junit.xml }
      - { format: lcov, path: out/lcov.info }
"#;
    std::fs::write(p.join(".itergate.yml"), config).expect("write");
    git(p, &["commit", "-q", "-am", "one check, two reports"]);
    let o = itergate(p, &["score", "--format", "json", "-q"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json record");
    // The JUnit report: the failing test is the base's debt.
    assert_eq!(r["scores"]["tests_passing"], 1.0);
    assert_eq!(r["base_debt"]["failing_tests"], 1);
    // The LCOV report of the same run: patch coverage of the change's lines.
    assert_eq!(r["scores"]["coverage"], 0.5);
    assert_eq!(r["metrics"]["coverage.project"], 0.6);
    assert!(
        r["issues"].to_string().contains("src/calc.py:3-4"),
        "{}",
        r["issues"]
    );
}

/// A test file that cannot be imported on the base nor after the change (a missing test
/// dependency), and the change edits that very file: its tests never ran, so the change is
/// unmeasured there and says so — never "Tests Passing: 100%" over "the base's failures".
#[test]
fn a_changed_test_file_that_never_runs_is_unmeasured_not_passed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path();
    git(p, &["init", "-q", "-b", "main"]);
    let write = |file: &str, text: &str| {
        let path = p.join(file);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    };
    write("calc.py", "def add(a, b):\n    return a + b\n");
    write(
        "tests/test_calc.py",
        "import not_installed_anywhere\nfrom calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
    );
    write(
        "tests/test_other.py",
        "def test_other():\n    assert True\n",
    );
    write(
        "pyproject.toml",
        "[tool.pytest.ini_options]\npythonpath = [\".\"]\n",
    );
    write(".gitignore", ".itergate-*\n__pycache__/\n");
    write(
        ".itergate.yml",
        "checks:\n  tests:\n    run: python -m pytest -q -p no:cacheprovider --junitxml=.itergate-pytest.xml\n    report: { format: junit, path: .itergate-pytest.xml }\n",
    );
    git(p, &["add", "-A"]);
    git(p, &["commit", "-q", "-m", "base"]);
    git(p, &["checkout", "-q", "-b", "agent"]);
    write(
        "tests/test_calc.py",
        "import not_installed_anywhere\nfrom calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n\n\ndef test_add_zero():\n    assert add(0, 0) == 1\n",
    );
    git(p, &["commit", "-q", "-am", "agent: a test that would fail"]);
    let out = itergate(p, &["run", "--exit-code"]);
    let text = String::from_utf8_lossy(&out.stderr);
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(
            "score_e2e_unrun_test_file",
            text.replace(p.to_str().expect("utf-8"), "<dir>")
        );
    });
    // A property, whatever the snapshot says: a test that never ran is not a pass.
    assert!(!text.contains("Tests Passing: 100%"), "{text}");
    assert_eq!(out.status.code(), Some(10), "{text}");
}

/// With one slot, the checks run one at a time: the first time in name order, then the
/// slowest of the last run first (so the run is not left waiting on a long check started
/// last).
#[test]
fn the_slowest_check_of_the_last_run_starts_first() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path();
    let log = dir.path().join("started.log");
    git(p, &["init", "-q", "-b", "main"]);
    let config = format!(
        "checks:\n  a_quick:\n    run: echo a_quick >> {log}\n  z_slow:\n    run: echo z_slow >> {log}; sleep 1\n",
        log = log.display()
    );
    std::fs::write(p.join(".itergate.yml"), config).expect("write");
    git(p, &["add", "."]);
    git(p, &["commit", "-q", "-m", "base"]);
    let started = || {
        let o = itergate(p, &["--jobs", "1", "score", "--rescore", "-q"]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let order = std::fs::read_to_string(&log).expect("the checks ran");
        std::fs::remove_file(&log).expect("remove");
        order.lines().map(str::to_string).collect::<Vec<_>>()
    };
    assert_eq!(started(), ["a_quick", "z_slow"], "never timed: by name");
    assert_eq!(started(), ["z_slow", "a_quick"], "the slow one first");
    let kept = std::fs::read_to_string(p.join(".git/itergate/check-seconds.json")).expect("kept");
    assert!(kept.contains("\"z_slow\":1."), "{kept}");
}
