//! Deciding: the one place every mode turns a task's history into a decision. The engine
//! is pure; this gives it its inputs the same way for the hook, `run`, `status`, CI and the
//! App, and names the task in its errors.

use chrono::{DateTime, Utc};

use crate::config::Config;
use crate::engine::{self, DecideInput, Feedback};

pub use crate::engine::Evaluation;
use crate::model::IterationRecord;

use super::{user, Failure};

/// Everything a decision looks at.
pub struct EvaluateInput<'a> {
    pub task_id: &'a str,
    pub config: &'a Config,
    /// The task's iterations, oldest first, numbered from 1.
    pub history: &'a [IterationRecord],
    pub feedback: &'a Feedback,
    /// The base as a whole, for the baseline comparison.
    pub baseline: Option<&'a IterationRecord>,
    pub now: DateTime<Utc>,
}

pub fn evaluate(input: &EvaluateInput) -> Result<Evaluation, Failure> {
    engine::evaluate(&DecideInput {
        task_id: input.task_id,
        config: input.config,
        history: input.history,
        feedback: input.feedback,
        baseline: input.baseline,
        now: input.now,
    })
    .map_err(|e| user(format!("{}: {e}", input.task_id)))
}
