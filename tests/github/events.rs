//! Normalized events from real webhook payloads (`@octokit/webhooks-examples`, see
//! `tests/fixtures/github/webhooks/README.md`): every handled event parses from every real
//! example, unhandled actions are ignored with a reason, and broken payloads are errors that
//! say where.

use std::path::PathBuf;

use itergate::github::events::{parse_event, Event, Parsed, PrAction, ReviewState};
use itergate::github::types::ActorKind;
use itergate::github::{CommentId, PrNumber};
use serde_json::Value;

fn fixtures() -> Vec<(String, PathBuf)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/github/webhooks");
    let mut files: Vec<(String, PathBuf)> = std::fs::read_dir(&dir)
        .expect("fixture directory")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .map(|p| {
            let name = p
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default()
                .to_string();
            (name, p)
        })
        .collect();
    files.sort();
    assert!(files.len() >= 20, "the webhook fixtures are missing");
    files
}

/// `pull_request.opened.1.json` → (`pull_request`, `opened`).
fn event_and_action(name: &str) -> (String, String) {
    let name = name.strip_prefix("derived.").unwrap_or(name);
    let mut parts = name.split('.');
    let event = parts.next().unwrap_or_default().to_string();
    let action = parts.next().unwrap_or_default().to_string();
    (event, action)
}

fn parse_file(name: &str) -> Parsed {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/github/webhooks")
        .join(name);
    let bytes = std::fs::read(path).expect("fixture");
    let (event, _) = event_and_action(name);
    parse_event(&event, &bytes).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn every_real_payload_parses() {
    for (name, path) in fixtures() {
        let bytes = std::fs::read(&path).expect("fixture");
        let (event, action) = event_and_action(&name);
        let parsed = parse_event(&event, &bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        let raw: Value = serde_json::from_slice(&bytes).expect("json");
        let on_pr = raw["issue"].get("pull_request").is_some();
        let handled = match event.as_str() {
            "pull_request" => ["opened", "synchronize", "reopened"].contains(&action.as_str()),
            "issue_comment" => action == "created" && on_pr,
            "pull_request_review" => action == "submitted",
            "workflow_run" => action == "completed",
            _ => false,
        };
        match (&parsed, handled) {
            (Parsed::Event(e), true) => {
                let full_name = raw["repository"]["full_name"].as_str().unwrap_or_default();
                assert_eq!(e.repo().full_name(), full_name, "{name}");
            }
            (Parsed::Ignored(reason), false) => assert!(!reason.is_empty()),
            other => panic!("{name}: unexpected {other:?}"),
        }
    }
}

#[test]
fn pull_request_event_carries_what_the_handler_needs() {
    let Parsed::Event(Event::PullRequest(e)) = parse_file("pull_request.synchronize.1.json") else {
        panic!("not a pull_request event");
    };
    assert_eq!(e.action, PrAction::Synchronize);
    assert_eq!(e.pr, PrNumber(2));
    assert_eq!(e.head_sha.0.len(), 40);
    assert_eq!(e.base_ref, "master");
    assert!(!e.is_fork());
    assert_eq!(e.sender.login, "Codertocat");
    let Parsed::Event(Event::PullRequest(opened)) = parse_file("pull_request.opened.2.json") else {
        panic!("not a pull_request event");
    };
    assert_eq!(opened.action, PrAction::Opened);
}

#[test]
fn fork_pull_requests_are_recognised() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/github/webhooks/pull_request.opened.1.json");
    let mut raw: Value =
        serde_json::from_slice(&std::fs::read(path).expect("fixture")).expect("json");
    raw["pull_request"]["head"]["repo"]["full_name"] = "mallory/Hello-World".into();
    let Ok(Parsed::Event(Event::PullRequest(fork))) =
        parse_event("pull_request", raw.to_string().as_bytes())
    else {
        panic!("fork payload");
    };
    assert!(fork.is_fork());
    raw["pull_request"]["head"]["repo"] = Value::Null;
    let Ok(Parsed::Event(Event::PullRequest(deleted))) =
        parse_event("pull_request", raw.to_string().as_bytes())
    else {
        panic!("deleted-fork payload");
    };
    assert!(deleted.is_fork() && deleted.head_repo.is_none());
}

#[test]
fn a_new_base_is_a_retarget_and_other_edits_are_ignored() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/github/webhooks/pull_request.opened.1.json");
    let mut raw: Value =
        serde_json::from_slice(&std::fs::read(path).expect("fixture")).expect("json");
    raw["action"] = "edited".into();
    // GitHub's `changes` of an edit that changed the base.
    raw["changes"] = serde_json::json!({"base": {"ref": {"from": "agent-base"}, "sha": {"from": "e".repeat(40)}}});
    let Ok(Parsed::Event(Event::PullRequest(retargeted))) =
        parse_event("pull_request", raw.to_string().as_bytes())
    else {
        panic!("retarget payload");
    };
    assert_eq!(retargeted.action, PrAction::Retargeted);
    assert_eq!(retargeted.previous_base.as_deref(), Some("agent-base"));
    raw["changes"] = serde_json::json!({"title": {"from": "old title"}});
    assert!(matches!(
        parse_event("pull_request", raw.to_string().as_bytes()),
        Ok(Parsed::Ignored(_))
    ));
}

#[test]
fn comment_on_a_pull_request_is_an_event_and_on_an_issue_is_ignored() {
    let Parsed::Event(Event::Comment(c)) =
        parse_file("derived.issue_comment.created.on_pull_request.json")
    else {
        panic!("not a comment event");
    };
    assert_eq!(c.pr, PrNumber(1));
    assert_eq!(c.body, "/iterate accept");
    assert_eq!(c.author.kind, ActorKind::User);
    assert!(c.comment_id > CommentId(0));
    assert_eq!(
        parse_file("issue_comment.created.1.json"),
        Parsed::Ignored("comment on an issue, not a pull request".into())
    );
}

#[test]
fn bot_authors_are_recognised() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/github/webhooks/derived.issue_comment.created.on_pull_request.json");
    let mut raw: Value =
        serde_json::from_slice(&std::fs::read(path).expect("fixture")).expect("json");
    raw["comment"]["user"]["login"] = "renovate[bot]".into();
    raw["comment"]["user"]["type"] = "Bot".into();
    let Ok(Parsed::Event(Event::Comment(c))) =
        parse_event("issue_comment", raw.to_string().as_bytes())
    else {
        panic!("comment payload");
    };
    assert!(c.author.is_bot());
}

#[test]
fn reviews_map_their_state_and_changes_requested_is_a_rejection() {
    let Parsed::Event(Event::Review(r)) = parse_file("pull_request_review.submitted.1.json") else {
        panic!("not a review event");
    };
    assert_eq!(r.state, ReviewState::Commented);
    assert!(!r.is_rejection());
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/github/webhooks/pull_request_review.submitted.2.json");
    let mut raw: Value =
        serde_json::from_slice(&std::fs::read(path).expect("fixture")).expect("json");
    raw["review"]["state"] = "changes_requested".into();
    raw["review"]["body"] = "Please split this function".into();
    let Ok(Parsed::Event(Event::Review(r))) =
        parse_event("pull_request_review", raw.to_string().as_bytes())
    else {
        panic!("review payload");
    };
    assert!(r.is_rejection());
    assert_eq!(r.body.as_deref(), Some("Please split this function"));
    assert_eq!(
        ReviewState::from_github("CHANGES_REQUESTED"),
        ReviewState::ChangesRequested
    );
}

#[test]
fn workflow_run_carries_run_sha_and_prs() {
    let Parsed::Event(Event::WorkflowRun(w)) = parse_file("workflow_run.completed.3.json") else {
        panic!("not a workflow_run event");
    };
    assert_eq!(w.prs, [PrNumber(2)]);
    assert_eq!(w.conclusion.as_deref(), Some("success"));
    assert_eq!(w.head_sha.0.len(), 40);
    let Parsed::Event(Event::WorkflowRun(no_pr)) = parse_file("workflow_run.completed.1.json")
    else {
        panic!("not a workflow_run event");
    };
    assert!(no_pr.prs.is_empty());
}

#[test]
fn broken_payloads_say_where() {
    let missing = parse_event(
        "pull_request",
        br#"{"action":"opened","repository":{"full_name":"a/b"},"pull_request":{"number":1}}"#,
    );
    let error = missing.expect_err("no head");
    assert!(error.to_string().contains("pull_request"), "{error}");
    let bad_repo = parse_event("workflow_run", br#"{"action":"completed","repository":{"full_name":"nope"},"workflow_run":{"id":1,"head_sha":"a"}}"#);
    assert!(bad_repo
        .expect_err("bad repo")
        .to_string()
        .contains("owner/name"));
    assert!(parse_event("issue_comment", b"not json").is_err());
    assert_eq!(
        parse_event("push", b"{}").expect("ignored"),
        Parsed::Ignored("event `push` is not handled".into())
    );
}
