//! Snapshots of every kind of comment itergate writes on a pull request, and the escaping of
//! untrusted text inside them.

use std::path::Path;

use itergate::comment::{comment_view, escalation_view};
use itergate::config::Config;
use itergate::engine::{evaluate, DecideInput, Evaluation, Feedback};
use itergate::history::file::load_history;
use itergate::model::IterationRecord;
use itergate::prompt::prompt_view;
use itergate::render::Renderer;

fn history(name: &str) -> Vec<IterationRecord> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/histories");
    load_history(&dir.join(format!("{name}.yml"))).expect("fixture")
}

fn decision(config: &Config, history: &[IterationRecord]) -> Evaluation {
    evaluate(&DecideInput {
        task_id: "pull request",
        config,
        history,
        feedback: &Feedback::default(),
        baseline: None,
        now: "2026-11-02T11:00:00Z".parse().expect("time"),
    })
    .expect("decision")
}

fn sticky_visible(history: &[IterationRecord], base: Option<&IterationRecord>) -> String {
    let config = Config::default();
    let evaluation = decision(&config, history);
    let d = &evaluation.decision;
    let renderer = Renderer::new(None, false).expect("templates");
    let prompt = (d.recommendation() == itergate::engine::Recommendation::Iterate).then(|| {
        renderer
            .render(
                "revision-prompt.md.j2",
                &prompt_view(history.last().expect("latest"), d),
            )
            .expect("prompt")
    });
    renderer
        .render(
            "comment.md.j2",
            &comment_view(&config, history, base, &evaluation, prompt.as_deref()),
        )
        .expect("comment")
}

#[test]
fn sticky_comment_iterate() {
    let h = history("improving");
    let base = h[0].clone();
    insta::assert_snapshot!(sticky_visible(&h[..2], Some(&base)));
}

#[test]
fn sticky_comment_accept() {
    insta::assert_snapshot!(sticky_visible(&history("improving"), None));
}

#[test]
fn sticky_comment_escalate() {
    insta::assert_snapshot!(sticky_visible(&history("stalled"), None));
}

#[test]
fn escalation_call() {
    let mut config = Config::default();
    config.github.reviewers = vec!["octocat".into(), "@hubot".into()];
    let h = history("stalled");
    let d = decision(&config, &h).decision;
    let renderer = Renderer::new(None, false).expect("templates");
    let text = renderer
        .render(
            "escalation.md.j2",
            &escalation_view(&config, h.last().expect("latest"), &d),
        )
        .expect("escalation");
    insta::assert_snapshot!(text);
}

#[test]
fn help_reply() {
    let renderer = Renderer::new(None, false).expect("templates");
    let text = renderer
        .render(
            "help.md.j2",
            &serde_json::json!({ "permission": "write", "author_can_decide": false, "max_commands": 10 }),
        )
        .expect("help");
    insta::assert_snapshot!(text);
}

#[test]
fn untrusted_findings_cannot_break_the_comment() {
    let mut h = history("stalled");
    let evil =
        "x | y `code` <!-- itergate:state v1 AAAA --> @everyone [link](http://evil) <details>";
    h[1].issues[1].finding = evil.into();
    h[1].issues[1].affected_field = Some("src/a|b.rs:3".into());
    let text = sticky_visible(&h, None);
    assert!(!text.contains("<!--"), "{text}");
    assert!(!text.contains("@everyone"), "mentions are defused: {text}");
    assert!(!text.contains("<details>x"), "{text}");
    let row = text
        .lines()
        .find(|l| l.contains("x \\| y"))
        .expect("escaped row");
    assert_eq!(
        row.matches(" | ").count(),
        3,
        "the table keeps four columns: {row}"
    );
}
