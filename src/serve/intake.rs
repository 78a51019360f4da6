//! `POST /webhook`: verify, persist, answer. Nothing on this path calls GitHub, so the
//! answer comes in milliseconds, far inside GitHub's 10 seconds.
//!
//! | answer | when |
//! | --- | --- |
//! | 202 | a new delivery, committed to the inbox |
//! | 200 | a delivery id seen before, or the same event and signed body under another id (a replay): no new work; or a `ping` |
//! | 400 | no `X-GitHub-Event`/`X-GitHub-Delivery`, an event named like itergate's own jobs, or a body that is not a JSON object |
//! | 401 | a signature missing, malformed (the body is not read), wrong, or SHA-1 only: nothing is stored |
//! | 408 | the body did not arrive within 10 s of its headers |
//! | 411 | no `Content-Length` (GitHub always sends one) |
//! | 413 | a body over 25 MB (GitHub's own limit), unread |
//! | 503 | no room to buffer the body now ([`super::limits`]), or the database did not commit: GitHub records the failure and the sweep redelivers |

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::limits::{self, MAX_BODY_BYTES};
use super::metrics::Metrics;
use super::signature::Secrets;
use super::store::{NewDelivery, Received, Store};

pub struct Intake {
    pub store: Store,
    pub secrets: Secrets,
    pub metrics: Arc<Metrics>,
    /// Wakes an idle worker when a delivery is stored.
    pub wake: Arc<tokio::sync::Notify>,
    pub budget: BodyBudget,
}

/// Room for bodies not yet authenticated, in KiB: a small pool for the bodies GitHub
/// nearly always sends and a large one, so that large bodies cannot crowd out the rest.
pub struct BodyBudget {
    small: Arc<Semaphore>,
    large: Arc<Semaphore>,
}

impl Default for BodyBudget {
    fn default() -> BodyBudget {
        let kib = |bytes: usize| Arc::new(Semaphore::new(bytes / 1024));
        BodyBudget {
            small: kib(limits::SMALL_BODIES_BYTES),
            large: kib(limits::LARGE_BODIES_BYTES),
        }
    }
}

impl BodyBudget {
    /// Room for `kib` more KiB of a body declared `length` bytes long, or `None` when there
    /// is none now. Charged as bytes arrive, never on the word of `Content-Length`: a
    /// sender that declares a megabyte and sends nothing holds nothing.
    async fn reserve(&self, length: usize, kib: u32) -> Option<OwnedSemaphorePermit> {
        if length <= limits::SMALL_BODY_BYTES {
            let wait = self.small.clone().acquire_many_owned(kib);
            tokio::time::timeout(limits::BUDGET_WAIT, wait)
                .await
                .ok()?
                .ok()
        } else {
            self.large.clone().try_acquire_many_owned(kib).ok()
        }
    }
}

/// Refuses `status` with `text`, counted under `reason`.
fn refuse(
    metrics: &Metrics,
    reason: &'static str,
    status: StatusCode,
    text: &'static str,
) -> Response {
    metrics.refused(reason);
    (status, text).into_response()
}

/// The body, read only once its signature header is well formed and its declared length
/// fits the limits and the budget; the permit holds its room until it is stored.
async fn read_body(
    intake: &Intake,
    headers: &HeaderMap,
    body: Body,
) -> Result<(Bytes, OwnedSemaphorePermit), Response> {
    let metrics = &intake.metrics;
    let sha256 = headers.get("x-hub-signature-256").map(|v| v.as_bytes());
    if let Err(e) = Secrets::well_formed(sha256, headers.contains_key("x-hub-signature")) {
        let delivery = headers
            .get("x-github-delivery")
            .map(|v| String::from_utf8_lossy(v.as_bytes()));
        tracing::warn!(delivery = ?delivery, "webhook refused, body unread: {e}");
        return Err(refuse(
            metrics,
            "signature",
            StatusCode::UNAUTHORIZED,
            "signature refused\n",
        ));
    }
    let length = headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<usize>().ok());
    let Some(length) = length else {
        return Err(refuse(
            metrics,
            "length",
            StatusCode::LENGTH_REQUIRED,
            "Content-Length is required\n",
        ));
    };
    if length > MAX_BODY_BYTES {
        return Err(refuse(
            metrics,
            "length",
            StatusCode::PAYLOAD_TOO_LARGE,
            "the body is over GitHub's 25 MB limit\n",
        ));
    }
    read_charged(intake, body, length).await
}

/// Reads a body of `length` bytes, charging the budget for what has arrived: each chunk
/// must come within [`limits::CHUNK_TIMEOUT`] of the one before (a body trickled in a byte
/// at a time is closed), and the whole within [`limits::BODY_TIMEOUT`].
async fn read_charged(
    intake: &Intake,
    body: Body,
    length: usize,
) -> Result<(Bytes, OwnedSemaphorePermit), Response> {
    use http_body_util::BodyExt as _;
    let metrics = &intake.metrics;
    let busy = || {
        tracing::warn!("webhook refused: no room to buffer {length} bytes now");
        refuse(
            metrics,
            "busy",
            StatusCode::SERVICE_UNAVAILABLE,
            "too many bodies arriving at once; redeliver it later\n",
        )
    };
    let mismatch = || {
        refuse(
            metrics,
            "length",
            StatusCode::BAD_REQUEST,
            "the body does not match its Content-Length\n",
        )
    };
    let slow = || {
        refuse(
            metrics,
            "slow",
            StatusCode::REQUEST_TIMEOUT,
            "the body did not arrive in time\n",
        )
    };
    let deadline = tokio::time::Instant::now() + limits::BODY_TIMEOUT;
    let mut held: Option<OwnedSemaphorePermit> = None;
    let mut held_kib = 0u32;
    let mut collected = bytes::BytesMut::with_capacity(length.min(64 * 1024));
    let mut body = body;
    loop {
        let wait = deadline
            .saturating_duration_since(tokio::time::Instant::now())
            .min(limits::CHUNK_TIMEOUT);
        let frame = match tokio::time::timeout(wait, body.frame()).await {
            Err(_) => return Err(slow()),
            Ok(None) => break,
            Ok(Some(Err(e))) => {
                tracing::warn!("webhook refused: the body could not be read: {e}");
                return Err(mismatch());
            }
            Ok(Some(Ok(frame))) => frame,
        };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        if collected.len() + data.len() > length {
            return Err(mismatch());
        }
        collected.extend_from_slice(&data);
        let need = u32::try_from(collected.len().div_ceil(1024).max(1)).unwrap_or(u32::MAX);
        if need > held_kib {
            let Some(more) = intake.budget.reserve(length, need - held_kib).await else {
                return Err(busy());
            };
            match held.as_mut() {
                Some(permit) => permit.merge(more),
                None => held = Some(more),
            }
            held_kib = need;
        }
    }
    if collected.len() != length {
        return Err(mismatch());
    }
    let permit = match held {
        Some(permit) => permit,
        // An empty body still takes its KiB, as every body does.
        None => intake.budget.reserve(length, 1).await.ok_or_else(busy)?,
    };
    Ok((collected.freeze(), permit))
}

/// The few fields intake reads: where the delivery belongs. Everything else is read by
/// the worker; unknown and missing fields are fine.
#[derive(Deserialize, Default)]
struct Envelope {
    #[serde(default)]
    action: Option<String>,
    #[serde(default)]
    installation: Option<Id>,
    #[serde(default)]
    repository: Option<Repository>,
    #[serde(default)]
    pull_request: Option<Number>,
    #[serde(default)]
    issue: Option<Number>,
    #[serde(default)]
    workflow_run: Option<WithPulls>,
    #[serde(default)]
    check_run: Option<WithPulls>,
    #[serde(default)]
    check_suite: Option<WithPulls>,
    #[serde(default)]
    comment: Option<CommentHead>,
}

/// What intake reads of a comment: whether its job yields ([`Envelope::yields`]).
#[derive(Deserialize)]
struct CommentHead {
    #[serde(default)]
    body: String,
    #[serde(default)]
    author_association: Option<String>,
}

#[derive(Deserialize)]
struct Id {
    id: i64,
}

#[derive(Deserialize)]
struct Repository {
    full_name: String,
}

#[derive(Deserialize)]
struct Number {
    number: u64,
}

#[derive(Deserialize)]
struct WithPulls {
    #[serde(default)]
    pull_requests: Vec<Number>,
}

impl Envelope {
    /// Whether the job of this `event` yields to every other ([`NewDelivery::yields`]): an
    /// `/iterate` command from someone GitHub does not call an owner, member or collaborator
    /// of the repository (in the signed payload). Such a command is usually refused; a
    /// reader's comments on many pull requests then wait behind the work of the people who
    /// may decide, not before it. The order only: permission is asked for when the job runs.
    fn yields(&self, event: &str) -> bool {
        let Some(comment) = self.comment.as_ref().filter(|_| event == "issue_comment") else {
            return false;
        };
        // GitHub always says; a payload that does not keeps its place.
        let outsider = comment
            .author_association
            .as_deref()
            .is_some_and(|a| !matches!(a, "OWNER" | "MEMBER" | "COLLABORATOR"));
        outsider && !crate::github::commands::parse_comment(&comment.body).is_empty()
    }

    fn pull_number(&self) -> Option<u64> {
        let first = |w: &Option<WithPulls>| {
            w.as_ref()
                .and_then(|w| w.pull_requests.first().map(|p| p.number))
        };
        self.pull_request
            .as_ref()
            .or(self.issue.as_ref())
            .map(|n| n.number)
            .or_else(|| first(&self.workflow_run))
            .or_else(|| first(&self.check_suite))
            .or_else(|| first(&self.check_run))
    }
}

/// The job key: a pull request's events run one at a time, in order; a repository's other
/// events share its key; events of no repository (installations) that of the installation.
pub fn job_key(repository: Option<&str>, pr: Option<u64>, installation: Option<i64>) -> String {
    match (repository, pr) {
        (Some(repo), Some(pr)) => format!("{}#{pr}", repo.to_ascii_lowercase()),
        (Some(repo), None) => repo.to_ascii_lowercase(),
        (None, _) => format!("installation:{}", installation.unwrap_or(0)),
    }
}

pub async fn webhook(
    State(intake): State<Arc<Intake>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let metrics = &intake.metrics;
    let (body, _room) = match read_body(&intake, &headers, body).await {
        Ok(read) => read,
        Err(refused) => return refused,
    };
    let header = |name: &str| headers.get(name).map(|v| v.as_bytes());
    let verified = intake
        .secrets
        .verify(
            header("x-hub-signature-256"),
            header("x-hub-signature").is_some(),
            &body,
        )
        .and_then(|()| Secrets::well_formed(header("x-hub-signature-256"), false));
    let digest = match verified {
        Ok(digest) => digest,
        Err(e) => {
            metrics.refused("signature");
            let delivery = header("x-github-delivery").map(String::from_utf8_lossy);
            tracing::warn!(delivery = ?delivery, "webhook refused: {e}");
            return (StatusCode::UNAUTHORIZED, "signature refused\n").into_response();
        }
    };
    let text = |name: &str| {
        header(name)
            .and_then(|v| std::str::from_utf8(v).ok())
            .map(str::trim)
            .filter(|v| !v.is_empty() && v.len() <= 200)
    };
    let (Some(event), Some(delivery_id)) = (text("x-github-event"), text("x-github-delivery"))
    else {
        metrics.refused("headers");
        return (
            StatusCode::BAD_REQUEST,
            "X-GitHub-Event and X-GitHub-Delivery are required\n",
        )
            .into_response();
    };
    if event.starts_with("itergate.") {
        // The queue's own jobs (reconcile) are never a webhook's.
        metrics.refused("headers");
        return (
            StatusCode::BAD_REQUEST,
            "X-GitHub-Event names one of itergate's own jobs\n",
        )
            .into_response();
    }
    let envelope: Envelope = match serde_json::from_slice(&body) {
        Ok(e) => e,
        Err(e) => {
            metrics.refused("payload");
            tracing::warn!(
                delivery = delivery_id,
                "webhook refused: the body is not a JSON object: {e}"
            );
            return (
                StatusCode::BAD_REQUEST,
                "the body is not a JSON object (set the webhook's content type to application/json)\n",
            )
                .into_response();
        }
    };
    if event == "ping" {
        tracing::info!(delivery = delivery_id, "ping");
        return (StatusCode::OK, "pong\n").into_response();
    }
    let repository = envelope.repository.as_ref().map(|r| r.full_name.clone());
    let installation_id = envelope.installation.as_ref().map(|i| i.id);
    let delivery = NewDelivery {
        delivery_id: delivery_id.to_string(),
        event: event.to_string(),
        action: envelope.action.clone(),
        installation_id,
        job_key: job_key(
            repository.as_deref(),
            envelope.pull_number(),
            installation_id,
        ),
        repository,
        body_sha: Some(NewDelivery::body_sha(event, &digest)),
        yields: envelope.yields(event),
        payload: body.to_vec(),
    };
    match intake.store.receive(delivery).await {
        Ok(Received::New) => {
            metrics.accepted();
            intake.wake.notify_one();
            tracing::debug!(delivery = delivery_id, event, "stored");
            (StatusCode::ACCEPTED, "stored\n").into_response()
        }
        Ok(Received::Duplicate) => {
            metrics.duplicate();
            tracing::info!(delivery = delivery_id, event, "seen before; nothing to do");
            (StatusCode::OK, "seen before\n").into_response()
        }
        Err(e) => {
            metrics.refused("database");
            tracing::error!(delivery = delivery_id, event, "not stored: {e}");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                "the delivery could not be stored; redeliver it later\n",
            )
                .into_response()
        }
    }
}

pub async fn healthz() -> &'static str {
    "ok\n"
}

pub async fn readyz(State(intake): State<Arc<Intake>>) -> Response {
    match intake.store.ping().await {
        Ok(()) => (StatusCode::OK, "ready\n").into_response(),
        Err(e) => (StatusCode::SERVICE_UNAVAILABLE, format!("database: {e}\n")).into_response(),
    }
}

pub async fn metrics(State(intake): State<Arc<Intake>>) -> Response {
    let depth = intake.store.pending().await.ok();
    let waiting = intake.store.waiting().await.ok();
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "text/plain; version=0.0.4",
        )],
        intake.metrics.render(depth, waiting),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_keys_group_a_pull_requests_events() {
        let key = |json: &str| {
            let e: Envelope = serde_json::from_str(json).unwrap();
            job_key(
                e.repository.as_ref().map(|r| r.full_name.as_str()),
                e.pull_number(),
                e.installation.as_ref().map(|i| i.id),
            )
        };
        let repo = r#""repository": {"full_name": "Octo/Hello"}"#;
        assert_eq!(
            key(&format!(r#"{{{repo}, "pull_request": {{"number": 4}}}}"#)),
            "octo/hello#4"
        );
        assert_eq!(
            key(&format!(r#"{{{repo}, "issue": {{"number": 4}}}}"#)),
            "octo/hello#4"
        );
        assert_eq!(
            key(&format!(
                r#"{{{repo}, "workflow_run": {{"pull_requests": [{{"number": 4}}]}}}}"#
            )),
            "octo/hello#4"
        );
        assert_eq!(
            key(&format!(
                r#"{{{repo}, "workflow_run": {{"pull_requests": []}}}}"#
            )),
            "octo/hello"
        );
        assert_eq!(key(r#"{"installation": {"id": 9}}"#), "installation:9");
    }

    #[test]
    fn a_command_from_someone_not_a_member_yields() {
        let yields = |event: &str, association: &str, body: &str| {
            let json = serde_json::json!({
                "comment": {"body": body, "author_association": association}
            });
            let e: Envelope = serde_json::from_value(json).unwrap();
            e.yields(event)
        };
        for association in ["NONE", "CONTRIBUTOR", "FIRST_TIME_CONTRIBUTOR", "MANNEQUIN"] {
            assert!(yields("issue_comment", association, "/iterate accept"));
        }
        for association in ["OWNER", "MEMBER", "COLLABORATOR"] {
            assert!(!yields("issue_comment", association, "/iterate accept"));
        }
        // Without a command (a gap report, a remark) it keeps its place; so does any other
        // event.
        assert!(!yields("issue_comment", "NONE", "looks good"));
        assert!(!yields(
            "pull_request_review_comment",
            "NONE",
            "/iterate accept"
        ));
        let e: Envelope = serde_json::from_str("{}").unwrap();
        assert!(!e.yields("issue_comment"));
        let json = r#"{"comment": {"body": "/iterate accept"}}"#;
        let e: Envelope = serde_json::from_str(json).unwrap();
        assert!(!e.yields("issue_comment"), "no association given");
    }
}
