//! Parser throughput on large generated reports (`cargo bench --bench parsers`).
//!
//! Inputs are generated in memory at start (about 100 MB of LCOV, JUnit with 100,000
//! testcases, SARIF with 100,000 results, Cobertura and JaCoCo with 500,000 lines) and read through
//! a 256 KiB `BufReader`, as `parse_file` reads a file; then `go test -json` with 100,000
//! tests, a 100 MB Go coverage profile, tsc output with 200,000 errors, Clover with 500,000
//! lines, `jest --json` with 100,000 tests and istanbul JSON with 500,000 statements. Targets: LCOV,
//! JUnit, JaCoCo and the Go coverage profile at least 200 MB/s. `diagnostics::parse` scans about 50 MB of cargo output (warnings, status lines)
//! that ends in a few errors.

use std::hint::black_box;
use std::io::BufReader;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use itergate::signals::diagnostics;
use itergate::signals::report::{parse, ParseOptions, Report, ReportFormat};

#[path = "support/report_gen.rs"]
mod report_gen;

const READ_BUFFER_BYTES: usize = 256 * 1024;

fn parse_bytes(format: ReportFormat, bytes: &[u8]) -> Report {
    let reader = BufReader::with_capacity(READ_BUFFER_BYTES, bytes);
    match parse(format, reader, "bench", &ParseOptions::default()) {
        Ok(report) => report,
        Err(e) => panic!("generated {format} input must parse: {e}"),
    }
}

fn bench_format(c: &mut Criterion, format: ReportFormat, label: &str, input: &str) {
    let mut group = c.benchmark_group("parse");
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(8));
    group.throughput(Throughput::Bytes(input.len() as u64));
    group.bench_function(label, |b| {
        b.iter(|| black_box(parse_bytes(format, black_box(input.as_bytes()))))
    });
    group.finish();
}

fn parsers(c: &mut Criterion) {
    let lcov = report_gen::lcov(100 * 1024 * 1024);
    bench_format(c, ReportFormat::Lcov, "lcov_100MB", &lcov);
    drop(lcov);
    let junit = report_gen::junit(100_000);
    bench_format(c, ReportFormat::Junit, "junit_100k_cases", &junit);
    drop(junit);
    let sarif = report_gen::sarif(100_000);
    bench_format(c, ReportFormat::Sarif, "sarif_100k_results", &sarif);
    drop(sarif);
    let cobertura = report_gen::cobertura(1_000);
    bench_format(
        c,
        ReportFormat::Cobertura,
        "cobertura_500k_lines",
        &cobertura,
    );
    drop(cobertura);
    let jacoco = report_gen::jacoco(1_000);
    bench_format(c, ReportFormat::Jacoco, "jacoco_500k_lines", &jacoco);
    drop(jacoco);
    let go_test = report_gen::go_test_json(100_000);
    bench_format(
        c,
        ReportFormat::GoTestJson,
        "go_test_json_100k_tests",
        &go_test,
    );
    drop(go_test);
    let go_cover = report_gen::go_cover(100 * 1024 * 1024);
    bench_format(c, ReportFormat::GoCover, "go_cover_100MB", &go_cover);
    drop(go_cover);
    let tsc = report_gen::tsc(200_000);
    bench_format(c, ReportFormat::Tsc, "tsc_200k_errors", &tsc);
    drop(tsc);
    let clover = report_gen::clover(1_000);
    bench_format(c, ReportFormat::Clover, "clover_500k_lines", &clover);
    drop(clover);
    let jest = report_gen::jest_json(100_000);
    bench_format(c, ReportFormat::JestJson, "jest_json_100k_tests", &jest);
    drop(jest);
    let istanbul = report_gen::istanbul_json(1_000);
    bench_format(
        c,
        ReportFormat::IstanbulJson,
        "istanbul_json_500k_statements",
        &istanbul,
    );
}

/// Cargo output of about `bytes`: warning blocks and status lines, then one error and the
/// summary.
fn cargo_output(bytes: usize) -> String {
    let mut out = String::with_capacity(bytes + 1024);
    for n in 0.. {
        if out.len() >= bytes {
            break;
        }
        out.push_str(&format!(
            "   Compiling dep{n} v0.1.0\nwarning: unused variable: `x{n}`\n --> src/m{n}.rs:{n}:9\n  |\n{n} |     let x{n} = 3;\n  |         ^^ help: prefix it with an underscore\n\n"
        ));
    }
    out.push_str("error[E0425]: cannot find value `y` in this scope\n --> src/lib.rs:3:5\n  |\n3 |     y\n  |     ^ not found\n\n");
    out.push_str("error: could not compile `demo` (lib) due to 1 previous error\n");
    out
}

fn bench_diagnostics(c: &mut Criterion) {
    let input = cargo_output(50 * 1024 * 1024);
    let mut group = c.benchmark_group("parse");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(input.len() as u64));
    group.bench_function("diagnostics_50MB_cargo_output", |b| {
        b.iter(|| black_box(diagnostics::parse(black_box(&input))))
    });
    group.finish();
}

/// An agent's JSON-lines output as long as a long Codex session (`itergate loop` reads it
/// once per run): 200,000 events, one in ten a `turn.completed` with usage.
fn codex_events(events: usize) -> String {
    let mut out = String::with_capacity(events * 160);
    for n in 0..events {
        if n % 10 == 9 {
            out.push_str(&format!(
                "{{\"type\":\"turn.completed\",\"usage\":{{\"input_tokens\":{n},\"cached_input_tokens\":0,\"output_tokens\":12}}}}\n"
            ));
        } else {
            out.push_str(&format!(
                "{{\"type\":\"item.completed\",\"item\":{{\"id\":\"item_{n}\",\"type\":\"command_execution\",\"command\":\"ls\",\"exit_code\":0}}}}\n"
            ));
        }
    }
    out
}

fn bench_agent_usage(c: &mut Criterion) {
    use itergate::agent::usage::{read_usage, UsageFormat};
    let input = codex_events(200_000);
    let mut group = c.benchmark_group("parse");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(input.len() as u64));
    group.bench_function("agent_usage_codex_200k_events", |b| {
        b.iter(|| black_box(read_usage(UsageFormat::CodexJsonl, black_box(&input))))
    });
    group.finish();
}

criterion_group!(benches, parsers, bench_diagnostics, bench_agent_usage);
criterion_main!(benches);
