//! A branch as a task, for `run`, `status`, `prompt` and the pre-push hook: find its
//! iterations, record each commit once per base (judged from its tree's cached
//! observation, or from checks run now), and read the history back.
//!
//! Caching follows what each thing depends on:
//! - a tree's observation depends on the tree and the checks: it is the tree's note, and a
//!   tree is observed once per check configuration, whatever branch or base it is on;
//! - a commit's record depends on that observation, its base's, the diff between them and
//!   the scoring configuration: it is the commit's note, reused only when the base and the
//!   configuration are the same, and otherwise judged again (no check runs for that).
//!
//! Iterations: the first-parent commits since the merge-base with the base branch. On the
//! base branch itself (or with no base branch) the task is HEAD alone, judged against its
//! first parent: the last change, not the whole history.
//!
//! What people decided (`itergate accept`, `escalate`, `adjust`, `feedback`, `budget`) is
//! read with the history and means what the pull request's `/iterate` commands mean
//! ([`Task::feedback`]): a decision is filed under the iteration it was given at; each newer
//! recorded iteration clears acceptance, escalation and feedback messages, as a new commit
//! of a pull request does; `adjust` restarts the revision count after its iteration; a
//! budget stays. Anyone's decisions count, a fetched teammate's too
//! ([`crate::history::notes`]).

use chrono::Utc;
use git2::{Oid, Repository};
use sha2::{Digest, Sha256};

use crate::engine::{Feedback, Surface};
use crate::git;
use crate::history::notes::{HumanAction, HumanDecision, Note, NotesStore};
use crate::history::History;
use crate::model::IterationRecord;
use crate::signals::checks::Progress;
use crate::signals::environment::Measured;
use crate::signals::observation::Observation;

use super::evaluate::{evaluate, EvaluateInput, Evaluation};
use super::judge::{judge, whole_tree_record, Judgement};
use super::observe::{
    cached_observation, fingerprint, observation_of, observe, tree_of, ObserveRequest,
    RecordOptions,
};
use super::{user, Env, Failure};

/// One branch's iterations.
#[derive(Clone)]
pub struct Task {
    pub name: String,
    pub tip: Oid,
    /// The branch the work left (a ref name), when one was found.
    pub base_branch: Option<String>,
    /// What the iterations are compared with: the merge-base with the base branch, or the
    /// tip's parent when the tip is on the base branch.
    pub merge_base: Option<Oid>,
    /// Where the iterations count from: the recorded start of the task (see
    /// [`Task::record_start`]), else the merge-base.
    pub start: Option<Oid>,
    /// The start came from the notes (a start this clone recorded earlier).
    pub start_recorded: bool,
    pub commits: Vec<Oid>,
    /// The tests the task set out to make pass (failing where `itergate loop` started it):
    /// never the base's debt, and never accepted while one fails or is missing.
    pub targets: Vec<String>,
    /// The environment where the task started (its start note's), what each iteration's
    /// environment is compared with.
    pub environment: Option<crate::signals::environment::Fingerprint>,
    /// The iteration `environment` was taken at, when later than the start.
    pub environment_at: Option<Oid>,
    /// Where the base branch is now, when it moved past the task's pinned base and the
    /// branch merged it in: the change is judged against the pinned base all the same.
    pub base_moved: Option<Oid>,
}

impl Task {
    pub fn locate(env: &Env, repo: &Repository, name: &str, tip: Oid) -> Result<Task, Failure> {
        let (base_branch, inferred) = git::task_start(repo, env.config.hook.base.as_deref(), tip);
        // The start this clone recorded for the branch (by `itergate loop`, `run` or the
        // hook), while it is still below the tip: a rebase leaves it behind, and then the
        // task starts again where the branch now leaves its base.
        let below =
            |commit: Oid| commit == tip || git::is_ancestor(repo, commit, tip).unwrap_or(false);
        let recorded = open_store(env, repo)?
            .read_task_start(name)?
            .filter(|s| !s.ended)
            .and_then(|s| Some((Oid::from_str(&s.commit).ok()?, s)))
            .filter(|(commit, _)| below(*commit));
        let targets = recorded
            .as_ref()
            .map(|(_, s)| s.targets.clone())
            .unwrap_or_default();
        let environment = recorded.as_ref().and_then(|(_, s)| s.environment.clone());
        let environment_at = recorded
            .as_ref()
            .and_then(|(_, s)| s.environment_at.as_deref())
            .and_then(|c| Oid::from_str(c).ok())
            .filter(|c| below(*c));
        // The base is pinned where the task started: a later commit on the base branch that
        // the branch merged in is the branch's change, judged and reported as such.
        let pinned = recorded
            .as_ref()
            .and_then(|(_, s)| s.base.as_deref())
            .and_then(|b| Oid::from_str(b).ok())
            .filter(|b| below(*b));
        // A rebase puts the new base on the branch's own line (the task starts again there);
        // a merge brings it in beside it.
        let merged_in = |now: Oid, pinned: Oid| -> Result<bool, Failure> {
            Ok(git::is_ancestor(repo, pinned, now).unwrap_or(false)
                && !git::first_parent_commits(repo, tip, Some(pinned))?.contains(&now))
        };
        let (inferred, base_moved) = match (inferred, pinned) {
            (Some(now), Some(pinned)) if now != pinned && merged_in(now, pinned)? => {
                (Some(pinned), Some(now))
            }
            (inferred, _) => (inferred, None),
        };
        let Some(merge_base) = inferred else {
            // On the base branch: a task `itergate loop` drives counts from its start;
            // anything else judges the last change.
            if let Some((start, _)) = recorded.filter(|(c, s)| *c != tip && s.is_loop()) {
                let commits = git::first_parent_commits(repo, tip, Some(start))?;
                return Ok(Task {
                    name: name.to_string(),
                    tip,
                    base_branch,
                    merge_base: Some(start),
                    start: Some(start),
                    start_recorded: true,
                    commits,
                    targets,
                    environment,
                    environment_at,
                    base_moved,
                });
            }
            let parent = repo
                .find_commit(tip)
                .map_err(anyhow::Error::from)?
                .parent_ids()
                .next();
            return Ok(Task {
                name: name.to_string(),
                tip,
                base_branch,
                merge_base: parent,
                start: parent,
                start_recorded: false,
                commits: vec![tip],
                targets,
                environment,
                environment_at,
                base_moved,
            });
        };
        // The iterations count from the recorded start when the branch has since merged in
        // its base (the merge-base moved past the start, off the branch's own line); the
        // change is still judged against the latest base it contains. A rebase puts the
        // base on the branch's line: the task starts again there.
        let mut stale = false;
        let from_recorded = match &recorded {
            Some((start, _))
                if *start != merge_base
                    && git::is_ancestor(repo, *start, merge_base).unwrap_or(false) =>
            {
                let commits = git::first_parent_commits(repo, tip, Some(*start))?;
                stale = commits.contains(&merge_base);
                (!stale).then_some((*start, commits))
            }
            // A loop that started later on the branch: its agent's first commit is its
            // iteration 1 (what came before is where the task started, judged with it).
            Some((start, s))
                if s.is_loop()
                    && *start != merge_base
                    && git::is_ancestor(repo, merge_base, *start).unwrap_or(false) =>
            {
                Some((*start, git::first_parent_commits(repo, tip, Some(*start))?))
            }
            _ => None,
        };
        let start_recorded = recorded.is_some() && !stale;
        let (start, commits) = match from_recorded {
            Some(found) => found,
            None => (
                merge_base,
                git::first_parent_commits(repo, tip, Some(merge_base))?,
            ),
        };
        Ok(Task {
            name: name.to_string(),
            tip,
            base_branch,
            merge_base: Some(merge_base),
            start: Some(start),
            start_recorded,
            commits,
            targets,
            environment,
            environment_at,
            base_moved,
        })
    }

    /// Records where this branch's task starts, the first time the task is seen (`run`,
    /// the hook): every later view counts its iterations from there, whatever the base
    /// branch does meanwhile. A task on the base branch has no start to record.
    pub fn record_start(&self, env: &Env, store: &NotesStore) -> Result<(), Failure> {
        if self.start_recorded || self.base_branch.is_none() {
            return Ok(());
        }
        let Some(start) = self.start.filter(|s| *s != self.tip) else {
            return Ok(());
        };
        let note = crate::history::notes::TaskStart {
            branch: self.name.clone(),
            commit: start.to_string(),
            targets: Vec::new(),
            task: String::new(),
            rules: Some(fingerprint(&env.config)),
            ended: false,
            base: self.merge_base.map(|b| b.to_string()),
            environment: super::sealed::current(env, store.repository())
                .map(|s| s.fingerprint.clone()),
            environment_at: None,
            at: Utc::now(),
        };
        store.write(&[Note::TaskStart { start: &note }])?;
        Ok(())
    }

    /// The cached observations of the iterations before `commit`, oldest first (those
    /// this clone has observed): what tamper evidence compares with.
    pub fn earlier_observations(
        &self,
        env: &Env,
        store: &NotesStore,
        commit: Oid,
    ) -> Result<Vec<(Oid, Observation)>, Failure> {
        let fingerprint = fingerprint(&env.config);
        let before = match self.commits.iter().position(|c| *c == commit) {
            Some(at) => &self.commits[..at],
            None => &self.commits[..],
        };
        let mut out = Vec::new();
        // A loop's start above the merge-base is no iteration, but what failed there (its
        // targets) failed earlier in the task all the same.
        if let (Some(start), Some(base)) = (self.start, self.merge_base) {
            let repo = store.repository();
            if start != base && git::is_ancestor(repo, base, start).unwrap_or(false) {
                if let Some(observed) =
                    store.find_observation(tree_of(repo, start)?, &fingerprint)?
                {
                    out.push((start, observed));
                }
            }
        }
        for earlier in before {
            let tree = tree_of(store.repository(), *earlier)?;
            if let Some(observed) = store.find_observation(tree, &fingerprint)? {
                out.push((*earlier, observed));
            }
        }
        Ok(out)
    }

    /// Which of the `earlier` iterations were VOID (by their records).
    pub fn void_iterations(
        store: &NotesStore,
        earlier: &[(Oid, Observation)],
    ) -> Result<Vec<Oid>, Failure> {
        let mut void = Vec::new();
        for (commit, _) in earlier {
            if store
                .read(*commit)?
                .is_some_and(|r| r.status == crate::model::Status::Void)
            {
                void.push(*commit);
            }
        }
        Ok(void)
    }

    /// The integrity findings a person accepted (`itergate accept`) on an iteration
    /// before `commit`: their acceptance carries over to the iterations after, where the
    /// same finding is shown as accepted instead of sent back again.
    pub fn accepted_findings(
        &self,
        store: &NotesStore,
        commit: Oid,
    ) -> Result<Vec<String>, Failure> {
        let before = match self.commits.iter().position(|c| *c == commit) {
            Some(at) => &self.commits[..at],
            None => &self.commits[..],
        };
        let mut keys = Vec::new();
        for earlier in before {
            let accepted = store
                .read_decisions(*earlier)?
                .iter()
                .any(|d| matches!(d.action, HumanAction::Accept { .. }));
            if !accepted {
                continue;
            }
            let Some(stored) = store.read_record(*earlier)? else {
                continue;
            };
            keys.extend(
                stored
                    .record
                    .issues
                    .iter()
                    .filter(|i| i.dimension == crate::signals::integrity::DIMENSION)
                    .filter(|i| i.severity.counts_for_revision())
                    .map(crate::signals::integrity::acceptance_key),
            );
        }
        Ok(keys)
    }

    /// Where this task started and what judges it, for `--format json`.
    pub fn report(&self, env: &Env) -> crate::engine::TaskReport {
        crate::engine::TaskReport {
            name: self.name.clone(),
            base: self.base_branch.clone(),
            start: self.start.map(|c| c.to_string()),
            rules_locked: env.rules.locked(),
            rules: match &env.rules {
                super::Rules::Locked(origin) => Some(origin.clone()),
                super::Rules::Named(path) => Some(path.display().to_string()),
                super::Rules::Unlocked => None,
            },
        }
    }

    pub fn iteration_of(&self, commit: Oid) -> u32 {
        let position = self
            .commits
            .iter()
            .position(|c| *c == commit)
            .map_or(self.commits.len(), |p| p + 1);
        u32::try_from(position.max(1)).unwrap_or(u32::MAX)
    }

    /// The recorded iterations, renumbered by position in the branch. A record judged
    /// against another base or configuration is judged again from the cached observations
    /// (no check runs); one whose observations are not cached is left out. A record this
    /// clone did not write (fetched, or by hand) is judged again from this clone's own
    /// observations when it has them, and otherwise shown as it is: history, never a cache.
    /// Unreadable notes are skipped with a warning.
    pub fn history(&self, env: &Env, store: &NotesStore) -> Result<History, Failure> {
        let key = record_key(env);
        let base = self.merge_base.map(|b| b.to_string());
        let mut records = Vec::new();
        for (index, commit) in self.commits.iter().enumerate() {
            let Some(stored) = store.read_record(*commit)? else {
                continue;
            };
            // A record judged in a changed environment is shown as it is (`run` judges it
            // again).
            let current = stored.fingerprint.is_none()
                || (stored
                    .fingerprint
                    .as_deref()
                    .and_then(|f| f.strip_suffix(UNSEALED_RECORD))
                    == Some(key.as_str())
                    && stored.base == base)
                || (stored.fingerprint.as_deref() == Some(key.as_str()) && stored.base == base);
            let record = if current && stored.trusted {
                Some(stored.record)
            } else if stored.trusted {
                self.judge_cached(env, store, *commit)?
            } else {
                let judged = self.judge_cached(env, store, *commit)?;
                judged.or_else(|| current.then_some(stored.record))
            };
            if let Some(record) = record {
                records.push((index, record));
            }
        }
        Ok(History::by_position(records))
    }

    /// The decision on `history` (this task's), with what people said and the base's record:
    /// the one sequence every command and mode runs before it reports.
    pub fn evaluate(
        &self,
        env: &Env,
        store: &NotesStore,
        history: &History,
    ) -> Result<Evaluation, Failure> {
        let feedback = self.feedback(store, history)?;
        let base = stored_base(env, store, self)?;
        evaluate_task(env, self, history, &feedback, base.as_ref())
    }

    /// What people decided on this task, as the engine reads it, given its recorded
    /// `history`. The decisions of each commit up to the latest recorded one are applied in
    /// order; each recorded iteration first clears what was said about the one before
    /// (acceptance, escalation, messages), as a new iteration of a pull request does.
    /// Decisions filed under commits after the latest recorded one wait for its record.
    pub fn feedback(&self, store: &NotesStore, history: &History) -> Result<Feedback, Failure> {
        let recorded: std::collections::HashSet<&str> =
            history.iter().map(|r| r.commit.0.as_str()).collect();
        let mut feedback = Feedback {
            surface: Surface::Local,
            ..Feedback::default()
        };
        let is_recorded = |c: &Oid| recorded.contains(c.to_string().as_str());
        let Some(last) = self.commits.iter().rposition(is_recorded) else {
            return Ok(feedback);
        };
        // An escalation `itergate loop` filed when a limit stopped it gives way to a person's
        // later budget: the person extended the limit that stopped it.
        let mut loop_escalated = false;
        for (index, commit) in self.commits[..=last].iter().enumerate() {
            if is_recorded(commit) {
                feedback.messages.clear();
                feedback.rejections.clear();
                feedback.accepted = false;
                feedback.escalation = None;
            }
            let iteration = u32::try_from(index + 1).unwrap_or(u32::MAX);
            for decision in store.read_decisions(*commit)? {
                apply_decision(&mut feedback, &decision, iteration);
                match decision.action {
                    HumanAction::Escalate { .. } => loop_escalated = decision.by == LOOP,
                    HumanAction::Budget { .. } if loop_escalated => {
                        feedback.escalation = None;
                        loop_escalated = false;
                    }
                    _ => {}
                }
            }
        }
        Ok(feedback)
    }

    /// `commit` judged against this task's base from cached observations only.
    fn judge_cached(
        &self,
        env: &Env,
        store: &NotesStore,
        commit: Oid,
    ) -> Result<Option<IterationRecord>, Failure> {
        let repo = store.repository();
        let fingerprint = fingerprint(&env.config);
        let Some(observed) = store.find_observation(tree_of(repo, commit)?, &fingerprint)? else {
            return Ok(None);
        };
        let base_observed = match self.merge_base.filter(|_| env.config.scoring.compare_base) {
            Some(base) => match store.find_observation(tree_of(repo, base)?, &fingerprint)? {
                Some(observed) => Some(observed),
                None => return Ok(None),
            },
            None => None,
        };
        let earlier = self.earlier_observations(env, store, commit)?;
        let void = Task::void_iterations(store, &earlier)?;
        let trusted_run = match self.start {
            Some(start) => {
                let start = super::trusted::Start {
                    commit: start,
                    merge_base: self.merge_base,
                    earlier: &earlier,
                };
                match super::trusted::cached(env, store, &start, commit, &observed)? {
                    super::trusted::Cached::Missing => return Ok(None),
                    super::trusted::Cached::Found(run) => Some(run),
                    super::trusted::Cached::NotNeeded => None,
                }
            }
            None => None,
        };
        let trusted = super::trusted::verdict(&env.config, trusted_run.as_ref());
        let accepted = self.accepted_findings(store, commit)?;
        let environment = crate::signals::environment::Unsealed {
            changes: super::sealed::task_drift(env, repo, self, commit)?.unexplained,
            measured: None,
        };
        let record = judge(
            &env.config,
            repo,
            &Judgement {
                commit,
                base: self.merge_base,
                iteration: self.iteration_of(commit),
                observed: &observed,
                base_observed: base_observed.as_ref(),
                earlier: &earlier,
                void: &void,
                accepted: &accepted,
                trusted: trusted.as_ref(),
                targets: &self.targets,
                environment: &environment,
            },
        )?;
        Ok(Some(record))
    }
}

/// Marks the record key of a record judged in an environment that changed since the task's
/// start: `status` shows it, `run` and the hook never reuse it.
const UNSEALED_RECORD: &str = "+unsealed";

/// What a commit's record depends on besides its tree and base: the checks and everything
/// that judges their results.
pub fn record_key(env: &Env) -> String {
    let config = &env.config;
    let material = serde_json::json!({
        "observation": fingerprint(config),
        "scoring": config.scoring,
        "detection": config.detection,
        "integrity": config.integrity,
        "requirements": config.requirements,
    });
    format!("{:x}", Sha256::digest(material.to_string().as_bytes()))
}

/// The task of `branch` (default: the current branch, or HEAD when detached).
pub fn current_task(env: &Env, repo: &Repository, branch: Option<&str>) -> Result<Task, Failure> {
    let (name, rev) = match branch {
        Some(b) => (b.to_string(), b.to_string()),
        None => match git::head_branch(repo)? {
            Some(b) => (b, "HEAD".to_string()),
            None => ("HEAD".to_string(), "HEAD".to_string()),
        },
    };
    let tip = git::resolve_commit(repo, &rev).map_err(|e| user(format!("{e:#}")))?;
    Task::locate(env, repo, &name, tip)
}

/// The repository the command runs in.
pub fn open_repository(env: &Env) -> Result<Repository, Failure> {
    git::open(&env.root).map_err(|e| user(format!("{e:#}")))
}

/// The notes store of the configured notes ref. Commands use one repository handle for
/// everything (`store.repository()`), so objects read once stay cached.
pub fn open_store<'r>(env: &Env, repo: &'r Repository) -> Result<NotesStore<'r>, Failure> {
    Ok(NotesStore::open(repo, Some(&env.config.hook.notes_ref))?)
}

/// The commit's record: reused when this clone judged it against this base with this
/// configuration, else judged from the cached observations (running the checks only for
/// a tree this clone has not observed, or on `rescore`). Returns the record and whether
/// checks ran. Notes this clone did not write are never reused here.
/// Whether `commit`'s record is cached for `task` (trusted, judged against its base with
/// this configuration): pushing it again would judge nothing.
pub fn is_cached(env: &Env, store: &NotesStore, task: &Task, commit: Oid) -> Result<bool, Failure> {
    Ok(cached_record(env, store, task, commit)?.is_some())
}

/// `commit`'s record when it is cached for `task` ([`is_cached`]).
fn cached_record(
    env: &Env,
    store: &NotesStore,
    task: &Task,
    commit: Oid,
) -> Result<Option<IterationRecord>, Failure> {
    let key = record_key(env);
    let base = task.merge_base.map(|b| b.to_string());
    Ok(store.read_record(commit)?.and_then(|stored| {
        let cached = stored.trusted
            && stored.fingerprint.as_deref() == Some(key.as_str())
            && stored.base == base;
        cached.then_some(stored.record)
    }))
}

pub fn record_commit(
    env: &Env,
    store: &NotesStore,
    task: &Task,
    commit: Oid,
    options: RecordOptions,
) -> Result<(IterationRecord, bool), Failure> {
    let key = record_key(env);
    let base = task.merge_base;
    if !options.rescore {
        if let Some(record) = cached_record(env, store, task, commit)? {
            // Re-pushing a commit already recorded: nothing to observe or write.
            return Ok((record, false));
        }
    }
    // An environment that changed since the start, unexplained: what is observed in it is
    // judged (VOID) but never cached, and its record is judged again next time.
    let drift = super::sealed::task_drift(env, store.repository(), task, commit)?;
    if drift.explained && task.start_recorded {
        super::sealed::advance(env, store, task, commit)?;
    }
    let mut environment = crate::signals::environment::Unsealed {
        changes: drift.unexplained,
        measured: None,
    };
    let unsealed;
    let (env, key) = if environment.is_empty() {
        (env, key)
    } else {
        // Measured again in the judge's own environment, where it can build one.
        let clean = task.environment.as_ref().map_or_else(
            || Err("the task's start kept no environment".to_string()),
            |start| {
                super::clean_env::build(
                    &env.root,
                    store.repository(),
                    commit,
                    start,
                    &environment.changes,
                    options.progress,
                )
            },
        );
        environment.measured = Some(match &clean {
            Ok(clean) => Measured::Rebuilt(clean.what.clone()),
            Err(why) => Measured::Unmeasured(why.clone()),
        });
        unsealed = Env {
            sealed: env.sealed.unsealed(),
            clean: clean.ok().map(std::sync::Arc::new),
            ..env.clone()
        };
        (&unsealed, format!("{key}{UNSEALED_RECORD}"))
    };
    // What the previous iteration failed is what tamper evidence compares with: a clone
    // that does not hold its observation (a new clone, a state directory made afresh, so
    // the notes' key is new) observes it again, once, when its record says tests failed.
    observe_the_previous(env, store, task, commit, options)?;
    // The start's tests judge the code: the recorded start's, so a spec committed on the
    // branch before the work is trusted like one on the base (and a spec an earlier
    // iteration added, as it failed there).
    let earlier = task.earlier_observations(env, store, commit)?;
    let starts = task.start.map(|start| super::trusted::Start {
        commit: start,
        merge_base: task.merge_base,
        earlier: earlier.as_slice(),
    });
    let observed_with_base =
        beside_the_starts_tests(env, store, (starts, commit), options.progress, || {
            observe_with_base(env, store, commit, base, options)
        })?;
    let (observed, ran, base_observed) = match observed_with_base {
        Err(Failure::Unrunnable(unrunnable)) if unrunnable.commit == commit => {
            super::unrunnable::observe_broken(env, store, task.start, base, unrunnable, options)?
        }
        other => other?,
    };
    if !ran && !environment.is_empty() {
        environment.measured = Some(Measured::Before);
    }
    let void = Task::void_iterations(store, &earlier)?;
    let trusted_run = match task.start {
        Some(start) => {
            let start = super::trusted::Start {
                commit: start,
                merge_base: task.merge_base,
                earlier: &earlier,
            };
            super::trusted::observe(env, store, &start, commit, &observed, options)?
        }
        None => None,
    };
    let trusted = super::trusted::verdict(&env.config, trusted_run.as_ref());
    let accepted = task.accepted_findings(store, commit)?;
    let mut record = judge(
        &env.config,
        store.repository(),
        &Judgement {
            commit,
            base,
            iteration: task.iteration_of(commit),
            observed: &observed,
            base_observed: base_observed.as_ref(),
            earlier: &earlier,
            void: &void,
            accepted: &accepted,
            trusted: trusted.as_ref(),
            targets: &task.targets,
            environment: &environment,
        },
    )?;
    mark_flaky(env, store, task, commit, &mut record)?;
    let fingerprint = fingerprint(&env.config);
    let tree = tree_of(store.repository(), commit)?;
    let mut notes = vec![Note::Record {
        commit,
        record: &record,
        fingerprint: &key,
        base,
    }];
    if ran && env.sealed.caches() {
        notes.push(Note::Observation {
            tree,
            observation: &observed,
            fingerprint: &fingerprint,
        });
    }
    store.write(&notes)?;
    Ok((record, ran))
}

/// The previous iteration of `commit` observed again when this clone holds no observation
/// of it that it can trust, and its record (history, which any clone reads) names failing
/// tests: otherwise what failed earlier in the task would be unknown, and a test rewritten
/// to pass, or code fitted to its values, would pass unseen.
fn observe_the_previous(
    env: &Env,
    store: &NotesStore,
    task: &Task,
    commit: Oid,
    options: RecordOptions,
) -> Result<(), Failure> {
    let Some(at) = task.commits.iter().position(|c| *c == commit) else {
        return Ok(());
    };
    let Some(previous) = at.checked_sub(1).map(|i| task.commits[i]) else {
        return Ok(());
    };
    let tree = tree_of(store.repository(), previous)?;
    if store
        .find_observation(tree, &fingerprint(&env.config))?
        .is_some()
    {
        return Ok(());
    }
    let failed = store.read_record(previous)?.is_some_and(|stored| {
        stored
            .record
            .issues
            .iter()
            .any(|i| crate::engine::grouping::failed_test(i).is_some())
    });
    if !failed {
        return Ok(());
    }
    let label = format!("the previous iteration {}", short(previous));
    cached_observation(env, store, previous, Some(&label), options)?;
    Ok(())
}

/// Runs `observe` (the commit's checks, and the base's) while the start's tests run on the
/// commit's code (the trusted run, [`super::trusted::predicted`]) when the change touched
/// tests and that run is not cached yet: an iteration after a test edit then costs about one
/// run of the checks, not two. The trusted run's observation is cached, where the trusted
/// verdict finds it; if it could not run, the verdict runs it again and says why.
fn beside_the_starts_tests<T>(
    env: &Env,
    store: &NotesStore,
    (start, commit): (Option<super::trusted::Start>, Oid),
    progress: Progress,
    observe: impl FnOnce() -> T,
) -> Result<T, Failure> {
    let repo = store.repository();
    // The trusted run builds apart from the commit's: Cargo in a target directory of its
    // own (`app::scratch`, kept warm between runs), Maven and Gradle inside each checkout.
    let plan = match start {
        Some(start) if env.sealed.caches() && env.jobs.count() >= 2 => {
            super::trusted::predicted(env, repo, &start, commit)?
        }
        _ => None,
    };
    let Some(plan) = plan else {
        return Ok(observe());
    };
    // Cached already (the trusted tree is often an earlier iteration's own, whose note
    // must not be replaced).
    if super::trusted::found(env, store, &plan)?.is_some() {
        return Ok(observe());
    }
    let (observed, trusted) = std::thread::scope(|scope| {
        let trusted = scope.spawn(|| {
            let repo = open_repository(&plan.env)?;
            let request = ObserveRequest {
                commit: plan.commit,
                in_place: false,
                progress,
                label: Some(super::trusted::LABEL),
            };
            super::observe::observe(&plan.env, &repo, &request)
        });
        let observed = observe();
        (observed, trusted.join())
    });
    if let Ok(Ok(observation)) = trusted {
        store.write(&[Note::Observation {
            tree: plan.tree,
            observation: &observation,
            fingerprint: &fingerprint(&plan.env.config),
        }])?;
    }
    Ok(observed)
}

/// The observations of `commit` (and whether its checks ran) and of the task's base. A
/// base not observed yet is checked in its scratch worktree at the same time as the commit,
/// when the machine has a core for it: the first decision on a branch costs about one run
/// of the checks, not two. `rescore` re-runs the iteration's checks; the base's stand.
fn observe_with_base(
    env: &Env,
    store: &NotesStore,
    commit: Oid,
    base: Option<Oid>,
    options: RecordOptions,
) -> Result<(Observation, bool, Option<Observation>), Failure> {
    let Some(base) = base.filter(|_| env.config.scoring.compare_base) else {
        let (observed, ran) = observation_of(env, store, commit, None, options)?;
        return Ok((observed, ran, None));
    };
    let label = format!("base {}", short(base));
    let base_options = RecordOptions {
        rescore: false,
        ..options
    };
    let fingerprint = fingerprint(&env.config);
    let repo = store.repository();
    adopt_fetched_base(env, store, base, &fingerprint, options.progress)?;
    let base_cached = store.find_observation(tree_of(repo, base)?, &fingerprint)?;
    let head_cached = !options.rescore
        && store
            .find_observation(tree_of(repo, commit)?, &fingerprint)?
            .is_some();
    if base_cached.is_some() || head_cached || env.jobs.count() < 2 {
        let (observed, ran) = observation_of(env, store, commit, None, options)?;
        let base_observed = cached_observation(env, store, base, Some(&label), base_options)?;
        return Ok((observed, ran, Some(base_observed)));
    }
    let (head, beside) = std::thread::scope(|scope| {
        let beside = scope.spawn(|| {
            let repo = open_repository(env)?;
            let request = ObserveRequest {
                commit: base,
                in_place: false,
                progress: base_options.progress,
                label: Some(&label),
            };
            observe(env, &repo, &request)
        });
        let head = observation_of(env, store, commit, None, options);
        let beside = beside
            .join()
            .unwrap_or_else(|_| Err(anyhow::anyhow!("the base's checks panicked").into()));
        (head, beside)
    });
    // Nothing is recorded when either could not run ("Nothing was recorded" means it).
    let (observed, ran) = head?;
    let base_observed = beside?;
    if env.sealed.caches() {
        store.write(&[Note::Observation {
            tree: tree_of(repo, base)?,
            observation: &base_observed,
            fingerprint: &fingerprint,
        }])?;
    }
    Ok((observed, ran, Some(base_observed)))
}

/// With `scoring.trust_fetched_base`, a base this clone has not observed takes the
/// observation a fetched note holds for its tree (same checks, same itergate), kept from then
/// on as this clone's own: the first decision on a fresh clone costs one run of the checks.
fn adopt_fetched_base(
    env: &Env,
    store: &NotesStore,
    base: Oid,
    fingerprint: &str,
    progress: Progress,
) -> Result<(), Failure> {
    if !env.config.scoring.trust_fetched_base {
        return Ok(());
    }
    let tree = tree_of(store.repository(), base)?;
    if store.find_observation(tree, fingerprint)?.is_some() {
        return Ok(());
    }
    let Some(observed) = store.find_fetched_observation(tree, fingerprint)? else {
        return Ok(());
    };
    if progress != Progress::Quiet {
        eprintln!(
            "itergate: the base {} was not checked here: its observation comes from the fetched notes (scoring.trust_fetched_base)",
            short(base)
        );
    }
    store.write(&[Note::Observation {
        tree,
        observation: &observed,
        fingerprint,
    }])?;
    Ok(())
}

/// The base as a whole-tree record, for the decision's baseline comparison; from its cached
/// observation only (never runs a check).
pub fn stored_base(
    env: &Env,
    store: &NotesStore,
    task: &Task,
) -> Result<Option<IterationRecord>, Failure> {
    let Some(base) = task.merge_base.filter(|_| env.config.scoring.compare_base) else {
        return Ok(None);
    };
    let tree = tree_of(store.repository(), base)?;
    let Some(observed) = store.find_observation(tree, &fingerprint(&env.config))? else {
        return Ok(None);
    };
    Ok(Some(whole_tree_record(&env.config, base, &observed)))
}

/// Marks failures that flip across iterations without related changes as flaky.
fn mark_flaky(
    env: &Env,
    store: &NotesStore,
    task: &Task,
    commit: Oid,
    record: &mut IterationRecord,
) -> Result<(), Failure> {
    let Some(index) = task
        .commits
        .iter()
        .position(|c| *c == commit)
        .filter(|i| *i > 0)
    else {
        return Ok(());
    };
    let earlier = Task {
        tip: task.commits[index - 1],
        commits: task.commits[..index].to_vec(),
        ..task.clone()
    }
    .history(env, store)?;
    let touched = git::added_lines(store.repository(), Some(task.commits[index - 1]), commit)?;
    let count =
        crate::signals::flaky::mark(record, &earlier, &|path| touched.files.contains_key(path));
    if count > 0 {
        tracing::info!(count, "marked flaky test failures");
    }
    Ok(())
}

pub fn short(oid: Oid) -> String {
    oid.to_string().chars().take(7).collect()
}

/// Who `itergate loop`'s own decisions are filed as.
pub const LOOP: &str = "itergate loop";

/// Where the decisions about a loop's task that went back to its start are kept: the
/// branch's own (two branches may start at one commit), read from when the task started.
fn start_decisions(store: &NotesStore, branch: &str) -> Result<Vec<HumanDecision>, Failure> {
    let Some(start) = store.read_task_start(branch)?.filter(|s| !s.ended) else {
        return Ok(Vec::new());
    };
    let object = crate::history::notes::start_key(branch);
    Ok(store
        .read_decisions(object)
        .map_err(Failure::Internal)?
        .into_iter()
        .filter(|d| d.at >= start.at)
        .collect())
}

/// The reason of the escalation the loop filed when it took `branch` back to its task's
/// start, unless a person decided after it.
pub fn waiting_at(store: &NotesStore, branch: &str) -> Result<Option<String>, Failure> {
    let mut escalated = None;
    for decision in start_decisions(store, branch)? {
        match decision.action {
            HumanAction::Escalate { reason } if decision.by == LOOP => {
                escalated = Some(reason.unwrap_or_else(|| "escalated".into()));
            }
            HumanAction::Feedback { .. } => {}
            _ => escalated = None,
        }
    }
    Ok(escalated)
}

/// What people said after the loop's last escalation at `branch`'s task start (guidance
/// and feedback, signed): what a task that went back to its start carries into its next
/// first prompt.
pub fn guidance_at(store: &NotesStore, branch: &str) -> Result<Vec<String>, Failure> {
    let mut said = Vec::new();
    for decision in start_decisions(store, branch)? {
        match &decision.action {
            HumanAction::Escalate { .. } if decision.by == LOOP => said.clear(),
            HumanAction::Adjust { guidance: text } | HumanAction::Feedback { text } => {
                said.push(format!("{} (local): {text}", decision.by));
            }
            _ => {}
        }
    }
    Ok(said)
}

/// One person's decision given at `iteration`, with the meaning of the pull request's
/// command of the same name; the words of feedback and guidance name their author, so the
/// revision prompt says whose words they are. A later escalation takes back an earlier
/// accept, and the other way round.
fn apply_decision(feedback: &mut Feedback, decision: &HumanDecision, iteration: u32) {
    let signed = |text: &str| format!("{} (local): {text}", decision.by);
    match &decision.action {
        HumanAction::Accept { .. } => {
            feedback.accepted = true;
            feedback.accepted_by = Some(decision.by.clone());
            feedback.escalation = None;
        }
        HumanAction::Escalate { reason } => {
            feedback.accepted = false;
            feedback.escalation = Some(reason.clone().unwrap_or_default());
            feedback.escalated_by = [LOOP, super::context::ESCALATED_BY]
                .iter()
                .all(|own| decision.by != *own)
                .then(|| decision.by.clone());
        }
        HumanAction::Adjust { guidance } => {
            feedback.accepted = false;
            feedback.escalation = None;
            feedback.restart_after = Some(iteration);
            feedback.messages.push(signed(guidance));
        }
        HumanAction::Feedback { text } => feedback.messages.push(signed(text)),
        // More iterations for the task; given after the loop's own escalation (a stall),
        // it lifts it and the revision rounds start over. A person's escalation stays.
        HumanAction::Budget { iterations } => {
            feedback.max_iterations = Some(*iterations);
            if feedback.escalation.is_some() && feedback.escalated_by.is_none() {
                feedback.escalation = None;
                feedback.restart_after = Some(iteration);
            }
        }
    }
    feedback.bound();
}

/// The decision on a task's history and what people decided about it, with the trajectory
/// behind it.
pub fn evaluate_task(
    env: &Env,
    task: &Task,
    history: &History,
    feedback: &Feedback,
    baseline: Option<&IterationRecord>,
) -> Result<Evaluation, Failure> {
    evaluate(&EvaluateInput {
        task_id: &task.name,
        config: &env.config,
        history,
        feedback,
        baseline,
        now: Utc::now(),
    })
}
