//! The operations of [`OctocrabForge`]: one REST call (or a short sequence) each, with
//! narrow response types that read only what itergate uses. Creates that GitHub would
//! repeat (comments, check runs and the annotations their updates append) go through
//! [`OctocrabForge::create`] with a lookup that finds what a lost answer may have created.
//!
//! One module per GitHub resource; the `Forge` implementation here hands each call to
//! its resource's function.

mod actions;
mod checks;
mod dispatch;
mod issues;
mod pulls;
mod repos;

use std::collections::BTreeMap;

use async_trait::async_trait;
use http::Method;
use serde::Deserialize;
use serde_json::Value;

use crate::github::checks::CheckRunSpec;
use crate::github::client::{segment, Call, OctocrabForge};
use crate::github::commands::Permission;
use crate::github::events::WorkflowRunEvent;
use crate::github::forge::{Forge, ForgeError};
use crate::github::types::{
    Actor, ActorKind, CheckRun, CheckRunId, CheckSuiteId, Comment, CommentId, Identity,
    IdentitySource, LabelSpec, PrCommit, PrNumber, PullRequest, Reaction, RepoName, RunId,
};

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
        issues::list_comments(self, repo, pr).await
    }

    async fn create_comment(
        &self,
        repo: &RepoName,
        pr: PrNumber,
        body: &str,
    ) -> Result<Comment, ForgeError> {
        issues::create_comment(self, repo, pr, body).await
    }

    async fn delete_comment(&self, repo: &RepoName, id: CommentId) -> Result<(), ForgeError> {
        issues::delete_comment(self, repo, id).await
    }

    async fn update_comment(
        &self,
        repo: &RepoName,
        id: CommentId,
        body: &str,
    ) -> Result<Comment, ForgeError> {
        issues::update_comment(self, repo, id, body).await
    }

    async fn add_reaction(
        &self,
        repo: &RepoName,
        comment: CommentId,
        reaction: Reaction,
    ) -> Result<(), ForgeError> {
        issues::add_reaction(self, repo, comment, reaction).await
    }

    async fn add_label(
        &self,
        repo: &RepoName,
        pr: PrNumber,
        label: &LabelSpec,
    ) -> Result<(), ForgeError> {
        issues::add_label(self, repo, pr, label).await
    }

    async fn remove_label(
        &self,
        repo: &RepoName,
        pr: PrNumber,
        name: &str,
    ) -> Result<(), ForgeError> {
        issues::remove_label(self, repo, pr, name).await
    }

    async fn label_added_by(
        &self,
        repo: &RepoName,
        pr: PrNumber,
        name: &str,
    ) -> Result<Option<String>, ForgeError> {
        issues::label_added_by(self, repo, pr, name).await
    }

    async fn permission(&self, repo: &RepoName, user: &str) -> Result<Permission, ForgeError> {
        repos::permission(self, repo, user).await
    }

    async fn pull_request(&self, repo: &RepoName, pr: PrNumber) -> Result<PullRequest, ForgeError> {
        pulls::pull_request(self, repo, pr).await
    }

    async fn pull_request_commits(
        &self,
        repo: &RepoName,
        pr: PrNumber,
    ) -> Result<Vec<PrCommit>, ForgeError> {
        pulls::pull_request_commits(self, repo, pr).await
    }

    async fn create_check_run(
        &self,
        repo: &RepoName,
        spec: &CheckRunSpec,
    ) -> Result<CheckRunId, ForgeError> {
        checks::create_check_run(self, repo, spec).await
    }

    async fn update_check_run(
        &self,
        repo: &RepoName,
        id: CheckRunId,
        spec: &CheckRunSpec,
    ) -> Result<(), ForgeError> {
        checks::update_check_run(self, repo, id, spec).await
    }

    async fn list_check_runs(
        &self,
        repo: &RepoName,
        git_ref: &str,
    ) -> Result<Vec<CheckRun>, ForgeError> {
        checks::list_check_runs(self, repo, git_ref).await
    }

    async fn rerequest_check_suite(
        &self,
        repo: &RepoName,
        suite: CheckSuiteId,
    ) -> Result<(), ForgeError> {
        checks::rerequest_check_suite(self, repo, suite).await
    }

    async fn download_artifact_file(
        &self,
        repo: &RepoName,
        run: RunId,
        artifact: &str,
        file: &str,
    ) -> Result<Vec<u8>, ForgeError> {
        actions::download_artifact_file(self, repo, run, artifact, file).await
    }

    async fn download_artifact_files(
        &self,
        repo: &RepoName,
        run: RunId,
        artifact: &str,
        matches: &(dyn for<'n> Fn(&'n str) -> bool + Sync),
    ) -> Result<Vec<(String, Vec<u8>)>, ForgeError> {
        actions::download_artifact_files(self, repo, run, artifact, matches).await
    }

    async fn file_content(
        &self,
        repo: &RepoName,
        git_ref: &str,
        path: &str,
    ) -> Result<Option<Vec<u8>>, ForgeError> {
        repos::file_content(self, repo, git_ref, path).await
    }

    async fn compare(
        &self,
        repo: &RepoName,
        base: &str,
        head: &str,
    ) -> Result<crate::github::compare::Comparison, ForgeError> {
        repos::compare(self, repo, base, head).await
    }

    async fn rerun_pull_request_runs(
        &self,
        repo: &RepoName,
        head_sha: &str,
    ) -> Result<Vec<RunId>, ForgeError> {
        actions::rerun_pull_request_runs(self, repo, head_sha).await
    }

    async fn completed_pull_request_runs(
        &self,
        repo: &RepoName,
        head_sha: &str,
    ) -> Result<Vec<WorkflowRunEvent>, ForgeError> {
        actions::completed_pull_request_runs(self, repo, head_sha).await
    }

    async fn dispatch_workflow(
        &self,
        repo: &RepoName,
        workflow: &str,
        git_ref: &str,
        inputs: &BTreeMap<String, String>,
    ) -> Result<(), ForgeError> {
        dispatch::dispatch_workflow(self, repo, workflow, git_ref, inputs).await
    }

    async fn repository_dispatch(
        &self,
        repo: &RepoName,
        event_type: &str,
        client_payload: &Value,
    ) -> Result<(), ForgeError> {
        dispatch::repository_dispatch(self, repo, event_type, client_payload).await
    }
}
