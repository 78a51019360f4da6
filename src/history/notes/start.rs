//! Where a task that `itergate loop` drives started, and what it set out to fix: the note of
//! its own object (the id `git hash-object` gives the text `itergate start <branch>\n`,
//! [`start_key`]), `{"version":2,"kind":"start","branch":"…","commit":"<oid>",
//! "targets":["tests/test_x.py::test_y"],"task":"…","ended":false,"at":"…"}`.
//!
//! The start is the commit HEAD was at before the first agent ran; its failing tests are the
//! task's **targets**: never the base's debt, and absent or failing they keep the task from
//! being accepted. On the base branch the start is also where the task's iterations count
//! from. Only a note this clone wrote (its MAC verifies) is read: an agent runs as the same
//! user, but what it writes to the notes ref during its run is undone, and a fetched note
//! never sets a task's targets.

use anyhow::{anyhow, bail, Context, Result};
use chrono::{DateTime, Utc};
use git2::{ObjectType, Oid};
use serde::{Deserialize, Serialize};

use super::ENVELOPE_VERSION;

/// The envelope's `kind`.
pub const START_KIND: &str = "start";

/// A task's recorded start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskStart {
    pub branch: String,
    /// The commit HEAD was at before the first agent ran.
    pub commit: String,
    /// The tests failing there (their ids): what the task must make pass.
    pub targets: Vec<String>,
    /// The task's first line, as given to the agent; empty for a start `itergate run` or
    /// the hook recorded (a branch's work, not a loop's task).
    #[serde(default)]
    pub task: String,
    /// The fingerprint of the configuration in force at the start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rules: Option<String>,
    /// The task was accepted: the note is history, and a new loop starts a new task.
    #[serde(default)]
    pub ended: bool,
    /// The commit the task's change was judged against when it started (the merge-base
    /// with the base branch): pinned, so a later commit on the local base branch, merged
    /// into the task's branch, is judged as the branch's change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,
    /// What the checks executed besides the commit where the task started (the sealed
    /// environment); absent in a note an older itergate wrote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<crate::signals::environment::Fingerprint>,
    /// The iteration whose environment `environment` is, when a later one than the start:
    /// a change a committed manifest explained moves the reference there, so the next
    /// change is explained only by what was committed after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment_at: Option<String>,
    pub at: DateTime<Utc>,
}

impl TaskStart {
    /// Recorded by `itergate loop` (it names the task it gave the agent).
    pub fn is_loop(&self) -> bool {
        !self.task.is_empty()
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct StartEnvelope {
    version: u32,
    kind: String,
    #[serde(flatten)]
    start: TaskStart,
}

/// The object whose note holds `branch`'s task start.
pub fn start_key(branch: &str) -> Oid {
    let text = format!("itergate start {branch}\n");
    // Hashing bytes in memory cannot fail for a valid object type.
    Oid::hash_object(ObjectType::Blob, text.as_bytes()).unwrap_or(Oid::ZERO_SHA1)
}

pub(super) fn envelope_json(start: &TaskStart) -> Result<String> {
    let envelope = StartEnvelope {
        version: ENVELOPE_VERSION,
        kind: START_KIND.into(),
        start: start.clone(),
    };
    serde_json::to_string(&envelope).context("serialising the start note")
}

/// Parses the start note found under `key`, checking it is about the branch `key` names.
pub(super) fn parse_keyed(key: Oid, bytes: &[u8]) -> Result<TaskStart> {
    let value: serde_json::Value = serde_json::from_slice(bytes).context("not JSON")?;
    if value.get("kind").and_then(|k| k.as_str()) != Some(START_KIND) {
        bail!("not a start note");
    }
    if let Some(version) = value.get("version").and_then(|v| v.as_u64()) {
        if version > u64::from(ENVELOPE_VERSION) {
            bail!("written by a newer itergate (envelope version {version})");
        }
    }
    let envelope: StartEnvelope = serde_json::from_value(value).context("not a start envelope")?;
    if start_key(&envelope.start.branch) != key {
        bail!(
            "the note names branch `{}`, which is not the one it is filed under",
            envelope.start.branch
        );
    }
    Oid::from_str(&envelope.start.commit)
        .map_err(|_| anyhow!("`{}` is not a commit id", envelope.start.commit))?;
    Ok(envelope.start)
}
