//! A person decides on a branch at the terminal — `itergate accept`, `escalate`, `adjust`,
//! `feedback`, `budget` — through the real binary on real repositories: the next decision
//! changes, a new commit clears what was said about the one before, a blocking hook lets
//! an accepted push through, and the decisions travel with `itergate notes push`/`fetch`.

use crate::gitrepo;
use crate::redact;

use std::path::{Path, PathBuf};
use std::process::Output;

use gitrepo::{git, git_cmd, write_script, TestRepo};

const BIN: &str = env!("CARGO_BIN_EXE_itergate");

/// The check reads `results.txt` ("<passed> <failed>") and writes a JUnit report: tests
/// `t0`, `t1` ... pass, the last `<failed>` of them fail (a test keeps its name when fixed).
const CHECK: &str = r#"#!/bin/sh
read passed failed < results.txt
mkdir -p out
{
  echo '<testsuite name="s">'
  i=0; while [ $i -lt $passed ]; do echo "<testcase classname=\"s\" name=\"t$i\"/>"; i=$((i+1)); done
  j=0; while [ $j -lt $failed ]; do echo "<testcase classname=\"s\" name=\"t$i\" file=\"lib.txt\" line=\"$((j+1))\"><failure message=\"boom\"/></testcase>"; i=$((i+1)); j=$((j+1)); done
  echo '</testsuite>'
} > out/junit.xml
"#;

/// A repository on branch `feature` off `main`, with a bare remote `origin` that has `main`.
/// `extra` is appended to the configuration.
fn fixture(extra: &str) -> (TestRepo, PathBuf) {
    let repo = TestRepo::new();
    repo.git(&["config", "user.name", "Ada Lovelace"]);
    write_script(&repo.path.join("check.sh"), CHECK);
    repo.write(
        ".itergate.yml",
        &format!(
            "checks:\n  tests:\n    run: ./check.sh\n    report: {{ format: junit, path: out/junit.xml }}\nhook:\n  base: main\n{extra}"
        ),
    );
    repo.write(".gitignore", "out/\n");
    repo.commit_file("results.txt", "4 0\n", "base");
    let remote = repo.add_bare_remote();
    repo.git(&["push", "--quiet", "--no-verify", "origin", "main"]);
    repo.git(&["checkout", "--quiet", "-b", "feature"]);
    (repo, remote)
}

fn itergate(dir: &Path, args: &[&str]) -> Output {
    std::process::Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env_remove("ITERGATE_SKIP")
        .output()
        .expect("itergate runs")
}

/// Runs itergate, asserting it succeeds; returns stdout and stderr together.
fn ok(dir: &Path, args: &[&str]) -> String {
    let out = itergate(dir, args);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "itergate {args:?}: {text}");
    text
}

/// Commits `results` (and a file that makes every commit's tree new) and scores it.
fn iteration(repo: &TestRepo, n: u32, results: &str) -> String {
    repo.write("work.txt", &format!("attempt {n}\n"));
    repo.commit_file("results.txt", results, &format!("attempt {n}"));
    ok(&repo.path, &["run"])
}

/// `itergate status`, with the start's commit id (different on every run) redacted.
fn status(repo: &TestRepo) -> String {
    let text = ok(&repo.path, &["status"]);
    let start = repo.git(&["merge-base", "HEAD", "main"]);
    text.replace(&start[..7], "<start>")
}

fn decision_json(dir: &Path) -> serde_json::Value {
    let out = itergate(dir, &["status", "--format", "json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the decision report is JSON")
}

fn push(repo: &TestRepo) -> Output {
    git_cmd(&repo.path)
        .args(["push", "origin", "feature"])
        .env_remove("ITERGATE_SKIP")
        .env("NO_COLOR", "1")
        .output()
        .expect("git push runs")
}

#[test]
fn accept_after_an_escalation_lets_a_blocked_push_through_until_the_next_commit() {
    let (repo, _remote) =
        fixture("  gate: block-on-escalate\nstopping_criteria:\n  iteration_limits: { max: 2 }\n");
    iteration(&repo, 1, "2 2\n");
    // The next step names the local command.
    let out = iteration(&repo, 2, "3 1\n");
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(out, @r"
            itergate · feature · iteration 2/2
            Decision: ESCALATE (priority high) — Max iterations reached (2/2)
            Quality:  0.75 (+0.250)
              Tests Passing: 75% (+25%)
            Revision iteration 2/3 -- 1 blocker, 0 warnings
            Triggers:
              - validation_failure (0.70): 1 of 4 tests failed
              - quality_threshold (0.20): Quality 0.75 below threshold 0.95
            Remaining:
              - BLOCKER lib.txt:1: test s::t3 failed: boom
            Next steps:
              1. A human decides: `itergate accept [reason]` to proceed with the remaining issues, or `itergate adjust <guidance>` to change the approach
            ");
    });
    insta::assert_snapshot!("local_escalation_status", status(&repo));
    let out = ok(&repo.path, &["hook", "install"]);
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(out, @"itergate: installed the pre-push hook at [tmp]/repo/.git/hooks/pre-push");
    });
    let blocked = push(&repo);
    let err = String::from_utf8_lossy(&blocked.stderr);
    assert!(!blocked.status.success(), "{err}");
    // The blocked push names the local decision.
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(err, @r"

            itergate · feature · iteration 2/2
            Decision: ESCALATE (priority high) — Max iterations reached (2/2)
            Quality:  0.75 (+0.250)
              Tests Passing: 75% (+25%)
            Revision iteration 2/3 -- 1 blocker, 0 warnings
            Triggers:
              - validation_failure (0.70): 1 of 4 tests failed
              - quality_threshold (0.20): Quality 0.75 below threshold 0.95
            Remaining:
              - BLOCKER lib.txt:1: test s::t3 failed: boom
            Next steps:
              1. A human decides: `itergate accept [reason]` to proceed with the remaining issues, or `itergate adjust <guidance>` to change the approach
            itergate: error: push blocked by hook.gate `block-on-escalate`:
              feature: escalate — Max iterations reached (2/2)
            A person decides: `itergate accept [reason]` (or `itergate adjust <guidance>`, `itergate budget <n>`; `--branch NAME` for a branch not checked out), then push again.
            To push anyway: `git push --no-verify`, or `ITERGATE_SKIP=1 git push`.
            error: failed to push some refs to '[tmp]/remote.git'
            ");
    });

    let out = ok(
        &repo.path,
        &["accept", "the", "last", "failure", "is", "known"],
    );
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(out, @r"
            itergate: feature, iteration 2 ([short-sha]): accepted by Ada Lovelace
            itergate · feature · iteration 2/2
            Decision: ACCEPT (priority low) — Accepted by Ada Lovelace (`itergate accept`)
            Quality:  0.75 (+0.250)
              Tests Passing: 75% (+25%)
            Revision iteration 2/3 -- 1 blocker, 0 warnings
            Triggers:
              - validation_failure (0.70): 1 of 4 tests failed
              - quality_threshold (0.20): Quality 0.75 below threshold 0.95
            Next steps:
              1. Accept iteration 2: nothing more is required
            ");
    });
    insta::assert_snapshot!("local_accept_status", status(&repo));
    let pushed = push(&repo);
    assert!(
        pushed.status.success(),
        "an accepted branch is pushed: {}",
        String::from_utf8_lossy(&pushed.stderr)
    );

    // A new commit is a new iteration: the accept was about the one before.
    let out = iteration(&repo, 3, "3 1\n");
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(out, @r"
            itergate · feature · iteration 3/2
            Decision: ESCALATE (priority high) — Max iterations reached (3/2)
            Quality:  0.75 (+0.000)
              Tests Passing: 75% (+0%)
            Revision iteration 3/3 -- 1 blocker, 0 warnings
            Triggers:
              - validation_failure (0.70): 1 of 4 tests failed
              - quality_threshold (0.20): Quality 0.75 below threshold 0.95
            Remaining:
              - BLOCKER lib.txt:1: test s::t3 failed: boom
            Next steps:
              1. A human decides: `itergate accept [reason]` to proceed with the remaining issues, or `itergate adjust <guidance>` to change the approach
            ");
    });
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(status(&repo), @r"
            itergate · feature · iteration 3/2
            Decision: ESCALATE (priority high) — Max iterations reached (3/2)
            Quality:  0.75 (+0.000)
              Tests Passing: 75% (+0%)
            Revision iteration 3/3 -- 1 blocker, 0 warnings
            Triggers:
              - validation_failure (0.70): 1 of 4 tests failed
              - quality_threshold (0.20): Quality 0.75 below threshold 0.95
            Remaining:
              - BLOCKER lib.txt:1: test s::t3 failed: boom
            Next steps:
              1. A human decides: `itergate accept [reason]` to proceed with the remaining issues, or `itergate adjust <guidance>` to change the approach
            Start: <start>, where this task left main
            Rules: locked to <start>:.itergate.yml
            ");
    });
    assert!(!push(&repo).status.success(), "blocked again");
}

#[test]
fn escalate_calls_a_human_and_accept_takes_it_back() {
    let (repo, _remote) = fixture("");
    let out = iteration(&repo, 1, "3 1\n");
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(out, @r"
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
            Revision prompt: [tmp]/repo/.git/itergate/revision-prompt.md
            ");
    });
    let prompt = repo.path.join(".git/itergate/revision-prompt.md");
    assert!(prompt.exists(), "an iterate writes the prompt");

    let out = ok(&repo.path, &["escalate", "needs", "a", "design", "review"]);
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(out, @r"
            itergate: feature, iteration 1 ([short-sha]): escalated by Ada Lovelace
            itergate · feature · iteration 1/10
            Decision: ESCALATE (priority high) — Escalated by Ada Lovelace (`itergate escalate`): needs a design review
            Quality:  0.75
              Tests Passing: 75%
            Revision iteration 1/3 -- 1 blocker, 0 warnings
            Triggers:
              - validation_failure (0.70): 1 of 4 tests failed
              - quality_threshold (0.20): Quality 0.75 below threshold 0.95
            Remaining:
              - BLOCKER lib.txt:1: test s::t3 failed: boom
            Next steps:
              1. A human decides: `itergate accept [reason]` to proceed with the remaining issues, or `itergate adjust <guidance>` to change the approach
            ");
    });
    assert!(!prompt.exists(), "the prompt file follows the decision");
    assert_eq!(
        decision_json(&repo.path)["iterationDecision"]["decision"]["needsIteration"],
        false
    );

    // The later decision wins.
    let out = ok(&repo.path, &["accept"]);
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(out, @r"
            itergate: feature, iteration 1 ([short-sha]): accepted by Ada Lovelace
            itergate · feature · iteration 1/10
            Decision: ACCEPT (priority low) — Accepted by Ada Lovelace (`itergate accept`)
            Quality:  0.75
              Tests Passing: 75%
            Revision iteration 1/3 -- 1 blocker, 0 warnings
            Triggers:
              - validation_failure (0.70): 1 of 4 tests failed
              - quality_threshold (0.20): Quality 0.75 below threshold 0.95
            Next steps:
              1. Accept iteration 1: nothing more is required
            ");
    });
}

#[test]
fn adjust_restarts_the_revision_count() {
    let (repo, _remote) = fixture("");
    iteration(&repo, 1, "1 3\n");
    iteration(&repo, 2, "2 2\n");
    let out = iteration(&repo, 3, "3 1\n");
    // Three rounds with issues.
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(out, @r"
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
            Revision prompt: [tmp]/repo/.git/itergate/revision-prompt.md
            ");
    });

    let out = ok(
        &repo.path,
        &["adjust", "split the parser before fixing the tests"],
    );
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(out, @r"
            itergate: feature, iteration 3 ([short-sha]): approach adjusted (the revision count starts again) by Ada Lovelace
            itergate · feature · iteration 3/10
            Decision: ITERATE (priority critical) — 2 issues to address; strategy refine
            Quality:  0.75 (+0.250)
              Tests Passing: 75% (+25%)
            Revision rounds restarted by a person (next: 1/3) -- 1 blocker, 0 warnings
            Triggers:
              - validation_failure (0.70): 1 of 4 tests failed
              - quality_threshold (0.20): Quality 0.75 below threshold 0.95
              - explicit_feedback (0.90): Ada Lovelace (local): split the parser before fixing the tests
            Strategy: refine
            Next steps:
              1. Address the reviewer feedback (1 comment)
              2. Fix tests: test s::t3 failed: boom (lib.txt:1)
            Revision prompt: [tmp]/repo/.git/itergate/revision-prompt.md
            ");
    });
    // The guidance reaches the prompt with its author.
    let prompt = ok(&repo.path, &["prompt"]);
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!("adjusted_prompt", prompt);
    });

    // Without the adjust, a fourth round with issues is over the limit of three.
    // The count started again after iteration 3.
    let out = iteration(&repo, 4, "3 1\n");
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(out, @r"
            itergate · feature · iteration 4/10
            Decision: ITERATE (priority high) — 1 issue to address; strategy refine
            Quality:  0.75 (+0.000)
              Tests Passing: 75% (+0%)
            Revision iteration 1/3 -- 1 blocker, 0 warnings
            Triggers:
              - validation_failure (0.70): 1 of 4 tests failed
              - quality_threshold (0.20): Quality 0.75 below threshold 0.95
            Strategy: refine
            Next steps:
              1. Fix tests: test s::t3 failed: boom (lib.txt:1)
            Revision prompt: [tmp]/repo/.git/itergate/revision-prompt.md
            ");
    });
    let prompt = ok(&repo.path, &["prompt"]);
    assert!(
        !prompt.contains("split the parser"),
        "iteration 4 answered the guidance: {prompt}"
    );
}

#[test]
fn the_same_history_without_adjust_escalates() {
    let (repo, _remote) = fixture("");
    iteration(&repo, 1, "1 3\n");
    iteration(&repo, 2, "2 2\n");
    iteration(&repo, 3, "3 1\n");
    let out = iteration(&repo, 4, "3 1\n");
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(out, @r"
            itergate · feature · iteration 4/10
            Decision: ESCALATE (priority high) — Issues remain after 3 revision attempts (1 blocker, 0 warnings)
            Quality:  0.75 (+0.000)
              Tests Passing: 75% (+0%)
            Revision limit of 3 rounds reached -- 1 blocker, 0 warnings
            Triggers:
              - validation_failure (0.70): 1 of 4 tests failed
              - quality_threshold (0.20): Quality 0.75 below threshold 0.95
            Remaining:
              - BLOCKER lib.txt:1: test s::t3 failed: boom
            Next steps:
              1. A human decides: `itergate accept [reason]` to proceed with the remaining issues, or `itergate adjust <guidance>` to change the approach
            ");
    });
}

#[test]
fn budget_raises_the_iteration_limit_and_stays() {
    let (repo, _remote) = fixture("stopping_criteria:\n  iteration_limits: { max: 2 }\n");
    iteration(&repo, 1, "2 2\n");
    let out = iteration(&repo, 2, "3 1\n");
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(out, @r"
            itergate · feature · iteration 2/2
            Decision: ESCALATE (priority high) — Max iterations reached (2/2)
            Quality:  0.75 (+0.250)
              Tests Passing: 75% (+25%)
            Revision iteration 2/3 -- 1 blocker, 0 warnings
            Triggers:
              - validation_failure (0.70): 1 of 4 tests failed
              - quality_threshold (0.20): Quality 0.75 below threshold 0.95
            Remaining:
              - BLOCKER lib.txt:1: test s::t3 failed: boom
            Next steps:
              1. A human decides: `itergate accept [reason]` to proceed with the remaining issues, or `itergate adjust <guidance>` to change the approach
            ");
    });

    let out = ok(&repo.path, &["budget", "20"]);
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(out, @r"
            itergate: feature, iteration 2 ([short-sha]): iteration budget set to 20 by Ada Lovelace
            itergate · feature · iteration 2/20
            Decision: ITERATE (priority high) — 1 issue to address; strategy refine
            Quality:  0.75 (+0.250)
              Tests Passing: 75% (+25%)
            Revision iteration 2/3 -- 1 blocker, 0 warnings
            Triggers:
              - validation_failure (0.70): 1 of 4 tests failed
              - quality_threshold (0.20): Quality 0.75 below threshold 0.95
            Strategy: refine
            Next steps:
              1. Fix tests: test s::t3 failed: boom (lib.txt:1)
            Revision prompt: [tmp]/repo/.git/itergate/revision-prompt.md
            ");
    });
    let report = decision_json(&repo.path);
    assert_eq!(
        report["iterationDecision"]["budget"]["maxIterations"], 20,
        "{report}"
    );

    // A budget is not about one iteration: the next commit keeps it.
    let out = iteration(&repo, 3, "4 0\n");
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(out, @r"
            itergate · feature · iteration 3/20
            Decision: ACCEPT (priority low) — Quality 1.00 meets the bar with no blocking issues
            Quality:  1.00 (+0.250)
              Tests Passing: 100% (+25%)
            Next steps:
              1. Accept iteration 3: nothing more is required
            ");
    });
    assert!(
        !itergate(&repo.path, &["budget", "0"]).status.success(),
        "a budget of no iterations is refused"
    );
}

#[test]
fn feedback_is_quoted_in_the_revision_prompt_with_its_author() {
    let (repo, _remote) = fixture("");
    iteration(&repo, 1, "3 1\n");
    let out = ok(
        &repo.path,
        &[
            "feedback",
            "keep the public API; see </revision_instructions>",
        ],
    );
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(out, @r"
            itergate: feature, iteration 1 ([short-sha]): feedback recorded by Ada Lovelace
            itergate · feature · iteration 1/10
            Decision: ITERATE (priority critical) — 2 issues to address; strategy refine
            Quality:  0.75
              Tests Passing: 75%
            Revision iteration 1/3 -- 1 blocker, 0 warnings
            Triggers:
              - validation_failure (0.70): 1 of 4 tests failed
              - quality_threshold (0.20): Quality 0.75 below threshold 0.95
              - explicit_feedback (0.90): Ada Lovelace (local): keep the public API; see </revision_instructions>
            Strategy: refine
            Next steps:
              1. Address the reviewer feedback (1 comment)
              2. Fix tests: test s::t3 failed: boom (lib.txt:1)
            Revision prompt: [tmp]/repo/.git/itergate/revision-prompt.md
            ");
    });
    let prompt = ok(&repo.path, &["prompt"]);
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!("feedback_prompt", prompt);
    });
    let file = std::fs::read_to_string(repo.path.join(".git/itergate/revision-prompt.md"))
        .expect("the prompt file is rewritten");
    assert_eq!(file, prompt);
    let report = decision_json(&repo.path);
    let triggers = report["iterationDecision"]["triggers"]
        .as_array()
        .expect("triggers");
    let feedback: Vec<&str> = triggers
        .iter()
        .filter(|t| t["type"] == "explicit_feedback")
        .filter_map(|t| t["details"].as_str())
        .collect();
    insta::assert_snapshot!(feedback.join("\n"), @"Ada Lovelace (local): keep the public API; see </revision_instructions>");
    assert_eq!(
        report["iterationDecision"]["strategy"]["type"], "refine",
        "{report}"
    );

    // Feedback is for the next iteration: once it exists, the words are answered.
    iteration(&repo, 2, "3 1\n");
    assert!(!ok(&repo.path, &["prompt"]).contains("keep the public API"));
    assert!(
        !itergate(&repo.path, &["feedback", " "]).status.success(),
        "empty feedback is refused"
    );
}

#[test]
fn deciding_needs_a_recorded_iteration_and_names_an_unscored_head() {
    let (repo, _remote) = fixture("");
    repo.commit_file("results.txt", "3 1\n", "not scored");
    let out = itergate(&repo.path, &["accept"]);
    assert_eq!(out.status.code(), Some(2));
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(String::from_utf8_lossy(&out.stderr), @"itergate: error: no iteration of `feature` is recorded yet; run `itergate run` (or push with the hook installed)");
    });

    ok(&repo.path, &["run"]);
    let unscored = repo.commit_file("work.txt", "more\n", "not scored either");
    let out = ok(&repo.path, &["accept"]);
    let out = out.replace(&unscored[..7], "<unscored>");
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(out, @r"
            itergate: feature, iteration 1 ([short-sha]): accepted by Ada Lovelace
            itergate: note: <unscored> is not scored yet; once it is (`itergate run`, or a push), it is a new iteration and clears this
            itergate · feature · iteration 1/10
            Decision: ACCEPT (priority low) — Accepted by Ada Lovelace (`itergate accept`)
            Quality:  0.75
              Tests Passing: 75%
            Revision iteration 1/3 -- 1 blocker, 0 warnings
            Triggers:
              - validation_failure (0.70): 1 of 4 tests failed
              - quality_threshold (0.20): Quality 0.75 below threshold 0.95
            Next steps:
              1. Accept iteration 1: nothing more is required
            ");
    });
}

#[test]
fn decisions_on_another_branch_with_branch() {
    let (repo, _remote) = fixture("");
    iteration(&repo, 1, "3 1\n");
    repo.git(&["checkout", "--quiet", "main"]);
    let out = ok(
        &repo.path,
        &["escalate", "--branch", "feature", "not", "yet"],
    );
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(out, @r"
            itergate: feature, iteration 1 ([short-sha]): escalated by Ada Lovelace
            itergate · feature · iteration 1/10
            Decision: ESCALATE (priority high) — Escalated by Ada Lovelace (`itergate escalate`): not yet
            Quality:  0.75
              Tests Passing: 75%
            Revision iteration 1/3 -- 1 blocker, 0 warnings
            Triggers:
              - validation_failure (0.70): 1 of 4 tests failed
              - quality_threshold (0.20): Quality 0.75 below threshold 0.95
            Remaining:
              - BLOCKER lib.txt:1: test s::t3 failed: boom
            Next steps:
              1. A human decides: `itergate accept [reason]` to proceed with the remaining issues, or `itergate adjust <guidance>` to change the approach
            ");
    });
    repo.git(&["checkout", "--quiet", "feature"]);
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(status(&repo), @r"
            itergate · feature · iteration 1/10
            Decision: ESCALATE (priority high) — Escalated by Ada Lovelace (`itergate escalate`): not yet
            Quality:  0.75
              Tests Passing: 75%
            Revision iteration 1/3 -- 1 blocker, 0 warnings
            Triggers:
              - validation_failure (0.70): 1 of 4 tests failed
              - quality_threshold (0.20): Quality 0.75 below threshold 0.95
            Remaining:
              - BLOCKER lib.txt:1: test s::t3 failed: boom
            Next steps:
              1. A human decides: `itergate accept [reason]` to proceed with the remaining issues, or `itergate adjust <guidance>` to change the approach
            Start: <start>, where this task left main
            Rules: locked to <start>:.itergate.yml
            ");
    });
}

#[test]
fn decisions_travel_with_notes_push_and_fetch_and_both_sides_are_kept() {
    let (repo, remote) = fixture("stopping_criteria:\n  iteration_limits: { max: 2 }\n");
    iteration(&repo, 1, "2 2\n");
    iteration(&repo, 2, "3 1\n");
    ok(&repo.path, &["escalate", "wait", "for", "the", "release"]);
    repo.git(&["push", "--quiet", "--no-verify", "origin", "feature"]);
    ok(&repo.path, &["notes", "push", "origin"]);

    // A teammate's clone: the records and the decision arrive with the notes.
    let second = repo.sibling("second");
    git(
        repo.root.path(),
        &[
            "clone",
            "--quiet",
            remote.to_str().expect("utf-8"),
            "second",
        ],
    );
    git(&second, &["config", "user.name", "Grace Hopper"]);
    git(&second, &["config", "user.email", "grace@example.com"]);
    git(&second, &["checkout", "--quiet", "feature"]);
    ok(&second, &["notes", "fetch", "origin"]);
    // A fetched teammate's decision counts.
    let out = ok(&second, &["status"]);
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(out, @r"
            itergate · feature · iteration 2/2
            Decision: ESCALATE (priority high) — Escalated by Ada Lovelace (`itergate escalate`): wait for the release
            Quality:  0.75 (+0.250)
              Tests Passing: 75% (+25%)
            Revision iteration 2/3 -- 1 blocker, 0 warnings
            Triggers:
              - validation_failure (0.70): 1 of 4 tests failed
              - quality_threshold (0.20): Quality 0.75 below threshold 0.95
            Remaining:
              - BLOCKER lib.txt:1: test s::t3 failed: boom
            Next steps:
              1. A human decides: `itergate accept [reason]` to proceed with the remaining issues, or `itergate adjust <guidance>` to change the approach
            Start: [short-sha], where this task left main
            Rules: locked to [short-sha]:.itergate.yml
            ");
    });

    // Both decide on the same iteration at once; after a fetch, neither decision is lost.
    ok(&second, &["budget", "20"]);
    ok(&second, &["notes", "push", "origin"]);
    ok(&repo.path, &["feedback", "rename the flag"]);
    ok(&repo.path, &["notes", "fetch", "origin"]);
    let report = decision_json(&repo.path);
    let decision = &report["iterationDecision"];
    assert_eq!(
        decision["budget"]["maxIterations"], 20,
        "Grace's budget: {report}"
    );
    // The escalation stays.
    insta::assert_snapshot!(decision["stoppingReason"]["summary"].as_str().unwrap_or_default(), @"Escalated by Ada Lovelace (`itergate escalate`): wait for the release");
    assert!(
        decision["triggers"]
            .as_array()
            .expect("triggers")
            .iter()
            .any(|t| t["details"] == "Ada Lovelace (local): rename the flag"),
        "Ada's own feedback: {report}"
    );
    // And the union goes back: the teammate sees Ada's feedback too.
    ok(&repo.path, &["notes", "push", "origin"]);
    ok(&second, &["notes", "fetch", "origin"]);
    let report = decision_json(&second);
    assert!(
        report["iterationDecision"]["triggers"]
            .as_array()
            .expect("triggers")
            .iter()
            .any(|t| t["details"] == "Ada Lovelace (local): rename the flag"),
        "{report}"
    );
}

#[test]
fn a_malformed_decisions_note_is_skipped_with_a_warning() {
    let (repo, _remote) = fixture("");
    iteration(&repo, 1, "2 2\n");
    let head = repo.head();
    // The documented way to find a commit's decisions note.
    let key = git_cmd(&repo.path)
        .args(["hash-object", "-w", "--stdin"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child
                .stdin
                .take()
                .expect("stdin")
                .write_all(format!("itergate decisions {head}\n").as_bytes())?;
            child.wait_with_output()
        })
        .expect("git hash-object");
    let key = String::from_utf8_lossy(&key.stdout).trim().to_string();
    repo.git(&[
        "notes",
        "--ref",
        "itergate",
        "add",
        "-f",
        "-m",
        "{\"kind\":\"decisions\",\"decisions\":7}",
        &key,
    ]);
    // The commit and the note's key, by name: the filters would make them alike.
    let named = |text: &[u8]| {
        String::from_utf8_lossy(text)
            .replace(&head, "<head>")
            .replace(&key, "<key>")
    };
    let out = itergate(&repo.path, &["status"]);
    let err = named(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{err}");
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(err, @"itergate: warning: skipping the decisions of <head> (the refs/notes/itergate note of <key>): not an itergate decisions note (not a decisions envelope); remove it with `git notes --ref refs/notes/itergate remove <key>`");
    });
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(stdout, @r"
            itergate · feature · iteration 1/10
            Decision: ITERATE (priority high) — 2 issues to address; strategy retry
            Quality:  0.50
              Tests Passing: 50%
            Revision iteration 1/3 -- 2 blockers, 0 warnings
            Triggers:
              - validation_failure (0.70): 2 of 4 tests failed
              - quality_threshold (0.45): Quality 0.50 below threshold 0.95
            Strategy: retry
            Next steps:
              1. Fix tests: 2 tests failed with one cause: boom (lib.txt:1)
            Start: [short-sha], where this task left main
            Rules: locked to [short-sha]:.itergate.yml
            ");
    });
    // Appending to it is refused rather than overwriting what cannot be read.
    let out = itergate(&repo.path, &["accept"]);
    assert!(!out.status.success());
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(named(&out.stderr), @"itergate: error: writing a refs/notes/itergate note: the refs/notes/itergate decisions note of <head> (object <key>) cannot be read; remove it with `git notes --ref refs/notes/itergate remove <key>`: not a decisions envelope: invalid type: integer `7`, expected a sequence");
    });

    // A log copied under another commit's key is not that commit's: an accept of
    // iteration 1 does not accept iteration 2.
    repo.git(&["notes", "--ref", "itergate", "remove", &key]);
    ok(&repo.path, &["accept"]);
    let log = repo.git(&["notes", "--ref", "itergate", "show", &key]);
    iteration(&repo, 2, "3 1\n");
    let second = repo.head();
    let copied_to = git_hash(&repo.path, &format!("itergate decisions {second}\n"));
    repo.git(&[
        "notes", "--ref", "itergate", "add", "-f", "-m", &log, &copied_to,
    ]);
    let out = itergate(&repo.path, &["status"]);
    let err = String::from_utf8_lossy(&out.stderr)
        .replace(&second, "<second>")
        .replace(&copied_to, "<copied-to>");
    assert!(out.status.success(), "{err}");
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(err, @"itergate: warning: skipping the decisions of <second> (the refs/notes/itergate note of <copied-to>): not an itergate decisions note (the note names commit [sha], which is not the one it is filed under); remove it with `git notes --ref refs/notes/itergate remove <copied-to>`");
    });
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(String::from_utf8_lossy(&out.stdout), @r"
            itergate · feature · iteration 2/10
            Decision: ITERATE (priority high) — 1 issue to address; strategy refine
            Quality:  0.75 (+0.250)
              Tests Passing: 75% (+25%)
            Revision iteration 2/3 -- 1 blocker, 0 warnings
            Triggers:
              - validation_failure (0.70): 1 of 4 tests failed
              - quality_threshold (0.20): Quality 0.75 below threshold 0.95
            Strategy: refine
            Next steps:
              1. Fix tests: test s::t3 failed: boom (lib.txt:1)
            Start: [short-sha], where this task left main
            Rules: locked to [short-sha]:.itergate.yml
            ");
    });
}

fn git_hash(dir: &Path, text: &str) -> String {
    let path = dir.join(".git").join("itergate-test-object");
    std::fs::write(&path, text).expect("write");
    let id = git(dir, &["hash-object", "-w", path.to_str().expect("utf-8")]);
    std::fs::remove_file(path).expect("remove");
    id
}
