//! `itergate ci`: the GitHub Actions adapter. Reads the workflow's event, turns it into a
//! handler input and runs the one handler core against GitHub.
//!
//! - `pull_request`: scores the checked-out head as the PR's next iteration. The
//!   configuration comes from the PR's **base** commit, never from its head. For a PR from a
//!   fork (whose token cannot write) it only writes the record to `--record-out` for a
//!   `workflow_run` workflow to publish, and performs no write at all.
//! - `workflow_run`: reads that record from the run's artifact and publishes it.
//! - `issue_comment`, `pull_request_review`: commands and reviews.
//!
//! Writes a job summary (`GITHUB_STEP_SUMMARY`) and step outputs (`GITHUB_OUTPUT`:
//! recommendation, quality, iteration); the exit status follows `github.gate`.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use chrono::Utc;
use git2::Repository;

use crate::app::pull_request::REEVALUATE_EVENT;
use crate::app::pull_request::{Handler, Input, Outcome};
use crate::cli::CiArgs;
use crate::config::{Config, Gate};
use crate::engine::Decision;
use crate::git;
use crate::github::events::{self, Event, Parsed, PrAction, PullRequestEvent, WorkflowRunEvent};
use crate::github::types::PrNumber;
use crate::github::RepoName;
use crate::github::{Forge, ForgeSettings, OctocrabForge};
use crate::model::IterationRecord;
use crate::signals::checks::Progress;

use super::{user, Env, Failure};
use crate::app::judge::{judge, whole_tree_record, Judgement};
use crate::app::observe::{observe, ObserveRequest};

/// The file inside the artifact that carries a fork PR's record.
pub const RECORD_FILE: &str = "record.json";

pub fn ci(env: &Env, args: &CiArgs, quiet: bool) -> Result<(), Failure> {
    let payload = std::fs::read(&args.event_path).map_err(|e| {
        user(format!(
            "{}: cannot read the event: {e}",
            args.event_path.display()
        ))
    })?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(anyhow::Error::from)?;
    let parsed = if args.event_name == "repository_dispatch" {
        runtime.block_on(reevaluation(env, args, &payload))?
    } else {
        events::parse_event(&args.event_name, &payload).map_err(user)?
    };
    let event = match parsed {
        Parsed::Ignored(why) => {
            eprintln!("itergate: nothing to do for this event: {why}");
            return Ok(());
        }
        Parsed::Event(event) => event,
    };
    let progress = if quiet {
        Progress::Quiet
    } else {
        Progress::Auto
    };
    let outcome = match event {
        Event::PullRequest(pr) => {
            let repo = git::open(&env.root).map_err(|e| user(format!("{e:#}")))?;
            let config = base_config(&repo, &pr)?;
            let env = Env {
                config,
                ..env.clone()
            };
            let (record, base) = score_head(&env, &repo, &pr, progress)?;
            if pr.is_fork() && !args.write_on_fork {
                return save_for_artifact(&args.record_out, pr.pr, &record);
            }
            let input = Input::Iteration {
                pr: pr.pr,
                record: Box::new(record),
                base: base.map(Box::new),
            };
            runtime.block_on(run_handler(&env, args, &pr.repo, input))?
        }
        Event::WorkflowRun(run) => runtime.block_on(from_artifact(env, args, &run))?,
        Event::Comment(comment) => {
            // Most comments hold no command: answer those without a single API call.
            if crate::github::commands::parse_comment(&comment.body).is_empty() {
                eprintln!("itergate: the comment holds no /iterate command");
                return Ok(());
            }
            let repo = comment.repo.clone();
            runtime.block_on(run_handler(env, args, &repo, Input::Comment(comment)))?
        }
        Event::Review(review) => {
            let repo = review.repo.clone();
            runtime.block_on(run_handler(env, args, &repo, Input::Review(review)))?
        }
    };
    for action in &outcome.actions {
        eprintln!("itergate: {action}");
    }
    publish_outputs(&outcome)?;
    gate(env.config.github.gate, outcome.decision.as_ref())
}

/// `/iterate` asked for a re-run with a `repository_dispatch`: the pull request as it is now.
async fn reevaluation(env: &Env, args: &CiArgs, payload: &[u8]) -> Result<Parsed, Failure> {
    let value: serde_json::Value = serde_json::from_slice(payload)
        .map_err(|e| user(format!("repository_dispatch payload: {e}")))?;
    if value["action"] != REEVALUATE_EVENT {
        return Ok(Parsed::Ignored(format!(
            "repository_dispatch `{}` is not itergate's",
            value["action"]
        )));
    }
    let repo: RepoName = value["repository"]["full_name"]
        .as_str()
        .unwrap_or_default()
        .parse()
        .map_err(user)?;
    let Some(number) = value["client_payload"]["pr"].as_u64() else {
        return Err(user("repository_dispatch: client_payload.pr is missing"));
    };
    let forge = forge(env, args)?;
    let pull = forge
        .pull_request(&repo, PrNumber(number))
        .await
        .map_err(|e| Failure::Internal(e.into()))?;
    Ok(Parsed::Event(Event::PullRequest(PullRequestEvent {
        action: PrAction::Synchronize,
        repo,
        pr: pull.number,
        head_sha: pull.head.sha,
        head_ref: pull.head.ref_name,
        base_ref: pull.base.ref_name,
        base_sha: pull.base.sha,
        head_repo: pull.head.repo,
        sender: pull.author,
        installation_id: None,
    })))
}

/// The configuration as the PR's base commit has it: a PR cannot loosen its own rules.
fn base_config(repo: &Repository, pr: &PullRequestEvent) -> Result<Config, Failure> {
    let oid = git2::Oid::from_str(&pr.base_sha.0).map_err(anyhow::Error::from)?;
    let commit = repo.find_commit(oid).map_err(|_| {
        user(format!(
            "the PR's base commit {} is not in this checkout; check out with `fetch-depth: 0`",
            pr.base_sha
        ))
    })?;
    let tree = commit.tree().map_err(anyhow::Error::from)?;
    for name in crate::config::CONFIG_LOCATIONS {
        if let Ok(entry) = tree.get_path(Path::new(name)) {
            let blob = repo.find_blob(entry.id()).map_err(anyhow::Error::from)?;
            let text = String::from_utf8_lossy(blob.content());
            let label = PathBuf::from(format!("{}:{name}", pr.base_ref));
            return Config::from_yaml(&text, &label).map_err(user);
        }
    }
    Ok(Config::default())
}

fn score_head(
    env: &Env,
    repo: &Repository,
    pr: &PullRequestEvent,
    progress: Progress,
) -> Result<(IterationRecord, Option<IterationRecord>), Failure> {
    let head = git::resolve_commit(repo, "HEAD")?;
    let base = git2::Oid::from_str(&pr.base_sha.0).map_err(anyhow::Error::from)?;
    let merge_base = git::merge_base(repo, head, base)?;
    let base_observed = match merge_base.filter(|_| env.config.scoring.compare_base) {
        Some(mb) => {
            let label = format!("base {}", crate::app::local::short(mb));
            let request = ObserveRequest {
                commit: mb,
                in_place: false,
                progress,
                label: Some(&label),
            };
            Some((mb, observe(env, repo, &request)?))
        }
        None => None,
    };
    let request = ObserveRequest {
        commit: head,
        in_place: true,
        progress,
        label: None,
    };
    let observed = observe(env, repo, &request)?;
    let record = judge(
        &env.config,
        repo,
        &Judgement {
            commit: head,
            base: merge_base,
            iteration: 1,
            observed: &observed,
            base_observed: base_observed.as_ref().map(|(_, o)| o),
        },
    )?;
    let base_record = base_observed.map(|(mb, o)| whole_tree_record(&env.config, mb, &o));
    Ok((record, base_record))
}

/// What a fork's run hands to the `workflow_run` workflow: GitHub does not say which pull
/// request a fork's run belongs to, so the artifact does.
#[derive(serde::Serialize, serde::Deserialize)]
struct ArtifactRecord {
    pr: u64,
    record: IterationRecord,
}

fn save_for_artifact(path: &Path, pr: PrNumber, record: &IterationRecord) -> Result<(), Failure> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(anyhow::Error::from)?;
    }
    let artifact = ArtifactRecord {
        pr: pr.0,
        record: record.clone(),
    };
    let json = serde_json::to_vec_pretty(&artifact).map_err(anyhow::Error::from)?;
    std::fs::write(path, json).map_err(|e| anyhow::anyhow!("writing {}: {e}", path.display()))?;
    eprintln!(
        "itergate: a pull request from a fork: no write with this token; the record is in {} \
         for the workflow_run workflow to publish",
        path.display()
    );
    append_env_file(
        "GITHUB_STEP_SUMMARY",
        "itergate scored this fork pull request; the decision is published by the `workflow_run` workflow.\n",
    )
}

async fn from_artifact(
    env: &Env,
    args: &CiArgs,
    run: &WorkflowRunEvent,
) -> Result<Outcome, Failure> {
    let forge = forge(env, args)?;
    let bytes = forge
        .download_artifact_file(
            &run.repo,
            run.run_id,
            &env.config.github.artifact,
            RECORD_FILE,
        )
        .await
        .map_err(|e| Failure::Internal(e.into()))?;
    let artifact: ArtifactRecord = serde_json::from_slice(&bytes).map_err(|e| {
        user(format!(
            "the artifact's {RECORD_FILE} is not an itergate record: {e}"
        ))
    })?;
    let record = artifact.record;
    if record.commit.0 != run.head_sha.0 {
        return Err(user(format!(
            "the artifact's record is for {}, but the run was for {}; refusing to publish it",
            record.commit, run.head_sha
        )));
    }
    // The artifact comes from untrusted code: believe its PR number only if that PR's head
    // is the commit the run built.
    let pr = run.prs.first().copied().unwrap_or(PrNumber(artifact.pr));
    let pull = forge
        .pull_request(&run.repo, pr)
        .await
        .map_err(|e| Failure::Internal(e.into()))?;
    if pull.head.sha.0 != run.head_sha.0 {
        return Err(user(format!(
            "the artifact names pull request #{} whose head is {}, not the run's {}; refusing to publish it",
            pr.0, pull.head.sha, run.head_sha
        )));
    }
    handle_with(
        env,
        &forge,
        &run.repo,
        Input::Iteration {
            pr,
            record: Box::new(record),
            base: None,
        },
    )
    .await
}

fn forge(env: &Env, args: &CiArgs) -> Result<OctocrabForge, Failure> {
    let mut settings = ForgeSettings::from_env();
    if let Some(token) = &args.token {
        settings.token = Some(secrecy::SecretString::from(token.clone()));
    }
    settings.bot_login = settings
        .bot_login
        .or_else(|| Some(env.config.github.bot_login.clone()));
    OctocrabForge::new(settings).map_err(|e| Failure::Internal(e.into()))
}

async fn run_handler(
    env: &Env,
    args: &CiArgs,
    repo: &crate::github::RepoName,
    input: Input,
) -> Result<Outcome, Failure> {
    let forge = forge(env, args)?;
    handle_with(env, &forge, repo, input).await
}

async fn handle_with(
    env: &Env,
    forge: &dyn Forge,
    repo: &crate::github::RepoName,
    input: Input,
) -> Result<Outcome, Failure> {
    let identity = forge
        .identity()
        .await
        .map_err(|e| Failure::Internal(e.into()))?;
    let renderer = env.renderer_with(false)?;
    let handler = Handler {
        forge,
        repo: repo.clone(),
        config: &env.config,
        renderer: &renderer,
        bot_login: identity.login,
        now: Utc::now(),
    };
    handler
        .handle(input)
        .await
        .map_err(|e| Failure::Internal(e.into()))
}

fn append_env_file(var: &str, text: &str) -> Result<(), Failure> {
    let Some(path) = std::env::var_os(var) else {
        return Ok(());
    };
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(|e| anyhow::anyhow!("opening ${var}: {e}"))?;
    file.write_all(text.as_bytes())
        .map_err(|e| anyhow::anyhow!("writing ${var}: {e}"))?;
    Ok(())
}

fn publish_outputs(outcome: &Outcome) -> Result<(), Failure> {
    if let Some(summary) = &outcome.summary {
        append_env_file("GITHUB_STEP_SUMMARY", &format!("{summary}\n"))?;
    }
    let Some(decision) = &outcome.decision else {
        return Ok(());
    };
    let quality = outcome
        .quality
        .map_or_else(String::new, |q| format!("{q:.4}"));
    append_env_file(
        "GITHUB_OUTPUT",
        &format!(
            "recommendation={}\nquality={quality}\niteration={}\n",
            decision.recommendation().as_str(),
            decision.budget.current_iteration
        ),
    )
}

fn gate(gate: Gate, decision: Option<&Decision>) -> Result<(), Failure> {
    let Some(decision) = decision else {
        return Ok(());
    };
    let r = decision.recommendation();
    let blocked = super::gate_blocks(gate, r);
    if blocked {
        return Err(Failure::Blocked(format!(
            "itergate: the decision is `{}` and github.gate blocks it",
            r.as_str()
        )));
    }
    Ok(())
}
