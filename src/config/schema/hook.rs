//! `hook`: the gate the pre-push hook applies, what a check error does, how it scores.

use serde::{Deserialize, Serialize};

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Gate {
    /// Never block a push.
    #[default]
    Warn,
    BlockOnEscalate,
    BlockOnIterate,
}

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum OnError {
    #[default]
    Allow,
    Block,
}

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum ScoreMode {
    /// Score only the pushed tip.
    #[default]
    Tip,
    /// Score every new commit, oldest first.
    Each,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Hook {
    /// Base branch; default: the remote's HEAD branch, else `main`, else `master`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,
    /// What the pre-push hook does with a decision: `warn` never blocks;
    /// `block-on-escalate` or `block-on-iterate` refuse the push at that decision or worse.
    pub gate: Gate,
    /// What an internal error does to the push: `allow` (fail open, loudly) or `block`.
    pub on_error: OnError,
    /// `tip`: judge the pushed branch's tip; `each`: every pushed commit in turn.
    pub score: ScoreMode,
    /// The notes ref that holds the iteration records.
    pub notes_ref: String,
    /// Score pushed tags too.
    pub tags: bool,
}

impl Default for Hook {
    fn default() -> Self {
        Hook {
            base: None,
            gate: Gate::Warn,
            on_error: OnError::Allow,
            score: ScoreMode::Tip,
            notes_ref: "refs/notes/itergate".into(),
            tags: false,
        }
    }
}
