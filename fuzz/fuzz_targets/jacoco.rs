//! Fuzzes the JaCoCo report parser: any bytes must give a report or a ParseError, never a
//! panic, a hang or unbounded memory.
#![no_main]

use itergate::signals::report::{parse, ParseOptions, ReportFormat};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let keep_all = |_: &str| true;
    let opts = ParseOptions {
        keep_lines_for: Some(&keep_all),
    };
    let _ = parse(ReportFormat::Jacoco, data, "fuzz", &opts);
});
