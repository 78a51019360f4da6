//! The binary: exit codes, messages, formats.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::redact;

fn itergate(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_itergate"))
        .args(args)
        .current_dir(dir)
        .env_remove("ITERGATE_CONFIG")
        .env("NO_COLOR", "1")
        .output()
        .expect("run itergate")
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// `text` with the directory `dir` named `<dir>`: a snapshot keeps the file name and place
/// after it, which a filter for temporary paths would take too.
fn in_dir(text: &str, dir: &Path) -> String {
    text.replace(dir.to_str().expect("utf8"), "<dir>")
}

const NOW: &str = "--now=2026-11-02T11:00:00Z";

#[test]
fn decide_on_the_example_history() {
    let o = itergate(
        &["decide", "--history", "examples/history.yml", NOW],
        &root(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    insta::with_settings!({ filters => redact::filters() }, {
        insta::assert_snapshot!(stdout(&o), @r"
            itergate · task · iteration 3/10
            Decision: ACCEPT (priority low) — Quality 0.95 meets the bar with no blocking issues
            Quality:  0.95 (+0.135)
              Tests Passing: 100% (+10%)
              Code Quality: 0.95 (+0.100)
              Coverage: 90% (+20%)
              Complexity: 0.85 (+0.250)
            Next steps:
              1. Accept iteration 3: nothing more is required
            ");
    });
}

#[test]
fn json_and_yaml_reports_have_the_top_key() {
    let o = itergate(
        &[
            "decide",
            "--history",
            "examples/history.yml",
            "--format",
            "json",
            NOW,
        ],
        &root(),
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["iterationDecision"]["decision"]["needsIteration"], false);
    assert_eq!(
        v["iterationDecision"]["assessment"]["recommendation"],
        "accept"
    );
    let o = itergate(
        &[
            "decide",
            "--history",
            "examples/history.yml",
            "--format",
            "yaml",
            NOW,
        ],
        &root(),
    );
    assert!(stdout(&o).starts_with("iterationDecision:\n"));
}

#[test]
fn analytics_exports() {
    let o = itergate(
        &[
            "analytics",
            "--history",
            "examples/history.yml",
            "--format",
            "csv",
            NOW,
        ],
        &root(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert!(lines[0].starts_with("iteration,timestamp,commit,status,quality"));
    let o = itergate(
        &[
            "analytics",
            "--history",
            "examples/history.yml",
            "--format",
            "json",
            NOW,
        ],
        &root(),
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["iterations"], 3);
    assert_eq!(v["history"][1]["cumulative"]["regression_count"], 0);
    assert!(v["total_improvement"].as_f64().expect("number") > 0.2);
}

#[test]
fn directory_flag_and_config_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::copy(
        root().join("examples/history.yml"),
        dir.path().join("h.yml"),
    )
    .expect("copy");
    std::fs::write(
        dir.path().join(".itergate.yml"),
        "stopping_criteria: {quality_threshold: {value: 0.99}}\n",
    )
    .expect("write");
    let o = itergate(
        &[
            "-C",
            dir.path().to_str().expect("utf8"),
            "decide",
            "--history",
            "h.yml",
            NOW,
        ],
        &root(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    // The threshold of 0.99 is not met.
    insta::with_settings!({ filters => redact::filters() }, {
        insta::assert_snapshot!(stdout(&o), @r"
            itergate · task · iteration 3/10
            Decision: ESCALATE (priority high) — Expected gain 0.01 is too small to be worth another iteration, and quality is below the bar
            Quality:  0.95 (+0.135)
              Tests Passing: 100% (+10%)
              Code Quality: 0.95 (+0.100)
              Coverage: 90% (+20%)
              Complexity: 0.85 (+0.250)
            Triggers:
              - quality_threshold (0.04): Quality 0.95 below threshold 0.99
            Next steps:
              1. A human decides: `/iterate accept` to proceed with the remaining issues, or `/iterate adjust <guidance>` to change the approach
            ");
    });
}

fn config_error(yaml: &str) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join(".itergate.yml"), yaml).expect("write");
    std::fs::copy(
        root().join("examples/history.yml"),
        dir.path().join("h.yml"),
    )
    .expect("copy");
    let o = itergate(&["decide", "--history", "h.yml"], dir.path());
    assert_eq!(o.status.code(), Some(2), "stdout: {}", stdout(&o));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "one clear error: {err}");
    assert!(!err.contains("panicked"));
    in_dir(&err, dir.path())
}

#[test]
fn malformed_configs_exit_2_with_one_clear_error() {
    let e = config_error(
        "quality_weights: {tests_passing: -1, code_quality: 1, coverage: 0.9, complexity: 0.1}\n",
    );
    insta::assert_snapshot!(e, @"itergate: error: <dir>/.itergate.yml:1:1: `quality_weights`: weight `tests_passing` is -1; expected a number >= 0");
    let e = config_error("quality_weights: {tests_passing: 0.9}\n");
    insta::assert_snapshot!(e, @"itergate: error: <dir>/.itergate.yml:1:1: `quality_weights`: the weights sum to 1.5; expected them to sum to 1 (unset weights default to 0.4/0.3/0.2/0.1)");
    let e = config_error("stopping_criteria:\n  iteration_limits: {min: 4, max: 2}\n");
    insta::assert_snapshot!(e, @"itergate: error: <dir>/.itergate.yml:2:3: `stopping_criteria.iteration_limits`: `min` (4) is greater than `max` (2); expected min <= max");
    let e = config_error("revision: {max_iterations: three}\n");
    insta::assert_snapshot!(e, @r#"itergate: error: <dir>/.itergate.yml:1:28: `revision.max_iterations`: invalid type: string "three", expected u32"#);
    let e = config_error("stopping_criteria: [\n");
    insta::assert_snapshot!(e, @"itergate: error: <dir>/.itergate.yml:1:20: `stopping_criteria`: invalid type: sequence, expected struct StoppingCriteria");
}

fn history_error(name: &str, text: &str) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join(name), text).expect("write");
    let o = itergate(&["decide", "--history", name], dir.path());
    assert_eq!(o.status.code(), Some(2), "stdout: {}", stdout(&o));
    let err = stderr(&o);
    assert!(!err.contains("panicked"), "{err}");
    in_dir(&err, dir.path())
}

#[test]
fn malformed_histories_exit_2_with_place() {
    let e = history_error("h.json", "[{\"iteration\": 1, \"timestamp\": \"2026-11-02T09:00:00Z\", \"scores\": {\"coverage\": \"high\"}}]");
    insta::assert_snapshot!(e, @r#"itergate: error: <dir>/h.json:1:84: `[0].scores.coverage`: invalid type: string "high", expected f64"#);
    let e = history_error("h.json", "[{\"iteration\": 1,");
    insta::assert_snapshot!(e, @"itergate: error: <dir>/h.json:1:17: `[0]`: EOF while parsing a value");
    let e = history_error("h.yml", "- iteration: 1\n  timestamp: yesterday\n");
    insta::assert_snapshot!(e, @"itergate: error: <dir>/h.yml:2:14: `[0].timestamp`: input contains invalid characters");
    let e = history_error(
        "h.yml",
        "- {iteration: 1, timestamp: 2026-11-02T09:00:00Z, scores: {tests_passing: 1.7}}\n",
    );
    insta::assert_snapshot!(e, @"itergate: error: <dir>/h.yml: `[0].scores.tests_passing`: 1.7 is out of range; expected a number from 0 to 1");
    let e = history_error("h.yml", "");
    insta::assert_snapshot!(e, @"itergate: error: <dir>/h.yml: the file is empty; expected a list of iteration records");
    let e = history_error("h.yml", "[]");
    insta::assert_snapshot!(e, @"itergate: error: h.yml: task: the history is empty: there is no iteration to decide on");
    let e = history_error("h.yml", "- {iteration: 2, timestamp: 2026-11-02T09:00:00Z}\n- {iteration: 1, timestamp: 2026-11-02T09:00:00Z}\n");
    insta::assert_snapshot!(e, @"itergate: error: <dir>/h.yml: `[1].iteration`: iteration 1 does not follow iteration 2; expected the records oldest first");
}

#[test]
fn missing_file_and_bad_usage_exit_2() {
    let o = itergate(&["decide", "--history", "nope.yml"], &root());
    assert_eq!(o.status.code(), Some(2));
    insta::with_settings!({ filters => redact::filters() }, {
        insta::assert_snapshot!(in_dir(&stderr(&o), &root()), @"itergate: error: <dir>/nope.yml: cannot read: No such file or directory (os error 2)");
    });
    let o = itergate(&["frobnicate"], &root());
    assert_eq!(o.status.code(), Some(2));
    let o = itergate(&["decide"], &root());
    assert_eq!(o.status.code(), Some(2));
    insta::with_settings!({ filters => redact::filters() }, {
        insta::assert_snapshot!(stderr(&o), @"itergate: error: --history FILE is required (a JSON or YAML list of iteration records)");
    });
}

#[test]
fn help_teaches() {
    let o = itergate(&["--help"], &root());
    // With examples and the table of exit statuses.
    insta::with_settings!({ filters => redact::filters() }, {
        insta::assert_snapshot!("help", stdout(&o));
    });
    let o = itergate(&["decide", "--help"], &root());
    insta::with_settings!({ filters => redact::filters() }, {
        insta::assert_snapshot!("decide_help", stdout(&o));
    });
}

#[test]
fn color_always_paints_and_never_does_not() {
    let o = itergate(
        &[
            "--color",
            "always",
            "decide",
            "--history",
            "examples/history.yml",
            NOW,
        ],
        &root(),
    );
    // The escape codes, shown.
    insta::with_settings!({ filters => vec![("\u{1b}", "^[")] }, {
        insta::assert_snapshot!(stdout(&o), @r"
            ^[[1mitergate^[[0m · task · iteration 3/10
            Decision: ^[[32mACCEPT^[[0m (priority low) — Quality 0.95 meets the bar with no blocking issues
            Quality:  0.95 (+0.135)
              Tests Passing: 100% (+10%)
              Code Quality: 0.95 (+0.100)
              Coverage: 90% (+20%)
              Complexity: 0.85 (+0.250)
            Next steps:
              1. Accept iteration 3: nothing more is required
            ");
    });
    let o = itergate(
        &[
            "--color",
            "never",
            "decide",
            "--history",
            "examples/history.yml",
            NOW,
        ],
        &root(),
    );
    assert!(!stdout(&o).contains('\u{1b}'));
}

#[test]
fn templates_can_be_overridden_per_repository() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::copy(
        root().join("examples/history.yml"),
        dir.path().join("h.yml"),
    )
    .expect("copy");
    std::fs::create_dir(dir.path().join("tpl")).expect("mkdir");
    std::fs::write(
        dir.path().join("tpl/decision.txt.j2"),
        "custom: {{ recommendation }}\n",
    )
    .expect("write");
    std::fs::write(
        dir.path().join(".itergate.yml"),
        "templates: { dir: tpl }\n",
    )
    .expect("write");
    let o = itergate(&["decide", "--history", "h.yml", NOW], dir.path());
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "custom: accept\n");
    // An override in the old tera naming is refused, not silently ignored.
    std::fs::write(dir.path().join("tpl/analytics.txt.tera"), "x\n").expect("write");
    let o = itergate(&["decide", "--history", "h.yml", NOW], dir.path());
    assert_eq!(o.status.code(), Some(2));
    insta::with_settings!({ filters => redact::filters() }, {
        insta::assert_snapshot!(in_dir(&stderr(&o), dir.path()), @r#"itergate: error: template <dir>/tpl/analytics.txt.tera: templates are Jinja files named `*.j2` now: rename it to analytics.txt.j2 (tera's `join(sep="...")` becomes `join("...")`)"#);
    });
    std::fs::remove_file(dir.path().join("tpl/analytics.txt.tera")).expect("remove");
    std::fs::write(dir.path().join("tpl/decision.txt.j2"), "{% if %}\n").expect("write");
    let o = itergate(&["decide", "--history", "h.yml", NOW], dir.path());
    assert_eq!(o.status.code(), Some(2));
    insta::with_settings!({ filters => redact::filters() }, {
        insta::assert_snapshot!(in_dir(&stderr(&o), dir.path()), @"itergate: error: template <dir>/tpl/decision.txt.j2: syntax error: unexpected end of block (in decision.txt.j2:1)");
    });
    // A misspelt name fails loudly, naming the file and line, instead of printing nothing.
    std::fs::write(
        dir.path().join("tpl/decision.txt.j2"),
        "{% if nothing_here %}x{% endif %}\n{{ recomendation }}\n",
    )
    .expect("write");
    let o = itergate(&["decide", "--history", "h.yml", NOW], dir.path());
    assert_eq!(o.status.code(), Some(2));
    insta::with_settings!({ filters => redact::filters() }, {
        insta::assert_snapshot!(in_dir(&stderr(&o), dir.path()), @"itergate: error: rendering template <dir>/tpl/decision.txt.j2: undefined value (in decision.txt.j2:2)");
    });
}

#[test]
fn errors_a_newcomer_understands() {
    // Outside a repository: `run` and `init` say so, with no libgit2 codes.
    let outside = tempfile::tempdir().expect("tempdir");
    let mut errors = String::new();
    for args in [&["run"][..], &["init"][..], &["status"][..]] {
        let o = itergate(args, outside.path());
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        errors.push_str(&format!("{args:?}: {}", in_dir(&err, outside.path())));
        assert!(
            !outside.path().join(".itergate.yml").exists(),
            "init wrote nothing"
        );
    }
    insta::with_settings!({ filters => redact::filters() }, {
        insta::assert_snapshot!(errors, @r#"
            ["run"]: itergate: error: no git repository at or above <dir> (could not find repository at '<dir>'); run this inside a clone, or `git init` first
            ["init"]: itergate: error: no git repository at or above <dir> (could not find repository at '<dir>'); run this inside a clone, or `git init` first
            ["status"]: itergate: error: no git repository at or above <dir> (could not find repository at '<dir>'); run this inside a clone, or `git init` first
            "#);
    });
    // A repository without commits: make a first commit.
    let empty = tempfile::tempdir().expect("tempdir");
    let git = Command::new("git")
        .args(["init", "-q"])
        .current_dir(empty.path())
        .status()
        .expect("git");
    assert!(git.success());
    let mut errors = String::new();
    for args in [&["run"][..], &["status"][..], &["score"][..]] {
        let o = itergate(args, empty.path());
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        errors.push_str(&format!("{args:?}: {}", in_dir(&err, empty.path())));
    }
    insta::with_settings!({ filters => redact::filters() }, {
        insta::assert_snapshot!(errors, @r#"
            ["run"]: itergate: error: the repository has no commits yet: make a first commit, then run again
            ["status"]: itergate: error: the repository has no commits yet: make a first commit, then run again
            ["score"]: itergate: error: the repository has no commits yet: make a first commit, then run again
            "#);
    });
}

#[test]
fn config_prints_the_defaults_and_the_configuration_in_force() {
    let o = itergate(&["config", "--default"], &root());
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    // The documented file, comments and all.
    insta::with_settings!({ filters => redact::filters() }, {
        insta::assert_snapshot!("config_default", &text);
    });
    let parsed = itergate::config::Config::from_yaml(&text, Path::new("default"))
        .expect("the printed defaults parse");
    assert_eq!(parsed, itergate::config::Config::default());
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("c.yml"), "revision: {max_iterations: 5}\n").expect("write");
    let o = itergate(&["--config", "c.yml", "config"], dir.path());
    assert!(o.status.success(), "{}", stderr(&o));
    insta::with_settings!({ filters => redact::filters() }, {
        insta::assert_snapshot!("config_in_force", stdout(&o));
    });
}

#[test]
fn completions_and_the_man_page_know_every_subcommand() {
    use clap::CommandFactory;
    let command = itergate::cli::Cli::command();
    let names: Vec<String> = command
        .get_subcommands()
        .filter(|c| !c.is_hide_set())
        .map(|c| c.get_name().to_string())
        .collect();
    assert!(names.len() > 10, "{names:?}");
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let o = itergate(&["completions", shell], &root());
        assert!(o.status.success(), "{shell}: {}", stderr(&o));
        let script = stdout(&o);
        for name in &names {
            assert!(
                script.contains(name.as_str()),
                "{shell} completions lack `{name}`"
            );
        }
    }
    let o = itergate(&["man"], &root());
    assert!(o.status.success(), "{}", stderr(&o));
    let page = stdout(&o);
    assert!(
        page.starts_with(".ie") || page.contains(".TH"),
        "roff: {}",
        &page[..page.len().min(200)]
    );
    for name in &names {
        assert!(page.contains(name.as_str()), "the man page lacks `{name}`");
    }
}

#[test]
fn version_names_the_version_and_a_releases_commit() {
    let o = itergate(&["--version"], &root());
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.starts_with(&format!("itergate {}", env!("CARGO_PKG_VERSION"))),
        "{text}"
    );
    // A release build (ITERGATE_BUILD_COMMIT set by the workflow) names its commit.
    match option_env!("ITERGATE_BUILD_COMMIT").filter(|c| !c.is_empty()) {
        Some(commit) => assert!(text.contains(&format!("({commit})")), "{text}"),
        None => assert_eq!(
            text.trim(),
            format!("itergate {}", env!("CARGO_PKG_VERSION"))
        ),
    }
}

/// A broken `.itergate.yml` stops what needs it, never what helps fix it.
#[test]
fn help_for_a_broken_configuration_works_with_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join(".itergate.yml"), "checks: [\n").expect("write");
    for args in [
        &["config", "--default"][..],
        &["completions", "bash"],
        &["man"],
    ] {
        let out = itergate(args, dir.path());
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        assert!(!stdout(&out).is_empty(), "{args:?}");
    }
    let out = itergate(&["config"], dir.path());
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    insta::with_settings!({ filters => redact::filters() }, {
        insta::assert_snapshot!(in_dir(&stderr(&out), dir.path()), @"itergate: error: <dir>/.itergate.yml:1:9: `checks`: invalid type: sequence, expected a map");
    });
    // `init --force` writes a good one over it.
    let git = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(dir.path())
        .status()
        .expect("git runs");
    assert!(git.success());
    let out = itergate(&["init"], dir.path());
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    insta::with_settings!({ filters => redact::filters() }, {
        insta::assert_snapshot!(in_dir(&stderr(&out), dir.path()), @"itergate: error: <dir>/.itergate.yml exists; use --force to overwrite it");
    });
    let out = itergate(&["init", "--force"], dir.path());
    assert!(out.status.success(), "{}", stderr(&out));
    let out = itergate(&["config"], dir.path());
    assert!(out.status.success(), "{}", stderr(&out));
}

/// One table of exit statuses: `--help` prints every one, with the code the commands use
/// for each recommendation (`run --exit-code`, the hook, `loop`).
#[test]
fn help_lists_the_one_table_of_exit_statuses() {
    use itergate::app::exit::ExitStatus;
    use itergate::engine::Recommendation;
    let o = itergate(&["--help"], &root());
    let help = stdout(&o);
    let table = help.split("Exit status:\n").nth(1).expect("the table");
    let codes: Vec<&str> = table
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(
        codes,
        ["0", "1", "2", "3", "10", "20", "30", "128+N"],
        "{help}"
    );
    let by_recommendation: Vec<u8> = [
        Recommendation::Accept,
        Recommendation::Iterate,
        Recommendation::Escalate,
        Recommendation::Abort,
    ]
    .into_iter()
    .map(|r| ExitStatus::of(r).code())
    .collect();
    assert_eq!(by_recommendation, [0, 10, 20, 30]);
    assert_eq!(ExitStatus::Interrupted(2).code(), 130);
}
