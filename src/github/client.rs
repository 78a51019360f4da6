//! `OctocrabForge`: the [`Forge`](super::Forge) over octocrab's raw request API.
//!
//! Octocrab supplies the HTTP client (rustls with the `ring` provider, native roots), the
//! base URL (path kept, so GitHub Enterprise's `/api/v3` works), bearer auth (never sent to
//! another host, e.g. an artifact's storage redirect) and connection timeouts. This module
//! adds what itergate needs on top: retries ([`super::retry`]) with an injectable clock,
//! errors that name the operation, status and GitHub's `message`, pagination by `page`,
//! and narrow response types that read only the fields itergate uses, so GitHub adding or
//! dropping an unrelated field never breaks a run.
//!
//! Creates are not blindly repeated (`OctocrabForge::create`): after a 5xx or a timeout
//! GitHub may have done the work and only the answer was lost, so the caller's lookup runs
//! first (re-list the comments and find the body or its marker; find the check run) and a
//! found object is the result. Answers are read up to `max_download_bytes`; a longer one
//! (an artifact's zip) is refused while it streams in, never held whole.
//!
//! Settings come from the environment of a GitHub Actions job ([`ForgeSettings::from_env`]):
//! `GITHUB_API_URL` (default `https://api.github.com`), `GITHUB_TOKEN`, and optionally
//! `ITERGATE_GITHUB_RETRY_BASE_MS` (the first backoff). The token is kept in a `SecretString`
//! and never logged.

mod ops;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Method};
use http_body_util::BodyExt;
use octocrab::Octocrab;
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use secrecy::SecretString;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::forge::ForgeError;
use super::retry::{self, Clock, RetryPolicy, SystemClock, Verdict};
use super::types::Identity;

/// Bot login of the `GITHUB_TOKEN` of GitHub Actions.
pub const ACTIONS_BOT_LOGIN: &str = "github-actions[bot]";
const DEFAULT_API_URL: &str = "https://api.github.com";
const PER_PAGE: usize = 100;
/// Pages fetched at most per listing (10,000 items): a bound, not an expectation.
const MAX_PAGES: usize = 100;
/// The largest answer read by default (an artifact's zip; JSON answers are far smaller).
pub const MAX_DOWNLOAD_BYTES: u64 = 64 * 1024 * 1024;

/// How to reach GitHub.
#[derive(Clone)]
pub struct ForgeSettings {
    /// REST API root: `https://api.github.com` or `https://HOST/api/v3`.
    pub api_url: String,
    pub token: Option<SecretString>,
    /// The login the token acts as when `GET /user` is refused to it (a `GITHUB_TOKEN` is
    /// `github-actions[bot]`, an App is `SLUG[bot]`).
    pub bot_login: Option<String>,
    /// Connect/read/write timeout of one request.
    pub timeout_ms: u64,
    pub retry: RetryPolicy,
    /// The largest answer read (bytes); a longer one fails with [`ForgeError::TooLarge`].
    pub max_download_bytes: u64,
    /// Told of every answer (the App's metrics).
    pub observer: Option<Arc<dyn AnswerObserver>>,
    /// The App's id, when the token is one of its installations': a check run found after
    /// a failed create is taken for the App's own only when GitHub says the App made it.
    pub app_id: Option<u64>,
}

/// Sees every exchange with GitHub: its status (`None`: no answer) and the
/// `X-RateLimit-Remaining` it carried.
pub trait AnswerObserver: Send + Sync {
    fn answered(&self, status: Option<u16>, rate_limit_remaining: Option<i64>);
}

impl std::fmt::Debug for ForgeSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ForgeSettings")
            .field("api_url", &self.api_url)
            .field("token", &self.token.as_ref().map(|_| "[redacted]"))
            .field("bot_login", &self.bot_login)
            .field("timeout_ms", &self.timeout_ms)
            .field("retry", &self.retry)
            .field("max_download_bytes", &self.max_download_bytes)
            .field("app_id", &self.app_id)
            .field("observer", &self.observer.is_some())
            .finish()
    }
}

impl Default for ForgeSettings {
    fn default() -> Self {
        ForgeSettings {
            api_url: DEFAULT_API_URL.into(),
            token: None,
            bot_login: None,
            timeout_ms: 30_000,
            retry: RetryPolicy::default(),
            max_download_bytes: MAX_DOWNLOAD_BYTES,
            observer: None,
            app_id: None,
        }
    }
}

impl ForgeSettings {
    /// From the process environment: `GITHUB_API_URL`, `GITHUB_TOKEN`; the bot login
    /// defaults to `github-actions[bot]` inside GitHub Actions (`GITHUB_ACTIONS=true`).
    pub fn from_env() -> Self {
        Self::from_vars(|name| std::env::var(name).ok())
    }

    /// Like [`from_env`](Self::from_env) with the variables from `var`.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Self {
        let non_empty = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        let in_actions = non_empty("GITHUB_ACTIONS").is_some_and(|v| v == "true");
        let mut retry = RetryPolicy::default();
        if let Some(ms) = non_empty("ITERGATE_GITHUB_RETRY_BASE_MS").and_then(|v| v.parse().ok()) {
            retry.base_delay_ms = ms;
        }
        ForgeSettings {
            api_url: non_empty("GITHUB_API_URL").unwrap_or_else(|| DEFAULT_API_URL.into()),
            token: non_empty("GITHUB_TOKEN").map(SecretString::from),
            bot_login: in_actions.then(|| ACTIONS_BOT_LOGIN.to_string()),
            retry,
            ..ForgeSettings::default()
        }
    }
}

/// A request to send, retried as [`retry`] says.
pub(crate) struct Call<'a> {
    pub operation: &'static str,
    pub method: Method,
    /// Path and query below the API root, or an absolute URL (a redirect).
    pub path: String,
    pub body: Option<&'a Value>,
    /// Send the token. Off for redirects to storage: the token goes to GitHub only.
    pub authenticated: bool,
}

/// GitHub's answer, read in full.
pub(crate) struct Reply {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Bytes,
}

/// What a create came to: GitHub's answer, or the object the lookup found after an answer
/// was lost.
pub(crate) enum Created<T> {
    Sent(Reply),
    Found(T),
}

/// Why one exchange brought no answer.
enum NoAnswer {
    /// Connection refused, timeout, TLS: GitHub may or may not have acted.
    Transport(String),
    /// The answer is longer than the limit: not worth repeating.
    TooLarge,
}

/// What one attempt came to.
enum Attempt {
    Done(Reply),
    /// Final. `ambiguous`: GitHub may have carried the request out (5xx, no answer).
    Failed {
        error: ForgeError,
        ambiguous: bool,
    },
    Retry {
        wait: Duration,
        ambiguous: bool,
    },
}

pub struct OctocrabForge {
    crab: Octocrab,
    /// The same client without the token, for artifact storage.
    anonymous: Octocrab,
    settings: ForgeSettings,
    clock: Arc<dyn Clock>,
    identity: tokio::sync::OnceCell<Identity>,
}

impl OctocrabForge {
    pub fn new(settings: ForgeSettings) -> Result<Self, ForgeError> {
        let timeout = Some(Duration::from_millis(settings.timeout_ms));
        let builder = || {
            Octocrab::builder()
                .base_uri(settings.api_url.as_str())
                .map_err(|e| {
                    ForgeError::Settings(format!("GITHUB_API_URL `{}`: {e}", settings.api_url))
                })
                .map(|b| {
                    b.set_connect_timeout(timeout)
                        .set_read_timeout(timeout)
                        .set_write_timeout(timeout)
                })
        };
        let built = |b: Result<Octocrab, octocrab::Error>| {
            b.map_err(|e| ForgeError::Settings(format!("building the HTTP client: {e}")))
        };
        let crab = match &settings.token {
            Some(token) => built(builder()?.personal_token(token.clone()).build())?,
            None => built(builder()?.build())?,
        };
        let anonymous = built(builder()?.build())?;
        Ok(OctocrabForge {
            crab,
            anonymous,
            settings,
            clock: Arc::new(SystemClock),
            identity: tokio::sync::OnceCell::new(),
        })
    }

    /// Uses `clock` for retry waits (tests pass one that does not sleep).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    pub fn settings(&self) -> &ForgeSettings {
        &self.settings
    }

    /// Sends `call`, retrying as the policy allows; any final non-2xx/3xx is an error. For
    /// requests that are safe to repeat (reads, edits, idempotent adds); creates go through
    /// [`create`](Self::create).
    pub(crate) async fn send(&self, call: Call<'_>) -> Result<Reply, ForgeError> {
        let mut attempt = 1;
        loop {
            match self.attempt(&call, attempt).await {
                Attempt::Done(reply) => return Ok(reply),
                Attempt::Failed { error, .. } => return Err(error),
                Attempt::Retry { wait, .. } => self.wait(&call, attempt, wait).await,
            }
            attempt += 1;
        }
    }

    /// Sends a create that must not happen twice. After an answer that leaves open whether
    /// GitHub acted (5xx, timeout), `look` runs before anything is sent again: what it finds
    /// is the result; only when it finds nothing is the create repeated.
    pub(crate) async fn create<T, F, Fut>(
        &self,
        call: Call<'_>,
        look: F,
    ) -> Result<Created<T>, ForgeError>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<Option<T>, ForgeError>>,
    {
        let mut attempt = 1;
        loop {
            match self.attempt(&call, attempt).await {
                Attempt::Done(reply) => return Ok(Created::Sent(reply)),
                Attempt::Failed {
                    error,
                    ambiguous: true,
                } => {
                    return match look().await {
                        Ok(Some(found)) => Ok(Created::Found(found)),
                        _ => Err(error),
                    }
                }
                Attempt::Failed { error, .. } => return Err(error),
                Attempt::Retry { wait, ambiguous } => {
                    self.wait(&call, attempt, wait).await;
                    if ambiguous {
                        tracing::info!(
                            operation = call.operation,
                            "the answer was lost: looking for the result before sending again"
                        );
                        if let Some(found) = look().await? {
                            return Ok(Created::Found(found));
                        }
                    }
                }
            }
            attempt += 1;
        }
    }

    async fn wait(&self, call: &Call<'_>, attempt: u32, wait: Duration) {
        tracing::info!(
            operation = call.operation,
            attempt,
            wait_ms = wait.as_millis() as u64,
            "retrying GitHub request"
        );
        self.clock.sleep(wait).await;
    }

    async fn attempt(&self, call: &Call<'_>, attempt: u32) -> Attempt {
        let policy = self.settings.retry;
        let answer = self.send_once(call).await;
        if let Some(observer) = &self.settings.observer {
            match &answer {
                Ok(reply) => observer.answered(
                    Some(reply.status),
                    reply
                        .headers
                        .get("x-ratelimit-remaining")
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.trim().parse().ok()),
                ),
                Err(_) => observer.answered(None, None),
            }
        }
        match answer {
            Ok(reply) if reply.status < 400 => Attempt::Done(reply),
            Ok(reply) => {
                let now = self.clock.now_unix_secs();
                let ambiguous = reply.status >= 500;
                let verdict = retry::classify_answer(
                    &policy,
                    reply.status,
                    &reply.headers,
                    &reply.body,
                    now,
                    attempt,
                );
                match verdict {
                    Verdict::RetryAfter(wait) => Attempt::Retry { wait, ambiguous },
                    Verdict::GiveUp(note) => {
                        let limit = retry::rate_limit(
                            &policy,
                            reply.status,
                            &reply.headers,
                            &reply.body,
                            now,
                            attempt,
                        );
                        let error = match limit {
                            // Said with how long it lasts, for a caller that reschedules.
                            Some(wait) => ForgeError::RateLimited {
                                operation: call.operation,
                                status: reply.status,
                                wait,
                                // GitHub's words alone: the operation and the wait are said
                                // once, by this error.
                                message: match status_error(call.operation, &reply, attempt, None) {
                                    ForgeError::Status { message, .. } => message,
                                    other => other.to_string(),
                                },
                            },
                            None => status_error(call.operation, &reply, attempt, note),
                        };
                        Attempt::Failed { error, ambiguous }
                    }
                }
            }
            Err(NoAnswer::TooLarge) => Attempt::Failed {
                error: ForgeError::TooLarge {
                    operation: call.operation,
                    limit_bytes: self.settings.max_download_bytes,
                },
                ambiguous: false,
            },
            Err(NoAnswer::Transport(message)) if attempt < policy.max_attempts => {
                tracing::debug!(operation = call.operation, attempt, %message, "no answer");
                Attempt::Retry {
                    wait: policy.backoff(attempt),
                    ambiguous: true,
                }
            }
            Err(NoAnswer::Transport(message)) => Attempt::Failed {
                error: ForgeError::Transport {
                    operation: call.operation,
                    message,
                    attempts: attempt,
                },
                ambiguous: true,
            },
        }
    }

    async fn send_once(&self, call: &Call<'_>) -> Result<Reply, NoAnswer> {
        let builder = http::Request::builder()
            .method(call.method.clone())
            .uri(call.path.as_str())
            .header(http::header::ACCEPT, "application/vnd.github+json")
            .header(http::header::USER_AGENT, "itergate");
        let client = if call.authenticated {
            &self.crab
        } else {
            &self.anonymous
        };
        let transport = |e: &dyn std::error::Error| NoAnswer::Transport(error_chain(e));
        let request = client
            .build_request(builder, call.body)
            .map_err(|e| transport(&e))?;
        // Octocrab's timeouts cover connect and each read; this bounds the whole exchange.
        let whole = Duration::from_millis(self.settings.timeout_ms.saturating_mul(3));
        let limit = self.settings.max_download_bytes;
        let exchange = async {
            let response = client.execute(request).await.map_err(|e| transport(&e))?;
            let (parts, mut body) = response.into_parts();
            let announced = parts
                .headers
                .get(http::header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<u64>().ok());
            if announced.is_some_and(|length| length > limit) {
                return Err(NoAnswer::TooLarge);
            }
            // Read frame by frame so that an endless answer stops at the limit.
            let mut bytes = Vec::new();
            while let Some(frame) = body.frame().await {
                let frame = frame.map_err(|e| transport(&e))?;
                if let Ok(data) = frame.into_data() {
                    if (bytes.len() + data.len()) as u64 > limit {
                        return Err(NoAnswer::TooLarge);
                    }
                    bytes.extend_from_slice(&data);
                }
            }
            Ok(Reply {
                status: parts.status.as_u16(),
                headers: parts.headers,
                body: Bytes::from(bytes),
            })
        };
        tokio::time::timeout(whole, exchange)
            .await
            .map_err(|_| NoAnswer::Transport(format!("timed out after {} ms", whole.as_millis())))?
    }

    /// Sends `call` and reads the answer as `T`.
    pub(crate) async fn send_json<T: DeserializeOwned>(
        &self,
        call: Call<'_>,
    ) -> Result<T, ForgeError> {
        let operation = call.operation;
        let reply = self.send(call).await?;
        decode(operation, &reply.body)
    }

    /// Every page of a listing at `path` (no query). The items are the answer itself or,
    /// with `key`, the array under that key.
    pub(crate) async fn paginate<T: DeserializeOwned>(
        &self,
        operation: &'static str,
        path: &str,
        key: Option<&str>,
    ) -> Result<Vec<T>, ForgeError> {
        let mut items = Vec::new();
        for page in 1..=MAX_PAGES {
            let separator = if path.contains('?') { '&' } else { '?' };
            let call = Call {
                operation,
                method: Method::GET,
                path: format!("{path}{separator}per_page={PER_PAGE}&page={page}"),
                body: None,
                authenticated: true,
            };
            let reply = self.send(call).await?;
            let mut value: Value = decode(operation, &reply.body)?;
            let list = match key {
                Some(key) => value.get_mut(key).map(Value::take),
                None => Some(value),
            };
            let page_items: Vec<T> = match list {
                Some(list) => serde_json::from_value(list).map_err(|e| ForgeError::Decode {
                    operation,
                    message: e.to_string(),
                })?,
                None => Vec::new(),
            };
            let full = page_items.len() >= PER_PAGE;
            items.extend(page_items);
            if !full || !has_next_page(&reply.headers) {
                break;
            }
        }
        Ok(items)
    }
}

fn has_next_page(headers: &HeaderMap) -> bool {
    headers
        .get_all(http::header::LINK)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.split(',').any(|part| part.contains("rel=\"next\"")))
}

pub(crate) fn decode<T: DeserializeOwned>(
    operation: &'static str,
    body: &[u8],
) -> Result<T, ForgeError> {
    serde_json::from_slice(body).map_err(|e| ForgeError::Decode {
        operation,
        message: e.to_string(),
    })
}

fn error_chain(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}

#[derive(serde::Deserialize)]
struct GithubErrorBody {
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    errors: Vec<Value>,
}

fn status_error(
    operation: &'static str,
    reply: &Reply,
    attempts: u32,
    note: Option<String>,
) -> ForgeError {
    let parsed: Option<GithubErrorBody> = serde_json::from_slice(&reply.body).ok();
    let mut message = match parsed.as_ref().and_then(|p| p.message.clone()) {
        Some(message) => message,
        None => {
            let text = String::from_utf8_lossy(&reply.body);
            let text: String = text.trim().chars().take(200).collect();
            if text.is_empty() {
                "(empty body)".into()
            } else {
                text
            }
        }
    };
    if let Some(note) = note {
        message = format!("{message} ({note})");
    }
    let details = parsed
        .map(|p| p.errors)
        .unwrap_or_default()
        .iter()
        .filter_map(|e| match e {
            Value::String(s) => Some(s.clone()),
            Value::Object(o) => o.get("code").and_then(Value::as_str).map(String::from),
            _ => None,
        })
        .collect();
    ForgeError::Status {
        operation,
        status: reply.status,
        message,
        details,
        attempts,
    }
}

/// Characters left as they are in a path segment: RFC 3986 unreserved.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Percent-encodes one path segment (a label name, a branch name).
pub(crate) fn segment(text: &str) -> String {
    utf8_percent_encode(text, SEGMENT).to_string()
}
