//! The sticky comment: its state round-trips, only the bot's own comment is trusted, untrusted
//! text can neither forge nor break the marker or the state, and the body stays under
//! GitHub's size limit by compacting old iterations.

use crate::fake_github;

use chrono::{TimeZone, Utc};
use fake_github::{FakeGithub, BOT_LOGIN, REPO};
use itergate::engine::Feedback;
use itergate::github::sticky::{
    escape_markdown_inline, fence, find_sticky, load_state, load_state_keyed, parse_state,
    render_body, render_body_keyed, upsert, verify_state, StateError, StateKey, StickyState,
    MARKER, MAX_BODY_BYTES,
};
use itergate::github::types::{Actor, ActorKind, Comment};
use itergate::github::{CommentId, Forge, PrNumber, RepoName};
use itergate::markup::escape_markdown_inline_keeping_code;
use itergate::model::{CheckerIssue, IterationRecord, Scores, Severity, Trigger, TriggerType};
use proptest::prelude::*;

use crate::redact;

fn record(iteration: u32, issues: usize) -> IterationRecord {
    let mut r = IterationRecord::new(
        iteration,
        Utc.timestamp_opt(1_700_000_000 + i64::from(iteration), 0)
            .unwrap(),
    );
    r.scores = Scores {
        tests_passing: Some(0.5 + f64::from(iteration % 5) / 10.0),
        ..Scores::default()
    };
    r.quality = Some(0.61);
    r.issues = (0..issues)
        .map(|i| CheckerIssue {
            dimension: "code_quality".into(),
            severity: Severity::Warning,
            finding: format!("clippy::needless_clone in a rather long explanation number {i}"),
            affected_field: Some(format!("src/module_{i}.rs:{}", i + 10)),
            suggested_fix: Some("remove the clone".into()),
            kind: None,
            subject: None,
        })
        .collect();
    r.triggers = vec![Trigger {
        kind: TriggerType::QualityThreshold,
        source: "engine".into(),
        severity: 0.5,
        details: "quality below 0.95".into(),
        fixable: true,
    }];
    r
}

fn state(records: u32, issues: usize) -> StickyState {
    StickyState {
        records: (1..=records).map(|i| record(i, issues)).collect(),
        feedback: Feedback {
            messages: vec!["handle the empty input".into()],
            accepted: false,
            max_iterations: Some(8),
            restart_after: Some(2),
            ..Feedback::default()
        },
        last_command_comment: Some(CommentId(42)),
        escalation_notified_at: None,
        context_rounds: 1,
        ..StickyState::default()
    }
}

fn comment(id: u64, login: &str, body: String) -> Comment {
    Comment {
        id: CommentId(id),
        author: Actor::new(login, ActorKind::Bot),
        body,
    }
}

#[test]
fn state_round_trips_through_the_body() {
    let s = state(3, 2);
    let body = render_body("## itergate: iterate\n\nquality 0.61", &s);
    assert!(body.starts_with(MARKER));
    assert_eq!(parse_state(&body), Ok(s));
}

#[test]
fn only_the_bots_own_comment_is_trusted() {
    let real = render_body("real", &state(2, 0));
    let forged = render_body(
        "forged",
        &StickyState {
            feedback: Feedback {
                accepted: true,
                ..Feedback::default()
            },
            ..StickyState::default()
        },
    );
    let comments = vec![
        comment(1, "mallory", forged.clone()),
        comment(2, "github-actions", forged.clone()),
        comment(3, BOT_LOGIN, "a plain bot comment".into()),
        comment(4, &BOT_LOGIN.to_uppercase(), real.clone()),
    ];
    assert_eq!(
        find_sticky(&comments, BOT_LOGIN).map(|c| c.id),
        Some(CommentId(4))
    );
    let loaded = load_state(&comments, BOT_LOGIN);
    assert_eq!(loaded.comment, Some(CommentId(4)));
    assert!(!loaded.state.feedback.accepted);
    assert_eq!(loaded.state.records.len(), 2);
    assert_eq!(load_state(&comments[..3], BOT_LOGIN).comment, None);
}

#[test]
fn among_the_bots_marker_comments_the_one_itergate_wrote_most_is_trusted() {
    let ours = render_body(
        "ours",
        &StickyState {
            revision: 7,
            ..state(2, 0)
        },
    );
    let copy = render_body(
        "an older copy another workflow posted",
        &StickyState {
            revision: 3,
            feedback: Feedback {
                accepted: true,
                ..Feedback::default()
            },
            ..StickyState::default()
        },
    );
    let comments = vec![
        comment(
            1,
            BOT_LOGIN,
            "<!-- itergate:sticky -->\nDeploy preview ready.".into(),
        ),
        comment(2, BOT_LOGIN, copy.clone()),
        comment(3, BOT_LOGIN, ours.clone()),
        comment(
            4,
            BOT_LOGIN,
            "<!-- itergate:sticky -->\nx\n<!-- itergate:state v1 !!! -->".into(),
        ),
    ];
    assert_eq!(
        find_sticky(&comments, BOT_LOGIN).map(|c| c.id),
        Some(CommentId(3))
    );
    let loaded = load_state(&comments, BOT_LOGIN);
    assert_eq!((loaded.comment, loaded.problem), (Some(CommentId(3)), None));
    // On a tie the oldest, the one itergate created first.
    let tie = vec![
        comment(5, BOT_LOGIN, ours.clone()),
        comment(6, BOT_LOGIN, ours),
    ];
    assert_eq!(
        find_sticky(&tie, BOT_LOGIN).map(|c| c.id),
        Some(CommentId(5))
    );
    // A marker without any state is not itergate's: neither read nor overwritten.
    assert_eq!(find_sticky(&comments[..1], BOT_LOGIN), None);
    // When no state parses, the first candidate is reported.
    let loaded = load_state(&comments[3..], BOT_LOGIN);
    assert_eq!(loaded.comment, Some(CommentId(4)));
    assert!(loaded.problem.is_some());
}

#[test]
fn issue_references_and_autolinks_do_not_survive_escaping() {
    let text = escape_markdown_inline("fixes #123 and octo-org/widgets#5, see https://evil.example or www.evil.example, mail a@b.example");
    for live in ["#123", "widgets#5", "https://", "www.evil", "a@b"] {
        assert!(!text.contains(live), "`{live}` in {text}");
    }
    insta::with_settings!({ filters => redact::invisible() }, {
        insta::assert_snapshot!(text, @r"fixes \#[U+2060]123 and octo\-org/widgets\#[U+2060]5, see https\:[U+2060]//evil\.example or www[U+2060]\.evil\.example, mail a@[U+2060]b\.example");
    });
}

#[test]
fn corrupt_or_foreign_state_is_reported_not_trusted() {
    let cases = [
        (
            "no marker\n<!-- itergate:state v1 e30= -->",
            StateError::NoMarker,
        ),
        ("<!-- itergate:sticky -->\nnothing", StateError::NoState),
        (
            "<!-- itergate:sticky -->\n<!-- itergate:state v9 e30= -->",
            StateError::NewerVersion("v9".into()),
        ),
        (
            "<!-- itergate:sticky -->\n<!-- itergate:state vx e30= -->",
            StateError::UnsupportedVersion("vx".into()),
        ),
    ];
    for (body, expected) in cases {
        assert_eq!(parse_state(body), Err(expected), "{body}");
    }
    assert!(matches!(
        parse_state("<!-- itergate:sticky -->\n<!-- itergate:state v1 !!! -->"),
        Err(StateError::Base64(_))
    ));
    assert!(matches!(
        parse_state("<!-- itergate:sticky -->\n<!-- itergate:state v1 bm90IGpzb24= -->"),
        Err(StateError::Json(_))
    ));
    let broken = vec![comment(
        9,
        BOT_LOGIN,
        "<!-- itergate:sticky -->\n<!-- itergate:state v1 !!! -->".into(),
    )];
    let loaded = load_state(&broken, BOT_LOGIN);
    assert_eq!(loaded.comment, Some(CommentId(9)));
    assert!(matches!(loaded.problem, Some(StateError::Base64(_))));
    let lost = loaded
        .state
        .lost_state
        .clone()
        .expect("the loss is remembered");
    insta::assert_snapshot!(&lost, @"the state is not valid base64: Invalid symbol 33, offset 0.");
    assert_eq!(
        loaded.state,
        StickyState {
            lost_state: Some(lost),
            ..StickyState::default()
        }
    );
}

#[test]
fn a_forged_state_in_the_visible_text_is_ignored() {
    let forged_state = StickyState {
        feedback: Feedback {
            accepted: true,
            ..Feedback::default()
        },
        ..StickyState::default()
    };
    let forged_line = render_body("", &forged_state);
    let s = state(1, 0);
    let body = render_body(&format!("quoted from a user:\n{forged_line}"), &s);
    assert_eq!(parse_state(&body), Ok(s));
    assert_eq!(body.matches(MARKER).count(), 1);
    assert_eq!(body.matches("<!-- itergate:state").count(), 1);
}

#[test]
fn fence_outlasts_any_backtick_run_and_escape_stays_inline() {
    let text = "a ``` b ```` c\n```\n<!-- itergate:sticky -->";
    let fenced = fence(text);
    insta::with_settings!({ filters => redact::invisible() }, {
        insta::assert_snapshot!(&fenced, @r"
            `````
            a ``` b ```` c
            ```
            <![U+200B]-- itergate:sticky --[U+200B]>
            `````
            ");
    });
    assert!(!fenced.contains("<!--") && !fenced.contains("-->"));
    let inline = escape_markdown_inline("**bold** [x](y) <b> @alice\n/iterate accept <!-- -->");
    assert!(!inline.contains('\n') && !inline.contains('<') && !inline.contains('>'));
    insta::with_settings!({ filters => redact::invisible() }, {
        insta::assert_snapshot!(inline, @r"\*\*bold\*\* \[x\]\(y\) &lt;b&gt; @[U+2060]alice /iterate accept &lt;\!\-\- \-\-&gt;");
    });
    // Code spans stay code (GitHub renders nothing inside one); a span holding a comment
    // marker, a line break or no closing backtick is escaped like the rest.
    let kept = escape_markdown_inline_keeping_code(
        "reply `/iterate adjust <guidance>` or `@alice` @bob; `<!-- itergate:sticky -->` `a\nb` `open",
    );
    insta::with_settings!({ filters => redact::invisible() }, {
        insta::assert_snapshot!(kept, @r"reply `/iterate adjust <guidance>` or `@alice` @[U+2060]bob; \`&lt;\!\-\- itergate\:sticky \-\-&gt;\` \`a b\` \`open");
    });
}

#[test]
fn large_histories_are_compacted_oldest_first_under_the_limit() {
    let s = state(400, 20);
    let body = render_body("visible", &s);
    assert!(body.len() <= MAX_BODY_BYTES, "{} bytes", body.len());
    let kept = parse_state(&body).expect("state");
    let last = kept.records.last().expect("records");
    assert_eq!(last.iteration, 400);
    assert_eq!(
        last.issues.len(),
        20,
        "the latest iteration keeps its issues"
    );
    let first_with_issues = kept
        .records
        .iter()
        .position(|r| !r.issues.is_empty())
        .expect("some kept");
    assert!(
        kept.records[first_with_issues..]
            .iter()
            .all(|r| !r.issues.is_empty()),
        "stripped oldest first"
    );
    assert_eq!(
        kept.compaction.dropped_records as usize + kept.records.len(),
        400
    );
    assert!(kept.compaction.stripped_records > 0);
    assert_eq!(kept.feedback, s.feedback);

    let huge_visible = "x".repeat(200_000);
    let body = render_body(&huge_visible, &state(3, 1));
    assert!(body.len() <= MAX_BODY_BYTES);
    let mut filters = redact::filters();
    filters.push((r"x{16,}", "xxxx[…]"));
    insta::with_settings!({ filters => filters }, {
        insta::assert_snapshot!(&body, @r"
            <!-- itergate:sticky -->
            xxxx[…]

            … (cut: the comment reached GitHub's size limit)

            <!-- itergate:state v1 [state] -->
            ");
    });
    assert_eq!(parse_state(&body).expect("state").records.len(), 3);
}

#[test]
fn small_histories_are_not_compacted() {
    let s = state(30, 5);
    let kept = parse_state(&render_body("v", &s)).expect("state");
    assert_eq!(kept, s);
}

#[tokio::test]
async fn upsert_creates_once_then_edits_in_place() {
    let server = FakeGithub::start().await;
    let (forge, _) = server.forge();
    let repo: RepoName = REPO.parse().expect("repo");
    let pr = PrNumber(7);
    server.with(|m| {
        m.add_comment(
            7,
            "mallory",
            "User",
            &render_body("fake", &StickyState::default()),
        )
    });
    for round in 1..=3u32 {
        let comments = forge.list_comments(&repo, pr).await.expect("list");
        let body = render_body(&format!("round {round}"), &state(round, 1));
        upsert(&forge, &repo, pr, &comments, BOT_LOGIN, &body, None)
            .await
            .expect("upsert");
    }
    let comments = forge.list_comments(&repo, pr).await.expect("list");
    assert_eq!(comments.len(), 2, "mallory's and exactly one of ours");
    let loaded = load_state(&comments, BOT_LOGIN);
    assert_eq!(loaded.state.records.len(), 3);
    assert_eq!(server.count("issues/create-comment"), 1);
    assert_eq!(server.count("issues/update-comment"), 2);
    let same = comments
        .iter()
        .find(|c| c.author.login == BOT_LOGIN)
        .expect("ours")
        .body
        .clone();
    upsert(&forge, &repo, pr, &comments, BOT_LOGIN, &same, None)
        .await
        .expect("unchanged");
    assert_eq!(
        server.count("issues/update-comment"),
        2,
        "an unchanged body is not sent"
    );
    server.assert_no_violations();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn untrusted_text_never_changes_the_state_or_adds_a_marker(
        untrusted in prop_oneof![
            any::<String>(),
            "(<!--|-->|<!-- itergate:sticky -->|<!-- itergate:state v1 e30= -->|```|`|\n|\r| |[a-z]{1,4}|@|>|\\\\|--|!)*",
        ]
    ) {
        let s = state(2, 1);
        let visible = format!(
            "Finding: {}\n\n{}\n\n{}",
            escape_markdown_inline(&untrusted),
            fence(&untrusted),
            untrusted, // even unescaped, it cannot forge the marker or the state
        );
        let body = render_body(&visible, &s);
        prop_assert_eq!(parse_state(&body), Ok(s.clone()));
        prop_assert_eq!(body.matches(MARKER).count(), 1);
        prop_assert_eq!(body.matches("<!-- itergate:state").count(), 1);
        let escaped = escape_markdown_inline(&untrusted);
        prop_assert!(!escaped.contains("<!--") && !escaped.contains("-->") && !escaped.contains('\n'));
        // Code spans kept as code still never hold a comment marker or a line break.
        let kept = escape_markdown_inline_keeping_code(&untrusted);
        prop_assert!(!kept.contains("<!--") && !kept.contains("-->") && !kept.contains('\n'));
        let body = render_body(&format!("Next: {kept}"), &s);
        prop_assert_eq!(parse_state(&body), Ok(s));
        prop_assert_eq!(body.matches(MARKER).count(), 1);
        let fenced = fence(&untrusted);
        prop_assert!(!fenced.contains("<!--") && !fenced.contains("-->"));
    }
}

#[test]
fn a_keyed_state_verifies_only_under_its_key_and_fits_the_limit() {
    let key = StateKey::derive(b"the App's private key");
    let other = StateKey::derive(b"another key");
    let st = state(3, 2);
    let body = render_body_keyed("visible", &st, Some(&key));
    assert_eq!(verify_state(&body, &key), Ok(()));
    assert_eq!(verify_state(&body, &other), Err(StateError::Forged));
    // The MAC does not change what is read.
    assert_eq!(parse_state(&body).expect("parses"), st);
    // An unsigned state is not the App's.
    let unsigned = render_body("visible", &st);
    assert_eq!(verify_state(&unsigned, &key), Err(StateError::Unsigned));
    let loaded = load_state_keyed(&[comment(1, BOT_LOGIN, unsigned)], BOT_LOGIN, Some(&key));
    assert_eq!(loaded.problem, Some(StateError::Unsigned));
    assert!(loaded.state.records.is_empty());
    // Room is kept for the MAC: a huge state still fits GitHub's limit, signed.
    let huge = state(400, 30);
    let body = render_body_keyed(&"x".repeat(70_000), &huge, Some(&key));
    assert!(body.len() <= MAX_BODY_BYTES, "{}", body.len());
    assert_eq!(verify_state(&body, &key), Ok(()));
}

#[test]
fn a_signed_state_relabelled_as_a_newer_version_is_an_edit_not_a_newer_itergate() {
    let key = StateKey::derive(b"the App's private key");
    let body = render_body_keyed("visible", &state(3, 2), Some(&key))
        .replace("itergate:state v1 ", "itergate:state v2 ");
    let comments = [comment(1, BOT_LOGIN, body)];
    // Without the App's key nothing tells them apart: a newer version is left alone.
    assert_eq!(
        load_state(&comments, BOT_LOGIN).problem,
        Some(StateError::NewerVersion("v2".into()))
    );
    let loaded = load_state_keyed(&comments, BOT_LOGIN, Some(&key));
    assert_eq!(loaded.problem, Some(StateError::ForgedVersion("v2".into())));
    assert!(loaded.state.records.is_empty());
    assert!(loaded.state.lost_state.is_some());
}

#[test]
fn the_state_key_survives_a_re_encoded_private_key_and_a_rotation_that_names_the_old_one() {
    let fixture = |name: &str| {
        std::fs::read(format!(
            "{}/tests/fixtures/app/{name}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .expect("fixture")
    };
    let pkcs1 = fixture("test-app-key.pem");
    // The same RSA key as PKCS#8, with CRLF line ends (`openssl pkcs8 -topk8 -nocrypt`).
    let out = std::process::Command::new("openssl")
        .args(["pkcs8", "-topk8", "-nocrypt"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child.stdin.take().expect("stdin").write_all(&pkcs1)?;
            child.wait_with_output()
        })
        .expect("openssl runs");
    assert!(out.status.success());
    let pkcs8 = String::from_utf8(out.stdout)
        .expect("PEM")
        .replace('\n', "\r\n");
    assert!(pkcs8.starts_with("-----BEGIN PRIVATE KEY-----"), "{pkcs8}");
    let st = state(3, 2);
    let body = render_body_keyed("visible", &st, Some(&StateKey::from_private_key(&pkcs1)));
    assert_eq!(
        verify_state(&body, &StateKey::from_private_key(pkcs8.as_bytes())),
        Ok(())
    );
    // The key is derived from the RSA key's PKCS#1 DER: what states written by every
    // release so far were signed with, whatever crate reads the PEM.
    let der = std::process::Command::new("openssl")
        .args(["rsa", "-traditional", "-outform", "DER", "-in"])
        .arg(format!(
            "{}/tests/fixtures/app/test-app-key.pem",
            env!("CARGO_MANIFEST_DIR")
        ))
        .output()
        .expect("openssl runs");
    assert!(der.status.success());
    assert_eq!(verify_state(&body, &StateKey::derive(&der.stdout)), Ok(()));
    // A new key alone does not verify the old key's state; told the previous one, it does,
    // and what it writes next verifies under the new key alone.
    let new = StateKey::derive(b"a new state secret");
    assert_eq!(verify_state(&body, &new), Err(StateError::Forged));
    let rotating = new.clone().accepting(StateKey::from_private_key(&pkcs1));
    assert_eq!(verify_state(&body, &rotating), Ok(()));
    let rewritten = render_body_keyed("visible", &st, Some(&rotating));
    assert_eq!(verify_state(&rewritten, &new), Ok(()));
}
