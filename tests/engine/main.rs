//! The decision engine, in one test binary: property tests, the rules of the seeds, scoring,
//! and agent-like scenarios on real repositories.

#[path = "../common/mod.rs"]
mod common;
#[path = "../gitrepo/mod.rs"]
mod gitrepo;

mod integrity;

mod props;
mod rules;
mod scenarios;
mod scoring;
