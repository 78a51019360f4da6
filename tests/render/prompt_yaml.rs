//! The revision prompt's `<checker_issues>` block is YAML an agent parses: it must parse,
//! and give back each finding with only its tags neutralised (`<x` → `<\x`, `-->` →
//! `--\>`), however the finding is written.

use std::path::Path;

use itergate::config::Config;
use itergate::engine::{decide, DecideInput, Feedback};
use itergate::history::file::load_history;
use itergate::markup::neutralise_tags;
use itergate::model::{CheckerIssue, Severity};
use itergate::render::Renderer;

const NOW: &str = "2026-11-02T11:00:00Z";

fn prompt_with(issues: Vec<CheckerIssue>) -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/histories");
    let mut history = load_history(&dir.join("improving.yml")).expect("fixture");
    history.truncate(1);
    history[0].issues = issues;
    let config = Config::default();
    let decision = decide(&DecideInput {
        task_id: "feature/parser",
        config: &config,
        history: &history,
        feedback: &Feedback::default(),
        baseline: None,
        now: NOW.parse().expect("time"),
    })
    .expect("decision");
    Renderer::new(None, false)
        .expect("templates")
        .render(
            "revision-prompt.md.j2",
            &itergate::prompt::prompt_view(&history[0], &decision),
        )
        .expect("prompt renders")
}

/// The body of the fenced YAML block inside `<checker_issues>`.
fn yaml_block(prompt: &str) -> &str {
    let start = prompt.find("```yaml\n").expect("a yaml fence") + "```yaml\n".len();
    let end = prompt[start..].find("\n```").expect("the fence closes") + start;
    &prompt[start..end]
}

fn issue(finding: &str, at: Option<&str>, fix: Option<&str>) -> CheckerIssue {
    CheckerIssue {
        dimension: "tests".into(),
        severity: Severity::Blocker,
        finding: finding.into(),
        affected_field: at.map(str::to_owned),
        suggested_fix: fix.map(str::to_owned),
        kind: None,
        subject: None,
    }
}

#[test]
fn findings_round_trip_through_the_prompts_yaml_with_only_tags_neutralised() {
    let issues = vec![
        issue(
            "expected `Vec<table>`, found `Option<T>`",
            Some("src/lib.rs:5"),
            None,
        ),
        issue(
            "error[E0308]: mismatched types\n --> src/lib.rs:5:9",
            None,
            None,
        ),
        // A control character makes the serialiser choose a double-quoted scalar, in which
        // a backslash starts an escape: `<\table>` would be a TAB, `<\node>` a newline.
        issue(
            "expected `Vec<table>`,\tfound `Option<T>`\u{7}",
            Some("src/lib.rs:5:9\u{7}"),
            Some("close the <ul>\u{1b}"),
        ),
        issue(
            "unexpected <node>\u{7} in the tree",
            None,
            Some("close the <ul>"),
        ),
        issue(
            r"unknown escape <\lambda> and \n and \t and \u00e9",
            None,
            None,
        ),
        issue(
            "unknown escape <\\lambda>\u{7} and <x0> <u0041>",
            None,
            None,
        ),
        issue(
            "<ul><li>x</li></ul> </checker_issues> <!-- y -->",
            None,
            None,
        ),
        issue("tab\there, quote \" and ' and a: colon # hash", None, None),
    ];
    let prompt = prompt_with(issues.clone());
    let block = yaml_block(&prompt);
    let parsed: Vec<CheckerIssue> = serde_norway::from_str(block)
        .unwrap_or_else(|e| panic!("the prompt's YAML must parse: {e}\n{block}"));
    let expected: Vec<CheckerIssue> = issues
        .iter()
        .map(|i| CheckerIssue {
            dimension: neutralise_tags(&i.dimension),
            severity: i.severity,
            finding: neutralise_tags(&i.finding),
            affected_field: i.affected_field.as_deref().map(neutralise_tags),
            suggested_fix: i.suggested_fix.as_deref().map(neutralise_tags),
            kind: None,
            subject: None,
        })
        .collect();
    assert_eq!(parsed, expected, "{block}");
    assert_eq!(
        parsed[0].finding,
        r"expected `Vec<\table>`, found `Option<\T>`"
    );
    assert_eq!(
        parsed[1].finding,
        "error[E0308]: mismatched types\n --\\> src/lib.rs:5:9"
    );
    assert_eq!(
        parsed[2].finding,
        "expected `Vec<\\table>`,\tfound `Option<\\T>`\u{7}"
    );
    assert_eq!(prompt.matches("</checker_issues>").count(), 1, "{prompt}");
    assert!(
        !prompt.contains("<!--") && !prompt.contains("-->"),
        "{prompt}"
    );
}

#[test]
fn a_prompt_lists_at_most_fifty_issues_blockers_first() {
    use itergate::model::{CheckerIssue, Severity};
    let mut record = itergate::model::IterationRecord::new(1, chrono::Utc::now());
    for i in 0..120 {
        record.issues.push(CheckerIssue {
            dimension: "code_quality".into(),
            severity: if i % 2 == 0 {
                Severity::Warning
            } else {
                Severity::Blocker
            },
            finding: format!("finding {i}"),
            affected_field: Some(format!("src/a.rs:{i}")),
            suggested_fix: None,
            kind: None,
            subject: None,
        });
    }
    let decision = itergate::engine::decide(&itergate::engine::DecideInput {
        task_id: "t",
        config: &itergate::config::Config::default(),
        history: std::slice::from_ref(&record),
        feedback: &Default::default(),
        baseline: None,
        now: chrono::Utc::now(),
    })
    .expect("decision");
    let view = itergate::prompt::prompt_view(&record, &decision);
    assert_eq!(view.omitted_count, 70);
    assert_eq!(
        view.issues_block.matches("severity: BLOCKER").count(),
        50,
        "BLOCKERs first"
    );
    assert!(!view.issues_block.contains("WARNING"));
}
