//! Fuzzes the diagnostics parser for failing checks' text output: any text must give at
//! most MAX_DIAGNOSTICS diagnostics with capped details, never a panic, a hang or unbounded
//! memory.
#![no_main]

use itergate::signals::diagnostics::{parse, DETAIL_CAP_BYTES, MAX_DIAGNOSTICS, MAX_FRAMES};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let found = parse(&text);
    assert!(found.len() <= MAX_DIAGNOSTICS);
    for diagnostic in &found {
        assert!(diagnostic.detail.len() <= DETAIL_CAP_BYTES);
        assert!(diagnostic.frames.len() <= MAX_FRAMES);
    }
});
