//! Fuzzes the readers of agents' usage (`itergate loop`): any output, in every format,
//! must give a usage (unknown where unreadable), never a panic or a wrapped sum.
#![no_main]

use itergate::agent::usage::{read_usage, UsageFormat};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    for format in UsageFormat::READ {
        let _ = read_usage(format, &text);
    }
});
