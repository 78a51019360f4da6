//! Signals: what a commit says about itself. Run the configured checks, read their reports,
//! read the commit's trailers, and score it into an `IterationRecord`.

pub mod checks;
pub mod classify;
pub mod detect;
pub mod diagnostics;
pub mod environment;
pub mod flaky;
pub mod harness;
pub mod installed;
pub mod integrity;
pub mod markers;
pub mod observation;
pub mod paths;
pub mod report;
pub mod score;
pub mod trailers;
pub mod tree_file;
