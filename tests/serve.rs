//! `itergate serve` end to end: the real binary on 127.0.0.1 and a random port, a temporary
//! SQLite database, real webhook payloads signed as GitHub signs them, and the fake GitHub
//! (App JWTs verified against the App's public key, every request checked against GitHub's
//! OpenAPI description).

mod app_server;
mod fake_github;
#[path = "serve/front_door.rs"]
mod front_door;
mod redact;

use crate::redact::assert_message;
use std::io::Write;
use std::net::TcpStream;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use app_server::{fake, fixture_path, webhook, Serve, APP_ID, BASE, BOT, INSTALLATION, SECRET};
use fake_github::model::{FakeArtifact, FakeRun};
use fake_github::{grant, FakeGithub, Fault, REPO};
use itergate::app::forge_flow::ArtifactRecord;
use itergate::github::app_auth::{AppCredentials, Installations};
use itergate::model::{CommitSha, IterationRecord};
use itergate::serve::signature::sign;
use serde_json::{json, Value};

const PR: u64 = 7;

/// One HTTP/1.1 exchange that must be answered.
fn request(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, String)],
    body: &[u8],
) -> (u16, String) {
    app_server::try_request(addr, method, path, headers, body).expect("an answer")
}

async fn rows(database: &Path, sql: &str) -> i64 {
    let conn = rusqlite::Connection::open_with_flags(
        database,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .expect("open the database");
    conn.query_row(sql, [], |row| row.get(0)).expect("query")
}

/// Waits until `done` holds (or fails after `secs`).
async fn eventually(serve: &Serve, secs: u64, what: &str, done: impl FnMut() -> bool) {
    app_server::eventually(&[serve], secs, what, done).await
}

fn sticky_comments(server: &FakeGithub) -> Vec<String> {
    app_server::sticky_comments(server, PR)
}

/// Waits until the sticky comment says it waits for checks on `short` (a head's first 7).
async fn waits_for_checks(serve: &Serve, server: &FakeGithub, secs: u64, short: &str) {
    let text = format!("Waiting for checks on `{short}`");
    eventually(serve, secs, "the waiting comment", || {
        sticky_comments(server)
            .first()
            .is_some_and(|b| b.contains(&text))
    })
    .await
}

fn seed_pr(server: &FakeGithub, head: &str) {
    fake_github::seed_pull(server, PR, &[(head, "the change")]);
}

fn opened(head: &str) -> Value {
    let mut p = webhook("pull_request.opened.1.json");
    p["number"] = json!(PR);
    p["pull_request"]["number"] = json!(PR);
    p["pull_request"]["head"]["sha"] = json!(head);
    p["pull_request"]["head"]["ref"] = json!("feature");
    p["pull_request"]["head"]["repo"]["full_name"] = json!(REPO);
    p["pull_request"]["base"]["sha"] = json!(BASE);
    p["pull_request"]["base"]["ref"] = json!("main");
    p
}

fn record(head: &str, tests_passing: f64) -> Vec<u8> {
    let mut record = IterationRecord::new(1, chrono::Utc::now());
    record.commit = CommitSha(head.into());
    record.scores.tests_passing = Some(tests_passing);
    record.scores.code_quality = Some(1.0);
    serde_json::to_vec(&ArtifactRecord {
        pr: PR,
        head_repo: Some(REPO.into()),
        head_ref: Some("feature".into()),
        record,
    })
    .unwrap()
}

fn zip_with(name: &str, content: &[u8]) -> Vec<u8> {
    let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    writer
        .start_file(name, zip::write::SimpleFileOptions::default())
        .unwrap();
    writer.write_all(content).unwrap();
    writer.finish().unwrap().into_inner()
}

fn workflow_run(run_id: u64, head: &str, head_repo: &str) -> Value {
    let mut p = webhook("workflow_run.completed.1.json");
    p["workflow_run"]["id"] = json!(run_id);
    p["workflow_run"]["head_sha"] = json!(head);
    p["workflow_run"]["head_branch"] = json!("feature");
    p["workflow_run"]["head_repository"]["full_name"] = json!(head_repo);
    p["workflow_run"]["pull_requests"] = json!([{ "number": PR, "id": 1, "url": "",
        "head": { "ref": "feature", "sha": head, "repo": { "id": 1, "name": "widgets", "url": "" } },
        "base": { "ref": "main", "sha": BASE, "repo": { "id": 1, "name": "widgets", "url": "" } } }]);
    p
}

fn upload(server: &FakeGithub, run_id: u64, record: Vec<u8>) {
    server.with(|m| {
        m.artifacts.push(FakeArtifact {
            id: run_id + 1000,
            run_id,
            name: fake_github::bound_name("itergate-record", &record),
            zip: zip_with("record.json", &record),
            expired: false,
        })
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_signatures_get_401_and_store_nothing() {
    let server = fake().await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("itergate.db");
    let serve = Serve::start(&server.api_url(), &db, &[]);
    let body = serde_json::to_vec(&opened(&"a".repeat(40))).unwrap();
    let mut changed = body.clone();
    let at = changed.len() / 2;
    changed[at] ^= 0x01;
    let wrong = sign(b"not-the-secret", &body);
    let sha1 = "sha1=0123456789abcdef0123456789abcdef01234567".to_string();
    assert_eq!(
        serve.post("pull_request", "d-missing", &body, Some("")),
        401
    );
    assert_eq!(
        serve.post("pull_request", "d-wrong", &body, Some(&wrong)),
        401
    );
    let right_for_original = sign(SECRET.as_bytes(), &body);
    assert_eq!(
        serve.post(
            "pull_request",
            "d-changed",
            &changed,
            Some(&right_for_original)
        ),
        401
    );
    // SHA-1 alone is never enough.
    let sha1_only = request(
        &serve.addr,
        "POST",
        "/webhook",
        &[
            ("X-GitHub-Event", "pull_request".into()),
            ("X-GitHub-Delivery", "d-sha1".into()),
            ("X-Hub-Signature", sha1),
        ],
        &body,
    );
    assert_eq!(sha1_only.0, 401);
    assert_eq!(rows(&db, "SELECT COUNT(*) FROM deliveries").await, 0);
    // The rotated-out secret still verifies.
    let old = sign(b"an-older-secret", &body);
    seed_pr(&server, &"a".repeat(40));
    assert_eq!(
        serve.post("pull_request", "d-old-secret", &body, Some(&old)),
        202
    );
    assert_eq!(rows(&db, "SELECT COUNT(*) FROM deliveries").await, 1);
    // Signed, but named like one of the queue's own jobs: never a webhook.
    assert_eq!(
        serve.post("itergate.reconcile", "d-own-job", &body, None),
        400
    );
    assert_eq!(rows(&db, "SELECT COUNT(*) FROM deliveries").await, 1);
    let (_, metrics) = serve.metrics();
    assert!(
        metrics.contains("itergate_deliveries_total{result=\"refused\",reason=\"signature\"} 4"),
        "{metrics}"
    );
    assert!(
        serve.log().contains("does not match the body"),
        "{}",
        serve.log()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pull_request_waits_for_checks_then_ci_s_record_decides() {
    let server = fake().await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("itergate.db");
    let serve = Serve::start(&server.api_url(), &db, &[]);
    let head = "a".repeat(40);
    seed_pr(&server, &head);

    assert_eq!(serve.deliver("pull_request", "d-open", &opened(&head)), 202);
    waits_for_checks(&serve, &server, 20, "aaaaaaa").await;

    // CI uploaded a record with a failing test: the App reads it, it never runs code.
    upload(&server, 501, record(&head, 0.5));
    assert_eq!(
        serve.deliver("workflow_run", "d-run", &workflow_run(501, &head, REPO)),
        202
    );
    eventually(&serve, 20, "the decision", || {
        sticky_comments(&server)
            .first()
            .is_some_and(|b| !b.contains("Waiting for checks"))
    })
    .await;
    let sticky = sticky_comments(&server);
    assert_eq!(sticky.len(), 1, "{sticky:?}");
    assert_message!("decided_from_the_ci_record", &sticky[0]);
    // The configuration came from the base commit, through the API.
    assert!(server.count("repos/get-content") >= 1);
    // One installation token served every call.
    assert_eq!(server.with(|m| m.app.as_ref().unwrap().tokens.len()), 1);
    let runs = server.with(|m| {
        m.check_runs
            .iter()
            .map(|r| (r.name.clone(), r.status.clone()))
            .collect::<Vec<_>>()
    });
    assert!(
        runs.iter()
            .any(|(name, status)| name == "itergate" && status == "completed"),
        "{runs:?}"
    );
    let (_, metrics) = serve.metrics();
    for line in [
        "itergate_github_calls_total{status=\"200\"}",
        "itergate_github_calls_total{status=\"201\"}",
        "itergate_jobs_total{outcome=\"done\"} 2",
        "itergate_job_latency_seconds_count 2",
        "itergate_queue_depth 0",
    ] {
        assert!(metrics.contains(line), "{line} in\n{metrics}");
    }
    server.assert_no_violations();
}

/// A maintainer labelled the pull request for a person's review; the App never escalated
/// it. Its accept leaves that label, read from the issue's events through the API.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_accept_leaves_a_label_a_person_added() {
    let server = fake().await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("itergate.db");
    let serve = Serve::start(&server.api_url(), &db, &[]);
    let head = "a".repeat(40);
    seed_pr(&server, &head);
    let label = itergate::config::Config::default().github.label;
    server.with(|m| m.label_by(PR, &label, "maintainer"));
    assert_eq!(serve.deliver("pull_request", "d-open", &opened(&head)), 202);
    waits_for_checks(&serve, &server, 20, "aaaaaaa").await;
    upload(&server, 501, record(&head, 1.0));
    assert_eq!(
        serve.deliver("workflow_run", "d-run", &workflow_run(501, &head, REPO)),
        202
    );
    eventually(&serve, 20, "the accept", || {
        sticky_comments(&server)
            .first()
            .is_some_and(|b| b.contains("accept"))
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(server.with(|m| m.labels_on(PR)), vec![label.clone()]);
    assert_eq!(server.count("issues/remove-label"), 0);
    assert!(server.count("issues/list-events") >= 1);
    server.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivery_seen_twice_even_at_once_is_one_job() {
    let server = fake().await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("itergate.db");
    let serve = Arc::new(Serve::start(&server.api_url(), &db, &[]));
    let head = "c".repeat(40);
    seed_pr(&server, &head);
    grant(&server, "maintainer", "admin", "admin");
    let mut comment = webhook("derived.issue_comment.created.on_pull_request.json");
    comment["issue"]["number"] = json!(PR);
    let id = server.with(|m| m.add_comment(PR, "maintainer", "User", "/iterate help"));
    comment["comment"]["id"] = json!(id);
    comment["comment"]["body"] = json!("/iterate help");
    comment["comment"]["user"]["login"] = json!("maintainer");
    let body = Arc::new(comment);
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let serve = serve.clone();
            let body = body.clone();
            std::thread::spawn(move || serve.deliver("issue_comment", "d-same", &body))
        })
        .collect();
    let mut statuses: Vec<u16> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    statuses.sort();
    assert_eq!(statuses, vec![200, 200, 200, 202]);
    assert_eq!(serve.deliver("issue_comment", "d-same", &body), 200);
    assert_eq!(rows(&db, "SELECT COUNT(*) FROM deliveries").await, 1);
    eventually(&serve, 20, "the job", || {
        server.count("issues/create-comment") >= 1
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let replies = server.with(|m| m.comments_on(PR).iter().filter(|c| c.author == BOT).count());
    assert_eq!(replies, 1, "one reply to the one comment");
    let (_, metrics) = serve.metrics();
    assert!(
        metrics.contains("itergate_deliveries_total{result=\"deduplicated\"} 4"),
        "{metrics}"
    );
    server.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_events_on_one_pr_edit_one_sticky_comment_in_order() {
    let server = fake().await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("itergate.db");
    let serve = Serve::start(&server.api_url(), &db, &[]);
    let mut head = String::new();
    for i in 0..20u8 {
        head = format!("{:040x}", u128::from(i) + 1);
        seed_pr(&server, &head);
        let mut event = opened(&head);
        event["action"] = json!("synchronize");
        assert_eq!(
            serve.deliver("pull_request", &format!("d-{i}"), &event),
            202
        );
    }
    let last = format!("`{}`", &head[..7]);
    eventually(&serve, 30, "the last event", || {
        rows_now(&db, DONE) == 20
            && sticky_comments(&server)
                .first()
                .is_some_and(|b| b.contains(&last))
    })
    .await;
    assert_eq!(sticky_comments(&server).len(), 1);
    assert_eq!(server.count("issues/create-comment"), 1);
    // Applied in order: the last state written is the last event's.
    assert!(sticky_comments(&server)[0].contains(&last));
    server.assert_no_violations();
}

const DONE: &str = "SELECT COUNT(*) FROM deliveries WHERE done_at IS NOT NULL";

/// [`rows`] from a synchronous closure.
fn rows_now(db: &Path, sql: &str) -> i64 {
    let (db, sql) = (db.to_path_buf(), sql.to_string());
    std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(rows(&db, &sql))
    })
    .join()
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_under_load_then_restart_processes_every_acknowledged_delivery_once() {
    let server = fake().await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("itergate.db");
    let mut serve = Serve::start(&server.api_url(), &db, &[]);
    // Each delivery is a comment on its own PR, so each job posts exactly one reply.
    grant(&server, "maintainer", "admin", "admin");
    let n = 60u64;
    let mut acknowledged = Vec::new();
    for i in 0..n {
        let pr = 100 + i;
        fake_github::seed_pull(&server, pr, &[(&format!("{:040x}", pr), "c")]);
        let mut comment = webhook("derived.issue_comment.created.on_pull_request.json");
        comment["issue"]["number"] = json!(pr);
        let id = server.with(|m| m.add_comment(pr, "maintainer", "User", "/iterate help"));
        comment["comment"]["id"] = json!(id);
        comment["comment"]["body"] = json!("/iterate help");
        comment["comment"]["user"]["login"] = json!("maintainer");
        let status = serve.deliver("issue_comment", &format!("load-{i}"), &comment);
        if status == 202 {
            acknowledged.push(pr);
        }
        if i == n / 2 {
            // Mid-load, mid-job: no goodbye.
            serve.child.kill().unwrap();
            serve.child.wait().unwrap();
            serve = Serve::start(&server.api_url(), &db, &[]);
        }
    }
    assert!(
        acknowledged.len() as u64 >= n - 1,
        "acknowledged {}",
        acknowledged.len()
    );
    eventually(&serve, 60, "every acknowledged delivery", || {
        rows_now(&db, DONE) as usize >= acknowledged.len()
    })
    .await;
    for pr in &acknowledged {
        let replies = server.with(|m| {
            m.comments_on(*pr)
                .iter()
                .filter(|c| c.author == BOT)
                .count()
        });
        assert_eq!(replies, 1, "PR {pr}: one reply");
    }
    server.assert_no_violations();
}

/// A `/iterate help` on the PR whose job's first call to `hang` hangs, delivered to
/// `serve`; returns once the call is in flight.
async fn a_job_hanging_on(server: &FakeGithub, serve: &Serve, hang: &str) {
    grant(server, "maintainer", "admin", "admin");
    seed_pr(server, &"a".repeat(40));
    server.fail_next(hang, Fault::Timeout(Duration::from_secs(120)), 1);
    let mut comment = webhook("derived.issue_comment.created.on_pull_request.json");
    comment["issue"]["number"] = json!(PR);
    let id = server.with(|m| m.add_comment(PR, "maintainer", "User", "/iterate help"));
    comment["comment"]["id"] = json!(id);
    comment["comment"]["body"] = json!("/iterate help");
    comment["comment"]["user"]["login"] = json!("maintainer");
    assert_eq!(serve.deliver("issue_comment", "d-hang", &comment), 202);
    eventually(serve, 20, "the job in flight", || server.count(hang) == 1).await;
}

fn bot_replies(server: &FakeGithub) -> usize {
    server.with(|m| m.comments_on(PR).iter().filter(|c| c.author == BOT).count())
}

/// A job in flight when its process is killed (its lease a minute long) is run again as
/// soon as the process restarts on the same host, not when the lease ends: at once when it
/// waited on a read, after the settle when a write to GitHub was in flight (it may land).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_takes_over_its_killed_predecessors_jobs_at_once() {
    for (hang, from, to) in [
        ("repos/get-collaborator-permission-level", 0, 3),
        ("reactions/create-for-issue-comment", 10, 20),
    ] {
        let server = fake().await;
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("itergate.db");
        let long = ["--lease-seconds", "60"];
        let mut serve = Serve::start(&server.api_url(), &db, &long);
        a_job_hanging_on(&server, &serve, hang).await;
        serve.child.kill().unwrap();
        serve.child.wait().unwrap();
        let killed = Instant::now();
        let serve = Serve::start(&server.api_url(), &db, &long);
        eventually(&serve, 30, "the job done after the restart", || {
            rows_now(&db, DONE) == 1
        })
        .await;
        let took = killed.elapsed();
        assert!(
            took >= Duration::from_secs(from) && took < Duration::from_secs(to),
            "{hang} in flight: taken over after {took:?}"
        );
        assert_eq!(bot_replies(&server), 1, "{hang} in flight: one reply");
    }
}

/// Two replicas on one SQLite database: the one holding a job that waits on a read is
/// killed with SIGKILL, and the other takes the job over within 3 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_replicas_job_with_no_write_in_flight_is_taken_over_within_3_s() {
    let server = fake().await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("itergate.db");
    let mut holder = Serve::start(&server.api_url(), &db, &[]);
    a_job_hanging_on(&server, &holder, "repos/get-collaborator-permission-level").await;
    let other = Serve::start(&server.api_url(), &db, &[]);
    // The other replica is up (registered) before the kill.
    eventually(&other, 20, "the second replica", || {
        rows_now(&db, "SELECT COUNT(*) FROM replicas") == 2
    })
    .await;
    holder.kill_9();
    let killed = Instant::now();
    eventually(&other, 30, "the job taken over", || {
        rows_now(&db, DONE) == 1
    })
    .await;
    let took = killed.elapsed();
    eprintln!("taken over {took:?} after the kill");
    assert!(took < Duration::from_secs(3), "taken over after {took:?}");
    assert_eq!(bot_replies(&server), 1, "one reply");
    server.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_drains_and_the_rest_waits_for_the_next_start() {
    let server = fake().await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("itergate.db");
    let mut serve = Serve::start(&server.api_url(), &db, &[]);
    let head = "d".repeat(40);
    seed_pr(&server, &head);
    assert_eq!(serve.deliver("pull_request", "d-1", &opened(&head)), 202);
    unsafe { libc::kill(serve.child.id() as i32, libc::SIGTERM) };
    let status = serve.child.wait().unwrap();
    assert!(status.success(), "{status:?}\n{}", serve.log());
    // Nothing is accepted after the signal.
    assert!(TcpStream::connect(&serve.addr).is_err());
    assert_eq!(rows(&db, "SELECT COUNT(*) FROM deliveries").await, 1);
    // The next start finishes what is left.
    let serve = Serve::start(&server.api_url(), &db, &[]);
    eventually(&serve, 20, "the job", || rows_now(&db, DONE) == 1).await;
    assert_eq!(sticky_comments(&server).len(), 1);
    drop(serve);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secondary_rate_limit_makes_the_job_wait_and_complete() {
    let server = fake().await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("itergate.db");
    let serve = Serve::start(&server.api_url(), &db, &[]);
    let head = "e".repeat(40);
    seed_pr(&server, &head);
    server.fail_next(
        "issues/create-comment",
        Fault::SecondaryRateLimit {
            retry_after_secs: 1,
        },
        1,
    );
    assert_eq!(serve.deliver("pull_request", "d-1", &opened(&head)), 202);
    eventually(&serve, 20, "the comment", || {
        sticky_comments(&server).len() == 1
    })
    .await;
    assert_eq!(server.count("issues/create-comment"), 2);
    server.assert_no_violations();
}

/// A rate limit longer than a worker waits reschedules the job for the time GitHub names,
/// without counting an attempt; the job completes then.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_rate_limit_reschedules_the_job_for_its_reset() {
    let server = fake().await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("itergate.db");
    let serve = Serve::start(&server.api_url(), &db, &[]);
    let head = "e".repeat(40);
    seed_pr(&server, &head);
    server.fail_next(
        "issues/create-comment",
        Fault::SecondaryRateLimit {
            retry_after_secs: 8,
        },
        1,
    );
    let sent = Instant::now();
    assert_eq!(serve.deliver("pull_request", "d-1", &opened(&head)), 202);
    // The claim counts an attempt; the reschedule, logged just before, gives it back.
    eventually(&serve, 10, "the job rescheduled with no attempt counted", || {
        serve.log().contains("rate limited; again in 8 s")
            && rows_now(
                &db,
                "SELECT COUNT(*) FROM deliveries WHERE guid = 'd-1' AND attempts = 0 AND lease_owner IS NULL",
            ) == 1
    })
    .await;
    eventually(&serve, 30, "the comment", || {
        sticky_comments(&server).len() == 1
    })
    .await;
    assert!(
        sent.elapsed() >= Duration::from_secs(8),
        "not before the reset"
    );
    assert_eq!(server.count("issues/create-comment"), 2);
    server.assert_no_violations();
}

/// A job that keeps failing (here: every reaction answered 502) is parked after a few
/// attempts: the pull request's later events no longer wait for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_that_keeps_failing_stops_holding_up_its_pull_request() {
    let server = fake().await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("itergate.db");
    let serve = Serve::start(&server.api_url(), &db, &[]);
    let head = "b".repeat(40);
    seed_pr(&server, &head);
    grant(&server, "maintainer", "admin", "admin");
    server.fail_next(
        "reactions/create-for-issue-comment",
        Fault::BadGateway,
        10_000,
    );
    let mut comment = webhook("derived.issue_comment.created.on_pull_request.json");
    comment["issue"]["number"] = json!(PR);
    let id = server.with(|m| m.add_comment(PR, "maintainer", "User", "/iterate help"));
    comment["comment"]["id"] = json!(id);
    comment["comment"]["body"] = json!("/iterate help");
    comment["comment"]["user"]["login"] = json!("maintainer");
    assert_eq!(serve.deliver("issue_comment", "d-stuck", &comment), 202);
    assert_eq!(serve.deliver("pull_request", "d-open", &opened(&head)), 202);
    // Without parking the push waits behind the comment's retries for half an hour.
    let started = Instant::now();
    eventually(&serve, 60, "the later event applied", || {
        sticky_comments(&server).len() == 1
    })
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(45),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        rows(
            &db,
            "SELECT COUNT(*) FROM deliveries WHERE job_key LIKE '% (parked)' AND done_at IS NULL"
        )
        .await,
        1,
        "the failing job is parked, not dropped"
    );
    assert!(serve.log().contains("parked"), "{}", serve.log());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_record_must_match_the_prs_head_repository() {
    let server = fake().await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("itergate.db");
    let serve = Serve::start(&server.api_url(), &db, &[]);
    let head = "f".repeat(40);
    seed_pr(&server, &head);
    // A run of the same commit in another repository (a fork pushing the PR's sha).
    upload(&server, 601, record(&head, 1.0));
    assert_eq!(
        serve.deliver(
            "workflow_run",
            "d-fork",
            &workflow_run(601, &head, "mallory/widgets")
        ),
        202
    );
    eventually(&serve, 20, "the job", || rows_now(&db, DONE) == 1).await;
    assert!(sticky_comments(&server).is_empty());
    assert_eq!(
        rows(
            &db,
            "SELECT COUNT(*) FROM deliveries WHERE outcome LIKE 'refused:%'"
        )
        .await,
        1
    );
    assert!(
        serve.log().contains("refusing to publish"),
        "{}",
        serve.log()
    );
}

/// A fork's `workflow_run` names no pull request, so it arrives under the repository's key;
/// it is handed to its pull request's queue before anything is published, so it cannot
/// race that PR's own jobs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_run_is_handed_to_its_pull_requests_queue() {
    let server = fake().await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("itergate.db");
    let serve = Serve::start(&server.api_url(), &db, &[]);
    let head = "9".repeat(40);
    let fork = "mallory/widgets";
    seed_pr(&server, &head);
    server.with(|m| m.pulls.get_mut(&PR).unwrap().head_repo = fork.into());
    let mut artifact: ArtifactRecord = serde_json::from_slice(&record(&head, 1.0)).unwrap();
    artifact.head_repo = Some(fork.into());
    upload(&server, 701, serde_json::to_vec(&artifact).unwrap());
    let mut run = workflow_run(701, &head, fork);
    run["workflow_run"]["pull_requests"] = json!([]);
    assert_eq!(serve.deliver("workflow_run", "d-fork-run", &run), 202);
    eventually(&serve, 30, "the record published", || {
        sticky_comments(&server)
            .first()
            .is_some_and(|b| b.contains("teration 1"))
    })
    .await;
    let key = format!("{}#{PR}", REPO.to_lowercase());
    assert_eq!(
        rows(&db, &format!("SELECT COUNT(*) FROM deliveries WHERE job_key = '{key}' AND event = 'workflow_run'")).await,
        1,
        "the run went through the PR's own queue"
    );
    // The handed job can publish before the fork's job records how it ended.
    eventually(&serve, 10, "the fork's job ended as handed over", || {
        rows_now(
            &db,
            "SELECT COUNT(*) FROM deliveries WHERE outcome LIKE '%handed to the queue of #%'",
        ) == 1
    })
    .await;
    server.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_cold_callers_mint_one_token_and_it_is_renewed_before_expiry() {
    let server = fake().await;
    let pem = std::fs::read(fixture_path("app/test-app-key.pem")).unwrap();
    let settings = server.settings();
    let installations = Arc::new(Installations::new(
        settings,
        AppCredentials::new(APP_ID, &pem).unwrap(),
    ));
    let calls: Vec<_> = (0..50)
        .map(|_| {
            let installations = installations.clone();
            tokio::spawn(async move { installations.forge(INSTALLATION).await.map(|_| ()) })
        })
        .collect();
    for call in calls {
        call.await.unwrap().expect("a client");
    }
    assert_eq!(server.with(|m| m.app.as_ref().unwrap().tokens.len()), 1);
    // A token with less than the margin left is replaced before it expires.
    server.with(|m| m.app.as_mut().unwrap().token_lifetime_secs = 60);
    installations.forget(INSTALLATION).await;
    installations.forge(INSTALLATION).await.unwrap();
    installations.forge(INSTALLATION).await.unwrap();
    assert_eq!(server.with(|m| m.app.as_ref().unwrap().tokens.len()), 3);
    server.with(|m| m.app.as_mut().unwrap().token_lifetime_secs = 3600);
    installations.forge(INSTALLATION).await.unwrap();
    installations.forge(INSTALLATION).await.unwrap();
    assert_eq!(server.with(|m| m.app.as_ref().unwrap().tokens.len()), 4);
    assert_eq!(installations.bot_login().await.unwrap(), BOT);
    // A JWT signed with another key is refused by the fake, as by GitHub.
    let other = AppCredentials::new(APP_ID + 1, &pem).unwrap();
    let refused = Installations::new(server.settings(), other)
        .bot_login()
        .await;
    assert_eq!(refused.unwrap_err().status(), Some(401));
    server.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_edited_by_hand_is_detected_and_not_believed() {
    use base64::Engine as _;
    let server = fake().await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("itergate.db");
    let serve = Serve::start(&server.api_url(), &db, &[]);
    let head = "a".repeat(40);
    seed_pr(&server, &head);
    upload(&server, 501, record(&head, 0.5));
    assert_eq!(
        serve.deliver("workflow_run", "d-run", &workflow_run(501, &head, REPO)),
        202
    );
    eventually(&serve, 20, "the decision", || {
        sticky_comments(&server).len() == 1
    })
    .await;
    let body = sticky_comments(&server).remove(0);
    assert!(body.contains(" mac="), "the App signs its state: {body}");

    // Someone with write access edits the state: "accepted", keeping the old MAC.
    let open = "<!-- itergate:state v1 ";
    let start = body.rfind(open).unwrap() + open.len();
    let mac_at = body[start..].find(" mac=").unwrap() + start;
    let forged = base64::engine::general_purpose::STANDARD.encode(
        serde_json::to_vec(&json!({ "revision": 99, "feedback": { "accepted": true } })).unwrap(),
    );
    let edited = format!("{}{forged}{}", &body[..start], &body[mac_at..]);
    server.with(|m| {
        let comment = m.comments.iter_mut().find(|c| c.body == body).unwrap();
        comment.body = edited.clone();
    });

    let next = "b".repeat(40);
    seed_pr(&server, &next);
    let mut event = opened(&next);
    event["action"] = json!("synchronize");
    assert_eq!(serve.deliver("pull_request", "d-sync", &event), 202);
    eventually(&serve, 20, "the next write", || {
        sticky_comments(&server)
            .first()
            .is_some_and(|b| b.contains("`bbbbbbb`"))
    })
    .await;
    let now = sticky_comments(&server).remove(0);
    assert_message!("state_edited_by_someone_else", &now);
    assert!(
        serve
            .log()
            .contains("edited by someone other than itergate"),
        "{}",
        serve.log()
    );
    server.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sweep_redelivers_what_github_could_not_hand_over_and_nothing_else() {
    let server = fake().await;
    let now = chrono::Utc::now();
    let at = |minutes_ago: i64| (now - chrono::Duration::minutes(minutes_ago)).to_rfc3339();
    let delivery = |id: u64, guid: &str, status: u16, minutes_ago: i64| {
        json!({ "id": id, "guid": guid, "delivered_at": at(minutes_ago), "redelivery": false,
                "duration": 0.1, "status": if status == 202 { "OK" } else { "failed" },
                "status_code": status, "event": "pull_request", "action": "opened",
                "installation_id": INSTALLATION, "repository_id": 1 })
    };
    server.with(|m| {
        m.app.as_mut().unwrap().deliveries = vec![
            delivery(9, "recovered", 202, 1), // a later attempt got through
            delivery(8, "lost-1", 503, 2),    // never got through: redeliver
            delivery(7, "recovered", 503, 3),
            delivery(5, "fine", 202, 5),
            delivery(4, "lost-old", 0, 60 * 30), // older than the sweep looks back
        ];
    });
    let pem = std::fs::read(fixture_path("app/test-app-key.pem")).unwrap();
    let installations = Installations::new(
        server.settings(),
        AppCredentials::new(APP_ID, &pem).unwrap(),
    );
    let swept = itergate::serve::sweep::sweep(&installations, now)
        .await
        .unwrap();
    assert_eq!(swept.redelivered, vec!["lost-1".to_string()]);
    assert_eq!(swept.listed, 4);
    assert_eq!(
        server.with(|m| m.app.as_ref().unwrap().redelivered.clone()),
        vec![8]
    );

    // A delivery refused 4 times is given up on; a refused redelivery does not end the
    // sweep; the newest failures are asked for first.
    server.with(|m| {
        let app = m.app.as_mut().unwrap();
        app.redelivered.clear();
        app.deliveries = vec![
            delivery(24, "new-2", 503, 1),
            delivery(23, "new-1", 503, 2),
            delivery(22, "refused", 401, 3),
            delivery(21, "refused", 401, 4),
            delivery(20, "refused", 401, 5),
            delivery(19, "refused", 401, 6),
            delivery(18, "old", 503, 7),
        ];
    });
    server.fail_next("apps/redeliver-webhook-delivery", Fault::Unprocessable, 1);
    let swept = itergate::serve::sweep::sweep(&installations, now)
        .await
        .unwrap();
    assert_eq!(swept.given_up, 1);
    assert_eq!(swept.refused.len(), 1, "{:?}", swept.refused);
    assert!(swept.refused[0].starts_with("new-2"), "{:?}", swept.refused);
    assert_eq!(
        swept.redelivered,
        vec!["new-1".to_string(), "old".to_string()]
    );
    server.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn iterate_re_runs_the_heads_pull_request_workflow_runs() {
    let server = fake().await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("itergate.db");
    let serve = Serve::start(&server.api_url(), &db, &[]);
    let head = "a".repeat(40);
    seed_pr(&server, &head);
    grant(&server, "maintainer", "write", "write");
    server.with(|m| {
        m.workflow_runs = vec![
            FakeRun::new(31, &head, "pull_request", "completed"),
            FakeRun::new(32, &head, "push", "completed"),
            FakeRun::new(33, &"0".repeat(40), "pull_request", "completed"),
            FakeRun::new(34, &head, "pull_request", "in_progress"),
        ]
    });
    let mut comment = webhook("derived.issue_comment.created.on_pull_request.json");
    let id = server.with(|m| m.add_comment(PR, "maintainer", "User", "/iterate"));
    comment["issue"]["number"] = json!(PR);
    comment["comment"]["id"] = json!(id);
    comment["comment"]["body"] = json!("/iterate");
    comment["comment"]["user"]["login"] = json!("maintainer");
    assert_eq!(serve.deliver("issue_comment", "d-rerun", &comment), 202);
    eventually(&serve, 20, "the re-run", || {
        server.with(|m| !m.reruns.is_empty())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Only the finished pull_request run of the head; never a repository_dispatch.
    assert_eq!(server.with(|m| m.reruns.clone()), vec![31]);
    assert!(server.with(|m| m.dispatches.is_empty()));
    server.assert_no_violations();
}

/// Maintainers' commands on many pull requests at once, more than the installation's write
/// pace lets through: a job whose reply must wait for a later turn keeps that turn, and a
/// job run again does not react twice, so every command gets its one 👀 and its reply in
/// about writes ÷ pace (before, the retries' reactions took the replies' turns).
/// Pull request `pr` with a head of its own, and `body` commented on it by `(login, its
/// author_association)`, delivered.
fn command_on_own_pull(server: &FakeGithub, serve: &Serve, pr: u64, by: (&str, &str), body: &str) {
    let (login, association) = by;
    let head = format!("{:040x}", 0xabc0 + pr);
    fake_github::seed_pull(server, pr, &[(&head, "the change")]);
    let mut comment = webhook("derived.issue_comment.created.on_pull_request.json");
    let id = server.with(|m| m.add_comment(pr, login, "User", body));
    comment["issue"]["number"] = json!(pr);
    comment["comment"]["id"] = json!(id);
    comment["comment"]["body"] = json!(body);
    comment["comment"]["user"]["login"] = json!(login);
    comment["comment"]["author_association"] = json!(association);
    let delivery = format!("d-{pr}-{id}");
    assert_eq!(serve.deliver("issue_comment", &delivery, &comment), 202);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paced_commands_on_many_pull_requests_each_react_once_and_all_get_replies() {
    const PRS: u64 = 16;
    let server = fake().await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("itergate.db");
    // One write every 200 ms after a burst of 10: 16 workers wait more than the 1 s a
    // worker sleeps for a turn.
    let serve = Serve::start(
        &server.api_url(),
        &db,
        &["--workers", "16", "--writes-per-minute", "300"],
    );
    grant(&server, "maintainer", "write", "write");
    let started = Instant::now();
    for n in 0..PRS {
        let by = ("maintainer", "MEMBER");
        command_on_own_pull(&server, &serve, 100 + n, by, "/iterate help");
    }
    let replied = |m: &fake_github::model::Model| {
        (100..100 + PRS)
            .filter(|pr| m.comments_on(*pr).iter().any(|c| c.author == BOT))
            .count() as u64
    };
    // Each command: 👀, the reply, then 👍 once it is done.
    let done = |m: &fake_github::model::Model| {
        m.reactions.iter().filter(|r| r.content == "+1").count() as u64
    };
    eventually(&serve, 60, "every command done", || {
        server.with(|m| replied(m) == PRS && done(m) == PRS)
    })
    .await;
    let took = started.elapsed();
    tokio::time::sleep(Duration::from_millis(500)).await;
    // Reactions GitHub was asked for: it answers 200 for one that exists, and the pace
    // charges a turn all the same.
    let eyes = server.with(|m| {
        m.requests
            .iter()
            .filter(|r| r.operation_id == "reactions/create-for-issue-comment")
            .filter(|r| r.body.as_ref().is_some_and(|b| b["content"] == "eyes"))
            .count() as u64
    });
    assert_eq!(eyes, PRS, "one 👀 per command");
    // Jobs waited for write turns: each came back more than once.
    let waited = serve.log().matches("rate limited; again in").count() as u64;
    assert!(waited >= PRS, "{waited} waits for a turn");
    // A job that waits for its turn does not read again: what it read is kept for its
    // next attempt, and a write forgets only what it can change (its reply: the comments).
    // So each command reads the pull request, the configuration and the permission once,
    // and the comments twice at most, however often it waited (before: once per attempt,
    // 49 of each here).
    for (op, most) in [
        ("pulls/get", PRS),
        ("repos/get-content", PRS),
        ("repos/get-collaborator-permission-level", PRS),
        ("issues/list-comments", 2 * PRS),
    ] {
        let reads = server.count(op) as u64;
        assert!(reads <= most, "{reads} calls of {op} for {PRS} commands");
    }
    // 3 writes a command at 5 a second after the burst of 10: about 7.6 s.
    assert!(took < Duration::from_secs(20), "took {took:?}");
    server.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_maintainers_command_is_answered_ahead_of_replies_to_a_reader_on_many_pull_requests() {
    const PRS: u64 = 20;
    let server = fake().await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("itergate.db");
    // One write every 200 ms after a burst of 10.
    let serve = Serve::start(
        &server.api_url(),
        &db,
        &["--workers", "16", "--writes-per-minute", "300"],
    );
    grant(&server, "stranger", "read", "read");
    grant(&server, "maintainer", "write", "write");
    // A reader without the permission asks on every pull request: each gets its refusal
    // (the reply limit is per pull request), two writes each, 40 in all.
    for n in 0..PRS {
        let by = ("stranger", "NONE");
        command_on_own_pull(&server, &serve, 100 + n, by, "/iterate accept");
    }
    let answered = |m: &fake_github::model::Model, prs: std::ops::Range<u64>| {
        prs.filter(|pr| m.comments_on(*pr).iter().any(|c| c.author == BOT))
            .count() as u64
    };
    eventually(&serve, 30, "the first refusals", || {
        server.with(|m| answered(m, 100..100 + PRS) >= 3)
    })
    .await;
    command_on_own_pull(
        &server,
        &serve,
        500,
        ("maintainer", "MEMBER"),
        "/iterate help",
    );
    eventually(&serve, 60, "the maintainer's reply", || {
        server.with(|m| answered(m, 500..501) == 1)
    })
    .await;
    // Its writes took the turns kept for the refusals: the readers still wait for theirs.
    let refused = server.with(|m| answered(m, 100..100 + PRS));
    assert!(
        refused + 5 <= PRS,
        "{refused} of {PRS} refusals went before the maintainer's reply"
    );
    // Every refusal gets its 😕, a job run again after its reply was posted too.
    let confused = |m: &fake_github::model::Model| {
        m.reactions
            .iter()
            .filter(|r| r.content == "confused")
            .count() as u64
    };
    eventually(&serve, 60, "every refusal and its reaction", || {
        server.with(|m| answered(m, 100..100 + PRS) == PRS && confused(m) == PRS)
    })
    .await;
    server.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_of_a_removed_installation_are_ignored_until_it_is_back() {
    let server = fake().await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("itergate.db");
    let serve = Serve::start(&server.api_url(), &db, &[]);
    let head = "a".repeat(40);
    seed_pr(&server, &head);
    let mut deleted = webhook("installation.deleted.1.json");
    deleted["installation"]["id"] = json!(INSTALLATION);
    assert_eq!(serve.deliver("installation", "d-del", &deleted), 202);
    eventually(&serve, 20, "the bookkeeping", || rows_now(&db, DONE) == 1).await;
    assert_eq!(serve.deliver("pull_request", "d-open", &opened(&head)), 202);
    eventually(&serve, 20, "the event", || rows_now(&db, DONE) == 2).await;
    assert!(sticky_comments(&server).is_empty());
    assert_eq!(
        rows(&db, "SELECT COUNT(*) FROM deliveries WHERE outcome LIKE 'ignored: installation 77 was removed%'").await,
        1
    );
    // Installed again: events count again, and no token was minted for the removed one.
    assert_eq!(server.with(|m| m.app.as_ref().unwrap().tokens.len()), 0);
    let mut created = webhook("installation.created.1.json");
    created["installation"]["id"] = json!(INSTALLATION);
    assert_eq!(serve.deliver("installation", "d-new", &created), 202);
    eventually(&serve, 20, "the bookkeeping", || rows_now(&db, DONE) == 3).await;
    let mut event = opened(&head);
    event["action"] = json!("reopened");
    assert_eq!(serve.deliver("pull_request", "d-reopen", &event), 202);
    eventually(&serve, 20, "the comment", || {
        sticky_comments(&server).len() == 1
    })
    .await;
    server.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_github_does_not_know_yet_is_replaced_and_the_job_completes() {
    let server = fake().await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("itergate.db");
    let serve = Serve::start(&server.api_url(), &db, &[]);
    let head = "a".repeat(40);
    seed_pr(&server, &head);
    // A just-minted token can be refused for a moment.
    server.fail_next("issues/list-comments", Fault::BadCredentials, 1);
    assert_eq!(serve.deliver("pull_request", "d-open", &opened(&head)), 202);
    eventually(&serve, 20, "the comment", || {
        sticky_comments(&server).len() == 1
    })
    .await;
    assert_eq!(server.with(|m| m.app.as_ref().unwrap().tokens.len()), 2);
    assert!(
        serve.log().contains("token refused; minting a new one"),
        "{}",
        serve.log()
    );
    server.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agents_gap_report_gets_one_delivery_read_through_the_api() {
    let server = fake().await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("itergate.db");
    let serve = Serve::start(&server.api_url(), &db, &[]);
    let head = "c".repeat(40);
    seed_pr(&server, &head);
    server.with(|m| {
        let mut add = |path: &str, text: &str| {
            m.files
                .insert((head.clone(), path.into()), text.as_bytes().to_vec());
        };
        add("src/lib.rs", "fn answer() -> u32 {\n    42\n}\n");
        add(".env", "TOKEN=hunter2\n");
    });
    let body = "CONTEXT_GAP_REPORT\n------------------\n\
                NEEDS: src/lib.rs:1-2 | REASON: the failing call | ALTERNATIVE: I can guess\n\
                NEEDS: .env | REASON: the token | ALTERNATIVE: I can mock it\n\
                READY_TO_EXECUTE: false\n";
    let id = server.with(|m| m.add_comment(PR, "contributor", "User", body));
    let mut comment = webhook("derived.issue_comment.created.on_pull_request.json");
    comment["issue"]["number"] = json!(PR);
    comment["comment"]["id"] = json!(id);
    comment["comment"]["body"] = json!(body);
    comment["comment"]["user"]["login"] = json!("contributor");
    assert_eq!(serve.deliver("issue_comment", "d-gap", &comment), 202);
    let marker = format!("<!-- itergate:reply comment_{id} -->");
    let replies = || {
        server.with(|m| {
            m.comments_on(PR)
                .into_iter()
                .filter(|c| c.author == BOT && c.body.starts_with(&marker))
                .map(|c| c.body.clone())
                .collect::<Vec<_>>()
        })
    };
    eventually(&serve, 20, "the context delivery", || !replies().is_empty()).await;
    let reply = replies().remove(0);
    assert_message!("context_delivery_reply", &reply);
    // A property, whatever the snapshot says: the secret's value never reaches the reply.
    assert!(!reply.contains("hunter2"), "{reply}");
    server.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_record_the_junit_report_ci_uploads_is_read_and_judged() {
    let server = fake().await;
    server.with(|m| {
        m.files.insert(
            (BASE.into(), ".itergate.yml".into()),
            b"github:\n  reports:\n    - {artifact: test-results, format: junit, path: \"**/*.xml\"}\n".to_vec(),
        );
    });
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("itergate.db");
    let serve = Serve::start(&server.api_url(), &db, &[]);
    let head = "a".repeat(40);
    seed_pr(&server, &head);
    // A real CI's JUnit (absolute runner paths), beside a file the glob does not take.
    let junit = br#"<?xml version="1.0" encoding="UTF-8"?>
<testsuites><testsuite name="widgets" tests="3" failures="1">
  <testcase classname="widgets" name="adds"/>
  <testcase classname="widgets" name="subtracts"/>
  <testcase classname="widgets" name="divides" file="/home/runner/work/widgets/widgets/src/math.py" line="12">
    <failure message="ZeroDivisionError: division by zero">Traceback ...</failure>
  </testcase>
</testsuite></testsuites>"#;
    let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default();
    writer.start_file("reports/junit.xml", options).unwrap();
    writer.write_all(junit).unwrap();
    writer.start_file("reports/notes.txt", options).unwrap();
    writer.write_all(b"not a report").unwrap();
    let zip = writer.finish().unwrap().into_inner();
    server.with(|m| {
        m.artifacts.push(FakeArtifact {
            id: 7001,
            run_id: 701,
            name: "test-results".into(),
            zip,
            expired: false,
        })
    });
    assert_eq!(
        serve.deliver("workflow_run", "d-run", &workflow_run(701, &head, REPO)),
        202
    );
    eventually(&serve, 20, "the decision", || {
        sticky_comments(&server).len() == 1
    })
    .await;
    let sticky = sticky_comments(&server).remove(0);
    assert_message!("junit_report_judged", &sticky);
    // A property, whatever the snapshot says: the runner's absolute paths are not shown.
    assert!(!sticky.contains("/home/runner"), "{sticky}");
    server.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_that_cannot_commit_gets_503_and_the_redelivery_is_stored() {
    let server = fake().await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("itergate.db");
    let serve = Serve::start(&server.api_url(), &db, &[]);
    let head = "a".repeat(40);
    seed_pr(&server, &head);
    // Another process holds the database's write lock.
    let holder = rusqlite::Connection::open(&db).unwrap();
    holder.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let started = Instant::now();
    assert_eq!(serve.deliver("pull_request", "d-1", &opened(&head)), 503);
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "answered inside GitHub's 10 s"
    );
    // Not ready while the lock is held: /readyz says so, within its second.
    let started = Instant::now();
    assert_eq!(serve.ready(), 503);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    holder.execute_batch("ROLLBACK").unwrap();
    holder.close().map_err(|(_, e)| e).unwrap();
    assert_eq!(serve.ready(), 200);
    assert_eq!(rows(&db, "SELECT COUNT(*) FROM deliveries").await, 0);
    let (_, metrics) = serve.metrics();
    assert!(metrics.contains("reason=\"database\"} 1"), "{metrics}");
    // GitHub delivers again: stored and applied.
    assert_eq!(serve.deliver("pull_request", "d-1", &opened(&head)), 202);
    eventually(&serve, 20, "the comment", || {
        sticky_comments(&server).len() == 1
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_of_an_older_version_is_upgraded_at_start_and_keeps_its_deliveries() {
    use itergate::serve::store::Store;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("itergate.db");
    Store::open(&db).await.unwrap().close().await;
    // As version 1 left it: no index of the unfinished jobs, no table of waiting heads, and
    // a delivery stored as it came.
    {
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute_batch(
            "DROP INDEX deliveries_unfinished; DROP TABLE waiting;
             ALTER TABLE deliveries DROP COLUMN payload_encoding;
             ALTER TABLE deliveries DROP COLUMN body_sha;
             ALTER TABLE deliveries DROP COLUMN guid;
             ALTER TABLE deliveries DROP COLUMN write_settle_ms;
             DROP INDEX deliveries_claim_order;
             DROP INDEX deliveries_yielding;
             ALTER TABLE deliveries DROP COLUMN yields;
             DROP TABLE state_revisions;
             DROP TABLE replicas;
             INSERT INTO deliveries (delivery_id, event, job_key, payload, received_at, run_at)
                VALUES ('kept', 'pull_request', 'k', CAST('{\"number\": 7}' AS BLOB), 1, 1);
             PRAGMA user_version = 1;",
        )
        .unwrap();
        conn.close().map_err(|(_, e)| e).unwrap();
    }
    let store = Store::open(&db).await.unwrap();
    assert!(store.has_delivery("kept").await.unwrap());
    let job = store
        .claim(
            "upgrade",
            itergate::serve::store::now_ms(),
            Duration::from_secs(60),
        )
        .await
        .unwrap()
        .expect("the kept delivery");
    assert_eq!(job.payload, br#"{"number": 7}"#);
    assert_eq!(job.damaged, None);
    store.close().await;
    assert_eq!(rows(&db, "PRAGMA user_version").await, 12);
    for name in [
        "deliveries_unfinished",
        "deliveries_claim_order",
        "deliveries_yielding",
        "waiting",
        "deliveries_finished",
        "replicas",
    ] {
        assert_eq!(
            rows(
                &db,
                &format!("SELECT COUNT(*) FROM sqlite_master WHERE name = '{name}'")
            )
            .await,
            1,
            "{name}"
        );
    }
}

/// A store on a new SQLite file, and the directory that holds it.
async fn sqlite_store() -> (tempfile::TempDir, itergate::serve::store::Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = itergate::serve::store::Store::open(&dir.path().join("itergate.db"))
        .await
        .unwrap();
    (dir, store)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_table_of_waiting_heads_keeps_its_rules() {
    let (_dir, store) = sqlite_store().await;
    app_server::check_waiting_rules(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lapsed_lease_is_taken_over_at_once_unless_a_write_was_in_flight() {
    let (_dir, store) = sqlite_store().await;
    app_server::check_takeover_waits_only_for_writes_in_flight(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_is_its_instance_id_and_only_its_own_machine_frees_its_jobs() {
    let (_dir, store) = sqlite_store().await;
    app_server::check_replica_rules(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_takes_the_first_job_of_a_key_that_is_due_and_free() {
    let (_dir, store) = sqlite_store().await;
    app_server::check_claim_rules(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finished_deliveries_are_deleted_after_the_days_kept() {
    let (_dir, store) = sqlite_store().await;
    app_server::check_prune_rules(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ledger_of_state_revisions_only_rises() {
    let (_dir, store) = sqlite_store().await;
    app_server::check_state_revision_rules(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_can_pass_over_the_installations_that_run_the_most() {
    let (_dir, store) = sqlite_store().await;
    app_server::check_claims_avoid_installations(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_readers_commands_are_claimed_after_everyone_elses_work() {
    let (_dir, store) = sqlite_store().await;
    app_server::check_claims_yield(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sweep_deletes_what_was_finished_before_keep_days_and_refuses_fewer_than_3() {
    use itergate::serve::store::{now_ms, Store};
    let server = fake().await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("itergate.db");
    let day = 24 * 3600 * 1000_i64;
    let store = Store::open(&db).await.unwrap();
    for (id, age_days) in [("ten-days-old", 10), ("four-days-old", 4)] {
        let (key, body) = (format!("{REPO}#{id}"), format!(r#"{{"id": "{id}"}}"#));
        store
            .receive(app_server::stored_webhook(
                id,
                &key,
                "issue_comment",
                body.as_bytes(),
            ))
            .await
            .unwrap();
        app_server::finish_next(&store, "test", now_ms() - age_days * day).await;
    }
    store.close().await;

    let refused = std::process::Command::new(app_server::BIN)
        .args(["serve", "--app-id", "1", "--private-key-path", "k.pem"])
        .args(["--webhook-secret", "s", "--keep-days", "2"])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    insta::assert_snapshot!(stderr, @"
        error: invalid value '2' for '--keep-days <DAYS>': expected at least 3 days: GitHub may redeliver a delivery for 3 days, and a delivery deleted before would run again

        For more information, try '--help'.
        ");

    let serve = Serve::start(&server.api_url(), &db, &["--keep-days", "5"]);
    eventually(&serve, 20, "the sweep's deletion", || {
        serve.metric("itergate_deliveries_pruned_total") == Some(1.0)
    })
    .await;
    assert_eq!(
        rows(
            &db,
            "SELECT COUNT(*) FROM deliveries WHERE guid = 'ten-days-old'"
        )
        .await,
        0
    );
    assert_eq!(
        rows(
            &db,
            "SELECT COUNT(*) FROM deliveries WHERE guid = 'four-days-old'"
        )
        .await,
        1
    );
    assert!(serve
        .log()
        .contains("deleted 1 deliveries finished more than 5 days ago (--keep-days)"));
    // A kept delivery is still "seen before".
    assert_eq!(
        serve.post(
            "issue_comment",
            "four-days-old",
            br#"{"id": "four-days-old"}"#,
            None
        ),
        200
    );
}

#[test]
fn a_database_that_cannot_be_reached_at_start_is_named_with_the_cause() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let dir = tempfile::tempdir().unwrap();
    let mut errors = String::new();
    for database in [
        format!("postgres://itergate@127.0.0.1:{port}/itergate"),
        dir.path()
            .join("no/such/dir/itergate.db")
            .display()
            .to_string(),
    ] {
        let out = std::process::Command::new(app_server::BIN)
            .args(["serve", "--listen", "127.0.0.1:0", "--database", &database])
            .env("ITERGATE_APP_ID", "1")
            .env(
                "ITERGATE_PRIVATE_KEY_PATH",
                app_server::fixture_path("app/test-app-key.pem"),
            )
            .env("ITERGATE_WEBHOOK_SECRET", "s")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        errors.push_str(&stderr.replace(dir.path().to_str().unwrap(), "<dir>"));
    }
    insta::with_settings!({ filters => redact::filters() }, {
        insta::assert_snapshot!(errors, @"
            itergate: error: --database postgres://itergate@127.0.0.1:[port]/itergate: database: error communicating with database: Connection refused (os error 111)
            itergate: error: --database <dir>/no/such/dir/itergate.db: database: unable to open database file (code 14)
            ");
    });
}

/// A reconcile as short as a test allows: the sweep's interval, 1.2 s.
const QUICK_SWEEP: [&str; 2] = ["--sweep-minutes", "0.02"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_event_never_came_is_found_by_the_reconcile_and_decides() {
    let server = fake().await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("itergate.db");
    let serve = Serve::start(&server.api_url(), &db, &QUICK_SWEEP);
    let head = "a".repeat(40);
    seed_pr(&server, &head);
    assert_eq!(serve.deliver("pull_request", "d-open", &opened(&head)), 202);
    waits_for_checks(&serve, &server, 20, "aaaaaaa").await;

    // CI ran and uploaded its record, but GitHub never delivered `workflow_run` (and its
    // deliveries list has nothing to redeliver). Another head's run must not count.
    upload(&server, 601, record(&head, 0.5));
    upload(&server, 602, record(&"c".repeat(40), 1.0));
    server.with(|m| {
        let mut run = FakeRun::new(601, &head, "pull_request", "completed");
        run.pull_requests = vec![PR];
        m.workflow_runs = vec![
            run,
            FakeRun::new(602, &"c".repeat(40), "pull_request", "completed"),
        ];
    });
    eventually(&serve, 30, "the decision from the reconcile", || {
        sticky_comments(&server)
            .first()
            .is_some_and(|b| b.contains("teration 1"))
    })
    .await;
    let sticky = sticky_comments(&server);
    assert_eq!(sticky.len(), 1, "{sticky:?}");
    assert_message!("decided_by_the_reconcile", &sticky[0]);
    let gate = || {
        server.with(|m| {
            m.check_runs
                .iter()
                .filter(|r| r.name == "itergate" && r.status == "completed")
                .count()
        })
    };
    eventually(&serve, 10, "the gate's check run", || gate() == 1).await;
    eventually(&serve, 10, "the head no longer waiting", || {
        rows_now(&db, "SELECT COUNT(*) FROM waiting") == 0
    })
    .await;
    // Decided: no more checks of this PR.
    let listed = server.count("actions/list-workflow-runs-for-repo");
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(server.count("actions/list-workflow-runs-for-repo"), listed);
    assert!(
        serve.log().contains("checking them against GitHub"),
        "{}",
        serve.log()
    );
    assert!(
        rows(
            &db,
            "SELECT COUNT(*) FROM deliveries WHERE event = 'itergate.reconcile' AND outcome LIKE '%record had not been read%'"
        )
        .await
            == 1
    );
    server.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_pull_request_waits_no_more_and_a_lost_push_is_caught_up() {
    let server = fake().await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("itergate.db");
    let serve = Serve::start(&server.api_url(), &db, &QUICK_SWEEP);
    let head = "a".repeat(40);
    seed_pr(&server, &head);
    assert_eq!(serve.deliver("pull_request", "d-open", &opened(&head)), 202);
    waits_for_checks(&serve, &server, 20, "aaaaaaa").await;
    // A push whose `synchronize` never came: the reconcile follows the PR's new head.
    let moved = "d".repeat(40);
    server.with(|m| m.pulls.get_mut(&PR).unwrap().head_sha = moved.clone());
    waits_for_checks(&serve, &server, 30, "ddddddd").await;
    // The comment is written first, the table of waiting heads right after it.
    eventually(&serve, 10, "the new head waiting", || {
        rows_now(&db, "SELECT COUNT(*) FROM waiting WHERE head_sha = 'dddddddddddddddddddddddddddddddddddddddd'") == 1
    })
    .await;
    let (_, metrics) = serve.metrics();
    assert!(
        metrics.contains("itergate_waiting_pull_requests 1"),
        "{metrics}"
    );
    // Closed: the next check drops it and writes nothing.
    server.with(|m| m.pulls.get_mut(&PR).unwrap().closed = true);
    let before = sticky_comments(&server);
    eventually(&serve, 30, "the closed PR dropped", || {
        rows_now(&db, "SELECT COUNT(*) FROM waiting") == 0
    })
    .await;
    assert_eq!(sticky_comments(&server), before);
    server.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pull_request_of_a_removed_installation_waits_no_more() {
    let server = fake().await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("itergate.db");
    let serve = Serve::start(&server.api_url(), &db, &QUICK_SWEEP);
    let head = "a".repeat(40);
    seed_pr(&server, &head);
    assert_eq!(serve.deliver("pull_request", "d-open", &opened(&head)), 202);
    eventually(&serve, 20, "the head waiting", || {
        rows_now(&db, "SELECT COUNT(*) FROM waiting") == 1
    })
    .await;
    let mut deleted = webhook("installation.deleted.1.json");
    deleted["installation"]["id"] = json!(INSTALLATION);
    assert_eq!(serve.deliver("installation", "d-del", &deleted), 202);
    // The reconcile job drops the row, then its outcome is recorded.
    eventually(&serve, 30, "the head dropped by the reconcile", || {
        rows_now(&db, "SELECT COUNT(*) FROM waiting") == 0
            && rows_now(
                &db,
                "SELECT COUNT(*) FROM deliveries WHERE event = 'itergate.reconcile'
                 AND outcome LIKE 'ignored: installation 77 was removed%'",
            ) == 1
    })
    .await;
    assert_eq!(server.count("actions/list-workflow-runs-for-repo"), 0);
    server.assert_no_violations();
}

/// Pacing waits are not slept inside a worker: one installation whose commenters used up its
/// writes has its jobs rescheduled for its next turn, and another installation's command is
/// answered at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_installations_paced_writes_do_not_hold_up_another() {
    let server = fake().await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("itergate.db");
    // A write every 10 s after a burst of 10: a dozen commands are minutes of writes.
    let serve = Serve::start(&server.api_url(), &db, &["--writes-per-minute", "6"]);
    grant(&server, "maintainer", "admin", "admin");
    for pr in 101..113 {
        fake_github::seed_pull(&server, pr, &[(&"a".repeat(40), "c")]);
        let payload = app_server::comment(&server, pr, "maintainer", "/iterate help");
        assert_eq!(
            serve.deliver("issue_comment", &format!("flood-{pr}"), &payload),
            202
        );
    }
    eventually(&serve, 20, "the first installation out of turns", || {
        serve.log().contains("writes are paced")
    })
    .await;
    fake_github::seed_pull(&server, 200, &[(&"b".repeat(40), "c")]);
    let mut other = app_server::comment(&server, 200, "maintainer", "/iterate help");
    other["installation"]["id"] = json!(INSTALLATION + 1);
    let sent = Instant::now();
    assert_eq!(serve.deliver("issue_comment", "other", &other), 202);
    eventually(&serve, 20, "the other installation's reply", || {
        app_server::replies(&server, 200) == 1
    })
    .await;
    let took = sent.elapsed();
    assert!(took < Duration::from_secs(3), "answered after {took:?}");
    // The first installation's jobs wait in the queue, not in a worker, and none is lost.
    let waiting = rows_now(&db, "SELECT COUNT(*) FROM deliveries WHERE done_at IS NULL");
    assert!(waiting > 0, "the paced jobs wait for their turn");
    assert!(
        serve
            .metric("itergate_jobs_total{outcome=\"rate_limited\"}")
            .unwrap_or(0.0)
            >= 1.0
    );
}

#[test]
fn a_sweep_interval_no_duration_holds_is_refused_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("itergate.db");
    let out = std::process::Command::new(app_server::BIN)
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--sweep-minutes",
            "1e300",
        ])
        .arg("--database")
        .arg(&db)
        .env("ITERGATE_APP_ID", "1")
        .env(
            "ITERGATE_PRIVATE_KEY_PATH",
            app_server::fixture_path("app/test-app-key.pem"),
        )
        .env("ITERGATE_WEBHOOK_SECRET", "s")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    insta::assert_snapshot!(stderr, @"
        error: invalid value '1e300' for '--sweep-minutes <MINUTES>': expected a number of minutes from 1/60 (one second) to 10080 (a week)

        For more information, try '--help'.
        ");
    assert!(!db.exists(), "nothing was created");
}

/// A job the drain cut short lets its lease go on exit: the next start runs it at once,
/// even with a lease far longer than the restart takes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_cut_short_by_the_drain_lets_its_lease_go() {
    let server = fake().await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("itergate.db");
    let args = ["--lease-seconds", "120", "--drain-seconds", "1"];
    let mut serve = Serve::start(&server.api_url(), &db, &args);
    // A read in flight: a write cut short may still land, and waits for the settle.
    a_job_hanging_on(&server, &serve, "repos/get-collaborator-permission-level").await;
    unsafe { libc::kill(serve.child.id() as i32, libc::SIGTERM) };
    assert!(serve.child.wait().unwrap().success(), "{}", serve.log());
    let leased =
        "SELECT COUNT(*) FROM deliveries WHERE done_at IS NULL AND lease_owner IS NOT NULL";
    // Freed on exit, not only by a restart on this host (which frees a dead predecessor's
    // leases too): a replica on another host takes it at once.
    assert_eq!(rows_now(&db, leased), 0, "{}", serve.log());
    let started = Instant::now();
    let serve = Serve::start(&server.api_url(), &db, &args);
    eventually(&serve, 30, "the job done after the restart", || {
        rows_now(&db, DONE) == 1
    })
    .await;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(app_server::replies(&server, PR), 1, "one reply");
}

/// The App's own comments quote the gap-report template: they are never work, and cost no
/// API call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_apps_own_comment_costs_no_api_call() {
    let server = fake().await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("itergate.db");
    let serve = Serve::start(&server.api_url(), &db, &[]);
    let body =
        "<!-- itergate:sticky -->\nReply with:\n\nCONTEXT_GAP_REPORT\nNEEDS: file src/lib.rs\n";
    let mut payload = app_server::comment(&server, PR, BOT, body);
    payload["comment"]["user"]["type"] = json!("Bot");
    eventually(&serve, 10, "the bot's login known", || {
        serve.log().contains("workers started")
    })
    .await;
    // The start's own calls are made: the sweep of recent deliveries comes after the
    // workers start.
    eventually(&serve, 10, "the start's sweep", || {
        server
            .operations()
            .iter()
            .any(|op| op == "apps/list-webhook-deliveries")
    })
    .await;
    let before = server.operations().len();
    assert_eq!(serve.deliver("issue_comment", "d-own", &payload), 202);
    eventually(&serve, 20, "the job", || rows_now(&db, DONE) == 1).await;
    assert_eq!(
        server.operations().len(),
        before,
        "{:?}",
        server.operations()
    );
    assert!(
        serve.log().contains("the App's own comment"),
        "{}",
        serve.log()
    );
}

/// An artifact that is there but refused (here: too many entries to read) is said to be
/// refused, and why, not "no record".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_artifact_says_why() {
    let server = fake().await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("itergate.db");
    let serve = Serve::start(&server.api_url(), &db, &[]);
    let head = "c".repeat(40);
    seed_pr(&server, &head);
    let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for i in 0..=itergate::github::artifact::MAX_ENTRIES {
        writer
            .start_file(format!("e{i}"), zip::write::SimpleFileOptions::default())
            .unwrap();
    }
    let zip = writer.finish().unwrap().into_inner();
    server.with(|m| {
        m.artifacts.push(FakeArtifact {
            id: 1601,
            run_id: 601,
            name: fake_github::bound_name("itergate-record", b"{}"),
            zip,
            expired: false,
        })
    });
    let run = workflow_run(601, &head, REPO);
    assert_eq!(serve.deliver("workflow_run", "d-bomb", &run), 202);
    eventually(&serve, 20, "the job", || rows_now(&db, DONE) == 1).await;
    let outcome = rows_text(&db, "SELECT outcome FROM deliveries");
    insta::assert_snapshot!(outcome, @"refused: download artifact: artifact `itergate-record-44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a` of run 601: the archive lists 10001 entries, more than the 10000 itergate reads");
    // Said on the head too, so the pull request does not wait for a decision.
    let refused = server.with(|m| {
        m.check_runs
            .iter()
            .find(|c| c.head_sha == head && c.conclusion.as_deref() == Some("failure"))
            .map(|c| c.output["summary"].as_str().unwrap_or_default().to_string())
    });
    let summary = refused.expect("a failure check run on the head");
    assert!(
        summary.contains("workflow run 601") && summary.contains("10001 entries"),
        "{summary}"
    );
    server.assert_no_violations();
}

fn rows_text(db: &Path, sql: &str) -> String {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.query_row(sql, [], |row| row.get(0)).unwrap()
}

/// Neither the delivery id nor the event header is signed: the same signed body under new
/// ids is a replay, stored once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signed_body_replayed_under_new_delivery_ids_is_stored_once() {
    let server = fake().await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("itergate.db");
    let serve = Serve::start(&server.api_url(), &db, &[]);
    let head = "f".repeat(40);
    seed_pr(&server, &head);
    let body = opened(&head);
    let answers: Vec<u16> = ["d-1", "d-replay-1", "d-replay-2"]
        .iter()
        .map(|id| serve.deliver("pull_request", id, &body))
        .collect();
    assert_eq!(answers, [202, 200, 200]);
    assert_eq!(rows(&db, "SELECT COUNT(*) FROM deliveries").await, 1);
}

/// The App with `config` on the base, and CI's record of a failing head (a BLOCKER the agent
/// must fix) delivered as a completed run: the server, the database's directory, the App,
/// the head and the run's payload.
async fn app_with_a_failing_run(
    config: &[u8],
) -> (FakeGithub, tempfile::TempDir, Serve, String, Value) {
    let server = fake().await;
    server.with(|m| {
        m.files
            .insert((BASE.into(), ".itergate.yml".into()), config.to_vec());
    });
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start(&server.api_url(), dir.path().join("itergate.db"), &[]);
    let head = "a".repeat(40);
    seed_pr(&server, &head);
    let mut failing: Value = serde_json::from_slice(&record(&head, 0.5)).unwrap();
    failing["record"]["issues"] = json!([{ "dimension": "tests", "severity": "BLOCKER",
        "finding": "test adds failed: expected 3, got -1", "affected_field": "src/math.py:12",
        "suggested_fix": "make adds pass" }]);
    upload(&server, 501, serde_json::to_vec(&failing).unwrap());
    let run = workflow_run(501, &head, REPO);
    assert_eq!(serve.deliver("workflow_run", "d-run", &run), 202);
    (server, dir, serve, head, run)
}

/// `github.handoff` from the App: CI's record of a failing head gives one `workflow_dispatch`
/// of the agent's workflow, on the base branch; the run's completion delivered again under
/// another id dispatches nothing more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_app_hands_an_iterate_to_the_agents_workflow_once() {
    let (server, _dir, serve, head, mut run) = app_with_a_failing_run(
        b"github:\n  handoff: { via: workflow_dispatch, workflow: agent.yml }\n",
    )
    .await;
    eventually(&serve, 20, "the hand-off", || {
        sticky_comments(&server)
            .first()
            .is_some_and(|b| b.contains("Handed to the agent (1/5)"))
    })
    .await;
    // GitHub's redelivery, or anyone's, under another id and a changed body.
    run["workflow_run"]["updated_at"] = json!("2030-01-01T00:00:00Z");
    assert_eq!(serve.deliver("workflow_run", "d-run-again", &run), 202);
    eventually(&serve, 20, "the second job", || {
        serve
            .metric("itergate_jobs_total{outcome=\"done\"}")
            .unwrap_or(0.0)
            >= 2.0
    })
    .await;
    let dispatches = server.with(|m| m.dispatches.clone());
    assert_eq!(dispatches.len(), 1, "{dispatches:?}");
    assert_eq!(dispatches[0]["workflow_id"], "agent.yml");
    assert_eq!(dispatches[0]["inputs"]["pr"], PR.to_string());
    assert_eq!(dispatches[0]["inputs"]["head_sha"], head);
    assert!(dispatches[0]["ref"].is_string(), "{dispatches:?}");
    server.assert_no_violations();
}

/// `github.handoff: { via: mention }`: the App's comment mentions the agent's handle (an
/// App's comments start workflows, a workflow token's do not), once per head.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_app_can_hand_an_iterate_to_an_agent_that_answers_mentions() {
    let (server, _dir, serve, _, mut run) =
        app_with_a_failing_run(b"github:\n  handoff: { via: mention, handle: \"@claude\" }\n")
            .await;
    let mentions = || {
        server.with(|m| {
            m.comments
                .iter()
                .filter(|c| c.body.contains("@claude itergate asks for a revision"))
                .count()
        })
    };
    eventually(&serve, 20, "the mention", || mentions() == 1).await;
    run["workflow_run"]["updated_at"] = json!("2030-01-01T00:00:00Z");
    assert_eq!(serve.deliver("workflow_run", "d-run-again", &run), 202);
    eventually(&serve, 20, "the second job", || {
        serve
            .metric("itergate_jobs_total{outcome=\"done\"}")
            .unwrap_or(0.0)
            >= 2.0
    })
    .await;
    assert_eq!(mentions(), 1);
    assert_message!(
        "handed_to_an_agent_by_mention",
        &sticky_comments(&server)[0],
    );
    server.assert_no_violations();
}

/// F3: a pull request against a branch nobody trusts (`stale-agent-branch`) must not pick
/// the ref the agent's workflow runs from, with the repository's secrets: without
/// `github.handoff.ref`, the dispatch runs the workflow of the default branch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agents_workflow_runs_from_the_default_branch_never_an_untrusted_base() {
    let server = fake().await;
    let config = b"github:\n  handoff: { via: workflow_dispatch, workflow: agent.yml }\n";
    server.with(|m| {
        for at in [BASE, "main"] {
            m.files
                .insert((at.into(), ".itergate.yml".into()), config.to_vec());
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start(&server.api_url(), dir.path().join("itergate.db"), &[]);
    let head = "a".repeat(40);
    seed_pr(&server, &head);
    server.with(|m| {
        if let Some(pull) = m.pulls.get_mut(&PR) {
            pull.base_ref = "stale-agent-branch".into();
        }
    });
    let mut failing: Value = serde_json::from_slice(&record(&head, 0.5)).unwrap();
    failing["record"]["issues"] = json!([{ "dimension": "tests", "severity": "BLOCKER",
        "finding": "test adds failed: expected 3, got -1", "affected_field": "src/math.py:12",
        "suggested_fix": "make adds pass" }]);
    upload(&server, 501, serde_json::to_vec(&failing).unwrap());
    let run = workflow_run(501, &head, REPO);
    assert_eq!(serve.deliver("workflow_run", "d-run", &run), 202);
    eventually(&serve, 20, "the hand-off", || {
        server.with(|m| !m.dispatches.is_empty())
    })
    .await;
    let dispatches = server.with(|m| m.dispatches.clone());
    assert_eq!(dispatches.len(), 1, "{dispatches:?}");
    assert_eq!(dispatches[0]["ref"], "main", "{dispatches:?}");
    server.assert_no_violations();
}

/// F6: a fork's self-reported ITERATE is never handed to the repository's agent unless
/// `github.handoff.forks` says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forks_pull_request_is_never_handed_to_the_agent() {
    let server = fake().await;
    server.with(|m| {
        m.files.insert(
            (BASE.into(), ".itergate.yml".into()),
            b"github:\n  handoff: { via: repository_dispatch }\n".to_vec(),
        );
    });
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start(&server.api_url(), dir.path().join("itergate.db"), &[]);
    let head = "9".repeat(40);
    let fork = "mallory/widgets";
    seed_pr(&server, &head);
    server.with(|m| m.pulls.get_mut(&PR).unwrap().head_repo = fork.into());
    let mut failing: Value = serde_json::from_slice(&record(&head, 0.5)).unwrap();
    failing["record"]["issues"] = json!([{ "dimension": "tests", "severity": "BLOCKER",
        "finding": "test adds failed: expected 3, got -1", "affected_field": "src/math.py:12",
        "suggested_fix": "make adds pass" }]);
    failing["head_repo"] = json!(fork);
    upload(&server, 701, serde_json::to_vec(&failing).unwrap());
    let mut run = workflow_run(701, &head, fork);
    run["workflow_run"]["pull_requests"] = json!([]);
    assert_eq!(serve.deliver("workflow_run", "d-fork-run", &run), 202);
    eventually(&serve, 30, "the record published", || {
        sticky_comments(&server)
            .first()
            .is_some_and(|b| b.contains("teration 1"))
    })
    .await;
    let comment = sticky_comments(&server)
        .first()
        .cloned()
        .unwrap_or_default();
    assert_message!("fork_not_handed_to_the_agent", &comment);
    // A property, whatever the snapshot says: a fork's iterate is never handed off.
    assert!(!comment.contains("Handed to the agent"), "{comment}");
    let handed = server.with(|m| {
        m.dispatches
            .iter()
            .filter(|d| d["event_type"] == "itergate-revision")
            .count()
    });
    assert_eq!(handed, 0);
    server.assert_no_violations();
}

/// F1: after an iteration that failed a test, a record with no tests score at all (the
/// tests did not run, or did not report) is not a pass.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_without_tests_after_a_failing_one_is_not_accepted() {
    let (server, _dir, serve, _, _) =
        app_with_a_failing_run(b"stopping_criteria: { iteration_limits: { min: 1, max: 10 } }\n")
            .await;
    eventually(&serve, 20, "the first record", || {
        sticky_comments(&server)
            .first()
            .is_some_and(|b| b.contains("teration 1"))
    })
    .await;
    let head = "b".repeat(40);
    seed_pr(&server, &head);
    let mut silent: Value = serde_json::from_slice(&record(&head, 1.0)).unwrap();
    silent["record"]["scores"]["tests_passing"] = Value::Null;
    silent["record"]["iteration"] = json!(2);
    upload(&server, 502, serde_json::to_vec(&silent).unwrap());
    let run = workflow_run(502, &head, REPO);
    assert_eq!(serve.deliver("workflow_run", "d-run-2", &run), 202);
    eventually(&serve, 20, "the second record", || {
        sticky_comments(&server)
            .first()
            .is_some_and(|b| b.contains("teration 2"))
    })
    .await;
    let body = sticky_comments(&server)
        .first()
        .cloned()
        .unwrap_or_default();
    assert_message!("no_tests_score_after_a_failing_one", &body);
    // A property, whatever the snapshot says: a record without tests is never accepted.
    assert!(!body.contains("✅ accept"), "{body}");
    server.assert_no_violations();
}

/// M2: bodies trickled from five addresses, each under its per-address cap, fill the
/// connection cap: a genuine delivery from a sixth address takes the slot of the request
/// in flight longest and is answered 202.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_bodies_from_several_addresses_do_not_keep_a_delivery_out() {
    use tokio::io::AsyncWriteExt as _;
    let server = fake().await;
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start(
        &server.api_url(),
        dir.path().join("itergate.db"),
        &["--max-connections", "20", "--max-connections-per-peer", "5"],
    );
    let head = "e".repeat(40);
    seed_pr(&server, &head);
    // Each sends a byte every half second, under the chunk timeout, for eight seconds.
    let mut tricklers = tokio::task::JoinSet::new();
    for n in 0..25 {
        let source = format!("127.0.0.{}", 2 + n % 5);
        let mut stream = unauthenticated(&serve.addr, &source, 4096, b"{").await;
        tricklers.spawn(async move {
            for _ in 0..16 {
                tokio::time::sleep(Duration::from_millis(500)).await;
                if stream.write_all(b" ").await.is_err() {
                    return;
                }
            }
        });
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let started = Instant::now();
    let answered: Vec<u16> = (0..3)
        .map(|n| serve.deliver("pull_request", &format!("d-slow-{n}"), &opened(&head)))
        .collect();
    assert_eq!(answered, [202, 200, 200], "stored once, then known");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    tricklers.abort_all();
}

/// Opens a connection to `addr` from `source` and sends a webhook's headers declaring
/// `length` bytes with a well-formed (wrong) signature, then `body`.
async fn unauthenticated(
    addr: &str,
    source: &str,
    length: usize,
    body: &[u8],
) -> tokio::net::TcpStream {
    use tokio::io::AsyncWriteExt as _;
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind(format!("{source}:0").parse().unwrap()).unwrap();
    let mut stream = socket.connect(addr.parse().unwrap()).await.unwrap();
    let head = format!(
        "POST /webhook HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nX-GitHub-Event: ping\r\nX-GitHub-Delivery: d-x\r\nX-Hub-Signature-256: sha256={}\r\nContent-Length: {length}\r\n\r\n",
        "0".repeat(64)
    );
    // Past the per-address cap the server closes the connection at once: a write may then
    // meet a closed pipe, which is the refusal the caller means to cause.
    let _ = stream.write_all(head.as_bytes()).await;
    let _ = stream.write_all(body).await;
    stream
}

/// F2: forty senders that declare a megabyte each and send nothing hold no room (the
/// budget is charged as bytes arrive), and one address that trickles bodies on many
/// connections cannot take the slots GitHub's deliveries need: a genuine delivery from
/// another address is answered 202 at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unauthenticated_senders_cannot_hold_the_front_doors_shared_limits() {
    let server = fake().await;
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start(
        &server.api_url(),
        dir.path().join("itergate.db"),
        &[
            "--max-connections",
            "60",
            "--max-connections-per-peer",
            "50",
        ],
    );
    let head = "c".repeat(40);
    seed_pr(&server, &head);
    let mut held = Vec::new();
    for _ in 0..40 {
        held.push(unauthenticated(&serve.addr, "127.0.0.2", 1024 * 1024, b"").await);
    }
    let started = Instant::now();
    assert_eq!(
        serve.deliver("pull_request", "d-genuine", &opened(&head)),
        202
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    drop(held);

    // Slow bodies, a byte a second, from one address on more connections than the cap.
    let serve = Serve::start(
        &server.api_url(),
        dir.path().join("itergate-2.db"),
        &["--max-connections", "24", "--max-connections-per-peer", "8"],
    );
    let mut trickling = Vec::new();
    for _ in 0..30 {
        trickling.push(unauthenticated(&serve.addr, "127.0.0.2", 4096, b"{").await);
    }
    let answered: Vec<u16> = (0..3)
        .map(|n| serve.deliver("pull_request", &format!("d-genuine-{n}"), &opened(&head)))
        .collect();
    assert_eq!(answered, [202, 200, 200], "stored once, then known");
    drop(trickling);
}
