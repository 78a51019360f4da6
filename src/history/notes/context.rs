//! The `CONTEXT_GAP_REPORT` rounds answered on a branch (`itergate context`), kept like the
//! decisions people take ([`super::decisions`]): the note of their own object, the id `git
//! hash-object` gives the text `itergate context <commit>\n` ([`context_key`]), filed under
//! the iteration the reports were about. A new iteration starts at round 0 again.
//!
//! The note is an append-only log `{"version":2,"kind":"context","commit":"<oid>",
//! "rounds":[{"round":1,"kind":"delivery","items":2,"delivered":1,"escalated":false,
//! "at":"..."}]}`, oldest first; it holds counts, never what was asked or delivered. On a
//! fetch conflict the local log wins, as for records: a round counted twice in two clones
//! only brings the cap nearer.

use anyhow::{anyhow, bail, Context, Result};
use chrono::{DateTime, Utc};
use git2::{ObjectType, Oid};
use serde::{Deserialize, Serialize};

use super::ENVELOPE_VERSION;
use crate::context::{ContextUse, Reply, ReplyKind};

/// The envelope's `kind`.
pub const CONTEXT_KIND: &str = "context";

/// One answered report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextRound {
    /// The round the report was (0: ready at once).
    pub round: u32,
    pub kind: ReplyKind,
    /// Items asked for, and delivered.
    pub items: usize,
    pub delivered: usize,
    pub escalated: bool,
    pub at: DateTime<Utc>,
}

impl ContextRound {
    pub fn of(reply: &Reply, at: DateTime<Utc>) -> ContextRound {
        ContextRound {
            round: reply.round,
            kind: reply.kind,
            items: reply.items.len(),
            delivered: reply.items.iter().filter(|i| i.refused.is_none()).count(),
            escalated: reply.escalates(),
            at,
        }
    }
}

/// What a log comes to for iteration `iteration`.
pub fn context_use(iteration: u32, log: &[ContextRound]) -> ContextUse {
    let mut usage = ContextUse {
        iteration,
        ..ContextUse::default()
    };
    for round in log {
        usage.add(round.kind, round.round);
    }
    usage
}

#[derive(Debug, Serialize, Deserialize)]
struct ContextEnvelope {
    version: u32,
    kind: String,
    commit: String,
    rounds: Vec<ContextRound>,
}

/// The object whose note holds `commit`'s context rounds.
pub fn context_key(commit: Oid) -> Oid {
    let text = format!("itergate context {commit}\n");
    // Hashing bytes in memory cannot fail for a valid object type.
    Oid::hash_object(ObjectType::Blob, text.as_bytes()).unwrap_or(Oid::ZERO_SHA1)
}

pub(super) fn envelope_json(commit: Oid, rounds: &[ContextRound]) -> Result<String> {
    let envelope = ContextEnvelope {
        version: ENVELOPE_VERSION,
        kind: CONTEXT_KIND.into(),
        commit: commit.to_string(),
        rounds: rounds.to_vec(),
    };
    serde_json::to_string(&envelope).context("serialising the context note")
}

/// Parses the context note found under `key`, checking it is about the commit `key` names.
pub(super) fn parse_keyed(key: Oid, bytes: &[u8]) -> Result<Vec<ContextRound>> {
    let value: serde_json::Value = serde_json::from_slice(bytes).context("not JSON")?;
    if value.get("kind").and_then(|k| k.as_str()) != Some(CONTEXT_KIND) {
        bail!("not a context note");
    }
    if let Some(version) = value.get("version").and_then(|v| v.as_u64()) {
        if version > u64::from(ENVELOPE_VERSION) {
            bail!("written by a newer itergate (envelope version {version})");
        }
    }
    let envelope: ContextEnvelope =
        serde_json::from_value(value).context("not a context envelope")?;
    let commit = Oid::from_str(&envelope.commit)
        .map_err(|_| anyhow!("`{}` is not a commit id", envelope.commit))?;
    if context_key(commit) != key {
        bail!("the note names commit {commit}, which is not the one it is filed under");
    }
    Ok(envelope.rounds)
}
