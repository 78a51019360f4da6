//! GitHub, in one test binary: `itergate ci` end to end, the client against the fake GitHub
//! that checks every request against GitHub's OpenAPI description, the sticky comment,
//! commands and reviews, the trust rules, and the handler over an in-memory forge.

#[path = "../fake_github/mod.rs"]
mod fake_github;
#[path = "../gitrepo/mod.rs"]
mod gitrepo;
#[path = "../redact/mod.rs"]
mod redact;
// What detection sees is the test's, not the machine's (the optional tools hidden).
#[path = "../tools/mod.rs"]
mod tools;

mod ci;
mod commands;
mod effects;
mod events;
mod forge;
mod handler;
mod sticky;
mod trust;
mod units;
