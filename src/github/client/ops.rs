//! The operations of [`OctocrabForge`]: one REST call (or a short sequence) each, with
//! narrow response types that read only what itergate uses. Creates that GitHub would
//! repeat (comments, check runs and the annotations their updates append) go through
//! [`OctocrabForge::create`] with a lookup that finds what a lost answer may have created.

use std::collections::BTreeMap;

use async_trait::async_trait;
use http::Method;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{decode, segment, Call, Created, OctocrabForge};
use crate::github::artifact;
use crate::github::checks::{check_run_bodies, CheckRunSpec};
use crate::github::commands::Permission;
use crate::github::events::{ListedRun, WorkflowRunEvent};
use crate::github::forge::{reply_marker_of, Forge, ForgeError};
use crate::github::types::{
    Actor, ActorKind, BranchRef, CheckRun, CheckRunId, CheckSuiteId, Comment, CommentId, Identity,
    IdentitySource, LabelSpec, PrCommit, PrNumber, PullRequest, Reaction, RepoName, RunId,
};
use crate::model::CommitSha;

#[derive(Deserialize)]
struct UserJson {
    login: String,
    #[serde(default, rename = "type")]
    kind: Option<String>,
}

impl UserJson {
    fn actor(user: Option<UserJson>) -> Actor {
        match user {
            Some(u) => Actor::new(
                u.login,
                ActorKind::from_github(u.kind.as_deref().unwrap_or("")),
            ),
            None => Actor::ghost(),
        }
    }
}

/// `GET /repos/{owner}/{repo}/contents/{path}`: a file (a directory answers with a list).
#[derive(Deserialize)]
struct ContentJson {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    encoding: Option<String>,
    #[serde(default)]
    content: Option<String>,
    /// The path answered: a symlink's target's, when the link points at a file.
    #[serde(default)]
    path: Option<String>,
}

/// `GET /repos/{owner}/{repo}/compare/{basehead}`: what itergate reads of it.
#[derive(Deserialize)]
struct CompareJson {
    status: String,
    #[serde(default)]
    files: Vec<ComparedFileJson>,
}

#[derive(Deserialize)]
struct ComparedFileJson {
    filename: String,
    #[serde(default)]
    patch: Option<String>,
}

#[derive(Deserialize)]
struct CommentJson {
    id: u64,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    user: Option<UserJson>,
}

impl From<CommentJson> for Comment {
    fn from(c: CommentJson) -> Self {
        Comment {
            id: CommentId(c.id),
            author: UserJson::actor(c.user),
            body: c.body.unwrap_or_default(),
        }
    }
}

#[derive(Deserialize)]
struct RepoJson {
    full_name: String,
    #[serde(default)]
    default_branch: Option<String>,
}

#[derive(Deserialize)]
struct BranchJson {
    sha: String,
    #[serde(rename = "ref")]
    ref_name: String,
    #[serde(default)]
    repo: Option<RepoJson>,
}

impl From<BranchJson> for BranchRef {
    fn from(b: BranchJson) -> Self {
        BranchRef {
            sha: CommitSha(b.sha),
            ref_name: b.ref_name,
            repo: b.repo.and_then(|r| r.full_name.parse().ok()),
        }
    }
}

#[derive(Deserialize)]
struct PullJson {
    number: u64,
    #[serde(default)]
    title: String,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    state: String,
    #[serde(default)]
    draft: Option<bool>,
    #[serde(default)]
    user: Option<UserJson>,
    head: BranchJson,
    base: BranchJson,
}

#[derive(Deserialize)]
struct CommitDetailJson {
    #[serde(default)]
    message: String,
}

#[derive(Deserialize)]
struct ShaJson {
    sha: String,
}

#[derive(Deserialize)]
struct PrCommitJson {
    sha: String,
    commit: CommitDetailJson,
    #[serde(default)]
    parents: Vec<ShaJson>,
}

#[derive(Deserialize)]
struct PermissionJson {
    #[serde(default)]
    permission: Option<String>,
    #[serde(default)]
    role_name: Option<String>,
}

#[derive(Deserialize)]
struct IdJson {
    id: u64,
}

#[derive(Deserialize, Default)]
struct OutputJson {
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
struct CheckRunJson {
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

#[derive(Deserialize)]
struct ArtifactJson {
    id: u64,
    name: String,
    #[serde(default)]
    expired: bool,
}

fn repo_path(repo: &RepoName) -> String {
    format!("/repos/{}/{}", segment(&repo.owner), segment(&repo.name))
}

fn call<'a>(
    operation: &'static str,
    method: Method,
    path: String,
    body: Option<&'a Value>,
) -> Call<'a> {
    Call {
        operation,
        method,
        path,
        body,
        authenticated: true,
    }
}

impl OctocrabForge {
    /// The zip of the run's unexpired artifact named `artifact`, read up to the download
    /// limit while it streams in; `None` when there is none.
    async fn artifact_zip(
        &self,
        repo: &RepoName,
        run: RunId,
        artifact: &str,
    ) -> Result<Option<bytes::Bytes>, ForgeError> {
        let operation = "download artifact";
        let path = format!(
            "{}/actions/runs/{run}/artifacts?name={}",
            repo_path(repo),
            segment(artifact)
        );
        let artifacts: Vec<ArtifactJson> = self
            .paginate("list workflow run artifacts", &path, Some("artifacts"))
            .await?;
        let Some(found) = artifacts.iter().find(|a| a.name == artifact && !a.expired) else {
            return Ok(None);
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
            return Ok(Some(self.send(fetch).await?.body));
        }
        Ok(Some(reply.body))
    }

    async fn fetch_identity(&self) -> Result<Identity, ForgeError> {
        let user = self.send_json::<UserJson>(call(
            "get the authenticated user",
            Method::GET,
            "/user".into(),
            None,
        ));
        match (user.await, &self.settings().bot_login) {
            (Ok(user), _) => Ok(Identity {
                login: user.login,
                source: IdentitySource::Api,
            }),
            (Err(e), Some(bot)) if e.status() == Some(403) => Ok(Identity {
                login: bot.clone(),
                source: IdentitySource::Configured,
            }),
            (Err(e), _) => Err(e),
        }
    }

    /// The check runs of `sha` as GitHub lists them.
    async fn runs_on(&self, repo: &RepoName, sha: &str) -> Result<Vec<CheckRunJson>, ForgeError> {
        let path = format!("{}/commits/{}/check-runs", repo_path(repo), segment(sha));
        self.paginate("list check runs", &path, Some("check_runs"))
            .await
    }

    /// How many annotations run `id` of `sha` has (`None`: the run is not listed).
    async fn annotations_on(
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
    async fn send_check_bodies(
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
                            r.name == spec.name
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

fn annotation_count(body: &Value) -> usize {
    body.pointer("/output/annotations")
        .and_then(Value::as_array)
        .map_or(0, Vec::len)
}

/// The newest comment by `bot_login` that a create of `body` made: the same reply marker
/// when `body` starts with one, else the same body.
fn created_comment(comments: Vec<Comment>, bot_login: &str, body: &str) -> Option<Comment> {
    let marker = reply_marker_of(body);
    comments.into_iter().rev().find(|c| {
        c.author.is(bot_login)
            && match marker {
                Some(marker) => reply_marker_of(&c.body) == Some(marker),
                None => c.body == body,
            }
    })
}

#[async_trait]
impl Forge for OctocrabForge {
    async fn identity(&self) -> Result<Identity, ForgeError> {
        self.identity
            .get_or_try_init(|| self.fetch_identity())
            .await
            .cloned()
    }

    async fn list_comments(
        &self,
        repo: &RepoName,
        pr: PrNumber,
    ) -> Result<Vec<Comment>, ForgeError> {
        let path = format!("{}/issues/{pr}/comments", repo_path(repo));
        let comments: Vec<CommentJson> = self.paginate("list issue comments", &path, None).await?;
        Ok(comments.into_iter().map(Comment::from).collect())
    }

    async fn create_comment(
        &self,
        repo: &RepoName,
        pr: PrNumber,
        body: &str,
    ) -> Result<Comment, ForgeError> {
        let operation = "create issue comment";
        let path = format!("{}/issues/{pr}/comments", repo_path(repo));
        let json = json!({ "body": body });
        let look = || async {
            let me = self.identity().await?.login;
            let comments = self.list_comments(repo, pr).await?;
            Ok(created_comment(comments, &me, body))
        };
        match self
            .create(call(operation, Method::POST, path, Some(&json)), look)
            .await?
        {
            Created::Sent(reply) => Ok(decode::<CommentJson>(operation, &reply.body)?.into()),
            Created::Found(comment) => Ok(comment),
        }
    }

    async fn delete_comment(&self, repo: &RepoName, id: CommentId) -> Result<(), ForgeError> {
        let path = format!("{}/issues/comments/{id}", repo_path(repo));
        match self
            .send(call("delete issue comment", Method::DELETE, path, None))
            .await
        {
            Err(e) if e.is_not_found() => Ok(()),
            other => other.map(|_| ()),
        }
    }

    async fn update_comment(
        &self,
        repo: &RepoName,
        id: CommentId,
        body: &str,
    ) -> Result<Comment, ForgeError> {
        let path = format!("{}/issues/comments/{id}", repo_path(repo));
        let body = json!({ "body": body });
        let updated: CommentJson = self
            .send_json(call(
                "update issue comment",
                Method::PATCH,
                path,
                Some(&body),
            ))
            .await?;
        Ok(updated.into())
    }

    async fn add_reaction(
        &self,
        repo: &RepoName,
        comment: CommentId,
        reaction: Reaction,
    ) -> Result<(), ForgeError> {
        let path = format!("{}/issues/comments/{comment}/reactions", repo_path(repo));
        let body = json!({ "content": reaction.as_str() });
        self.send(call("add reaction", Method::POST, path, Some(&body)))
            .await?;
        Ok(())
    }

    async fn add_label(
        &self,
        repo: &RepoName,
        pr: PrNumber,
        label: &LabelSpec,
    ) -> Result<(), ForgeError> {
        let path = format!("{}/labels", repo_path(repo));
        let spec =
            json!({ "name": label.name, "color": label.color, "description": label.description });
        match self
            .send(call("create label", Method::POST, path, Some(&spec)))
            .await
        {
            Ok(_) => {}
            // Already there (422), or the token may not create labels (403): adding it
            // still works, GitHub then creates it in its default colour.
            Err(e) if matches!(e.status(), Some(403 | 422)) => {
                tracing::debug!(label = %label.name, error = %e, "label not created");
            }
            Err(e) => return Err(e),
        }
        let path = format!("{}/issues/{pr}/labels", repo_path(repo));
        let body = json!({ "labels": [label.name] });
        self.send(call("add label", Method::POST, path, Some(&body)))
            .await?;
        Ok(())
    }

    async fn remove_label(
        &self,
        repo: &RepoName,
        pr: PrNumber,
        name: &str,
    ) -> Result<(), ForgeError> {
        let path = format!("{}/issues/{pr}/labels/{}", repo_path(repo), segment(name));
        match self
            .send(call("remove label", Method::DELETE, path, None))
            .await
        {
            Err(e) if e.is_not_found() => Ok(()),
            other => other.map(|_| ()),
        }
    }

    async fn permission(&self, repo: &RepoName, user: &str) -> Result<Permission, ForgeError> {
        let path = format!(
            "{}/collaborators/{}/permission",
            repo_path(repo),
            segment(user)
        );
        let operation = "get collaborator permission";
        match self
            .send_json::<PermissionJson>(call(operation, Method::GET, path, None))
            .await
        {
            Ok(p) => Ok(Permission::from_github(
                p.role_name.as_deref(),
                p.permission.as_deref(),
            )),
            Err(e) if e.is_not_found() => Ok(Permission::None),
            Err(e) => Err(e),
        }
    }

    async fn pull_request(&self, repo: &RepoName, pr: PrNumber) -> Result<PullRequest, ForgeError> {
        let path = format!("{}/pulls/{pr}", repo_path(repo));
        let p: PullJson = self
            .send_json(call("get pull request", Method::GET, path, None))
            .await?;
        let default_branch = p.base.repo.as_ref().and_then(|r| r.default_branch.clone());
        Ok(PullRequest {
            default_branch,
            number: PrNumber(p.number),
            title: p.title,
            body: p.body,
            state: p.state,
            draft: p.draft.unwrap_or(false),
            author: UserJson::actor(p.user),
            head: p.head.into(),
            base: p.base.into(),
        })
    }

    async fn pull_request_commits(
        &self,
        repo: &RepoName,
        pr: PrNumber,
    ) -> Result<Vec<PrCommit>, ForgeError> {
        let path = format!("{}/pulls/{pr}/commits", repo_path(repo));
        let commits: Vec<PrCommitJson> = self
            .paginate("list pull request commits", &path, None)
            .await?;
        Ok(commits
            .into_iter()
            .map(|c| PrCommit {
                sha: CommitSha(c.sha),
                message: c.commit.message,
                parents: c.parents.into_iter().map(|p| CommitSha(p.sha)).collect(),
            })
            .collect())
    }

    async fn create_check_run(
        &self,
        repo: &RepoName,
        spec: &CheckRunSpec,
    ) -> Result<CheckRunId, ForgeError> {
        self.send_check_bodies(repo, spec, None, check_run_bodies(spec, true))
            .await
    }

    async fn update_check_run(
        &self,
        repo: &RepoName,
        id: CheckRunId,
        spec: &CheckRunSpec,
    ) -> Result<(), ForgeError> {
        self.send_check_bodies(repo, spec, Some(id), check_run_bodies(spec, false))
            .await?;
        Ok(())
    }

    async fn list_check_runs(
        &self,
        repo: &RepoName,
        git_ref: &str,
    ) -> Result<Vec<CheckRun>, ForgeError> {
        let path = format!(
            "{}/commits/{}/check-runs",
            repo_path(repo),
            segment(git_ref)
        );
        let runs: Vec<CheckRunJson> = self
            .paginate("list check runs", &path, Some("check_runs"))
            .await?;
        Ok(runs.into_iter().map(CheckRun::from).collect())
    }

    async fn rerequest_check_suite(
        &self,
        repo: &RepoName,
        suite: CheckSuiteId,
    ) -> Result<(), ForgeError> {
        let path = format!("{}/check-suites/{suite}/rerequest", repo_path(repo));
        self.send(call("re-request check suite", Method::POST, path, None))
            .await?;
        Ok(())
    }

    async fn download_artifact_file(
        &self,
        repo: &RepoName,
        run: RunId,
        artifact: &str,
        file: &str,
    ) -> Result<Vec<u8>, ForgeError> {
        let operation = "download artifact";
        let zip = self
            .artifact_zip(repo, run, artifact)
            .await?
            .ok_or_else(|| ForgeError::Artifact {
                operation,
                message: format!("workflow run {run} has no unexpired artifact named `{artifact}`"),
            })?;
        artifact::extract_file(&zip, file, artifact::MAX_FILE_BYTES).map_err(|e| {
            let message = format!("artifact `{artifact}` of run {run}: {e}");
            match e {
                artifact::ArtifactError::Missing(_) => ForgeError::Artifact { operation, message },
                // There, but not read: said as such, not as "no record".
                _ => ForgeError::ArtifactRefused { operation, message },
            }
        })
    }

    async fn download_artifact_files(
        &self,
        repo: &RepoName,
        run: RunId,
        artifact: &str,
        matches: &(dyn for<'n> Fn(&'n str) -> bool + Sync),
    ) -> Result<Vec<(String, Vec<u8>)>, ForgeError> {
        let Some(zip) = self.artifact_zip(repo, run, artifact).await? else {
            return Ok(Vec::new());
        };
        artifact::extract_matching(
            &zip,
            matches,
            artifact::MAX_FILE_BYTES,
            self.settings.max_download_bytes,
        )
        .map_err(|e| ForgeError::Artifact {
            operation: "download artifact",
            message: format!("artifact `{artifact}` of run {run}: {e}"),
        })
    }

    async fn file_content(
        &self,
        repo: &RepoName,
        git_ref: &str,
        path: &str,
    ) -> Result<Option<Vec<u8>>, ForgeError> {
        let operation = "get repository content";
        let encoded: Vec<String> = path.split('/').map(segment).collect();
        let url = format!(
            "{}/contents/{}?ref={}",
            repo_path(repo),
            encoded.join("/"),
            segment(git_ref)
        );
        let answer: Value = match self
            .send_json(call(operation, Method::GET, url, None))
            .await
        {
            Ok(answer) => answer,
            Err(e) if e.is_not_found() => return Ok(None),
            Err(e) => return Err(e),
        };
        // A directory is answered with the list of its entries.
        if answer.is_array() {
            return Ok(None);
        }
        let content: ContentJson =
            serde_json::from_value(answer).map_err(|e| ForgeError::Decode {
                operation,
                message: e.to_string(),
            })?;
        if content.kind != "file" {
            return Ok(None);
        }
        // A symlink to a file is answered with the target's content and path: what the
        // caller's rules were applied to is the link's name, so the target is not read.
        if content.path.as_deref().is_some_and(|p| p != path) {
            tracing::warn!(
                requested = path,
                answered = content.path.as_deref().unwrap_or_default(),
                "the contents API answered another path (a symlink): not read"
            );
            return Ok(None);
        }
        match (content.encoding.as_deref(), content.content) {
            (Some("base64"), Some(text)) => {
                use base64::Engine as _;
                let compact: String = text.split_whitespace().collect();
                base64::engine::general_purpose::STANDARD
                    .decode(compact)
                    .map(Some)
                    .map_err(|e| ForgeError::Decode {
                        operation,
                        message: format!("{path}: the content is not base64: {e}"),
                    })
            }
            // GitHub leaves `content` empty and says `encoding: none` above 1 MB.
            _ => Err(ForgeError::TooLarge {
                operation,
                limit_bytes: 1024 * 1024,
            }),
        }
    }

    async fn compare(
        &self,
        repo: &RepoName,
        base: &str,
        head: &str,
    ) -> Result<crate::github::compare::Comparison, ForgeError> {
        let url = format!(
            "{}/compare/{}...{}",
            repo_path(repo),
            segment(base),
            segment(head)
        );
        let answer: CompareJson = self
            .send_json(call("compare two commits", Method::GET, url, None))
            .await?;
        Ok(crate::github::compare::Comparison {
            status: answer.status,
            files: answer
                .files
                .into_iter()
                .map(|f| crate::github::compare::ComparedFile {
                    filename: f.filename,
                    patch: f.patch,
                })
                .collect(),
        })
    }

    async fn rerun_pull_request_runs(
        &self,
        repo: &RepoName,
        head_sha: &str,
    ) -> Result<Vec<RunId>, ForgeError> {
        let mut rerun = Vec::new();
        for run in self.completed_pull_request_runs_of(repo, head_sha).await? {
            let path = format!("{}/actions/runs/{}/rerun", repo_path(repo), run.id());
            self.send(call("re-run a workflow", Method::POST, path, None))
                .await?;
            rerun.push(RunId(run.id()));
        }
        Ok(rerun)
    }

    async fn completed_pull_request_runs(
        &self,
        repo: &RepoName,
        head_sha: &str,
    ) -> Result<Vec<WorkflowRunEvent>, ForgeError> {
        let mut runs: Vec<WorkflowRunEvent> = self
            .completed_pull_request_runs_of(repo, head_sha)
            .await?
            .into_iter()
            .map(|run| run.into_event(repo.clone(), None))
            .collect();
        runs.sort_by_key(|run| std::cmp::Reverse(run.run_id.0));
        Ok(runs)
    }

    async fn dispatch_workflow(
        &self,
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
        self.dispatch(call("dispatch workflow", Method::POST, path, Some(&body)))
            .await
    }

    async fn repository_dispatch(
        &self,
        repo: &RepoName,
        event_type: &str,
        client_payload: &Value,
    ) -> Result<(), ForgeError> {
        let path = format!("{}/dispatches", repo_path(repo));
        let body = json!({ "event_type": event_type, "client_payload": client_payload });
        self.dispatch(call("repository dispatch", Method::POST, path, Some(&body)))
            .await
    }
}

impl OctocrabForge {
    /// Sends a dispatch at most once. A dispatch leaves nothing to look up, so after an
    /// answer that leaves open whether GitHub acted (a 5xx, a timeout) it counts as sent:
    /// a workflow started twice costs more than one a person restarts.
    async fn dispatch(&self, call: crate::github::client::Call<'_>) -> Result<(), ForgeError> {
        self.create(call, || async { Ok(Some(())) }).await?;
        Ok(())
    }
}

impl OctocrabForge {
    /// The completed runs of `head_sha` that a `pull_request` event started, every page.
    async fn completed_pull_request_runs_of(
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
