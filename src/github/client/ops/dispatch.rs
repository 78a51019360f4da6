//! Dispatches: `workflow_dispatch` and `repository_dispatch`, each sent at most once.

use std::collections::BTreeMap;

use http::Method;
use serde_json::{json, Value};

use crate::github::client::{segment, OctocrabForge};
use crate::github::forge::ForgeError;
use crate::github::types::RepoName;

use super::{call, repo_path};

pub(super) async fn dispatch_workflow(
    forge: &OctocrabForge,
    repo: &RepoName,
    workflow: &str,
    git_ref: &str,
    inputs: &BTreeMap<String, String>,
) -> Result<(), ForgeError> {
    let path = format!(
        "{}/actions/workflows/{}/dispatches",
        repo_path(repo),
        segment(workflow)
    );
    let body = if inputs.is_empty() {
        json!({ "ref": git_ref })
    } else {
        json!({ "ref": git_ref, "inputs": inputs })
    };
    forge
        .dispatch(call("dispatch workflow", Method::POST, path, Some(&body)))
        .await
}

pub(super) async fn repository_dispatch(
    forge: &OctocrabForge,
    repo: &RepoName,
    event_type: &str,
    client_payload: &Value,
) -> Result<(), ForgeError> {
    let path = format!("{}/dispatches", repo_path(repo));
    let body = json!({ "event_type": event_type, "client_payload": client_payload });
    forge
        .dispatch(call("repository dispatch", Method::POST, path, Some(&body)))
        .await
}

impl OctocrabForge {
    /// Sends a dispatch at most once. A dispatch leaves nothing to look up, so after an
    /// answer that leaves open whether GitHub acted (a 5xx, a timeout) it counts as sent:
    /// a workflow started twice costs more than one a person restarts.
    pub(super) async fn dispatch(
        &self,
        call: crate::github::client::Call<'_>,
    ) -> Result<(), ForgeError> {
        self.create(call, || async { Ok(Some(())) }).await?;
        Ok(())
    }
}
