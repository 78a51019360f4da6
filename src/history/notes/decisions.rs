//! Decisions people take on a branch at the terminal — `itergate accept`, `escalate`,
//! `adjust`, `feedback`, `budget` — kept in the notes ref with the branch's records, so they
//! travel with `itergate notes push`/`fetch` like the history they are about.
//!
//! # Where they live
//!
//! A commit's note is its record, and git keeps one note per object and notes ref; that
//! note is rewritten whenever this clone judges the commit again, trusted only with this
//! clone's MAC, and on a fetch conflict the local one wins. Decisions must survive all of
//! that, so they are the note of their own object: the id `git hash-object` gives the text
//! `itergate decisions <commit>\n` ([`decisions_key`]). Nothing needs that object to exist
//! (a notes tree names objects, it does not hold them); `git notes prune` would drop such
//! notes, so do not run it on `refs/notes/itergate`. To look at them by hand:
//! `git notes --ref itergate show $(printf 'itergate decisions %s\n' <commit> | git hash-object --stdin)`.
//!
//! The note is an envelope `{"version":2,"kind":"decisions","commit":"<oid>",
//! "decisions":[{"action":"accept","reason":"...","by":"Ada","email":"...","at":"..."}]}`:
//! an append-only log of the decisions given while that commit was the branch's latest
//! recorded iteration, oldest first. Appending reads the log under the notes lock, so two
//! people (or agents) deciding at once both keep their decision. When a fetch finds that a
//! teammate's log of the same commit differs from ours, the two are unioned (sorted by time,
//! duplicates once) before git merges the rest ([`union`]).
//!
//! # Whose decisions count
//!
//! Everyone's. Unlike records and observations (only this clone's notes are a cache),
//! decisions are history: a teammate's `itergate accept`, fetched with `itergate notes
//! fetch`, accepts the iteration here too, as a maintainer's `/iterate accept` does for
//! everyone looking at a pull request. Each decision names who gave it (`git config
//! user.name`), and the local gate is advisory anyway: whoever can write this clone's notes
//! could also push with `--no-verify`. An unreadable log is skipped with one warning and
//! never breaks a command; a log whose `commit` is not the one its key names is unreadable.

use anyhow::{anyhow, bail, Context, Result};
use chrono::{DateTime, Utc};
use git2::{ObjectType, Oid};
use serde::{Deserialize, Serialize};

use super::ENVELOPE_VERSION;

/// The envelope's `kind`.
pub const DECISIONS_KIND: &str = "decisions";

/// One decision a person took on a branch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HumanDecision {
    #[serde(flatten)]
    pub action: HumanAction,
    /// Who decided: `git config user.name` of the clone it was given in.
    pub by: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    pub at: DateTime<Utc>,
}

/// What was decided; the meaning is that of the pull request's `/iterate` commands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum HumanAction {
    /// Proceed with the iteration as it is.
    Accept {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// Call a human.
    Escalate {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// Change the approach: the revision count starts again after this iteration.
    Adjust { guidance: String },
    /// Words for the next iteration (`explicit_feedback`).
    Feedback { text: String },
    /// Allow up to this many iterations.
    Budget { iterations: u32 },
}

impl HumanAction {
    /// The command that gives it.
    pub fn command(&self) -> &'static str {
        match self {
            HumanAction::Accept { .. } => "itergate accept",
            HumanAction::Escalate { .. } => "itergate escalate",
            HumanAction::Adjust { .. } => "itergate adjust",
            HumanAction::Feedback { .. } => "itergate feedback",
            HumanAction::Budget { .. } => "itergate budget",
        }
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct DecisionsEnvelope {
    version: u32,
    kind: String,
    commit: String,
    decisions: Vec<HumanDecision>,
}

/// The object whose note holds `commit`'s decisions.
pub fn decisions_key(commit: Oid) -> Oid {
    let text = format!("itergate decisions {commit}\n");
    // Hashing bytes in memory cannot fail for a valid object type.
    Oid::hash_object(ObjectType::Blob, text.as_bytes()).unwrap_or(Oid::ZERO_SHA1)
}

/// The note text (unsigned) of `commit`'s decisions.
pub(super) fn envelope_json(commit: Oid, decisions: &[HumanDecision]) -> Result<String> {
    let envelope = DecisionsEnvelope {
        version: ENVELOPE_VERSION,
        kind: DECISIONS_KIND.into(),
        commit: commit.to_string(),
        decisions: decisions.to_vec(),
    };
    serde_json::to_string(&envelope).context("serialising the decisions note")
}

/// Parses a decisions note: the commit it is about and its log.
pub fn parse_decisions(bytes: &[u8]) -> Result<(Oid, Vec<HumanDecision>)> {
    let value: serde_json::Value = serde_json::from_slice(bytes).context("not JSON")?;
    if value.get("kind").and_then(|k| k.as_str()) != Some(DECISIONS_KIND) {
        bail!("not a decisions note");
    }
    if let Some(version) = value.get("version").and_then(|v| v.as_u64()) {
        if version > u64::from(ENVELOPE_VERSION) {
            bail!(
                "written by a newer itergate (envelope version {version}, this one reads up to {ENVELOPE_VERSION})"
            );
        }
    }
    let envelope: DecisionsEnvelope =
        serde_json::from_value(value).context("not a decisions envelope")?;
    let commit = Oid::from_str(&envelope.commit)
        .map_err(|_| anyhow!("`{}` is not a commit id", envelope.commit))?;
    Ok((commit, envelope.decisions))
}

/// Parses the decisions note found under `key`, checking it is about the commit `key` names.
pub(super) fn parse_keyed(key: Oid, bytes: &[u8]) -> Result<(Oid, Vec<HumanDecision>)> {
    let (commit, decisions) = parse_decisions(bytes)?;
    if decisions_key(commit) != key {
        bail!("the note names commit {commit}, which is not the one it is filed under");
    }
    Ok((commit, decisions))
}

/// Two logs of one commit as one: every decision once, oldest first (ties in a stable,
/// content-based order, so both clones get the same log).
pub fn union(ours: &[HumanDecision], theirs: &[HumanDecision]) -> Vec<HumanDecision> {
    let mut all: Vec<(DateTime<Utc>, String, HumanDecision)> = ours
        .iter()
        .chain(theirs)
        .map(|d| {
            let text = serde_json::to_string(d).unwrap_or_default();
            (d.at, text, d.clone())
        })
        .collect();
    all.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    all.dedup_by(|a, b| a.1 == b.1);
    all.into_iter().map(|(_, _, d)| d).collect()
}
