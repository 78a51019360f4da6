//! Fuzzes the `pyright --outputjson` parser: any bytes must give a report or a ParseError,
//! never a panic, a hang or unbounded memory.
#![no_main]

use itergate::signals::report::{parse, ParseOptions, ReportFormat};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = parse(ReportFormat::PyrightJson, data, "fuzz", &ParseOptions::default());
});
