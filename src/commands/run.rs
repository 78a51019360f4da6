//! `itergate run`, `status`, `prompt` and `notes`: the current branch as a task.

use crate::app::local::{self as task, Task};
use crate::app::observe::RecordOptions;
use crate::cli::{DecisionOutput, NotesCommand, OutputFormat, RunArgs};
use crate::engine::{DecisionReport, Evaluation, Recommendation};
use crate::history::notes;
use crate::model::IterationRecord;
use crate::signals::checks::Progress;

use super::print;
use super::report;
use super::{user, Env, Failure};

pub(super) use crate::app::local::current_task;

/// A branch's recorded history from git notes: (task name, records).
pub fn recorded_history(
    env: &Env,
    branch: Option<&str>,
) -> Result<(String, Vec<IterationRecord>), Failure> {
    let repo = task::open_repository(env)?;
    let store = task::open_store(env, &repo)?;
    let task = current_task(env, store.repository(), branch)?;
    let history = task.history(env, &store)?.into_records();
    if history.is_empty() {
        return Err(nothing_recorded(&task.name));
    }
    Ok((task.name, history))
}

pub fn run(env: &Env, args: &RunArgs, quiet: bool) -> Result<(), Failure> {
    let repo = task::open_repository(env)?;
    let store = task::open_store(env, &repo)?;
    let task = current_task(env, store.repository(), None)?;
    let options = RecordOptions {
        progress: Progress::from_quiet(quiet),
        rescore: args.rescore,
    };
    let (_, ran) = task::record_commit(env, &store, &task, task.tip, options)?;
    task.record_start(env, &store)?;
    if !ran && !quiet {
        eprintln!(
            "itergate: this tree was already checked with the same checks; judging the change from those results (--rescore runs them again)"
        );
    }
    let history = task.history(env, &store)?;
    let evaluation = task.evaluate(env, &store, &history)?;
    report::report(env, store.repository(), &task, &history, &evaluation, quiet)?;
    deliver(&evaluation, Some(task.report(env)), &args.output)
}

/// The machine-readable report and exit status a program asked for.
pub fn deliver(
    evaluation: &Evaluation,
    task: Option<crate::engine::TaskReport>,
    output: &DecisionOutput,
) -> Result<(), Failure> {
    if output.format == OutputFormat::Json {
        let report = DecisionReport {
            iteration_decision: evaluation.decision.clone(),
            task,
        };
        print(
            &(serde_json::to_string_pretty(&report).map_err(|e| Failure::Internal(e.into()))?
                + "\n"),
        )?;
    }
    if output.exit_code {
        let code = exit_code(evaluation.decision.recommendation());
        if code != 0 {
            return Err(Failure::Decided(code));
        }
    }
    Ok(())
}

/// `--exit-code`: one status per recommendation ([`crate::app::exit`]).
pub fn exit_code(recommendation: Recommendation) -> u8 {
    crate::app::exit::ExitStatus::of(recommendation).code()
}

/// The current branch's recorded history and the decision on it; scores nothing.
fn recorded_decision(env: &Env) -> Result<(Task, Vec<IterationRecord>, Evaluation), Failure> {
    let repo = task::open_repository(env)?;
    let store = task::open_store(env, &repo)?;
    let task = current_task(env, store.repository(), None)?;
    let history = task.history(env, &store)?;
    if history.is_empty() {
        return Err(nothing_recorded(&task.name));
    }
    let evaluation = task.evaluate(env, &store, &history)?;
    Ok((task, history.into_records(), evaluation))
}

/// `status`: where the task started and what judges it.
fn task_lines(env: &Env, task: &Task) -> String {
    let base = task
        .base_branch
        .as_deref()
        .map_or("(no base branch)", |b| b.trim_start_matches("refs/heads/"));
    let start = task.start.map_or("(none)".to_string(), task::short);
    let start = match (task.start_recorded, task.merge_base, task.base_moved) {
        (true, Some(judged), Some(moved)) => format!(
            "{start} (recorded; the change is judged against {}, the base pinned where the task started: {base} has since moved to {}, and what the branch merged in of it counts as its work)",
            task::short(judged),
            task::short(moved)
        ),
        (true, Some(judged), None) if task.start != Some(judged) => format!(
            "{start} (recorded; the change is judged against {})",
            task::short(judged)
        ),
        _ => start,
    };
    let rules = match &env.rules {
        crate::app::Rules::Locked(origin) => format!("locked to {origin}"),
        crate::app::Rules::Named(path) => format!("{} (--config)", path.display()),
        crate::app::Rules::Unlocked => env
            .rules
            .unlocked_notice(task.base_branch.as_deref())
            .unwrap_or_default(),
    };
    format!("Start: {start}, where this task left {base}\nRules: {rules}\n")
}

pub(super) fn nothing_recorded(name: &str) -> Failure {
    user(format!(
        "no iteration of `{name}` is recorded yet; run `itergate run` (or push with the hook installed)"
    ))
}

pub fn status(env: &Env, output: &DecisionOutput) -> Result<(), Failure> {
    let (task, history, evaluation) = recorded_decision(env)?;
    if output.format == OutputFormat::Text {
        let view = crate::summary::decision_view(&history, &evaluation);
        print(&env.renderer()?.render("decision.txt.j2", &view)?)?;
        print(&task_lines(env, &task))?;
    }
    deliver(&evaluation, Some(task.report(env)), output)
}

pub fn prompt(env: &Env) -> Result<(), Failure> {
    let (_, history, evaluation) = recorded_decision(env)?;
    print(&report::render_prompt(env, &history, &evaluation.decision)?)
}

pub fn notes_command(env: &Env, command: &NotesCommand) -> Result<(), Failure> {
    let repo = task::open_repository(env)?;
    let dir = repo.workdir().unwrap_or_else(|| repo.path()).to_path_buf();
    let notes_ref = &env.config.hook.notes_ref;
    match command {
        NotesCommand::Push { remote } => {
            notes::push_notes(&dir, remote, notes_ref)?;
            eprintln!("itergate: pushed {notes_ref} to {remote}");
        }
        NotesCommand::Fetch { remote } => {
            notes::fetch_notes(&dir, remote, notes_ref)?;
            eprintln!("itergate: fetched {notes_ref} from {remote}");
        }
    }
    Ok(())
}
