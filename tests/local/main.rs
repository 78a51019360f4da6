//! The local loop, in one test binary: the CLI, the configuration, git notes, the pre-push
//! hook (real pushes to a bare remote), local decisions, scoring commits end to end, the
//! terminal, scratch worktrees, and the Action's install script.

#[path = "../gitrepo/mod.rs"]
mod gitrepo;
#[path = "../redact/mod.rs"]
mod redact;
#[path = "../tools/mod.rs"]
mod tools;

mod action_install;
mod adoption;
mod agent_loop;
mod agent_sandbox;
mod check_scripts;
mod clean_checkout;
mod cli;
mod config;
mod ecosystems;
mod git_notes;
mod hook_install;
mod hook_push;
mod init_detect;
mod local_decisions;
mod locked_harness;
mod markers;
mod node_tools;
mod prompt_hygiene;
mod score_e2e;
mod scratch_isolation;
mod sealed_environment;
mod spec_first;
mod terminal;
mod work_tree;
