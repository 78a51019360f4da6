//! GitHub: everything itergate says and reads on a pull request.
//!
//! This layer owns the conversation with GitHub and nothing else: it never decides (that is
//! [`crate::engine`] through [`crate::app`]) and never renders templates (that is
//! [`crate::render`]). It is built so that GitHub Actions mode (`itergate ci`) and the GitHub
//! App share all of it: an adapter turns its input into an [`events::Event`], and the pull
//! request flow ([`crate::app::pull_request`]) acts on it through a [`forge::Forge`].
//!
//! - [`types`]: the newtypes and the small records the rest speaks in (`RepoName`,
//!   `PrNumber`, `CommentId`, `Comment`, `PullRequest`, check runs, annotations).
//! - [`forge`]: the `Forge` trait (the GitHub operations itergate needs) and `ForgeError`.
//! - [`client`]: `OctocrabForge`, the `Forge` over octocrab: base URL from `GITHUB_API_URL`,
//!   token from `GITHUB_TOKEN`, retries with backoff ([`retry`]) on 5xx, timeouts and rate
//!   limits; check-run annotations in batches of 50 and outputs cut to GitHub's limits
//!   ([`checks`]); artifact download and unzip ([`artifact`]).
//! - [`sticky`]: the one sticky PR comment: its hidden marker and its hidden state (the PR's
//!   iteration history), trusted only in the bot's own comment; escaping and fencing of
//!   untrusted text so it can never forge or break either.
//! - [`commands`]: the `/iterate` grammar and permission levels (an agent's
//!   `CONTEXT_GAP_REPORT` is read by [`crate::context::parse`]: it is not GitHub's).
//! - [`compare`]: the change between two commits from GitHub's compare API, read into the
//!   lines a local diff gives (for the side that publishes without a checkout).
//! - [`events`]: normalized events from webhook payloads, deserialized tolerantly.
//!
//! A typical Actions run: `events::parse_event(name, payload)` →
//! `OctocrabForge::new(ForgeSettings::from_env())?` → `forge.identity()` →
//! `forge.list_comments(..)` → `sticky::load_state(&comments, &identity.login)` → apply the
//! comment's `commands::parse_comment(body)` (after `forge.permission(..)` for those that
//! `changes_state()`) → decide → `sticky::render_body(visible, &state)` →
//! `sticky::upsert(&forge, ..)`.
//!
//! Tests: `tests/github_*.rs` against the fake GitHub of `tests/fake_github/`.

pub mod app_auth;
pub mod artifact;
pub mod checks;
pub mod client;
pub mod commands;
pub mod compare;
pub mod events;
pub mod forge;
pub mod retry;
pub mod sticky;
pub mod types;

pub use client::{ForgeSettings, OctocrabForge};
pub use forge::{Forge, ForgeError};
pub use types::{CommentId, PrNumber, RepoName};
