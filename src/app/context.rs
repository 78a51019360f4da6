//! `itergate context`: a branch's agent asks for context with a `CONTEXT_GAP_REPORT`, and
//! gets a delivery read from the local repository at the latest recorded iteration's commit
//! (git objects, never the work tree, so an untracked `.env` is never read), from that
//! tree's cached observation (a check's output, a test's failure) and from the decision.
//! Rounds are counted in the branch's notes ([`crate::history::notes::ContextRound`]); a
//! required item that cannot be provided escalates the branch as `itergate escalate` does.
//!
//! The holdout is known from the configuration and from the observation's holdout checks
//! (their failing tests' ids and files), so a request for any of it is refused.

use chrono::Utc;
use git2::{ObjectType, Oid, Repository, Tree, TreeWalkMode, TreeWalkResult};
use serde::Serialize;

use super::local::{self as task, Task};
use super::{user, Env, Failure};
use crate::config::{Config, Visibility};
use crate::context::{
    self, deliver, GapReport, Holdout, ItemSource, Limits, Lookup, Policy, Reply, TestDetail,
};
use crate::engine::DecisionReport;
use crate::history::notes::{context_use, ContextRound, HumanAction, HumanDecision, NotesStore};
use crate::model::IterationRecord;
use crate::signals::observation::{CheckResult, Observation};
use crate::signals::report::Report;

/// The largest file read for a delivery; a larger one is refused (ask for a line range).
pub const MAX_FILE_READ_BYTES: usize = 1024 * 1024;

/// What `itergate context` answered.
#[derive(Debug, Serialize)]
pub struct LocalAnswer {
    pub task: String,
    pub iteration: u32,
    pub commit: String,
    #[serde(flatten)]
    pub reply: Reply,
    /// A human was called (the branch is escalated).
    pub escalated: bool,
}

/// Answers `report` for the latest recorded iteration of `task`, records the round, and
/// escalates when a required item is missing.
pub fn answer(
    env: &Env,
    store: &NotesStore,
    task: &Task,
    report: &GapReport,
) -> Result<LocalAnswer, Failure> {
    let repo = store.repository();
    let history = task.history(env, store)?;
    let Some(latest) = history.last().cloned() else {
        return Err(user(format!(
            "no iteration of `{}` is recorded yet, so there is nothing to deliver context for; \
             run `itergate run` (or push with the hook installed)",
            task.name
        )));
    };
    let commit = Oid::from_str(&latest.commit.0).map_err(anyhow::Error::from)?;
    let (tree, observation, policy) = commit_context(env, store, commit)?;
    let log = store.read_context_rounds(commit)?;
    let answered = context_use(latest.iteration, &log).rounds;
    let evaluation = task.evaluate(env, store, &history)?;
    let decision = serde_norway::to_string(&DecisionReport {
        iteration_decision: evaluation.decision,
        task: None,
    })
    .ok();
    let previous = history
        .len()
        .checked_sub(2)
        .and_then(|i| history.get(i))
        .and_then(|r| Oid::from_str(&r.commit.0).ok());
    let source = LocalSource {
        repo,
        tree,
        config: &env.config,
        observation,
        record: Some(&latest),
        decision,
        commit,
        previous,
    };
    let reply = deliver(
        report,
        answered,
        &source,
        &policy,
        &Limits::from_config(&env.config),
    );
    let at = Utc::now();
    store.append_context_round(commit, &ContextRound::of(&reply, at))?;
    let escalated = reply.escalates();
    if escalated {
        escalate(store, task, commit, &reply, at)?;
    }
    Ok(LocalAnswer {
        task: task.name.clone(),
        iteration: latest.iteration,
        commit: commit.to_string(),
        reply,
        escalated,
    })
}

/// `commit`'s tree, its cached checks (if this clone ran them) and the delivery policy:
/// the deny list, and the holdout with what the checks observed.
fn commit_context<'r>(
    env: &Env,
    store: &NotesStore<'r>,
    commit: Oid,
) -> Result<(Tree<'r>, Option<Observation>, Policy), Failure> {
    let tree = store
        .repository()
        .find_commit(commit)
        .and_then(|c| c.tree())
        .map_err(anyhow::Error::from)?;
    let observation =
        store.find_observation(tree.id(), &super::observe::fingerprint(&env.config))?;
    let mut holdout = Holdout::from_config(&env.config);
    if let Some(observed) = &observation {
        add_observed_holdout(observed, &mut holdout);
    }
    let policy = Policy::new(&env.config.context.deny, holdout).map_err(user)?;
    Ok((tree, observation, policy))
}

/// Answers `report` before any iteration, from `commit`'s tree (and its cached checks, if
/// this clone ran them): the seed round of `itergate loop`. `answered` rounds came before.
/// Nothing is recorded: no iteration exists yet to file the round under.
pub fn answer_before_work(
    env: &Env,
    store: &NotesStore,
    commit: Oid,
    report: &GapReport,
    answered: u32,
) -> Result<Reply, Failure> {
    let repo = store.repository();
    let (tree, observation, policy) = commit_context(env, store, commit)?;
    let source = LocalSource {
        repo,
        tree,
        config: &env.config,
        observation,
        record: None,
        decision: None,
        commit,
        previous: None,
    };
    Ok(deliver(
        report,
        answered,
        &source,
        &policy,
        &Limits::from_config(&env.config),
    ))
}

/// Who the context protocol's own escalations are filed as.
pub const ESCALATED_BY: &str = "itergate context";

/// Files the branch for a human, as `itergate escalate` would, naming the missing items.
fn escalate(
    store: &NotesStore,
    task: &Task,
    commit: Oid,
    reply: &Reply,
    at: chrono::DateTime<Utc>,
) -> Result<(), Failure> {
    let reason = context::escalation_reason(reply, ESCALATED_BY);
    let decision = HumanDecision {
        action: HumanAction::Escalate {
            reason: Some(reason),
        },
        by: ESCALATED_BY.into(),
        email: None,
        at,
    };
    store.append_decision(commit, &decision)?;
    tracing::info!(task = %task.name, %commit, "a required context item is missing: escalated");
    Ok(())
}

/// The holdout checks' failing tests (ids and files) and the files their findings name.
pub fn add_observed_holdout(observed: &Observation, holdout: &mut Holdout) {
    for check in &observed.checks {
        if check.visibility != Visibility::AggregateOnly {
            continue;
        }
        holdout.checks.insert(check.name.clone());
        match &check.result {
            CheckResult::Report {
                report: Report::Tests(tests),
                ..
            } => {
                for case in &tests.problems {
                    holdout.add_test(&case.id);
                    if let Some(file) = &case.file {
                        holdout.add_path(file);
                    }
                }
            }
            CheckResult::Report {
                report: Report::Lint(lint),
                ..
            } => {
                for file in lint.findings.iter().filter_map(|f| f.file.as_deref()) {
                    holdout.add_path(file);
                }
            }
            CheckResult::BuildFailed { diagnostics, .. } => {
                for file in diagnostics.iter().filter_map(|d| d.file.as_deref()) {
                    holdout.add_path(file);
                }
            }
            _ => {}
        }
    }
}

/// Items from the local repository at the iteration's commit.
struct LocalSource<'r> {
    repo: &'r Repository,
    tree: Tree<'r>,
    config: &'r Config,
    observation: Option<Observation>,
    /// None before any iteration (the seed round of `itergate loop`).
    record: Option<&'r IterationRecord>,
    decision: Option<String>,
    commit: Oid,
    previous: Option<Oid>,
}

impl ItemSource for LocalSource<'_> {
    fn file(&self, path: &str) -> Lookup {
        let Ok(entry) = self.tree.get_path(std::path::Path::new(path)) else {
            return Lookup::Missing;
        };
        if entry.kind() != Some(ObjectType::Blob) {
            return Lookup::Missing;
        }
        match self.repo.find_blob(entry.id()) {
            Ok(blob) if blob.size() > MAX_FILE_READ_BYTES => Lookup::TooLarge(blob.size() as u64),
            Ok(blob) => Lookup::Found(blob.content().to_vec()),
            Err(e) => Lookup::Failed(e.message().to_string()),
        }
    }

    fn files(&self) -> Option<Vec<String>> {
        let mut files = Vec::new();
        let walked = self.tree.walk(TreeWalkMode::PreOrder, |dir, entry| {
            if entry.kind() == Some(ObjectType::Blob) {
                if let Ok(name) = entry.name() {
                    files.push(format!("{dir}{name}"));
                }
            }
            TreeWalkResult::Ok
        });
        walked.ok().map(|_| files)
    }

    fn check_output(&self, name: &str) -> Option<String> {
        let from_observation = self.observation.as_ref().and_then(|observed| {
            let check = observed.checks.iter().find(|c| c.name == name)?;
            if check.visibility == Visibility::AggregateOnly {
                return None;
            }
            failure_output(&check.result)
        });
        from_observation.or_else(|| {
            let findings: Vec<String> = self
                .record
                .into_iter()
                .flat_map(|r| r.issues.iter())
                .filter(|i| i.dimension == name)
                .map(|i| match &i.affected_field {
                    Some(at) => format!("{}: {} ({at})", i.severity.as_str(), i.finding),
                    None => format!("{}: {}", i.severity.as_str(), i.finding),
                })
                .collect();
            (!findings.is_empty()).then(|| findings.join("\n") + "\n")
        })
    }

    fn test(&self, id: &str) -> Option<TestDetail> {
        let observed = self.observation.as_ref()?;
        observed
            .checks
            .iter()
            .filter(|c| c.visibility != Visibility::AggregateOnly)
            .find_map(|check| match &check.result {
                CheckResult::Report {
                    report: Report::Tests(tests),
                    ..
                } => tests.problems.iter().find(|case| same_test(&case.id, id)),
                _ => None,
            })
            .map(|case| TestDetail {
                id: case.id.clone(),
                finding: [case.message.as_deref(), case.output.as_deref()]
                    .into_iter()
                    .flatten()
                    .collect::<Vec<_>>()
                    .join("\n"),
                file: case.file.clone(),
                line: case.line,
            })
    }

    fn config(&self) -> &Config {
        self.config
    }

    fn decision(&self) -> Option<String> {
        self.decision.clone()
    }

    fn diff(&self) -> Result<Vec<(String, String)>, String> {
        self.patches()
            .ok_or_else(|| "the iteration's diff could not be computed".to_string())
    }
}

impl LocalSource<'_> {
    /// The iteration's change against the previous iteration (its parent for the first).
    fn patches(&self) -> Option<Vec<(String, String)>> {
        let commit = self.repo.find_commit(self.commit).ok()?;
        let old = match self.previous {
            Some(previous) => Some(self.repo.find_commit(previous).ok()?.tree().ok()?),
            None => commit.parent(0).ok().and_then(|p| p.tree().ok()),
        };
        let diff = self
            .repo
            .diff_tree_to_tree(old.as_ref(), Some(&self.tree), None)
            .ok()?;
        let mut files = Vec::new();
        for index in 0..diff.deltas().len() {
            let Ok(Some(mut patch)) = git2::Patch::from_diff(&diff, index) else {
                continue;
            };
            let delta = patch.delta();
            let path = delta
                .new_file()
                .path()
                .or_else(|| delta.old_file().path())
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default();
            if let Ok(buf) = patch.to_buf() {
                files.push((path, String::from_utf8_lossy(&buf).into_owned()));
            }
        }
        Some(files)
    }
}

/// `wanted` names the test `id`: the same id, or its last components (`module::case`).
fn same_test(id: &str, wanted: &str) -> bool {
    id == wanted
        || id
            .strip_suffix(wanted)
            .is_some_and(|rest| rest.ends_with("::") || rest.ends_with('.') || rest.ends_with('/'))
}

/// A failed check's full output as the observation holds it; `None` when it did not fail.
fn failure_output(result: &CheckResult) -> Option<String> {
    match result {
        CheckResult::Exited { exit_code: 0, .. } => None,
        CheckResult::Exited {
            exit_code, tail, ..
        } => Some(format!("exit status {exit_code}\n{tail}\n")),
        CheckResult::TimedOut { seconds, tail } => {
            Some(format!("stopped after {seconds}s\n{tail}\n"))
        }
        CheckResult::BuildFailed {
            exit_code,
            diagnostics,
            tail,
        } => {
            let mut text = format!("exit status {exit_code}\n");
            for d in diagnostics {
                let at = match (&d.file, d.line) {
                    (Some(f), Some(l)) => format!("{f}:{l}: "),
                    (Some(f), None) => format!("{f}: "),
                    _ => String::new(),
                };
                text.push_str(&format!("{at}{}\n", d.message));
            }
            Some(format!("{text}\n{tail}\n"))
        }
        CheckResult::Report {
            report: Report::Tests(tests),
            ..
        } if !tests.problems.is_empty() => {
            let mut text = String::new();
            for case in &tests.problems {
                let at = match (&case.file, case.line) {
                    (Some(f), Some(l)) => format!(" ({f}:{l})"),
                    (Some(f), None) => format!(" ({f})"),
                    _ => String::new(),
                };
                text.push_str(&format!("{} {:?}{at}\n", case.id, case.outcome));
                for part in [&case.message, &case.output].into_iter().flatten() {
                    text.push_str(part.trim_end());
                    text.push('\n');
                }
            }
            Some(text)
        }
        CheckResult::Report {
            report: Report::Lint(lint),
            ..
        } if !lint.findings.is_empty() => Some(
            lint.findings
                .iter()
                .map(|f| {
                    let at = match (&f.file, f.line) {
                        (Some(file), Some(l)) => format!("{file}:{l}: "),
                        _ => String::new(),
                    };
                    let rule = f.rule.as_deref().unwrap_or("");
                    format!("{at}{:?} {rule} {}\n", f.level, f.message)
                })
                .collect(),
        ),
        _ => None,
    }
}

/// The context rounds of each recorded iteration that used any (for `itergate analytics`).
pub fn usage(env: &Env, history: &[IterationRecord]) -> Result<Vec<context::ContextUse>, Failure> {
    let repo = task::open_repository(env)?;
    let store = task::open_store(env, &repo)?;
    let mut uses = Vec::new();
    for record in history {
        let Ok(commit) = Oid::from_str(&record.commit.0) else {
            continue;
        };
        let log = store.read_context_rounds(commit)?;
        if !log.is_empty() {
            uses.push(context_use(record.iteration, &log));
        }
    }
    Ok(uses)
}
