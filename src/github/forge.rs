//! The `Forge`: every GitHub operation itergate performs, as one object-safe async trait,
//! so the event handler core runs the same against octocrab ([`super::client`]), a fake
//! GitHub server in tests, or a recording mock.
//!
//! Effects are idempotent where GitHub lets them be: adding a label that is already there,
//! creating a label that exists (422 `already_exists`) and removing one that is not there
//! (404) all succeed, so a retried or re-run job never fails on its own earlier effect.
//! Creating a comment or a check run is not: after a 5xx or a timeout GitHub may have
//! created it and only the answer was lost. The forge then looks before it sends again:
//! [`Forge::create_comment`] finds the bot's comment that starts with the same reply marker
//! ([`marked_reply`]) or has the same body, [`Forge::create_check_run`] the run with the same
//! name, external id and title (and sends only the annotations it still lacks). Callers
//! upsert the sticky comment ([`super::sticky::upsert`], which also heals duplicates) and
//! give every other reply a key derived from what it answers ([`marked_reply`],
//! [`has_reply`]), so neither a retry nor a re-run job posts twice.

use std::collections::BTreeMap;

use async_trait::async_trait;

use super::checks::CheckRunSpec;
use super::commands::Permission;
use super::types::{
    CheckRun, CheckRunId, CheckSuiteId, Comment, CommentId, Identity, LabelSpec, PrCommit,
    PrNumber, PullRequest, Reaction, RepoName, RunId,
};

const REPLY_OPEN: &str = "<!-- itergate:reply ";
const REPLY_CLOSE: &str = " -->";

/// The hidden first line of a reply that must exist once: `<!-- itergate:reply KEY -->`.
/// `key` names what the reply answers (e.g. `comment-123`, `escalation-4`); characters other
/// than ASCII letters, digits, `.`, `:` and `_` become `_`, so it can never end the comment.
pub fn reply_marker(key: &str) -> String {
    let key: String = key
        .chars()
        .take(100)
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | ':' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{REPLY_OPEN}{key}{REPLY_CLOSE}")
}

/// `body` with the reply marker of `key` as its first line.
pub fn marked_reply(key: &str, body: &str) -> String {
    format!("{}\n{body}", reply_marker(key))
}

/// The reply marker line `body` starts with, if any.
pub fn reply_marker_of(body: &str) -> Option<&str> {
    let line = body.lines().next()?.trim();
    (line.starts_with(REPLY_OPEN) && line.ends_with(REPLY_CLOSE)).then_some(line)
}

/// Whether `comments` hold the reply with `key` written by `bot_login` (a re-run job or a
/// retry finds it and does not reply again). Comments by anyone else never count.
pub fn has_reply(comments: &[Comment], bot_login: &str, key: &str) -> bool {
    let marker = reply_marker(key);
    comments
        .iter()
        .any(|c| c.author.is(bot_login) && reply_marker_of(&c.body) == Some(marker.as_str()))
}

/// The bot's replies that repeat an older reply's marker (`only`: of that key alone), the
/// oldest of each kept: what a dead replica's write that landed late, or two writers racing,
/// left twice.
pub fn duplicate_replies(
    comments: &[Comment],
    bot_login: &str,
    only: Option<&str>,
) -> Vec<CommentId> {
    let only = only.map(reply_marker);
    let mut seen = std::collections::BTreeMap::new();
    let mut mine: Vec<&Comment> = comments.iter().filter(|c| c.author.is(bot_login)).collect();
    mine.sort_by_key(|c| c.id.0);
    let mut out = Vec::new();
    for comment in mine {
        let Some(marker) = reply_marker_of(&comment.body) else {
            continue;
        };
        if only.as_deref().is_some_and(|o| o != marker) {
            continue;
        }
        if seen.insert(marker, comment.id).is_some() {
            out.push(comment.id);
        }
    }
    out
}

/// A GitHub request that finally failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ForgeError {
    /// GitHub answered with an error status (after retries, where the status allowed them).
    #[error("{operation}: GitHub answered HTTP {status} after {attempts} attempt(s): {message}{}",
        details_suffix(.details))]
    Status {
        operation: &'static str,
        status: u16,
        /// GitHub's `message` field, or the start of the body when it is not JSON.
        message: String,
        /// The `code`s of GitHub's `errors` list (e.g. `already_exists`).
        details: Vec<String>,
        attempts: u32,
    },
    /// No answer: connection refused, timeout, TLS.
    #[error("{operation}: no answer from GitHub after {attempts} attempt(s): {message}")]
    Transport {
        operation: &'static str,
        message: String,
        attempts: u32,
    },
    /// GitHub answered 2xx with something we cannot read.
    #[error("{operation}: unexpected answer from GitHub: {message}")]
    Decode {
        operation: &'static str,
        message: String,
    },
    /// The workflow run has no (unexpired) artifact of that name, or it lacks the file.
    #[error("{operation}: {message}")]
    Artifact {
        operation: &'static str,
        message: String,
    },
    /// The artifact is there but refused (not a zip, too large, too many entries).
    #[error("{operation}: {message}")]
    ArtifactRefused {
        operation: &'static str,
        message: String,
    },
    /// The answer is longer than the most itergate reads (`max_download_bytes`).
    #[error("{operation}: the answer is larger than {limit_bytes} bytes, the most itergate reads; it was not downloaded")]
    TooLarge {
        operation: &'static str,
        limit_bytes: u64,
    },
    /// Settings are missing or malformed (token, API URL).
    #[error("GitHub settings: {0}")]
    Settings(String),
    /// The App's worker no longer holds the job it writes for (its lease ran out and
    /// another worker may have taken it over): the write was not made.
    #[error("not written: this worker no longer holds the job (its lease ran out; another worker may have taken it over)")]
    LeaseLost,
    /// A rate limit that lasts longer than the caller waits inside a request (the App's
    /// workers wait seconds at most): the caller reschedules for `wait`.
    #[error("{operation}: GitHub's rate limit (HTTP {status}) lasts another {} s: {message}", wait.as_secs())]
    RateLimited {
        operation: &'static str,
        status: u16,
        wait: std::time::Duration,
        message: String,
    },
    /// The App's own pacing of an installation's writes: its next turn is `wait` away,
    /// too long to hold a worker (the job runs again then).
    #[error("not written yet: this installation's writes are paced; its next turn is in {} ms", wait.as_millis())]
    Paced { wait: std::time::Duration },
}

fn details_suffix(details: &[String]) -> String {
    if details.is_empty() {
        String::new()
    } else {
        format!(" ({})", details.join(", "))
    }
}

impl ForgeError {
    /// The HTTP status GitHub answered, if it answered.
    pub fn status(&self) -> Option<u16> {
        match self {
            ForgeError::Status { status, .. } | ForgeError::RateLimited { status, .. } => {
                Some(*status)
            }
            _ => None,
        }
    }

    /// The operation that failed, e.g. `"create issue comment"`.
    pub fn operation(&self) -> &'static str {
        match self {
            ForgeError::Status { operation, .. }
            | ForgeError::Transport { operation, .. }
            | ForgeError::Decode { operation, .. }
            | ForgeError::Artifact { operation, .. }
            | ForgeError::ArtifactRefused { operation, .. }
            | ForgeError::TooLarge { operation, .. }
            | ForgeError::RateLimited { operation, .. } => operation,
            ForgeError::Settings(_) => "read GitHub settings",
            ForgeError::LeaseLost => "write for a job whose lease ran out",
            ForgeError::Paced { .. } => "write paced for the installation",
        }
    }

    pub fn is_not_found(&self) -> bool {
        self.status() == Some(404)
    }

    /// The token may not do this (403 without a rate limit, or 401).
    pub fn is_forbidden(&self) -> bool {
        matches!(self.status(), Some(401 | 403))
    }
}

/// The GitHub operations itergate needs. `pr` numbers are issue numbers for the issue
/// endpoints (comments, labels), as on GitHub.
#[async_trait]
pub trait Forge: Send + Sync {
    /// The account the token acts as: `GET /user`, or the configured bot login for tokens
    /// that may not read it (`GITHUB_TOKEN`, App installation tokens).
    async fn identity(&self) -> Result<Identity, ForgeError>;

    /// The writes that follow are for someone without the permission (the reply to a
    /// reader, its reaction): a forge that paces writes lets everyone else's go first.
    fn courtesy(&self) {}

    /// All comments of the PR's conversation, oldest first (every page).
    async fn list_comments(
        &self,
        repo: &RepoName,
        pr: PrNumber,
    ) -> Result<Vec<Comment>, ForgeError>;
    /// Creates a comment once: after a lost answer it looks for the bot's comment with the
    /// same reply marker (or, without one, the same body) before it posts again.
    async fn create_comment(
        &self,
        repo: &RepoName,
        pr: PrNumber,
        body: &str,
    ) -> Result<Comment, ForgeError>;
    async fn update_comment(
        &self,
        repo: &RepoName,
        id: CommentId,
        body: &str,
    ) -> Result<Comment, ForgeError>;
    /// Deletes a comment; one that is gone already is not an error.
    async fn delete_comment(&self, repo: &RepoName, id: CommentId) -> Result<(), ForgeError>;
    async fn add_reaction(
        &self,
        repo: &RepoName,
        comment: CommentId,
        reaction: Reaction,
    ) -> Result<(), ForgeError>;

    /// Creates the label with its colour and description if the repository lacks it, then
    /// adds it to the PR.
    async fn add_label(
        &self,
        repo: &RepoName,
        pr: PrNumber,
        label: &LabelSpec,
    ) -> Result<(), ForgeError>;
    /// Removes the label; a label that is not on the PR is not an error.
    async fn remove_label(
        &self,
        repo: &RepoName,
        pr: PrNumber,
        name: &str,
    ) -> Result<(), ForgeError>;
    /// Who added the label the PR carries now (from its issue events); `None` when the PR
    /// does not carry it.
    async fn label_added_by(
        &self,
        repo: &RepoName,
        pr: PrNumber,
        name: &str,
    ) -> Result<Option<String>, ForgeError>;

    /// The user's permission on the repository; a user who is no collaborator has `None`.
    async fn permission(&self, repo: &RepoName, user: &str) -> Result<Permission, ForgeError>;

    async fn pull_request(&self, repo: &RepoName, pr: PrNumber) -> Result<PullRequest, ForgeError>;
    /// The PR's commits, oldest first (GitHub lists at most 250).
    async fn pull_request_commits(
        &self,
        repo: &RepoName,
        pr: PrNumber,
    ) -> Result<Vec<PrCommit>, ForgeError>;

    /// Creates a check run; annotations beyond the first 50 follow in updates of 50 (at
    /// most [`super::checks::MAX_ANNOTATIONS`] in all). After a lost answer it finds the run
    /// it may have created and sends only what the run still lacks.
    async fn create_check_run(
        &self,
        repo: &RepoName,
        spec: &CheckRunSpec,
    ) -> Result<CheckRunId, ForgeError>;
    /// Updates a check run (its `head_sha` is ignored); annotations are appended in
    /// batches of 50.
    async fn update_check_run(
        &self,
        repo: &RepoName,
        id: CheckRunId,
        spec: &CheckRunSpec,
    ) -> Result<(), ForgeError>;
    /// The check runs of a commit (sha, branch or tag), every page.
    async fn list_check_runs(
        &self,
        repo: &RepoName,
        git_ref: &str,
    ) -> Result<Vec<CheckRun>, ForgeError>;
    async fn rerequest_check_suite(
        &self,
        repo: &RepoName,
        suite: CheckSuiteId,
    ) -> Result<(), ForgeError>;

    /// Downloads the workflow run's one artifact named `<artifact>-<SHA-256 of file>` and
    /// returns the content of `file` inside it; refused when the name carries no digest,
    /// the content does not hash to it, or the run has several candidates.
    async fn download_artifact_file(
        &self,
        repo: &RepoName,
        run: RunId,
        artifact: &str,
        file: &str,
    ) -> Result<Vec<u8>, ForgeError>;

    /// The content of the file at `path` in `git_ref` (a commit sha, branch or tag), or
    /// `None` when there is no such file (a directory, a symlink or a submodule is none
    /// either). Files larger than GitHub's 1 MB contents limit are refused as too large.
    async fn file_content(
        &self,
        repo: &RepoName,
        git_ref: &str,
        path: &str,
    ) -> Result<Option<Vec<u8>>, ForgeError>;

    /// How `head` differs from `base` (`GET /repos/{owner}/{repo}/compare/{base}...{head}`):
    /// its status and each changed file's patch.
    async fn compare(
        &self,
        repo: &RepoName,
        base: &str,
        head: &str,
    ) -> Result<super::compare::Comparison, ForgeError>;

    /// Re-runs the completed workflow runs of `head_sha` that a `pull_request` event
    /// started (the App's `/iterate`: its token may re-run, not dispatch); returns their ids.
    async fn rerun_pull_request_runs(
        &self,
        repo: &RepoName,
        head_sha: &str,
    ) -> Result<Vec<RunId>, ForgeError>;

    /// The completed workflow runs of `head_sha` that a `pull_request` event started, newest
    /// first, as their `workflow_run` events would have told them (the App's reconcile:
    /// a run whose event was lost is found here).
    async fn completed_pull_request_runs(
        &self,
        repo: &RepoName,
        head_sha: &str,
    ) -> Result<Vec<super::events::WorkflowRunEvent>, ForgeError>;

    /// Downloads the workflow run's artifact named `artifact` and returns its files whose
    /// names `matches` accepts (bounded like [`Forge::download_artifact_file`]). An empty
    /// list when the run has no such artifact.
    async fn download_artifact_files(
        &self,
        repo: &RepoName,
        run: RunId,
        artifact: &str,
        matches: &(dyn for<'n> Fn(&'n str) -> bool + Sync),
    ) -> Result<Vec<(String, Vec<u8>)>, ForgeError>;

    /// `workflow_dispatch` of `workflow` (file name or id) on `git_ref`.
    async fn dispatch_workflow(
        &self,
        repo: &RepoName,
        workflow: &str,
        git_ref: &str,
        inputs: &BTreeMap<String, String>,
    ) -> Result<(), ForgeError>;
    /// `repository_dispatch` with `event_type` and a `client_payload` object.
    async fn repository_dispatch(
        &self,
        repo: &RepoName,
        event_type: &str,
        client_payload: &serde_json::Value,
    ) -> Result<(), ForgeError>;
}
