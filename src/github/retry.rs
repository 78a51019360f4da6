//! When to try a GitHub request again, and how long to wait first.
//!
//! Retried: 5xx answers and transport failures (timeouts, refused connections) with
//! exponential backoff; rate limits — 429, or 403 with `Retry-After` (secondary limit), with
//! `x-ratelimit-remaining: 0` (primary limit), or whose `message` says it is a secondary
//! rate limit (GitHub sends those without either header too) — after the time GitHub names
//! (`Retry-After` seconds or date, `x-ratelimit-reset` epoch seconds), else after
//! `secondary_rate_limit_wait_ms`, doubling per attempt. Never retried: other 4xx, which a
//! retry cannot fix.
//!
//! Whether a request that may have been carried out should be sent again at all is the
//! caller's question: [`classify`] only says when a retry would be allowed. Creates
//! (comments, check runs) look before they retry (`client::OctocrabForge::create`). A wait longer than `max_wait_ms` is not worth a CI job's
//! time: the request fails at once and says when the limit resets.
//!
//! Time comes from a [`Clock`] so that tests run without sleeping.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use http::HeaderMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included.
    pub max_attempts: u32,
    /// The first backoff; each further one doubles.
    pub base_delay_ms: u64,
    /// Backoff cap.
    pub max_delay_ms: u64,
    /// The longest single wait accepted (for rate-limit resets); beyond it, give up.
    pub max_wait_ms: u64,
    /// Wait after a secondary rate limit that names no time (GitHub asks for a minute).
    pub secondary_rate_limit_wait_ms: u64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 4,
            base_delay_ms: 1_000,
            max_delay_ms: 30_000,
            max_wait_ms: 120_000,
            secondary_rate_limit_wait_ms: 60_000,
        }
    }
}

impl RetryPolicy {
    /// Backoff before attempt `attempt + 1` (attempts count from 1).
    pub fn backoff(&self, attempt: u32) -> Duration {
        let factor = 1u64 << attempt.saturating_sub(1).min(20);
        Duration::from_millis(
            self.base_delay_ms
                .saturating_mul(factor)
                .min(self.max_delay_ms),
        )
    }
}

/// The time source of retries: now, and a way to wait.
#[async_trait]
pub trait Clock: Send + Sync {
    fn now_unix_secs(&self) -> u64;
    async fn sleep(&self, duration: Duration);
}

/// Wall-clock time and `tokio::time::sleep`.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

#[async_trait]
impl Clock for SystemClock {
    fn now_unix_secs(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
    }

    async fn sleep(&self, duration: Duration) {
        tokio::time::sleep(duration).await;
    }
}

/// What to do after an error answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    RetryAfter(Duration),
    /// Not retryable; the reason is added to the error when it helps (a far reset).
    GiveUp(Option<String>),
}

/// Decides about an answer with a non-success `status` after `attempt` attempts, from its
/// headers alone.
pub fn classify(
    policy: &RetryPolicy,
    status: u16,
    headers: &HeaderMap,
    now_unix_secs: u64,
    attempt: u32,
) -> Verdict {
    classify_answer(policy, status, headers, b"", now_unix_secs, attempt)
}

/// Like [`classify`], also reading the answer's `body`: a 403 whose `message` names a
/// secondary rate limit is retried even when no header says so.
pub fn classify_answer(
    policy: &RetryPolicy,
    status: u16,
    headers: &HeaderMap,
    body: &[u8],
    now_unix_secs: u64,
    attempt: u32,
) -> Verdict {
    let wait = match status {
        500..=599 => {
            Some(retry_after(headers, now_unix_secs).unwrap_or_else(|| policy.backoff(attempt)))
        }
        _ => rate_limit(policy, status, headers, body, now_unix_secs, attempt),
    };
    let Some(wait) = wait else {
        return Verdict::GiveUp(None);
    };
    if wait > Duration::from_millis(policy.max_wait_ms) {
        return Verdict::GiveUp(Some(format!(
            "rate limited for another {}s, longer than the {}s itergate waits",
            wait.as_secs(),
            policy.max_wait_ms / 1000
        )));
    }
    if attempt >= policy.max_attempts {
        return Verdict::GiveUp(None);
    }
    Verdict::RetryAfter(wait)
}

/// How long a rate limit in this answer lasts, if the answer is one.
pub fn rate_limit(
    policy: &RetryPolicy,
    status: u16,
    headers: &HeaderMap,
    body: &[u8],
    now_unix_secs: u64,
    attempt: u32,
) -> Option<Duration> {
    let limited = status == 429
        || (status == 403 && (is_rate_limited(headers) || is_secondary_limit_message(body)));
    limited.then(|| rate_limit_wait(policy, headers, now_unix_secs, attempt))
}

fn header<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
}

fn is_rate_limited(headers: &HeaderMap) -> bool {
    header(headers, "retry-after").is_some() || no_requests_remaining(headers)
}

/// `x-ratelimit-remaining: 0`, in any of the header's values (a proxy may add its own).
fn no_requests_remaining(headers: &HeaderMap) -> bool {
    headers
        .get_all("x-ratelimit-remaining")
        .iter()
        .any(|v| v.to_str().is_ok_and(|v| v.trim() == "0"))
}

/// GitHub's words for a secondary rate limit: "You have exceeded a secondary rate limit",
/// and the older "abuse detection mechanism".
fn is_secondary_limit_message(body: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Message {
        #[serde(default)]
        message: String,
    }
    let Ok(parsed) = serde_json::from_slice::<Message>(body) else {
        return false;
    };
    let message = parsed.message.to_ascii_lowercase();
    message.contains("secondary rate limit") || message.contains("abuse detection")
}

fn rate_limit_wait(policy: &RetryPolicy, headers: &HeaderMap, now: u64, attempt: u32) -> Duration {
    if let Some(wait) = retry_after(headers, now) {
        return wait;
    }
    if no_requests_remaining(headers) {
        if let Some(reset) =
            header(headers, "x-ratelimit-reset").and_then(|v| v.parse::<u64>().ok())
        {
            // One second of slack: the reset is rounded to whole seconds.
            return Duration::from_secs(reset.saturating_sub(now).saturating_add(1));
        }
    }
    // No time named: GitHub asks for at least a minute, and longer on each repeat.
    let factor = 1u64 << attempt.saturating_sub(1).min(20);
    Duration::from_millis(policy.secondary_rate_limit_wait_ms.saturating_mul(factor))
}

/// `Retry-After` as delta-seconds or an HTTP date.
fn retry_after(headers: &HeaderMap, now: u64) -> Option<Duration> {
    let value = header(headers, "retry-after")?;
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let date = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let at = u64::try_from(date.timestamp()).ok()?;
    Some(Duration::from_secs(at.saturating_sub(now)))
}
