//! The steps around the pull request handler that both GitHub adapters take: Actions
//! (`itergate ci`, with a checkout) and the App (`itergate serve`, with the API alone).
//!
//! - [`base_config`]: the configuration of the PR's **base** commit, read through the API
//!   (a pull request cannot loosen its own rules);
//! - [`catch_up`]: commands (and gap reports, [`holds_work`]) of earlier comments that no
//!   run handled, applied first and in order;
//! - [`record_from_run`]: the iteration record a workflow run uploaded, believed only if the
//!   run, the pull request as the API has it now and the record name the same head commit,
//!   head repository and head branch;
//! - [`record_from_reports`]: without a record, the standard reports (JUnit, LCOV, SARIF,
//!   ...) the project's CI uploads as artifacts (`github.reports`), parsed with the same
//!   parsers and scored as the whole tree.

use std::path::PathBuf;

use super::pull_request::{Handler, HandlerError, Input};
use crate::config::{Config, CONFIG_LOCATIONS};
use crate::github::artifact::{check_run_head, RunHead};
use crate::github::events::{CommentEvent, WorkflowRunEvent};
use crate::github::types::{PrNumber, PullRequest, RepoName};
use crate::github::{Forge, ForgeError};
use crate::model::IterationRecord;

/// The file inside the artifact that carries a scored record.
pub const RECORD_FILE: &str = "record.json";

/// What a scoring job uploads: the record and what it was scored for.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct ArtifactRecord {
    pub pr: u64,
    /// The PR's head repository (`owner/name`) and branch the record was scored for.
    #[serde(default)]
    pub head_repo: Option<String>,
    #[serde(default)]
    pub head_ref: Option<String>,
    pub record: IterationRecord,
}

/// Why a step could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum FlowError {
    #[error(transparent)]
    Forge(#[from] ForgeError),
    #[error(transparent)]
    Handler(#[from] HandlerError),
    /// Untrusted input that is refused (a record for another head, a malformed
    /// configuration on the base): said, never published.
    #[error("{0}")]
    Refused(String),
}

/// Whether itergate acts on a comment: it holds an `/iterate` command, or an agent's
/// `CONTEXT_GAP_REPORT`. Everything else is left without a single API call.
pub fn holds_work(body: &str) -> bool {
    !crate::github::commands::parse_comment(body).is_empty()
        || crate::context::parse_gap_report(body).is_some()
}

/// Reads an artifact's record.
pub fn parse_artifact(bytes: &[u8]) -> Result<ArtifactRecord, String> {
    let artifact: ArtifactRecord = serde_json::from_slice(bytes)
        .map_err(|e| format!("the artifact's {RECORD_FILE} is not an itergate record: {e}"))?;
    // Scores are fractions: anything else was not written by itergate.
    let r = &artifact.record;
    let fractions = [
        ("scores.tests_passing", r.scores.tests_passing),
        ("scores.code_quality", r.scores.code_quality),
        ("scores.coverage", r.scores.coverage),
        ("scores.complexity", r.scores.complexity),
        ("quality", r.quality),
        ("confidence", r.confidence),
    ];
    if let Some((name, value)) = fractions
        .iter()
        .find_map(|(name, v)| v.filter(|v| !(0.0..=1.0).contains(v)).map(|v| (name, v)))
    {
        return Err(format!(
            "the artifact's {RECORD_FILE} is malformed: `{name}` is {value}, expected a fraction from 0 to 1"
        ));
    }
    Ok(artifact)
}

/// The rules a pull request is judged by, and a notice when they are not its base's.
pub struct Rules {
    pub config: Config,
    /// Why the configuration is the default branch's, not the base's.
    pub notice: Option<String>,
}

/// The rules of a PR whose base is `base_ref` at `base_sha`. Whoever can push can create a
/// branch with lenient rules and target it, so the trust anchor is the repository's
/// default branch: a PR against it, or against a base its `github.trusted_bases` names, is
/// judged by the configuration at its base commit; a PR against any other base by the
/// default branch's, and says so. Without a known default branch, the base's.
pub async fn base_config(
    forge: &dyn Forge,
    repo: &RepoName,
    base_sha: &str,
    base_ref: &str,
    default_branch: Option<&str>,
) -> Result<Rules, FlowError> {
    let at_base = || config_at(forge, repo, base_sha, base_ref);
    let Some(default) = default_branch.filter(|d| *d != base_ref) else {
        return Ok(Rules {
            config: at_base().await?,
            notice: None,
        });
    };
    let anchor = config_at(forge, repo, default, default).await?;
    if trusts(&anchor.github.trusted_bases, base_ref) {
        return Ok(Rules {
            config: at_base().await?,
            notice: None,
        });
    }
    Ok(Rules {
        config: anchor,
        notice: Some(untrusted_base_notice(base_ref, default)),
    })
}

/// What the comment says of a PR against `base`, judged by the rules of `default`.
pub fn untrusted_base_notice(base: &str, default: &str) -> String {
    let (base, default) = (
        crate::markup::escape_markdown_inline(base),
        crate::markup::escape_markdown_inline(default),
    );
    format!(
        "This pull request targets `{base}`, which `{default}` does not name in `github.trusted_bases`: it is judged by the rules of `{default}`."
    )
}

/// Whether `base` matches one of the `trusted` globs.
pub fn trusts(trusted: &[String], base: &str) -> bool {
    trusted.iter().any(|pattern| {
        globset::Glob::new(pattern).is_ok_and(|g| g.compile_matcher().is_match(base))
    })
}

/// The first of [`CONFIG_LOCATIONS`] at `git_ref` (a commit or a branch, shown as
/// `label`), or the defaults.
async fn config_at(
    forge: &dyn Forge,
    repo: &RepoName,
    git_ref: &str,
    label: &str,
) -> Result<Config, FlowError> {
    for name in CONFIG_LOCATIONS {
        if let Some(bytes) = forge.file_content(repo, git_ref, name).await? {
            let text = String::from_utf8_lossy(&bytes);
            let label = PathBuf::from(format!("{label}:{name}"));
            return Config::from_yaml(&text, &label).map_err(|e| FlowError::Refused(e.to_string()));
        }
    }
    Ok(Config::default())
}

/// GitHub keeps one pending workflow run per concurrency group and cancels the one before,
/// and the App may be down while comments arrive: a command in a comment no run handled is
/// applied now, in order. Comments after the state's last handled one (and before `until`)
/// that hold a command; returns what was done, for the log.
pub async fn catch_up(
    handler: &Handler<'_>,
    pr: PrNumber,
    until: Option<u64>,
) -> Result<Vec<String>, FlowError> {
    let bot = &handler.bot_login;
    let comments = handler.forge.list_comments(&handler.repo, pr).await?;
    let key = handler.pull_key(pr);
    let state = crate::github::sticky::load_state_keyed(&comments, bot, key.as_ref()).state;
    let Some(last) = state.last_command_comment else {
        // No command was ever handled: nothing can have been skipped that a later run
        // would know of (and a fresh PR's history starts with its first run).
        return Ok(Vec::new());
    };
    let pending: Vec<_> = comments
        .into_iter()
        .filter(|c| c.id.0 > last.0 && until.is_none_or(|u| c.id.0 < u))
        .filter(|c| !c.author.is(bot))
        .filter(|c| holds_work(&c.body))
        .collect();
    let mut actions = Vec::new();
    for comment in pending {
        actions.push(format!(
            "applying the commands of comment {} first (its run did not)",
            comment.id.0
        ));
        let event = CommentEvent {
            repo: handler.repo.clone(),
            pr,
            comment_id: comment.id,
            body: comment.body,
            author: comment.author,
            pr_author: None,
            installation_id: None,
        };
        let outcome = handler.handle(Input::Comment(event)).await?;
        actions.extend(outcome.actions);
    }
    Ok(actions)
}

/// A record uploaded by a workflow run, with the pull request it belongs to. `None` when
/// the run has no such artifact (not every workflow of a PR scores it).
pub async fn record_from_run(
    forge: &dyn Forge,
    run: &WorkflowRunEvent,
    artifact_name: &str,
) -> Result<Option<(PullRequest, IterationRecord)>, FlowError> {
    let bytes = match forge
        .download_artifact_file(&run.repo, run.run_id, artifact_name, RECORD_FILE)
        .await
    {
        Ok(bytes) => bytes,
        Err(ForgeError::Artifact { .. }) => return Ok(None),
        Err(e @ ForgeError::ArtifactRefused { .. }) => {
            return Err(FlowError::Refused(e.to_string()))
        }
        Err(e) => return Err(e.into()),
    };
    let artifact = parse_artifact(&bytes).map_err(FlowError::Refused)?;
    bind(forge, run, artifact).await.map(Some)
}

/// The record of `artifact` and its pull request, if the run, the pull request and the
/// artifact agree on head commit, repository and branch.
pub async fn bind(
    forge: &dyn Forge,
    run: &WorkflowRunEvent,
    artifact: ArtifactRecord,
) -> Result<(PullRequest, IterationRecord), FlowError> {
    if artifact.record.commit.0 != run.head_sha.0 {
        return Err(FlowError::Refused(format!(
            "the artifact's record is for {}, but the run was for {}; refusing to publish it",
            artifact.record.commit, run.head_sha
        )));
    }
    // The artifact comes from code the PR controls: believe its PR number only if the run
    // lists that PR (a fork's run lists none) and that PR's head is the commit, the
    // repository and the branch the run built. The record was scored with that PR's base.
    let pr = PrNumber(artifact.pr);
    if !run.prs.is_empty() && !run.prs.contains(&pr) {
        let listed: Vec<String> = run.prs.iter().map(|p| format!("#{}", p.0)).collect();
        return Err(FlowError::Refused(format!(
            "the artifact's record is for pull request #{}, but the run is for {}; refusing to publish it",
            pr.0,
            listed.join(", ")
        )));
    }
    let pull = forge.pull_request(&run.repo, pr).await?;
    check_run_head(
        &RunHead {
            sha: &run.head_sha.0,
            repo: run.head_repo.as_ref().map(ToString::to_string).as_deref(),
            branch: run.head_branch.as_deref(),
        },
        &RunHead {
            sha: &pull.head.sha.0,
            repo: pull.head.repo.as_ref().map(ToString::to_string).as_deref(),
            branch: Some(&pull.head.ref_name),
        },
        &RunHead {
            sha: &artifact.record.commit.0,
            repo: artifact.head_repo.as_deref(),
            branch: artifact.head_ref.as_deref(),
        },
    )
    .map_err(|e| {
        FlowError::Refused(format!(
            "pull request #{}: {e}; refusing to publish it",
            pr.0
        ))
    })?;
    Ok((pull, artifact.record))
}

/// Where GitHub's Linux runners check a repository out: report paths under it are made
/// relative to the repository.
fn runner_workspace(repo: &RepoName) -> PathBuf {
    let name = repo.to_string();
    let name = name.rsplit('/').next().unwrap_or(&name).to_string();
    PathBuf::from(format!("/home/runner/work/{name}/{name}"))
}

/// A record made from the reports of `github.reports` that the run uploaded, for its pull
/// request. `None` when nothing is configured, the run uploaded none of them, or it names no
/// pull request. A report that does not parse is refused, naming the artifact and file.
pub async fn record_from_reports(
    forge: &dyn Forge,
    run: &WorkflowRunEvent,
    config: &Config,
) -> Result<Option<(PullRequest, IterationRecord)>, FlowError> {
    use crate::signals::observation::{CheckOutcome, CheckResult, Observation};
    use crate::signals::report::{self, ParseOptions};
    if config.github.reports.is_empty() {
        return Ok(None);
    }
    let Some(pr) = run.prs.first().copied() else {
        return Ok(None);
    };
    let paths = crate::signals::paths::RepoPaths::new(&runner_workspace(&run.repo));
    let mut observed = Observation::default();
    for spec in &config.github.reports {
        let glob = globset::Glob::new(&spec.path)
            .map_err(|e| FlowError::Refused(format!("github.reports path `{}`: {e}", spec.path)))?
            .compile_matcher();
        let matches = move |name: &str| glob.is_match(name);
        let files = forge
            .download_artifact_files(&run.repo, run.run_id, &spec.artifact, &matches)
            .await?;
        for (name, bytes) in files {
            let mut parsed =
                report::parse(spec.format, &bytes[..], &name, &ParseOptions::default()).map_err(
                    |e| FlowError::Refused(format!("artifact `{}`, {name}: {e}", spec.artifact)),
                )?;
            paths.normalise(&mut parsed);
            observed.checks.push(CheckOutcome {
                name: format!("{}/{name}", spec.artifact),
                visibility: Default::default(),
                void_on_violation: false,
                result: CheckResult::Report {
                    report: parsed,
                    exit_code: None,
                },
            });
        }
    }
    if observed.checks.is_empty() {
        return Ok(None);
    }
    let pull = forge.pull_request(&run.repo, pr).await?;
    let run_repo = run.head_repo.as_ref().map(ToString::to_string);
    let run_head = RunHead {
        sha: &run.head_sha.0,
        repo: run_repo.as_deref(),
        branch: run.head_branch.as_deref(),
    };
    let pull_repo = pull.head.repo.as_ref().map(ToString::to_string);
    check_run_head(
        &run_head,
        &RunHead {
            sha: &pull.head.sha.0,
            repo: pull_repo.as_deref(),
            branch: Some(&pull.head.ref_name),
        },
        &run_head,
    )
    .map_err(|e| {
        FlowError::Refused(format!(
            "pull request #{}: {e}; refusing to publish it",
            pr.0
        ))
    })?;
    let commit = git2::Oid::from_str(&run.head_sha.0)
        .map_err(|e| FlowError::Refused(format!("head sha {}: {e}", run.head_sha)))?;
    let record = super::judge::whole_tree_record(config, commit, &observed);
    Ok(Some((pull, record)))
}
