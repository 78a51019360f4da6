//! Parser throughput on large generated reports (`cargo bench --bench parsers`).
//!
//! Inputs are generated in memory at start (about 100 MB of LCOV, JUnit with 100,000
//! testcases, SARIF with 100,000 results, Cobertura with 500,000 lines) and read through
//! a 256 KiB `BufReader`, as `parse_file` reads a file. Targets: LCOV and JUnit at least
//! 200 MB/s.

use std::hint::black_box;
use std::io::BufReader;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
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
}

criterion_group!(benches, parsers);
criterion_main!(benches);
