//! `itergate hook install | uninstall | pre-push`: every push is an iteration.
//!
//! The pre-push hook scores each pushed branch tip (or every new commit with
//! `hook.score: each`), records it in git notes, decides, prints the summary on stderr and
//! writes the revision prompt. `hook.gate` decides whether a decision stops the push; an
//! internal error lets the push through with a loud warning unless `hook.on_error: block`.

use git2::Oid;

use crate::cli::{DecisionOutput, HookCommand, OutputFormat};
use crate::config::{Gate, OnError, ScoreMode};
use crate::hook::{self as githook, memo, InstallOptions, PushKind, PushUpdate};
use crate::signals::checks::Progress;

use crate::app::local::{self as task, Task};
use crate::app::observe::RecordOptions;

use super::report;
use super::{user, Env, Failure};

const HOW_TO_PROCEED: &str =
    "To push anyway: `git push --no-verify`, or `ITERGATE_SKIP=1 git push`.";
/// Said when a blocked branch was escalated: a person can decide here, as on a pull request.
const HOW_TO_DECIDE: &str = "A person decides: `itergate accept [reason]` (or `itergate \
adjust <guidance>`, `itergate budget <n>`; `--branch NAME` for a branch not checked out), \
then push again.";

pub fn hook(env: &Env, command: HookCommand, quiet: bool) -> Result<(), Failure> {
    match command {
        HookCommand::Install { force } => {
            let options = InstallOptions {
                force,
                binary: std::env::current_exe().ok(),
            };
            let report = githook::install_with(&env.root, &options).map_err(user)?;
            eprintln!("itergate: {report}");
            Ok(())
        }
        HookCommand::Uninstall => {
            let report = githook::uninstall(&env.root).map_err(user)?;
            eprintln!("itergate: {report}");
            Ok(())
        }
        HookCommand::PrePush { remote, output, .. } => pre_push(env, &remote, &output, quiet),
    }
}

/// Whether the user asked to skip the hook for this push.
pub fn skipped() -> bool {
    std::env::var("ITERGATE_SKIP").is_ok_and(|v| !v.is_empty() && v != "0")
}

fn pre_push(env: &Env, remote: &str, output: &DecisionOutput, quiet: bool) -> Result<(), Failure> {
    if skipped() {
        eprintln!("itergate: skipped (ITERGATE_SKIP is set)");
        return Ok(());
    }
    match score_push(env, remote, output, quiet) {
        Err(Failure::Blocked(message)) => Err(Failure::Blocked(message)),
        Err(Failure::Decided(code)) => Err(Failure::Decided(code)),
        // The person stopped it: the push stops too.
        Err(Failure::Interrupted(signal)) => Err(Failure::Interrupted(signal)),
        Err(error) => fail(env.config.hook.on_error, &error),
        Ok(()) => Ok(()),
    }
}

/// An internal error: fail open (the default) or closed, loudly either way.
pub fn fail(on_error: OnError, error: &dyn std::fmt::Display) -> Result<(), Failure> {
    match on_error {
        OnError::Allow => {
            eprintln!("itergate: WARNING: the pre-push check failed and the push goes ahead (hook.on_error: allow)");
            eprintln!("itergate: WARNING: {error}");
            Ok(())
        }
        OnError::Block => Err(Failure::Blocked(format!(
            "the pre-push check failed and hook.on_error is `block`: {error}\n{HOW_TO_PROCEED}"
        ))),
    }
}

fn task_name(update: &PushUpdate) -> String {
    let name = update
        .remote_ref
        .strip_prefix("refs/heads/")
        .or_else(|| update.local_ref.strip_prefix("refs/heads/"))
        .unwrap_or(&update.remote_ref);
    name.to_string()
}

fn score_push(
    env: &Env,
    remote: &str,
    output: &DecisionOutput,
    quiet: bool,
) -> Result<(), Failure> {
    let mut updates = githook::read_push_updates(std::io::stdin().lock()).map_err(user)?;
    if updates.is_empty() {
        updates = pre_commit_update().map_err(user)?;
    }
    let repo = &task::open_repository(env)?;
    // Pushed again as it was judged: what that push printed, without judging again.
    let material = MemoMaterial::of(env, remote, output, quiet, &updates);
    let templates = env.config.templates.dir.as_ref().map(|d| env.path(d));
    if material.is_some() {
        let key = memo::key(repo, &material, templates.as_ref());
        if let Some(memo) = memo::read(repo, &key) {
            return replay(memo);
        }
    }
    let store = task::open_store(env, repo)?;
    let options = RecordOptions {
        progress: Progress::from_quiet(quiet),
        rescore: false,
    };
    let mut printed = memo::Memo {
        key: String::new(),
        stderr: String::new(),
        stdout: String::new(),
        ending: memo::Ending::Passed,
    };
    let mut cached = true;
    let mut blocked = Vec::new();
    let mut worst = 0u8;
    let mut escalated = false;
    for update in &updates {
        let kind = githook::classify(repo, update)?;
        let name = task_name(update);
        match kind {
            PushKind::Delete => {
                let line = format!("itergate: {name}: deleted on {remote}; nothing to score\n");
                eprint!("{line}");
                printed.stderr.push_str(&line);
                continue;
            }
            PushKind::Tag if !env.config.hook.tags => continue,
            _ => {}
        }
        let tip = Oid::from_str(&update.local_oid).map_err(anyhow::Error::from)?;
        let task = Task::locate(env, repo, &name, tip)?;
        let to_score = match env.config.hook.score {
            ScoreMode::Tip => vec![tip],
            ScoreMode::Each => task.commits.clone(),
        };
        for commit in to_score {
            task::record_commit(env, &store, &task, commit, options)?;
            cached &= task::is_cached(env, &store, &task, commit)?;
        }
        task.record_start(env, &store)?;
        let history = task.history(env, &store)?;
        let evaluation = task.evaluate(env, &store, &history)?;
        let decision = &evaluation.decision;
        if !quiet {
            eprintln!();
            printed.stderr.push('\n');
        }
        printed.stderr += &report::report(env, repo, &task, &history, &evaluation, quiet)?;
        if output.format == OutputFormat::Json {
            let report = crate::engine::DecisionReport {
                iteration_decision: decision.clone(),
                task: Some(task.report(env)),
            };
            let line = serde_json::to_string(&report).map_err(|e| Failure::Internal(e.into()))?;
            let line = format!("{line}\n");
            super::print(&line)?;
            printed.stdout.push_str(&line);
        }
        worst = worst.max(super::run::exit_code(decision.recommendation()));
        if super::gate_blocks(env.config.hook.gate, decision.recommendation()) {
            escalated |= decision.recommendation() == crate::engine::Recommendation::Escalate;
            let why = decision
                .stopping_reason
                .as_ref()
                .map(|r| r.summary.clone())
                .unwrap_or_else(|| format!("{} trigger(s) left", decision.triggers.len()));
            blocked.push(format!(
                "{name}: {} — {why}",
                decision.recommendation().as_str()
            ));
        }
    }
    printed.ending = if blocked.is_empty() {
        match worst {
            code if output.exit_code && code != 0 => memo::Ending::Decided(code),
            _ => memo::Ending::Passed,
        }
    } else {
        let decide = if escalated {
            format!("{HOW_TO_DECIDE}\n")
        } else {
            String::new()
        };
        memo::Ending::Blocked(format!(
            "push blocked by hook.gate `{}`:\n  {}\n{decide}{HOW_TO_PROCEED}",
            gate_name(env.config.hook.gate),
            blocked.join("\n  ")
        ))
    };
    if material.is_some() && cached {
        printed.key = memo::key(repo, &material, templates.as_ref());
        memo::write(repo, &printed);
    } else {
        memo::forget(repo);
    }
    ending(printed.ending)
}

/// What a push's decision depends on besides the refs ([`memo::key`]); `None` when there
/// is nothing to judge, or the decision also depends on the time (a wall-clock budget).
#[derive(serde::Serialize)]
struct MemoMaterial<'a> {
    config: &'a crate::config::Config,
    rules: String,
    remote: &'a str,
    updates: Vec<[&'a str; 4]>,
    json: bool,
    exit_code: bool,
    quiet: bool,
    color: bool,
}

impl<'a> MemoMaterial<'a> {
    fn of(
        env: &'a Env,
        remote: &'a str,
        output: &DecisionOutput,
        quiet: bool,
        updates: &'a [PushUpdate],
    ) -> Option<MemoMaterial<'a>> {
        let limits = &env.config.stopping_criteria.budget_limits;
        let judged = !updates.is_empty() && limits.wall_clock_minutes.is_none();
        judged.then(|| MemoMaterial {
            config: &env.config,
            rules: format!("{:?}", env.rules),
            remote,
            updates: updates
                .iter()
                .map(|u| {
                    [
                        u.local_ref.as_str(),
                        u.local_oid.as_str(),
                        u.remote_ref.as_str(),
                        u.remote_oid.as_str(),
                    ]
                })
                .collect(),
            json: output.format == OutputFormat::Json,
            exit_code: output.exit_code,
            quiet,
            color: env.color_stderr,
        })
    }
}

/// Prints what the judged push printed and ends as it did.
fn replay(memo: memo::Memo) -> Result<(), Failure> {
    eprint!("{}", memo.stderr);
    super::print(&memo.stdout)?;
    eprintln!("itergate: pushed again as judged (nothing changed since): not judged again");
    ending(memo.ending)
}

fn ending(ending: memo::Ending) -> Result<(), Failure> {
    match ending {
        memo::Ending::Passed => Ok(()),
        memo::Ending::Decided(code) => Err(Failure::Decided(code)),
        memo::Ending::Blocked(message) => Err(Failure::Blocked(message)),
    }
}

/// pre-commit consumes git's pre-push input and passes the (first) pushed ref in
/// `PRE_COMMIT_*` variables instead; rebuild git's line from them.
fn pre_commit_update() -> Result<Vec<PushUpdate>, githook::PushParseError> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let (Some(local_oid), Some(remote_oid)) =
        (var("PRE_COMMIT_TO_REF"), var("PRE_COMMIT_FROM_REF"))
    else {
        return Ok(Vec::new());
    };
    let local_ref = var("PRE_COMMIT_LOCAL_BRANCH").unwrap_or_else(|| "HEAD".into());
    let remote_ref = var("PRE_COMMIT_REMOTE_BRANCH").unwrap_or_else(|| local_ref.clone());
    githook::parse_push_lines(&format!(
        "{local_ref} {local_oid} {remote_ref} {remote_oid}\n"
    ))
}

fn gate_name(gate: Gate) -> &'static str {
    match gate {
        Gate::Warn => "warn",
        Gate::BlockOnEscalate => "block-on-escalate",
        Gate::BlockOnIterate => "block-on-iterate",
    }
}
