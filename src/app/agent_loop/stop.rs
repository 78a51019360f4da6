//! How the loop stops: the outcome and its exit status, the branch left at the best
//! iteration (the last kept as a ref), the escalation filed for a person, and the
//! hand-off summary; the wall clock's stop.

use git2::{Oid, Repository};

use crate::app::exit::ExitStatus;
use crate::app::local as task;
use crate::app::{user, Env, Failure};
use crate::engine::{Evaluation, Recommendation};
use crate::git;
use crate::model::IterationRecord;

use super::events::{Events, LoopEvent};
use super::start::loop_start;
use super::work::short;
use super::LoopOptions;

/// How the loop ended, as the `stopped` event names it and the exit table maps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum LoopOutcome {
    Accepted,
    Escalated,
    /// A budget or the loop's wall clock ran out: a person decides, as for an escalation.
    BudgetExhausted,
    Aborted,
}

impl LoopOutcome {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            LoopOutcome::Accepted => "accepted",
            LoopOutcome::Escalated => "escalated",
            LoopOutcome::BudgetExhausted => "budget_exhausted",
            LoopOutcome::Aborted => "aborted",
        }
    }

    pub(super) fn exit(self) -> ExitStatus {
        match self {
            LoopOutcome::Accepted => ExitStatus::Success,
            LoopOutcome::Escalated | LoopOutcome::BudgetExhausted => ExitStatus::Escalate,
            LoopOutcome::Aborted => ExitStatus::Abort,
        }
    }
}

/// How the loop ended.
pub(super) struct Stop {
    pub(super) outcome: LoopOutcome,
    /// Where the branch is left.
    pub(super) commit: Oid,
    /// The iteration the loop calls its best: honest, scored, its targets passing.
    pub(super) best: Option<u32>,
    pub(super) summary: String,
}

/// Why the loop stops, besides its decision.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Cause<'a> {
    /// The engine's decision.
    Decided,
    /// The loop's wall clock ran out.
    Clock,
    /// The agent changed what the loop owns (this says what).
    Tampered(&'a str),
    /// A test that failed earlier in the task now expects something else: a person
    /// confirms the behaviour change (this says which), on the iteration that made it.
    Confirm(&'a str),
}

pub(super) fn stop(
    env: &Env,
    repo: &Repository,
    (restore_best, cause): (bool, Cause),
    (records, targets): (&[IterationRecord], &[String]),
    evaluation: &Evaluation,
    tip: Oid,
) -> Result<Stop, Failure> {
    let decision = &evaluation.decision;
    let clock_out = cause == Cause::Clock;
    let best = best_kept(records, decision.best_iteration, targets);
    // `run --exit-code`'s statuses: a budget that ran out stops for a person, as an
    // escalation does.
    let recommendation = decision.recommendation();
    let outcome = match recommendation {
        _ if matches!(cause, Cause::Tampered(_) | Cause::Confirm(_)) => LoopOutcome::Escalated,
        Recommendation::Accept => LoopOutcome::Accepted,
        _ if clock_out || decision.budget_stop_report.is_some() => LoopOutcome::BudgetExhausted,
        Recommendation::Abort => LoopOutcome::Aborted,
        _ => LoopOutcome::Escalated,
    };
    let accepted = outcome == LoopOutcome::Accepted;
    let mut commit = tip;
    let mut restored = None;
    // Whatever stopped the loop short of an accept, the branch is left at the best
    // iteration (never a VOID one: it has no score), the last kept as a ref.
    // A behaviour change to confirm is confirmed where it was made.
    if !accepted && restore_best && !matches!(cause, Cause::Confirm(_)) {
        if let Some(best) = best.filter(|b| b.commit.0 != tip.to_string()) {
            let oid = Oid::from_str(&best.commit.0).map_err(anyhow::Error::from)?;
            restore(repo, tip, oid)?;
            commit = oid;
            restored = Some(best.iteration);
        } else if best.is_none() {
            // No iteration is worth keeping (every one VOID, unscored, suspect or failing
            // a target): the branch goes back to where the task started, never left on a
            // tampered or unfinished commit.
            if let Some(start) = loop_start(env, repo)?.filter(|s| *s != tip) {
                restore(repo, tip, start)?;
                commit = start;
                restored = Some(0);
            }
        }
    }
    if !accepted {
        // Where the branch is left, the history alone may read as "iterate" (a limit that
        // a flag tightened for this run only, a wall clock): the escalation is filed there,
        // so the next loop waits for a person's accept, adjust or budget all the same.
        let reason = match cause {
            Cause::Clock => "the loop's wall clock ran out".to_string(),
            Cause::Tampered(what) | Cause::Confirm(what) => what.to_string(),
            Cause::Decided => decision
                .stopping_reason
                .as_ref()
                .map_or_else(|| outcome.as_str().to_string(), |r| r.summary.clone()),
        };
        let last = if restored.is_some() {
            format!("; its last iteration is {}", kept_ref(repo, "last"))
        } else {
            String::new()
        };
        file_escalation(env, repo, commit, &format!("{reason}){last}"))?;
    }
    let best_iteration = best.map(|b| b.iteration);
    let summary = hand_off(
        records,
        evaluation,
        (outcome, cause),
        (best_iteration, restored),
        (tip, &kept_ref(repo, "last")),
    );
    Ok(Stop {
        outcome,
        commit,
        best: best_iteration,
        summary,
    })
}

/// The iteration the loop keeps: the engine's best (scored, with no open integrity
/// finding) when every visible target of the task passes there, else the best of those
/// that pass them all (ties to the later); none when no iteration does.
fn best_kept<'r>(
    records: &'r [IterationRecord],
    engines: Option<u32>,
    targets: &[String],
) -> Option<&'r IterationRecord> {
    let engines = records.iter().find(|r| Some(r.iteration) == engines)?;
    if !fails_a_target(engines, targets) {
        return Some(engines);
    }
    records
        .iter()
        .filter(|r| r.status.is_scored() && r.quality.is_some())
        .filter(|r| !crate::engine::trajectory::suspect(r) && !fails_a_target(r, targets))
        .fold(None, |best: Option<&IterationRecord>, r| match best {
            Some(b) if b.quality > r.quality => Some(b),
            _ => Some(r),
        })
}

/// One of the task's visible targets failed or did not run in `record`.
fn fails_a_target(record: &IterationRecord, targets: &[String]) -> bool {
    let mut visible = crate::model::target::visible(targets).peekable();
    if visible.peek().is_none() {
        return false;
    }
    let failing: std::collections::BTreeSet<&str> = record
        .issues
        .iter()
        .filter_map(|i| {
            crate::engine::grouping::failed_test(i)
                .map(|(id, _)| id)
                .or_else(|| match i.kind {
                    Some(crate::model::FindingKind::TargetNotRun) => i.subject.as_deref(),
                    Some(_) => None,
                    None => crate::model::target::not_run_id(&i.finding),
                })
        })
        .collect();
    visible.any(|t| failing.contains(t.as_str()))
}

/// The loop's escalation, filed on `commit` for a person: the next loop waits for one.
/// At the task's start it is kept with the branch's task (another branch may start at the
/// same commit). `reason` closes the parenthesis it is written in.
fn file_escalation(env: &Env, repo: &Repository, commit: Oid, reason: &str) -> Result<(), Failure> {
    let object = match git::head_branch(repo)? {
        Some(branch) if loop_start(env, repo)? == Some(commit) => {
            crate::history::notes::start_key(&branch)
        }
        _ => commit,
    };
    task::open_store(env, repo)?.append_decision(
        object,
        &crate::history::notes::HumanDecision {
            action: crate::history::notes::HumanAction::Escalate {
                reason: Some(format!("itergate loop stopped ({reason}")),
            },
            by: crate::app::local::LOOP.into(),
            email: None,
            at: chrono::Utc::now(),
        },
    )?;
    Ok(())
}

/// Where the loop keeps a branch's commits it moved the branch away from (`last`: the last
/// iteration, `tampered`: what an agent left): one ref per branch, so a loop on another
/// branch never overwrites it.
pub(super) fn kept_ref(repo: &Repository, kind: &str) -> String {
    let branch = git::head_branch(repo)
        .ok()
        .flatten()
        .unwrap_or_else(|| "HEAD".into());
    format!("refs/itergate/{kind}/{branch}")
}

/// The branch back at the best iteration; the last one is kept under
/// `refs/itergate/last/<branch>`, so nothing is lost.
pub(super) fn restore(repo: &Repository, last: Oid, best: Oid) -> Result<(), Failure> {
    let dir = repo.workdir().unwrap_or_else(|| repo.path()).to_path_buf();
    git::run_git(git::git_command(&dir).args([
        "update-ref",
        &kept_ref(repo, "last"),
        &last.to_string(),
    ]))?;
    git::run_git(git::git_command(&dir).args(["reset", "--hard", "--quiet", &best.to_string()]))?;
    Ok(())
}

/// What a person taking over needs: what was tried, the best iteration, what remains.
pub(super) fn hand_off(
    records: &[IterationRecord],
    evaluation: &Evaluation,
    (outcome, cause): (LoopOutcome, Cause),
    (best, restored): (Option<u32>, Option<u32>),
    (tip, kept): (Oid, &str),
) -> String {
    let decision = &evaluation.decision;
    let mut text = format!("\nitergate loop: {}", outcome.as_str().replace('_', " "));
    match (cause, &decision.stopping_reason) {
        (Cause::Tampered(what) | Cause::Confirm(what), _) => {
            text.push_str(&format!(" ({what})"));
        }
        (_, Some(reason)) => text.push_str(&format!(" ({})", reason.summary)),
        _ => {}
    }
    text.push_str(&format!(
        " after {}\n",
        crate::model::counted(records.len(), "iteration")
    ));
    for record in records {
        let quality = match record.quality {
            _ if record.status == crate::model::Status::Void => "VOID, not scored".to_string(),
            Some(q) => format!("quality {}", crate::summary::format_score(None, q)),
            None => "not scored".to_string(),
        };
        let issues = record
            .issues
            .iter()
            .filter(|i| i.severity != crate::model::Severity::Info)
            .count();
        let best = if best == Some(record.iteration) {
            "  <- best"
        } else {
            ""
        };
        text.push_str(&format!(
            "  iteration {}: {} {quality}, {}{best}\n",
            record.iteration,
            &record.commit.0[..record.commit.0.len().min(12)],
            match issues {
                1 => "1 blocker or warning".to_string(),
                n => format!("{n} blockers or warnings"),
            },
        ));
    }
    if let Some(report) = &decision.budget_stop_report {
        for name in &report.budgets.exhausted {
            let of = |map: &std::collections::BTreeMap<String, serde_json::Value>| {
                map.get(name)
                    .map_or_else(|| "?".to_string(), |v| v.to_string())
            };
            text.push_str(&format!(
                "Budget spent: {name} {} of {}\n",
                of(&report.budgets.observed),
                of(&report.budgets.limits)
            ));
        }
    }
    match restored {
        Some(0) => text.push_str(&format!(
            "No iteration is worth keeping (each is VOID, unscored, suspect or fails a target): the branch is back where the task started; the last ({}) is kept as {kept}.\n",
            short(tip)
        )),
        Some(iteration) => text.push_str(&format!(
            "The branch is back at iteration {iteration}, the best; the last ({}) is kept as {kept}.\n",
            short(tip)
        )),
        None => {}
    }
    if outcome != LoopOutcome::Accepted && (restored == Some(0) || !decision.next_steps.is_empty())
    {
        text.push_str("What remains:\n");
        // Back at the start there is no iteration to accept: a person adjusts or budgets.
        let steps = decision
            .next_steps
            .iter()
            .filter(|step| restored != Some(0) || !step.contains("itergate accept"));
        for step in steps.take(5) {
            text.push_str(&format!("  - {step}\n"));
        }
        if restored == Some(0) {
            text.push_str("  - A person decides: `itergate adjust <guidance>` or `itergate budget <n>` lets the loop go on with the task from here; `itergate loop --new-task` starts a new one\n");
        }
    }
    text
}

/// Stops the loop on its wall clock: the branch at the best iteration, the hand-off, 20.
pub(super) fn clock_stop(
    env: &Env,
    repo: &Repository,
    options: &LoopOptions,
    current: &crate::app::local::Task,
    history: crate::history::History,
    events: &Events,
    quiet: bool,
) -> Result<(), Failure> {
    let minutes = env
        .config
        .stopping_criteria
        .budget_limits
        .wall_clock_minutes
        .unwrap_or_default();
    let head = git::resolve_commit(repo, "HEAD").map_err(|e| user(format!("{e:#}")))?;
    let (summary, commit, iteration, best) = if history.is_empty() {
        (
            format!("\nitergate loop: stopped: the loop's wall clock (budget_limits.wall_clock_minutes: {minutes}) ran out before the first iteration; nothing was committed\n"),
            head,
            0,
            None,
        )
    } else {
        let store = task::open_store(env, repo)?;
        let evaluation = current.evaluate(env, &store, &history)?;
        let records = history.into_records();
        let stop = stop(
            env,
            repo,
            (options.restore_best, Cause::Clock),
            (&records, &current.targets),
            &evaluation,
            head,
        )?;
        (
            format!(
                "\nitergate loop: the loop's wall clock (budget_limits.wall_clock_minutes: {minutes}) ran out{}",
                stop.summary
            ),
            stop.commit,
            records.last().map_or(0, |r| r.iteration),
            stop.best,
        )
    };
    let at = (iteration, best, Some(commit));
    announce(
        events,
        quiet,
        LoopOutcome::BudgetExhausted,
        at,
        &summary,
        None,
    )
}

/// Stops the loop when an agent run changed what the loop owns (`guard`): what it left is
/// dropped (the branch back at `before`, where the run started), then the branch goes to
/// the best iteration, or to the start when none is honest; escalated, 20.
/// HEAD with the work tree's changes (untracked files too, ignored ones not) as a commit on
/// no branch; the index on disk is left as it is.
fn left_as_commit(repo: &Repository) -> Option<Oid> {
    let head = repo.head().ok()?.peel_to_commit().ok()?;
    let mut index = repo.index().ok()?;
    index
        .add_all(["*"], git2::IndexAddOption::DEFAULT, None)
        .ok()?;
    index.update_all(["*"], None).ok()?;
    let tree = repo.find_tree(index.write_tree().ok()?).ok()?;
    let _ = index.read(true);
    let by = git2::Signature::now("itergate", "itergate@localhost").ok()?;
    let message = "itergate loop: what the agent left";
    repo.commit(None, &by, &by, message, &tree, &[&head]).ok()
}

pub(super) fn tamper_stop(
    env: &Env,
    repo: &Repository,
    (before, number): (Oid, u32),
    what: &[String],
    events: &Events,
    quiet: bool,
) -> Result<(), Failure> {
    let mut reason = format!("the agent changed what the loop owns: {}", what.join(", "));
    // What the agent left, committed or not, is kept as refs/itergate/tampered/<branch>.
    let tampered = kept_ref(repo, "tampered");
    let dir = repo.workdir().unwrap_or_else(|| repo.path()).to_path_buf();
    if let Some(left) = left_as_commit(repo) {
        repo.reference(&tampered, left, true, "itergate: what the agent left")
            .map_err(anyhow::Error::from)?;
    }
    git::run_git(git::git_command(&dir).args(["reset", "--hard", "--quiet", &before.to_string()]))?;
    let store = task::open_store(env, repo)?;
    let current = task::current_task(env, store.repository(), None)?;
    // What it changed of the environment the checks execute, too: not put back, named.
    env.sealed.rescan();
    let drift = crate::app::sealed::task_drift(env, store.repository(), &current, before)?;
    if !drift.unexplained.is_empty() {
        reason.push_str(&format!(
            "; and the environment the checks execute (not put back: restore it before the next loop): {}",
            crate::signals::environment::describe(&drift.unexplained)
        ));
    }
    let history = current.history(env, &store)?;
    let (summary, commit, best) = if history.is_empty() {
        file_escalation(env, repo, before, &format!("{reason})"))?;
        (
            format!("\nitergate loop: escalated ({reason}); nothing was committed, the branch is where the task started; what the agent left is {tampered}\n"),
            before,
            None,
        )
    } else {
        let evaluation = current.evaluate(env, &store, &history)?;
        let records = history.into_records();
        let stop = stop(
            env,
            repo,
            (true, Cause::Tampered(&reason)),
            (&records, &current.targets),
            &evaluation,
            before,
        )?;
        (
            format!("{}What the agent left is {tampered}.\n", stop.summary),
            stop.commit,
            stop.best,
        )
    };
    let at = (number, best, Some(commit));
    announce(events, quiet, LoopOutcome::Escalated, at, &summary, None)
}

/// Says how the loop ended: the `stopped` event and the hand-off on stderr. `Ok` for an
/// accept, else the outcome's exit status as [`Failure::Decided`].
pub(super) fn announce(
    events: &Events,
    quiet: bool,
    outcome: LoopOutcome,
    (iteration, best, commit): (u32, Option<u32>, Option<Oid>),
    summary: &str,
    budget_stop_report: Option<&crate::engine::BudgetStopReport>,
) -> Result<(), Failure> {
    events.clear_line();
    events.emit(&LoopEvent::Stopped {
        outcome: outcome.as_str(),
        exit_code: outcome.exit().code(),
        iteration,
        best_iteration: best,
        commit: commit.map(|c| c.to_string()).unwrap_or_default(),
        summary: summary.to_string(),
        budget_stop_report,
    });
    if !events.json && !quiet {
        eprint!("{summary}");
    }
    match outcome.exit() {
        ExitStatus::Success => Ok(()),
        status => Err(Failure::Decided(status.code())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(iteration: u32, quality: f64, status: &str, failing: &[&str]) -> IterationRecord {
        let issues: Vec<serde_json::Value> = failing
            .iter()
            .map(|id| {
                serde_json::json!({
                    "dimension": "tests",
                    "severity": "BLOCKER",
                    "finding": format!("test {id} failed: expected 3, got -1"),
                })
            })
            .collect();
        serde_json::from_value(serde_json::json!({
            "iteration": iteration,
            "timestamp": "2026-12-05T00:00:00Z",
            "quality": quality,
            "status": status,
            "issues": issues,
        }))
        .expect("a record")
    }

    fn kept(records: &[IterationRecord], engines: Option<u32>, targets: &[&str]) -> Option<u32> {
        let targets: Vec<String> = targets.iter().map(|t| t.to_string()).collect();
        best_kept(records, engines, &targets).map(|r| r.iteration)
    }

    #[test]
    fn an_iteration_failing_a_target_is_never_the_one_kept() {
        let records = [
            record(1, 0.7, "pass", &[]),
            record(2, 0.9, "fail", &["t::target"]),
            record(3, 0.8, "fail", &["t::other"]),
        ];
        // The engine's best fails the target: the best of those that pass it.
        assert_eq!(kept(&records, Some(2), &["t::target"]), Some(3));
        // Without targets, the engine's best stands.
        assert_eq!(kept(&records, Some(2), &[]), Some(2));
        // A holdout target is never read from the findings.
        assert_eq!(kept(&records, Some(2), &["holdout: h::x"]), Some(2));
        // No iteration passes the targets: none is kept (the branch goes to the start).
        let failing = [
            record(1, 0.7, "fail", &["t::target"]),
            record(2, 0.9, "fail", &["t::target"]),
        ];
        assert_eq!(kept(&failing, Some(2), &["t::target"]), None);
        // A VOID iteration is never kept, though its findings name no target.
        let void = [
            record(1, 0.9, "void", &[]),
            record(2, 0.8, "fail", &["t::target"]),
        ];
        assert_eq!(kept(&void, Some(2), &["t::target"]), None);
        // No best from the engine: none.
        assert_eq!(kept(&records, None, &["t::target"]), None);
    }

    #[test]
    fn a_target_that_did_not_run_counts_as_failing() {
        let mut missing = record(1, 0.9, "fail", &[]);
        missing.issues.push(
            serde_json::from_value(serde_json::json!({
                "dimension": "tests",
                "severity": "BLOCKER",
                "finding": "target test t::target did not run: it failed where the task started, and the task is done when it passes",
            }))
            .expect("an issue"),
        );
        assert_eq!(kept(&[missing], Some(1), &["t::target"]), None);
    }
}
