//! `github`: the App's and the Action's settings, the hand-off to CI and the reports it
//! reads from an artifact.

use serde::{Deserialize, Serialize};

use super::checks::report_format;
use super::hook::Gate;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Github {
    /// Label added on escalation and removed on `/iterate accept`.
    pub label: String,
    /// People (logins) mentioned when a pull request is escalated.
    pub reviewers: Vec<String>,
    /// Permission needed for commands that change state (accept, adjust, escalate, budget,
    /// feedback).
    pub permission: crate::config::values::Permission,
    /// Whether the pull request's own author may give the commands that loosen its rules
    /// (`accept`, `adjust`, `budget`). Off by default: an agent that can write to the
    /// repository must not accept its own pull request.
    pub author_can_decide: bool,
    /// Act on commands written by other bots (never on itergate's own comments).
    pub allow_bots: bool,
    /// The login itergate comments as, when the token cannot tell (`GITHUB_TOKEN` in
    /// Actions comments as `github-actions[bot]`).
    pub bot_login: String,
    /// Also publish a check run with the checker issues as annotations.
    pub check_run: bool,
    /// Exit status of `itergate ci`, like `hook.gate`.
    pub gate: Gate,
    /// Name of the workflow artifact that carries a scored iteration record, uploaded as
    /// `<name>-<sha256 of the record>`: its record is checked against the digest.
    pub artifact: String,
    /// The App only: reports the project's CI already uploads as workflow artifacts, read
    /// when a completed run has no itergate record (scored as the whole tree: CI ran no
    /// base).
    pub reports: Vec<ArtifactReports>,
    /// Base branches (globs: `release/*`) whose own configuration judges the pull requests
    /// that target them, besides the default branch. Read from the default branch only: a
    /// pull request against any other base is judged by the default branch's rules.
    pub trusted_bases: Vec<String>,
    /// On ITERATE, hand the revision to the repository's agent (off by default).
    pub handoff: Handoff,
}

/// How a pull request's revision reaches the repository's agent: a `repository_dispatch`
/// or a `workflow_dispatch` whose workflow runs the agent. It carries a pointer (the pull
/// request, its head, the iteration, the sticky comment's URL), never the prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Handoff {
    /// How an ITERATE is handed to the repository's agent: `off`,
    /// `repository_dispatch`, `workflow_dispatch`, or `mention` (the App only).
    pub via: HandoffVia,
    /// `repository_dispatch`'s `event_type`.
    pub event_type: String,
    /// `workflow_dispatch`: the workflow's file name (or id) ...
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workflow: Option<String>,
    /// ... and the branch it runs from (default: the repository's default branch, or the
    /// pull request's base when `trusted_bases` names it; never an untrusted base).
    #[serde(rename = "ref", skip_serializing_if = "Option::is_none")]
    pub git_ref: Option<String>,
    /// `mention` (the App only): the handle a comment mentions, for agents that answer
    /// mentions (`@claude`); a workflow's own comments start no workflow.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handle: Option<String>,
    /// Hand-offs per pull request at most; then a person takes over.
    pub max_handoffs: u32,
    /// Minutes at least between two hand-offs of one pull request.
    pub min_interval_minutes: u64,
    /// Hand off forks' pull requests too (off by default). Their records are self-reported
    /// by a workflow the fork controls, and the agent would then work on code and
    /// instructions from outside the repository, with the secrets its workflow is given.
    pub forks: bool,
}

impl Default for Handoff {
    fn default() -> Self {
        Handoff {
            via: HandoffVia::Off,
            event_type: "itergate-revision".into(),
            workflow: None,
            git_ref: None,
            handle: None,
            max_handoffs: 5,
            min_interval_minutes: 2,
            forks: false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HandoffVia {
    Off,
    RepositoryDispatch,
    WorkflowDispatch,
    Mention,
}

/// Reports inside a workflow artifact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArtifactReports {
    /// The artifact's name (`actions/upload-artifact`'s `name`).
    pub artifact: String,
    #[serde(deserialize_with = "report_format")]
    pub format: crate::model::ReportFormat,
    /// Files inside the artifact: a glob (`**/*.xml`, `lcov.info`).
    pub path: String,
}

impl Default for Github {
    fn default() -> Self {
        Github {
            label: "needs-human-review".into(),
            reviewers: Vec::new(),
            permission: crate::config::values::Permission::Write,
            author_can_decide: false,
            allow_bots: false,
            bot_login: "github-actions[bot]".into(),
            check_run: false,
            gate: Gate::Warn,
            artifact: "itergate-record".into(),
            reports: Vec::new(),
            trusted_bases: Vec::new(),
            handoff: Handoff::default(),
        }
    }
}
