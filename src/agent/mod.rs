//! Coding agents as processes, for `itergate loop`: the presets (how each CLI takes its
//! prompt and reports what it used), one run of an agent under a wall clock, and its usage
//! read from its own output. Nothing here decides: the loop judges what the agent left.

pub mod preset;
pub mod process;
pub mod sandbox;
pub mod usage;

pub use preset::{AgentCommand, PromptInput, PRESETS};
pub use process::{run_agent, AgentExit, AgentRun};
pub use usage::{CostSource, Usage, UsageFormat};
