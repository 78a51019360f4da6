//! Normalized events: what itergate acts on, from a webhook payload (the App) or
//! `GITHUB_EVENT_PATH` (Actions).
//!
//! Handled: `pull_request` (opened, synchronize, reopened, edited with a new base), `issue_comment` (created, on a
//! pull request), `pull_request_review` (submitted) and `workflow_run` (completed); anything
//! else is [`Parsed::Ignored`] with the reason. Only the fields itergate needs are read, and
//! tolerantly: real payloads carry integer timestamps where the schema says strings, omit
//! fields the schema requires and add new ones, so extra and unread fields never matter.

use serde::Deserialize;

use super::types::{Actor, ActorKind, CommentId, PrNumber, RepoName, RunId};
use crate::model::CommitSha;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    PullRequest(PullRequestEvent),
    Comment(CommentEvent),
    Review(ReviewEvent),
    WorkflowRun(WorkflowRunEvent),
}

impl Event {
    pub fn repo(&self) -> &RepoName {
        match self {
            Event::PullRequest(e) => &e.repo,
            Event::Comment(e) => &e.repo,
            Event::Review(e) => &e.repo,
            Event::WorkflowRun(e) => &e.repo,
        }
    }
}

/// The outcome of reading a payload.
// One value per delivery, matched by value at once: boxing the event would only make
// callers' patterns clumsier.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    Event(Event),
    /// A valid payload itergate does not act on, and why.
    Ignored(String),
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{event}` payload: {message}")]
pub struct EventError {
    pub event: String,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrAction {
    Opened,
    Synchronize,
    Reopened,
    /// `edited` with a new base branch: the rules in force may have changed.
    Retargeted,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullRequestEvent {
    pub action: PrAction,
    pub repo: RepoName,
    pub pr: PrNumber,
    pub head_sha: CommitSha,
    pub head_ref: String,
    pub base_ref: String,
    pub base_sha: CommitSha,
    /// `owner/name` of the head repository; `None` when it was deleted.
    pub head_repo: Option<RepoName>,
    pub sender: Actor,
    pub installation_id: Option<u64>,
    /// The base branch before a retarget ([`PrAction::Retargeted`]).
    pub previous_base: Option<String>,
    /// The repository's default branch, when the payload says.
    pub default_branch: Option<String>,
    /// The repository's id, when the payload says.
    pub repo_id: Option<u64>,
}

impl PullRequestEvent {
    /// The head is not in the base repository: its code is untrusted.
    pub fn is_fork(&self) -> bool {
        self.head_repo
            .as_ref()
            .is_none_or(|h| !h.same_as(&self.repo))
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommentEvent {
    pub repo: RepoName,
    pub pr: PrNumber,
    pub comment_id: CommentId,
    pub body: String,
    pub author: Actor,
    /// Who opened the pull request (the payload's `issue.user`), when the payload says.
    pub pr_author: Option<Actor>,
    pub installation_id: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReviewState {
    Approved,
    ChangesRequested,
    Commented,
    Dismissed,
    Other(String),
}

impl ReviewState {
    /// Webhooks say `changes_requested`, the REST API `CHANGES_REQUESTED`.
    pub fn from_github(state: &str) -> Self {
        match state.to_ascii_lowercase().as_str() {
            "approved" => ReviewState::Approved,
            "changes_requested" => ReviewState::ChangesRequested,
            "commented" => ReviewState::Commented,
            "dismissed" => ReviewState::Dismissed,
            _ => ReviewState::Other(state.to_string()),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewEvent {
    pub repo: RepoName,
    pub pr: PrNumber,
    pub state: ReviewState,
    pub body: Option<String>,
    pub reviewer: Actor,
    /// The commit the review is on.
    pub commit: Option<CommitSha>,
    /// Who opened the pull request (the payload's `pull_request.user`), when it says.
    pub pr_author: Option<Actor>,
    pub installation_id: Option<u64>,
}

impl ReviewEvent {
    /// "Changes requested" is a `user_rejection` trigger.
    pub fn is_rejection(&self) -> bool {
        self.state == ReviewState::ChangesRequested
    }

    /// An approval clears earlier rejections (never accepts by itself).
    pub fn is_approval(&self) -> bool {
        self.state == ReviewState::Approved
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkflowRunEvent {
    pub repo: RepoName,
    pub run_id: RunId,
    pub workflow_name: Option<String>,
    /// The event that started the run (`pull_request`, `push`, ...).
    pub triggering_event: Option<String>,
    pub head_sha: CommitSha,
    pub head_branch: Option<String>,
    pub head_repo: Option<RepoName>,
    /// The PRs GitHub associates with the run. Empty for runs of fork PRs: find the PR from
    /// the artifact or by head branch.
    pub prs: Vec<PrNumber>,
    pub conclusion: Option<String>,
    pub installation_id: Option<u64>,
}

// ---- payload shapes: only the fields read ----

#[derive(Deserialize)]
struct UserP {
    login: String,
    #[serde(default, rename = "type")]
    kind: Option<String>,
}

fn actor(user: Option<UserP>) -> Actor {
    user.map_or_else(Actor::ghost, |u| {
        Actor::new(
            u.login,
            ActorKind::from_github(u.kind.as_deref().unwrap_or("")),
        )
    })
}

#[derive(Deserialize)]
struct RepoP {
    #[serde(default)]
    id: Option<u64>,
    full_name: String,
    #[serde(default)]
    default_branch: Option<String>,
}

#[derive(Deserialize)]
struct InstallationP {
    id: u64,
}

#[derive(Deserialize)]
struct Envelope<T> {
    #[serde(default)]
    action: Option<String>,
    repository: RepoP,
    #[serde(default)]
    sender: Option<UserP>,
    #[serde(default)]
    installation: Option<InstallationP>,
    #[serde(flatten)]
    body: T,
}

#[derive(Deserialize)]
struct BranchP {
    sha: String,
    #[serde(rename = "ref")]
    ref_name: String,
    #[serde(default)]
    repo: Option<RepoP>,
}

#[derive(Deserialize)]
struct PullP {
    number: u64,
    head: BranchP,
    base: BranchP,
}

#[derive(Deserialize)]
struct PullRequestBody {
    pull_request: PullP,
    /// What an `edited` event changed: `base` when the PR was retargeted.
    #[serde(default)]
    changes: Option<ChangesP>,
}

#[derive(Deserialize)]
struct ChangesP {
    #[serde(default)]
    base: Option<BaseChangeP>,
}

#[derive(Deserialize)]
struct BaseChangeP {
    #[serde(default, rename = "ref")]
    ref_name: Option<FromP>,
}

#[derive(Deserialize)]
struct FromP {
    from: String,
}

#[derive(Deserialize)]
struct IssueP {
    number: u64,
    #[serde(default)]
    pull_request: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    user: Option<UserP>,
}

#[derive(Deserialize)]
struct CommentP {
    id: u64,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    user: Option<UserP>,
}

#[derive(Deserialize)]
struct IssueCommentBody {
    issue: IssueP,
    comment: CommentP,
}

#[derive(Deserialize)]
struct ReviewP {
    state: String,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    user: Option<UserP>,
    #[serde(default)]
    commit_id: Option<String>,
}

#[derive(Deserialize)]
struct PullNumberP {
    number: u64,
}

#[derive(Deserialize)]
struct ReviewedPullP {
    number: u64,
    #[serde(default)]
    user: Option<UserP>,
}

#[derive(Deserialize)]
struct ReviewBody {
    review: ReviewP,
    pull_request: ReviewedPullP,
}

#[derive(Deserialize)]
struct RunP {
    id: u64,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    event: Option<String>,
    head_sha: String,
    #[serde(default)]
    head_branch: Option<String>,
    #[serde(default)]
    head_repository: Option<RepoP>,
    #[serde(default)]
    pull_requests: Vec<PullNumberP>,
    #[serde(default)]
    conclusion: Option<String>,
    #[serde(default)]
    status: Option<String>,
}

impl RunP {
    fn into_event(self, repo: RepoName, installation_id: Option<u64>) -> WorkflowRunEvent {
        WorkflowRunEvent {
            repo,
            run_id: RunId(self.id),
            workflow_name: self.name,
            triggering_event: self.event,
            head_sha: CommitSha(self.head_sha),
            head_branch: self.head_branch,
            head_repo: self.head_repository.and_then(|r| r.full_name.parse().ok()),
            prs: self
                .pull_requests
                .into_iter()
                .map(|p| PrNumber(p.number))
                .collect(),
            conclusion: self.conclusion,
            installation_id,
        }
    }
}

/// A workflow run as `GET /repos/{owner}/{repo}/actions/runs` lists it: the same object as
/// the `workflow_run` event's.
#[derive(Deserialize)]
#[serde(transparent)]
pub struct ListedRun(RunP);

impl ListedRun {
    pub fn id(&self) -> u64 {
        self.0.id
    }

    pub fn head_sha(&self) -> &str {
        &self.0.head_sha
    }

    pub fn is_completed(&self) -> bool {
        self.0.status.as_deref() == Some("completed")
    }

    /// The run as its `workflow_run` `completed` event would have told it.
    pub fn into_event(self, repo: RepoName, installation_id: Option<u64>) -> WorkflowRunEvent {
        self.0.into_event(repo, installation_id)
    }
}

#[derive(Deserialize)]
struct WorkflowRunBody {
    workflow_run: RunP,
}

/// Reads the payload of the event named `event_name` (`X-GitHub-Event`,
/// `GITHUB_EVENT_NAME`).
pub fn parse_event(event_name: &str, payload: &[u8]) -> Result<Parsed, EventError> {
    match event_name {
        "pull_request" | "pull_request_target" => read(event_name, payload).and_then(pull_request),
        "issue_comment" => read(event_name, payload).and_then(issue_comment),
        "pull_request_review" => read(event_name, payload).and_then(review),
        "workflow_run" => read(event_name, payload).and_then(workflow_run),
        other => Ok(Parsed::Ignored(format!("event `{other}` is not handled"))),
    }
}

fn read<T: serde::de::DeserializeOwned>(
    event: &str,
    payload: &[u8],
) -> Result<Envelope<T>, EventError> {
    let mut de = serde_json::Deserializer::from_slice(payload);
    serde_path_to_error::deserialize(&mut de).map_err(|e| EventError {
        event: event.to_string(),
        message: match e.path().to_string().as_str() {
            "." => e.inner().to_string(),
            path => format!("at `{path}`: {}", e.inner()),
        },
    })
}

fn repo_of(event: &str, repo: &RepoP) -> Result<RepoName, EventError> {
    repo.full_name
        .parse()
        .map_err(|e: super::types::RepoNameError| EventError {
            event: event.to_string(),
            message: e.to_string(),
        })
}

fn ignored_action(event: &str, action: Option<&str>) -> Parsed {
    Parsed::Ignored(format!(
        "`{event}` action `{}` is not handled",
        action.unwrap_or("(none)")
    ))
}

fn pull_request(e: Envelope<PullRequestBody>) -> Result<Parsed, EventError> {
    let action = match e.action.as_deref() {
        Some("opened") => PrAction::Opened,
        Some("synchronize") => PrAction::Synchronize,
        Some("reopened") => PrAction::Reopened,
        Some("edited") if e.body.changes.as_ref().is_some_and(|c| c.base.is_some()) => {
            PrAction::Retargeted
        }
        Some("edited") => {
            return Ok(Parsed::Ignored(
                "`pull_request` `edited` without a new base (a title or body edit)".into(),
            ))
        }
        other => return Ok(ignored_action("pull_request", other)),
    };
    let previous_base = e
        .body
        .changes
        .and_then(|c| c.base?.ref_name)
        .map(|r| r.from);
    let pr = e.body.pull_request;
    Ok(Parsed::Event(Event::PullRequest(PullRequestEvent {
        action,
        repo: repo_of("pull_request", &e.repository)?,
        pr: PrNumber(pr.number),
        head_sha: CommitSha(pr.head.sha),
        head_ref: pr.head.ref_name,
        base_ref: pr.base.ref_name,
        base_sha: CommitSha(pr.base.sha),
        head_repo: pr.head.repo.and_then(|r| r.full_name.parse().ok()),
        sender: actor(e.sender),
        installation_id: e.installation.map(|i| i.id),
        previous_base,
        default_branch: e.repository.default_branch.clone(),
        repo_id: e.repository.id,
    })))
}

fn issue_comment(e: Envelope<IssueCommentBody>) -> Result<Parsed, EventError> {
    if e.action.as_deref() != Some("created") {
        return Ok(ignored_action("issue_comment", e.action.as_deref()));
    }
    if e.body.issue.pull_request.is_none() {
        return Ok(Parsed::Ignored(
            "comment on an issue, not a pull request".into(),
        ));
    }
    let comment = e.body.comment;
    let issue = e.body.issue;
    Ok(Parsed::Event(Event::Comment(CommentEvent {
        repo: repo_of("issue_comment", &e.repository)?,
        pr: PrNumber(issue.number),
        comment_id: CommentId(comment.id),
        body: comment.body.unwrap_or_default(),
        author: actor(comment.user),
        pr_author: issue.user.map(|u| actor(Some(u))),
        installation_id: e.installation.map(|i| i.id),
    })))
}

fn review(e: Envelope<ReviewBody>) -> Result<Parsed, EventError> {
    if e.action.as_deref() != Some("submitted") {
        return Ok(ignored_action("pull_request_review", e.action.as_deref()));
    }
    let review = e.body.review;
    Ok(Parsed::Event(Event::Review(ReviewEvent {
        repo: repo_of("pull_request_review", &e.repository)?,
        pr: PrNumber(e.body.pull_request.number),
        state: ReviewState::from_github(&review.state),
        body: review.body.filter(|b| !b.trim().is_empty()),
        reviewer: actor(review.user),
        commit: review.commit_id.map(CommitSha),
        pr_author: e.body.pull_request.user.map(|u| actor(Some(u))),
        installation_id: e.installation.map(|i| i.id),
    })))
}

fn workflow_run(e: Envelope<WorkflowRunBody>) -> Result<Parsed, EventError> {
    if e.action.as_deref() != Some("completed") {
        return Ok(ignored_action("workflow_run", e.action.as_deref()));
    }
    let repo = repo_of("workflow_run", &e.repository)?;
    let installation_id = e.installation.map(|i| i.id);
    Ok(Parsed::Event(Event::WorkflowRun(
        e.body.workflow_run.into_event(repo, installation_id),
    )))
}
