//! The GitHub Actions mode's flow (`itergate ci`, whose command parses the arguments and
//! prints): the workflow's event turned into a handler input, run by the one handler core
//! against GitHub — the same core the App runs (`forge_flow`).
//!
//! The trust boundary: the job that runs the pull request's code never holds a token that
//! can write, and the job that writes never runs it.
//! - `pull_request` (and the `/iterate` re-run, `repository_dispatch`): with `--score-only`
//!   scores the checked-out head and only writes the record to `--record-out` (bound to the
//!   PR's number, head repository and branch) for an artifact; with `--publish-record FILE`
//!   publishes that record from a job that never checked out the PR's code. A fork's run
//!   always stops after writing the record. Without either flag both happen in one job
//!   (for trusted set-ups only): the sticky state is read before the checks run and
//!   publication is refused if it changed meanwhile.
//! - `workflow_run`: reads a fork's record from the run's artifact and publishes it as
//!   self-reported, if the run's head repository and branch are the PR's.
//! - `issue_comment`, `pull_request_review`: commands and reviews; every run first applies
//!   commands of earlier comments that no run handled (a queued run GitHub cancelled).
//!
//! Every event reads the configuration and the template overrides from the PR's **base**
//! commit, never from the checked-out tree, and checks run with a scrubbed environment
//! ([`EnvPolicy::Scrubbed`]). The command writes a job summary (`GITHUB_STEP_SUMMARY`) and
//! step outputs (`GITHUB_OUTPUT`: recommendation, quality, iteration), and its exit status
//! follows `github.gate`.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use chrono::Utc;
use git2::Repository;

use crate::app::pull_request::REEVALUATE_EVENT;
use crate::app::pull_request::{Handler, Input, Outcome};
use crate::config::Config;
use crate::git;
use crate::github::events::{
    self, CommentEvent, Event, Parsed, PrAction, PullRequestEvent, WorkflowRunEvent,
};
use crate::github::types::PrNumber;
use crate::github::RepoName;
use crate::github::{Forge, ForgeSettings, OctocrabForge};
use crate::model::CommitSha;
use crate::model::IterationRecord;
use crate::render::{Renderer, TemplateFile};
use crate::signals::checks::{EnvPolicy, Progress};

use super::{user, Env, Failure};
use crate::app::judge::{judge, whole_tree_record, Judgement};
use crate::app::observe::{observe, ObserveRequest};

use crate::app::forge_flow::RECORD_FILE;
use crate::app::forge_flow::{self, ArtifactRecord, FlowError};

/// What a workflow step asked of `itergate ci`.
pub struct ActionsRequest {
    /// `GITHUB_EVENT_NAME`.
    pub event_name: String,
    /// The event's payload (`GITHUB_EVENT_PATH`'s bytes).
    pub payload: Vec<u8>,
    /// A token that can write (`GITHUB_TOKEN`); none in a job that only scores.
    pub token: Option<String>,
    /// Where `--score-only` writes the record for the artifact.
    pub record_out: PathBuf,
    pub write_on_fork: bool,
    pub score_only: bool,
    pub publish_record: Option<PathBuf>,
    /// The SHA-256 the scoring step gave for the record (its `record-digest` output):
    /// `publish_record` is refused unless it is that record.
    pub record_digest: Option<String>,
}

/// Runs the event: what was published and the configuration that judged it, or nothing
/// (an event with nothing to do, a job that only scored).
pub fn run(
    env: &Env,
    args: &ActionsRequest,
    quiet: bool,
) -> Result<Option<(Outcome, Config)>, Failure> {
    let payload = &args.payload;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(anyhow::Error::from)?;
    let parsed = if args.event_name == "repository_dispatch" {
        runtime.block_on(reevaluation(env, args, payload))?
    } else {
        events::parse_event(&args.event_name, payload).map_err(user)?
    };
    let event = match parsed {
        Parsed::Ignored(why) => {
            eprintln!("itergate: nothing to do for this event: {why}");
            return Ok(None);
        }
        Parsed::Event(event) => event,
    };
    // The checks may be the PR's code: no credential and no runner file reaches them.
    let env = &Env {
        check_env: EnvPolicy::Scrubbed,
        ..env.clone()
    };
    let progress = if quiet {
        Progress::Quiet
    } else {
        Progress::Auto
    };
    Ok(match event {
        Event::PullRequest(pr) => pull_request(env, args, &runtime, &pr, progress)?,
        Event::WorkflowRun(run) => Some(runtime.block_on(from_artifact(env, args, &run))?),
        Event::Comment(comment) => {
            // Most comments hold no command: answer those without a single API call.
            if !crate::app::forge_flow::holds_work(&comment.body) {
                eprintln!(
                    "itergate: the comment holds no /iterate command and no CONTEXT_GAP_REPORT"
                );
                return Ok(None);
            }
            Some(runtime.block_on(on_comment(env, args, comment))?)
        }
        Event::Review(review) => {
            let pr = review.pr;
            let repo = review.repo.clone();
            Some(runtime.block_on(on_pull_request(env, args, &repo, pr, Input::Review(review)))?)
        }
    })
}

/// A scored commit: score and publish, score only, or publish what a scoring job wrote.
fn pull_request(
    env: &Env,
    args: &ActionsRequest,
    runtime: &tokio::runtime::Runtime,
    pr: &PullRequestEvent,
    progress: Progress,
) -> Result<Option<(Outcome, Config)>, Failure> {
    let repo = git::open(&env.root).map_err(|e| user(format!("{e:#}")))?;
    let base = BaseTree::read(
        &repo,
        &pr.base_sha,
        &pr.base_ref,
        pr.default_branch.as_deref(),
    )?;
    let env = &Env {
        config: base.config.clone(),
        ..env.clone()
    };
    if let Some(path) = &args.publish_record {
        let artifact = read_artifact_file(path, args.record_digest.as_deref())?;
        if pr.is_fork() && !args.write_on_fork {
            return Err(user(
                "a fork's record is published by the workflow_run workflow, never by a job of the fork's own run",
            ));
        }
        let record = artifact.bind_to_event(pr)?;
        let input = iteration(pr.pr, record, None, false);
        let outcome =
            runtime.block_on(publish_iteration(env, args, &pr.repo, pr.pr, &base, input))?;
        return Ok(Some((outcome, base.config)));
    }
    let write = !args.score_only && (!pr.is_fork() || args.write_on_fork);
    if !write {
        let (record, _) = score_head(env, &repo, pr, None, progress)?;
        save_for_artifact(&args.record_out, pr, &record)?;
        return Ok(None);
    }
    // One job scores and publishes: the checks must not be able to change the state they
    // are judged against (a check that somehow got a write token could forge it).
    let forge = {
        // The client spawns its worker on the runtime it is built in.
        let _context = runtime.enter();
        forge(env, args)?
    };
    let bot = runtime.block_on(bot_login(&forge))?;
    let before = runtime.block_on(sticky_snapshot(&forge, &pr.repo, pr.pr, &bot))?;
    // The previous iteration's record, from itergate's comment: its failing tests are what
    // a test "rewritten to pass" since then is found against.
    let previous = before
        .as_ref()
        .and_then(|(_, body)| crate::github::sticky::parse_state(body).ok())
        .and_then(|state| state.records.into_records().pop());
    let (record, base_record) = score_head(env, &repo, pr, previous.as_ref(), progress)?;
    let after = runtime.block_on(sticky_snapshot(&forge, &pr.repo, pr.pr, &bot))?;
    if before != after {
        return Err(Failure::Internal(anyhow::anyhow!(
            "itergate's comment on #{} changed while the checks ran; refusing to publish \
             (score with --score-only and publish from a job that runs no PR code)",
            pr.pr.0
        )));
    }
    let input = iteration(pr.pr, record, base_record, false);
    let outcome = runtime.block_on(handle_with(env, &forge, &pr.repo, input, &base))?;
    Ok(Some((outcome, base.config)))
}

fn iteration(
    pr: PrNumber,
    record: IterationRecord,
    base: Option<IterationRecord>,
    self_reported: bool,
) -> Input {
    Input::Iteration {
        pr,
        record: Box::new(record),
        base: base.map(Box::new),
        self_reported,
    }
}

/// The sticky comment as it is now (its id and body), to tell whether it changed.
async fn sticky_snapshot(
    forge: &dyn Forge,
    repo: &RepoName,
    pr: PrNumber,
    bot: &str,
) -> Result<Option<(u64, String)>, Failure> {
    let comments = forge
        .list_comments(repo, pr)
        .await
        .map_err(|e| Failure::Internal(e.into()))?;
    Ok(crate::github::sticky::find_sticky(&comments, bot).map(|c| (c.id.0, c.body.clone())))
}

/// The PR handler as the Actions mode runs it: no state key or ledger of its own, the base's
/// rules, `/iterate` re-runs by `repository_dispatch`.
async fn handler<'a>(
    env: &'a Env,
    forge: &'a dyn Forge,
    repo: &RepoName,
    base: &'a BaseTree,
    renderer: &'a Renderer,
) -> Result<Handler<'a>, Failure> {
    Ok(Handler {
        forge,
        repo: repo.clone(),
        config: &env.config,
        renderer,
        bot_login: bot_login(forge).await?,
        now: Utc::now(),
        state_key: None,
        repo_id: None,
        ledger: None,
        rerun: crate::app::pull_request::Rerun::RepositoryDispatch,
        rules_notice: base.notice.as_deref(),
    })
}

async fn bot_login(forge: &dyn Forge) -> Result<String, Failure> {
    Ok(forge
        .identity()
        .await
        .map_err(|e| Failure::Internal(e.into()))?
        .login)
}

/// Publishes a record with the base's configuration and templates; the commands of
/// comments no run handled go first.
async fn publish_iteration(
    env: &Env,
    args: &ActionsRequest,
    repo: &RepoName,
    pr: PrNumber,
    base: &BaseTree,
    input: Input,
) -> Result<Outcome, Failure> {
    let forge = forge(env, args)?;
    catch_up(env, &forge, repo, pr, None, base).await?;
    handle_with(env, &forge, repo, input, base).await
}

/// A comment or a review: the PR's base says which rules apply, not the checkout.
async fn on_pull_request(
    env: &Env,
    args: &ActionsRequest,
    repo: &RepoName,
    pr: PrNumber,
    input: Input,
) -> Result<(Outcome, Config), Failure> {
    let forge = forge(env, args)?;
    let pull = forge
        .pull_request(repo, pr)
        .await
        .map_err(|e| Failure::Internal(e.into()))?;
    let git_repo = git::open(&env.root).map_err(|e| user(format!("{e:#}")))?;
    let base = BaseTree::read(
        &git_repo,
        &pull.base.sha,
        &pull.base.ref_name,
        pull.default_branch.as_deref(),
    )?;
    let env = &Env {
        config: base.config.clone(),
        ..env.clone()
    };
    let until = match &input {
        Input::Comment(c) => Some(c.comment_id.0),
        _ => None,
    };
    catch_up(env, &forge, repo, pr, until, &base).await?;
    let outcome = handle_with(env, &forge, repo, input, &base).await?;
    Ok((outcome, base.config))
}

async fn on_comment(
    env: &Env,
    args: &ActionsRequest,
    comment: CommentEvent,
) -> Result<(Outcome, Config), Failure> {
    let repo = comment.repo.clone();
    let pr = comment.pr;
    on_pull_request(env, args, &repo, pr, Input::Comment(comment)).await
}

/// GitHub keeps one pending run per concurrency group and cancels the one before: a
/// command in a comment whose run was cancelled is applied by the next run, in order.
/// Comments after the state's last handled one (and before `until`) that hold a command.
async fn catch_up(
    env: &Env,
    forge: &dyn Forge,
    repo: &RepoName,
    pr: PrNumber,
    until: Option<u64>,
    base: &BaseTree,
) -> Result<(), Failure> {
    let renderer = &base.renderer()?;
    let handler = handler(env, forge, repo, base, renderer).await?;
    let actions = forge_flow::catch_up(&handler, pr, until)
        .await
        .map_err(flow_failure)?;
    for action in &actions {
        eprintln!("itergate: {action}");
    }
    Ok(())
}

/// `/iterate` asked for a re-run with a `repository_dispatch`: the pull request as it is now.
async fn reevaluation(env: &Env, args: &ActionsRequest, payload: &[u8]) -> Result<Parsed, Failure> {
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
        previous_base: None,
        default_branch: pull.default_branch,
        repo_id: pull.base_repo_id,
    })))
}

/// What the PR's base commit says: its configuration and its template overrides. A pull
/// request cannot loosen its own rules or choose the words published about it.
struct BaseTree {
    config: Config,
    templates: Vec<TemplateFile>,
    /// Why these are the default branch's rules, not the base's (as the App says it).
    notice: Option<String>,
}

impl BaseTree {
    /// The rules of a PR against `base_ref`, anchored like the App's
    /// (`forge_flow::base_config`): the base's own when it is the default branch or one
    /// the default branch trusts (`github.trusted_bases`), else the default branch's
    /// (`origin/<default>` in the checkout).
    fn read(
        repo: &Repository,
        base_sha: &CommitSha,
        base_ref: &str,
        default_branch: Option<&str>,
    ) -> Result<BaseTree, Failure> {
        let Some(default) = default_branch.filter(|d| *d != base_ref) else {
            return BaseTree::at(repo, &base_sha.0, base_ref);
        };
        let anchor = BaseTree::at(repo, &format!("refs/remotes/origin/{default}"), default)?;
        if forge_flow::trusts(&anchor.config.github.trusted_bases, base_ref) {
            return BaseTree::at(repo, &base_sha.0, base_ref);
        }
        let notice = forge_flow::untrusted_base_notice(base_ref, default);
        eprintln!("itergate: {notice}");
        Ok(BaseTree {
            notice: Some(notice),
            ..anchor
        })
    }

    /// The configuration and templates at `rev` (a commit id or a ref), shown as `label`.
    fn at(repo: &Repository, rev: &str, label: &str) -> Result<BaseTree, Failure> {
        let commit = repo
            .revparse_single(rev)
            .and_then(|o| o.peel_to_commit())
            .map_err(|_| {
                user(format!(
                    "the commit of `{label}` ({rev}) is not in this checkout; check out with `fetch-depth: 0`"
                ))
            })?;
        let tree = commit.tree().map_err(anyhow::Error::from)?;
        let mut config = Config::default();
        for name in crate::config::CONFIG_LOCATIONS {
            if let Some(text) = blob_text(repo, &tree, Path::new(name))? {
                let path = PathBuf::from(format!("{label}:{name}"));
                config = Config::from_yaml(&text, &path).map_err(user)?;
                break;
            }
        }
        let templates = match &config.templates.dir {
            Some(dir) => tree_templates(repo, &tree, dir, label)?,
            None => Vec::new(),
        };
        Ok(BaseTree {
            config,
            templates,
            notice: None,
        })
    }

    fn renderer(&self) -> Result<Renderer, Failure> {
        let files = self
            .templates
            .iter()
            .map(|t| TemplateFile {
                name: t.name.clone(),
                text: t.text.clone(),
                origin: t.origin.clone(),
            })
            .collect();
        Renderer::with_files(files, false).map_err(user)
    }
}

fn blob_text(repo: &Repository, tree: &git2::Tree, path: &Path) -> Result<Option<String>, Failure> {
    let Ok(entry) = tree.get_path(path) else {
        return Ok(None);
    };
    let Ok(blob) = repo.find_blob(entry.id()) else {
        return Ok(None);
    };
    Ok(Some(String::from_utf8_lossy(blob.content()).into_owned()))
}

/// The `*.j2` (and, to refuse them, `*.tera`) files of `dir` in the base's tree.
fn tree_templates(
    repo: &Repository,
    tree: &git2::Tree,
    dir: &Path,
    base_ref: &str,
) -> Result<Vec<TemplateFile>, Failure> {
    let relative = dir.strip_prefix("./").unwrap_or(dir);
    if relative.is_absolute() {
        return Err(user(format!(
            "templates.dir {}: in CI the templates are read from the base commit, so the directory must be inside the repository",
            dir.display()
        )));
    }
    let Ok(entry) = tree.get_path(relative) else {
        return Err(user(format!(
            "templates.dir {}: no such directory in the base commit ({base_ref})",
            dir.display()
        )));
    };
    let subtree = repo
        .find_tree(entry.id())
        .map_err(|_| user(format!("templates.dir {}: not a directory", dir.display())))?;
    let mut files = Vec::new();
    for item in subtree.iter() {
        let Ok(name) = item.name() else { continue };
        if !(name.ends_with(".j2") || name.ends_with(".tera")) {
            continue;
        }
        let Ok(blob) = repo.find_blob(item.id()) else {
            continue;
        };
        files.push(TemplateFile {
            name: name.to_string(),
            text: String::from_utf8_lossy(blob.content()).into_owned(),
            origin: format!("{base_ref}:{}", relative.join(name).display()),
        });
    }
    Ok(files)
}

/// Files a pull request's record lists in its diff stat; the total counts them all.
const PR_CHANGED_FILES_LISTED: usize = 30;

fn score_head(
    env: &Env,
    repo: &Repository,
    pr: &PullRequestEvent,
    previous: Option<&IterationRecord>,
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
    // An earlier head of this pull request that the checkout has (a force push may have
    // dropped it), with the failures its record names.
    let earlier: Vec<(git2::Oid, crate::signals::observation::Observation)> = previous
        .and_then(|r| {
            let commit = git2::Oid::from_str(&r.commit.0).ok()?;
            (commit != head && repo.find_commit(commit).is_ok())
                .then(|| (commit, crate::app::judge::failures_of(r, &observed)))
        })
        .into_iter()
        .collect();
    let mut record = judge(
        &env.config,
        repo,
        &Judgement {
            commit: head,
            base: merge_base,
            iteration: 1,
            observed: &observed,
            base_observed: base_observed.as_ref().map(|(_, o)| o),
            earlier: &earlier,
            void: &[],
            accepted: &[],
            trusted: None,
            targets: &[],
            environment: &crate::signals::environment::Unsealed::default(),
        },
    )?;
    // The publishing job (or the App) has no checkout of the PR: the prompt's diff stat
    // travels with the record.
    record.changes = git::change_stat(repo, merge_base, head, PR_CHANGED_FILES_LISTED);
    let base_record = base_observed.map(|(mb, o)| whole_tree_record(&env.config, mb, &o));
    Ok((record, base_record))
}

/// What a scoring job hands to the job or workflow that publishes. It is written next to
/// the PR's code, so the publisher believes none of it it cannot check: the record must be
/// for the head commit, head repository and head branch that GitHub (not the artifact)
/// names.
impl ArtifactRecord {
    /// The record, if it is the one this workflow run's own scoring job wrote for `pr`.
    fn bind_to_event(self, pr: &PullRequestEvent) -> Result<IterationRecord, Failure> {
        let head_repo = pr.head_repo.as_ref().map(ToString::to_string);
        let mismatch = if self.pr != pr.pr.0 {
            Some(format!("pull request #{}, not #{}", self.pr, pr.pr.0))
        } else if self.record.commit.0 != pr.head_sha.0 {
            Some(format!(
                "commit {}, not {}",
                self.record.commit, pr.head_sha
            ))
        } else if self.head_repo != head_repo {
            Some(format!(
                "head repository {}, not {}",
                self.head_repo.as_deref().unwrap_or("(none)"),
                head_repo.as_deref().unwrap_or("(none)")
            ))
        } else if self.head_ref.as_deref() != Some(pr.head_ref.as_str()) {
            Some(format!(
                "head branch {}, not {}",
                self.head_ref.as_deref().unwrap_or("(none)"),
                pr.head_ref
            ))
        } else {
            None
        };
        match mismatch {
            Some(what) => Err(user(format!(
                "the record names {what} of this event; refusing to publish it"
            ))),
            None => Ok(self.record),
        }
    }
}

fn save_for_artifact(
    path: &Path,
    pr: &PullRequestEvent,
    record: &IterationRecord,
) -> Result<(), Failure> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(anyhow::Error::from)?;
    }
    let artifact = ArtifactRecord {
        pr: pr.pr.0,
        head_repo: pr.head_repo.as_ref().map(ToString::to_string),
        head_ref: Some(pr.head_ref.clone()),
        record: record.clone(),
    };
    let json = serde_json::to_vec_pretty(&artifact).map_err(anyhow::Error::from)?;
    std::fs::write(path, &json).map_err(|e| anyhow::anyhow!("writing {}: {e}", path.display()))?;
    // Written once every process the checks started is gone: the digest is of what itergate
    // wrote, and the step's output is the runner's to keep.
    let digest = crate::github::artifact::record_digest(&json);
    eprintln!(
        "itergate: scored without writing to GitHub; the record is in {} for the publishing job (sha256 {digest})",
        path.display()
    );
    append_env_file("GITHUB_OUTPUT", &format!("record-digest={digest}\n"))?;
    append_env_file(
        "GITHUB_STEP_SUMMARY",
        "itergate scored this pull request; the decision is published by a job that does not run its code.\n",
    )
}

fn parse_artifact(bytes: &[u8]) -> Result<ArtifactRecord, Failure> {
    forge_flow::parse_artifact(bytes).map_err(user)
}

fn flow_failure(e: FlowError) -> Failure {
    match e {
        FlowError::Refused(message) => user(message),
        other => Failure::Internal(other.into()),
    }
}

fn read_artifact_file(path: &Path, digest: Option<&str>) -> Result<ArtifactRecord, Failure> {
    let bytes = std::fs::read(path)
        .map_err(|e| user(format!("--publish-record {}: {e}", path.display())))?;
    if bytes.len() as u64 > crate::github::artifact::MAX_FILE_BYTES {
        return Err(user(format!(
            "--publish-record {}: larger than {} bytes",
            path.display(),
            crate::github::artifact::MAX_FILE_BYTES
        )));
    }
    crate::github::artifact::check_digest(&bytes, digest)
        .map_err(|e| user(format!("--publish-record {}: {e}", path.display())))?;
    parse_artifact(&bytes)
}

/// A fork's record, published by the base repository's `workflow_run` workflow. Its
/// scores are self-reported: the fork's workflow produced them.
async fn from_artifact(
    env: &Env,
    args: &ActionsRequest,
    run: &WorkflowRunEvent,
) -> Result<(Outcome, Config), Failure> {
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
    let artifact = parse_artifact(&bytes)?;
    let (pull, record) = forge_flow::bind(&forge, run, artifact)
        .await
        .map_err(flow_failure)?;
    let pr = pull.number;
    let git_repo = git::open(&env.root).map_err(|e| user(format!("{e:#}")))?;
    let base = BaseTree::read(
        &git_repo,
        &pull.base.sha,
        &pull.base.ref_name,
        pull.default_branch.as_deref(),
    )?;
    let env = &Env {
        config: base.config.clone(),
        ..env.clone()
    };
    let input = iteration(pr, record, None, true);
    catch_up(env, &forge, &run.repo, pr, None, &base).await?;
    let outcome = handle_with(env, &forge, &run.repo, input, &base).await?;
    Ok((outcome, base.config))
}

fn forge(env: &Env, args: &ActionsRequest) -> Result<OctocrabForge, Failure> {
    let mut settings = ForgeSettings::from_env();
    if let Some(token) = &args.token {
        settings.token = Some(secrecy::SecretString::from(token.clone()));
    }
    settings.bot_login = settings
        .bot_login
        .or_else(|| Some(env.config.github.bot_login.clone()));
    OctocrabForge::new(settings).map_err(|e| Failure::Internal(e.into()))
}

async fn handle_with(
    env: &Env,
    forge: &dyn Forge,
    repo: &RepoName,
    input: Input,
    base: &BaseTree,
) -> Result<Outcome, Failure> {
    let renderer = &base.renderer()?;
    let handler = handler(env, forge, repo, base, renderer).await?;
    handler
        .handle(input)
        .await
        .map_err(|e| Failure::Internal(e.into()))
}

/// Appends `text` to the file the runner names in `var` (`GITHUB_STEP_SUMMARY`,
/// `GITHUB_OUTPUT`); nothing outside a runner.
pub fn append_env_file(var: &str, text: &str) -> Result<(), Failure> {
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
