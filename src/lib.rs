//! itergate: every commit of a branch or pull request is one iteration of a piece of work;
//! score it, decide whether it needs another, and say so where people and agents look.
//! See ARCHITECTURE.md for the map.

pub mod agent;
pub mod analytics;
pub mod app;
pub mod cli;
pub mod commands;
pub mod comment;
pub mod config;
pub mod context;
pub mod engine;
pub mod git;
pub mod github;
pub mod history;
pub mod hook;
pub mod lock;
pub mod markup;
pub mod model;
pub mod prompt;
pub mod render;
pub mod serve;
pub mod signals;
pub mod state_dir;
pub mod summary;
