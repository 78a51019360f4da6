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
//! Settings come from the environment of a GitHub Actions job ([`ForgeSettings::from_env`]):
//! `GITHUB_API_URL` (default `https://api.github.com`), `GITHUB_TOKEN`. The token is kept in
//! a `SecretString` and never logged.

mod ops;

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
}

impl std::fmt::Debug for ForgeSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ForgeSettings")
            .field("api_url", &self.api_url)
            .field("token", &self.token.as_ref().map(|_| "[redacted]"))
            .field("bot_login", &self.bot_login)
            .field("timeout_ms", &self.timeout_ms)
            .field("retry", &self.retry)
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
        ForgeSettings {
            api_url: non_empty("GITHUB_API_URL").unwrap_or_else(|| DEFAULT_API_URL.into()),
            token: non_empty("GITHUB_TOKEN").map(SecretString::from),
            bot_login: in_actions.then(|| ACTIONS_BOT_LOGIN.to_string()),
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

    /// Sends `call`, retrying as the policy allows; any final non-2xx/3xx is an error.
    pub(crate) async fn send(&self, call: Call<'_>) -> Result<Reply, ForgeError> {
        let policy = self.settings.retry;
        let mut attempt = 1;
        loop {
            let wait = match self.send_once(&call).await {
                Ok(reply) if reply.status < 400 => return Ok(reply),
                Ok(reply) => {
                    let now = self.clock.now_unix_secs();
                    match retry::classify(&policy, reply.status, &reply.headers, now, attempt) {
                        Verdict::RetryAfter(wait) => wait,
                        Verdict::GiveUp(note) => {
                            return Err(status_error(call.operation, &reply, attempt, note))
                        }
                    }
                }
                Err(message) if attempt < policy.max_attempts => {
                    tracing::debug!(operation = call.operation, attempt, %message, "no answer");
                    policy.backoff(attempt)
                }
                Err(message) => {
                    return Err(ForgeError::Transport {
                        operation: call.operation,
                        message,
                        attempts: attempt,
                    })
                }
            };
            tracing::info!(
                operation = call.operation,
                attempt,
                wait_ms = wait.as_millis() as u64,
                "retrying GitHub request"
            );
            self.clock.sleep(wait).await;
            attempt += 1;
        }
    }

    async fn send_once(&self, call: &Call<'_>) -> Result<Reply, String> {
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
        let request = client
            .build_request(builder, call.body)
            .map_err(|e| error_chain(&e))?;
        // Octocrab's timeouts cover connect and each read; this bounds the whole exchange.
        let whole = Duration::from_millis(self.settings.timeout_ms.saturating_mul(3));
        let exchange = async {
            let response = client.execute(request).await.map_err(|e| error_chain(&e))?;
            let (parts, body) = response.into_parts();
            let body = body
                .collect()
                .await
                .map_err(|e| error_chain(&e))?
                .to_bytes();
            Ok(Reply {
                status: parts.status.as_u16(),
                headers: parts.headers,
                body,
            })
        };
        tokio::time::timeout(whole, exchange)
            .await
            .map_err(|_| format!("timed out after {} ms", whole.as_millis()))?
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
