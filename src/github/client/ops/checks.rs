//! Check runs: created and updated (annotations sent in batches of fifty, counted so a
//! retried update appends none twice), listed, and a check suite re-requested.

use http::Method;
use serde::Deserialize;
use serde_json::Value;

use crate::github::checks::{check_run_bodies, CheckRunSpec};
use crate::github::client::{decode, segment, Created, OctocrabForge};
use crate::github::forge::ForgeError;
use crate::github::types::{CheckRun, CheckRunId, CheckSuiteId, RepoName};
use crate::model::CommitSha;

use super::{call, repo_path};

#[derive(Deserialize)]
pub(super) struct IdJson {
    id: u64,
}

#[derive(Deserialize, Default)]
pub(super) struct OutputJson {
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    annotations_count: Option<usize>,
    #[serde(default)]
    summary: Option<String>,
    #[serde(default)]
    text: Option<String>,
}

#[derive(Deserialize)]
pub(super) struct CheckRunJson {
    id: u64,
    #[serde(default)]
    name: String,
    #[serde(default)]
    head_sha: String,
    #[serde(default)]
    status: String,
    #[serde(default)]
    conclusion: Option<String>,
    #[serde(default)]
    external_id: Option<String>,
    /// The app that made the run.
    #[serde(default)]
    app: Option<IdJson>,
    #[serde(default)]
    check_suite: Option<IdJson>,
    #[serde(default)]
    output: Option<OutputJson>,
}

impl From<CheckRunJson> for CheckRun {
    fn from(c: CheckRunJson) -> Self {
        let output = c.output.unwrap_or_default();
        CheckRun {
            id: CheckRunId(c.id),
            name: c.name,
            head_sha: CommitSha(c.head_sha),
            status: c.status,
            conclusion: c.conclusion,
            external_id: c.external_id,
            check_suite: c.check_suite.map(|s| CheckSuiteId(s.id)),
            output_title: output.title,
            output_summary: output.summary,
            output_text: output.text,
        }
    }
}

pub(super) fn annotation_count(body: &Value) -> usize {
    body.pointer("/output/annotations")
        .and_then(Value::as_array)
        .map_or(0, Vec::len)
}

pub(super) async fn create_check_run(
    forge: &OctocrabForge,
    repo: &RepoName,
    spec: &CheckRunSpec,
) -> Result<CheckRunId, ForgeError> {
    forge
        .send_check_bodies(repo, spec, None, check_run_bodies(spec, true))
        .await
}

pub(super) async fn update_check_run(
    forge: &OctocrabForge,
    repo: &RepoName,
    id: CheckRunId,
    spec: &CheckRunSpec,
) -> Result<(), ForgeError> {
    forge
        .send_check_bodies(repo, spec, Some(id), check_run_bodies(spec, false))
        .await?;
    Ok(())
}

pub(super) async fn list_check_runs(
    forge: &OctocrabForge,
    repo: &RepoName,
    git_ref: &str,
) -> Result<Vec<CheckRun>, ForgeError> {
    let path = format!(
        "{}/commits/{}/check-runs",
        repo_path(repo),
        segment(git_ref)
    );
    let runs: Vec<CheckRunJson> = forge
        .paginate("list check runs", &path, Some("check_runs"))
        .await?;
    Ok(runs.into_iter().map(CheckRun::from).collect())
}

pub(super) async fn rerequest_check_suite(
    forge: &OctocrabForge,
    repo: &RepoName,
    suite: CheckSuiteId,
) -> Result<(), ForgeError> {
    let path = format!("{}/check-suites/{suite}/rerequest", repo_path(repo));
    forge
        .send(call("re-request check suite", Method::POST, path, None))
        .await?;
    Ok(())
}

impl OctocrabForge {
    /// How many annotations run `id` of `sha` has (`None`: the run is not listed).
    pub(super) async fn annotations_on(
        &self,
        repo: &RepoName,
        sha: &str,
        id: CheckRunId,
    ) -> Result<Option<usize>, ForgeError> {
        let runs = self.runs_on(repo, sha).await?;
        Ok(runs
            .into_iter()
            .find(|r| r.id == id.0)
            .map(|r| r.output.and_then(|o| o.annotations_count).unwrap_or(0)))
    }

    /// Sends the bodies of a check run: the first creates it (no `first_id`) or updates it,
    /// the rest append annotations. A request whose answer was lost is looked up before it
    /// is sent again: a created run by name, external id and title; appended annotations by
    /// the run's `annotations_count`. So a retry never adds a run or an annotation twice.
    pub(super) async fn send_check_bodies(
        &self,
        repo: &RepoName,
        spec: &CheckRunSpec,
        first_id: Option<CheckRunId>,
        bodies: Vec<Value>,
    ) -> Result<CheckRunId, ForgeError> {
        let counts: Vec<usize> = bodies.iter().map(annotation_count).collect();
        let sha = spec.head_sha.0.as_str();
        // Annotations the run holds now, when known.
        let (id, mut on_run, mut next) = match first_id {
            Some(id) => (id, None, 0),
            None => {
                let path = format!("{}/check-runs", repo_path(repo));
                let look = || async {
                    let runs = self.runs_on(repo, sha).await?;
                    Ok(runs
                        .into_iter()
                        .filter(|r| {
                            // Another app's run of the same name and id is never ours.
                            let made_by_us = match self.settings().app_id {
                                Some(app) => r.app.as_ref().is_some_and(|a| a.id == app),
                                None => true,
                            };
                            made_by_us
                                && r.name == spec.name
                                && r.external_id == spec.external_id
                                && r.output.as_ref().and_then(|o| o.title.as_deref())
                                    == Some(spec.title.as_str())
                        })
                        .max_by_key(|r| r.id))
                };
                let first = call("create check run", Method::POST, path, bodies.first());
                let run = match self.create(first, look).await? {
                    Created::Sent(reply) => {
                        decode::<CheckRunJson>("create check run", &reply.body)?
                    }
                    Created::Found(run) => run,
                };
                let held = run.output.and_then(|o| o.annotations_count);
                let held = held.unwrap_or(counts.first().copied().unwrap_or(0));
                // Resume after the last body whose annotations the run already holds.
                let mut sent = 0;
                let mut next = counts.len();
                for (i, count) in counts.iter().enumerate() {
                    sent += count;
                    if sent > held {
                        next = i.max(1);
                        break;
                    }
                }
                (CheckRunId(run.id), Some(held), next)
            }
        };
        while next < bodies.len() {
            let body = &bodies[next];
            let path = format!("{}/check-runs/{id}", repo_path(repo));
            let update = call("update check run", Method::PATCH, path, Some(body));
            if counts[next] == 0 {
                self.send(update).await?;
                next += 1;
                continue;
            }
            let before = match on_run {
                Some(n) => n,
                None => self.annotations_on(repo, sha, id).await?.unwrap_or(0),
            };
            let after = before + counts[next];
            let look = || async {
                let held = self.annotations_on(repo, sha, id).await?;
                Ok(held.filter(|n| *n >= after))
            };
            on_run = Some(match self.create(update, look).await? {
                Created::Sent(reply) => decode::<CheckRunJson>("update check run", &reply.body)
                    .ok()
                    .and_then(|r| r.output.and_then(|o| o.annotations_count))
                    .unwrap_or(after),
                Created::Found(held) => held,
            });
            next += 1;
        }
        Ok(id)
    }
}
