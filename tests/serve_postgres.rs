//! `itergate serve` on PostgreSQL, against a real server ([`pg_server`]): the store as
//! several replicas use it at once (claims, duplicates, migrations, the sweep's lock), and
//! end to end, three replicas of the real binary on one database, one killed with SIGKILL
//! and the database restarted under load.

mod app_server;
mod fake_github;
mod pg_server;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use app_server::stored_delivery as delivery;
use app_server::{comment, fake, pull_request, replies, sticky_comments, Serve, BOT};
use fake_github::{grant, seed_pull, FakeGithub, REPO};
use itergate::serve::store::{Location, OpenOptions, Received, Store};
use pg_server::{wait_for, Postgres};
use serde_json::Value;

async fn open(pg: &Postgres) -> Store {
    open_settling(pg, itergate::serve::store::TAKEOVER_SETTLE).await
}

/// [`open`], a lease that ran out taken over `settle` after its end.
async fn open_settling(pg: &Postgres, settle: Duration) -> Store {
    Store::connect(
        &Location::parse(pg.url()),
        &OpenOptions {
            max_connections: 8,
            takeover_settle: settle,
        },
    )
    .await
    .expect("open the store on PostgreSQL")
}

/// What the claiming workers saw, in the order it happened.
#[derive(Debug, Clone, PartialEq)]
enum Seen {
    Start(String, i64),
    End(String, i64),
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_claiming_at_once_run_each_job_once_and_a_keys_jobs_one_at_a_time_in_order() {
    let pg = Postgres::start().await;
    let stores = vec![open(&pg).await, open(&pg).await, open(&pg).await];
    const KEYS: usize = 8;
    const PER_KEY: usize = 12;
    const ORDERED_KEYS: usize = KEYS / 2;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let done = Arc::new(AtomicUsize::new(0));
    // Four workers per replica claim while the deliveries arrive.
    let mut workers = tokio::task::JoinSet::new();
    for (r, store) in stores.iter().enumerate() {
        for w in 0..4 {
            let (store, seen, done) = (store.clone(), seen.clone(), done.clone());
            let owner = format!("replica-{r}-{w}");
            workers.spawn(async move {
                let mut completed = Vec::new();
                while done.load(Ordering::SeqCst) < KEYS * PER_KEY {
                    let now = itergate::serve::store::now_ms();
                    let claimed = store.claim(&owner, now, Duration::from_secs(60)).await;
                    let Some(job) = claimed.expect("claim") else {
                        tokio::time::sleep(Duration::from_millis(5)).await;
                        continue;
                    };
                    let key = job.delivery_id.split('/').next().unwrap().to_string();
                    seen.lock().unwrap().push(Seen::Start(key.clone(), job.seq));
                    tokio::time::sleep(Duration::from_millis(job.seq as u64 % 4)).await;
                    seen.lock().unwrap().push(Seen::End(key, job.seq));
                    let now = itergate::serve::store::now_ms();
                    assert!(store.complete(&job, &owner, now, "done").await.unwrap());
                    completed.push(job.seq);
                    done.fetch_add(1, Ordering::SeqCst);
                }
                completed
            });
        }
    }
    // Half the keys get their deliveries one after the other, at the replicas in turn, and
    // each one at a second replica at the same moment (GitHub's redelivery racing the
    // first). The other half get theirs all at once, at all replicas: they become visible in
    // no particular order, and still must not run two at a time.
    let mut producers = tokio::task::JoinSet::new();
    for k in ORDERED_KEYS..KEYS {
        for i in 0..PER_KEY {
            let store = stores[i % 3].clone();
            producers.spawn(async move {
                let d = delivery(&format!("key{k}/{i}"), &format!("{REPO}#{k}"));
                assert_eq!(store.receive(d).await.expect("stored"), Received::New);
            });
        }
    }
    for k in 0..ORDERED_KEYS {
        let stores = stores.clone();
        producers.spawn(async move {
            for i in 0..PER_KEY {
                let d = delivery(&format!("key{k}/{i}"), &format!("{REPO}#{k}"));
                let (a, b) = (&stores[(k + i) % 3], &stores[(k + i + 1) % 3]);
                let (x, y) = tokio::join!(a.receive(d.clone()), b.receive(d));
                let mut answers = vec![x.expect("stored"), y.expect("stored")];
                answers.sort_by_key(|r| *r == Received::Duplicate);
                assert_eq!(answers, vec![Received::New, Received::Duplicate]);
            }
        });
    }
    while let Some(p) = producers.join_next().await {
        p.unwrap();
    }
    let mut completed = Vec::new();
    while let Some(w) = workers.join_next().await {
        completed.extend(w.unwrap());
    }
    completed.sort();
    let before = completed.len();
    completed.dedup();
    assert_eq!(before, completed.len(), "a job completed twice");
    assert_eq!(completed.len(), KEYS * PER_KEY);
    assert_eq!(
        pg.scalar("SELECT COUNT(*) FROM deliveries").await,
        (KEYS * PER_KEY) as i64
    );
    // Per key: start, end, start, end... in the order the deliveries arrived when they
    // arrived one after the other.
    let seen = seen.lock().unwrap().clone();
    for k in 0..KEYS {
        let key = format!("key{k}");
        let events: Vec<&Seen> = seen
            .iter()
            .filter(|s| matches!(s, Seen::Start(x, _) | Seen::End(x, _) if *x == key))
            .collect();
        let mut last_seq = 0;
        for pair in events.chunks(2) {
            match pair {
                [Seen::Start(_, a), Seen::End(_, b)]
                    if a == b && (*a > last_seq || k >= ORDERED_KEYS) =>
                {
                    last_seq = *a
                }
                other => panic!("{key}: two jobs at once or out of order: {other:?}\n{events:?}"),
            }
        }
        assert_eq!(events.len(), 2 * PER_KEY);
    }
    let order = pg
        .pairs(
            "SELECT seq, CAST(split_part(delivery_id, '/', 2) AS BIGINT) FROM deliveries
             WHERE job_key = 'octo-org/widgets#3' ORDER BY seq",
        )
        .await;
    let arrival: Vec<i64> = order.iter().map(|(_, i)| *i).collect();
    assert_eq!(arrival, (0..PER_KEY as i64).collect::<Vec<_>>());
    for store in &stores {
        store.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_committed_late_with_an_earlier_seq_waits_while_its_pull_request_is_busy() {
    let pg = Postgres::start().await;
    let (a, b) = (open(&pg).await, open(&pg).await);
    let key = format!("{REPO}#5");
    // Replica A's group commit takes its seq first but commits last.
    let mut slow = <sqlx::PgConnection as sqlx::Connection>::connect(pg.url())
        .await
        .unwrap();
    sqlx::raw_sql("BEGIN").execute(&mut slow).await.unwrap();
    sqlx::query(
        "INSERT INTO deliveries (delivery_id, event, job_key, payload, received_at, run_at)
         VALUES ('late', 'pull_request', $1, '\\x7b7d', 0, 0)",
    )
    .bind(&key)
    .execute(&mut slow)
    .await
    .unwrap();
    assert_eq!(
        b.receive(delivery("visible", &key)).await.unwrap(),
        Received::New
    );
    let now = itergate::serve::store::now_ms;
    let lease = Duration::from_secs(60);
    let running = b.claim("b-0", now(), lease).await.unwrap().expect("a job");
    assert_eq!(running.delivery_id, "visible");
    sqlx::raw_sql("COMMIT").execute(&mut slow).await.unwrap();
    // The PR is busy: the earlier job waits, though nothing earlier is unfinished.
    assert!(a.claim("a-0", now(), lease).await.unwrap().is_none());
    assert!(b.complete(&running, "b-0", now(), "done").await.unwrap());
    let next = a
        .claim("a-0", now(), lease)
        .await
        .unwrap()
        .expect("the late job");
    assert_eq!(next.delivery_id, "late");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_deliveries_at_two_replicas_in_opposite_orders_are_stored_once_each() {
    let pg = Postgres::start().await;
    let (a, b) = (open(&pg).await, open(&pg).await);
    const N: usize = 300;
    let mut sends = tokio::task::JoinSet::new();
    for i in 0..N {
        let (a, b) = (a.clone(), b.clone());
        // Opposite orders: group commits at the two replicas lock the same ids crosswise.
        let j = N - 1 - i;
        sends.spawn(async move {
            let x = a
                .receive(delivery(&format!("d{i}"), &format!("k{i}")))
                .await;
            (i, x)
        });
        sends.spawn(async move {
            let y = b
                .receive(delivery(&format!("d{j}"), &format!("k{j}")))
                .await;
            (j, y)
        });
    }
    let mut new = BTreeMap::new();
    while let Some(sent) = sends.join_next().await {
        let (i, received) = sent.unwrap();
        if received.expect("stored") == Received::New {
            *new.entry(i).or_insert(0) += 1;
        }
    }
    assert_eq!(new.len(), N, "every delivery stored");
    assert!(
        new.values().all(|n| *n == 1),
        "one of the two copies is new"
    );
    assert_eq!(pg.scalar("SELECT COUNT(*) FROM deliveries").await, N as i64);
    // Handed over together (one group commit): stored in the order they came, and a copy
    // within the group is a duplicate.
    let key = "octo-org/widgets#1";
    let answers = tokio::join!(
        a.receive(delivery("g-1", key)),
        a.receive(delivery("g-2", key)),
        a.receive(delivery("g-1", key)),
        a.receive(delivery("g-3", key)),
    );
    let answers = [answers.0, answers.1, answers.2, answers.3].map(|r| r.expect("stored"));
    use Received::{Duplicate, New};
    assert_eq!(answers, [New, New, Duplicate, New]);
    let order = pg
        .pairs(&format!(
            "SELECT seq, CAST(substr(delivery_id, 3) AS BIGINT) FROM deliveries
             WHERE job_key = '{key}' ORDER BY seq"
        ))
        .await;
    assert_eq!(order.iter().map(|(_, g)| *g).collect::<Vec<_>>(), [1, 2, 3]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_replica_holds_the_sweep_lock_until_it_goes_then_another_takes_it() {
    let pg = Postgres::start().await;
    let (a, b) = (open(&pg).await, open(&pg).await);
    assert!(a.hold_sweep_lock().await.unwrap());
    assert!(!b.hold_sweep_lock().await.unwrap());
    assert!(a.hold_sweep_lock().await.unwrap(), "the holder keeps it");
    assert!(!b.hold_sweep_lock().await.unwrap());
    a.close().await;
    wait_for(Duration::from_secs(10), "the lock to pass on", async || {
        b.hold_sweep_lock().await.unwrap()
    })
    .await;
    // A lost connection loses the lock, and it is taken again.
    let c = open(&pg).await;
    assert!(!c.hold_sweep_lock().await.unwrap());
    pg.stop();
    pg.start_again();
    wait_for(
        Duration::from_secs(20),
        "someone to sweep again",
        async || {
            matches!(b.hold_sweep_lock().await, Ok(true))
                || matches!(c.hold_sweep_lock().await, Ok(true))
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_table_of_waiting_heads_keeps_its_rules() {
    let pg = Postgres::start().await;
    app_server::check_waiting_rules(&open(&pg).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lapsed_lease_is_taken_over_at_once_unless_a_write_was_in_flight() {
    let pg = Postgres::start().await;
    app_server::check_takeover_waits_only_for_writes_in_flight(&open(&pg).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_is_its_instance_id_and_only_its_own_machine_frees_its_jobs() {
    let pg = Postgres::start().await;
    app_server::check_replica_rules(&open(&pg).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_takes_the_first_job_of_a_key_that_is_due_and_free() {
    let pg = Postgres::start().await;
    app_server::check_claim_rules(&open(&pg).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finished_deliveries_are_deleted_after_the_days_kept() {
    let pg = Postgres::start().await;
    app_server::check_prune_rules(&open(&pg).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_can_pass_over_the_installations_that_run_the_most() {
    let pg = Postgres::start().await;
    app_server::check_claims_avoid_installations(&open(&pg).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_readers_commands_are_claimed_after_everyone_elses_work() {
    let pg = Postgres::start().await;
    app_server::check_claims_yield(&open(&pg).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ledger_of_state_revisions_only_rises() {
    let pg = Postgres::start().await;
    app_server::check_state_revision_rules(&open(&pg).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_starting_together_migrate_once_and_an_older_schema_is_upgraded() {
    let pg = Postgres::start().await;
    let (a, b, c) = tokio::join!(open(&pg), open(&pg), open(&pg));
    let versions = pg
        .pairs("SELECT version, version FROM schema_version ORDER BY version")
        .await;
    assert_eq!(
        versions,
        vec![
            (1, 1),
            (2, 2),
            (3, 3),
            (4, 4),
            (5, 5),
            (6, 6),
            (7, 7),
            (8, 8),
            (9, 9),
            (10, 10),
            (11, 11),
            (12, 12)
        ]
    );
    for store in [a, b, c] {
        store.close().await;
    }
    // A database left at version 1 by an older release is brought up to date at the next
    // start.
    {
        let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(pg.url())
            .await
            .unwrap();
        sqlx::raw_sql(
            "DELETE FROM schema_version WHERE version >= 2; DROP INDEX deliveries_unfinished;
             DROP INDEX deliveries_finished; DROP TABLE waiting; ALTER TABLE deliveries DROP COLUMN payload_encoding;
             ALTER TABLE deliveries DROP COLUMN body_sha; ALTER TABLE deliveries DROP COLUMN guid;
             ALTER TABLE deliveries DROP COLUMN write_settle_ms;
             ALTER TABLE deliveries DROP COLUMN yields;
             DROP TABLE state_revisions; DROP TABLE replicas;",
        )
        .execute(&mut conn)
        .await
        .unwrap();
    }
    let store = open(&pg).await;
    assert_eq!(
        pg.scalar("SELECT MAX(version) FROM schema_version").await,
        12
    );
    for table in ["waiting", "replicas"] {
        assert_eq!(
            pg.scalar(&format!(
                "SELECT COUNT(*) FROM pg_tables WHERE tablename = '{table}'"
            ))
            .await,
            1,
            "{table}"
        );
    }
    for index in [
        "deliveries_unfinished",
        "deliveries_finished",
        "deliveries_claim_order",
        "deliveries_yielding",
    ] {
        assert_eq!(
            pg.scalar(&format!(
                "SELECT COUNT(*) FROM pg_indexes WHERE indexname = '{index}'"
            ))
            .await,
            1,
            "{index}"
        );
    }
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_database_down_intake_answers_503_and_readyz_too_then_both_recover() {
    // The server must go away for real: a cluster of this test's own.
    let pg = Postgres::start_own();
    let server = fake().await;
    let serve = Serve::start(&server.api_url(), pg.url(), &[]);
    assert_eq!(serve.ready(), 200);
    seed_pull(&server, 7, &[(&"a".repeat(40), "the change")]);
    pg.stop();
    let asked = Instant::now();
    let status = serve.deliver(
        "pull_request",
        "d-down",
        &pull_request("opened", 7, &"a".repeat(40)),
    );
    assert_eq!(status, 503, "{}", serve.log());
    assert!(
        asked.elapsed() < Duration::from_secs(9),
        "answered within GitHub's 10 s: {:?}",
        asked.elapsed()
    );
    assert_eq!(serve.ready(), 503);
    assert_eq!(
        serve.metric("itergate_deliveries_total{result=\"refused\",reason=\"database\"}"),
        Some(1.0)
    );
    pg.start_again();
    let deadline = Instant::now() + Duration::from_secs(20);
    while serve.ready() != 200 {
        assert!(Instant::now() < deadline, "{}", serve.log());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // GitHub's redelivery of the refused delivery is a new one to the App.
    let status = serve.deliver(
        "pull_request",
        "d-down",
        &pull_request("opened", 7, &"a".repeat(40)),
    );
    assert_eq!(status, 202);
    app_server::eventually(&[&serve], 20, "the waiting comment", || {
        sticky_comments(&server, 7).len() == 1
    })
    .await;
    server.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn of_three_replicas_one_sweeps_and_each_reports_itself() {
    let pg = Postgres::start().await;
    let server = fake().await;
    let replicas: Vec<Serve> = (0..3)
        .map(|_| Serve::start(&server.api_url(), pg.url(), &[]))
        .collect();
    let leaders = || {
        replicas
            .iter()
            .map(|r| r.metric("itergate_sweep_leader").unwrap_or(0.0))
            .sum::<f64>()
    };
    let all: Vec<&Serve> = replicas.iter().collect();
    app_server::eventually(&all, 20, "a sweeper", || {
        leaders() == 1.0 && server.count("apps/list-webhook-deliveries") == 1
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(leaders(), 1.0);
    assert_eq!(
        server.count("apps/list-webhook-deliveries"),
        1,
        "one sweep, not three"
    );
    let mut names: Vec<String> = replicas
        .iter()
        .map(|r| {
            let (_, text) = r.metrics();
            let line = text
                .lines()
                .find(|l| l.starts_with("itergate_replica_info"))
                .unwrap_or_else(|| panic!("no replica info:\n{text}"))
                .to_string();
            assert!(line.contains("database=\"postgres\""), "{line}");
            line
        })
        .collect();
    names.dedup();
    assert_eq!(names.len(), 3, "{names:?}");
    server.assert_no_violations();
}

/// Two replicas on one database pace one installation's writes together: with
/// `--writes-per-minute 120` (2 a second), the writes GitHub sees over 10 s, once the
/// burst is spent and both replicas know of each other, stay at most near 20 — not the 40
/// two replicas pacing alone would make. (Measured: 11. One replica alone makes 20: a job
/// rescheduled for the turn one replica reserved may be claimed by the other, which takes
/// a turn of its own.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_pace_one_installations_writes_together() {
    let pg = Postgres::start().await;
    let server = fake().await;
    grant(&server, "maintainer", "admin", "admin");
    let pace = ["--writes-per-minute", "120"];
    let replicas: Vec<Serve> = (0..2)
        .map(|_| Serve::start(&server.api_url(), pg.url(), &pace))
        .collect();
    let all: Vec<&Serve> = replicas.iter().collect();
    app_server::eventually(&all, 20, "both replicas registered", || {
        replicas
            .iter()
            .all(|r| r.metric("itergate_replica_info").is_some())
    })
    .await;
    // Each replica learns of the other at its first heartbeat (every 2 s).
    tokio::time::sleep(Duration::from_secs(3)).await;
    for pr in 300..340u64 {
        seed_pull(&server, pr, &[(&format!("{pr:040x}"), "c")]);
        let payload = comment(&server, pr, "maintainer", "/iterate help");
        let replica = &replicas[usize::try_from(pr % 2).unwrap()];
        assert_eq!(
            replica.deliver("issue_comment", &format!("pace-{pr}"), &payload),
            202
        );
    }
    let writes = || server.with(|m| m.requests.iter().filter(|r| r.method != "GET").count());
    // The burst (10 writes, shared) goes at once; then the pace.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let from = writes();
    tokio::time::sleep(Duration::from_secs(10)).await;
    let made = writes() - from;
    eprintln!("{made} writes in 10 s");
    assert!(
        (5..=26).contains(&made),
        "{made} writes in 10 s at 2 a second across both replicas"
    );
    server.assert_no_violations();
}

/// One delivery the load sends: where it goes first, and what it is.
struct Planned {
    id: String,
    event: &'static str,
    payload: Value,
    /// Sent to two replicas at the same moment.
    twice: bool,
}

/// The head of event `i` on `pr`: distinct in its first seven characters.
fn head(pr: u64, i: usize) -> String {
    format!("{:07x}{}", 0x100_0000 + pr * 64 + i as u64, "a".repeat(33))
}

/// Sends `planned` until a replica answers 2xx (GitHub redelivers what failed), starting at
/// replica `first`; every answer is recorded.
fn send(addrs: &[String], first: usize, planned: &Planned, answers: &Mutex<Vec<u16>>) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut attempt = 0;
    loop {
        let addr = &addrs[(first + attempt) % addrs.len()];
        let status = app_server::deliver_to(addr, planned.event, &planned.id, &planned.payload);
        answers.lock().unwrap().push(status);
        if (200..300).contains(&status) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{} never acknowledged",
            planned.id
        );
        attempt += 1;
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Every write of the bot's sticky comment on `pr` (created, then edited), in order.
fn sticky_writes(server: &FakeGithub, pr: u64) -> Vec<String> {
    server.with(|m| {
        let sticky_ids: Vec<u64> = m
            .comments_on(pr)
            .iter()
            .filter(|c| c.author == BOT && c.body.starts_with(app_server::STICKY))
            .map(|c| c.id)
            .collect();
        m.requests
            .iter()
            .filter(|r| {
                let on_pr = r.operation_id == "issues/create-comment"
                    && r.path.ends_with(&format!("/issues/{pr}/comments"));
                let edit = r.operation_id == "issues/update-comment"
                    && sticky_ids
                        .iter()
                        .any(|id| r.path.ends_with(&format!("/comments/{id}")));
                on_pr || edit
            })
            .filter_map(|r| r.body.as_ref()?.get("body")?.as_str().map(String::from))
            .filter(|body| body.starts_with(app_server::STICKY))
            .collect()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_process_every_acknowledged_delivery_once_through_a_kill_9_and_a_database_restart(
) {
    const COMMENT_PRS: u64 = 60;
    const ORDERED_PRS: u64 = 4;
    const EVENTS_PER_PR: usize = 10;
    // Each lane spreads its deliveries over this long, so that the kill and the database's
    // restart happen in the middle of every lane.
    const LANE_MS: u64 = 1500;
    let pg = Postgres::start().await;
    let server = fake().await;
    grant(&server, "maintainer", "admin", "admin");
    let mut replicas: Vec<Serve> = (0..3)
        .map(|_| Serve::start(&server.api_url(), pg.url(), &[]))
        .collect();
    let addrs: Vec<String> = replicas.iter().map(|r| r.addr.clone()).collect();

    // Lanes: each PR's events in order (one after the other, each to the next replica), and
    // comments, each on its own PR so that each job posts exactly one reply.
    let mut lanes: Vec<Vec<Planned>> = Vec::new();
    for pr in 10..10 + ORDERED_PRS {
        seed_pull(&server, pr, &[(&head(pr, EVENTS_PER_PR - 1), "the change")]);
        lanes.push(
            (0..EVENTS_PER_PR)
                .map(|i| Planned {
                    id: format!("sync-{pr}-{i}"),
                    event: "pull_request",
                    payload: pull_request("synchronize", pr, &head(pr, i)),
                    twice: false,
                })
                .collect(),
        );
    }
    let mut comments: Vec<Vec<Planned>> = (0..3).map(|_| Vec::new()).collect();
    for (n, pr) in (100..100 + COMMENT_PRS).enumerate() {
        seed_pull(&server, pr, &[(&head(pr, 0), "c")]);
        comments[n % 3].push(Planned {
            id: format!("comment-{pr}"),
            event: "issue_comment",
            payload: comment(&server, pr, "maintainer", "/iterate help"),
            twice: n % 5 == 0,
        });
    }
    lanes.extend(comments);
    let total: usize = lanes.iter().map(Vec::len).sum();

    let acknowledged = Arc::new(AtomicUsize::new(0));
    let answers = Arc::new(Mutex::new(Vec::new()));
    let senders: Vec<_> = lanes
        .into_iter()
        .enumerate()
        .map(|(lane, planned)| {
            let (addrs, acknowledged, answers) =
                (addrs.clone(), acknowledged.clone(), answers.clone());
            std::thread::spawn(move || {
                let pace = Duration::from_millis(LANE_MS / planned.len() as u64);
                for (i, p) in planned.iter().enumerate() {
                    std::thread::sleep(pace);
                    let first = lane + i;
                    if p.twice {
                        std::thread::scope(|s| {
                            s.spawn(|| send(&addrs, first, p, &answers));
                            s.spawn(|| send(&addrs, first + 1, p, &answers));
                        });
                    } else {
                        send(&addrs, first, p, &answers);
                    }
                    acknowledged.fetch_add(1, Ordering::SeqCst);
                }
            })
        })
        .collect();

    // A third of the way: one replica dies mid-load. Two thirds: the database goes away and
    // comes back (a crash and its recovery).
    let progress = || acknowledged.load(Ordering::SeqCst);
    while progress() < total / 3 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    replicas[0].kill_9();
    while progress() < 2 * total / 3 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    pg.stop();
    // Longer than a replica waits for a connection: intake answers 503 meanwhile.
    tokio::time::sleep(Duration::from_secs(4)).await;
    pg.start_again();
    for s in senders {
        s.join().expect("a sender");
    }
    assert_eq!(progress(), total, "every delivery acknowledged in the end");

    let living: Vec<&Serve> = replicas[1..].iter().collect();
    // The App's own jobs (the watches for late replies, which a job run twice queues and
    // which run for two minutes) are not deliveries.
    let deadline = Instant::now() + Duration::from_secs(90);
    while pg
        .scalar(
            "SELECT COUNT(*) FROM deliveries WHERE done_at IS NULL AND event NOT LIKE 'itergate.%'",
        )
        .await
        > 0
    {
        if Instant::now() > deadline {
            let logs: Vec<String> = living.iter().map(|s| s.log()).collect();
            panic!("jobs left undone; the logs:\n{}", logs.join("\n----\n"));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Each delivery stored once, whichever replicas received it and however often.
    assert_eq!(
        pg.scalar("SELECT COUNT(*) FROM deliveries WHERE event NOT LIKE 'itergate.%'")
            .await,
        total as i64
    );
    // Each comment answered once: nothing lost, nothing done twice.
    for pr in 100..100 + COMMENT_PRS {
        assert_eq!(replies(&server, pr), 1, "PR {pr}: one reply");
    }
    for pr in 10..10 + ORDERED_PRS {
        // One sticky comment, written in the order the events arrived, ending at the last.
        let sticky = sticky_comments(&server, pr);
        assert_eq!(sticky.len(), 1, "PR {pr}: {sticky:?}");
        let last = format!("`{}`", &head(pr, EVENTS_PER_PR - 1)[..7]);
        assert!(sticky[0].contains(&last), "PR {pr}: {}", sticky[0]);
        let written: Vec<usize> = sticky_writes(&server, pr)
            .iter()
            .filter_map(|body| {
                (0..EVENTS_PER_PR).find(|i| body.contains(&format!("`{}`", &head(pr, *i)[..7])))
            })
            .collect();
        assert!(
            written.windows(2).all(|w| w[0] <= w[1]),
            "PR {pr}: events applied out of order: {written:?}"
        );
        assert_eq!(written.last(), Some(&(EVENTS_PER_PR - 1)));
        // In the database: stored in the order sent, finished in that order.
        let rows = pg
            .pairs(&format!(
                "SELECT CAST(split_part(COALESCE(guid, delivery_id), '-', 3) AS BIGINT), done_at FROM deliveries
                 WHERE job_key = '{REPO}#{pr}' ORDER BY seq"
            ))
            .await;
        let sent: Vec<i64> = rows.iter().map(|(i, _)| *i).collect();
        assert_eq!(sent, (0..EVENTS_PER_PR as i64).collect::<Vec<_>>());
        assert!(rows.windows(2).all(|w| w[0].1 <= w[1].1), "{rows:?}");
    }
    let answers = answers.lock().unwrap().clone();
    assert!(
        answers.contains(&0),
        "the killed replica refused connections"
    );
    if pg.can_stop() {
        assert!(
            answers.contains(&503),
            "intake answered 503 while the database was away: {answers:?}"
        );
    }
    server.assert_no_violations();
}

/// A replica whose lease ran out (paused, cut off) no longer passes the fence once another
/// took the job over, nor after it ran out; the one that holds it does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_worker_that_holds_a_job_passes_its_fence() {
    let pg = Postgres::start().await;
    let (a, b) = (
        open_settling(&pg, Duration::ZERO).await,
        open_settling(&pg, Duration::ZERO).await,
    );
    let now = itergate::serve::store::now_ms;
    assert_eq!(
        a.receive(delivery("fenced", "octo-org/widgets#9"))
            .await
            .unwrap(),
        Received::New
    );
    let short = Duration::from_millis(300);
    let first = a.claim("a-0", now(), short).await.unwrap().expect("a job");
    assert!(a.holds(&first, "a-0", now()).await.unwrap());
    assert!(!a.holds(&first, "b-0", now()).await.unwrap());
    tokio::time::sleep(Duration::from_millis(400)).await;
    // Run out, not yet taken over: no longer A's to write for.
    assert!(!a.holds(&first, "a-0", now()).await.unwrap());
    let second = b
        .claim("b-0", now(), Duration::from_secs(60))
        .await
        .unwrap()
        .expect("taken over");
    assert_eq!(second.delivery_id, "fenced");
    assert!(!a.holds(&first, "a-0", now()).await.unwrap());
    assert!(b.holds(&second, "b-0", now()).await.unwrap());
    assert!(b.complete(&second, "b-0", now(), "done").await.unwrap());
    assert!(!b.holds(&second, "b-0", now()).await.unwrap());
}

/// A replica killed with SIGKILL while its job's write to GitHub is in flight: another
/// replica sees its process gone, and takes the job over once the settle (10 s by default)
/// has passed, for the write may land; the job's effect happens once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_replicas_job_is_taken_over_by_another_once_its_lease_has_settled() {
    let pg = Postgres::start().await;
    let server = fake().await;
    grant(&server, "maintainer", "admin", "admin");
    // The job's first call hangs: it is in flight when its replica dies.
    server.fail_next(
        "reactions/create-for-issue-comment",
        fake_github::Fault::Timeout(Duration::from_secs(120)),
        1,
    );
    let (took, _replicas) =
        kill_the_holder_mid_job(&pg, &server, "reactions/create-for-issue-comment").await;
    eprintln!("taken over {took:?} after the kill");
    assert!(
        took >= Duration::from_secs(10) && took < Duration::from_secs(20),
        "taken over after {took:?}: the lease (at most 6 s) and its settle (10 s)"
    );
    assert_eq!(replies(&server, 7), 1, "one reply");
    server.assert_no_violations();
}

/// A replica killed with SIGKILL while its job waits on a read (no write to GitHub in
/// flight): another replica on the machine sees its process gone and takes the job over
/// within 3 s, with no settle.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_replicas_job_with_no_write_in_flight_is_taken_over_within_3_s() {
    let pg = Postgres::start().await;
    let server = fake().await;
    grant(&server, "maintainer", "admin", "admin");
    server.fail_next(
        "repos/get-collaborator-permission-level",
        fake_github::Fault::Timeout(Duration::from_secs(120)),
        1,
    );
    let (took, _replicas) =
        kill_the_holder_mid_job(&pg, &server, "repos/get-collaborator-permission-level").await;
    eprintln!("taken over {took:?} after the kill");
    assert!(took < Duration::from_secs(3), "taken over after {took:?}");
    assert_eq!(replies(&server, 7), 1, "one reply");
    server.assert_no_violations();
}

/// The dead replica's reply was still on its way when its lease ran out: GitHub made it 10 s
/// after it was sent, longer than the 6-second lease. The replica that takes the job over
/// waits for the lease to settle, finds the reply and does not make a second.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_the_dead_replica_sent_that_lands_after_its_lease_is_not_made_twice() {
    let pg = Postgres::start().await;
    let server = fake().await;
    grant(&server, "maintainer", "admin", "admin");
    server.fail_next(
        "issues/create-comment",
        fake_github::Fault::Slow(Duration::from_secs(10)),
        1,
    );
    kill_the_holder_mid_job(&pg, &server, "issues/create-comment").await;
    assert_eq!(
        server.count("issues/create-comment"),
        1,
        "the replica that took over made no reply of its own"
    );
    assert_eq!(replies(&server, 7), 1, "one reply");
    server.assert_no_violations();
}

/// The dead replica's reply reaches GitHub 30 s after it was sent, long after the settle:
/// the replica that took the job over has replied by then. The pull request is watched for
/// such a reply, and the later of the two is deleted within seconds of landing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_the_dead_replica_sent_that_lands_after_the_takeovers_is_deleted() {
    let pg = Postgres::start().await;
    let server = fake().await;
    grant(&server, "maintainer", "admin", "admin");
    server.fail_next(
        "issues/create-comment",
        fake_github::Fault::Slow(Duration::from_secs(30)),
        1,
    );
    let (_, replicas) = kill_the_holder_mid_job(&pg, &server, "issues/create-comment").await;
    assert_eq!(replies(&server, 7), 1, "the replica that took over replied");
    let taker_reply = server.with(|m| m.comments_on(7).iter().map(|c| c.id).max());
    let taken_over = Instant::now();
    // The late reply lands about 17 s from now; the watch looks every second until 30 s
    // after the takeover, then every 10 s until 2 minutes.
    wait_for(
        Duration::from_secs(60),
        "the late reply deleted",
        async || server.count("issues/delete-comment") == 1 && replies(&server, 7) == 1,
    )
    .await;
    eprintln!(
        "the late reply was deleted {:?} after the takeover",
        taken_over.elapsed()
    );
    assert_eq!(
        server.with(|m| m.comments_on(7).iter().map(|c| c.id).max()),
        taker_reply,
        "the oldest reply is kept"
    );
    assert_eq!(server.count("issues/delete-comment"), 1);
    server.assert_no_violations();
    drop(replicas);
}

/// Two replicas on `pg` with the default lease and settle; a maintainer's `/iterate help` on
/// pull request 7; the replica holding the job is killed with SIGKILL while its call to
/// `in_flight` is made, just after a lease renewal. Returns how long after the kill the job
/// was done, and the replicas (the one killed, and the one still running).
async fn kill_the_holder_mid_job(
    pg: &Postgres,
    server: &FakeGithub,
    in_flight: &str,
) -> (Duration, Vec<Serve>) {
    let default_lease = ["--lease-seconds", "6"];
    let mut replicas: Vec<Serve> = (0..2)
        .map(|_| Serve::start(&server.api_url(), pg.url(), &default_lease))
        .collect();
    seed_pull(server, 7, &[(&"a".repeat(40), "c")]);
    let payload = comment(server, 7, "maintainer", "/iterate help");
    assert_eq!(
        replicas[0].deliver("issue_comment", "d-hang", &payload),
        202
    );
    wait_for(Duration::from_secs(20), "the job in flight", async || {
        server.count(in_flight) == 1
    })
    .await;
    // Just after a renewal, the lease has the longest to run: the worst case.
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let mut holder = None;
    for (i, replica) in replicas.iter().enumerate() {
        let sql = format!(
            "SELECT COUNT(*) FROM deliveries WHERE done_at IS NULL AND lease_owner LIKE '%-{}-%'",
            replica.child.id()
        );
        if pg.scalar(&sql).await == 1 {
            holder = Some(i);
        }
    }
    let holder = holder.expect("one replica holds the job");
    replicas[holder].kill_9();
    let killed = Instant::now();
    wait_for(Duration::from_secs(40), "the job taken over", async || {
        pg.scalar("SELECT COUNT(*) FROM deliveries WHERE done_at IS NOT NULL")
            .await
            == 1
    })
    .await;
    (killed.elapsed(), replicas)
}
