//! Pull requests: one pull request and its commits.

use http::Method;
use serde::Deserialize;

use crate::github::client::OctocrabForge;
use crate::github::forge::ForgeError;
use crate::github::types::{BranchRef, PrCommit, PrNumber, PullRequest, RepoName};
use crate::model::CommitSha;

use super::{call, repo_path, UserJson};

#[derive(Deserialize)]
pub(super) struct RepoJson {
    #[serde(default)]
    id: Option<u64>,
    full_name: String,
    #[serde(default)]
    default_branch: Option<String>,
}

#[derive(Deserialize)]
pub(super) struct BranchJson {
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
pub(super) struct PullJson {
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
pub(super) struct CommitDetailJson {
    #[serde(default)]
    message: String,
}

#[derive(Deserialize)]
pub(super) struct ShaJson {
    sha: String,
}

#[derive(Deserialize)]
pub(super) struct PrCommitJson {
    sha: String,
    commit: CommitDetailJson,
    #[serde(default)]
    parents: Vec<ShaJson>,
}

pub(super) async fn pull_request(
    forge: &OctocrabForge,
    repo: &RepoName,
    pr: PrNumber,
) -> Result<PullRequest, ForgeError> {
    let path = format!("{}/pulls/{pr}", repo_path(repo));
    let p: PullJson = forge
        .send_json(call("get pull request", Method::GET, path, None))
        .await?;
    let default_branch = p.base.repo.as_ref().and_then(|r| r.default_branch.clone());
    let base_repo_id = p.base.repo.as_ref().and_then(|r| r.id);
    Ok(PullRequest {
        default_branch,
        base_repo_id,
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

pub(super) async fn pull_request_commits(
    forge: &OctocrabForge,
    repo: &RepoName,
    pr: PrNumber,
) -> Result<Vec<PrCommit>, ForgeError> {
    let path = format!("{}/pulls/{pr}/commits", repo_path(repo));
    let commits: Vec<PrCommitJson> = forge
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
