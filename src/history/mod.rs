//! Where a task's iteration history comes from: a file (JSON/YAML), and later git notes and
//! the sticky PR comment.

pub mod file;
pub mod notes;
