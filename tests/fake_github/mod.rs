//! A fake GitHub for tests: an in-process axum server on 127.0.0.1 that keeps comments,
//! labels, reactions, check runs, permissions, pull requests, artifacts and dispatches in
//! memory ([`model`]), and checks every request against GitHub's published OpenAPI
//! description ([`openapi`]). An unknown route, an unknown query parameter or a body that
//! does not match the schema is recorded as a violation; [`FakeGithub::assert_no_violations`]
//! fails the test.
//!
//! Faults can be queued per operation: 502s, timeouts and rate limits, and the worst kind
//! for a create: the server did the work, then the answer was lost ([`Fault::Lost`]).
//!
//! Use from a test file with `mod fake_github;`.
#![allow(dead_code)] // shared by several test binaries; each uses part of it

pub mod model;
pub mod openapi;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use axum::body::{to_bytes, Body};
use axum::extract::{Request, State};
use axum::response::Response;
use serde_json::Value;

use itergate::github::retry::{Clock, RetryPolicy};
use itergate::github::{ForgeSettings, OctocrabForge};

pub use model::{Answer, Model};

/// The token the fake accepts.
pub const TOKEN: &str = "fake-token-0123456789";
/// The repository the fake serves.
pub const REPO: &str = "octo-org/widgets";
/// The login of the token unless a test says otherwise.
pub const BOT_LOGIN: &str = "itergate-bot";

/// A queued misbehaviour for one operation.
#[derive(Debug, Clone, PartialEq)]
pub enum Fault {
    /// 502 Bad Gateway.
    BadGateway,
    /// Answer only after this long (longer than the client's timeout), with 504.
    Timeout(Duration),
    /// 429 with `Retry-After: secs`.
    TooManyRequests { retry_after_secs: u64 },
    /// 403 with `x-ratelimit-remaining: 0` and a reset `in_secs` from now.
    RateLimitReset { in_secs: u64 },
    /// 403 with `Retry-After: secs` (a secondary rate limit).
    SecondaryRateLimit { retry_after_secs: u64 },
    /// 403 with no rate-limit header, only GitHub's message naming a secondary rate limit.
    SecondaryRateLimitMessageOnly,
    /// 401 Bad credentials (a token GitHub does not know yet, or any more).
    BadCredentials,
    /// 422 Validation Failed (GitHub refuses what was asked).
    Unprocessable,
    /// The request is carried out on the model, then the answer is replaced by `fault`
    /// (a 502, or a timeout): the client cannot know that it worked.
    Lost(Box<Fault>),
    /// The request is carried out on the model this long after it arrived and then answered,
    /// whether or not the client is still there (a write GitHub is slow to serve).
    Slow(Duration),
}

pub struct Options {
    pub login: String,
    /// `GET /user` answers 403, as it does for a `GITHUB_TOKEN`.
    pub user_endpoint_forbidden: bool,
    /// A path prefix, as GitHub Enterprise's `/api/v3`.
    pub base_path: String,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            login: BOT_LOGIN.into(),
            user_endpoint_forbidden: false,
            base_path: String::new(),
        }
    }
}

struct Shared {
    model: Mutex<Model>,
    spec: openapi::Spec,
    base_path: String,
}

pub struct FakeGithub {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeGithub {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A clock for retries that never sleeps: it records each wait. Its time is the wall clock's
/// at creation and stays there, so rate-limit resets the fake computes from the wall clock
/// keep their distance.
#[derive(Debug)]
pub struct TestClock {
    now: Mutex<u64>,
    pub sleeps: Mutex<Vec<Duration>>,
}

impl TestClock {
    pub fn new() -> Arc<TestClock> {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        Arc::new(TestClock {
            now: Mutex::new(now),
            sleeps: Mutex::new(Vec::new()),
        })
    }

    pub fn sleeps(&self) -> Vec<Duration> {
        lock(&self.sleeps).clone()
    }
}

#[async_trait]
impl Clock for TestClock {
    fn now_unix_secs(&self) -> u64 {
        *lock(&self.now)
    }

    async fn sleep(&self, duration: Duration) {
        lock(&self.sleeps).push(duration);
        tokio::task::yield_now().await;
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl FakeGithub {
    pub async fn start() -> FakeGithub {
        Self::start_with(Options::default()).await
    }

    pub async fn start_with(options: Options) -> FakeGithub {
        let listener = match tokio::net::TcpListener::bind("127.0.0.1:0").await {
            Ok(l) => l,
            Err(e) => panic!("the fake GitHub cannot listen on 127.0.0.1: {e}"),
        };
        let addr = match listener.local_addr() {
            Ok(a) => a,
            Err(e) => panic!("the fake GitHub has no address: {e}"),
        };
        let base_url = format!("http://{addr}{}", options.base_path);
        let mut model = Model::new(REPO, &options.login, base_url);
        model.user_endpoint_forbidden = options.user_endpoint_forbidden;
        let shared = Arc::new(Shared {
            model: Mutex::new(model),
            spec: openapi::Spec::load(),
            base_path: options.base_path,
        });
        let app = axum::Router::new()
            .fallback(handle)
            .with_state(shared.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FakeGithub { addr, shared, task }
    }

    /// The REST API root to give the client (`GITHUB_API_URL`).
    pub fn api_url(&self) -> String {
        format!("http://{}{}", self.addr, self.shared.base_path)
    }

    /// Client settings for this server: its token, a short timeout, quick retries.
    pub fn settings(&self) -> ForgeSettings {
        ForgeSettings {
            api_url: self.api_url(),
            token: Some(TOKEN.to_string().into()),
            bot_login: None,
            timeout_ms: 300,
            retry: RetryPolicy {
                max_attempts: 3,
                base_delay_ms: 10,
                max_delay_ms: 100,
                max_wait_ms: 120_000,
                secondary_rate_limit_wait_ms: 60_000,
            },
            max_download_bytes: itergate::github::client::MAX_DOWNLOAD_BYTES,
            observer: None,
            app_id: None,
        }
    }

    /// The octocrab forge against this server, with a clock that records waits.
    pub fn forge_with(&self, settings: ForgeSettings) -> (OctocrabForge, Arc<TestClock>) {
        let clock = TestClock::new();
        let forge = match OctocrabForge::new(settings) {
            Ok(f) => f.with_clock(clock.clone()),
            Err(e) => panic!("cannot build the forge: {e}"),
        };
        (forge, clock)
    }

    pub fn forge(&self) -> (OctocrabForge, Arc<TestClock>) {
        self.forge_with(self.settings())
    }

    /// Reads or changes the model.
    pub fn with<R>(&self, f: impl FnOnce(&mut Model) -> R) -> R {
        f(&mut lock(&self.shared.model))
    }

    /// Queues `fault` for the next `times` requests of `operation_id`.
    pub fn fail_next(&self, operation_id: &str, fault: Fault, times: usize) {
        self.with(|m| {
            let queue = m.faults.entry(operation_id.to_string()).or_default();
            queue.extend(std::iter::repeat_n(fault, times));
        });
    }

    pub fn violations(&self) -> Vec<String> {
        self.with(|m| m.violations.clone())
    }

    #[track_caller]
    pub fn assert_no_violations(&self) {
        let violations = self.violations();
        assert!(
            violations.is_empty(),
            "requests that break GitHub's OpenAPI description:\n{}",
            violations.join("\n")
        );
    }

    /// Requests of `operation_id` seen so far (faulted ones included).
    pub fn count(&self, operation_id: &str) -> usize {
        self.with(|m| {
            m.requests
                .iter()
                .filter(|r| r.operation_id == operation_id)
                .count()
        })
    }

    /// Operation ids of all requests, in order.
    pub fn operations(&self) -> Vec<String> {
        self.with(|m| m.requests.iter().map(|r| r.operation_id.clone()).collect())
    }
}

async fn handle(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let bytes = to_bytes(body, 64 * 1024 * 1024).await.unwrap_or_default();
    let method = parts.method.as_str().to_string();
    let Some(path) = parts.uri.path().strip_prefix(shared.base_path.as_str()) else {
        return violation(
            &shared,
            format!("{method} {}: outside the API root", parts.uri.path()),
            404,
        );
    };
    let authorization = parts
        .headers
        .get("authorization")
        .and_then(|v| v.to_str().ok());
    if let Some(id) = path.strip_prefix("/_blob/") {
        return blob(&shared, id, authorization.is_some());
    }
    let query: Vec<(String, String)> = parts.uri.query().map(url_pairs).unwrap_or_default();
    let matched = match shared.spec.route(&method, path) {
        Ok(m) => m,
        Err(problem) => return violation(&shared, problem, 404),
    };
    let operation_id = matched.operation.operation_id.clone();
    let problems = matched.operation.check(&matched.params, &query, &bytes);
    let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let fault = {
        let mut model = lock(&shared.model);
        model.requests.push(model::Recorded {
            operation_id: operation_id.clone(),
            method: method.clone(),
            path: path.to_string(),
            body: (!bytes.is_empty()).then(|| body.clone()),
        });
        if !problems.is_empty() {
            model.violations.extend(problems);
            return respond(Answer::message(
                422,
                "Invalid request (the fake's OpenAPI check)",
            ));
        }
        if path == "/app" || path.starts_with("/app/") {
            if let Some(problem) = model.jwt_problem(authorization) {
                return respond(Answer::message(
                    401,
                    &format!("A JSON web token could not be decoded ({problem})"),
                ));
            }
        } else if !model.token_valid(authorization, TOKEN) {
            return respond(Answer::message(401, "Bad credentials"));
        }
        model
            .faults
            .get_mut(&operation_id)
            .and_then(|q| q.pop_front())
    };
    let fault = match fault {
        Some(Fault::Slow(after)) => {
            // Carried out on a task of its own: a client that goes away does not cancel it.
            let (done, answer) = tokio::sync::oneshot::channel();
            let (shared, params) = (shared.clone(), matched.params.clone());
            tokio::spawn(async move {
                tokio::time::sleep(after).await;
                let answer = lock(&shared.model).handle(&operation_id, &params, &query, &body);
                let _ = done.send(answer);
            });
            return match answer.await {
                Ok(answer) => respond(answer),
                Err(_) => respond(Answer::message(500, "the fake's slow write was lost")),
            };
        }
        Some(Fault::Lost(after)) => {
            // Done, then the answer is lost.
            let _ = lock(&shared.model).handle(&operation_id, &matched.params, &query, &body);
            Some(*after)
        }
        other => other,
    };
    if let Some(fault) = fault {
        return respond(fault_answer(fault).await);
    }
    let answer = lock(&shared.model).handle(&operation_id, &matched.params, &query, &body);
    if !matched.operation.responses.contains(&answer.status) && answer.status < 500 {
        let note = format!(
            "{operation_id}: the fake answered {}, which GitHub does not document",
            answer.status
        );
        lock(&shared.model).violations.push(note);
    }
    respond(answer)
}

fn url_pairs(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let decode = |s: &str| {
                percent_encoding::percent_decode_str(&s.replace('+', " "))
                    .decode_utf8_lossy()
                    .into_owned()
            };
            (decode(k), decode(v))
        })
        .collect()
}

fn fault_answer(
    fault: Fault,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Answer> + Send>> {
    Box::pin(fault_answer_now(fault))
}

async fn fault_answer_now(fault: Fault) -> Answer {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let limited = |status: u16, headers: Vec<(&str, String)>| Answer {
        status,
        body: serde_json::json!({ "message": "API rate limit exceeded" }),
        headers: headers
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
    };
    match fault {
        Fault::BadGateway => Answer::message(502, "Server Error"),
        Fault::Timeout(after) => {
            tokio::time::sleep(after).await;
            Answer::message(504, "Gateway Timeout")
        }
        Fault::TooManyRequests { retry_after_secs } => {
            limited(429, vec![("retry-after", retry_after_secs.to_string())])
        }
        Fault::SecondaryRateLimit { retry_after_secs } => {
            limited(403, vec![("retry-after", retry_after_secs.to_string())])
        }
        Fault::SecondaryRateLimitMessageOnly => Answer::message(
            403,
            "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
        ),
        Fault::BadCredentials => Answer::message(401, "Bad credentials"),
        Fault::Unprocessable => Answer::message(422, "Validation Failed"),
        Fault::Lost(after) => fault_answer(*after).await,
        Fault::Slow(_) => unreachable!("a slow write is carried out where it arrives"),
        Fault::RateLimitReset { in_secs } => limited(
            403,
            vec![
                ("x-ratelimit-remaining", "0".into()),
                ("x-ratelimit-reset", (now + in_secs).to_string()),
            ],
        ),
    }
}

fn blob(shared: &Shared, id: &str, authorized: bool) -> Response {
    let mut model = lock(&shared.model);
    if authorized {
        model.violations.push(format!(
            "the token was sent to artifact storage (blob {id})"
        ));
    }
    let zip = id
        .parse::<u64>()
        .ok()
        .and_then(|id| model.artifacts.iter().find(|a| a.id == id))
        .map(|a| a.zip.clone());
    match zip {
        Some(zip) => Response::builder()
            .status(200)
            .header("content-type", "application/zip")
            .body(Body::from(zip))
            .unwrap_or_default(),
        None => respond(Answer::message(404, "Not Found")),
    }
}

fn violation(shared: &Shared, problem: String, status: u16) -> Response {
    lock(&shared.model).violations.push(problem);
    respond(Answer::message(status, "Not Found"))
}

fn respond(answer: Answer) -> Response {
    let mut builder = Response::builder().status(answer.status);
    for (name, value) in &answer.headers {
        builder = builder.header(name.as_str(), value.as_str());
    }
    let body = if answer.body.is_null() {
        Body::empty()
    } else {
        builder = builder.header("content-type", "application/json; charset=utf-8");
        Body::from(answer.body.to_string())
    };
    builder.body(body).unwrap_or_default()
}

/// A pull request in the model, with its commits.
pub fn seed_pull(server: &FakeGithub, number: u64, commits: &[(&str, &str)]) {
    server.with(|m| {
        m.pulls.insert(
            number,
            model::FakePull {
                number,
                title: format!("PR {number}"),
                author: "contributor".into(),
                head_sha: commits.last().map_or("0".repeat(40), |c| c.0.to_string()),
                head_ref: "feature".into(),
                head_repo: REPO.into(),
                base_sha: "b".repeat(40),
                base_ref: "main".into(),
                commits: commits
                    .iter()
                    .map(|(s, m)| (s.to_string(), m.to_string()))
                    .collect(),
                closed: false,
            },
        );
    });
}

/// `login` gets `permission` (`admin`, `write`, `read`, ...) with role name `role`.
pub fn grant(server: &FakeGithub, login: &str, permission: &str, role: &str) {
    server.with(|m| {
        m.permissions.insert(
            login.to_lowercase(),
            (permission.to_string(), role.to_string()),
        );
    });
}

pub type Params = BTreeMap<String, String>;

/// The name `itergate ci --score-only`'s workflow gives the artifact of `record`:
/// `<base>-<its SHA-256>`.
pub fn bound_name(base: &str, record: &[u8]) -> String {
    format!("{base}-{}", digest(record))
}

/// The SHA-256 of `bytes` in lowercase hex, as `itergate ci --score-only` outputs a
/// record's (`record-digest`).
pub fn digest(bytes: &[u8]) -> String {
    use sha2::Digest;
    format!("{:x}", sha2::Sha256::digest(bytes))
}
