//! `decide` over histories of growing length: the engine must stay linear
//! (target: under 5 ms for 10,000 iterations).

use chrono::{Duration, TimeZone, Utc};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use itergate::config::Config;
use itergate::engine::{decide, DecideInput, Feedback};
use itergate::model::{CheckerIssue, IterationRecord, Scores, Severity, Status};

fn history(n: usize) -> Vec<IterationRecord> {
    let start = Utc
        .with_ymd_and_hms(2026, 1, 1, 0, 0, 0)
        .single()
        .expect("date");
    (0..n)
        .map(|i| {
            // A noisy, slowly improving trajectory with some failures.
            let wobble = ((i * 7919) % 13) as f64 / 100.0;
            let q = (0.4 + 0.5 * (i as f64 / n as f64) + wobble).min(1.0);
            let mut r = IterationRecord::new(i as u32 + 1, start + Duration::minutes(i as i64));
            r.scores = Scores {
                tests_passing: Some(q),
                code_quality: Some((q + 0.05).min(1.0)),
                coverage: Some(q * 0.9),
                complexity: Some(0.7),
            };
            r.tokens_used = Some(1_000 + (i as u64 % 500));
            r.status = if i % 97 == 0 {
                Status::Void
            } else {
                Status::Fail
            };
            r.issues = vec![CheckerIssue {
                dimension: "tests".into(),
                severity: Severity::Blocker,
                finding: format!("test t{i} failed"),
                affected_field: Some(format!("src/lib.rs:{i}")),
                suggested_fix: None,
                kind: None,
                subject: None,
            }];
            r
        })
        .collect()
}

fn bench_decide(c: &mut Criterion) {
    let mut config = Config::default();
    // Large histories must not be cut short by the iteration limit.
    config.stopping_criteria.iteration_limits.max = u32::MAX;
    config.stopping_criteria.budget_limits.total_tokens = Some(u64::MAX);
    let now = Utc
        .with_ymd_and_hms(2027, 1, 1, 0, 0, 0)
        .single()
        .expect("date");
    let mut group = c.benchmark_group("decide");
    for n in [10usize, 1_000, 10_000, 100_000] {
        let h = history(n);
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::from_parameter(n), &h, |b, h| {
            b.iter(|| {
                decide(&DecideInput {
                    task_id: "bench",
                    config: &config,
                    history: h,
                    feedback: &Feedback::default(),
                    baseline: None,
                    now,
                })
            })
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(std::time::Duration::from_secs(3));
    targets = bench_decide
}
criterion_main!(benches);
