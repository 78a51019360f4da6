//! Effects on GitHub that are bounded, idempotent and lose nothing (issue 9: M1, M4, M8, L4,
//! L8, L12), through the real `OctocrabForge` against the fake GitHub:
//! - a create whose answer was lost (the fake did the work, then answered 502 or timed out)
//!   exists exactly once afterwards: comments, marked replies, check runs, annotations;
//! - two sticky comments are healed to one;
//! - large feedback never costs history, and dropping records never resets a budget;
//! - annotations are capped, failures first, and the output says how many were left out;
//! - a comment cut at the size limit leaves no fence or `<details>` open;
//! - a 403 that only says "secondary rate limit" is retried;
//! - an artifact larger than the limit is refused, not read into memory.

use crate::fake_github;

use std::time::Duration;

use chrono::{TimeZone, Utc};
use fake_github::{FakeGithub, Fault, BOT_LOGIN, REPO};
use itergate::config::Config;
use itergate::engine::{budget, Feedback};
use itergate::github::checks::{
    Annotation, AnnotationLevel, CheckConclusion, CheckRunSpec, CheckState, MAX_ANNOTATIONS,
};
use itergate::github::forge::{has_reply, marked_reply};
use itergate::github::sticky::{
    load_state, parse_state, render_body, upsert, StickyState, MAX_BODY_BYTES,
};
use itergate::github::types::RunId;
use itergate::github::{Forge, ForgeError, PrNumber, RepoName};
use itergate::model::{CheckerIssue, CommitSha, IterationRecord, Severity, FEEDBACK_MAX_BYTES};

const PR: PrNumber = PrNumber(7);

fn repo() -> RepoName {
    REPO.parse().expect("REPO is owner/name")
}

fn lost_502() -> Fault {
    Fault::Lost(Box::new(Fault::BadGateway))
}

// ---- M4: a create whose answer is lost happens once ----

#[tokio::test]
async fn a_comment_whose_answer_is_lost_exists_exactly_once() {
    let server = FakeGithub::start().await;
    let (forge, clock) = server.forge();
    server.fail_next("issues/create-comment", lost_502(), 1);
    let created = forge
        .create_comment(&repo(), PR, "hello")
        .await
        .expect("found after the lost answer");
    let comments = server.with(|m| m.comments_on(7).into_iter().cloned().collect::<Vec<_>>());
    assert_eq!(comments.len(), 1, "{comments:#?}");
    assert_eq!(created.id.0, comments[0].id);
    assert_eq!(server.count("issues/create-comment"), 1, "not sent again");
    assert_eq!(server.count("issues/list-comments"), 1, "looked first");
    assert_eq!(clock.sleeps(), [Duration::from_millis(10)]);

    // A timeout after the work: the same.
    server.fail_next(
        "issues/create-comment",
        Fault::Lost(Box::new(Fault::Timeout(Duration::from_secs(5)))),
        1,
    );
    forge
        .create_comment(&repo(), PR, "second")
        .await
        .expect("found after the timeout");
    assert_eq!(server.with(|m| m.comments_on(7).len()), 2);

    // A 502 *before* the work: nothing found, so it is sent again, once.
    server.fail_next("issues/create-comment", Fault::BadGateway, 1);
    forge
        .create_comment(&repo(), PR, "third")
        .await
        .expect("sent again");
    assert_eq!(server.with(|m| m.comments_on(7).len()), 3);
    server.assert_no_violations();
}

#[tokio::test]
async fn a_marked_reply_is_found_by_its_marker_even_when_its_text_repeats() {
    let server = FakeGithub::start().await;
    let (forge, _) = server.forge();
    // The same help text answered an earlier command; it must not count as this reply.
    forge
        .create_comment(&repo(), PR, &marked_reply("comment-100", "help text"))
        .await
        .expect("first reply");
    // Someone else quoting the marker is never taken for the bot's reply.
    server.with(|m| {
        m.add_comment(
            7,
            "mallory",
            "User",
            &marked_reply("comment-200", "help text"),
        )
    });
    server.fail_next("issues/create-comment", lost_502(), 1);
    let body = marked_reply("comment-200", "help text");
    forge
        .create_comment(&repo(), PR, &body)
        .await
        .expect("found by its marker");
    let ours: Vec<String> = server.with(|m| {
        m.comments_on(7)
            .iter()
            .filter(|c| c.author == BOT_LOGIN)
            .map(|c| c.body.clone())
            .collect()
    });
    assert_eq!(ours.len(), 2, "one reply per key: {ours:#?}");
    assert_eq!(server.count("issues/create-comment"), 2);
    let comments = forge.list_comments(&repo(), PR).await.expect("list");
    assert!(has_reply(&comments, BOT_LOGIN, "comment-200"));
    assert!(!has_reply(&comments, BOT_LOGIN, "comment-300"));
    let only_mallory: Vec<_> = comments
        .into_iter()
        .filter(|c| c.author.login == "mallory")
        .collect();
    assert!(!has_reply(&only_mallory, BOT_LOGIN, "comment-200"));
    server.assert_no_violations();
}

fn annotations(n: usize, level: AnnotationLevel) -> Vec<Annotation> {
    (1..=n)
        .map(|i| Annotation {
            path: format!("src/file{i}.rs"),
            start_line: 1,
            end_line: 1,
            level,
            message: format!("finding {i}"),
            title: None,
        })
        .collect()
}

fn spec(annotations: Vec<Annotation>) -> CheckRunSpec {
    CheckRunSpec {
        name: "itergate".into(),
        head_sha: CommitSha("a".repeat(40)),
        state: CheckState::Completed(CheckConclusion::Neutral),
        title: "itergate: iterate".into(),
        summary: "quality 0.61".into(),
        text: None,
        annotations,
        details_url: None,
        external_id: Some("itergate-2".into()),
    }
}

#[tokio::test]
async fn a_check_run_and_its_annotations_are_not_duplicated_by_lost_answers() {
    let server = FakeGithub::start().await;
    let (forge, _) = server.forge();
    server.fail_next("checks/create", lost_502(), 1);
    server.fail_next("checks/update", lost_502(), 1);
    let id = forge
        .create_check_run(&repo(), &spec(annotations(120, AnnotationLevel::Warning)))
        .await
        .expect("create");
    let runs = server.with(|m| m.check_runs.clone());
    assert_eq!(runs.len(), 1, "one check run");
    assert_eq!(runs[0].id, id.0);
    assert_eq!(runs[0].annotations.len(), 120, "no annotation twice");
    assert_eq!(runs[0].annotation_batches, [50, 50, 20]);
    assert_eq!(server.count("checks/create"), 1);
    assert_eq!(server.count("checks/update"), 2);
    server.assert_no_violations();
}

/// After a failed create, a run of the same name, external id and title that another app
/// made (anyone with `checks: write` can) is not taken for the App's own: the App makes
/// its own, so its verdict is posted.
#[tokio::test]
async fn after_a_failed_create_another_apps_check_run_is_not_adopted() {
    use fake_github::model::{FakeCheckRun, ACTIONS_APP_ID};
    let server = FakeGithub::start().await;
    let (forge, _) = server.forge_with(itergate::github::ForgeSettings {
        app_id: Some(ACTIONS_APP_ID),
        ..server.settings()
    });
    let ours = spec(Vec::new());
    server.with(|m| {
        let id = m.next_id();
        m.check_runs.push(FakeCheckRun {
            id,
            name: ours.name.clone(),
            head_sha: ours.head_sha.0.clone(),
            status: "completed".into(),
            conclusion: Some("success".into()),
            suite_id: 77,
            external_id: ours.external_id.clone(),
            output: serde_json::json!({ "title": ours.title, "summary": "all good" }),
            annotations: Vec::new(),
            annotation_batches: Vec::new(),
            app_id: 999,
        });
    });
    server.fail_next("checks/create", Fault::BadGateway, 1);
    let id = forge
        .create_check_run(&repo(), &ours)
        .await
        .expect("create");
    let runs = server.with(|m| m.check_runs.clone());
    assert_eq!(runs.len(), 2, "{runs:#?}");
    let made = runs
        .iter()
        .find(|r| r.id == id.0)
        .expect("the App's own run");
    assert_eq!(made.app_id, ACTIONS_APP_ID);
    assert_eq!(made.conclusion.as_deref(), Some("neutral"));
    server.assert_no_violations();
}

#[tokio::test]
async fn labels_survive_a_lost_answer_without_duplicates() {
    let server = FakeGithub::start().await;
    let (forge, _) = server.forge();
    server.fail_next("issues/add-labels", lost_502(), 1);
    server.fail_next("issues/create-label", lost_502(), 1);
    forge
        .add_label(
            &repo(),
            PR,
            &itergate::github::types::LabelSpec::escalation("needs-human-review"),
        )
        .await
        .expect("label");
    assert_eq!(
        server.with(|m| m.labels_on(7)),
        vec!["needs-human-review".to_string()]
    );
    server.assert_no_violations();
}

// ---- M4: two sticky comments are healed to one ----

fn record(iteration: u32, tokens: u64) -> IterationRecord {
    let mut r = IterationRecord::new(
        iteration,
        Utc.timestamp_opt(1_700_000_000 + i64::from(iteration) * 3_600, 0)
            .unwrap(),
    );
    r.commit = CommitSha(format!("{iteration:040}"));
    r.tokens_used = Some(tokens);
    r.cost_usd = Some(1.0);
    r.tool_calls = Some(10);
    r
}

fn state_of(iterations: u32) -> StickyState {
    StickyState {
        records: (1..=iterations).map(|i| record(i, 100_000)).collect(),
        ..StickyState::default()
    }
}

#[tokio::test]
async fn a_lost_create_of_the_sticky_comment_leaves_one() {
    let server = FakeGithub::start().await;
    let (forge, _) = server.forge();
    let body = render_body("iteration 1", &state_of(1));
    server.fail_next("issues/create-comment", lost_502(), 1);
    let comments = forge.list_comments(&repo(), PR).await.expect("list");
    upsert(&forge, &repo(), PR, &comments, BOT_LOGIN, &body, None)
        .await
        .expect("upsert");
    assert_eq!(server.with(|m| m.comments_on(7).len()), 1);
    server.assert_no_violations();
}

#[tokio::test]
async fn two_sticky_comments_are_healed_to_the_freshest() {
    let server = FakeGithub::start().await;
    let (forge, _) = server.forge();
    // What a retried create left before this fix: a current copy and a stale one.
    let current = server.with(|m| {
        m.add_comment(
            7,
            BOT_LOGIN,
            "User",
            &render_body("iteration 1", &state_of(1)),
        )
    });
    let stale = server.with(|m| {
        m.add_comment(
            7,
            BOT_LOGIN,
            "User",
            &render_body("iteration 1", &state_of(1)),
        )
    });
    // A marker comment whose state cannot be read is not ours to delete.
    let unreadable = server.with(|m| {
        m.add_comment(
            7,
            BOT_LOGIN,
            "User",
            "<!-- itergate:sticky -->\nanother workflow\n<!-- itergate:state v9 e30= -->\n",
        )
    });
    let comments = forge.list_comments(&repo(), PR).await.expect("list");
    let loaded = load_state(&comments, BOT_LOGIN);
    let mut state = loaded.state;
    state.records.record(record(2, 100_000));
    let body = render_body("iteration 2", &state);
    let id = upsert(&forge, &repo(), PR, &comments, BOT_LOGIN, &body, None)
        .await
        .expect("upsert");
    assert_eq!(id.0, current, "the oldest of equals is kept");
    let left: Vec<u64> = server.with(|m| m.comments_on(7).iter().map(|c| c.id).collect());
    assert_eq!(left, [current, unreadable], "{stale} deleted");
    let comments = forge.list_comments(&repo(), PR).await.expect("list");
    assert_eq!(load_state(&comments, BOT_LOGIN).state.records.len(), 2);
    assert_eq!(server.count("issues/delete-comment"), 1);
    server.assert_no_violations();
}

// ---- M1: feedback is bounded, records stay, budgets never reset ----

fn totals(records: &[IterationRecord], now: chrono::DateTime<Utc>) -> (u64, f64, u64, u64) {
    let b = budget::compute(&Config::default(), records, now, 10).budget;
    (
        b.used_tokens.unwrap_or(0),
        b.spent_usd.unwrap_or(0.0),
        b.used_tool_calls.unwrap_or(0),
        b.elapsed_ms,
    )
}

#[tokio::test]
async fn twenty_large_reviews_cost_no_record_and_no_budget() {
    let server = FakeGithub::start().await;
    let (forge, _) = server.forge();
    let mut state = state_of(8);
    state.records[0].timestamp = Utc.timestamp_opt(1_670_000_000, 0).unwrap();
    let now = Utc.timestamp_opt(1_700_100_000, 0).unwrap();
    let before = totals(&state.records, now);
    state.feedback = Feedback {
        rejections: (0..20)
            .map(|i| format!("review {i}: {}", "🙂".repeat(16_000)))
            .collect(),
        ..Feedback::default()
    };
    let body = render_body("visible", &state);
    assert!(body.len() <= MAX_BODY_BYTES);
    let comments = forge.list_comments(&repo(), PR).await.expect("list");
    upsert(&forge, &repo(), PR, &comments, BOT_LOGIN, &body, None)
        .await
        .expect("upsert");
    let comments = forge.list_comments(&repo(), PR).await.expect("list");
    let kept = load_state(&comments, BOT_LOGIN).state;
    assert_eq!(kept.records.len(), 8, "every record kept");
    assert_eq!(kept.compaction.dropped_records, 0);
    assert_eq!(kept.feedback.rejections.len(), 20);
    assert!(kept
        .feedback
        .rejections
        .iter()
        .all(|r| r.len() <= FEEDBACK_MAX_BYTES && r.ends_with("more characters cut)")));
    assert_eq!(totals(&kept.records, now), before);
    server.assert_no_violations();
}

#[test]
fn dropping_records_keeps_every_budget_total_and_the_wall_clock() {
    let mut state = state_of(300);
    for r in state.records.iter_mut() {
        r.issues = (0..30)
            .map(|i| CheckerIssue {
                dimension: "code_quality".into(),
                severity: Severity::Warning,
                finding: format!("a long finding about something {i} {}", "x".repeat(40)),
                affected_field: Some(format!("src/m{i}.rs:{i}")),
                suggested_fix: None,
                kind: None,
                subject: None,
            })
            .collect();
        r.metrics.insert("patch_coverage".into(), 0.5);
    }
    state.records[0].timestamp = Utc.timestamp_opt(1_600_000_000, 0).unwrap();
    let now = Utc.timestamp_opt(1_800_000_000, 0).unwrap();
    let before = totals(&state.records, now);
    let kept = parse_state(&render_body("visible", &state)).expect("state");
    assert!(
        kept.compaction.dropped_records > 0,
        "the test must drop records"
    );
    assert_eq!(
        kept.records.last().map(|r| r.iteration),
        Some(300),
        "the latest stays"
    );
    let after = totals(&kept.records, now);
    assert_eq!(after.0, before.0, "tokens");
    assert!((after.1 - before.1).abs() < 1e-9, "spend");
    assert_eq!(after.2, before.2, "tool calls");
    assert_eq!(after.3, before.3, "wall clock");
    let carried = kept.compaction.carried;
    assert_eq!(
        carried.tokens_used,
        u64::from(kept.compaction.dropped_records) * 100_000
    );

    // Compacting the compacted state again still keeps them.
    let mut again = kept.clone();
    again.records.record(record(301, 100_000));
    let twice = parse_state(&render_body("visible", &again)).expect("state");
    assert_eq!(
        totals(&twice.records, now).0,
        before.0 + 100_000,
        "tokens after a second compaction"
    );
}

// ---- M8: annotations are capped, failures first ----

#[tokio::test]
async fn a_hundred_thousand_findings_cost_three_requests_and_say_what_was_left_out() {
    let server = FakeGithub::start().await;
    let (forge, _) = server.forge();
    let mut all = annotations(99_990, AnnotationLevel::Warning);
    all.extend(annotations(10, AnnotationLevel::Failure));
    forge
        .create_check_run(&repo(), &spec(all))
        .await
        .expect("create");
    let run = server.with(|m| m.check_runs[0].clone());
    assert_eq!(
        server.count("checks/create") + server.count("checks/update"),
        MAX_ANNOTATIONS / 50
    );
    assert_eq!(run.annotations.len(), MAX_ANNOTATIONS);
    assert!(run.annotations[..10]
        .iter()
        .all(|a| a["annotation_level"] == "failure"));
    let summary = run.output["summary"].as_str().expect("summary");
    assert!(
        summary.contains(&format!(
            "{} of 100000 annotations were left out",
            100_000 - MAX_ANNOTATIONS
        )),
        "{summary}"
    );
    server.assert_no_violations();
}

// ---- L4: cutting the comment closes what it cut ----

#[test]
fn a_comment_cut_inside_a_fence_and_details_closes_both() {
    let yaml: String = (0..20_000)
        .map(|i| format!("- finding: \"issue {i}\"\n"))
        .collect();
    let visible = format!(
        "## itergate: iterate\n\n<details>\n<summary>Revision prompt</summary>\n\n```yaml\n{yaml}```\n\n</details>\n\nFooter"
    );
    let body = render_body(&visible, &state_of(2));
    assert!(body.len() <= MAX_BODY_BYTES);
    let fences = body
        .lines()
        .filter(|l| l.trim_start().starts_with("```"))
        .count();
    assert_eq!(fences % 2, 0, "no fence left open");
    assert_eq!(
        body.matches("<details>").count(),
        body.matches("</details>").count(),
        "no <details> left open"
    );
    let state_at = body.find("<!-- itergate:state").expect("state");
    let last_fence = body.rfind("```").expect("fence");
    let note_at = body.find("(cut: the comment reached").expect("note");
    assert!(last_fence < note_at && note_at < state_at);
    assert_eq!(parse_state(&body).expect("state"), state_of(2));
}

// ---- L8: a secondary rate limit named only in the message ----

#[tokio::test]
async fn a_secondary_rate_limit_without_headers_is_retried() {
    let server = FakeGithub::start().await;
    let (forge, clock) = server.forge();
    server.fail_next(
        "issues/list-comments",
        Fault::SecondaryRateLimitMessageOnly,
        2,
    );
    forge
        .list_comments(&repo(), PR)
        .await
        .expect("after two secondary limits");
    assert_eq!(
        clock.sleeps(),
        [Duration::from_secs(60), Duration::from_secs(120)],
        "a minute, then longer"
    );
    server.assert_no_violations();
}

// ---- L12: the artifact download is bounded ----

fn zip_with(name: &str, content: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    writer.start_file(name, options).expect("start");
    writer.write_all(content).expect("write");
    writer.finish().expect("finish").into_inner()
}

#[tokio::test]
async fn an_artifact_larger_than_the_limit_is_refused() {
    let server = FakeGithub::start().await;
    let mut settings = server.settings();
    settings.max_download_bytes = 64 * 1024;
    let (forge, _) = server.forge_with(settings);
    server.with(|m| {
        m.artifacts.push(fake_github::model::FakeArtifact {
            id: 601,
            run_id: 9,
            name: fake_github::bound_name("itergate-record", &vec![b' '; 200 * 1024]),
            zip: zip_with("record.json", &vec![b' '; 200 * 1024]),
            expired: false,
        });
        m.artifacts.push(fake_github::model::FakeArtifact {
            id: 602,
            run_id: 10,
            name: fake_github::bound_name("itergate-record", b"{}"),
            zip: zip_with("record.json", b"{}"),
            expired: false,
        });
    });
    let refused = forge
        .download_artifact_file(&repo(), RunId(9), "itergate-record", "record.json")
        .await
        .expect_err("too large");
    assert!(
        matches!(
            refused,
            ForgeError::TooLarge {
                limit_bytes: 65_536,
                ..
            }
        ),
        "{refused:?}"
    );
    assert!(
        refused.to_string().contains("larger than 65536 bytes"),
        "{refused}"
    );
    let small = forge
        .download_artifact_file(&repo(), RunId(10), "itergate-record", "record.json")
        .await
        .expect("a small one is read");
    assert_eq!(small, b"{}");
    server.assert_no_violations();
}
