//! Fuzzes the PR-comment readers: any text must give a list of commands or errors and at
//! most one context gap report, never a panic or a hang.
#![no_main]

use itergate::context::parse_gap_report;
use itergate::github::commands::parse_comment;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let body = String::from_utf8_lossy(data);
    for command in parse_comment(&body).into_iter().flatten() {
        let _ = command.changes_state();
    }
    let _ = parse_gap_report(&body);
});
