//! Fuzzes the reader of GitHub's compare patches: any text must give changed lines or a
//! PatchError, never a panic (an overflowing line number included).
#![no_main]

use itergate::github::compare::{changed_lines, ComparedFile};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let files = [ComparedFile {
        filename: "fuzz".into(),
        patch: Some(String::from_utf8_lossy(data).into_owned()),
    }];
    let _ = changed_lines(&files);
});
