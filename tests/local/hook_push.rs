//! The pre-push hook end to end: real repositories, real `git push` to a bare remote, the
//! real itergate binary installed as the hook.

use crate::gitrepo;
use crate::redact;

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

/// `text` with the test's temporary directory named `<root>`: a snapshot keeps the file
/// names and places under it, which a filter for temporary paths would take too.
fn in_root(text: &str, root: &Path) -> String {
    text.replace(root.to_str().expect("utf8"), "<root>")
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
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(in_root(&err, f.repo.root.path()), @r"

            itergate · feature · iteration 1/10
            Decision: ITERATE (priority high) — 1 issue to address; strategy retry
            Quality:  0.75
              Tests Passing: 75%
            Revision iteration 1/3 -- 1 blocker, 0 warnings
            Triggers:
              - validation_failure (0.70): 1 of 4 tests failed
              - quality_threshold (0.20): Quality 0.75 below threshold 0.95
            Strategy: retry
            Next steps:
              1. Fix tests: test s::t3 failed: boom (lib.txt:1)
            Revision prompt: <root>/repo/.git/itergate/revision-prompt.md
            To <root>/remote.git
             * [new branch]      feature -> feature
            ");
    });
    assert_eq!(
        f.note(&first).expect("recorded")["scores"]["tests_passing"],
        0.75
    );
    let prompt = std::fs::read_to_string(f.repo.path.join(".git/itergate/revision-prompt.md"))
        .expect("prompt written");
    let issues = prompt
        .split("<checker_issues>")
        .nth(1)
        .and_then(|rest| rest.split("</checker_issues>").next())
        .expect("the prompt lists the issues");
    insta::assert_snapshot!(issues, @r"

        The issues below are in YAML format. Each has: dimension, severity, finding,
        affected_field, suggested_fix; failing tests with one cause are one item with
        a count and the first test ids. Address ALL BLOCKER issues. Address WARNING
        issues where feasible.

        ```yaml
        - dimension: tests
          severity: BLOCKER
          finding: 'test s::t3 failed: boom'
          affected_field: lib.txt:1
        ```
        ");
    assert_eq!(f.remote_ref("feature"), Some(first));

    let second = f.repo.commit_file("results.txt", "4 0\n", "all pass");
    let out = f.push(&["origin", "feature"]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    // The delta is shown.
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(in_root(&err, f.repo.root.path()), @r"

            itergate · feature · iteration 2/10
            Decision: ACCEPT (priority low) — Quality 1.00 meets the bar with no blocking issues
            Quality:  1.00 (+0.250)
              Tests Passing: 100% (+25%)
            Next steps:
              1. Accept iteration 2: nothing more is required
            To <root>/remote.git
               [short-sha]..[short-sha]  feature -> feature
            ");
    });

    f.repo.commit_file("results.txt", "2 2\n", "worse");
    let out = f.push(&["origin", "feature"]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(in_root(&err, f.repo.root.path()), @r"

            itergate · feature · iteration 3/10
            Decision: ITERATE (priority high) — 2 issues to address; strategy retry
            Quality:  0.50 (-0.500)
              Tests Passing: 50% (-50%)
            Revision iteration 1/3 -- 2 blockers, 0 warnings
            Triggers:
              - validation_failure (0.70): 2 of 4 tests failed
              - quality_threshold (0.45): Quality 0.50 below threshold 0.95
            Strategy: retry
            Best iteration so far: 2
            Next steps:
              1. Fix tests: (flaky: fails and passes without related changes) test s::t2 failed: boom (lib.txt:1)
              2. Fix tests: test s::t3 failed: boom (lib.txt:2)
            Revision prompt: <root>/repo/.git/itergate/revision-prompt.md
            To <root>/remote.git
               [short-sha]..[short-sha]  feature -> feature
            ");
    });
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
    // The decision is on the tip.
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(in_root(&err, f.repo.root.path()), @r"

            itergate · feature · iteration 3/10
            Decision: ITERATE (priority high) — 1 issue to address; strategy refine
            Quality:  0.75 (+0.250)
              Tests Passing: 75% (+25%)
            Revision iteration 3/3 -- 1 blocker, 0 warnings
            Triggers:
              - validation_failure (0.70): 1 of 4 tests failed
              - quality_threshold (0.20): Quality 0.75 below threshold 0.95
            Strategy: refine
            Next steps:
              1. Fix tests: test s::t3 failed: boom (lib.txt:1)
            Revision prompt: <root>/repo/.git/itergate/revision-prompt.md
            To <root>/remote.git
             * [new branch]      feature -> feature
            ");
    });
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
    assert!(out.status.success(), "{err}");
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(in_root(&err, f.repo.root.path()), @r"
            itergate: other: deleted on origin; nothing to score
            To <root>/remote.git
             - [deleted]         other
            ");
    });
    assert_eq!(f.remote_ref("other"), None);
}

#[test]
fn gate_blocks_and_the_remote_is_unchanged() {
    let f = Fixture::new("block-on-iterate");
    f.repo.commit_file("results.txt", "3 1\n", "failing");
    let out = f.push(&["origin", "feature"]);
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(in_root(&err, f.repo.root.path()), @r"

            itergate · feature · iteration 1/10
            Decision: ITERATE (priority high) — 1 issue to address; strategy retry
            Quality:  0.75
              Tests Passing: 75%
            Revision iteration 1/3 -- 1 blocker, 0 warnings
            Triggers:
              - validation_failure (0.70): 1 of 4 tests failed
              - quality_threshold (0.20): Quality 0.75 below threshold 0.95
            Strategy: retry
            Next steps:
              1. Fix tests: test s::t3 failed: boom (lib.txt:1)
            Revision prompt: <root>/repo/.git/itergate/revision-prompt.md
            itergate: error: push blocked by hook.gate `block-on-iterate`:
              feature: iterate — 2 trigger(s) left
            To push anyway: `git push --no-verify`, or `ITERGATE_SKIP=1 git push`.
            error: failed to push some refs to '<root>/remote.git'
            ");
    });
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
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(in_root(&err, f.repo.root.path()), @r"

            itergate · feature · iteration 2/10
            Decision: ESCALATE (priority high) — Revision loop stalled (issue count not decreasing: 1 -> 1)
            Quality:  0.75 (+0.000)
              Tests Passing: 75% (+0%)
            Revision iteration 2/3 -- 1 blocker, 0 warnings
            Triggers:
              - validation_failure (0.70): 1 of 4 tests failed
              - quality_threshold (0.20): Quality 0.75 below threshold 0.95
            Remaining:
              - BLOCKER lib.txt:1: test s::t3 failed: boom
            Next steps:
              1. A human decides: `itergate accept [reason]` to proceed with the remaining issues, or `itergate adjust <guidance>` to change the approach
            itergate: error: push blocked by hook.gate `block-on-escalate`:
              feature: escalate — Revision loop stalled (issue count not decreasing: 1 -> 1)
            A person decides: `itergate accept [reason]` (or `itergate adjust <guidance>`, `itergate budget <n>`; `--branch NAME` for a branch not checked out), then push again.
            To push anyway: `git push --no-verify`, or `ITERGATE_SKIP=1 git push`.
            error: failed to push some refs to '<root>/remote.git'
            ");
    });
}

/// A push of what was already judged — the same commits, refs, rules — prints what the
/// judged push printed and ends as it did, judging nothing (no check runs, no note is
/// written). Anything that can change the decision judges again: a person's `accept` (a
/// note), the rules, a wall-clock budget (the time).
#[test]
fn a_push_of_what_was_judged_replays_its_decision_until_something_changes() {
    let f = Fixture::new("block-on-escalate");
    f.repo.commit_file("results.txt", "3 1\n", "failing");
    assert!(f.push(&["origin", "feature"]).status.success());
    f.repo.commit_file("other.txt", "y", "no progress");
    let judged = f.push(&["origin", "feature"]);
    assert!(!judged.status.success());
    let notes = || git(&f.repo.path, &["for-each-ref", "refs/notes/"]);
    let (runs, written) = (f.runs(), notes());
    let again = f.push(&["origin", "feature"]);
    assert_eq!(again.status.code(), judged.status.code());
    let replayed = stderr(&again);
    let replay_line =
        "itergate: pushed again as judged (nothing changed since): not judged again\n";
    let without_progress: String = stderr(&judged)
        .lines()
        .filter(|l| !l.starts_with("itergate: check "))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(
        replayed.replacen(replay_line, "", 1),
        without_progress,
        "the judged push's output (but its checks' progress), and one line more"
    );
    assert!(replayed.contains(replay_line), "{replayed}");
    assert_eq!(f.runs(), runs, "no check ran");
    assert_eq!(notes(), written, "no note was written");

    // A person's decision is a note: the next push is judged, and goes through.
    let accept = itergate(&f.repo.path, &["accept", "known flake"]);
    assert!(accept.status.success(), "{}", stderr(&accept));
    let after = f.push(&["origin", "feature"]);
    assert!(after.status.success(), "{}", stderr(&after));
    assert!(!stderr(&after).contains(replay_line), "{}", stderr(&after));

    // Under a wall-clock budget the decision depends on the time: never replayed.
    let config = std::fs::read_to_string(f.repo.path.join(".itergate.yml")).expect("config");
    f.on_base(
        ".itergate.yml",
        &format!("{config}stopping_criteria:\n  budget_limits:\n    wall_clock_minutes: 600\n"),
    );
    for _ in 0..2 {
        let out = f.push(&["--force", "origin", "feature"]);
        assert!(!stderr(&out).contains(replay_line), "{}", stderr(&out));
    }
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
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(in_root(&stderr(&out), f.repo.root.path()), @r"
            policy says no
            error: failed to push some refs to '<root>/remote.git'
            ");
    });
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
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(in_root(&err, f.repo.root.path()), @r"
            itergate: WARNING: the pre-push check failed and the push goes ahead (hook.on_error: allow)
            itergate: WARNING: <root>/repo/.itergate.yml:1:14: `hook.gate`: unknown variant `sometimes`, expected one of `warn`, `block-on-escalate`, `block-on-iterate`
            To <root>/remote.git
             * [new branch]      feature -> feature
            ");
    });
}

#[test]
fn status_and_prompt_read_the_recorded_history() {
    let f = Fixture::new("warn");
    let out = itergate(&f.repo.path, &["status"]);
    assert_eq!(out.status.code(), Some(2), "nothing recorded yet");
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(in_root(&stderr(&out), f.repo.root.path()), @"itergate: error: no iteration of `feature` is recorded yet; run `itergate run` (or push with the hook installed)");
    });
    f.repo.commit_file("results.txt", "3 1\n", "first");
    let out = itergate(&f.repo.path, &["run"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(f.runs(), 2);
    let out = itergate(&f.repo.path, &["status"]);
    let text = String::from_utf8_lossy(&out.stdout);
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(in_root(&text, f.repo.root.path()), @r"
            itergate · feature · iteration 1/10
            Decision: ITERATE (priority high) — 1 issue to address; strategy retry
            Quality:  0.75
              Tests Passing: 75%
            Revision iteration 1/3 -- 1 blocker, 0 warnings
            Triggers:
              - validation_failure (0.70): 1 of 4 tests failed
              - quality_threshold (0.20): Quality 0.75 below threshold 0.95
            Strategy: retry
            Next steps:
              1. Fix tests: test s::t3 failed: boom (lib.txt:1)
            Start: [short-sha], where this task left main
            Rules: locked to [short-sha]:.itergate.yml
            ");
    });
    assert_eq!(f.runs(), 2, "status runs nothing");
    let out = itergate(&f.repo.path, &["prompt"]);
    let text = String::from_utf8_lossy(&out.stdout);
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!("recorded_prompt", in_root(&text, f.repo.root.path()));
    });
    let out = itergate(&f.repo.path, &["analytics"]);
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(in_root(&String::from_utf8_lossy(&out.stdout), f.repo.root.path()), @r"
            Iteration Analytics: feature
            ═══════════════════════════════════

            Quality Over Iterations
            ───────────────────────
            1: █████████████████████████████████████ 0.75

            Stopping: not yet — iterate

            ───────────────────────
            Final Quality: 0.75
            Total Iterations: 1
            Total Improvement: +0.00
            Best Iteration: 1

            Breakdown:
            - Tests Passing: 75% → 75% (+0%)
            ");
    });
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
    assert!(out.status.success(), "{err}");
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(in_root(&err, f.repo.root.path()), @r"

            itergate · feature · iteration 1/10
            Decision: ITERATE (priority high) — 1 issue to address; strategy retry
            Quality:  0.75
              Tests Passing: 75%
            Revision iteration 1/3 -- 1 blocker, 0 warnings
            Triggers:
              - validation_failure (0.70): 1 of 4 tests failed
              - quality_threshold (0.20): Quality 0.75 below threshold 0.95
            Strategy: retry
            Next steps:
              1. Fix tests: test s::t3 failed: boom (lib.txt:1)
            Revision prompt: <root>/repo/.git/itergate/revision-prompt.md
            To <root>/remote.git
             * [new branch]      feature -> feature
            ");
    });
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
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(in_root(&err, f.repo.root.path()), @r"

            itergate · feature · iteration 1/10
            Decision: ITERATE (priority high) — 1 issue to address; strategy retry
            Quality:  0.75
              Tests Passing: 75%
            Revision iteration 1/3 -- 1 blocker, 0 warnings
            Triggers:
              - validation_failure (0.70): 1 of 4 tests failed
              - quality_threshold (0.20): Quality 0.75 below threshold 0.95
            Strategy: retry
            Next steps:
              1. Fix tests: test s::t3 failed: boom (lib.txt:1)
            Revision prompt: <root>/repo/.git/itergate/revision-prompt.md
            itergate: error: push blocked by hook.gate `block-on-iterate`:
              feature: iterate — 2 trigger(s) left
            To push anyway: `git push --no-verify`, or `ITERGATE_SKIP=1 git push`.
            ");
    });
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
    // The base's debt is shown, and a pre-existing failure triggers nothing.
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(in_root(&err, repo.root.path()), @r"
            itergate · feature · iteration 1/10
            Decision: ACCEPT (priority low) — Quality 1.00 meets the bar with no blocking issues
            Quality:  1.00
              Tests Passing: 100%
            Base: 1 failing test (e.g. s::t3) — the base's, not counted
            Next steps:
              1. Accept iteration 1: nothing more is required
            ");
    });
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
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(in_root(&stderr(&install), dir.path()), @"itergate: error: <root>/r: this repository uses sha256 object ids, which itergate cannot read yet (unknown object format 'sha256')");
    });

    // Installed by hand (or by another hook manager): the push goes through, loudly.
    write_script(
        &repo.join(".git/hooks/pre-push"),
        &format!("#!/bin/sh\nexec '{BIN}' hook pre-push \"$@\"\n"),
    );
    let push = git_output(&repo, &["push", "origin", "main"]);
    let err = stderr(&push);
    assert!(push.status.success(), "{err}");
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(in_root(&err, dir.path()), @r"
            itergate: WARNING: the pre-push check failed and the push goes ahead (hook.on_error: allow)
            itergate: WARNING: <root>/r: this repository uses sha256 object ids, which itergate cannot read yet (unknown object format 'sha256')
            To <root>/r.git
             * [new branch]      main -> main
            ");
    });
    let pushed = git(&remote, &["rev-parse", "main"]);
    assert_eq!(
        pushed.len(),
        64,
        "the remote has the sha256 commit: {pushed}"
    );

    let run = itergate(&repo, &["run"]);
    assert_eq!(run.status.code(), Some(2));
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(in_root(&stderr(&run), dir.path()), @"itergate: error: <root>/r: this repository uses sha256 object ids, which itergate cannot read yet (unknown object format 'sha256')");
    });
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
    // The command's own stderr is shown.
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(in_root(&err, f.repo.root.path()), @r"
            itergate: error: check `tests` (`./missing-tool.sh --all`) could not run: the command was not found or is not executable (exit status 127)
                sh: 1: ./missing-tool.sh: not found
            The checks ran in a checkout of the commit alone (/tmp/itergate-wt-[pid]-[short-sha]): untracked files such as dependencies and generated files are not in it; `setup:` commands, or the same lockfile as the work tree, give it them.
            Nothing was recorded: fix the environment or the check, then run again.
            ");
    });
    let notes = git_output(&f.repo.path, &["notes", "--ref", "itergate", "list"]);
    assert!(
        String::from_utf8_lossy(&notes.stdout).trim().is_empty(),
        "no note for a check that could not run"
    );
    // The hook follows hook.on_error (allow): the push goes ahead, loudly.
    let push = git_output(&f.repo.path, &["push", "--quiet", "origin", "feature"]);
    let push_err = stderr(&push);
    assert!(push.status.success(), "{push_err}");
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(in_root(&push_err, f.repo.root.path()), @r"
            itergate: WARNING: the pre-push check failed and the push goes ahead (hook.on_error: allow)
            itergate: WARNING: check `tests` (`./missing-tool.sh --all`) could not run: the command was not found or is not executable (exit status 127)
                sh: 1: ./missing-tool.sh: not found
            The checks ran in a checkout of the commit alone (/tmp/itergate-wt-[pid]-[short-sha]): untracked files such as dependencies and generated files are not in it; `setup:` commands, or the same lockfile as the work tree, give it them.
            Nothing was recorded: fix the environment or the check, then run again.
            ");
    });
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
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(in_root(&stderr(&out), f.repo.root.path()), @r"
            itergate: this tree was already checked with the same checks; judging the change from those results (--rescore runs them again)
            itergate · feature · iteration 2/10
            Decision: ACCEPT (priority low) — Quality 1.00 meets the bar with no blocking issues
            Quality:  1.00
              Tests Passing: 100%
            Next steps:
              1. Accept iteration 2: nothing more is required
            ");
    });
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
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(in_root(&err, f.repo.root.path()), @r"
            itergate: error: check `tests` (`./check.sh`) could not run: it exited with status 2 and wrote no report: the report /tmp/itergate-wt-[pid]-[short-sha]/out/junit.xml was not written
                mkdir: cannot create directory ‘out’: File exists
                ./check.sh: 5: cannot create out/junit.xml: Directory nonexistent
            The checks ran in a checkout of the commit alone (/tmp/itergate-wt-[pid]-[short-sha]): untracked files such as dependencies and generated files are not in it; `setup:` commands, or the same lockfile as the work tree, give it them.
            Nothing was recorded: fix the environment or the check, then run again.
            ");
    });
    // The checks ran in a checkout of the commit, where the link points at no report.
    assert!(!elsewhere.join("junit.xml").exists());
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
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(in_root(&err, repo.root.path()), @r"
            itergate · feature · iteration 1/10
            Decision: ACCEPT (priority low) — Quality 1.00 meets the bar with no blocking issues
            Quality:  1.00
              Tests Passing: 100%
            Base: 1 failing test (e.g. s::t3) — the base's, not counted
            Next steps:
              1. Accept iteration 1: nothing more is required
            ");
    });
    assert_eq!(runs(), 2);
    // Against old the same commit and tree brought the failure: no stale reuse, and the
    // tree's observation is reused (only the new base runs its checks).
    let out = itergate(&repo.path, &["--config", &on_old, "run"]);
    let err = stderr(&out);
    // The old base has no debt.
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(in_root(&err, repo.root.path()), @r"
            itergate: this tree was already checked with the same checks; judging the change from those results (--rescore runs them again)
            itergate · feature · iteration 2/10
            Decision: ITERATE (priority high) — 1 issue to address; strategy retry
            Quality:  0.75
              Tests Passing: 75%
            Revision iteration 1/3 -- 1 blocker, 0 warnings
            Triggers:
              - validation_failure (0.70): 1 of 4 tests failed
              - quality_threshold (0.20): Quality 0.75 below threshold 0.95
            Strategy: retry
            Next steps:
              1. Fix tests: test s::t3 failed: boom (lib.txt:1)
            Revision prompt: <root>/repo/.git/itergate/revision-prompt.md
            ");
    });
    assert_eq!(runs(), 3);
    // And back: judged against main again, nothing runs.
    let out = itergate(&repo.path, &["--config", &on_main, "run"]);
    let err = stderr(&out);
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(in_root(&err, repo.root.path()), @r"
            itergate: this tree was already checked with the same checks; judging the change from those results (--rescore runs them again)
            itergate · feature · iteration 1/10
            Decision: ACCEPT (priority low) — Quality 1.00 meets the bar with no blocking issues
            Quality:  1.00
              Tests Passing: 100%
            Base: 1 failing test (e.g. s::t3) — the base's, not counted
            Next steps:
              1. Accept iteration 1: nothing more is required
            ");
    });
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
    // Not a cache hit, and the failure is found.
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(in_root(&err, f.repo.root.path()), @r"
            itergate · feature · iteration 2/10
            Decision: ITERATE (priority high) — 1 issue to address; strategy retry
            Quality:  0.80 (-0.200)
              Tests Passing: 80% (-20%)
            Revision iteration 1/3 -- 1 blocker, 0 warnings
            Triggers:
              - validation_failure (0.70): 1 of 5 tests failed
              - quality_threshold (0.15): Quality 0.80 below threshold 0.95
            Strategy: retry
            Best iteration so far: 1
            Next steps:
              1. Fix tests: test s::t4 failed: boom (lib.txt:1)
            Revision prompt: <root>/repo/.git/itergate/revision-prompt.md
            ");
    });
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
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(in_root(&stderr(&out), f.repo.root.path()), @r"
            itergate · feature · iteration 1/10
            Decision: ITERATE (priority high) — 1 issue to address; strategy retry
            Quality:  0.75
              Tests Passing: 75%
            Revision iteration 1/3 -- 1 blocker, 0 warnings
            Triggers:
              - validation_failure (0.70): 1 of 4 tests failed
              - quality_threshold (0.20): Quality 0.75 below threshold 0.95
            Strategy: retry
            Next steps:
              1. Fix tests: test s::t3 failed: boom (lib.txt:1)
            Revision prompt: <root>/repo/.git/itergate/revision-prompt.md
            ");
    });
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
    // The warning names the object and the ref.
    let mut warned = String::new();
    for args in [&["status"][..], &["analytics"][..], &["run"][..]] {
        let out = itergate(&f.repo.path, args);
        let err = stderr(&out);
        assert!(out.status.success(), "{args:?} still works: {err}");
        let warnings: Vec<&str> = err.lines().filter(|l| l.contains("warning")).collect();
        assert_eq!(warnings.len(), 1, "{args:?} warns once: {err}");
        warned.push_str(&format!(
            "{args:?}: {}\n",
            warnings[0].replace(&second, "<second>")
        ));
        if args == ["status"] {
            let stdout = String::from_utf8_lossy(&out.stdout);
            insta::with_settings!({ filters => redact::without_progress() }, {
                insta::assert_snapshot!(in_root(&stdout, f.repo.root.path()), @r"
                    itergate · feature · iteration 1/10
                    Decision: ITERATE (priority high) — 1 issue to address; strategy retry
                    Quality:  0.75
                      Tests Passing: 75%
                    Revision iteration 1/3 -- 1 blocker, 0 warnings
                    Triggers:
                      - validation_failure (0.70): 1 of 4 tests failed
                      - quality_threshold (0.20): Quality 0.75 below threshold 0.95
                    Strategy: retry
                    Next steps:
                      1. Fix tests: test s::t3 failed: boom (lib.txt:1)
                    Start: [short-sha], where this task left main
                    Rules: locked to [short-sha]:.itergate.yml
                    ");
            });
        }
    }
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(in_root(&warned, f.repo.root.path()), @r#"
            ["status"]: itergate: warning: skipping the refs/notes/itergate note of <second>: not an itergate record (EOF while parsing a value at line 2 column 0); remove it with `git notes --ref refs/notes/itergate remove <second>`
            ["analytics"]: itergate: warning: skipping the refs/notes/itergate note of <second>: not an itergate record (EOF while parsing a value at line 2 column 0); remove it with `git notes --ref refs/notes/itergate remove <second>`
            ["run"]: itergate: warning: skipping the refs/notes/itergate note of <second>: not an itergate record (EOF while parsing a value at line 2 column 0); remove it with `git notes --ref refs/notes/itergate remove <second>`
            "#);
    });
    // `run` re-recorded the tip over the broken note; the push goes through quietly.
    let out = f.push(&["origin", "feature"]);
    assert!(out.status.success(), "{}", stderr(&out));
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(in_root(&stderr(&out), f.repo.root.path()), @r"

            itergate · feature · iteration 2/10
            Decision: ACCEPT (priority low) — Quality 1.00 meets the bar with no blocking issues
            Quality:  1.00 (+0.250)
              Tests Passing: 100% (+25%)
            Next steps:
              1. Accept iteration 2: nothing more is required
            To <root>/remote.git
               [short-sha]..[short-sha]  feature -> feature
            ");
    });
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
