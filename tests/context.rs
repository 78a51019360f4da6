//! Minimum sufficient context, end to end: the strict `CONTEXT_GAP_REPORT` format, each
//! kind of delivery, the round cap and the escalation for a missing required item — on
//! the pure delivery, through the real binary on real repositories (`itergate context`),
//! and through the fake GitHub for pull request comments (`itergate ci`). A leakage audit
//! asks for a holdout check's test file, source and output by path, concept and glob, and
//! finds none of it in any delivery, prompt, comment, log line or record. The revision
//! prompt stays within its budget on real failures.

mod fake_github;
mod gitrepo;
mod redact;

use crate::redact::assert_message;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use fake_github::{grant, FakeGithub, BOT_LOGIN, REPO, TOKEN};
use gitrepo::{write_script, TestRepo};
use itergate::config::Config;
use itergate::context::{
    deliver, delivery_view, parse_gap_report, policy, Alternative, Holdout, ItemSource, Limits,
    Lookup, Policy, Reply, ReplyKind, TestDetail, EXECUTE_NOW,
};
use itergate::render::Renderer;
use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_itergate");

/// A report's malformed lines, one a line: its number and what was expected there.
fn malformed(report: &itergate::context::GapReport) -> String {
    report
        .malformed
        .iter()
        .map(|m| format!("{}: {}", m.line, m.expected))
        .collect::<Vec<_>>()
        .join("\n")
}

// ---------------------------------------------------------------------------------------
// The strict format
// ---------------------------------------------------------------------------------------

#[test]
fn a_report_is_read_fenced_with_every_field() {
    let body = "I need more context.\n\n```\n**CONTEXT_GAP_REPORT**\n------------------\nNEEDS: src/parser.rs:40-80 | REASON: the failing test calls it | ALTERNATIVE: I can stub it\nNEEDS: the retry policy | REASON: unclear which errors retry | ALTERNATIVE: <none — required>\nREADY_TO_EXECUTE: false\n```\nThanks.\n";
    let report = parse_gap_report(body).expect("a report");
    assert_eq!(report.ready_to_execute, Some(false));
    assert!(report.malformed.is_empty(), "{:?}", report.malformed);
    assert_eq!(report.items.len(), 2);
    let first = &report.items[0];
    assert_eq!(
        (first.line, first.needs.as_str(), first.reason.as_str()),
        (6, "src/parser.rs:40-80", "the failing test calls it")
    );
    assert_eq!(
        first.alternative,
        Alternative::Fallback("I can stub it".into())
    );
    assert!(report.items[1].required());
    for required in [
        "none — required",
        "none - required",
        "NONE -- required",
        "none",
    ] {
        let text = format!(
            "CONTEXT_GAP_REPORT\nNEEDS: x.rs | REASON: y | ALTERNATIVE: {required}\nREADY_TO_EXECUTE: false"
        );
        let report = parse_gap_report(&text).expect("report");
        assert!(report.items[0].required(), "{required}");
    }
    let ready = parse_gap_report("CONTEXT_GAP_REPORT\n------------------\nREADY_TO_EXECUTE: true")
        .expect("report");
    assert!(ready.is_ready() && ready.malformed.is_empty());
    assert_eq!(parse_gap_report("no report here"), None);
}

#[test]
fn malformed_lines_are_reported_with_their_line_never_guessed() {
    let body = "CONTEXT_GAP_REPORT\n\
                ------------------\n\
                NEEDS: a.rs | REASON: r | ALTERNATIVE: fine\n\
                NEEDS: b.rs | REASON: r\n\
                NEEDS: | REASON: r | ALTERNATIVE: x\n\
                NEEDS: c.rs | ALTERNATIVE: x | REASON: r\n\
                NEEDS: <file path or concept> | REASON: r | ALTERNATIVE: x\n\
                NEEDS: d.rs | REASON: r | ALTERNATIVE: x | EXTRA: y\n\
                please also send the tests\n\
                READY_TO_EXECUTE: maybe\n";
    let report = parse_gap_report(body).expect("report");
    assert_eq!(report.items.len(), 1, "only the well-formed line counts");
    assert_eq!(report.items[0].needs, "a.rs");
    assert_eq!(report.ready_to_execute, None);
    let lines: Vec<usize> = report.malformed.iter().map(|m| m.line).collect();
    assert_eq!(lines, vec![4, 5, 6, 7, 8, 9, 10]);
    insta::assert_snapshot!(malformed(&report), @"
        4: three fields separated by `|` (`NEEDS: <file path or concept> | REASON: <why it blocks> | ALTERNATIVE: <what you can do without it, or none — required>`); found 2
        5: a value after `NEEDS:`
        6: `REASON:` in `NEEDS: <file path or concept> | REASON: <why it blocks> | ALTERNATIVE: <what you can do without it, or none — required>`
        7: a value after `NEEDS:` instead of the format's placeholder
        8: three fields separated by `|` (`NEEDS: <file path or concept> | REASON: <why it blocks> | ALTERNATIVE: <what you can do without it, or none — required>`); found 4
        9: `NEEDS: <file path or concept> | REASON: <why it blocks> | ALTERNATIVE: <what you can do without it, or none — required>` or `READY_TO_EXECUTE: true` or `READY_TO_EXECUTE: false`
        10: `READY_TO_EXECUTE: true` or `READY_TO_EXECUTE: false`
        ");

    let unfinished =
        parse_gap_report("CONTEXT_GAP_REPORT\nNEEDS: a | REASON: b | ALTERNATIVE: c\n")
            .expect("report");
    assert_eq!(unfinished.items.len(), 1);
    insta::assert_snapshot!(malformed(&unfinished), @"3: the report to end with `READY_TO_EXECUTE: true` or `READY_TO_EXECUTE: false`");
    let contradictory = parse_gap_report(
        "CONTEXT_GAP_REPORT\nNEEDS: a | REASON: b | ALTERNATIVE: c\nREADY_TO_EXECUTE: true",
    )
    .expect("report");
    assert!(!contradictory.is_ready());
    insta::assert_snapshot!(malformed(&contradictory), @"3: `READY_TO_EXECUTE: false` when NEEDS lines ask for something");
    let empty = parse_gap_report("CONTEXT_GAP_REPORT\nREADY_TO_EXECUTE: false").expect("report");
    insta::assert_snapshot!(malformed(&empty), @"2: at least one `NEEDS: <file path or concept> | REASON: <why it blocks> | ALTERNATIVE: <what you can do without it, or none — required>` line, or `READY_TO_EXECUTE: true`");
}

// ---------------------------------------------------------------------------------------
// Deliveries, on an in-memory source
// ---------------------------------------------------------------------------------------

struct Memory {
    files: BTreeMap<String, String>,
    config: Config,
    checks: BTreeMap<String, String>,
    tests: Vec<TestDetail>,
}

impl ItemSource for Memory {
    fn file(&self, path: &str) -> Lookup {
        match self.files.get(path) {
            Some(text) => Lookup::Found(text.as_bytes().to_vec()),
            None => Lookup::Missing,
        }
    }
    fn files(&self) -> Option<Vec<String>> {
        Some(self.files.keys().cloned().collect())
    }
    fn check_output(&self, name: &str) -> Option<String> {
        self.checks.get(name).cloned()
    }
    fn test(&self, id: &str) -> Option<TestDetail> {
        self.tests.iter().find(|t| t.id.ends_with(id)).cloned()
    }
    fn config(&self) -> &Config {
        &self.config
    }
    fn decision(&self) -> Option<String> {
        Some("iterationDecision:\n  needsIteration: true\n".into())
    }
    fn diff(&self) -> Result<Vec<(String, String)>, String> {
        Ok(vec![
            (
                "src/lib.rs".into(),
                "--- a/src/lib.rs\n+++ b/src/lib.rs\n+fn added() {}\n".into(),
            ),
            ("config/.env.local".into(), "+TOKEN=hunter2\n".into()),
        ])
    }
}

const HOLDOUT_CONFIG: &str = "checks:\n  tests:\n    run: cargo test\n  holdout:\n    run: pytest holdout/test_secret_quokka.py --junitxml=out/holdout.xml\n    report: { format: junit, path: out/holdout.xml }\n    visibility: aggregate_only\n";

fn config(yaml: &str) -> Config {
    Config::from_yaml(yaml, Path::new("test.yml")).expect("config")
}

fn memory() -> Memory {
    let lib: String = (1..=40).map(|n| format!("line {n}\n")).collect();
    let files = [
        ("src/lib.rs", lib.as_str()),
        ("src/util.rs", "pub fn util() {}\n"),
        ("tests/api.rs", "#[test]\nfn parses_ports() {\n    assert_eq!(parse(\"80\"), 80);\n}\n\n#[test]\nfn other() {}\n"),
        ("holdout/test_secret_quokka.py", "def secret_case_quokka():\n    assert SECRET_SOURCE_MARKER\n"),
        ("notes.txt", "the hidden cases live in holdout/test_secret_quokka.py\n"),
        (".env", "TOKEN=hunter2\n"),
        ("config/.env.local", "TOKEN=hunter2\n"),
        ("certs/server.pem", "-----BEGIN-----\n"),
        ("deploy/id.key", "secret\n"),
    ]
    .into_iter()
    .map(|(p, c)| (p.to_string(), c.to_string()))
    .collect();
    Memory {
        files,
        config: config(HOLDOUT_CONFIG),
        checks: [("tests".to_string(), "test tests::parses_ports failed: left 81\n".to_string())]
            .into_iter()
            .collect(),
        tests: vec![TestDetail {
            id: "tests::parses_ports".into(),
            finding: "test tests::parses_ports failed: assertion `left == right` failed\nleft: 81\nright: 80".into(),
            file: Some("tests/api.rs".into()),
            line: Some(3),
        }],
    }
}

fn holdout_policy(source: &Memory) -> Policy {
    let mut holdout = Holdout::from_config(&source.config);
    holdout.add_test("hidden::secret_case_quokka");
    Policy::new(&source.config.context.deny, holdout).expect("policy")
}

fn ask(source: &Memory, answered: u32, lines: &[&str]) -> Reply {
    let mut text = String::from("CONTEXT_GAP_REPORT\n------------------\n");
    for needs in lines {
        text.push_str(&format!(
            "NEEDS: {needs} | REASON: it blocks | ALTERNATIVE: I can guess\n"
        ));
    }
    text.push_str("READY_TO_EXECUTE: false\n");
    let report = parse_gap_report(&text).expect("report");
    let limits = Limits::from_config(&source.config);
    deliver(&report, answered, source, &holdout_policy(source), &limits)
}

fn content(reply: &Reply, number: usize) -> &str {
    let item = &reply.items[number - 1];
    item.content
        .as_deref()
        .unwrap_or_else(|| panic!("item {number} refused: {item:?}"))
}

fn refusal(reply: &Reply, number: usize) -> &str {
    let item = &reply.items[number - 1];
    assert!(item.title.is_none() && item.content.is_none(), "{item:?}");
    item.refused
        .as_deref()
        .unwrap_or_else(|| panic!("item {number} delivered: {item:?}"))
}

#[test]
fn each_kind_of_item_is_delivered_exactly() {
    let source = memory();
    let reply = ask(
        &source,
        0,
        &[
            "src/lib.rs:3-5",
            "`src/util.rs`",
            "src/",
            "tests/*.rs",
            "check tests",
            "test parses_ports",
            "config",
            "decision",
            "diff",
            "the general architecture",
            "../outside.txt",
            "src/lib.rs:90-95",
            "src/missing.rs",
        ],
    );
    assert_eq!((reply.kind, reply.round), (ReplyKind::Delivery, 1));
    assert_eq!(content(&reply, 1), "line 3\nline 4\nline 5\n");
    assert_eq!(reply.items[0].note.as_deref(), Some("lines 3-5 of 40"));
    assert_eq!(content(&reply, 2), "pub fn util() {}\n");
    assert_eq!(
        content(&reply, 3),
        "src/lib.rs\nsrc/util.rs\n",
        "names, not content"
    );
    assert_eq!(content(&reply, 4), "tests/api.rs\n");
    assert_message!("context_every_kind_of_item", &render(&reply, None));
    // Properties, whatever the snapshot says: only the test's own source, no holdout
    // command, no secret.
    let test = content(&reply, 6);
    assert!(
        !test.contains("fn other"),
        "only the test's own source: {test}"
    );
    let shown = content(&reply, 7);
    assert!(
        !shown.contains("pytest") && !shown.contains("holdout.xml"),
        "holdout commands are left out: {shown}"
    );
    let diff = content(&reply, 9);
    assert!(!diff.contains("hunter2"), "{diff}");
    assert_eq!(reply.items[8].note.as_deref(), Some("1 file(s) withheld"));
    assert_eq!(refusal(&reply, 11), "not a path inside the repository");
    assert_eq!(refusal(&reply, 12), "the file has 40 lines");
    assert_eq!(refusal(&reply, 13), policy::NOT_AVAILABLE);
    assert!(reply.missing_required.is_empty());
    assert_eq!(
        reply.closing,
        "Proceed with execution now. Return results per the task contract."
    );
}

#[test]
fn secrets_matching_the_deny_globs_are_refused() {
    let source = memory();
    let reply = ask(
        &source,
        0,
        &[
            ".env",
            "config/.env.local",
            "certs/server.pem",
            "deploy/id.key",
            ".git/config",
            "**/*",
        ],
    );
    for n in 1..=5 {
        assert_eq!(refusal(&reply, n), policy::DENIED, "item {n}");
    }
    let listing = content(&reply, 6);
    for secret in [".env", "server.pem", "id.key"] {
        assert!(!listing.contains(secret), "{secret} listed: {listing}");
    }
    let custom =
        Policy::new(&["secrets/".into(), "/top.txt".into()], Holdout::default()).expect("policy");
    assert!(custom.refusal("secrets/a").is_some() && custom.refusal("x/secrets/a").is_some());
    assert!(custom.refusal("top.txt").is_some() && custom.refusal("x/top.txt").is_none());
    // Whatever the case, and on the path it names, whatever its spelling.
    let default = Policy::new(&memory().config.context.deny, Holdout::default()).expect("policy");
    assert!(default.refusal("deploy/Server.PEM").is_some());
    assert!(custom.refusal("SECRETS/a").is_some() && custom.refusal("x/./secrets//a").is_some());
    assert!(
        custom.refusal("../other/secrets/a").is_some(),
        "outside the repository"
    );
    let holdout = Holdout {
        globs: vec!["tests/holdout_*.py".into()],
        paths: ["tests/hidden".to_string()].into(),
        ..Holdout::default()
    };
    let held = Policy::new(&[], holdout).expect("policy");
    assert!(held.refusal("tests/./holdout_a.py").is_some());
    assert!(held.refusal("tests/Holdout_A.py").is_some());
    assert!(held.refusal("Tests/Hidden/x.py").is_some());
    assert!(held.refusal("tests/open.py").is_none());
}

#[test]
fn items_and_deliveries_are_size_capped() {
    let mut source = memory();
    source.config.context.item_max_bytes = 30;
    source.config.context.delivery_max_bytes = 50;
    let reply = ask(&source, 0, &["src/lib.rs", "src/util.rs", "tests/api.rs"]);
    assert_eq!(
        content(&reply, 1),
        "line 1\nline 2\nline 3\nline 4\n",
        "cut at a line end"
    );
    assert!(content(&reply, 2).len() <= 22);
    insta::assert_snapshot!(render(&reply, None), @"
        CONTEXT_DELIVERY
        ----------------
        Round 1 of 3.

        1. src/lib.rs (cut at 28 of 311 bytes; ask for a line range for the rest):
        ```rust
        line 1
        line 2
        line 3
        line 4
        ```

        2. src/util.rs:
        ```rust
        pub fn util() {}
        ```

        3. not delivered: the delivery is full (50 bytes); ask for it in the next round, or for a line range

        Proceed with execution now. Return results per the task contract.
        ");
    assert!(reply.bytes <= 50);
}

#[test]
fn the_third_round_says_execute_and_so_does_every_report_after_it() {
    let source = memory();
    assert_eq!(ask(&source, 0, &["src/util.rs"]).kind, ReplyKind::Delivery);
    let second = ask(&source, 1, &["src/util.rs"]);
    assert_eq!((second.kind, second.round), (ReplyKind::Delivery, 2));
    for answered in [2, 3, 7] {
        let reply = ask(&source, answered, &["src/util.rs"]);
        assert_eq!((reply.kind, reply.round), (ReplyKind::ExecuteNow, 3));
        assert!(reply.items.is_empty());
        assert_eq!(reply.closing, EXECUTE_NOW);
    }
    let ready = parse_gap_report("CONTEXT_GAP_REPORT\nREADY_TO_EXECUTE: true").expect("report");
    let reply = deliver(
        &ready,
        0,
        &source,
        &holdout_policy(&source),
        &Limits::from_config(&source.config),
    );
    assert_eq!(
        (reply.kind, reply.round),
        (ReplyKind::Ready, 0),
        "ready uses no round"
    );
}

#[test]
fn a_required_item_that_cannot_be_provided_calls_a_human() {
    let source = memory();
    let report = parse_gap_report(
        "CONTEXT_GAP_REPORT\nNEEDS: src/util.rs | REASON: r | ALTERNATIVE: none — required\nNEEDS: src/gone.rs | REASON: r | ALTERNATIVE: none — required\nNEEDS: src/also-gone.rs | REASON: r | ALTERNATIVE: I can stub it\nREADY_TO_EXECUTE: false",
    )
    .expect("report");
    let reply = deliver(
        &report,
        0,
        &source,
        &holdout_policy(&source),
        &Limits::from_config(&source.config),
    );
    assert_eq!(reply.missing_required, vec![2]);
    assert!(reply.escalates());
    let reason = itergate::context::escalation_reason(&reply, "comment 9");
    assert_eq!(
        reason,
        "the agent's CONTEXT_GAP_REPORT (comment 9) needs what cannot be provided: item 2 (not available at this iteration)"
    );
}

fn render(reply: &Reply, commit: Option<&str>) -> String {
    Renderer::new(None, false)
        .expect("templates")
        .render(
            "context-delivery.md.j2",
            &delivery_view(reply, commit, false),
        )
        .expect("renders")
}

#[test]
fn snapshot_of_a_delivery_and_of_the_round_3_reply() {
    let source = memory();
    let mut text = String::from("CONTEXT_GAP_REPORT\n------------------\n");
    text.push_str(
        "NEEDS: src/lib.rs:10-12 | REASON: the failing call | ALTERNATIVE: I can read the test\n",
    );
    text.push_str("NEEDS: check tests | REASON: which assertion | ALTERNATIVE: none — required\n");
    text.push_str(
        "NEEDS: holdout/test_secret_quokka.py | REASON: curious | ALTERNATIVE: none — required\n",
    );
    text.push_str("NEEDS: .env | REASON: the token | ALTERNATIVE: I can mock it\n");
    text.push_str("NEEDS: src/util.rs REASON: typo\n");
    text.push_str("READY_TO_EXECUTE: false\n");
    let report = parse_gap_report(&text).expect("report");
    let limits = Limits::from_config(&source.config);
    let policy = holdout_policy(&source);
    let reply = deliver(&report, 0, &source, &policy, &limits);
    let delivery = render(&reply, Some("0123456789abcdef0123"));
    assert!(
        !delivery.contains("quokka") && !delivery.contains("typo"),
        "{delivery}"
    );
    insta::assert_snapshot!("context_delivery", delivery);
    let capped = deliver(&report, 2, &source, &policy, &limits);
    insta::assert_snapshot!(
        "context_round_3_reply",
        render(&capped, Some("0123456789abcdef0123"))
    );
}

#[test]
fn the_revision_prompt_stays_within_its_budget_on_real_failures() {
    use itergate::signals::classify::test_issue;
    use itergate::signals::report::{parse_file, ParseOptions, Report, ReportFormat};
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/reports/libtest/cargo-test-assertions.txt");
    let Report::Tests(tests) = parse_file(ReportFormat::Libtest, &path, &ParseOptions::default())
        .expect("the fixture parses")
    else {
        panic!("a test report");
    };
    let mut record =
        itergate::model::IterationRecord::new(1, "2026-11-02T10:00:00Z".parse().expect("time"));
    record.scores.tests_passing = Some(0.0);
    record.issues = tests.failures().map(|case| test_issue(case).0).collect();
    record.triggers = vec![itergate::model::Trigger {
        kind: itergate::model::TriggerType::ValidationFailure,
        source: "tests".into(),
        severity: 0.7,
        details: "42 tests failed".into(),
        fixable: true,
    }];
    let history = vec![record.clone()];
    let decision = itergate::engine::decide(&itergate::engine::DecideInput {
        task_id: "fix/ports",
        config: &Config::default(),
        history: &history,
        feedback: &Default::default(),
        baseline: None,
        now: "2026-11-02T11:00:00Z".parse().expect("time"),
    })
    .expect("decision");
    let renderer = Renderer::new(None, false).expect("templates");
    let unbounded = renderer
        .render(
            "revision-prompt.md.j2",
            &itergate::prompt::prompt_view(&record, &decision),
        )
        .expect("prompt");
    let mut sizes = Vec::new();
    for budget in [
        Config::default().context.prompt_budget_bytes,
        6_000,
        3_000,
        1_500,
    ] {
        let text =
            itergate::prompt::render_within_budget(&renderer, &record, &decision, None, budget)
                .expect("prompt");
        assert!(text.len() <= budget, "{} > {budget}", text.len());
        assert!(
            text.contains("CONTEXT_GAP_REPORT"),
            "the way to ask for more survives: {text}"
        );
        sizes.push((budget, text.len()));
        if budget >= 3_000 {
            assert!(
                text.contains("Task: Revise `fix/ports`") && text.contains("Entry points"),
                "{text}"
            );
        }
    }
    eprintln!(
        "revision prompt on 42 real failures: {} bytes unbounded; (budget, size): {sizes:?}",
        unbounded.len()
    );
}

// ---------------------------------------------------------------------------------------
// Locally, through the real binary
// ---------------------------------------------------------------------------------------

/// Failing tests of `tests` (from results.txt) at lib.txt's lines.
const CHECK: &str = r#"#!/bin/sh
read passed failed < results.txt
mkdir -p out
{
  echo '<testsuite name="s">'
  i=0; while [ $i -lt $passed ]; do echo "<testcase classname=\"s\" name=\"ok$i\"/>"; i=$((i+1)); done
  i=0; while [ $i -lt $failed ]; do echo "<testcase classname=\"s\" name=\"bad$i\" file=\"lib.txt\" line=\"$((i+1))\"><failure message=\"boom\"/></testcase>"; i=$((i+1)); done
  echo '</testsuite>'
} > out/junit.xml
"#;

/// The holdout: one hidden failing case, with a message nobody may see.
const HOLDOUT: &str = r#"#!/bin/sh
mkdir -p out
cat > out/hidden.xml <<'XML'
<testsuite name="h"><testcase classname="hidden" name="secret_case_quokka" file="holdout/test_secret_quokka.py" line="2"><failure message="holdout-output-marker-zebra"/></testcase><testcase classname="hidden" name="visible_ok"/></testsuite>
XML
"#;

const LOCAL_CONFIG: &str = "checks:\n  tests:\n    run: ./check.sh\n    report: { format: junit, path: out/junit.xml }\n  hidden:\n    run: ./hidden-check.sh\n    report: { format: junit, path: out/hidden.xml }\n    visibility: aggregate_only\nhook:\n  base: main\n";

/// What the holdout is made of; none of it may ever reach an agent.
const MARKERS: [&str; 4] = [
    "quokka",
    "SECRET_SOURCE_MARKER",
    "holdout-output-marker-zebra",
    "hunter2",
];

fn local_repo() -> TestRepo {
    let repo = TestRepo::new();
    write_script(&repo.path.join("check.sh"), CHECK);
    write_script(&repo.path.join("hidden-check.sh"), HOLDOUT);
    repo.write(".itergate.yml", LOCAL_CONFIG);
    repo.write(".gitignore", "out/\n");
    repo.write(
        "holdout/test_secret_quokka.py",
        "def secret_case_quokka():\n    assert SECRET_SOURCE_MARKER\n",
    );
    repo.write(".env", "TOKEN=hunter2\n");
    repo.write(
        "notes.txt",
        "the hidden cases live in holdout/test_secret_quokka.py\n",
    );
    repo.write("lib.txt", "alpha\nbeta\ngamma\ndelta\n");
    repo.commit_file("results.txt", "4 0\n", "base");
    repo.git(&["checkout", "--quiet", "-b", "feature"]);
    repo.write("lib.txt", "alpha\nBETA\ngamma\ndelta\n");
    repo.commit_file("results.txt", "2 2\n", "attempt 1");
    repo
}

fn itergate(dir: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    use std::io::Write as _;
    let mut child = std::process::Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env_remove("ITERGATE_SKIP")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("itergate runs");
    let mut input = child.stdin.take().expect("stdin");
    input
        .write_all(stdin.unwrap_or("").as_bytes())
        .expect("write stdin");
    drop(input);
    child.wait_with_output().expect("itergate finishes")
}

fn ok(dir: &Path, args: &[&str], stdin: Option<&str>) -> (String, String) {
    let out = itergate(dir, args, stdin);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(out.status.success(), "itergate {args:?}: {stdout}{stderr}");
    (stdout, stderr)
}

fn report(lines: &[(&str, &str)]) -> String {
    let mut text = String::from("CONTEXT_GAP_REPORT\n------------------\n");
    for (needs, alternative) in lines {
        text.push_str(&format!(
            "NEEDS: {needs} | REASON: it blocks me | ALTERNATIVE: {alternative}\n"
        ));
    }
    text + "READY_TO_EXECUTE: false\n"
}

#[test]
fn itergate_context_delivers_from_the_iteration_commit_and_counts_rounds() {
    let repo = local_repo();
    ok(&repo.path, &["run"], None);
    // The work tree changes after the iteration: the delivery is of the commit.
    repo.write("lib.txt", "uncommitted\n");
    let gap = report(&[
        ("lib.txt:2-3", "I can guess"),
        ("check tests", "I can guess"),
        ("test bad1", "I can guess"),
    ]);
    std::fs::write(repo.sibling("gap.txt"), &gap).expect("write");
    let gap_path = repo.sibling("gap.txt");
    let (text, _) = ok(
        &repo.path,
        &["context", gap_path.to_str().expect("utf-8")],
        None,
    );
    assert_message!("context_local_delivery", &text);
    // A property, whatever the snapshot says: the work tree's edit is not delivered.
    assert!(!text.contains("uncommitted"), "{text}");

    let (json, _) = ok(
        &repo.path,
        &["context", "--format", "json", "-"],
        Some(&gap),
    );
    let value: Value = serde_json::from_str(&json).expect("json");
    assert_eq!(value["round"], 2);
    assert_eq!(value["kind"], "delivery");
    assert_eq!(value["task"], "feature");
    assert_eq!(value["items"][0]["content"], "BETA\ngamma\n");
    assert_eq!(value["escalated"], false);

    let (third, _) = ok(&repo.path, &["context", "-"], Some(&gap));
    assert_eq!(
        third,
        "Round 3 of 3: no more context rounds for this iteration.\n\nExecute with the context available. Document any assumptions made in your result.\n"
    );
    let (fourth, _) = ok(&repo.path, &["context", "-"], Some(&gap));
    assert_eq!(fourth, third, "further reports get the same line");

    let (analytics, _) = ok(&repo.path, &["analytics", "--format", "json"], None);
    let analytics: Value = serde_json::from_str(&analytics).expect("json");
    assert_eq!(
        analytics["context"],
        json!([{"iteration": 1, "rounds": 3, "ready_at_round_0": false}])
    );
    let (csv, _) = ok(&repo.path, &["analytics", "--format", "csv"], None);
    assert!(
        csv.lines()
            .next()
            .is_some_and(|h| h.ends_with(",context_rounds,ready_at_round_0")),
        "{csv}"
    );
    assert!(
        csv.lines().nth(1).is_some_and(|r| r.ends_with(",3,false")),
        "{csv}"
    );

    // A new iteration starts again at round 1; a ready agent uses no round.
    repo.write("lib.txt", "alpha\nbeta\ngamma\ndelta\n");
    repo.commit_file("results.txt", "3 1\n", "attempt 2");
    ok(&repo.path, &["run"], None);
    let (ready, _) = ok(
        &repo.path,
        &["context"],
        Some("CONTEXT_GAP_REPORT\n------------------\nREADY_TO_EXECUTE: true\n"),
    );
    insta::assert_snapshot!(ready, @"
        READY_TO_EXECUTE: true received.

        Proceed with execution now. Return results per the task contract.
        ");
    let (text, _) = ok(&repo.path, &["context"], Some(&gap));
    assert_message!("context_local_delivery_next_iteration", &text);
    let (analytics, _) = ok(&repo.path, &["analytics"], None);
    assert_message!("context_local_analytics", &analytics);
}

#[test]
fn a_missing_required_item_escalates_the_branch_and_bad_input_is_a_user_error() {
    let repo = local_repo();
    ok(&repo.path, &["run"], None);
    let gap = report(&[
        ("lib.txt", "I can guess"),
        ("src/does-not-exist.rs", "none — required"),
    ]);
    let (text, stderr) = ok(&repo.path, &["context"], Some(&gap));
    assert_message!("context_local_missing_required", &text);
    insta::with_settings!({ filters => redact::filters() }, {
        insta::assert_snapshot!(stderr, @"itergate: feature: a required item cannot be provided; the branch is escalated to a human (`itergate status`)");
    });
    let (status, _) = ok(&repo.path, &["status"], None);
    assert_message!("context_local_missing_required_status", &status);

    let out = itergate(&repo.path, &["context"], Some("please send me everything"));
    assert_eq!(out.status.code(), Some(2));
    insta::assert_snapshot!(String::from_utf8_lossy(&out.stderr), @"itergate: error: standard input holds no CONTEXT_GAP_REPORT: the report starts with a line `CONTEXT_GAP_REPORT`, then lines `NEEDS: <file path or concept> | REASON: <why it blocks> | ALTERNATIVE: <what you can do without it, or none — required>`, and ends with `READY_TO_EXECUTE: true` or `false`");
}

/// Every note of the notes ref except the trees' observations (the private cache).
fn records_and_logs(repo: &TestRepo) -> String {
    let list = repo.git(&["notes", "--ref", "itergate", "list"]);
    let mut text = String::new();
    for line in list.lines() {
        let (blob, object) = line.split_once(' ').expect("note line");
        let kind = gitrepo::git_output(&repo.path, &["cat-file", "-t", object]);
        if String::from_utf8_lossy(&kind.stdout).trim() == "tree" {
            continue;
        }
        text.push_str(&repo.git(&["cat-file", "-p", blob]));
    }
    text
}

fn assert_no_marker(place: &str, text: &str) {
    for marker in MARKERS {
        assert!(!text.contains(marker), "{place} names `{marker}`:\n{text}");
    }
}

#[test]
fn leakage_audit_locally_nothing_of_the_holdout_is_ever_delivered() {
    let repo = local_repo();
    let (_, run_log) = ok(&repo.path, &["-vv", "run"], None);
    let gap = report(&[
        ("holdout/test_secret_quokka.py", "none — required"),
        ("holdout/test_secret_quokka.py:1-2", "I can guess"),
        ("./holdout/../holdout/test_secret_quokka.py", "I can guess"),
        ("holdout/", "I can guess"),
        ("holdout/*", "I can guess"),
        ("**/*.py", "I can guess"),
        ("**/*", "I can guess"),
        ("test secret_case_quokka", "I can guess"),
        ("test hidden::secret_case_quokka", "I can guess"),
        ("check hidden", "I can guess"),
        ("config", "I can guess"),
        (".itergate.yml", "I can guess"),
        ("notes.txt", "I can guess"),
        (".env", "I can guess"),
        ("diff", "I can guess"),
        ("decision", "I can guess"),
    ]);
    let (text, log) = ok(&repo.path, &["-vv", "context"], Some(&gap));
    let (json, _) = ok(&repo.path, &["context", "--format", "json"], Some(&gap));
    let value: Value = serde_json::from_str(&json).expect("json");
    let items = value["items"].as_array().expect("items");
    let refused: Vec<u64> = items
        .iter()
        .filter(|i| i.get("refused").is_some())
        .map(|i| i["number"].as_u64().unwrap_or(0))
        .collect();
    assert_eq!(refused, vec![1, 2, 3, 4, 5, 6, 8, 9, 10, 14], "{json}");
    assert!(content_of(items, 13).contains("[withheld]"), "{json}");
    assert!(content_of(items, 7).contains("lib.txt"), "{json}");
    assert!(
        content_of(items, 11).contains("visibility: aggregate_only"),
        "{json}"
    );
    for (place, text) in [
        ("the delivery", text.as_str()),
        ("the JSON delivery", json.as_str()),
        ("the context log lines", log.as_str()),
        ("the run's log lines", run_log.as_str()),
    ] {
        assert_no_marker(place, text);
    }
    let (prompt, _) = ok(&repo.path, &["prompt"], None);
    assert_no_marker("the prompt", &prompt);
    let prompt_file = std::fs::read_to_string(repo.path.join(".git/itergate/revision-prompt.md"))
        .unwrap_or_default();
    assert_no_marker("the prompt file", &prompt_file);
    let (status, _) = ok(&repo.path, &["status"], None);
    assert_no_marker("the status", &status);
    assert_no_marker("the records and logs", &records_and_logs(&repo));
}

fn content_of(items: &[Value], number: usize) -> String {
    items[number - 1]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

// ---------------------------------------------------------------------------------------
// On a pull request, through the fake GitHub
// ---------------------------------------------------------------------------------------

const PR: u64 = 7;
const AGENT: &str = "contributor";

struct Pull {
    server: FakeGithub,
    repo: TestRepo,
    base: String,
    head: String,
}

fn fixture(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/github/webhooks")
        .join(name);
    serde_json::from_slice(&std::fs::read(path).expect("fixture")).expect("json")
}

fn point_at_repo(payload: &mut Value) {
    payload["repository"]["full_name"] = json!(REPO);
    payload["repository"]["name"] = json!("widgets");
    payload["repository"]["owner"]["login"] = json!("octo-org");
    payload["repository"]["default_branch"] = json!("main");
}

impl Pull {
    /// A pull request with one scored iteration (failing tests, a holdout failure), its
    /// head's files on the fake GitHub.
    async fn start(extra_config: &str) -> Pull {
        let server = FakeGithub::start().await;
        let repo = TestRepo::new();
        write_script(&repo.path.join("check.sh"), CHECK);
        write_script(&repo.path.join("hidden-check.sh"), HOLDOUT);
        // Without the observation, the holdout's files are known from the configuration.
        let config = LOCAL_CONFIG.replace(
            "    visibility: aggregate_only\n",
            "    visibility: aggregate_only\n    files: [holdout/**]\n",
        );
        repo.write(
            ".itergate.yml",
            &format!("{config}scoring: {{ compare_base: false }}\n{extra_config}"),
        );
        repo.write(".gitignore", "out/\n");
        let base = repo.commit_file("results.txt", "4 0\n", "base");
        repo.git(&["checkout", "--quiet", "-b", "feature"]);
        let head = repo.commit_file("results.txt", "2 2\n", "attempt 1");
        let pull = Pull {
            server,
            repo,
            base,
            head,
        };
        pull.event("pull_request", &pull.pull_request_event()).await;
        fake_github::seed_pull(&pull.server, PR, &[(&pull.head, "attempt 1")]);
        let (base, head) = (pull.base.clone(), pull.head.clone());
        pull.server.with(|m| {
            if let Some(p) = m.pulls.get_mut(&PR) {
                p.base_sha = base;
            }
            for (path, text) in [
                ("lib.txt", "alpha\nBETA\ngamma\n"),
                (".env", "TOKEN=hunter2\n"),
                (
                    "holdout/test_secret_quokka.py",
                    "def secret_case_quokka():\n    assert SECRET_SOURCE_MARKER\n",
                ),
                (
                    "notes.txt",
                    "the hidden cases live in holdout/test_secret_quokka.py\n",
                ),
            ] {
                m.files
                    .insert((head.clone(), path.into()), text.as_bytes().to_vec());
            }
        });
        pull
    }

    fn pull_request_event(&self) -> Value {
        let mut p = fixture("pull_request.synchronize.1.json");
        point_at_repo(&mut p);
        let pr = &mut p["pull_request"];
        pr["number"] = json!(PR);
        pr["head"]["sha"] = json!(self.head);
        pr["head"]["ref"] = json!("feature");
        pr["base"]["sha"] = json!(self.base);
        pr["base"]["ref"] = json!("main");
        pr["base"]["repo"]["full_name"] = json!(REPO);
        pr["head"]["repo"]["full_name"] = json!(REPO);
        p
    }

    /// A comment written on the PR by `author`, and the run of `itergate ci` for it.
    async fn comment(&self, author: &str, body: &str) -> (u64, Output) {
        let id = self
            .server
            .with(|m| m.add_comment(PR, author, "User", body));
        let mut p = fixture("derived.issue_comment.created.on_pull_request.json");
        point_at_repo(&mut p);
        p["issue"]["number"] = json!(PR);
        p["comment"]["id"] = json!(id);
        p["comment"]["body"] = json!(body);
        p["comment"]["user"]["login"] = json!(author);
        p["comment"]["user"]["type"] = json!("User");
        let out = self.event("issue_comment", &p).await;
        (id, out)
    }

    async fn event(&self, name: &str, payload: &Value) -> Output {
        let file: PathBuf = self.repo.sibling(&format!("event-{}.json", nanos()));
        std::fs::write(&file, serde_json::to_vec(payload).expect("json")).expect("write event");
        let (api, dir, name) = (
            self.server.api_url(),
            self.repo.path.clone(),
            name.to_string(),
        );
        let out = tokio::task::spawn_blocking(move || {
            std::process::Command::new(BIN)
                .args(["-vv", "ci"])
                .current_dir(&dir)
                .env("GITHUB_API_URL", api)
                .env("GITHUB_TOKEN", TOKEN)
                .env("GITHUB_EVENT_NAME", name)
                .env("GITHUB_EVENT_PATH", &file)
                .env_remove("GITHUB_ACTIONS")
                .env_remove("GITHUB_OUTPUT")
                .env_remove("GITHUB_STEP_SUMMARY")
                .env("NO_COLOR", "1")
                .output()
                .expect("itergate ci runs")
        })
        .await
        .expect("join");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    fn bot_comments(&self) -> Vec<String> {
        self.server.with(|m| {
            m.comments_on(PR)
                .into_iter()
                .filter(|c| c.author == BOT_LOGIN)
                .map(|c| c.body.clone())
                .collect()
        })
    }

    /// The bot's reply to comment `id`, if any.
    fn reply_to(&self, id: u64) -> Option<String> {
        let marker = format!("<!-- itergate:reply comment_{id} -->");
        let replies: Vec<String> = self
            .bot_comments()
            .into_iter()
            .filter(|b| b.starts_with(&marker))
            .collect();
        assert!(replies.len() <= 1, "one reply per comment: {replies:#?}");
        replies.into_iter().next()
    }

    fn sticky(&self) -> String {
        let stickies: Vec<String> = self
            .bot_comments()
            .into_iter()
            .filter(|b| b.starts_with("<!-- itergate:sticky -->"))
            .collect();
        assert_eq!(stickies.len(), 1, "one sticky comment");
        stickies[0].clone()
    }
}

fn nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gap_report_comment_gets_one_reply_per_round_up_to_the_cap() {
    let pull = Pull::start("").await;
    assert_eq!(pull.bot_comments().len(), 1, "the sticky comment");
    let gap = format!(
        "I need more.\n\n```\n{}```\n",
        report(&[("lib.txt:2", "I can guess"), (".env", "I can mock it")])
    );
    let (first, out) = pull.comment(AGENT, &gap).await;
    let reply = pull
        .reply_to(first)
        .unwrap_or_else(|| panic!("a reply: {}", String::from_utf8_lossy(&out.stderr)));
    assert_message!("context_pull_reply_round_1", &reply);
    // A property, whatever the snapshot says: the secret's value never reaches the reply.
    assert!(!reply.contains("hunter2"));
    assert_eq!(
        pull.bot_comments().len(),
        2,
        "the sticky comment and one reply"
    );
    // itergate's own lines of the job log, without the HTTP client's debug lines.
    let log: Vec<String> = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.starts_with("itergate:"))
        .map(str::to_owned)
        .collect();
    insta::assert_snapshot!(log.join("\n"), @"
        itergate: answered a gap report (round 1 of 3)
        itergate: decision: iterate
        ");

    // A re-run of the same event answers nothing twice.
    let id_count = pull.server.count("issues/create-comment");
    let mut p = fixture("derived.issue_comment.created.on_pull_request.json");
    point_at_repo(&mut p);
    p["issue"]["number"] = json!(PR);
    p["comment"]["id"] = json!(first);
    p["comment"]["body"] = json!(gap);
    p["comment"]["user"]["login"] = json!(AGENT);
    pull.event("issue_comment", &p).await;
    assert_eq!(pull.server.count("issues/create-comment"), id_count);

    // Someone else without the permission: no reply at all.
    grant(&pull.server, "visitor", "read", "read");
    let (visitor, _) = pull.comment("visitor", &gap).await;
    assert_eq!(pull.reply_to(visitor), None);

    // A maintainer may ask too; rounds 2 then 3 (the cap), then the same line again.
    grant(&pull.server, "maintainer", "write", "write");
    let (second, _) = pull.comment("maintainer", &gap).await;
    assert_message!(
        "context_pull_reply_round_2",
        &pull.reply_to(second).expect("reply"),
    );
    let (third, _) = pull.comment(AGENT, &gap).await;
    let capped = pull.reply_to(third).expect("reply");
    insta::assert_snapshot!(capped, @"
        <!-- itergate:reply comment_1007 -->
        Round 3 of 3: no more context rounds for this iteration.

        Execute with the context available. Document any assumptions made in your result.
        ");
    let (fourth, _) = pull.comment(AGENT, &gap).await;
    insta::with_settings!({ filters => redact::filters() }, {
        insta::assert_snapshot!(pull.reply_to(fourth).expect("reply"), @"
            <!-- itergate:reply comment_1009 -->
            <!-- itergate:to contributor [time] -->
            Round 3 of 3: no more context rounds for this iteration.

            Execute with the context available. Document any assumptions made in your result.
            ");
    });

    // The rounds show in the analytics of `/iterate status`.
    let (status, _) = pull.comment("maintainer", "/iterate status").await;
    let status = pull.reply_to(status).expect("status reply");
    assert_message!("context_pull_status", &status);
    assert!(
        pull.server.with(|m| m.labels_on(PR)).is_empty(),
        "nothing escalated"
    );
    assert_eq!(
        pull.bot_comments().len(),
        1 + 5,
        "the sticky comment, four replies and the status"
    );
    pull.server.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_required_item_missing_on_a_pull_request_escalates_once() {
    let pull = Pull::start("github: { reviewers: [octocat] }\n").await;
    let gap = report(&[("src/not-there.rs", "none — required")]);
    let (id, _) = pull.comment(AGENT, &gap).await;
    let reply = pull.reply_to(id).expect("reply");
    assert_message!("context_pull_missing_required", &reply);
    assert_eq!(
        pull.server.with(|m| m.labels_on(PR)),
        vec!["needs-human-review".to_string()]
    );
    let calls: Vec<String> = pull
        .bot_comments()
        .into_iter()
        .filter(|b| b.contains("@octocat"))
        .collect();
    assert_eq!(calls.len(), 1, "one escalation call: {calls:#?}");
    assert_message!("context_pull_missing_required_sticky", &pull.sticky());
    let (again, _) = pull.comment(AGENT, &gap).await;
    assert!(pull.reply_to(again).is_some());
    let calls = pull
        .bot_comments()
        .into_iter()
        .filter(|b| b.contains("@octocat"))
        .count();
    assert_eq!(calls, 1, "the reviewers are called once");
    pull.server.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leakage_audit_on_a_pull_request() {
    let pull = Pull::start("").await;
    let gap = report(&[
        ("holdout/test_secret_quokka.py", "I can guess"),
        ("holdout/", "I can guess"),
        ("holdout/*.py", "I can guess"),
        ("test secret_case_quokka", "I can guess"),
        ("check hidden", "I can guess"),
        ("config", "I can guess"),
        ("notes.txt", "I can guess"),
        (".env", "I can guess"),
        ("diff", "I can guess"),
    ]);
    let (id, out) = pull.comment(AGENT, &gap).await;
    let reply = pull.reply_to(id).expect("reply");
    assert_message!("context_pull_leakage_audit", &reply);
    let requested: Vec<String> = pull
        .server
        .with(|m| m.requests.iter().map(|r| r.path.clone()).collect());
    assert!(
        requested
            .iter()
            .all(|p| !p.contains("holdout/") && !p.contains(".env")),
        "a refused file is never even read: {requested:#?}"
    );
    for body in pull.bot_comments() {
        assert_no_marker("a comment", &body);
    }
    assert_no_marker("the job log", &String::from_utf8_lossy(&out.stderr));
    assert_no_marker("the job output", &String::from_utf8_lossy(&out.stdout));
    pull.server.assert_no_violations();
}

proptest::proptest! {
    /// However a request is spelt — paths with `./` and `..`, globs, directories, concepts,
    /// line ranges, quotes — nothing of the holdout or of a secret is ever in a reply.
    #[test]
    fn no_spelling_of_a_request_reaches_the_holdout(
        parts in proptest::collection::vec(
            proptest::prop_oneof![
                proptest::strategy::Just("holdout/".to_string()),
                proptest::strategy::Just("test_secret_quokka.py".to_string()),
                proptest::strategy::Just("./".to_string()),
                proptest::strategy::Just("../".to_string()),
                proptest::strategy::Just("*".to_string()),
                proptest::strategy::Just("**/".to_string()),
                proptest::strategy::Just("notes.txt".to_string()),
                proptest::strategy::Just(".env".to_string()),
                proptest::strategy::Just("test ".to_string()),
                proptest::strategy::Just("check ".to_string()),
                proptest::strategy::Just("hidden::secret_case_quokka".to_string()),
                proptest::strategy::Just(":1-2".to_string()),
                proptest::strategy::Just("`".to_string()),
                proptest::strategy::Just("{".to_string()),
                proptest::strategy::Just(",".to_string()),
                proptest::strategy::Just("}".to_string()),
                "[a-z/.]{0,6}",
            ],
            1..6,
        )
    ) {
        let source = memory();
        let needs = parts.concat();
        let needs = needs.replace('|', "/");
        let reply = ask(&source, 0, &[needs.as_str(), "{notes.txt,test_secret_quokka.py}", "**/*", "diff", "config"]);
        let text = serde_json::to_string(&reply).expect("json") + &render(&reply, None);
        for marker in ["quokka", "SECRET_SOURCE_MARKER", "hunter2"] {
            proptest::prop_assert!(!text.contains(marker), "{needs:?} leaked {marker}: {text}");
        }
    }
}
