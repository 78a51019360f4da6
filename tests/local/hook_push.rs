//! The pre-push hook end to end: real repositories, real `git push` to a bare remote, the
//! real itergate binary installed as the hook.

use crate::gitrepo;

use std::path::{Path, PathBuf};
use std::process::Output;

use gitrepo::{git, git_cmd, git_output, write_script, TestRepo};

const BIN: &str = env!("CARGO_BIN_EXE_itergate");

/// A repository whose `tests` check reads `results.txt` ("<passed> <failed>"), writes a
/// JUnit report, and counts its runs in a file outside the repository.
struct Fixture {
    repo: TestRepo,
    remote: PathBuf,
    counter: PathBuf,
}

const CHECK: &str = r#"#!/bin/sh
echo run >> "$COUNT_FILE"
read passed failed < results.txt
mkdir -p out
{
  echo '<testsuite name="s">'
  i=0; while [ $i -lt $passed ]; do echo "<testcase classname=\"s\" name=\"t$i\"/>"; i=$((i+1)); done
  j=0; while [ $j -lt $failed ]; do echo "<testcase classname=\"s\" name=\"t$i\" file=\"lib.txt\" line=\"$((j+1))\"><failure message=\"boom\"/></testcase>"; i=$((i+1)); j=$((j+1)); done
  echo '</testsuite>'
} > out/junit.xml
"#;

impl Fixture {
    fn new(gate: &str) -> Fixture {
        let repo = TestRepo::new();
        let counter = repo.sibling("runs.txt");
        std::fs::write(&counter, "").expect("counter");
        write_script(&repo.path.join("check.sh"), CHECK);
        repo.write(
            ".itergate.yml",
            &format!(
                "checks:\n  tests:\n    run: ./check.sh\n    report: {{ format: junit, path: out/junit.xml }}\n    env: {{ COUNT_FILE: {} }}\nhook:\n  gate: {gate}\n  base: main\n",
                counter.display()
            ),
        );
        repo.write(".gitignore", "out/\n");
        repo.commit_file("results.txt", "4 0\n", "base");
        let remote = repo.add_bare_remote();
        repo.git(&["push", "--quiet", "--no-verify", "origin", "main"]);
        let out = itergate(&repo.path, &["hook", "install"]);
        assert!(out.status.success(), "{}", stderr(&out));
        repo.git(&["checkout", "--quiet", "-b", "feature"]);
        Fixture {
            repo,
            remote,
            counter,
        }
    }

    /// Commits `content` as `file` on `main` (pushed) and brings `feature` onto it: what
    /// judges the branch is the base's configuration.
    fn on_base(&self, file: &str, content: &str) {
        self.repo.git(&["checkout", "--quiet", "main"]);
        self.repo
            .commit_file(file, content, "configure on the base");
        self.repo
            .git(&["push", "--quiet", "--no-verify", "origin", "main"]);
        self.repo.git(&["checkout", "--quiet", "feature"]);
        self.repo.git(&["rebase", "--quiet", "main"]);
    }

    fn runs(&self) -> usize {
        std::fs::read_to_string(&self.counter)
            .expect("counter")
            .lines()
            .count()
    }

    fn push(&self, args: &[&str]) -> Output {
        let mut command = git_cmd(&self.repo.path);
        command
            .arg("push")
            .args(args)
            .env_remove("ITERGATE_SKIP")
            .env("NO_COLOR", "1");
        command.output().expect("git push runs")
    }

    fn remote_ref(&self, branch: &str) -> Option<String> {
        let out = git_output(
            &self.remote,
            &[
                "rev-parse",
                "--verify",
                "--quiet",
                &format!("refs/heads/{branch}"),
            ],
        );
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    fn note(&self, commit: &str) -> Option<serde_json::Value> {
        let out = git_output(
            &self.repo.path,
            &["notes", "--ref", "itergate", "show", commit],
        );
        if !out.status.success() {
            return None;
        }
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("note is JSON");
        Some(v.get("record").cloned().unwrap_or(v))
    }
}

fn itergate(dir: &Path, args: &[&str]) -> Output {
    std::process::Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .expect("itergate runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn first_push_then_improving_then_regressing() {
    let f = Fixture::new("warn");
    let first = f
        .repo
        .commit_file("results.txt", "3 1\n", "one test still fails");
    let out = f.push(&["origin", "feature"]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("Decision: ITERATE"), "{err}");
    assert!(
        err.contains("Revision iteration 1/3 -- 1 blockers, 0 warnings"),
        "{err}"
    );
    assert_eq!(
        f.note(&first).expect("recorded")["scores"]["tests_passing"],
        0.75
    );
    let prompt = std::fs::read_to_string(f.repo.path.join(".git/itergate/revision-prompt.md"))
        .expect("prompt written");
    assert!(
        prompt.contains("<checker_issues>") && prompt.contains("lib.txt:1"),
        "{prompt}"
    );
    assert_eq!(f.remote_ref("feature"), Some(first));

    let second = f.repo.commit_file("results.txt", "4 0\n", "all pass");
    let out = f.push(&["origin", "feature"]);
    let err = stderr(&out);
    assert!(
        out.status.success() && err.contains("Decision: ACCEPT"),
        "{err}"
    );
    assert!(err.contains("(+0.250)"), "the delta is shown: {err}");

    f.repo.commit_file("results.txt", "2 2\n", "worse");
    let out = f.push(&["origin", "feature"]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("Best iteration so far: 2"), "{err}");
    assert!(f.note(&second).is_some());
    // Iteration 2 has the base's tree: the cache scores it only once.
    assert_eq!(f.runs(), 3, "three trees, each scored once");
}

#[test]
fn the_cache_runs_nothing_for_a_tree_already_scored() {
    let f = Fixture::new("warn");
    f.repo.commit_file("results.txt", "3 1\n", "first");
    assert!(f.push(&["origin", "feature"]).status.success());
    assert_eq!(f.runs(), 2, "the iteration and the base");
    // Same tree, new message: amend and force-push.
    f.repo.git(&[
        "commit",
        "--quiet",
        "--amend",
        "-m",
        "first, reworded\n\nTokens-Used: 900",
    ]);
    let amended = f.repo.head();
    let out = f.push(&["--force", "origin", "feature"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(f.runs(), 2, "no check ran for a cached tree");
    let note = f.note(&amended).expect("the amended commit is recorded");
    assert_eq!(
        note["tokens_used"], 900,
        "trailers are read from the new commit"
    );
    assert_eq!(note["commit"], amended.as_str());
}

#[test]
fn score_each_records_every_new_commit_in_its_own_worktree() {
    let f = Fixture::new("warn");
    let config = std::fs::read_to_string(f.repo.path.join(".itergate.yml")).expect("config");
    f.on_base(
        ".itergate.yml",
        &config.replace("hook:\n", "hook:\n  score: each\n"),
    );
    let first = f.repo.commit_file("results.txt", "1 3\n", "one of four");
    let second = f.repo.commit_file("results.txt", "2 2\n", "two of four");
    let third = f.repo.commit_file("results.txt", "3 1\n", "three of four");
    let status_before = f.repo.git(&["status", "--porcelain"]);

    let out = f.push(&["origin", "feature"]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    let passing: Vec<_> = [&first, &second, &third]
        .iter()
        .map(|c| {
            f.note(c).expect("every pushed commit is recorded")["scores"]["tests_passing"].clone()
        })
        .collect();
    assert_eq!(
        passing,
        [0.25, 0.5, 0.75],
        "each commit scored on its own tree"
    );
    assert_eq!(f.runs(), 4, "three commits and the base");
    assert!(
        err.contains("iteration 3/"),
        "the decision is on the tip: {err}"
    );
    // Scored in temporary worktrees that are gone again; the user's checkout is untouched.
    let worktrees = f.repo.git(&["worktree", "list", "--porcelain"]);
    assert_eq!(worktrees.matches("worktree ").count(), 1, "{worktrees}");
    assert_eq!(f.repo.git(&["status", "--porcelain"]), status_before);

    // The next push scores only what is new.
    f.repo.commit_file("results.txt", "5 0\n", "all pass");
    let out = f.push(&["origin", "feature"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(f.runs(), 5);
}

#[test]
fn force_push_delete_and_two_refs() {
    let f = Fixture::new("warn");
    f.repo.commit_file("results.txt", "3 1\n", "a");
    assert!(f.push(&["origin", "feature"]).status.success());
    f.repo.git(&["reset", "--quiet", "--hard", "main"]);
    let rewritten = f.repo.commit_file("rewritten.txt", "new", "rewritten");
    let out = f.push(&["--force", "origin", "feature"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(f.remote_ref("feature"), Some(rewritten));

    f.repo.git(&["branch", "other"]);
    f.repo.git(&["checkout", "--quiet", "other"]);
    f.repo.commit_file("results.txt", "2 2\n", "other work");
    let out = f.push(&["origin", "feature", "other"]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert_eq!(
        err.matches("Decision:").count(),
        1,
        "feature is unchanged, only other is pushed: {err}"
    );

    f.repo
        .git(&["commit", "--quiet", "--allow-empty", "-m", "more"]);
    f.repo.git(&["checkout", "--quiet", "feature"]);
    f.repo.git(&[
        "commit",
        "--quiet",
        "--allow-empty",
        "-m",
        "more on feature",
    ]);
    let out = f.push(&["origin", "feature", "other"]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert_eq!(
        err.matches("Decision:").count(),
        2,
        "two refs, two decisions: {err}"
    );

    let out = f.push(&["origin", "--delete", "other"]);
    let err = stderr(&out);
    assert!(
        out.status.success() && err.contains("nothing to score"),
        "{err}"
    );
    assert_eq!(f.remote_ref("other"), None);
}

#[test]
fn gate_blocks_and_the_remote_is_unchanged() {
    let f = Fixture::new("block-on-iterate");
    f.repo.commit_file("results.txt", "3 1\n", "failing");
    let out = f.push(&["origin", "feature"]);
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("push blocked by hook.gate `block-on-iterate`") && err.contains("--no-verify"),
        "{err}"
    );
    assert_eq!(f.remote_ref("feature"), None);

    let runs = f.runs();
    let out = f.push(&["--no-verify", "origin", "feature"]);
    assert!(out.status.success());
    assert_eq!(f.runs(), runs, "--no-verify runs nothing");

    f.repo.commit_file("more.txt", "x", "more");
    let mut skip = git_cmd(&f.repo.path);
    let out = skip
        .args(["push", "origin", "feature"])
        .env("ITERGATE_SKIP", "1")
        .output()
        .expect("push");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(f.runs(), runs, "ITERGATE_SKIP runs nothing");
}

#[test]
fn block_on_escalate_lets_iterate_through() {
    let f = Fixture::new("block-on-escalate");
    f.repo.commit_file("results.txt", "3 1\n", "failing");
    assert!(f.push(&["origin", "feature"]).status.success());
    // The same failure again: the issue count does not fall, the loop stalls -> escalate.
    f.repo.commit_file("other.txt", "y", "no progress");
    let out = f.push(&["origin", "feature"]);
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("escalate") && err.contains("stalled"), "{err}");
}

#[test]
fn a_chained_hook_that_fails_still_blocks() {
    let f = Fixture::new("warn");
    let hooks = f.repo.path.join(".git/hooks");
    write_script(
        &hooks.join("pre-push.itergate-chained"),
        "#!/bin/sh\necho 'policy says no' >&2\nexit 1\n",
    );
    f.repo.commit_file("fine.txt", "fine", "fine");
    let out = f.push(&["origin", "feature"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("policy says no"));
    assert_eq!(
        f.runs(),
        0,
        "itergate does not run after the chained hook failed"
    );
    assert_eq!(f.remote_ref("feature"), None);
}

#[test]
fn a_broken_config_fails_open_with_a_warning() {
    let f = Fixture::new("block-on-iterate");
    f.repo.write(".itergate.yml", "hook: {gate: sometimes}\n");
    f.repo.commit_file("results.txt", "3 1\n", "failing");
    let out = f.push(&["origin", "feature"]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("WARNING") && err.contains(".itergate.yml:1:"),
        "{err}"
    );
}

#[test]
fn status_and_prompt_read_the_recorded_history() {
    let f = Fixture::new("warn");
    let out = itergate(&f.repo.path, &["status"]);
    assert_eq!(out.status.code(), Some(2), "nothing recorded yet");
    assert!(stderr(&out).contains("itergate run"));
    f.repo.commit_file("results.txt", "3 1\n", "first");
    let out = itergate(&f.repo.path, &["run"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(f.runs(), 2);
    let out = itergate(&f.repo.path, &["status"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Decision: ITERATE"), "{text}");
    assert_eq!(f.runs(), 2, "status runs nothing");
    let out = itergate(&f.repo.path, &["prompt"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("<revision_instructions>") && text.contains("Revision iteration 1/3"),
        "{text}"
    );
    let out = itergate(&f.repo.path, &["analytics"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("Iteration Analytics: feature"));
}

#[test]
fn concurrent_runs_lose_no_record() {
    let f = Fixture::new("warn");
    f.repo.write(".itergate.yml", "checks: {}\n");
    let mut commits = Vec::new();
    for i in 0..4 {
        commits.push(
            f.repo
                .commit_file("n.txt", &i.to_string(), &format!("c{i}")),
        );
    }
    let dirs: Vec<PathBuf> = commits
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let dir = f.repo.sibling(&format!("wt{i}"));
            f.repo.git(&[
                "worktree",
                "add",
                "--quiet",
                "--detach",
                dir.to_str().expect("utf8"),
                c,
            ]);
            dir
        })
        .collect();
    let children: Vec<_> = dirs
        .iter()
        .map(|d| {
            std::process::Command::new(BIN)
                .args(["run", "-q"])
                .current_dir(d)
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("spawn")
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().expect("wait");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    for c in &commits {
        assert!(f.note(c).is_some(), "record for {c} lost");
    }
}

#[test]
fn husky_style_hooks_path_snippet() {
    let f = Fixture::new("warn");
    // What husky sets up: core.hooksPath pointing at a directory with our one-line hook.
    let dir = f.repo.path.join(".husky");
    std::fs::create_dir_all(&dir).expect("mkdir");
    write_script(
        &dir.join("pre-push"),
        "#!/bin/sh\nitergate hook pre-push \"$@\"\n",
    );
    f.repo.git(&["config", "core.hooksPath", ".husky"]);
    f.repo.commit_file("results.txt", "3 1\n", "via husky");
    let bin_dir = Path::new(BIN).parent().expect("bin dir");
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut push = git_cmd(&f.repo.path);
    let out = push
        .args(["push", "origin", "feature"])
        .env("PATH", path)
        .output()
        .expect("push");
    let err = stderr(&out);
    assert!(
        out.status.success() && err.contains("Decision: ITERATE"),
        "{err}"
    );
    assert_eq!(f.runs(), 2, "the iteration and the base");
}

#[test]
fn pre_commit_variables_stand_in_for_stdin() {
    let f = Fixture::new("block-on-iterate");
    let tip = f.repo.commit_file("results.txt", "3 1\n", "via pre-commit");
    let zero = "0".repeat(tip.len());
    let out = std::process::Command::new(BIN)
        .args(["hook", "pre-push"])
        .current_dir(&f.repo.path)
        .env("NO_COLOR", "1")
        .env("PRE_COMMIT_REMOTE_NAME", "origin")
        .env("PRE_COMMIT_TO_REF", &tip)
        .env("PRE_COMMIT_FROM_REF", &zero)
        .env("PRE_COMMIT_LOCAL_BRANCH", "refs/heads/feature")
        .env("PRE_COMMIT_REMOTE_BRANCH", "refs/heads/feature")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("runs");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "the gate blocks: {err}");
    assert!(err.contains("feature: iterate"), "{err}");
    assert_eq!(f.runs(), 2);
}

#[test]
fn failures_already_on_the_base_are_pre_existing() {
    let repo = TestRepo::new();
    let counter = repo.sibling("runs.txt");
    std::fs::write(&counter, "").expect("counter");
    write_script(&repo.path.join("check.sh"), CHECK);
    repo.write(
        ".itergate.yml",
        &format!(
            "checks:\n  tests:\n    run: ./check.sh\n    report: {{ format: junit, path: out/junit.xml }}\n    env: {{ COUNT_FILE: {} }}\nhook:\n  base: main\n",
            counter.display()
        ),
    );
    repo.write(".gitignore", "out/\n");
    repo.commit_file("results.txt", "3 1\n", "base with a known failure");
    repo.git(&["checkout", "--quiet", "-b", "feature"]);
    let tip = repo.commit_file("feature.txt", "new work", "unrelated work");
    let out = itergate(&repo.path, &["run"]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("Decision: ACCEPT"), "{err}");
    assert!(
        err.contains("Base: 1 failing test (e.g. "),
        "the base's debt is shown: {err}"
    );
    assert!(
        !err.contains("validation_failure"),
        "a pre-existing failure triggers nothing: {err}"
    );
    let note = git_output(&repo.path, &["notes", "--ref", "itergate", "show", &tip]);
    let text = String::from_utf8_lossy(&note.stdout);
    assert!(text.contains("\"failing_tests\":1"), "{text}");
    assert_eq!(
        std::fs::read_to_string(&counter)
            .expect("counter")
            .lines()
            .count(),
        2
    );
}

#[test]
fn sha256_repositories_fail_open_with_the_reason() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = dir.path().join("r");
    let remote = dir.path().join("r.git");
    let path = |p: &Path| p.to_str().expect("utf8").to_owned();
    git(
        dir.path(),
        &[
            "init",
            "-q",
            "--object-format=sha256",
            "-b",
            "main",
            &path(&repo),
        ],
    );
    git(
        dir.path(),
        &[
            "init",
            "-q",
            "--bare",
            "--object-format=sha256",
            &path(&remote),
        ],
    );
    git(&repo, &["remote", "add", "origin", &path(&remote)]);
    std::fs::write(repo.join(".itergate.yml"), "checks: {}\n").expect("write");
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "one"]);

    let install = itergate(&repo, &["hook", "install"]);
    assert_eq!(install.status.code(), Some(2));
    assert!(
        stderr(&install).contains("uses sha256 object ids"),
        "{}",
        stderr(&install)
    );

    // Installed by hand (or by another hook manager): the push goes through, loudly.
    write_script(
        &repo.join(".git/hooks/pre-push"),
        &format!("#!/bin/sh\nexec '{BIN}' hook pre-push \"$@\"\n"),
    );
    let push = git_output(&repo, &["push", "origin", "main"]);
    let err = stderr(&push);
    assert!(push.status.success(), "{err}");
    assert!(
        err.contains("WARNING") && err.contains("uses sha256 object ids"),
        "{err}"
    );
    let pushed = git(&remote, &["rev-parse", "main"]);
    assert_eq!(
        pushed.len(),
        64,
        "the remote has the sha256 commit: {pushed}"
    );

    let run = itergate(&repo, &["run"]);
    assert_eq!(run.status.code(), Some(2));
    assert!(
        stderr(&run).contains("uses sha256 object ids"),
        "{}",
        stderr(&run)
    );
}

fn config_with(check: &str, counter: &Path, base: &str) -> String {
    format!(
        "checks:\n  tests:\n    run: {check}\n    report: {{ format: junit, path: out/junit.xml }}\n    env: {{ COUNT_FILE: {} }}\nhook:\n  base: {base}\n",
        counter.display()
    )
}

#[test]
fn a_check_that_cannot_run_records_nothing_and_rescore_runs_again() {
    let f = Fixture::new("warn");
    let counter = f.counter.display().to_string();
    f.on_base(
        ".itergate.yml",
        &config_with("./missing-tool.sh --all", &f.counter, "main"),
    );
    f.repo.commit_file(
        "feature.txt",
        "work\n",
        "work, with a check that cannot run",
    );
    let out = itergate(&f.repo.path, &["run"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("check `tests` (`./missing-tool.sh --all`) could not run"),
        "{err}"
    );
    assert!(
        err.contains("not found"),
        "the command's own stderr is shown: {err}"
    );
    assert!(err.contains("Nothing was recorded"), "{err}");
    let notes = git_output(&f.repo.path, &["notes", "--ref", "itergate", "list"]);
    assert!(
        String::from_utf8_lossy(&notes.stdout).trim().is_empty(),
        "no note for a check that could not run"
    );
    // The hook follows hook.on_error (allow): the push goes ahead, loudly.
    let push = git_output(&f.repo.path, &["push", "--quiet", "origin", "feature"]);
    let push_err = stderr(&push);
    assert!(push.status.success(), "{push_err}");
    assert!(
        push_err.contains("WARNING") && push_err.contains("could not run"),
        "{push_err}"
    );
    // The environment is fixed (on the base, whose configuration judges): the same tree
    // is checked now, once.
    f.on_base(
        ".itergate.yml",
        &config_with("./check.sh", &f.counter, "main"),
    );
    f.repo
        .commit_file("feature.txt", "work\n\n", "fix the check");
    let before = f.runs();
    let out = itergate(&f.repo.path, &["run"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        f.runs(),
        before + 2,
        "the iteration and its base (counter {counter})"
    );
    let out = itergate(&f.repo.path, &["run"]);
    assert!(stderr(&out).contains("already checked"), "{}", stderr(&out));
    assert_eq!(f.runs(), before + 2, "cached");
    let out = itergate(&f.repo.path, &["run", "--rescore"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        f.runs(),
        before + 3,
        "--rescore runs the iteration's checks again"
    );
}

#[test]
fn a_report_written_through_a_link_out_of_the_work_tree_is_not_read_and_nothing_is_recorded() {
    let f = Fixture::new("warn");
    // The change makes the report's directory a link out of the work tree, to a place
    // where the check then writes a report of four passing tests.
    let elsewhere = f.repo.sibling("elsewhere");
    std::fs::create_dir(&elsewhere).expect("mkdir");
    std::os::unix::fs::symlink("../elsewhere", f.repo.path.join("out")).expect("symlink");
    f.repo.git(&["add", "--force", "out"]);
    f.repo
        .git(&["commit", "--quiet", "-m", "reports go through a link"]);
    let out = itergate(&f.repo.path, &["run"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("check `tests` (`./check.sh`) could not run"),
        "{err}"
    );
    assert!(
        err.contains("out/junit.xml: cannot open the report: `out` is a symbolic link to ")
            && err.contains("outside the work tree"),
        "{err}"
    );
    assert!(err.contains("Nothing was recorded"), "{err}");
    assert!(
        elsewhere.join("junit.xml").exists(),
        "the check wrote its report there"
    );
    let notes = git_output(&f.repo.path, &["notes", "--ref", "itergate", "list"]);
    assert!(
        String::from_utf8_lossy(&notes.stdout).trim().is_empty(),
        "no note for a report that was not read"
    );
}

#[test]
fn the_same_tree_under_two_bases_is_judged_against_each() {
    let repo = TestRepo::new();
    let counter = repo.sibling("runs.txt");
    std::fs::write(&counter, "").expect("counter");
    write_script(&repo.path.join("check.sh"), CHECK);
    repo.write(".gitignore", "out/\n");
    repo.write(".itergate.yml", "checks: {}\n");
    repo.commit_file("results.txt", "4 0\n", "old base: every test passes");
    repo.git(&["branch", "old"]);
    repo.commit_file("results.txt", "3 1\n", "main: one test fails");
    repo.git(&["checkout", "--quiet", "-b", "feature"]);
    repo.commit_file("feature.txt", "work\n", "unrelated work");
    let runs = || {
        std::fs::read_to_string(&counter)
            .expect("counter")
            .lines()
            .count()
    };
    let config = |base: &str| {
        let path = repo.sibling(&format!("itergate-{base}.yml"));
        std::fs::write(&path, config_with("./check.sh", &counter, base)).expect("config");
        path.display().to_string()
    };
    let (on_main, on_old) = (config("main"), config("old"));

    // Against main the failure is the base's debt.
    let out = itergate(&repo.path, &["--config", &on_main, "run"]);
    let err = stderr(&out);
    assert!(err.contains("Decision: ACCEPT"), "{err}");
    assert!(err.contains("Base: 1 failing test"), "{err}");
    assert_eq!(runs(), 2);
    // Against old the same commit and tree brought the failure: no stale reuse, and the
    // tree's observation is reused (only the new base runs its checks).
    let out = itergate(&repo.path, &["--config", &on_old, "run"]);
    let err = stderr(&out);
    assert!(err.contains("Decision: ITERATE"), "{err}");
    assert!(err.contains("1 of 4 tests failed"), "{err}");
    assert!(!err.contains("Base: "), "the old base has no debt: {err}");
    assert_eq!(runs(), 3);
    // And back: judged against main again, nothing runs.
    let out = itergate(&repo.path, &["--config", &on_main, "run"]);
    let err = stderr(&out);
    assert!(err.contains("Decision: ACCEPT"), "{err}");
    assert_eq!(runs(), 3);
}

// ---- notes from a shared remote --------------------------------------------------------

/// The raw text of `object`'s itergate note in `dir`.
fn raw_note(dir: &Path, object: &str) -> String {
    git(dir, &["notes", "--ref", "itergate", "show", object])
}

fn tree_of(dir: &Path, commit: &str) -> String {
    git(dir, &["rev-parse", &format!("{commit}^{{tree}}")])
        .trim()
        .to_string()
}

#[test]
fn forged_notes_from_a_remote_never_skip_the_checks() {
    let f = Fixture::new("block-on-iterate");
    let passing = f.repo.commit_file("results.txt", "5 0\n", "all pass");
    assert!(f.push(&["origin", "feature"]).status.success());
    assert_eq!(f.runs(), 2, "the iteration and the base");
    let out = itergate(&f.repo.path, &["notes", "push", "origin"]);
    assert!(out.status.success(), "{}", stderr(&out));

    // Someone else with push access: a failing commit, its tree's note a copy of the
    // victim's (validly signed) note of a passing tree, its commit note a passing record.
    let attacker = f.repo.sibling("attacker");
    let url = f.remote.to_str().expect("utf-8");
    let attacker_str = attacker.to_str().expect("utf-8");
    git(f.repo.root.path(), &["clone", "--quiet", url, attacker_str]);
    for (key, value) in [("user.name", "Mallory"), ("user.email", "m@example.com")] {
        git(&attacker, &["config", key, value]);
    }
    git(&attacker, &["checkout", "--quiet", "feature"]);
    git(
        &attacker,
        &[
            "fetch",
            "--quiet",
            "origin",
            "refs/notes/itergate:refs/notes/itergate",
        ],
    );
    std::fs::write(attacker.join("results.txt"), "4 1\n").expect("write");
    git(
        &attacker,
        &["commit", "--quiet", "-am", "innocent refactor"],
    );
    let failing = git(&attacker, &["rev-parse", "HEAD"]).trim().to_string();
    let passing_tree_note = raw_note(&attacker, &tree_of(&attacker, &passing));
    let passing_record = raw_note(&attacker, &passing);
    let mut forged: serde_json::Value = serde_json::from_str(&passing_record).expect("a JSON note");
    forged.as_object_mut().expect("an object").remove("mac");
    forged["record"]["commit"] = serde_json::Value::String(failing.clone());
    for (object, text) in [
        (tree_of(&attacker, &failing), passing_tree_note),
        (failing.clone(), forged.to_string()),
    ] {
        git(
            &attacker,
            &[
                "notes", "--ref", "itergate", "add", "-f", "-m", &text, &object,
            ],
        );
    }
    git(
        &attacker,
        &[
            "push",
            "--quiet",
            "--no-verify",
            "origin",
            "feature",
            "refs/notes/itergate",
        ],
    );

    // The victim pulls the branch and the notes, then pushes: the checks run and fail.
    f.repo
        .git(&["pull", "--quiet", "--ff-only", "origin", "feature"]);
    let out = itergate(&f.repo.path, &["notes", "fetch", "origin"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(raw_note(&f.repo.path, &failing).trim(), forged.to_string());
    let out = itergate(&f.repo.path, &["run"]);
    let err = stderr(&out);
    assert_eq!(
        f.runs(),
        3,
        "the forged tree note is not a cache hit: {err}"
    );
    assert!(!err.contains("already checked"), "{err}");
    assert!(!err.contains("Decision: ACCEPT"), "{err}");
    assert!(err.contains("lib.txt:1"), "the failure is found: {err}");
    assert_eq!(
        f.note(&failing).expect("re-recorded")["scores"]["tests_passing"],
        0.8
    );
}

#[test]
fn a_forged_note_fetched_before_the_first_push_is_checked_by_the_hook() {
    let f = Fixture::new("block-on-iterate");
    let failing = f
        .repo
        .commit_file("results.txt", "3 1\n", "innocent refactor");
    // A hand-written observation of this very tree in which nothing failed, as a fetch
    // from a remote would bring it (no MAC of this clone).
    let base_tree_note = r#"{"version":2,"fingerprint":"FP","observation":{"checks":[]}}"#;
    let out = itergate(&f.repo.path, &["run"]);
    assert!(stderr(&out).contains("ITERATE"), "{}", stderr(&out));
    let fingerprint = serde_json::from_str::<serde_json::Value>(&raw_note(
        &f.repo.path,
        &tree_of(&f.repo.path, &failing),
    ))
    .expect("JSON")["fingerprint"]
        .as_str()
        .expect("a fingerprint")
        .to_string();
    let forged = base_tree_note.replace("FP", &fingerprint);
    let tree = tree_of(&f.repo.path, &failing);
    f.repo.git(&[
        "notes", "--ref", "itergate", "add", "-f", "-m", &forged, &tree,
    ]);
    f.repo
        .git(&["notes", "--ref", "itergate", "remove", &failing]);
    let runs = f.runs();
    let out = f.push(&["origin", "feature"]);
    let err = stderr(&out);
    assert_eq!(f.runs(), runs + 1, "the checks ran again: {err}");
    assert!(
        !out.status.success(),
        "the failing test blocks the push: {err}"
    );
    assert_eq!(f.remote_ref("feature"), None);
}

#[test]
fn a_malformed_note_is_skipped_with_one_warning() {
    let f = Fixture::new("warn");
    f.repo.commit_file("results.txt", "3 1\n", "one");
    assert!(f.push(&["origin", "feature"]).status.success());
    let second = f.repo.commit_file("results.txt", "4 0\n", "two");
    let out = itergate(&f.repo.path, &["run"]);
    assert!(out.status.success(), "{}", stderr(&out));
    f.repo.git(&[
        "notes",
        "--ref",
        "itergate",
        "add",
        "-f",
        "-m",
        r#"{"version":1,"record":"#,
        &second,
    ]);
    for args in [&["status"][..], &["analytics"][..], &["run"][..]] {
        let out = itergate(&f.repo.path, args);
        let err = stderr(&out);
        assert!(out.status.success(), "{args:?} still works: {err}");
        let warnings: Vec<&str> = err.lines().filter(|l| l.contains("warning")).collect();
        assert_eq!(warnings.len(), 1, "{args:?} warns once: {err}");
        assert!(
            warnings[0].contains(&second) && warnings[0].contains("refs/notes/itergate"),
            "the warning names the object and the ref: {err}"
        );
        if args == ["status"] {
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(stdout.contains("Decision"), "{stdout}");
        }
    }
    // `run` re-recorded the tip over the broken note; the push goes through quietly.
    let out = f.push(&["origin", "feature"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("skipping"), "{}", stderr(&out));
}

#[test]
fn the_hook_speaks_json_and_exits_by_recommendation() {
    let f = Fixture::new("warn");
    let tip = f.repo.commit_file("results.txt", "3 1\n", "a failing test");
    let zero = "0".repeat(tip.len());
    let out = std::process::Command::new(BIN)
        .args([
            "-q",
            "hook",
            "pre-push",
            "origin",
            "--format",
            "json",
            "--exit-code",
        ])
        .current_dir(&f.repo.path)
        .env("NO_COLOR", "1")
        .env("PRE_COMMIT_TO_REF", &tip)
        .env("PRE_COMMIT_FROM_REF", &zero)
        .env("PRE_COMMIT_LOCAL_BRANCH", "refs/heads/feature")
        .env("PRE_COMMIT_REMOTE_BRANCH", "refs/heads/feature")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("runs");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(10), "iterate: {err}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().next().expect("one report line");
    let report: serde_json::Value = serde_json::from_str(line).expect("json");
    assert_eq!(
        report["iterationDecision"]["assessment"]["recommendation"],
        "iterate"
    );
    // Without --exit-code the `warn` gate lets the push through.
    let out = std::process::Command::new(BIN)
        .args(["-q", "hook", "pre-push", "origin"])
        .current_dir(&f.repo.path)
        .env("PRE_COMMIT_TO_REF", &tip)
        .env("PRE_COMMIT_FROM_REF", &zero)
        .env("PRE_COMMIT_LOCAL_BRANCH", "refs/heads/feature")
        .env("PRE_COMMIT_REMOTE_BRANCH", "refs/heads/feature")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}
