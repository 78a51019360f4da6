//! `itergate accept | escalate | adjust | feedback | budget`: a person decides on a branch at
//! the terminal what a maintainer decides on a pull request with `/iterate` comments, with
//! the same meaning.
//!
//! A decision is filed under the branch's latest *recorded* iteration, the one its scores
//! and issues describe (an unscored HEAD is scored by `itergate run` or the next push, and
//! as a new iteration it clears acceptance, escalation and feedback; a budget stays). It is
//! kept in git notes with the branch's history and travels with `itergate notes push`.
//! Afterwards the branch is decided again: the summary is printed and, for the checked-out
//! branch, the revision prompt file is written or removed so it agrees with the decision.
//!
//! Who may decide: whoever runs itergate in the clone, or pushes decisions to the notes
//! remote it fetches from. Locally nothing is enforced (the gate is advisory: `git push
//! --no-verify` skips it), so decisions are not restricted to a role; each names who gave it
//! (`git config user.name`), and that name is quoted with feedback in the revision prompt.

use chrono::Utc;
use git2::{Oid, Repository};

use crate::app::local::{self as task, short};
use crate::cli::{BudgetArgs, ReasonArgs, TextArgs};
use crate::git;
use crate::history::notes::{HumanAction, HumanDecision};
use crate::model::FEEDBACK_MAX_BYTES;

use super::report;
use super::run::{current_task, nothing_recorded};
use super::{user, Env, Failure};

pub fn accept(env: &Env, args: &ReasonArgs, quiet: bool) -> Result<(), Failure> {
    let reason = optional_words(&args.reason)?;
    decide(
        env,
        args.branch.as_deref(),
        HumanAction::Accept { reason },
        quiet,
    )
}

pub fn escalate(env: &Env, args: &ReasonArgs, quiet: bool) -> Result<(), Failure> {
    let reason = optional_words(&args.reason)?;
    decide(
        env,
        args.branch.as_deref(),
        HumanAction::Escalate { reason },
        quiet,
    )
}

pub fn adjust(env: &Env, args: &TextArgs, quiet: bool) -> Result<(), Failure> {
    let guidance = required_words(&args.text, "itergate adjust <what to do differently>")?;
    decide(
        env,
        args.branch.as_deref(),
        HumanAction::Adjust { guidance },
        quiet,
    )
}

pub fn feedback(env: &Env, args: &TextArgs, quiet: bool) -> Result<(), Failure> {
    let text = required_words(
        &args.text,
        "itergate feedback <what the next iteration should do>",
    )?;
    decide(
        env,
        args.branch.as_deref(),
        HumanAction::Feedback { text },
        quiet,
    )
}

pub fn budget(env: &Env, args: &BudgetArgs, quiet: bool) -> Result<(), Failure> {
    let action = HumanAction::Budget {
        iterations: args.iterations,
    };
    decide(env, args.branch.as_deref(), action, quiet)
}

/// The words of a reason, joined; `None` when there are none.
fn optional_words(parts: &[String]) -> Result<Option<String>, Failure> {
    let text = parts.join(" ").trim().to_string();
    if text.len() > FEEDBACK_MAX_BYTES {
        return Err(user(format!(
            "the text is {} bytes long; at most {FEEDBACK_MAX_BYTES} are kept: shorten it",
            text.len()
        )));
    }
    Ok((!text.is_empty()).then_some(text))
}

fn required_words(parts: &[String], usage: &str) -> Result<String, Failure> {
    optional_words(parts)?.ok_or_else(|| user(format!("the text is empty; usage: `{usage}`")))
}

/// Records `action` on the branch's latest recorded iteration and decides again.
fn decide(
    env: &Env,
    branch: Option<&str>,
    action: HumanAction,
    quiet: bool,
) -> Result<(), Failure> {
    let repo = task::open_repository(env)?;
    let store = task::open_store(env, &repo)?;
    let repo = store.repository();
    let task = current_task(env, repo, branch)?;
    let history = task.history(env, &store)?;
    let Some(latest) = history.last() else {
        return at_the_start(&store, &task, action, quiet);
    };
    let commit = Oid::from_str(&latest.commit.0).map_err(anyhow::Error::from)?;
    let (by, email) = author(repo);
    let decision = HumanDecision {
        action,
        by,
        email,
        at: Utc::now(),
    };
    store.append_decision(commit, &decision)?;
    if !quiet {
        eprintln!(
            "itergate: {}, iteration {} ({}): {} by {}",
            task.name,
            latest.iteration,
            short(commit),
            what_was_done(&decision.action),
            decision.by
        );
        if commit != task.tip && !matches!(decision.action, HumanAction::Budget { .. }) {
            eprintln!(
                "itergate: note: {} is not scored yet; once it is (`itergate run`, or a push), it is a new iteration and clears this",
                short(task.tip)
            );
        }
    }
    let evaluation = task.evaluate(env, &store, &history)?;
    let checked_out = match branch {
        None => true,
        Some(name) => git::head_branch(repo)?.as_deref() == Some(name),
    };
    if checked_out {
        // The prompt file is the checked-out branch's: keep it in step with the decision.
        report::report(env, repo, &task, &history, &evaluation, quiet)?;
    } else if !quiet {
        let view = crate::summary::decision_view(&history, &evaluation);
        eprint!(
            "{}",
            env.renderer_stderr()?.render("decision.txt.j2", &view)?
        );
    }
    Ok(())
}

/// A decision on a task the loop took back to its start (no iteration was worth keeping):
/// guidance, feedback or a budget lets the next `itergate loop` go on with it; there is
/// nothing to accept.
fn at_the_start(
    store: &crate::history::notes::NotesStore,
    task: &task::Task,
    action: HumanAction,
    quiet: bool,
) -> Result<(), Failure> {
    let at_start = store
        .read_task_start(&task.name)?
        .filter(|s| !s.ended && s.is_loop() && s.commit == task.tip.to_string());
    let waiting = match at_start {
        Some(_) => task::waiting_at(store, &task.name)?,
        None => None,
    };
    let Some(why) = waiting else {
        return Err(nothing_recorded(&task.name));
    };
    if matches!(action, HumanAction::Accept { .. }) {
        return Err(user(format!(
            "`{}` is back where its task started ({why}): there is no iteration to accept; `itergate adjust <guidance>` or `itergate budget <n>` lets the loop go on, `itergate loop --new-task` starts a new task",
            task.name
        )));
    }
    let (by, email) = author(store.repository());
    let decision = HumanDecision {
        action,
        by,
        email,
        at: Utc::now(),
    };
    // Kept with the branch's task, not the commit: another branch may start there too.
    store.append_decision(crate::history::notes::start_key(&task.name), &decision)?;
    if !quiet {
        eprintln!(
            "itergate: {}, at the task's start ({}): {} by {}; the next `itergate loop` goes on with the task",
            task.name,
            short(task.tip),
            what_was_done(&decision.action),
            decision.by
        );
    }
    Ok(())
}

fn what_was_done(action: &HumanAction) -> String {
    match action {
        HumanAction::Accept { .. } => "accepted".into(),
        HumanAction::Escalate { .. } => "escalated".into(),
        HumanAction::Adjust { .. } => "approach adjusted (the revision count starts again)".into(),
        HumanAction::Feedback { .. } => "feedback recorded".into(),
        HumanAction::Budget { iterations } => format!("iteration budget set to {iterations}"),
    }
}

/// Who is deciding: `git config user.name` (and `user.email`), as for a commit.
fn author(repo: &Repository) -> (String, Option<String>) {
    let config = repo.config().ok();
    let get = |key: &str| {
        config
            .as_ref()
            .and_then(|c| c.get_string(key).ok())
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    let name = get("user.name")
        .or_else(|| std::env::var("USER").ok().filter(|u| !u.is_empty()))
        .unwrap_or_else(|| "unknown".into());
    (name, get("user.email"))
}
