//! `POST /webhook`: verify, persist, answer. Nothing on this path calls GitHub, so the
//! answer comes in milliseconds, far inside GitHub's 10 seconds.
//!
//! | answer | when |
//! | --- | --- |
//! | 202 | a new delivery, committed to the inbox |
//! | 200 | a delivery id seen before (no new work), or a `ping` |
//! | 400 | no `X-GitHub-Event`/`X-GitHub-Delivery`, an event named like itergate's own jobs, or a body that is not a JSON object |
//! | 401 | a signature missing, wrong, or SHA-1 only: nothing is stored |
//! | 413 | a body over 25 MB (GitHub's own limit) |
//! | 503 | the database did not commit: GitHub records the failure and the sweep redelivers |

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::metrics::Metrics;
use super::signature::Secrets;
use super::store::{NewDelivery, Received, Store};

/// GitHub caps webhook payloads at 25 MB.
pub const MAX_BODY_BYTES: usize = 25 * 1024 * 1024;

pub struct Intake {
    pub store: Store,
    pub secrets: Secrets,
    pub metrics: Arc<Metrics>,
    /// Wakes an idle worker when a delivery is stored.
    pub wake: Arc<tokio::sync::Notify>,
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
    body: Bytes,
) -> Response {
    let metrics = &intake.metrics;
    let header = |name: &str| headers.get(name).map(|v| v.as_bytes());
    if let Err(e) = intake.secrets.verify(
        header("x-hub-signature-256"),
        header("x-hub-signature").is_some(),
        &body,
    ) {
        metrics.refused("signature");
        let delivery = header("x-github-delivery").map(String::from_utf8_lossy);
        tracing::warn!(delivery = ?delivery, "webhook refused: {e}");
        return (StatusCode::UNAUTHORIZED, "signature refused\n").into_response();
    }
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
}
