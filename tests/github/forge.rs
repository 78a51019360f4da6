//! The octocrab `Forge` against the fake GitHub: every operation changes the fake's model as
//! GitHub would, every request matches GitHub's OpenAPI description, and 502s, timeouts and
//! rate limits are retried the way the retry policy says.

use crate::fake_github;

use std::collections::BTreeMap;
use std::time::Duration;

use fake_github::{grant, seed_pull, FakeGithub, Fault, Options, BOT_LOGIN, REPO};
use itergate::github::checks::{
    Annotation, AnnotationLevel, CheckConclusion, CheckRunSpec, CheckState,
};
use itergate::github::commands::Permission;
use itergate::github::types::{IdentitySource, LabelSpec, Reaction, RunId};
use itergate::github::{Forge, ForgeError, PrNumber, RepoName};
use itergate::model::CommitSha;

use crate::redact;

fn repo() -> RepoName {
    REPO.parse().expect("REPO is owner/name")
}

const PR: PrNumber = PrNumber(7);

#[tokio::test]
async fn created_comment_is_listed_and_updated_in_place() {
    let server = FakeGithub::start().await;
    let (forge, _) = server.forge();
    server.with(|m| m.add_comment(7, "alice", "User", "looks good"));
    let created = forge
        .create_comment(&repo(), PR, "first body")
        .await
        .expect("create");
    assert_eq!(created.author.login, BOT_LOGIN);

    let updated = forge
        .update_comment(&repo(), created.id, "second body")
        .await
        .expect("update");
    assert_eq!(updated.id, created.id);

    let comments = forge.list_comments(&repo(), PR).await.expect("list");
    let bodies: Vec<&str> = comments.iter().map(|c| c.body.as_str()).collect();
    assert_eq!(bodies, ["looks good", "second body"]);
    assert_eq!(server.with(|m| m.comments_on(7).len()), 2);
    server.assert_no_violations();
}

#[tokio::test]
async fn listing_follows_every_page() {
    let server = FakeGithub::start().await;
    let (forge, _) = server.forge();
    for i in 0..230 {
        server.with(|m| m.add_comment(7, "alice", "User", &format!("comment {i}")));
    }
    let comments = forge.list_comments(&repo(), PR).await.expect("list");
    assert_eq!(comments.len(), 230);
    assert_eq!(comments[229].body, "comment 229");
    assert_eq!(server.count("issues/list-comments"), 3);
    server.assert_no_violations();
}

#[tokio::test]
async fn missing_label_is_created_with_its_colour_then_added_and_removed_idempotently() {
    let server = FakeGithub::start().await;
    let (forge, _) = server.forge();
    let label = LabelSpec::escalation("needs-human-review");
    forge.add_label(&repo(), PR, &label).await.expect("add");
    forge
        .add_label(&repo(), PR, &label)
        .await
        .expect("adding again is fine");
    let created = server
        .with(|m| m.labels.get("needs-human-review").cloned())
        .expect("label exists");
    assert_eq!(created.color, "d93f0b");
    assert_eq!(
        created.description.as_deref(),
        Some(label.description.as_str())
    );
    assert_eq!(server.with(|m| m.labels_on(7)), ["needs-human-review"]);

    forge
        .remove_label(&repo(), PR, "needs-human-review")
        .await
        .expect("remove");
    forge
        .remove_label(&repo(), PR, "needs-human-review")
        .await
        .expect("removing again is fine");
    assert!(server.with(|m| m.labels_on(7)).is_empty());
    server.assert_no_violations();
}

#[tokio::test]
async fn label_names_with_spaces_and_slashes_are_encoded() {
    let server = FakeGithub::start().await;
    let (forge, _) = server.forge();
    let label = LabelSpec::escalation("itergate: needs/human");
    forge.add_label(&repo(), PR, &label).await.expect("add");
    forge
        .remove_label(&repo(), PR, &label.name)
        .await
        .expect("remove");
    assert!(server.with(|m| m.labels_on(7)).is_empty());
    server.assert_no_violations();
}

#[tokio::test]
async fn permission_reads_role_name_then_permission() {
    let server = FakeGithub::start().await;
    let (forge, _) = server.forge();
    grant(&server, "owner", "admin", "admin");
    grant(&server, "keeper", "write", "maintain");
    grant(&server, "sorter", "read", "triage");
    grant(&server, "custom", "write", "security-reviewer");
    let cases = [
        ("owner", Permission::Admin),
        ("keeper", Permission::Maintain),
        ("sorter", Permission::Triage),
        ("custom", Permission::Write),
        ("stranger", Permission::Read),
    ];
    for (user, expected) in cases {
        assert_eq!(
            forge.permission(&repo(), user).await.expect(user),
            expected,
            "{user}"
        );
    }
    server.assert_no_violations();
}

#[tokio::test]
async fn reaction_is_added_to_the_comment() {
    let server = FakeGithub::start().await;
    let (forge, _) = server.forge();
    let id = server.with(|m| m.add_comment(7, "alice", "User", "/iterate accept"));
    let id = itergate::github::CommentId(id);
    forge
        .add_reaction(&repo(), id, Reaction::Eyes)
        .await
        .expect("react");
    forge
        .add_reaction(&repo(), id, Reaction::Eyes)
        .await
        .expect("react again");
    let reactions = server.with(|m| m.reactions.clone());
    assert_eq!(reactions.len(), 1);
    assert_eq!(
        (reactions[0].content.as_str(), reactions[0].user.as_str()),
        ("eyes", BOT_LOGIN)
    );
    server.assert_no_violations();
}

fn annotations(n: u32) -> Vec<Annotation> {
    (1..=n)
        .map(|i| Annotation {
            path: format!("src/file{i}.rs"),
            start_line: i,
            end_line: i,
            level: AnnotationLevel::Warning,
            message: format!("finding {i}"),
            title: Some("clippy".into()),
        })
        .collect()
}

fn spec(annotations: Vec<Annotation>, text: Option<String>) -> CheckRunSpec {
    CheckRunSpec {
        name: "itergate".into(),
        head_sha: CommitSha("a".repeat(40)),
        state: CheckState::Completed(CheckConclusion::Failure),
        title: "Iterate: 3 blockers".into(),
        summary: "quality 0.61".into(),
        text,
        annotations,
        details_url: None,
        external_id: Some("iteration-2".into()),
    }
}

#[tokio::test]
async fn check_run_with_120_annotations_goes_out_in_batches_of_50() {
    let server = FakeGithub::start().await;
    let (forge, _) = server.forge();
    let long_text = "line of output\n".repeat(6_000);
    let id = forge
        .create_check_run(&repo(), &spec(annotations(120), Some(long_text)))
        .await
        .expect("create");
    let run = server
        .with(|m| m.check_runs.iter().find(|r| r.id == id.0).cloned())
        .expect("run");
    assert_eq!(run.annotation_batches, [50, 50, 20]);
    assert_eq!(run.annotations.len(), 120);
    assert_eq!(run.conclusion.as_deref(), Some("failure"));
    let text = run.output["text"].as_str().expect("text");
    assert!(text.chars().count() <= 65_535);
    assert!(
        text.ends_with("the full report is in the job log)"),
        "{}",
        &text[text.len() - 100..]
    );
    assert_eq!(server.count("checks/create"), 1);
    assert_eq!(server.count("checks/update"), 2);

    forge
        .update_check_run(&repo(), id, &spec(annotations(60), None))
        .await
        .expect("update");
    let run = server
        .with(|m| m.check_runs.iter().find(|r| r.id == id.0).cloned())
        .expect("run");
    assert_eq!(run.annotation_batches, [50, 50, 20, 50, 10]);

    let listed = forge
        .list_check_runs(&repo(), &"a".repeat(40))
        .await
        .expect("list");
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].external_id.as_deref(), Some("iteration-2"));
    assert_eq!(
        listed[0].output_title.as_deref(),
        Some("Iterate: 3 blockers")
    );
    let suite = listed[0].check_suite.expect("suite");
    forge
        .rerequest_check_suite(&repo(), suite)
        .await
        .expect("rerequest");
    assert_eq!(server.with(|m| m.rerequested_suites.clone()), [suite.0]);
    server.assert_no_violations();
}

#[tokio::test]
async fn a_502_then_success_posts_exactly_one_comment() {
    let server = FakeGithub::start().await;
    let (forge, clock) = server.forge();
    server.fail_next("issues/create-comment", Fault::BadGateway, 1);
    forge
        .create_comment(&repo(), PR, "hello")
        .await
        .expect("create after a retry");
    assert_eq!(server.with(|m| m.comments_on(7).len()), 1);
    assert_eq!(server.count("issues/create-comment"), 2);
    assert_eq!(clock.sleeps(), [Duration::from_millis(10)]);
    server.assert_no_violations();
}

#[tokio::test]
async fn a_timeout_is_retried() {
    let server = FakeGithub::start().await;
    let (forge, clock) = server.forge();
    server.fail_next(
        "issues/list-comments",
        Fault::Timeout(Duration::from_secs(5)),
        1,
    );
    let comments = forge
        .list_comments(&repo(), PR)
        .await
        .expect("list after a timeout");
    assert!(comments.is_empty());
    assert_eq!(clock.sleeps().len(), 1);
    server.assert_no_violations();
}

#[tokio::test]
async fn rate_limits_wait_the_time_github_names_then_succeed() {
    let server = FakeGithub::start().await;
    let (forge, clock) = server.forge();
    server.fail_next(
        "issues/create-comment",
        Fault::TooManyRequests {
            retry_after_secs: 1,
        },
        1,
    );
    forge
        .create_comment(&repo(), PR, "a")
        .await
        .expect("after 429");
    server.fail_next(
        "issues/create-comment",
        Fault::SecondaryRateLimit {
            retry_after_secs: 2,
        },
        1,
    );
    forge
        .create_comment(&repo(), PR, "b")
        .await
        .expect("after a secondary limit");
    server.fail_next(
        "issues/create-comment",
        Fault::RateLimitReset { in_secs: 3 },
        1,
    );
    forge
        .create_comment(&repo(), PR, "c")
        .await
        .expect("after the primary limit");
    let sleeps = clock.sleeps();
    assert_eq!(
        sleeps[..2],
        [Duration::from_secs(1), Duration::from_secs(2)]
    );
    assert!(
        (3..=6).contains(&sleeps[2].as_secs()),
        "waited {:?} for a reset 3 s away",
        sleeps[2]
    );
    assert_eq!(server.with(|m| m.comments_on(7).len()), 3);
    server.assert_no_violations();
}

#[tokio::test]
async fn the_final_error_names_the_operation_status_and_message() {
    let server = FakeGithub::start().await;
    let (forge, clock) = server.forge();
    server.fail_next("issues/create-comment", Fault::BadGateway, 5);
    let error = forge
        .create_comment(&repo(), PR, "x")
        .await
        .expect_err("gives up");
    assert!(
        matches!(
            &error,
            ForgeError::Status {
                operation: "create issue comment",
                status: 502,
                attempts: 3,
                ..
            }
        ),
        "{error:?}"
    );
    insta::with_settings!({ filters => redact::filters() }, {
        insta::assert_snapshot!(error.to_string(), @"create issue comment: GitHub answered HTTP 502 after 3 attempt(s): Server Error");
    });
    assert_eq!(
        clock.sleeps(),
        [Duration::from_millis(10), Duration::from_millis(20)]
    );
    assert!(server.with(|m| m.comments_on(7).is_empty()));
    server.assert_no_violations();
}

#[tokio::test]
async fn a_far_rate_limit_reset_fails_at_once() {
    let server = FakeGithub::start().await;
    let (forge, clock) = server.forge();
    server.fail_next("pulls/get", Fault::RateLimitReset { in_secs: 3_600 }, 1);
    let error = forge
        .pull_request(&repo(), PR)
        .await
        .expect_err("too long to wait");
    assert_eq!(error.status(), Some(403));
    // The wait is counted from the clock, to the second.
    let mut filters = redact::filters();
    filters.push((r"\b\d+ s\b", "[secs] s"));
    insta::with_settings!({ filters => filters }, {
        insta::assert_snapshot!(error.to_string(), @"get pull request: GitHub's rate limit (HTTP 403) lasts another [secs] s: API rate limit exceeded");
    });
    assert!(clock.sleeps().is_empty());
}

#[tokio::test]
async fn a_forbidden_answer_is_not_retried() {
    let server = FakeGithub::start().await;
    let mut settings = server.settings();
    settings.token = Some("wrong-token".to_string().into());
    let (forge, clock) = server.forge_with(settings);
    let error = forge
        .create_comment(&repo(), PR, "x")
        .await
        .expect_err("bad token");
    assert_eq!(error.status(), Some(401));
    assert!(error.is_forbidden());
    assert!(clock.sleeps().is_empty());
    insta::with_settings!({ filters => redact::filters() }, {
        insta::assert_snapshot!(error.to_string(), @"create issue comment: GitHub answered HTTP 401 after 1 attempt(s): Bad credentials");
    });
}

#[tokio::test]
async fn identity_comes_from_the_user_endpoint_or_the_configured_bot() {
    let server = FakeGithub::start().await;
    let (forge, _) = server.forge();
    let me = forge.identity().await.expect("identity");
    assert_eq!(
        (me.login.as_str(), me.source),
        (BOT_LOGIN, IdentitySource::Api)
    );
    forge.identity().await.expect("cached");
    assert_eq!(server.count("users/get-authenticated"), 1);

    let actions = FakeGithub::start_with(Options {
        login: "github-actions[bot]".into(),
        user_endpoint_forbidden: true,
        ..Options::default()
    })
    .await;
    let mut settings = actions.settings();
    let (without_bot, _) = actions.forge_with(settings.clone());
    assert_eq!(
        without_bot.identity().await.expect_err("403").status(),
        Some(403)
    );
    settings.bot_login = Some("github-actions[bot]".into());
    let (forge, _) = actions.forge_with(settings);
    let me = forge.identity().await.expect("configured bot");
    assert_eq!(
        (me.login.as_str(), me.source),
        ("github-actions[bot]", IdentitySource::Configured)
    );
    actions.assert_no_violations();
}

#[tokio::test]
async fn enterprise_api_root_with_a_path_works() {
    let server = FakeGithub::start_with(Options {
        base_path: "/api/v3".into(),
        ..Options::default()
    })
    .await;
    let (forge, _) = server.forge();
    forge
        .create_comment(&repo(), PR, "on GHES")
        .await
        .expect("create");
    assert_eq!(
        forge.list_comments(&repo(), PR).await.expect("list").len(),
        1
    );
    server.assert_no_violations();
}

#[tokio::test]
async fn pull_request_and_its_commits() {
    let server = FakeGithub::start().await;
    let (forge, _) = server.forge();
    let (c1, c2) = ("1".repeat(40), "2".repeat(40));
    seed_pull(
        &server,
        7,
        &[(&c1, "first"), (&c2, "second\n\nConfidence: 0.7")],
    );
    let pr = forge.pull_request(&repo(), PR).await.expect("pr");
    assert_eq!(pr.head.sha.0, c2);
    assert_eq!(pr.base.ref_name, "main");
    assert!(!pr.is_fork());
    let commits = forge
        .pull_request_commits(&repo(), PR)
        .await
        .expect("commits");
    assert_eq!(commits.len(), 2);
    assert_eq!(commits[1].parents, [CommitSha(c1)]);
    assert_eq!(commits[1].message, "second\n\nConfidence: 0.7");
    let missing = forge
        .pull_request(&repo(), PrNumber(99))
        .await
        .expect_err("no such PR");
    assert!(missing.is_not_found());
    server.assert_no_violations();
}

fn zip_with(name: &str, content: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    writer.start_file(name, options).expect("start");
    writer.write_all(content).expect("write");
    writer.finish().expect("finish").into_inner()
}

#[tokio::test]
async fn artifact_file_is_downloaded_without_sending_the_token_to_storage() {
    let server = FakeGithub::start().await;
    let (forge, _) = server.forge();
    let record = br#"{"iteration":2}"#;
    server.with(|m| {
        m.artifacts.push(fake_github::model::FakeArtifact {
            id: 501,
            run_id: 9,
            name: "itergate-record".into(),
            zip: zip_with("old.json", b"{}"),
            expired: true,
        });
        m.artifacts.push(fake_github::model::FakeArtifact {
            id: 502,
            run_id: 9,
            name: fake_github::bound_name("itergate-record", record),
            zip: zip_with("record.json", record),
            expired: false,
        });
        // A workflow from before the digest: its record is refused, with what to change.
        m.artifacts.push(fake_github::model::FakeArtifact {
            id: 503,
            run_id: 11,
            name: "itergate-record".into(),
            zip: zip_with("record.json", record),
            expired: false,
        });
    });
    let got = forge
        .download_artifact_file(&repo(), RunId(9), "itergate-record", "record.json")
        .await
        .expect("download");
    assert_eq!(got, record);

    let missing_file = forge
        .download_artifact_file(&repo(), RunId(9), "itergate-record", "nope.json")
        .await;
    assert!(
        matches!(missing_file, Err(ForgeError::Artifact { .. })),
        "{missing_file:?}"
    );
    let missing = forge
        .download_artifact_file(&repo(), RunId(10), "itergate-record", "record.json")
        .await;
    insta::with_settings!({ filters => redact::filters() }, {
        insta::assert_snapshot!(missing.expect_err("no artifact").to_string(), @"download artifact: workflow run 10 has no unexpired artifact named `itergate-record`");
    });
    let unbound = forge
        .download_artifact_file(&repo(), RunId(11), "itergate-record", "record.json")
        .await;
    let Err(error @ ForgeError::ArtifactRefused { .. }) = unbound else {
        panic!("an unbound record is refused: {unbound:?}");
    };
    insta::assert_snapshot!(error.to_string(), @"download artifact: artifact `itergate-record` of run 11 does not carry its record's digest: name the upload `itergate-record-${{ steps.<itergate's step id>.outputs.record-digest }}` (itergate ci --score-only gives it), so a record changed after itergate wrote it is refused");
    server.assert_no_violations();
}

/// An artifact named `<name>-<sha256 of its record>` is read only if its record still
/// hashes to the name's digest; a run with several artifacts that could be the record is
/// refused rather than one chosen.
#[tokio::test]
async fn an_artifact_named_with_its_records_digest_is_refused_when_the_record_was_changed() {
    let server = FakeGithub::start().await;
    let (forge, _) = server.forge();
    let written = br#"{"iteration":2,"written":"by itergate"}"#;
    let digest = fake_github::digest(written);
    let artifact = |id, run_id, name: String, content: &[u8]| fake_github::model::FakeArtifact {
        id,
        run_id,
        name,
        zip: zip_with("record.json", content),
        expired: false,
    };
    server.with(|m| {
        m.artifacts.push(artifact(
            601,
            11,
            format!("itergate-record-{digest}"),
            written,
        ));
        m.artifacts
            .push(artifact(603, 11, "itergate-recordings".into(), b"{}"));
        let forged = br#"{"iteration":2,"written":"by the PR"}"#;
        let forged_digest = fake_github::digest(forged);
        let bound = format!("itergate-record-{digest}");
        m.artifacts.push(artifact(605, 13, bound.clone(), written));
        let other = format!("itergate-record-{forged_digest}");
        m.artifacts.push(artifact(606, 13, other, forged));
        m.artifacts.push(artifact(607, 14, bound, written));
        m.artifacts
            .push(artifact(608, 14, "itergate-record".into(), forged));
        let rewritten = br#"{"iteration":2,"written":"by a daemon"}"#;
        m.artifacts.push(artifact(
            604,
            12,
            format!("itergate-record-{digest}"),
            rewritten,
        ));
    });
    let got = forge
        .download_artifact_file(&repo(), RunId(11), "itergate-record", "record.json")
        .await
        .expect("download");
    assert_eq!(got, written);
    for run in [13, 14] {
        let ambiguous = forge
            .download_artifact_file(&repo(), RunId(run), "itergate-record", "record.json")
            .await;
        let Err(error @ ForgeError::ArtifactRefused { .. }) = ambiguous else {
            panic!("two candidates are refused: {ambiguous:?}");
        };
        assert!(
            error
                .to_string()
                .contains("has 2 artifacts that could be the record"),
            "{error}"
        );
    }

    let refused = forge
        .download_artifact_file(&repo(), RunId(12), "itergate-record", "record.json")
        .await;
    let Err(error @ ForgeError::ArtifactRefused { .. }) = refused else {
        panic!("a rewritten record is refused: {refused:?}");
    };
    let message = error.to_string().replace(&digest, "<digest>");
    insta::assert_snapshot!(message, @"download artifact: `record.json` of artifact `itergate-record-<digest>` of run 12: its 39 bytes are not the record itergate wrote in the scoring step (sha256 a7980a2b0abae95ee15e1977d1d474be3f9464b52686f1af9065a5e12573b68f, expected <digest>): it was changed after it was written");
    server.assert_no_violations();
}

#[tokio::test]
async fn workflow_and_repository_dispatches_are_recorded() {
    let server = FakeGithub::start().await;
    let (forge, _) = server.forge();
    let inputs = BTreeMap::from([("pr".to_string(), "7".to_string())]);
    forge
        .dispatch_workflow(&repo(), "itergate.yml", "main", &inputs)
        .await
        .expect("dispatch");
    forge
        .repository_dispatch(
            &repo(),
            "itergate-reevaluate",
            &serde_json::json!({ "pr": 7 }),
        )
        .await
        .expect("repository dispatch");
    let dispatches = server.with(|m| m.dispatches.clone());
    assert_eq!(dispatches[0]["inputs"]["pr"], "7");
    assert_eq!(dispatches[0]["workflow_id"], "itergate.yml");
    assert_eq!(dispatches[1]["event_type"], "itergate-reevaluate");
    server.assert_no_violations();
}

#[tokio::test]
async fn the_fake_flags_unknown_routes_and_bodies_off_the_schema() {
    let server = FakeGithub::start().await;
    let crab = octocrab::Octocrab::builder()
        .base_uri(server.api_url())
        .expect("uri")
        .personal_token(fake_github::TOKEN.to_string())
        .build()
        .expect("client");
    let _ = crab._get("/repos/octo-org/widgets/no-such-thing").await;
    let bad = serde_json::json!({ "body": 5 });
    let _ = crab
        ._post("/repos/octo-org/widgets/issues/7/comments", Some(&bad))
        .await;
    let typo = serde_json::json!({ "bdy": "x" });
    let _ = crab
        ._patch("/repos/octo-org/widgets/issues/comments/1", Some(&typo))
        .await;
    let violations = server.violations();
    assert_eq!(violations.len(), 4, "{violations:#?}");
    insta::with_settings!({ filters => redact::filters() }, {
        insta::assert_snapshot!(violations.join("\n"), @r#"
            GET /repos/octo-org/widgets/no-such-thing: no such route in GitHub's REST API subset
            issues/create-comment: request body at `/body`: 5 is not of type "string"
            issues/update-comment: request body at ``: Additional properties are not allowed ('bdy' was unexpected)
            issues/update-comment: request body at ``: "body" is a required property
            "#);
    });
    assert!(server.with(|m| m.comments.is_empty()));
}

#[tokio::test]
async fn file_content_reads_a_file_at_a_ref_and_says_none_for_anything_else() {
    let server = FakeGithub::start().await;
    let (forge, _) = server.forge();
    let base = "b".repeat(40);
    server.with(|m| {
        m.files.insert(
            (base.clone(), ".github/itergate.yml".into()),
            b"github:\n  label: needs-human\n".to_vec(),
        );
    });
    let found = forge
        .file_content(&repo(), &base, ".github/itergate.yml")
        .await
        .expect("read");
    assert_eq!(
        found.as_deref(),
        Some(&b"github:\n  label: needs-human\n"[..])
    );
    // Another ref, or a path that is not there: nothing, not an error.
    assert_eq!(
        forge
            .file_content(&repo(), "main", ".github/itergate.yml")
            .await
            .expect("read"),
        None
    );
    assert_eq!(
        forge
            .file_content(&repo(), &base, ".itergate.yml")
            .await
            .expect("read"),
        None
    );
    assert_eq!(server.count("repos/get-content"), 3);
    // A symlink to a file is answered with its target's content and path: not read, since
    // the rules were applied to the link's name.
    server.with(|m| {
        m.files
            .insert((base.clone(), ".env".into()), b"TOKEN=secret\n".to_vec());
        m.symlinks
            .insert((base.clone(), "notes.md".into()), ".env".into());
    });
    let linked = forge.file_content(&repo(), &base, "notes.md").await;
    assert_eq!(linked.expect("read"), None);
    server.assert_no_violations();
}
