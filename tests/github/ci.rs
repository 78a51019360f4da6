//! `itergate ci` end to end: the real binary, a real git checkout, real webhook payloads, and
//! the fake GitHub that checks every request against GitHub's OpenAPI description.

use crate::fake_github;
use crate::gitrepo;
use crate::redact;
use crate::redact::assert_message;

use std::path::{Path, PathBuf};
use std::process::Output;

use fake_github::{grant, FakeGithub, Fault, BOT_LOGIN, REPO, TOKEN};
use gitrepo::{write_script, TestRepo};
use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_itergate");
const PR: u64 = 7;
/// The head repository of a PR from a fork.
const FORK: &str = "stranger/widgets";

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

struct Checkout {
    repo: TestRepo,
    base: String,
}

fn checkout(extra_config: &str) -> Checkout {
    checkout_with(extra_config, &[])
}

/// [`checkout`] with more files in the base commit.
fn checkout_with(extra_config: &str, files: &[(&str, &str)]) -> Checkout {
    let repo = TestRepo::new();
    for (path, content) in files {
        repo.write(path, content);
    }
    write_script(&repo.path.join("check.sh"), CHECK);
    repo.write(
        ".itergate.yml",
        &format!(
            "checks:\n  tests:\n    run: ./check.sh\n    report: {{ format: junit, path: out/junit.xml }}\nscoring: {{ compare_base: false }}\n{extra_config}"
        ),
    );
    repo.write(".gitignore", "out/\n");
    let base = repo.commit_file("results.txt", "4 0\n", "base");
    repo.git(&["checkout", "--quiet", "-b", "feature"]);
    Checkout { repo, base }
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

/// A real `pull_request.synchronize` payload, pointed at our repository and commits.
fn pull_request_event(c: &Checkout, head: &str, fork: bool) -> Value {
    let mut p = fixture("pull_request.synchronize.1.json");
    point_at_repo(&mut p);
    let pr = &mut p["pull_request"];
    pr["number"] = json!(PR);
    pr["head"]["sha"] = json!(head);
    pr["head"]["ref"] = json!("feature");
    pr["base"]["sha"] = json!(c.base);
    pr["base"]["ref"] = json!("main");
    pr["base"]["repo"]["full_name"] = json!(REPO);
    pr["head"]["repo"]["full_name"] = json!(if fork { FORK } else { REPO });
    p
}

/// The PR as the API answers it: `head` on `feature` of this repository (or of the fork),
/// based on the checkout's base commit.
fn seed(server: &FakeGithub, c: &Checkout, head: &str, fork: bool) {
    fake_github::seed_pull(server, PR, &[(head, "head")]);
    server.with(|m| {
        if let Some(pull) = m.pulls.get_mut(&PR) {
            pull.base_sha = c.base.clone();
            if fork {
                pull.head_repo = FORK.into();
            }
        }
    });
}

/// A comment written on the PR (it exists on the fake) and its real `issue_comment` payload.
fn comment_event(server: &FakeGithub, author: &str, body: &str) -> Value {
    let id = server.with(|m| m.add_comment(PR, author, "User", body));
    let mut p = fixture("derived.issue_comment.created.on_pull_request.json");
    point_at_repo(&mut p);
    p["issue"]["number"] = json!(PR);
    p["comment"]["id"] = json!(id);
    p["comment"]["body"] = json!(body);
    p["comment"]["user"]["login"] = json!(author);
    p["comment"]["user"]["type"] = json!("User");
    p
}

async fn ci(server: &FakeGithub, dir: &Path, event: &str, payload: &Value) -> Output {
    ci_with_files(server, dir, event, payload, None).await
}

/// Like `ci`, with `GITHUB_OUTPUT` and `GITHUB_STEP_SUMMARY` files in `files`.
async fn ci_with_files(
    server: &FakeGithub,
    dir: &Path,
    event: &str,
    payload: &Value,
    files: Option<PathBuf>,
) -> Output {
    run_ci(server, dir, event, payload, files, &[], &[]).await
}

/// `itergate ci` with extra arguments and environment variables.
async fn run_ci(
    server: &FakeGithub,
    dir: &Path,
    event: &str,
    payload: &Value,
    files: Option<PathBuf>,
    args: &[&str],
    vars: &[(&str, &str)],
) -> Output {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let vars: Vec<(String, String)> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let event_file = dir.join(format!("../event-{}.json", rand_suffix()));
    std::fs::write(&event_file, serde_json::to_vec(payload).expect("json")).expect("write event");
    let api = server.api_url();
    let dir: PathBuf = dir.to_path_buf();
    let event = event.to_string();
    tokio::task::spawn_blocking(move || {
        std::process::Command::new(BIN)
            .args(["ci", "-q"])
            .args(&args)
            .current_dir(&dir)
            .env("GITHUB_API_URL", api)
            .env("GITHUB_TOKEN", TOKEN)
            .env("GITHUB_EVENT_NAME", event)
            .env("GITHUB_EVENT_PATH", &event_file)
            .env_remove("GITHUB_ACTIONS")
            .env_remove("GITHUB_OUTPUT")
            .env_remove("GITHUB_STEP_SUMMARY")
            .envs(files.iter().flat_map(|d| {
                [
                    ("GITHUB_OUTPUT", d.join("output.txt")),
                    ("GITHUB_STEP_SUMMARY", d.join("summary.md")),
                ]
            }))
            .env("NO_COLOR", "1")
            .envs(vars)
            .output()
            .expect("itergate ci runs")
    })
    .await
    .expect("join")
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

fn bot_comments(server: &FakeGithub) -> Vec<String> {
    server.with(|m| {
        m.comments_on(PR)
            .into_iter()
            .filter(|c| c.author == BOT_LOGIN)
            .map(|c| c.body.clone())
            .collect()
    })
}

fn sticky(server: &FakeGithub) -> String {
    let all = bot_comments(server);
    let stickies: Vec<&String> = all
        .iter()
        .filter(|b| b.starts_with("<!-- itergate:sticky -->"))
        .collect();
    assert_eq!(stickies.len(), 1, "exactly one sticky comment: {all:#?}");
    stickies[0].clone()
}

fn labels(server: &FakeGithub) -> Vec<String> {
    server.with(|m| m.labels_on(PR))
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The one comment of itergate's that is not the sticky one (an escalation call, a reply).
fn other_bot_comments(server: &FakeGithub) -> Vec<String> {
    bot_comments(server)
        .into_iter()
        .filter(|b| !b.starts_with("<!-- itergate:sticky -->"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_iteration_creates_the_comment_and_the_next_edits_it() {
    let server = FakeGithub::start().await;
    let c = checkout("");
    // GitHub compares the two heads: the fixed test is known to pass.
    server.with(|m| m.git = Some(c.repo.path.clone()));
    let head = c.repo.commit_file("results.txt", "3 1\n", "one failing");
    let out = ci(
        &server,
        &c.repo.path,
        "pull_request",
        &pull_request_event(&c, &head, false),
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_message!("first_push_iterate", &sticky(&server));

    let head = c.repo.commit_file("results.txt", "4 0\n", "all pass");
    let out = ci(
        &server,
        &c.repo.path,
        "pull_request",
        &pull_request_event(&c, &head, false),
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        bot_comments(&server).len(),
        1,
        "edited in place, never a second comment"
    );
    assert_message!("second_push_accept", &sticky(&server));
    assert_eq!(server.count("issues/update-comment"), 1);
    server.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn escalation_labels_and_calls_reviewers_and_accept_clears_it() {
    let server = FakeGithub::start().await;
    let c = checkout("github: { reviewers: [octocat] }\n");
    let head = c.repo.commit_file("results.txt", "3 1\n", "failing");
    ci(
        &server,
        &c.repo.path,
        "pull_request",
        &pull_request_event(&c, &head, false),
    )
    .await;
    // No progress: the issue count does not fall, the revision loop stalls.
    let head = c.repo.commit_file("noise.txt", "x", "no progress");
    let out = ci(
        &server,
        &c.repo.path,
        "pull_request",
        &pull_request_event(&c, &head, false),
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(labels(&server), vec!["needs-human-review".to_string()]);
    let comments = bot_comments(&server);
    assert_eq!(
        comments.len(),
        2,
        "the sticky comment and one escalation call: {comments:#?}"
    );
    insta::with_settings!({ filters => redact::filters() }, {
        insta::assert_snapshot!(&other_bot_comments(&server)[0], @r"
            <!-- itergate:reply escalation_2 -->
            @octocat itergate needs a human on this pull request: Revision loop stalled \(issue count not decreasing\: 1 \-&gt; 1\).
            1 blocker(s) and 0 warning(s) remain. Reply `/iterate accept` to proceed anyway, or `/iterate adjust <guidance>` to change the approach.
            ");
    });
    assert_message!("escalation_sticky", &sticky(&server));
    seed(&server, &c, &head, false);

    // A reader cannot accept: polite refusal, nothing changes.
    grant(&server, "visitor", "read", "read");
    let out = ci(
        &server,
        &c.repo.path,
        "issue_comment",
        &comment_event(&server, "visitor", "/iterate accept"),
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(labels(&server), vec!["needs-human-review".to_string()]);
    let others = other_bot_comments(&server);
    // A file snapshot: the reply's mention holds a word joiner (U+2060).
    assert_message!("refusal_reply", others.last().expect("a reply"));
    assert_message!("escalation_sticky_after_refusal", &sticky(&server));

    // A maintainer accepts: the label goes.
    grant(&server, "maintainer", "write", "write");
    let out = ci(
        &server,
        &c.repo.path,
        "issue_comment",
        &comment_event(&server, "maintainer", "/iterate accept"),
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(labels(&server).is_empty());
    assert_message!("maintainer_accept_sticky", &sticky(&server));
    let accept_id = server.with(|m| {
        m.comments_on(PR)
            .into_iter()
            .rev()
            .find(|c| c.author == "maintainer")
            .map(|c| c.id)
    });
    let reactions: Vec<String> = server.with(|m| {
        m.reactions
            .iter()
            .filter(|r| Some(r.comment_id) == accept_id)
            .map(|r| r.content.clone())
            .collect()
    });
    assert_eq!(reactions, vec!["eyes".to_string(), "+1".to_string()]);
    server.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn comments_without_commands_cost_nothing_and_forged_state_is_ignored() {
    let server = FakeGithub::start().await;
    let c = checkout("");
    let head = c.repo.commit_file("results.txt", "3 1\n", "failing");
    ci(
        &server,
        &c.repo.path,
        "pull_request",
        &pull_request_event(&c, &head, false),
    )
    .await;
    seed(&server, &c, &head, false);
    let before = sticky(&server);
    let event = comment_event(&server, "someone", "Looks good to me.\n> /iterate accept");
    let requests = server.operations().len();
    let out = ci(&server, &c.repo.path, "issue_comment", &event).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        server.operations().len(),
        requests,
        "no API call: {:?}",
        server.operations()
    );

    // A user's comment carrying a marker and a forged state changes nothing.
    let forged =
        "<!-- itergate:sticky -->\nall good\n<!-- itergate:state v1 eyJyZWNvcmRzIjpbXX0= -->";
    server.with(|m| m.add_comment(PR, "mallory", "User", forged));
    grant(&server, "maintainer", "write", "write");
    let out = ci(
        &server,
        &c.repo.path,
        "issue_comment",
        &comment_event(&server, "maintainer", "/iterate"),
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let after = sticky(&server);
    // History survived the forged state: still the first revision.
    assert_message!("reevaluated_over_a_forged_state", &after);
    assert_eq!(before.lines().next(), after.lines().next());
    server.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_502_then_success_posts_exactly_one_comment() {
    let server = FakeGithub::start().await;
    server.fail_next("issues/create-comment", Fault::BadGateway, 1);
    let c = checkout("");
    let head = c.repo.commit_file("results.txt", "3 1\n", "failing");
    let out = ci(
        &server,
        &c.repo.path,
        "pull_request",
        &pull_request_event(&c, &head, false),
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(bot_comments(&server).len(), 1);
    assert_eq!(server.count("issues/create-comment"), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sticky_comment_whose_answer_was_lost_is_not_posted_twice() {
    let server = FakeGithub::start().await;
    // GitHub creates the comment, then the answer is lost.
    server.fail_next(
        "issues/create-comment",
        Fault::Lost(Box::new(Fault::BadGateway)),
        1,
    );
    let c = checkout("");
    let head = c.repo.commit_file("results.txt", "3 1\n", "failing");
    let out = run_ci(
        &server,
        &c.repo.path,
        "pull_request",
        &pull_request_event(&c, &head, false),
        None,
        &[],
        &[("ITERGATE_GITHUB_RETRY_BASE_MS", "10")],
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(bot_comments(&server).len(), 1);
    assert_eq!(
        server.count("issues/create-comment"),
        1,
        "looked, not re-sent"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limited_call_waits_and_succeeds() {
    let server = FakeGithub::start().await;
    server.fail_next(
        "issues/list-comments",
        Fault::TooManyRequests {
            retry_after_secs: 1,
        },
        1,
    );
    let c = checkout("");
    let head = c.repo.commit_file("results.txt", "3 1\n", "failing");
    let started = std::time::Instant::now();
    let out = ci(
        &server,
        &c.repo.path,
        "pull_request",
        &pull_request_event(&c, &head, false),
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        started.elapsed() >= std::time::Duration::from_secs(1),
        "it waited for Retry-After"
    );
    assert_eq!(bot_comments(&server).len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_pull_request_performs_no_write() {
    let server = FakeGithub::start().await;
    let c = checkout("");
    let head = c.repo.commit_file("results.txt", "3 1\n", "from a fork");
    score_on_fork(&server, &c, &head).await;
    assert!(
        server.operations().is_empty(),
        "no request at all: {:?}",
        server.operations()
    );
    let record = std::fs::read_to_string(c.repo.path.join("itergate-record/record.json"))
        .expect("record for the artifact");
    // Data for the publishing job, not a message: it names the head and the PR.
    assert!(
        record.contains(&head) && record.contains("\"pr\": 7"),
        "{record}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_config_comes_from_the_base_branch() {
    let server = FakeGithub::start().await;
    let c = checkout("");
    // The PR tries to loosen its own rules: remove the check and accept anything.
    c.repo.write(
        ".itergate.yml",
        "stopping_criteria: { quality_threshold: { value: 0.1 } }\n",
    );
    let head = c
        .repo
        .commit_file("results.txt", "1 3\n", "loosen the rules");
    let out = ci(
        &server,
        &c.repo.path,
        "pull_request",
        &pull_request_event(&c, &head, false),
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    // The base's checks ran: three blockers, iterate.
    assert_message!("base_config_iterate", &sticky(&server));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reevaluate_dispatches_a_rerun_that_scores_the_head_again() {
    let server = FakeGithub::start().await;
    let c = checkout("github: { check_run: true }\n");
    let head = c.repo.commit_file("results.txt", "3 1\n", "failing");
    seed(&server, &c, &head, false);
    let out = ci(
        &server,
        &c.repo.path,
        "pull_request",
        &pull_request_event(&c, &head, false),
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let annotations = server.with(|m| {
        m.check_runs
            .iter()
            .map(|r| r.annotations.len())
            .sum::<usize>()
    });
    assert_eq!(annotations, 1, "the failing test's file:line is annotated");

    grant(&server, "maintainer", "write", "write");
    let out = ci(
        &server,
        &c.repo.path,
        "issue_comment",
        &comment_event(&server, "maintainer", "/iterate"),
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let dispatch = server
        .with(|m| m.dispatches.last().cloned())
        .expect("a repository_dispatch");
    assert_eq!(dispatch["event_type"], "itergate-reevaluate");
    assert_eq!(dispatch["client_payload"]["pr"], PR);

    // The dispatched run scores the same head again: same iteration, still one comment.
    let payload = json!({
        "action": "itergate-reevaluate",
        "repository": { "full_name": REPO },
        "client_payload": dispatch["client_payload"].clone(),
    });
    let out = ci(&server, &c.repo.path, "repository_dispatch", &payload).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_message!("reevaluated_same_iteration", &sticky(&server));
    server.assert_no_violations();
}

fn zip_with(name: &str, content: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default();
    writer.start_file(name, options).expect("start");
    writer.write_all(content).expect("write");
    writer.finish().expect("finish").into_inner()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_record_is_published_by_the_workflow_run() {
    let server = FakeGithub::start().await;
    let c = checkout("");
    let head = c.repo.commit_file("results.txt", "3 1\n", "from a fork");
    // The untrusted run: writes the record, touches nothing on GitHub.
    score_on_fork(&server, &c, &head).await;
    let record = std::fs::read(c.repo.path.join("itergate-record/record.json")).expect("record");
    server.with(|m| {
        m.artifacts.push(fake_github::model::FakeArtifact {
            id: 900,
            run_id: 77,
            name: fake_github::bound_name("itergate-record", &record),
            zip: zip_with("record.json", &record),
            expired: false,
        });
    });
    // The trusted workflow_run: reads the artifact and publishes the decision.
    let mut run = fixture("workflow_run.completed.1.json");
    point_at_repo(&mut run);
    run["workflow_run"]["id"] = json!(77);
    run["workflow_run"]["head_sha"] = json!(head);
    run["workflow_run"]["head_branch"] = json!("feature");
    run["workflow_run"]["head_repository"]["full_name"] = json!(FORK);
    // GitHub lists no pull request for a fork's run: the artifact says which one it is.
    run["workflow_run"]["pull_requests"] = json!([]);
    seed(&server, &c, &head, true);
    let out = ci(&server, &c.repo.path, "workflow_run", &run).await;
    assert!(out.status.success(), "{}", stderr(&out));
    // The revision prompt names the pull request it asks to revise (`#7`).
    assert_message!("fork_record_published", &sticky(&server));

    // A record that does not belong to the run's commit is refused.
    run["workflow_run"]["head_sha"] = json!("f".repeat(40));
    let out = ci(&server, &c.repo.path, "workflow_run", &run).await;
    assert_eq!(out.status.code(), Some(2));
    insta::with_settings!({ filters => redact::filters() }, {
        insta::assert_snapshot!(&stderr(&out), @"itergate: error: the artifact's record is for [sha], but the run was for [sha]; refusing to publish it");
    });
    server.assert_no_violations();
}

fn review_event(reviewer: &str, state: &str, body: &str) -> Value {
    let mut p = fixture("pull_request_review.submitted.1.json");
    point_at_repo(&mut p);
    p["pull_request"]["number"] = json!(PR);
    p["review"]["state"] = json!(state);
    p["review"]["body"] = json!(body);
    p["review"]["user"]["login"] = json!(reviewer);
    p["review"]["user"]["type"] = json!("User");
    p
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_requested_is_a_user_rejection_and_outputs_are_written() {
    let server = FakeGithub::start().await;
    let c = checkout("");
    let head = c.repo.commit_file("feature.txt", "new", "passing");
    let files = c.repo.sibling("gh");
    std::fs::create_dir_all(&files).expect("mkdir");
    let out = ci_with_files(
        &server,
        &c.repo.path,
        "pull_request",
        &pull_request_event(&c, &head, false),
        Some(files.clone()),
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let outputs = std::fs::read_to_string(files.join("output.txt")).expect("GITHUB_OUTPUT written");
    insta::with_settings!({ filters => redact::filters() }, {
        insta::assert_snapshot!(&outputs, @r"
            recommendation=accept
            quality=1.0000
            iteration=1
            ");
    });
    let summary = std::fs::read_to_string(files.join("summary.md")).expect("job summary written");
    assert_message!("job_summary_accept", &summary);
    seed(&server, &c, &head, false);
    grant(&server, "reviewer", "write", "write");
    let mut review = review_event("reviewer", "changes_requested", "Please keep the old API.");
    review["review"]["commit_id"] = json!(head);
    let out = ci(&server, &c.repo.path, "pull_request_review", &review).await;
    assert!(out.status.success(), "{}", stderr(&out));
    // A rejection reopens the loop, and the reviewer's words reach the prompt.
    assert_message!("changes_requested_iterate", &sticky(&server));
    server.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn comments_by_itergate_or_other_bots_are_ignored() {
    let server = FakeGithub::start().await;
    let c = checkout("");
    let head = c.repo.commit_file("results.txt", "3 1\n", "failing");
    ci(
        &server,
        &c.repo.path,
        "pull_request",
        &pull_request_event(&c, &head, false),
    )
    .await;
    seed(&server, &c, &head, false);
    grant(&server, "helper[bot]", "admin", "admin");
    grant(&server, BOT_LOGIN, "admin", "admin");
    let before = sticky(&server);
    for author in [BOT_LOGIN, "helper[bot]"] {
        let mut event = comment_event(&server, author, "/iterate accept");
        event["comment"]["user"]["type"] = json!("Bot");
        let writes = server.operations().len();
        let out = ci(&server, &c.repo.path, "issue_comment", &event).await;
        assert!(out.status.success(), "{}", stderr(&out));
        let new: Vec<String> = server.operations().split_off(writes);
        let reads = [
            "users/get-authenticated",
            "pulls/get",
            "issues/list-comments",
        ];
        assert!(
            new.iter().all(|op| reads.contains(&op.as_str())),
            "no effect for {author}: {new:?}"
        );
    }
    assert_eq!(sticky(&server), before);
    assert_eq!(labels(&server), Vec::<String>::new());
}

// --- The trust boundary (issue 9): H1, M2, L11, M5, M7 ---

/// A check (the PR's code) that writes its whole environment next to its report.
const ENV_CHECK: &str = "#!/bin/sh\nenv > seen-env.txt\nexec ./check-real.sh\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_check_in_ci_sees_no_token_and_no_runner_file() {
    let server = FakeGithub::start().await;
    let c = checkout("");
    write_script(&c.repo.path.join("check-real.sh"), CHECK);
    write_script(&c.repo.path.join("check.sh"), ENV_CHECK);
    let head = c
        .repo
        .commit_file("results.txt", "4 0\n", "the check prints its env");
    let files = c.repo.sibling("gh-files");
    std::fs::create_dir_all(&files).expect("mkdir");
    let out = run_ci(
        &server,
        &c.repo.path,
        "pull_request",
        &pull_request_event(&c, &head, false),
        Some(files),
        &["--score-only"],
        &[
            ("ACTIONS_RUNTIME_TOKEN", "runtime-secret-1"),
            ("ACTIONS_ID_TOKEN_REQUEST_URL", "https://oidc.example"),
            ("ACTIONS_ID_TOKEN_REQUEST_TOKEN", "oidc-secret-2"),
            ("GITHUB_ENV", "/tmp/runner-env-file"),
            ("GITHUB_PATH", "/tmp/runner-path-file"),
            ("CARGO_REGISTRY_TOKEN", "crates-secret-3"),
            ("DEPLOY_SECRET", "deploy-secret-4"),
            ("CARGO_TERM_COLOR", "never"),
        ],
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let seen = std::fs::read_to_string(c.repo.path.join("seen-env.txt")).expect("the check ran");
    for leaked in [
        "GITHUB_TOKEN",
        TOKEN,
        "ACTIONS_",
        "GITHUB_OUTPUT",
        "GITHUB_ENV",
        "GITHUB_PATH",
        "GITHUB_STEP_SUMMARY",
        "secret",
    ] {
        assert!(
            !seen.contains(leaked),
            "{leaked} reached the check:\n{seen}"
        );
    }
    assert!(
        seen.contains("PATH=") && seen.contains("CARGO_TERM_COLOR=never"),
        "what toolchains need is kept:\n{seen}"
    );
    assert!(
        server.operations().is_empty(),
        "--score-only makes no request: {:?}",
        server.operations()
    );
}

/// The PR's check starts a daemon by a double fork in a session of its own (out of the
/// check's process group, its parent gone) that waits and then rewrites the record: it
/// never outlives the checks, and the step's `record-digest` is the record's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemon_the_checks_start_does_not_outlive_them_to_rewrite_the_record() {
    let server = FakeGithub::start().await;
    let c = checkout("");
    write_script(&c.repo.path.join("check-real.sh"), CHECK);
    let forger = format!(
        "#!/bin/sh\n( setsid sh -c 'sleep 2; touch {marker}; mkdir -p itergate-record; echo {{}} > itergate-record/record.json' </dev/null >/dev/null 2>&1 & ) &\nwait\nexec ./check-real.sh\n",
        marker = c.repo.sibling("daemon-ran").display()
    );
    write_script(&c.repo.path.join("check.sh"), &forger);
    let head = c
        .repo
        .commit_file("results.txt", "3 1\n", "one failing, and a daemon");
    let files = c.repo.sibling("runner-files");
    std::fs::create_dir_all(&files).expect("mkdir");
    let out = run_ci(
        &server,
        &c.repo.path,
        "pull_request",
        &pull_request_event(&c, &head, false),
        Some(files.clone()),
        &["--score-only"],
        &[],
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    tokio::time::sleep(std::time::Duration::from_secs(4)).await;
    assert!(
        !c.repo.sibling("daemon-ran").exists(),
        "the daemon was still running after itergate wrote the record"
    );
    let bytes = std::fs::read(c.repo.path.join("itergate-record/record.json")).expect("record");
    let record: Value = serde_json::from_slice(&bytes).expect("json");
    assert_eq!(record["head_ref"], "feature", "itergate's record: {record}");
    let digest = fake_github::digest(&bytes);
    let outputs = std::fs::read_to_string(files.join("output.txt")).expect("step outputs");
    assert_eq!(outputs, format!("record-digest={digest}\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn score_only_then_publish_record_publishes_only_a_matching_record() {
    let server = FakeGithub::start().await;
    let c = checkout("");
    let head = c.repo.commit_file("results.txt", "3 1\n", "one failing");
    let event = pull_request_event(&c, &head, false);
    let out = run_ci(
        &server,
        &c.repo.path,
        "pull_request",
        &event,
        None,
        &["--score-only"],
        &[],
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(server.operations().is_empty(), "{:?}", server.operations());
    let record_path = c.repo.path.join("itergate-record/record.json");
    let record: Value =
        serde_json::from_slice(&std::fs::read(&record_path).expect("record")).expect("json");
    assert_eq!(record["head_repo"], REPO);
    assert_eq!(record["head_ref"], "feature");

    // The publishing job: another checkout (the base), the record downloaded from the artifact.
    let publisher = checkout("");
    let downloaded = publisher.repo.sibling("download.json");
    std::fs::copy(&record_path, &downloaded).expect("copy");
    let mut event = event;
    event["pull_request"]["base"]["sha"] = json!(publisher.base);
    seed(&server, &publisher, &head, false);
    let path = downloaded.to_string_lossy().into_owned();
    let publish = ["--publish-record", path.as_str()];
    // The digest the scoring step gave binds the record: the same bytes are published.
    let digest = fake_github::digest(&std::fs::read(&record_path).expect("record"));
    let bound = [
        "--publish-record",
        path.as_str(),
        "--record-digest",
        &digest,
    ];
    let out = run_ci(
        &server,
        &publisher.repo.path,
        "pull_request",
        &event,
        None,
        &bound,
        &[],
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    // The publisher has no checkout of the PR: the prompt's diff stat ("1 file(s) changed")
    // came with the record.
    assert_eq!(
        record["record"]["changes"]["files"][0]["path"], "results.txt",
        "{record}"
    );
    assert_message!("published_record_iterate", &sticky(&server));

    // A record for another branch (or repository) of the same commit is refused.
    let mut forged = record.clone();
    forged["head_ref"] = json!("other-branch");
    std::fs::write(&downloaded, serde_json::to_vec(&forged).expect("json")).expect("write");
    // Bound to the digest, a record changed after itergate wrote it is refused as such.
    let out = run_ci(
        &server,
        &publisher.repo.path,
        "pull_request",
        &event,
        None,
        &bound,
        &[],
    )
    .await;
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    insta::with_settings!({ filters => redact::filters() }, {
        let forged = std::fs::read(&downloaded).expect("forged");
        let message = stderr(&out)
            .replace(&digest, "<digest>")
            .replace(&fake_github::digest(&forged), "<forged>")
            .replace(&format!("its {} bytes", forged.len()), "its <n> bytes");
        insta::assert_snapshot!(message, @"itergate: error: --publish-record [tmp]/download.json: its <n> bytes are not the record itergate wrote in the scoring step (sha256 <forged>, expected <digest>): it was changed after it was written");
    });
    let out = run_ci(
        &server,
        &publisher.repo.path,
        "pull_request",
        &event,
        None,
        &publish,
        &[],
    )
    .await;
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    insta::with_settings!({ filters => redact::filters() }, {
        insta::assert_snapshot!(&stderr(&out), @"itergate: error: the record names head branch other-branch, not feature of this event; refusing to publish it");
    });
    // Scores are fractions: one outside 0..1 was not written by itergate.
    for (field, value) in [("tests_passing", json!(1e308)), ("coverage", json!(7.0))] {
        let mut forged = record.clone();
        forged["record"]["scores"][field] = value;
        std::fs::write(&downloaded, serde_json::to_vec(&forged).expect("json")).expect("write");
        let out = run_ci(
            &server,
            &publisher.repo.path,
            "pull_request",
            &event,
            None,
            &publish,
            &[],
        )
        .await;
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(
            stderr(&out).contains(&format!("is malformed: `scores.{field}` is"))
                && stderr(&out).contains("expected a fraction from 0 to 1"),
            "{}",
            stderr(&out)
        );
    }
    server.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sticky_comment_changed_while_the_checks_ran_is_not_published_over() {
    let server = FakeGithub::start().await;
    let c = checkout("");
    let head = c.repo.commit_file("results.txt", "3 1\n", "failing");
    let out = ci(
        &server,
        &c.repo.path,
        "pull_request",
        &pull_request_event(&c, &head, false),
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    // The next head's check waits until the state was forged behind itergate's back.
    write_script(
        &c.repo.path.join("check.sh"),
        &format!(
            "#!/bin/sh\ntouch started\nwhile [ ! -f go ]; do sleep 0.02; done\n{}",
            &CHECK[10..]
        ),
    );
    let head = c
        .repo
        .commit_file("results.txt", "3 1\n", "forges the state");
    let dir = c.repo.path.clone();
    let event = pull_request_event(&c, &head, false);
    let run = ci(&server, &dir, "pull_request", &event);
    let forge = async {
        while !dir.join("started").exists() {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        // Someone with a token (a check that got one, a write-access user) edits the state.
        server.with(|m| {
            let sticky = m
                .comments
                .iter_mut()
                .find(|c| c.author == BOT_LOGIN)
                .expect("the sticky comment");
            sticky.body = sticky.body.replace("🔁 iterate", "✅ accept");
        });
        std::fs::write(dir.join("go"), "").expect("go");
    };
    let (out, ()) = tokio::join!(run, forge);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    insta::with_settings!({ filters => redact::filters() }, {
        insta::assert_snapshot!(&stderr(&out), @"itergate: error: itergate's comment on #7 changed while the checks ran; refusing to publish (score with --score-only and publish from a job that runs no PR code)");
    });
    assert_eq!(
        server.count("issues/update-comment"),
        0,
        "nothing published over it"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_comment_uses_the_base_configuration_not_the_checkout() {
    let server = FakeGithub::start().await;
    let c = checkout("");
    let head = c.repo.commit_file("results.txt", "3 1\n", "failing");
    ci(
        &server,
        &c.repo.path,
        "pull_request",
        &pull_request_event(&c, &head, false),
    )
    .await;
    // The checkout (a review's merge commit) carries the PR's own rules.
    let base_config = std::fs::read_to_string(c.repo.path.join(".itergate.yml")).expect("config");
    let head = c.repo.commit_file(
        ".itergate.yml",
        &format!("{base_config}github: {{ label: pr-chosen-label }}\n"),
        "choose my own label",
    );
    seed(&server, &c, &head, false);
    grant(&server, "maintainer", "write", "write");
    let out = ci(
        &server,
        &c.repo.path,
        "issue_comment",
        &comment_event(&server, "maintainer", "/iterate escalate"),
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(labels(&server), vec!["needs-human-review".to_string()]);
    server.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn templates_come_from_the_base_commit() {
    let server = FakeGithub::start().await;
    let c = checkout_with(
        "templates: { dir: tpl }\n",
        &[("tpl/comment.md.j2", "the base's words\n")],
    );
    c.repo
        .write("tpl/comment.md.j2", "@octo-org/admins the PR's words\n");
    let head = c
        .repo
        .commit_file("results.txt", "3 1\n", "rewrite the comment");
    let out = ci(
        &server,
        &c.repo.path,
        "pull_request",
        &pull_request_event(&c, &head, false),
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let body = sticky(&server);
    insta::with_settings!({ filters => redact::filters() }, {
        insta::assert_snapshot!(&body, @r"
            <!-- itergate:sticky -->
            the base's words


            <!-- itergate:state v1 [state] -->
            ");
    });
    // A property, whatever the snapshot says: the PR's template never reaches the comment.
    assert!(!body.contains("the PR's words"), "{body}");
}

/// The fork's own `pull_request` job: it scores and leaves the record, with no request.
async fn score_on_fork(server: &FakeGithub, c: &Checkout, head: &str) {
    let out = ci(
        server,
        &c.repo.path,
        "pull_request",
        &pull_request_event(c, head, true),
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
}

/// A fork's record in a run's artifact, and the `workflow_run` event of that run.
fn fork_run(server: &FakeGithub, c: &Checkout, head: &str) -> Value {
    let record = std::fs::read(c.repo.path.join("itergate-record/record.json")).expect("record");
    server.with(|m| {
        m.artifacts.push(fake_github::model::FakeArtifact {
            id: 900,
            run_id: 77,
            name: fake_github::bound_name("itergate-record", &record),
            zip: zip_with("record.json", &record),
            expired: false,
        });
    });
    let mut run = fixture("workflow_run.completed.1.json");
    point_at_repo(&mut run);
    run["workflow_run"]["id"] = json!(77);
    run["workflow_run"]["head_sha"] = json!(head);
    run["workflow_run"]["head_branch"] = json!("feature");
    run["workflow_run"]["head_repository"]["full_name"] = json!(FORK);
    run["workflow_run"]["pull_requests"] = json!([]);
    run
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_record_is_bound_to_the_head_repository_and_branch() {
    let server = FakeGithub::start().await;
    let c = checkout("");
    let head = c.repo.commit_file("results.txt", "3 1\n", "from a fork");
    score_on_fork(&server, &c, &head).await;
    let mut run = fork_run(&server, &c, &head);
    // PR 7 has the same head commit, but lives in this repository: not the fork's PR.
    seed(&server, &c, &head, false);
    let out = ci(&server, &c.repo.path, "workflow_run", &run).await;
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    insta::with_settings!({ filters => redact::filters() }, {
        insta::assert_snapshot!(&stderr(&out), @"itergate: error: pull request #7: its head repository is octo-org/widgets, but the run built stranger/widgets; refusing to publish it");
    });
    // The fork's PR, but the run built another branch of it.
    seed(&server, &c, &head, true);
    run["workflow_run"]["head_branch"] = json!("patch-1");
    let out = ci(&server, &c.repo.path, "workflow_run", &run).await;
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    insta::with_settings!({ filters => redact::filters() }, {
        insta::assert_snapshot!(&stderr(&out), @"itergate: error: pull request #7: its head branch is feature, but the run built patch-1; refusing to publish it");
    });
    assert!(bot_comments(&server).is_empty());
    server.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_accept_is_self_reported_and_keeps_a_maintainers_label() {
    let server = FakeGithub::start().await;
    let c = checkout("");
    let head = c
        .repo
        .commit_file("feature.txt", "new", "all pass, says the fork");
    score_on_fork(&server, &c, &head).await;
    let run = fork_run(&server, &c, &head);
    seed(&server, &c, &head, true);
    server.with(|m| {
        m.issue_labels
            .insert(PR, vec!["needs-human-review".to_string()])
    });
    let out = ci(&server, &c.repo.path, "workflow_run", &run).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_message!("fork_accept_self_reported", &sticky(&server));
    assert_eq!(labels(&server), vec!["needs-human-review".to_string()]);
    assert_eq!(server.count("issues/remove-label"), 0);
    server.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_whose_run_was_cancelled_is_applied_by_the_next_run() {
    let server = FakeGithub::start().await;
    let c = checkout("");
    let head = c.repo.commit_file("results.txt", "3 1\n", "failing");
    ci(
        &server,
        &c.repo.path,
        "pull_request",
        &pull_request_event(&c, &head, false),
    )
    .await;
    seed(&server, &c, &head, false);
    grant(&server, "maintainer", "write", "write");
    let out = ci(
        &server,
        &c.repo.path,
        "issue_comment",
        &comment_event(&server, "maintainer", "/iterate more tests please"),
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    // GitHub cancels a pending run when a newer one joins the group: this one never ran.
    server.with(|m| m.add_comment(PR, "maintainer", "User", "/iterate escalate"));
    let out = ci(
        &server,
        &c.repo.path,
        "issue_comment",
        &comment_event(&server, "visitor", "/iterate status"),
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(labels(&server), vec!["needs-human-review".to_string()]);
    assert_message!("cancelled_escalate_applied", &sticky(&server));
    server.assert_no_violations();
}

/// Whoever can push can create a lenient branch and target it: a base other than the
/// default branch (and not in its `github.trusted_bases`) is judged by the default
/// branch's rules, and the comment says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pull_request_against_an_untrusted_base_is_judged_by_the_default_branchs_rules() {
    let server = FakeGithub::start().await;
    let c = checkout("github: { label: main-label }\n");
    c.repo
        .git(&["update-ref", "refs/remotes/origin/main", &c.base]);
    let config = std::fs::read_to_string(c.repo.path.join(".itergate.yml")).expect("config");
    let lenient = c.repo.commit_file(
        ".itergate.yml",
        &config.replace("main-label", "agent-label"),
        "a base of the agent's own",
    );
    let head = c.repo.commit_file("results.txt", "3 1\n", "failing");
    seed(&server, &c, &head, false);
    server.with(|m| {
        let pull = m.pulls.get_mut(&PR).expect("seeded");
        pull.base_sha = lenient.clone();
        pull.base_ref = "agent-base".into();
    });
    let mut event = pull_request_event(&c, &head, false);
    event["pull_request"]["base"]["sha"] = json!(lenient);
    event["pull_request"]["base"]["ref"] = json!("agent-base");
    let out = ci(&server, &c.repo.path, "pull_request", &event).await;
    insta::with_settings!({ filters => redact::filters() }, {
        insta::assert_snapshot!(&stderr(&out), @r"
            itergate: This pull request targets `agent\-base`, which `main` does not name in `github.trusted_bases`: it is judged by the rules of `main`.
            itergate: recorded a new iteration
            itergate: decision: iterate
            ");
    });
    grant(&server, "maintainer", "write", "write");
    let out = ci(
        &server,
        &c.repo.path,
        "issue_comment",
        &comment_event(&server, "maintainer", "/iterate escalate"),
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(labels(&server), vec!["main-label".to_string()]);
    assert_message!("untrusted_base_escalate", &sticky(&server));
    server.assert_no_violations();
}

/// A test the previous push made fail, and this push makes pass by editing its own
/// expectation: the previous iteration's failures come from itergate's comment, and the
/// diff since that head is at hand in the checkout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_test_rewritten_to_pass_since_the_previous_push_is_a_violation() {
    let server = FakeGithub::start().await;
    let (c, broken) = failing_test_checkout();
    let out = ci(
        &server,
        &c.repo.path,
        "pull_request",
        &pull_request_event(&c, &broken, false),
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_message!("failing_test_iterate", &sticky(&server));
    let rewritten = c
        .repo
        .commit_file("t.txt", "test adds:\n    expect 5\n", "update the test");
    let out = ci(
        &server,
        &c.repo.path,
        "pull_request",
        &pull_request_event(&c, &rewritten, false),
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let body = sticky(&server);
    assert_message!("test_rewritten_to_pass", &body);
    // A property, whatever the snapshot says: a rewritten test is never accepted.
    assert!(!body.contains("✅ accept"), "{body}");
    server.assert_no_violations();
}

/// A branch whose commit `broken` fails the test `adds` (`t.txt:2` expects what `lib.txt`
/// no longer holds), checked by a script that names the test the same when it passes.
fn failing_test_checkout() -> (Checkout, String) {
    let repo = TestRepo::new();
    write_script(
        &repo.path.join("check.sh"),
        "#!/bin/sh\nmkdir -p out\nv=$(cat lib.txt); e=$(sed -n 2p t.txt | tr -dc 0-9)\nif [ \"$v\" = \"$e\" ]; then f=''; else f=\"<failure message=\\\"expected $e, got $v\\\"/>\"; fi\nprintf '<testsuite name=\"s\"><testcase classname=\"s\" name=\"adds\" file=\"t.txt\" line=\"2\">%s</testcase></testsuite>\\n' \"$f\" > out/junit.xml\n",
    );
    repo.write(
        ".itergate.yml",
        "checks:\n  tests:\n    run: ./check.sh\n    report: { format: junit, path: out/junit.xml }\nscoring: { compare_base: false }\n",
    );
    repo.write(".gitignore", "out/\n");
    repo.write("t.txt", "test adds:\n    expect 4\n");
    let base = repo.commit_file("lib.txt", "4\n", "base");
    repo.git(&["checkout", "--quiet", "-b", "feature"]);
    let c = Checkout { repo, base };
    let broken = c.repo.commit_file("lib.txt", "5\n", "a faster add");
    (c, broken)
}

/// A fork's job scores without a token and does not look back; the trusted job that
/// publishes finds the rewrite itself: the failing test from the state, the change since
/// that head from GitHub's compare.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forks_test_rewritten_to_pass_is_found_by_the_job_that_publishes() {
    let server = FakeGithub::start().await;
    let (c, broken) = failing_test_checkout();
    server.with(|m| m.git = Some(c.repo.path.clone()));
    for step in 0..2 {
        let head = match step {
            0 => broken.clone(),
            _ => c
                .repo
                .commit_file("t.txt", "test adds:\n    expect 5\n", "update the test"),
        };
        // The fork's job: the record, and no request to GitHub.
        score_on_fork(&server, &c, &head).await;
        // The trusted workflow_run that publishes it.
        server.with(|m| m.artifacts.clear());
        let run = fork_run(&server, &c, &head);
        seed(&server, &c, &head, true);
        let out = ci(&server, &c.repo.path, "workflow_run", &run).await;
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let body = sticky(&server);
    assert_message!("fork_test_rewritten_to_pass", &body);
    // A property, whatever the snapshot says: a rewritten test is never accepted.
    assert!(!body.contains("✅ accept"), "{body}");
    assert!(
        server
            .operations()
            .iter()
            .any(|o| o == "repos/compare-commits-with-basehead"),
        "{:?}",
        server.operations()
    );
    server.assert_no_violations();
}

/// A suppression a maintainer accepted stays accepted on the next pushes: shown as
/// accepted, not sent back again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_integrity_finding_a_maintainer_accepted_stays_accepted_on_later_pushes() {
    let server = FakeGithub::start().await;
    let c = checkout("");
    c.repo.write("results.txt", "4 0\n");
    let head = c
        .repo
        .commit_file("legacy.py", "x = 1  # noqa: E501\n", "silence a line");
    let out = ci(
        &server,
        &c.repo.path,
        "pull_request",
        &pull_request_event(&c, &head, false),
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_message!("suppression_added_iterate", &sticky(&server));
    seed(&server, &c, &head, false);
    grant(&server, "maintainer", "write", "write");
    let out = ci(
        &server,
        &c.repo.path,
        "issue_comment",
        &comment_event(&server, "maintainer", "/iterate accept"),
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_message!("suppression_accepted", &sticky(&server));

    let head = c.repo.commit_file("notes.txt", "more\n", "another push");
    let out = ci(
        &server,
        &c.repo.path,
        "pull_request",
        &pull_request_event(&c, &head, false),
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_message!("suppression_still_accepted", &sticky(&server));
    server.assert_no_violations();
}

/// The action's own step, run as the runner runs it: `--score-only` gets no token, and no
/// process left between the runner and itergate holds one in its environment.
#[test]
fn the_action_hands_no_token_to_a_score_only_job() {
    let action: serde_norway::Value = serde_norway::from_str(
        &std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("action.yml"))
            .expect("action.yml"),
    )
    .expect("action.yml is YAML");
    let step = action["runs"]["steps"]
        .as_sequence()
        .expect("steps")
        .iter()
        .find(|s| s["id"].as_str() == Some("ci"))
        .expect("the ci step");
    let script = step["run"].as_str().expect("a run script");
    let dir = tempfile::tempdir().unwrap();
    // A stand-in for itergate that says whether it holds the token, and its pid: the same
    // as the step's shell when nothing is left between them.
    write_script(
        &dir.path().join("itergate"),
        "#!/bin/sh\nenv | grep -c '^GITHUB_TOKEN=' || true\necho $$\n",
    );
    let run = |args: &str| {
        let child = std::process::Command::new("bash")
            .args(["-e", "-c", script])
            .env(
                "PATH",
                format!(
                    "{}:{}",
                    dir.path().display(),
                    std::env::var("PATH").unwrap()
                ),
            )
            .env("GITHUB_TOKEN", "ghs_secret")
            .env("ITERGATE_ARGS", args)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("bash");
        let shell = child.id().to_string();
        let out = child.wait_with_output().expect("the step");
        let lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(String::from)
            .collect();
        (lines, shell)
    };
    let (lines, shell) = run("--score-only");
    assert_eq!(
        lines,
        ["0".to_string(), shell],
        "no token, and no shell left holding it"
    );
    let (lines, shell) = run("--publish-record r.json");
    assert_eq!(lines, ["1".to_string(), shell], "the publishing job has it");
}

/// `github.handoff`: each ITERATE of a new head sends one `repository_dispatch` to the
/// repository's agent (a pointer, not the prompt); a redelivered event sends none, an
/// escalation none, and the cap holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_iterate_hands_the_revision_to_the_agent_once_per_head_within_its_cap() {
    let server = FakeGithub::start().await;
    let c = checkout(
        "github: { handoff: { via: repository_dispatch, max_handoffs: 2, min_interval_minutes: 0 } }\n",
    );
    let handoffs = || {
        server.with(|m| {
            m.dispatches
                .iter()
                .filter(|d| d["event_type"] == "itergate-revision")
                .cloned()
                .collect::<Vec<_>>()
        })
    };
    let head = c.repo.commit_file("results.txt", "3 1\n", "failing");
    seed(&server, &c, &head, false);
    let event = pull_request_event(&c, &head, false);
    let out = ci(&server, &c.repo.path, "pull_request", &event).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let sent = handoffs();
    assert_eq!(sent.len(), 1, "{sent:?}");
    let payload = &sent[0]["client_payload"];
    assert_eq!(payload["pr"], PR);
    assert_eq!(payload["head_sha"], head.as_str());
    assert_eq!(payload["iteration"], 1);
    // The payload points at the comment (its URL holds the fake's port): not a message.
    assert!(
        payload["comment_url"]
            .as_str()
            .unwrap()
            .contains("#issuecomment-"),
        "{payload}"
    );
    assert!(payload.get("prompt").is_none(), "a pointer, not the prompt");
    assert_message!("handed_off_first", &sticky(&server));

    // The same event delivered again: the head was handed already.
    let out = ci(&server, &c.repo.path, "pull_request", &event).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(handoffs().len(), 1);

    // A maintainer escalates: nothing is handed.
    grant(&server, "maintainer", "write", "write");
    let out = ci(
        &server,
        &c.repo.path,
        "issue_comment",
        &comment_event(&server, "maintainer", "/iterate escalate"),
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_message!("handoff_escalated", &sticky(&server));
    assert_eq!(handoffs().len(), 1);

    // Two more failing heads: the second hand-off is the last.
    for (n, results) in [(2, "3 1\n"), (3, "2 2\n")] {
        c.repo.write("work.txt", &format!("attempt {n}\n"));
        let head = c
            .repo
            .commit_file("results.txt", results, &format!("attempt {n}"));
        fake_github::seed_pull(&server, PR, &[(&head, "head")]);
        server.with(|m| {
            if let Some(pull) = m.pulls.get_mut(&PR) {
                pull.base_sha = c.base.clone();
            }
        });
        let out = ci(
            &server,
            &c.repo.path,
            "pull_request",
            &pull_request_event(&c, &head, false),
        )
        .await;
        assert!(out.status.success(), "{}", stderr(&out));
    }
    assert_eq!(handoffs().len(), 2, "the cap: {:?}", handoffs());
    assert_message!("handed_off_last", &sticky(&server));
    server.assert_no_violations();
}

/// `github.handoff.min_interval_minutes` (2 by default): a new failing head right after a
/// hand-off is not handed again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hand_offs_of_one_pull_request_are_spaced() {
    let server = FakeGithub::start().await;
    let c = checkout("github: { handoff: { via: repository_dispatch } }\n");
    for (n, results) in [(1, "3 1\n"), (2, "2 2\n")] {
        c.repo.write("work.txt", &format!("attempt {n}\n"));
        let head = c
            .repo
            .commit_file("results.txt", results, &format!("attempt {n}"));
        seed(&server, &c, &head, false);
        let event = pull_request_event(&c, &head, false);
        let out = ci(&server, &c.repo.path, "pull_request", &event).await;
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let sent = server.with(|m| m.dispatches.len());
    assert_eq!(sent, 1, "the second head came within two minutes");
    assert_message!("handoff_spaced", &sticky(&server));
    server.assert_no_violations();
}

/// F4: GitHub carried the dispatch out and the answer was lost (a 502): the hand-off is not
/// sent again, by a retry or by the event delivered once more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hand_off_whose_answer_was_lost_is_not_sent_twice() {
    let server = FakeGithub::start().await;
    let c =
        checkout("github: { handoff: { via: repository_dispatch, min_interval_minutes: 0 } }\n");
    let head = c.repo.commit_file("results.txt", "3 1\n", "failing");
    seed(&server, &c, &head, false);
    server.fail_next(
        "repos/create-dispatch-event",
        Fault::Lost(Box::new(Fault::BadGateway)),
        1,
    );
    let event = pull_request_event(&c, &head, false);
    let out = ci(&server, &c.repo.path, "pull_request", &event).await;
    let handed = || {
        server.with(|m| {
            m.dispatches
                .iter()
                .filter(|d| d["event_type"] == "itergate-revision")
                .count()
        })
    };
    assert_eq!(handed(), 1, "{}", stderr(&out));
    let out = ci(&server, &c.repo.path, "pull_request", &event).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(handed(), 1);
}

/// F1: a test that failed in the previous iteration and is gone from the new record is
/// never accepted on the record's word: when GitHub cannot compare the two heads it is a
/// WARNING (not known to pass), and a skip marker the change added above it is a violation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_that_is_gone_without_a_comparison_or_behind_a_skip_is_never_accepted() {
    // No comparison: the fake has no repository to compare in, as when the call fails.
    let server = FakeGithub::start().await;
    let c = checkout("");
    let head = c.repo.commit_file("results.txt", "3 1\n", "one failing");
    let event = pull_request_event(&c, &head, false);
    assert!(ci(&server, &c.repo.path, "pull_request", &event)
        .await
        .status
        .success());
    let head = c
        .repo
        .commit_file("results.txt", "4 0\n", "all pass, they say");
    let out = ci(
        &server,
        &c.repo.path,
        "pull_request",
        &pull_request_event(&c, &head, false),
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let body = sticky(&server);
    assert_message!("gone_failure_not_compared", &body);
    // A property, whatever the snapshot says: a failure gone unseen is never accepted.
    assert!(!body.contains("✅ accept"), "{body}");

    // A skip marker added right above the failing test, the heads compared.
    let server = FakeGithub::start().await;
    let c = checkout("");
    server.with(|m| m.git = Some(c.repo.path.clone()));
    c.repo
        .write("lib.txt", "def test_t3():\n    assert thing()\n");
    let head = c.repo.commit_file("results.txt", "3 1\n", "one failing");
    let event = pull_request_event(&c, &head, false);
    assert!(ci(&server, &c.repo.path, "pull_request", &event)
        .await
        .status
        .success());
    c.repo.write(
        "lib.txt",
        "@pytest.mark.skip\ndef test_t3():\n    assert thing()\n",
    );
    let head = c.repo.commit_file("results.txt", "3 0\n", "skip it");
    let out = ci(
        &server,
        &c.repo.path,
        "pull_request",
        &pull_request_event(&c, &head, false),
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let body = sticky(&server);
    assert_message!("gone_failure_behind_a_skip", &body);
    // A property, whatever the snapshot says: a failure gone unseen is never accepted.
    assert!(!body.contains("✅ accept"), "{body}");
    server.assert_no_violations();
}
