//! The binary: exit codes, messages, formats.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

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

const NOW: &str = "--now=2026-11-02T11:00:00Z";

#[test]
fn decide_on_the_example_history() {
    let o = itergate(
        &["decide", "--history", "examples/history.yml", NOW],
        &root(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("Decision: ACCEPT"), "{}", stdout(&o));
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
    assert!(
        !stdout(&o).contains("Decision: ACCEPT"),
        "threshold 0.99 is not met: {}",
        stdout(&o)
    );
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
    err
}

#[test]
fn malformed_configs_exit_2_with_one_clear_error() {
    let e = config_error(
        "quality_weights: {tests_passing: -1, code_quality: 1, coverage: 0.9, complexity: 0.1}\n",
    );
    assert!(
        e.contains(".itergate.yml:1:") && e.contains("expected a number >= 0"),
        "{e}"
    );
    let e = config_error("quality_weights: {tests_passing: 0.9}\n");
    assert!(e.contains("expected them to sum to 1"), "{e}");
    let e = config_error("stopping_criteria:\n  iteration_limits: {min: 4, max: 2}\n");
    assert!(e.contains("`min` (4) is greater than `max` (2)"), "{e}");
    let e = config_error("revision: {max_iterations: three}\n");
    assert!(
        e.contains("`revision.max_iterations`") && e.contains(":1:"),
        "{e}"
    );
    let e = config_error("stopping_criteria: [\n");
    assert!(e.contains(".itergate.yml:"), "{e}");
}

fn history_error(name: &str, text: &str) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join(name), text).expect("write");
    let o = itergate(&["decide", "--history", name], dir.path());
    assert_eq!(o.status.code(), Some(2), "stdout: {}", stdout(&o));
    let err = stderr(&o);
    assert!(!err.contains("panicked"), "{err}");
    err
}

#[test]
fn malformed_histories_exit_2_with_place() {
    let e = history_error("h.json", "[{\"iteration\": 1, \"timestamp\": \"2026-11-02T09:00:00Z\", \"scores\": {\"coverage\": \"high\"}}]");
    assert!(
        e.contains("h.json:1:") && e.contains("`[0].scores.coverage`"),
        "{e}"
    );
    let e = history_error("h.json", "[{\"iteration\": 1,");
    assert!(e.contains("h.json:1:"), "{e}");
    let e = history_error("h.yml", "- iteration: 1\n  timestamp: yesterday\n");
    assert!(
        e.contains("h.yml:2:") && e.contains("`[0].timestamp`"),
        "{e}"
    );
    let e = history_error(
        "h.yml",
        "- {iteration: 1, timestamp: 2026-11-02T09:00:00Z, scores: {tests_passing: 1.7}}\n",
    );
    assert!(
        e.contains("`[0].scores.tests_passing`") && e.contains("expected a number from 0 to 1"),
        "{e}"
    );
    let e = history_error("h.yml", "");
    assert!(e.contains("empty"), "{e}");
    let e = history_error("h.yml", "[]");
    assert!(e.contains("no iteration"), "{e}");
    let e = history_error("h.yml", "- {iteration: 2, timestamp: 2026-11-02T09:00:00Z}\n- {iteration: 1, timestamp: 2026-11-02T09:00:00Z}\n");
    assert!(e.contains("oldest first"), "{e}");
}

#[test]
fn missing_file_and_bad_usage_exit_2() {
    let o = itergate(&["decide", "--history", "nope.yml"], &root());
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("nope.yml: cannot read"),
        "{}",
        stderr(&o)
    );
    let o = itergate(&["frobnicate"], &root());
    assert_eq!(o.status.code(), Some(2));
    let o = itergate(&["decide"], &root());
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--history"));
}

#[test]
fn help_teaches() {
    let o = itergate(&["--help"], &root());
    let text = stdout(&o);
    assert!(
        text.contains("Examples:") && text.contains("Exit status"),
        "{text}"
    );
    let o = itergate(&["decide", "--help"], &root());
    assert!(stdout(&o).contains("oldest first"));
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
    assert!(stdout(&o).contains("\u{1b}[32m"), "{}", stdout(&o));
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
    assert!(
        stderr(&o).contains("rename it to analytics.txt.j2"),
        "{}",
        stderr(&o)
    );
    std::fs::remove_file(dir.path().join("tpl/analytics.txt.tera")).expect("remove");
    std::fs::write(dir.path().join("tpl/decision.txt.j2"), "{% if %}\n").expect("write");
    let o = itergate(&["decide", "--history", "h.yml", NOW], dir.path());
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("tpl/decision.txt.j2"), "{}", stderr(&o));
    // A misspelt name fails loudly, naming the file and line, instead of printing nothing.
    std::fs::write(
        dir.path().join("tpl/decision.txt.j2"),
        "{% if nothing_here %}x{% endif %}\n{{ recomendation }}\n",
    )
    .expect("write");
    let o = itergate(&["decide", "--history", "h.yml", NOW], dir.path());
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("rendering template")
            && e.contains("tpl/decision.txt.j2")
            && e.contains("undefined value (in decision.txt.j2:2)"),
        "{e}"
    );
}

#[test]
fn errors_a_newcomer_understands() {
    // Outside a repository: `run` and `init` say so, with no libgit2 codes.
    let outside = tempfile::tempdir().expect("tempdir");
    for args in [&["run"][..], &["init"][..], &["status"][..]] {
        let o = itergate(args, outside.path());
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("no git repository at or above"), "{err}");
        assert!(!err.contains("class="), "{err}");
        assert!(
            !outside.path().join(".itergate.yml").exists(),
            "init wrote nothing"
        );
    }
    // A repository without commits: make a first commit.
    let empty = tempfile::tempdir().expect("tempdir");
    let git = Command::new("git")
        .args(["init", "-q"])
        .current_dir(empty.path())
        .status()
        .expect("git");
    assert!(git.success());
    for args in [&["run"][..], &["status"][..], &["score"][..]] {
        let o = itergate(args, empty.path());
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("make a first commit"), "{args:?}: {err}");
        assert!(!err.contains("class="), "{err}");
    }
}

#[test]
fn config_prints_the_defaults_and_the_configuration_in_force() {
    let o = itergate(&["config", "--default"], &root());
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("patch_coverage_target: 0.8"), "{text}");
    assert!(text.contains("# "), "the documented file, comments and all");
    let parsed = itergate::config::Config::from_yaml(&text, Path::new("default"))
        .expect("the printed defaults parse");
    assert_eq!(parsed, itergate::config::Config::default());
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("c.yml"), "revision: {max_iterations: 5}\n").expect("write");
    let o = itergate(&["--config", "c.yml", "config"], dir.path());
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("max_iterations: 5"), "{}", stdout(&o));
}

#[test]
fn completions_and_the_man_page_know_every_subcommand() {
    use clap::CommandFactory;
    let command = itergate::cli::Cli::command();
    let names: Vec<String> = command
        .get_subcommands()
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
    assert!(
        stderr(&out).contains(".itergate.yml:1:"),
        "{}",
        stderr(&out)
    );
    // `init --force` writes a good one over it.
    let git = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(dir.path())
        .status()
        .expect("git runs");
    assert!(git.success());
    let out = itergate(&["init"], dir.path());
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("use --force"), "{}", stderr(&out));
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
