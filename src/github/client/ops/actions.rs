//! Actions: workflow runs of a head listed and re-run, and artifacts downloaded (the
//! record CI uploaded).

use http::Method;
use serde::Deserialize;

use crate::github::artifact;
use crate::github::client::{segment, OctocrabForge};
use crate::github::events::{ListedRun, WorkflowRunEvent};
use crate::github::forge::ForgeError;
use crate::github::types::{RepoName, RunId};

use super::checks::CheckRunJson;
use super::{call, repo_path};

#[derive(Deserialize)]
pub(super) struct ArtifactJson {
    id: u64,
    name: String,
    #[serde(default)]
    expired: bool,
}

pub(super) async fn download_artifact_file(
    forge: &OctocrabForge,
    repo: &RepoName,
    run: RunId,
    artifact: &str,
    file: &str,
) -> Result<Vec<u8>, ForgeError> {
    let operation = "download artifact";
    let found = forge
        .artifact_zip(repo, run, artifact)
        .await?
        .ok_or_else(|| ForgeError::Artifact {
            operation,
            message: format!("workflow run {run} has no unexpired artifact named `{artifact}`"),
        })?;
    let bytes =
        artifact::extract_file(&found.zip, file, artifact::MAX_FILE_BYTES).map_err(|e| {
            let message = format!("artifact `{}` of run {run}: {e}", found.name);
            match e {
                artifact::ArtifactError::Missing(_) => ForgeError::Artifact { operation, message },
                // There, but not read: said as such, not as "no record".
                _ => ForgeError::ArtifactRefused { operation, message },
            }
        })?;
    // Bound or refused: a record whose artifact name carries no digest could have been
    // rewritten after itergate wrote it, and nothing here could tell.
    let Some(digest) = found.digest.as_deref() else {
        return Err(ForgeError::ArtifactRefused {
            operation,
            message: format!(
                "artifact `{}` of run {run} does not carry its record's digest: name the \
                 upload `{artifact}-${{{{ steps.<itergate's step id>.outputs.record-digest }}}}` \
                 (itergate ci --score-only gives it), so a record changed after itergate \
                 wrote it is refused",
                found.name
            ),
        });
    };
    artifact::check_digest(&bytes, Some(digest)).map_err(|e| ForgeError::ArtifactRefused {
        operation,
        message: format!("`{file}` of artifact `{}` of run {run}: {e}", found.name),
    })?;
    Ok(bytes)
}

/// A run's artifact, downloaded: its name and the record digest the name carries.
pub(super) struct FoundArtifact {
    name: String,
    digest: Option<String>,
    zip: bytes::Bytes,
}

pub(super) async fn download_artifact_files(
    forge: &OctocrabForge,
    repo: &RepoName,
    run: RunId,
    artifact: &str,
    matches: &(dyn for<'n> Fn(&'n str) -> bool + Sync),
) -> Result<Vec<(String, Vec<u8>)>, ForgeError> {
    let Some(found) = forge.artifact_zip(repo, run, artifact).await? else {
        return Ok(Vec::new());
    };
    artifact::extract_matching(
        &found.zip,
        matches,
        artifact::MAX_FILE_BYTES,
        forge.settings.max_download_bytes,
    )
    .map_err(|e| ForgeError::Artifact {
        operation: "download artifact",
        message: format!("artifact `{artifact}` of run {run}: {e}"),
    })
}

pub(super) async fn rerun_pull_request_runs(
    forge: &OctocrabForge,
    repo: &RepoName,
    head_sha: &str,
) -> Result<Vec<RunId>, ForgeError> {
    let mut rerun = Vec::new();
    for run in forge.completed_pull_request_runs_of(repo, head_sha).await? {
        let path = format!("{}/actions/runs/{}/rerun", repo_path(repo), run.id());
        forge
            .send(call("re-run a workflow", Method::POST, path, None))
            .await?;
        rerun.push(RunId(run.id()));
    }
    Ok(rerun)
}

pub(super) async fn completed_pull_request_runs(
    forge: &OctocrabForge,
    repo: &RepoName,
    head_sha: &str,
) -> Result<Vec<WorkflowRunEvent>, ForgeError> {
    let mut runs: Vec<WorkflowRunEvent> = forge
        .completed_pull_request_runs_of(repo, head_sha)
        .await?
        .into_iter()
        .map(|run| run.into_event(repo.clone(), None))
        .collect();
    runs.sort_by_key(|run| std::cmp::Reverse(run.run_id.0));
    Ok(runs)
}

impl OctocrabForge {
    /// The zip of the run's one unexpired artifact named `artifact` or `artifact-<digest>`
    /// (the name binds the record to what itergate wrote), read up to the download limit
    /// while it streams in; `None` when there is none, refused when there are several.
    pub(super) async fn artifact_zip(
        &self,
        repo: &RepoName,
        run: RunId,
        artifact: &str,
    ) -> Result<Option<FoundArtifact>, ForgeError> {
        let operation = "download artifact";
        // Every artifact of the run: `?name=` matches a name exactly, not a bound one.
        let path = format!("{}/actions/runs/{run}/artifacts", repo_path(repo));
        let artifacts: Vec<ArtifactJson> = self
            .paginate("list workflow run artifacts", &path, Some("artifacts"))
            .await?;
        let named: Vec<(&ArtifactJson, Option<&str>)> = artifacts
            .iter()
            .filter(|a| !a.expired)
            .filter_map(|a| Some((a, artifact::bound_name(&a.name, artifact)?)))
            .collect();
        // More than one candidate is not a choice to make: whichever is taken, another
        // upload in the run could have been the record.
        let (found, digest) = match named.as_slice() {
            [] => return Ok(None),
            [one] => *one,
            several => {
                let names: Vec<&str> = several.iter().map(|(a, _)| a.name.as_str()).collect();
                return Err(ForgeError::ArtifactRefused {
                    operation,
                    message: format!(
                        "workflow run {run} has {} artifacts that could be the record ({}): refusing to choose one",
                        several.len(),
                        names.join(", ")
                    ),
                });
            }
        };
        let found_artifact = |zip| FoundArtifact {
            name: found.name.clone(),
            digest: digest.map(str::to_string),
            zip,
        };
        let path = format!("{}/actions/artifacts/{}/zip", repo_path(repo), found.id);
        let reply = self.send(call(operation, Method::GET, path, None)).await?;
        if (300..400).contains(&reply.status) {
            let location = reply
                .headers
                .get(http::header::LOCATION)
                .and_then(|l| l.to_str().ok())
                .ok_or_else(|| ForgeError::Decode {
                    operation,
                    message: "redirect without a Location".into(),
                })?;
            // Storage gets a signed URL, never the token.
            let mut fetch = call(operation, Method::GET, location.to_string(), None);
            fetch.authenticated = false;
            return Ok(Some(found_artifact(self.send(fetch).await?.body)));
        }
        Ok(Some(found_artifact(reply.body)))
    }

    /// The check runs of `sha` as GitHub lists them.
    pub(super) async fn runs_on(
        &self,
        repo: &RepoName,
        sha: &str,
    ) -> Result<Vec<CheckRunJson>, ForgeError> {
        let path = format!("{}/commits/{}/check-runs", repo_path(repo), segment(sha));
        self.paginate("list check runs", &path, Some("check_runs"))
            .await
    }

    /// The completed runs of `head_sha` that a `pull_request` event started, every page.
    pub(super) async fn completed_pull_request_runs_of(
        &self,
        repo: &RepoName,
        head_sha: &str,
    ) -> Result<Vec<ListedRun>, ForgeError> {
        let path = format!(
            "{}/actions/runs?head_sha={}&event=pull_request&status=completed",
            repo_path(repo),
            segment(head_sha)
        );
        let runs: Vec<ListedRun> = self
            .paginate(
                "list workflow runs for a repository",
                &path,
                Some("workflow_runs"),
            )
            .await?;
        Ok(runs
            .into_iter()
            .filter(|r| r.head_sha() == head_sha && r.is_completed())
            .collect())
    }
}
