//! The vocabulary of the GitHub layer: newtypes for ids and names, and the few fields of
//! GitHub's objects that itergate reads. Every type here is ours, not GitHub's: adapters
//! ([`super::client`], [`super::events`]) deserialize only what they need and convert.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::model::CommitSha;

/// A repository, `owner/name`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RepoName {
    pub owner: String,
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a repository name of the form owner/name")]
pub struct RepoNameError(pub String);

impl RepoName {
    pub fn new(owner: impl Into<String>, name: impl Into<String>) -> Self {
        RepoName {
            owner: owner.into(),
            name: name.into(),
        }
    }

    /// `owner/name`, as `GITHUB_REPOSITORY` and `full_name` spell it.
    pub fn full_name(&self) -> String {
        format!("{}/{}", self.owner, self.name)
    }

    /// Case-insensitive comparison, as GitHub compares names.
    pub fn same_as(&self, other: &RepoName) -> bool {
        self.owner.eq_ignore_ascii_case(&other.owner) && self.name.eq_ignore_ascii_case(&other.name)
    }
}

impl FromStr for RepoName {
    type Err = RepoNameError;

    fn from_str(full: &str) -> Result<Self, Self::Err> {
        let valid = |s: &str| {
            !s.is_empty()
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        };
        match full.split_once('/') {
            Some((owner, name)) if valid(owner) && valid(name) => Ok(RepoName::new(owner, name)),
            _ => Err(RepoNameError(full.to_string())),
        }
    }
}

impl fmt::Display for RepoName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.owner, self.name)
    }
}

macro_rules! id_newtype {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
        )]
        #[serde(transparent)]
        pub struct $name(pub u64);

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}", self.0)
            }
        }
    };
}

id_newtype!(
    /// A pull request's number (also its issue number).
    PrNumber
);
id_newtype!(
    /// An issue comment's id (PR conversation comments are issue comments).
    CommentId
);
id_newtype!(
    /// A check run's id.
    CheckRunId
);
id_newtype!(
    /// A check suite's id.
    CheckSuiteId
);
id_newtype!(
    /// A workflow run's id.
    RunId
);

/// What kind of account acted, from GitHub's `type` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum ActorKind {
    #[default]
    User,
    Bot,
    Organization,
    Other,
}

impl ActorKind {
    pub fn from_github(kind: &str) -> Self {
        match kind {
            "User" => ActorKind::User,
            "Bot" => ActorKind::Bot,
            "Organization" => ActorKind::Organization,
            _ => ActorKind::Other,
        }
    }
}

/// A GitHub account: a comment's author, a reviewer, an event's sender.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Actor {
    pub login: String,
    pub kind: ActorKind,
}

impl Actor {
    pub fn new(login: impl Into<String>, kind: ActorKind) -> Self {
        Actor {
            login: login.into(),
            kind,
        }
    }

    /// GitHub shows deleted accounts as `ghost`.
    pub fn ghost() -> Self {
        Actor::new("ghost", ActorKind::User)
    }

    /// A bot by type or by the `[bot]` suffix GitHub gives App accounts.
    pub fn is_bot(&self) -> bool {
        self.kind == ActorKind::Bot || self.login.ends_with("[bot]")
    }

    /// Logins compare case-insensitively on GitHub.
    pub fn is(&self, login: &str) -> bool {
        self.login.eq_ignore_ascii_case(login)
    }
}

/// One comment of a pull request's conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Comment {
    pub id: CommentId,
    pub author: Actor,
    pub body: String,
}

/// Who the token acts as, and how we know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub login: String,
    pub source: IdentitySource,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdentitySource {
    /// `GET /user` answered.
    Api,
    /// `GET /user` is refused to this token (a `GITHUB_TOKEN` or an App installation token):
    /// the configured bot login is used.
    Configured,
}

/// One side of a pull request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BranchRef {
    pub sha: CommitSha,
    pub ref_name: String,
    /// `None` when the head repository was deleted.
    pub repo: Option<RepoName>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullRequest {
    pub number: PrNumber,
    pub title: String,
    pub body: Option<String>,
    pub state: String,
    pub draft: bool,
    pub author: Actor,
    pub head: BranchRef,
    pub base: BranchRef,
    /// The base repository's default branch, when GitHub says: the trust anchor of the
    /// rules (see `forge_flow::base_config`).
    pub default_branch: Option<String>,
    /// The base repository's id, when GitHub says: what the App's state is bound to (a
    /// rename or a transfer keeps it).
    pub base_repo_id: Option<u64>,
}

impl PullRequest {
    /// The head lives in another repository (or a deleted one): its code is untrusted and
    /// must never run with a write token.
    pub fn is_fork(&self) -> bool {
        match (&self.head.repo, &self.base.repo) {
            (Some(head), Some(base)) => !head.same_as(base),
            _ => true,
        }
    }
}

/// One commit of a pull request, as `GET .../pulls/{n}/commits` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrCommit {
    pub sha: CommitSha,
    pub message: String,
    pub parents: Vec<CommitSha>,
}

/// Reactions GitHub accepts on a comment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reaction {
    PlusOne,
    MinusOne,
    Laugh,
    Confused,
    Heart,
    Hooray,
    Rocket,
    Eyes,
}

impl Reaction {
    pub fn as_str(self) -> &'static str {
        match self {
            Reaction::PlusOne => "+1",
            Reaction::MinusOne => "-1",
            Reaction::Laugh => "laugh",
            Reaction::Confused => "confused",
            Reaction::Heart => "heart",
            Reaction::Hooray => "hooray",
            Reaction::Rocket => "rocket",
            Reaction::Eyes => "eyes",
        }
    }
}

/// A label with the colour and description it gets when itergate creates it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelSpec {
    pub name: String,
    /// Six hex digits, no `#`.
    pub color: String,
    pub description: String,
}

impl LabelSpec {
    /// The escalation label (`github.label` in the configuration).
    pub fn escalation(name: impl Into<String>) -> Self {
        LabelSpec {
            name: name.into(),
            color: "d93f0b".into(),
            description: "itergate: a human needs to decide on this pull request".into(),
        }
    }
}

/// A check run as `GET .../commits/{ref}/check-runs` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckRun {
    pub id: CheckRunId,
    pub name: String,
    pub head_sha: CommitSha,
    pub status: String,
    pub conclusion: Option<String>,
    pub external_id: Option<String>,
    pub check_suite: Option<CheckSuiteId>,
    pub output_title: Option<String>,
    pub output_summary: Option<String>,
    pub output_text: Option<String>,
}
