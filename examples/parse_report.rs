//! Parses one report with itergate's streaming parser and prints what it found:
//! `cargo run --release --example parse_report -- FORMAT PATH` (FORMAT as on the CLI:
//! junit, lcov, sarif, ...). Used by `benches/parsers_vs_python.sh`.

use std::path::Path;
use std::process::ExitCode;

use itergate::signals::report::{parse_file, ParseOptions, Report, ReportFormat};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [format, path] = args.as_slice() else {
        eprintln!("usage: parse_report FORMAT PATH");
        return ExitCode::from(2);
    };
    let format: ReportFormat = match format.parse() {
        Ok(format) => format,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    match parse_file(format, Path::new(path), &ParseOptions::default()) {
        Ok(report) => {
            println!("{}", describe(&report));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

fn describe(report: &Report) -> String {
    match report {
        Report::Tests(t) => format!(
            "tests={} passed={} failed={} errored={} skipped={}",
            t.total(),
            t.passed,
            t.failed,
            t.errored,
            t.skipped
        ),
        Report::Coverage(c) => format!("lines_found={} lines_hit={}", c.lines_found, c.lines_hit),
        Report::Lint(l) => format!("findings={}", l.findings.len()),
        Report::Complexity(c) => format!("functions={}", c.functions.len()),
    }
}
