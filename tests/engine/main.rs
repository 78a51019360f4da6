//! The decision engine, in one test binary: property tests, the rules of the seeds, scoring,
//! and agent-like scenarios on real repositories.

#[path = "../common/mod.rs"]
mod common;
// What detection sees is the test's, not the machine's (the optional tools hidden).
#[path = "../gitrepo/mod.rs"]
mod gitrepo;
#[path = "../tools/mod.rs"]
mod tools;

mod integrity;

mod props;
mod rules;
mod scenarios;
mod scoring;
mod typed;
