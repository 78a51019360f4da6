//! `itergate serve` as a test drives it: the real binary on 127.0.0.1 and a random port,
//! the fake GitHub set up as the App's, and real webhook payloads signed as GitHub signs
//! them.
//!
//! Use from a test file with `mod app_server;` (after `mod fake_github;`).
#![allow(dead_code)] // each test binary uses part of it

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::fake_github::model::FakeApp;
use crate::fake_github::{FakeGithub, Options, REPO};
use itergate::serve::signature::sign;

pub const BIN: &str = env!("CARGO_BIN_EXE_itergate");
pub const SECRET: &str = "webhook-secret-for-tests";
pub const APP_ID: u64 = 4242;
pub const SLUG: &str = "itergate-test";
pub const BOT: &str = "itergate-test[bot]";
pub const INSTALLATION: u64 = 77;
pub const BASE: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
pub const STICKY: &str = "<!-- itergate:sticky -->";

pub fn fixture_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// A real webhook payload from the fixtures, moved to the fake's repository and the App's
/// installation.
pub fn webhook(name: &str) -> Value {
    let bytes = std::fs::read(fixture_path(&format!("github/webhooks/{name}"))).expect("fixture");
    let mut p: Value = serde_json::from_slice(&bytes).expect("json");
    p["repository"]["full_name"] = json!(REPO);
    p["repository"]["name"] = json!("widgets");
    p["repository"]["owner"]["login"] = json!("octo-org");
    p["installation"] = json!({ "id": INSTALLATION, "node_id": "MDIz" });
    p
}

/// The fake GitHub, knowing the App (its public key) and the base's configuration.
pub async fn fake() -> FakeGithub {
    let server = FakeGithub::start_with(Options {
        login: BOT.into(),
        user_endpoint_forbidden: true,
        ..Options::default()
    })
    .await;
    let public_key = std::fs::read(fixture_path("app/test-app-key.pub.pem")).expect("key");
    server.with(|m| {
        m.app = Some(FakeApp {
            id: APP_ID,
            slug: SLUG.into(),
            public_key_pem: public_key,
            token_lifetime_secs: 3600,
            tokens: Vec::new(),
            deliveries: Vec::new(),
            redelivered: Vec::new(),
        });
        m.files.insert(
            (BASE.into(), ".itergate.yml".into()),
            b"github:\n  label: needs-a-human\n".to_vec(),
        );
    });
    server
}

/// A `pull_request` event (`action`) on `pr` at `head`.
pub fn pull_request(action: &str, pr: u64, head: &str) -> Value {
    let mut p = webhook("pull_request.opened.1.json");
    p["action"] = json!(action);
    p["number"] = json!(pr);
    p["pull_request"]["number"] = json!(pr);
    p["pull_request"]["head"]["sha"] = json!(head);
    p["pull_request"]["head"]["ref"] = json!("feature");
    p["pull_request"]["head"]["repo"]["full_name"] = json!(REPO);
    p["pull_request"]["base"]["sha"] = json!(BASE);
    p["pull_request"]["base"]["ref"] = json!("main");
    p
}

/// An `issue_comment` event for a comment `body` by `author`, added to the fake on `pr`.
pub fn comment(server: &FakeGithub, pr: u64, author: &str, body: &str) -> Value {
    let mut p = webhook("derived.issue_comment.created.on_pull_request.json");
    p["issue"]["number"] = json!(pr);
    let id = server.with(|m| m.add_comment(pr, author, "User", body));
    p["comment"]["id"] = json!(id);
    p["comment"]["body"] = json!(body);
    p["comment"]["user"]["login"] = json!(author);
    p
}

/// The bot's sticky comments on `pr`.
pub fn sticky_comments(server: &FakeGithub, pr: u64) -> Vec<String> {
    server.with(|m| {
        m.comments_on(pr)
            .into_iter()
            .filter(|c| c.author == BOT && c.body.starts_with(STICKY))
            .map(|c| c.body.clone())
            .collect()
    })
}

/// The bot's comments on `pr` that are not the sticky one (replies).
pub fn replies(server: &FakeGithub, pr: u64) -> usize {
    server.with(|m| {
        m.comments_on(pr)
            .iter()
            .filter(|c| c.author == BOT && !c.body.starts_with(STICKY))
            .count()
    })
}

/// A running `itergate serve`; killed on drop.
pub struct Serve {
    pub child: Child,
    pub addr: String,
    /// Where `/metrics` is served (`--metrics-listen`), once it said so.
    pub metrics_addr: Option<String>,
    log: Arc<Mutex<String>>,
}

impl Serve {
    /// Starts the binary on `database` (a SQLite path or a PostgreSQL URL) with 2 workers,
    /// 3-second leases (unless `extra` names its own) and no write pacing to speak of;
    /// `extra` arguments come last.
    pub fn start(api_url: &str, database: impl AsRef<std::ffi::OsStr>, extra: &[&str]) -> Serve {
        Serve::start_with(api_url, database, extra, true)
    }

    /// [`Serve::start`]; `metrics: false` leaves out `--metrics-listen` (the default).
    pub fn start_with(
        api_url: &str,
        database: impl AsRef<std::ffi::OsStr>,
        extra: &[&str],
        metrics: bool,
    ) -> Serve {
        let lease: &[&str] = if extra.contains(&"--lease-seconds") {
            &[]
        } else {
            &["--lease-seconds", "3"]
        };
        let pace: &[&str] = if extra.contains(&"--writes-per-minute") {
            &[]
        } else {
            &["--writes-per-minute", "100000"]
        };
        // /metrics is served only on an address of its own.
        let metrics: &[&str] = if !metrics || extra.contains(&"--metrics-listen") {
            &[]
        } else {
            &["--metrics-listen", "127.0.0.1:0"]
        };
        let workers: &[&str] = if extra.contains(&"--workers") {
            &[]
        } else {
            &["--workers", "2"]
        };
        let mut child = Command::new(BIN)
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(workers)
            .args(lease)
            .args(pace)
            .args(metrics)
            .arg("--database")
            .arg(database)
            .args(extra)
            .env("ITERGATE_APP_ID", APP_ID.to_string())
            .env(
                "ITERGATE_PRIVATE_KEY_PATH",
                fixture_path("app/test-app-key.pem"),
            )
            .env(
                "ITERGATE_WEBHOOK_SECRET",
                format!("{SECRET},an-older-secret"),
            )
            .env("GITHUB_API_URL", api_url)
            .env("ITERGATE_GITHUB_RETRY_BASE_MS", "10")
            .env_remove("GITHUB_TOKEN")
            .env_remove("ITERGATE_BOT_LOGIN")
            .env_remove("ITERGATE_DATABASE")
            .env_remove("DATABASE_URL")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn itergate serve");
        let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
        let mut addr = None;
        let mut metrics_addr = None;
        let mut seen = String::new();
        for line in lines.by_ref() {
            let line = line.expect("read");
            seen.push_str(&line);
            seen.push('\n');
            if let Some(rest) = line.split("/metrics and /readyz on http://").nth(1) {
                metrics_addr = rest.split_whitespace().next().map(String::from);
            }
            if let Some(rest) = line.split("listening on http://").nth(1) {
                addr = rest.split_whitespace().next().map(String::from);
                break;
            }
        }
        let addr = addr.unwrap_or_else(|| panic!("itergate serve did not start:\n{seen}"));
        let log = Arc::new(Mutex::new(seen));
        let sink = log.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                let mut log = sink.lock().unwrap();
                log.push_str(&line);
                log.push('\n');
            }
        });
        Serve {
            child,
            addr,
            metrics_addr,
            log,
        }
    }

    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// Kills the process with SIGKILL: no goodbye, no drain.
    pub fn kill_9(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    /// Posts `body` as a delivery signed with `signature`: `None` signs it with the secret,
    /// `Some("")` sends no signature.
    pub fn post(&self, event: &str, delivery: &str, body: &[u8], signature: Option<&str>) -> u16 {
        let mut headers = vec![
            ("X-GitHub-Event", event.to_string()),
            ("X-GitHub-Delivery", delivery.to_string()),
        ];
        match signature {
            Some("") => {}
            Some(other) => headers.push(("X-Hub-Signature-256", other.to_string())),
            None => headers.push(("X-Hub-Signature-256", sign(SECRET.as_bytes(), body))),
        }
        try_request(&self.addr, "POST", "/webhook", &headers, body).map_or(0, |(status, _)| status)
    }

    /// Posts a signed delivery; the status, or 0 when no answer came (a dead replica).
    pub fn deliver(&self, event: &str, delivery: &str, payload: &Value) -> u16 {
        deliver_to(&self.addr, event, delivery, payload)
    }

    pub fn get(&self, path: &str) -> (u16, String) {
        try_request(&self.addr, "GET", path, &[], b"").unwrap_or((0, String::new()))
    }

    /// `/metrics` from its own address (`--metrics-listen`).
    pub fn metrics(&self) -> (u16, String) {
        let addr = self.metrics_addr.as_deref().expect("--metrics-listen");
        try_request(addr, "GET", "/metrics", &[], b"").unwrap_or((0, String::new()))
    }

    /// `/readyz`, where it is served (beside `/metrics` when that has an address).
    pub fn ready(&self) -> u16 {
        let addr = self.metrics_addr.as_deref().unwrap_or(&self.addr);
        try_request(addr, "GET", "/readyz", &[], b"").map_or(0, |(status, _)| status)
    }

    /// A metric's value in `/metrics` (the line that starts with `name`).
    pub fn metric(&self, name: &str) -> Option<f64> {
        let (_, text) = self.metrics();
        text.lines()
            .find(|line| line.starts_with(name))
            .and_then(|line| line.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Posts a signed delivery to the server at `addr`; the status, or 0 when no answer came.
pub fn deliver_to(addr: &str, event: &str, delivery: &str, payload: &Value) -> u16 {
    let body = serde_json::to_vec(payload).unwrap();
    let headers = [
        ("X-GitHub-Event", event.to_string()),
        ("X-GitHub-Delivery", delivery.to_string()),
        ("X-Hub-Signature-256", sign(SECRET.as_bytes(), &body)),
    ];
    try_request(addr, "POST", "/webhook", &headers, &body).map_or(0, |(status, _)| status)
}

/// One HTTP/1.1 exchange; the status and the body, or `None` when the connection failed.
pub fn try_request(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, String)],
    body: &[u8],
) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect(addr).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .ok()?;
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n", body.len());
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).ok()?;
    stream.write_all(body).ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    let status = answer
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())?;
    let body = answer.split("\r\n\r\n").nth(1).unwrap_or("").to_string();
    Some((status, body))
}

/// Waits until `done` holds, or fails after `secs` with the servers' logs.
pub async fn eventually(servers: &[&Serve], secs: u64, what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        if start.elapsed() > Duration::from_secs(secs) {
            let logs: Vec<String> = servers.iter().map(|s| s.log()).collect();
            panic!(
                "timed out waiting for {what}; the servers' logs:\n{}",
                logs.join("\n----\n")
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A delivery as intake would store it, for the store's own tests.
pub fn stored_delivery(id: &str, key: &str) -> itergate::serve::store::NewDelivery {
    itergate::serve::store::NewDelivery {
        delivery_id: id.into(),
        event: "issue_comment".into(),
        action: Some("created".into()),
        installation_id: Some(INSTALLATION as i64),
        repository: Some(REPO.into()),
        job_key: key.into(),
        payload: b"{}".to_vec(),
        body_sha: None,
        yields: false,
    }
}

/// A webhook as intake stores it: `body`, signed with [`SECRET`], under GitHub's delivery
/// id `id`, and so with the key a redelivery of it will have.
pub fn stored_webhook(
    id: &str,
    key: &str,
    event: &str,
    body: &[u8],
) -> itergate::serve::store::NewDelivery {
    let signature = sign(SECRET.as_bytes(), body);
    let hex = signature.trim_start_matches("sha256=");
    let digest: [u8; 32] = std::array::from_fn(|i| {
        u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).expect("a hex signature")
    });
    itergate::serve::store::NewDelivery {
        event: event.into(),
        payload: body.to_vec(),
        body_sha: Some(itergate::serve::store::NewDelivery::body_sha(
            event, &digest,
        )),
        ..stored_delivery(id, key)
    }
}

/// Claims the next job as `owner` and finishes it at `done_at`; fails if there is none.
pub async fn finish_next(
    store: &itergate::serve::store::Store,
    owner: &str,
    done_at: i64,
) -> itergate::serve::store::Job {
    let job = store
        .claim(
            owner,
            itergate::serve::store::now_ms(),
            Duration::from_secs(60),
        )
        .await
        .unwrap()
        .unwrap_or_else(|| panic!("{owner}: no job to claim"));
    assert!(store.complete(&job, owner, done_at, "done").await.unwrap());
    job
}

/// The rules of the table of heads waiting for CI, checked on `store` (either backend).
pub async fn check_waiting_rules(store: &itergate::serve::store::Store) {
    use itergate::serve::reconcile;
    use itergate::serve::store::Waiting;
    let key = format!("{REPO}#7");
    let waiting = |head: &str, since: i64| Waiting {
        job_key: key.clone(),
        installation_id: INSTALLATION as i64,
        repository: REPO.into(),
        pr: 7,
        head_sha: head.into(),
        since,
        checks: 0,
    };
    let heads = |due: Vec<Waiting>| {
        due.into_iter()
            .map(|w| (w.head_sha, w.checks))
            .collect::<Vec<_>>()
    };
    let a = "a".repeat(40);
    let b = "b".repeat(40);
    store.set_waiting(&waiting(&a, 0), 1_000).await.unwrap();
    assert!(store.due_waiting(999, 10).await.unwrap().is_empty());
    assert_eq!(
        heads(store.due_waiting(1_000, 10).await.unwrap()),
        [(a.clone(), 0)]
    );
    store.checked_waiting(&waiting(&a, 0), 5_000).await.unwrap();
    assert!(store.due_waiting(4_999, 10).await.unwrap().is_empty());
    // The same head told again (a redelivered event) keeps its pace.
    store.set_waiting(&waiting(&a, 100), 100).await.unwrap();
    assert!(store.due_waiting(4_999, 10).await.unwrap().is_empty());
    assert_eq!(
        heads(store.due_waiting(5_000, 10).await.unwrap()),
        [(a.clone(), 1)]
    );
    // A new head starts over.
    store.set_waiting(&waiting(&b, 200), 2_000).await.unwrap();
    assert_eq!(
        heads(store.due_waiting(2_000, 10).await.unwrap()),
        [(b.clone(), 0)]
    );
    // An unfinished job of the PR tells more than a check: nothing is due meanwhile.
    store
        .receive(stored_delivery("waiting-rules-1", &key))
        .await
        .unwrap();
    assert!(store.due_waiting(10_000, 10).await.unwrap().is_empty());
    finish_next(store, "rules", 10_001).await;
    assert_eq!(store.due_waiting(10_000, 10).await.unwrap().len(), 1);
    // A decision about an older head does not end the wait for the new one.
    store.clear_waiting(&key, Some(&a)).await.unwrap();
    assert_eq!(store.due_waiting(10_000, 10).await.unwrap().len(), 1);
    store.clear_waiting(&key, Some(&b)).await.unwrap();
    assert!(store
        .due_waiting(i64::MAX / 2, 10)
        .await
        .unwrap()
        .is_empty());

    // Due heads become reconcile jobs; a head that waited past the limit is dropped.
    let every = Duration::from_secs(60);
    let now = 30 * 24 * 3600 * 1000_i64;
    store
        .set_waiting(&waiting(&a, now - 120_000), now - 60_000)
        .await
        .unwrap();
    let mut old = waiting(&b, now - 8 * 24 * 3600 * 1000);
    old.job_key = format!("{REPO}#8");
    old.pr = 8;
    store.set_waiting(&old, now - 60_000).await.unwrap();
    let queued = reconcile::queue_due(store, now, every).await.unwrap();
    assert_eq!(queued, vec![key.clone()]);
    assert!(store
        .due_waiting(i64::MAX / 2, 10)
        .await
        .unwrap()
        .iter()
        .all(|w| w.pr == 7));
    let job = finish_next(store, "rules", now).await;
    assert_eq!(job.event, reconcile::EVENT);
    let payload: reconcile::Payload = serde_json::from_slice(&job.payload).unwrap();
    assert_eq!(
        (payload.pull_request.number, payload.head_sha.as_str()),
        (7, a.as_str())
    );
    // The next check comes after twice the interval.
    assert!(store
        .due_waiting(now + 119_999, 10)
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        heads(store.due_waiting(now + 120_000, 10).await.unwrap()),
        [(a, 1)]
    );
}

/// The rules of deleting finished deliveries, checked on `store` (either backend).
pub async fn check_prune_rules(store: &itergate::serve::store::Store) {
    use itergate::serve::sweep;
    let day = 24 * 3600 * 1000_i64;
    let now = 100 * day;
    // Finished 9, 8 and 2 days ago, and one still queued.
    let ids = ["prune-old-1", "prune-old-2", "prune-recent", "prune-queued"];
    for id in ids {
        // A key each: every one can be claimed at once.
        let key = format!("{REPO}#{id}");
        store.receive(stored_delivery(id, &key)).await.unwrap();
    }
    for done_at in [now - 9 * day, now - 8 * day, now - 2 * day] {
        finish_next(store, "prune", done_at).await;
    }
    // The limit holds; the oldest goes first.
    assert_eq!(store.prune_finished(now, 1).await.unwrap(), 1);
    assert!(!store.has_delivery("prune-old-1").await.unwrap());
    assert!(store.has_delivery("prune-old-2").await.unwrap());
    // Seven days kept: the 8-day-old goes, the 2-day-old and the unfinished one stay.
    let keep = Duration::from_secs(7 * 24 * 3600);
    assert_eq!(sweep::prune(store, now, keep).await.unwrap(), 1);
    assert_eq!(sweep::prune(store, now, keep).await.unwrap(), 0);
    for (id, kept) in [
        ("prune-old-2", false),
        ("prune-recent", true),
        ("prune-queued", true),
    ] {
        assert_eq!(store.has_delivery(id).await.unwrap(), kept, "{id}");
    }
    // Even far in the future an unfinished delivery is never deleted.
    assert_eq!(sweep::prune(store, i64::MAX / 2, keep).await.unwrap(), 1);
    assert!(store.has_delivery("prune-queued").await.unwrap());
    assert_eq!(store.pending().await.unwrap(), 1);
    // More than one transaction's worth goes in one call.
    let many: Vec<String> = (0..205).map(|i| format!("prune-many-{i}")).collect();
    let mut arriving = tokio::task::JoinSet::new();
    for id in &many {
        let (store, key) = (store.clone(), format!("{REPO}#{id}"));
        let delivery = stored_delivery(id, &key);
        arriving.spawn(async move { store.receive(delivery).await.unwrap() });
    }
    while let Some(received) = arriving.join_next().await {
        received.unwrap();
    }
    let queued = store
        .claim(
            "prune",
            itergate::serve::store::now_ms(),
            Duration::from_secs(60),
        )
        .await
        .unwrap()
        .expect("the queued delivery");
    assert_eq!(queued.delivery_id, "prune-queued");
    for _ in 0..many.len() {
        finish_next(store, "prune", now - 9 * day).await;
    }
    assert_eq!(sweep::prune(store, now, keep).await.unwrap(), 205);
    assert_eq!(store.pending().await.unwrap(), 1);
}

/// The rules of claiming, checked on `store` (either backend): a job is the first unfinished
/// one of its key, due and not leased; keys do not wait for each other.
pub async fn check_claim_rules(store: &itergate::serve::store::Store) {
    let lease = Duration::from_secs(60);
    for (id, key) in [
        ("a0", "k/a"),
        ("b0", "k/b"),
        ("a1", "k/a"),
        ("c0", "k/c"),
        ("a2", "k/a"),
        ("b1", "k/b"),
    ] {
        store.receive(stored_delivery(id, key)).await.unwrap();
    }
    // Every delivery is due from its receipt on.
    let t = itergate::serve::store::now_ms() + 1;
    let claim = |owner: &'static str, at: i64| async move {
        store
            .claim(owner, at, lease)
            .await
            .unwrap()
            .map(|job| (job.delivery_id.clone(), job.attempts, job))
    };
    let (id, _, a0) = claim("w1", t).await.unwrap();
    assert_eq!(id, "a0");
    // a's next waits behind its running job; the other keys do not.
    let (id, _, b0) = claim("w2", t).await.unwrap();
    assert_eq!(id, "b0");
    let (id, _, c0) = claim("w3", t).await.unwrap();
    assert_eq!(id, "c0");
    assert!(
        claim("w4", t).await.is_none(),
        "every key's first job is running"
    );
    // Done: the key's next, in order.
    assert!(store.complete(&a0, "w1", t, "done").await.unwrap());
    let (id, _, _) = claim("w1", t).await.unwrap();
    assert_eq!(id, "a1");
    // A retry due later holds its key's later jobs back until then.
    store
        .reschedule(&b0, "w2", t + 3_600_000, "boom", true)
        .await
        .unwrap();
    assert!(claim("w2", t + 1).await.is_none());
    let (id, attempts, _) = claim("w2", t + 3_600_000).await.unwrap();
    assert_eq!((id.as_str(), attempts), ("b0", 2));
    // A lease that ran out (its worker died, with no write in flight) is taken over at
    // once, counted as one more attempt.
    assert!(
        claim("w5", t + 59_000).await.is_none(),
        "a lease that has not run out is kept"
    );
    let expired = t + 61_000;
    let (id, attempts, _) = claim("w5", expired).await.unwrap();
    assert_eq!((id.as_str(), attempts), ("a1", 2));
    let (id, attempts, c0_again) = claim("w6", expired).await.unwrap();
    assert_eq!((id.as_str(), attempts), ("c0", 2));
    // The old owner's word no longer counts; the new one's does.
    assert!(!store.complete(&c0, "w3", expired, "late").await.unwrap());
    assert!(store
        .complete(&c0_again, "w6", expired, "done")
        .await
        .unwrap());
    assert_eq!(store.pending().await.unwrap(), 4);

    // A storm on one pull request: more deliveries than a claim looks at first wait behind
    // its running job, and a job of another key queued after them is still found.
    let mut arriving = tokio::task::JoinSet::new();
    for i in 0..80 {
        let store = store.clone();
        arriving.spawn(async move {
            let id = format!("storm-{i}");
            store
                .receive(stored_delivery(&id, "k/storm"))
                .await
                .unwrap()
        });
    }
    while let Some(received) = arriving.join_next().await {
        received.unwrap();
    }
    store
        .receive(stored_delivery("after-the-storm", "k/quiet"))
        .await
        .unwrap();
    let later = itergate::serve::store::now_ms() + 1;
    let mut taken = Vec::new();
    while let Some((id, _, _)) = claim("w7", later).await {
        taken.push(id);
    }
    // a2 and b1 (behind their keys' running jobs) wait; of the storm, only its first runs.
    assert_eq!(taken.len(), 2, "{taken:?}");
    assert!(taken[0].starts_with("storm-"), "{taken:?}");
    assert_eq!(taken[1], "after-the-storm");
}

/// The ledger of state revisions only ever rises, per pull request.
pub async fn check_state_revision_rules(store: &itergate::serve::store::Store) {
    assert_eq!(store.state_revision("o/r#1").await.unwrap(), None);
    store.raise_state_revision("o/r#1", 3, 1).await.unwrap();
    store.raise_state_revision("o/r#2", 9, 1).await.unwrap();
    assert_eq!(store.state_revision("o/r#1").await.unwrap(), Some(3));
    // A job that ran late and wrote an older revision does not lower it.
    store.raise_state_revision("o/r#1", 2, 2).await.unwrap();
    assert_eq!(store.state_revision("o/r#1").await.unwrap(), Some(3));
    store.raise_state_revision("o/r#1", 4, 3).await.unwrap();
    assert_eq!(store.state_revision("o/r#1").await.unwrap(), Some(4));
    assert_eq!(store.state_revision("o/r#2").await.unwrap(), Some(9));
}

/// A claim that avoids installations passes over their jobs, however many come first, and
/// never over a job of no installation.
pub async fn check_claims_avoid_installations(store: &itergate::serve::store::Store) {
    use itergate::serve::store::{now_ms, NewDelivery};
    let of = |id: String, installation: Option<i64>| NewDelivery {
        installation_id: installation,
        ..stored_delivery(&id, &format!("{REPO}#{id}"))
    };
    // More than a claim looks at near the front: the walk over keys must find the rest.
    for i in 0..70 {
        store
            .receive(of(format!("flood-{i}"), Some(1)))
            .await
            .unwrap();
    }
    store.receive(of("other".into(), Some(2))).await.unwrap();
    let lease = Duration::from_secs(60);
    let claim = |avoid: &'static [i64]| async move {
        store
            .claim_avoiding("fair", now_ms(), lease, avoid)
            .await
            .unwrap()
            .map(|job| job.delivery_id)
    };
    assert_eq!(claim(&[1]).await.as_deref(), Some("other"));
    assert_eq!(claim(&[1]).await, None, "installation 1 is avoided");
    store
        .receive(of("no-installation".into(), None))
        .await
        .unwrap();
    assert_eq!(claim(&[1, 2]).await.as_deref(), Some("no-installation"));
    assert_eq!(claim(&[]).await.as_deref(), Some("flood-0"));
    assert_eq!(claim(&[2]).await.as_deref(), Some("flood-1"));
}

/// Jobs that yield (commands of people who are not members) are claimed after every other,
/// however many came first, unless a later job of their key does not yield.
pub async fn check_claims_yield(store: &itergate::serve::store::Store) {
    use itergate::serve::store::{now_ms, NewDelivery};
    let of = |id: &str, key: &str, yields: bool| NewDelivery {
        yields,
        ..stored_delivery(id, &format!("{REPO}#{key}"))
    };
    // More readers than a claim looks at near the front, each on a pull request of its own.
    for i in 0..70 {
        let id = format!("reader-{i}");
        store.receive(of(&id, &id, true)).await.unwrap();
    }
    store.receive(of("maintainer", "m", false)).await.unwrap();
    // A maintainer's command behind a reader's on one pull request lifts the reader's.
    store.receive(of("reader-on-p", "p", true)).await.unwrap();
    store
        .receive(of("maintainer-on-p", "p", false))
        .await
        .unwrap();
    let owner = "lanes";
    let lease = Duration::from_secs(60);
    let next = async || {
        let job = store.claim(owner, now_ms(), lease).await.unwrap().unwrap();
        assert!(store.complete(&job, owner, now_ms(), "done").await.unwrap());
        job.delivery_id
    };
    assert_eq!(next().await, "maintainer");
    assert_eq!(next().await, "reader-on-p");
    assert_eq!(next().await, "maintainer-on-p");
    // Then the readers, in arrival order.
    for i in 0..70 {
        assert_eq!(next().await, format!("reader-{i}"));
    }
}

/// A job whose lease ran out is taken over at once, unless its worker had a write to
/// GitHub in flight ([`Store::begin_write`] without [`Store::end_write`]): then only after
/// the store's settle (10 s by default). A dead replica's job with a write in flight is not
/// freed at once either.
pub async fn check_takeover_waits_only_for_writes_in_flight(store: &itergate::serve::store::Store) {
    use itergate::serve::store::Replica;
    let second = 1000;
    let lease = Duration::from_secs(1);
    let settle = 10 * second;
    for (id, key) in [("w1", "k/w1"), ("w2", "k/w2"), ("w3", "k/w3")] {
        store.receive(stored_delivery(id, key)).await.unwrap();
    }
    let t = itergate::serve::store::now_ms() + 1;
    // The takers hold what they take.
    let claim = async |owner: &str, at: i64| {
        store
            .claim(owner, at, Duration::from_secs(600))
            .await
            .unwrap()
            .map(|job| job.delivery_id)
    };
    // w1: a read in flight when its worker stalled; w2: a write; w3: a write that ended.
    let w1 = store.claim("a-1", t, lease).await.unwrap().unwrap();
    let w2 = store.claim("a-2", t, lease).await.unwrap().unwrap();
    let w3 = store.claim("a-3", t, lease).await.unwrap().unwrap();
    assert_eq!(
        [w1.delivery_id.as_str(), &w2.delivery_id, &w3.delivery_id],
        ["w1", "w2", "w3"]
    );
    assert!(store.begin_write(&w2, "a-2", t).await.unwrap());
    assert!(store.begin_write(&w3, "a-3", t).await.unwrap());
    store.end_write(&w3, "a-3").await.unwrap();
    assert!(
        !store.begin_write(&w1, "b-1", t).await.unwrap(),
        "only the holder passes the fence"
    );
    let lapsed = t + 2 * second;
    assert_eq!(claim("b-1", lapsed).await.as_deref(), Some("w1"));
    assert_eq!(claim("b-2", lapsed).await.as_deref(), Some("w3"));
    assert_eq!(
        claim("b-3", lapsed).await,
        None,
        "w2's write may still land"
    );
    assert_eq!(claim("b-3", lapsed + settle).await.as_deref(), Some("w2"));

    // A dead replica's job with a write in flight: its lease ends now, then it settles.
    let dead = Replica {
        id: "gone".into(),
        machine: "boot-9 pid:[9]".into(),
        pid: 99,
    };
    let me = Replica {
        id: "here".into(),
        machine: dead.machine.clone(),
        pid: 100,
    };
    store.register(&dead, t).await.unwrap();
    store.register(&me, t).await.unwrap();
    store.receive(stored_delivery("w4", "k/w4")).await.unwrap();
    let now = itergate::serve::store::now_ms();
    let w4 = store
        .claim("gone-0", now, Duration::from_secs(600))
        .await
        .unwrap()
        .unwrap();
    assert!(store.begin_write(&w4, "gone-0", now).await.unwrap());
    let freed = store
        .release_dead_leases(&me, &|pid| pid == 100)
        .await
        .unwrap();
    assert_eq!(freed, 1);
    let now = itergate::serve::store::now_ms() + 1;
    assert_eq!(claim("here-0", now).await, None, "the write may still land");
    assert_eq!(claim("here-0", now + settle).await.as_deref(), Some("w4"));
}

/// Replicas by instance id: a dead one's jobs are freed at a start on its own machine (the
/// same boot and pid namespace) and never on another machine that shares its hostname; a
/// live one's never. Its row goes when it leaves.
pub async fn check_replica_rules(store: &itergate::serve::store::Store) {
    use itergate::serve::store::Replica;
    let lease = Duration::from_secs(600);
    let replica = |id: &str, machine: &str, pid: u32| Replica {
        id: id.into(),
        machine: machine.into(),
        pid,
    };
    // Two containers with one hostname and pid 7, in different pid namespaces.
    let first = replica("box-7-aaaa", "boot-1 pid:[1]", 7);
    let neighbour = replica("box-7-bbbb", "boot-1 pid:[2]", 7);
    let t = itergate::serve::store::now_ms();
    store.register(&first, t).await.unwrap();
    store.register(&neighbour, t).await.unwrap();
    for (id, key) in [("r1", "k/r1"), ("r2", "k/r2")] {
        store.receive(stored_delivery(id, key)).await.unwrap();
    }
    let t = itergate::serve::store::now_ms() + 1;
    let held = store
        .claim("box-7-aaaa-0", t, lease)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(held.delivery_id, "r1");
    // The neighbour restarts as a new replica in its own namespace, where pid 7 is gone: it
    // forgets its own old row, and the first replica's live lease is not its to free.
    let restarted = replica("box-7-cccc", "boot-1 pid:[2]", 8);
    store.register(&restarted, t).await.unwrap();
    let freed = store
        .release_dead_leases(&restarted, &|pid| pid == 8)
        .await
        .unwrap();
    assert_eq!(
        freed, 0,
        "another namespace's replica is not taken for dead"
    );
    assert!(store
        .claim("box-7-cccc-0", t, lease)
        .await
        .unwrap()
        .is_some_and(|j| j.delivery_id == "r2"));
    // The first replica restarts in its own namespace, its old process gone: its job runs
    // again at once, and the old row is forgotten.
    let again = replica("box-7-dddd", "boot-1 pid:[1]", 9);
    store.register(&again, t).await.unwrap();
    let freed = store
        .release_dead_leases(&again, &|pid| pid == 9)
        .await
        .unwrap();
    assert_eq!(freed, 1);
    let job = store
        .claim("box-7-dddd-0", t, lease)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(job.delivery_id, "r1");
    // A live process keeps its lease.
    let freed = store.release_dead_leases(&again, &|_| true).await.unwrap();
    assert_eq!(freed, 0);
    let ids =
        |rows: Vec<(String, String, i64, i64)>| rows.into_iter().map(|r| r.0).collect::<Vec<_>>();
    assert_eq!(
        ids(store.replicas().await.unwrap()),
        ["box-7-cccc", "box-7-dddd"]
    );
    store.heartbeat("box-7-dddd", t + 5).await.unwrap();
    let beat = store
        .replicas()
        .await
        .unwrap()
        .into_iter()
        .find(|r| r.0 == "box-7-dddd")
        .unwrap()
        .3;
    assert_eq!(beat, t + 5);
    store.leave("box-7-dddd").await.unwrap();
    assert_eq!(ids(store.replicas().await.unwrap()), ["box-7-cccc"]);
}
