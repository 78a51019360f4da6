//! Counters for `/metrics`, in the Prometheus text format. Per process: each replica
//! reports its own.
//!
//! Written here rather than with `prometheus-client` or `metrics-exporter-prometheus`: a
//! dozen counters, two gauges and one histogram with fixed label sets are atomics and a
//! few `writeln!`s, read on the hot path without a registry lock; those crates bring a
//! registry (and the exporter a global recorder and an HTTP listener of its own) for the
//! same text. The format's rules this follows (one `# HELP`/`# TYPE` per family,
//! cumulative `le` buckets ending in `+Inf`, `_sum` and `_count`) are checked by the
//! serve tests that read `/metrics`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

/// Upper bounds (seconds) of the job latency histogram: from receipt to done.
const LATENCY_BUCKETS: [f64; 10] = [0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 120.0];

#[derive(Default)]
pub struct Metrics {
    accepted: AtomicU64,
    duplicate: AtomicU64,
    /// Finished deliveries deleted after `--keep-days`.
    pruned: AtomicU64,
    refused: Mutex<BTreeMap<&'static str, u64>>,
    jobs: Mutex<BTreeMap<&'static str, u64>>,
    latency_buckets: [AtomicU64; LATENCY_BUCKETS.len()],
    latency_count: AtomicU64,
    latency_sum_ms: AtomicU64,
    github_calls: Mutex<BTreeMap<String, u64>>,
    rate_limit_remaining: AtomicI64,
    /// This replica's name and its database backend.
    replica: OnceLock<(String, &'static str)>,
    /// 1 while this replica runs the redelivery sweep, 0 while another does.
    sweep_leader: AtomicI64,
}

fn bump<K: Ord>(map: &Mutex<BTreeMap<K, u64>>, key: K) {
    let mut map = map.lock().unwrap_or_else(|p| p.into_inner());
    *map.entry(key).or_default() += 1;
}

impl Metrics {
    pub fn new() -> Metrics {
        Metrics {
            rate_limit_remaining: AtomicI64::new(-1),
            ..Metrics::default()
        }
    }

    pub fn accepted(&self) {
        self.accepted.fetch_add(1, Ordering::Relaxed);
    }

    pub fn duplicate(&self) {
        self.duplicate.fetch_add(1, Ordering::Relaxed);
    }

    pub fn pruned(&self, deliveries: u64) {
        self.pruned.fetch_add(deliveries, Ordering::Relaxed);
    }

    /// A delivery refused for `reason` (`signature`, `length`, `busy`, `slow`, `headers`,
    /// `payload`, `database`).
    pub fn refused(&self, reason: &'static str) {
        bump(&self.refused, reason);
    }

    /// A job ended as `outcome` (`done`, `ignored`, `retried`, `rate_limited`, `failed`),
    /// `latency_ms` after its delivery arrived.
    pub fn job(&self, outcome: &'static str, latency_ms: Option<u64>) {
        bump(&self.jobs, outcome);
        if let Some(ms) = latency_ms {
            let seconds = ms as f64 / 1000.0;
            for (bound, bucket) in LATENCY_BUCKETS.iter().zip(&self.latency_buckets) {
                if seconds <= *bound {
                    bucket.fetch_add(1, Ordering::Relaxed);
                }
            }
            self.latency_count.fetch_add(1, Ordering::Relaxed);
            self.latency_sum_ms.fetch_add(ms, Ordering::Relaxed);
        }
    }

    /// A GitHub call answered with `status` (`"error"` when no answer came).
    pub fn github_call(&self, status: &str) {
        bump(&self.github_calls, status.to_string());
    }

    /// Names this replica (its leases' owner) and its database backend.
    pub fn identify(&self, replica: &str, backend: &'static str) {
        let _ = self.replica.set((replica.to_string(), backend));
    }

    pub fn sweep_leader(&self, leading: bool) {
        self.sweep_leader
            .store(i64::from(leading), Ordering::Relaxed);
    }

    pub fn rate_limit_remaining(&self, remaining: i64) {
        self.rate_limit_remaining
            .store(remaining, Ordering::Relaxed);
    }
}

impl crate::github::client::AnswerObserver for Metrics {
    fn answered(&self, status: Option<u16>, rate_limit_remaining: Option<i64>) {
        self.github_call(&status.map_or("error".to_string(), |s| s.to_string()));
        if let Some(remaining) = rate_limit_remaining {
            self.rate_limit_remaining(remaining);
        }
    }
}

impl Metrics {
    /// The text of `/metrics`; the database's gauges (queue depth, pull requests waiting
    /// for CI's record) when it answered.
    pub fn render(&self, queue_depth: Option<i64>, waiting: Option<i64>) -> String {
        let mut out = String::new();
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let _ = writeln!(
            out,
            "# HELP itergate_deliveries_total Webhook deliveries by result."
        );
        let _ = writeln!(out, "# TYPE itergate_deliveries_total counter");
        let _ = writeln!(
            out,
            "itergate_deliveries_total{{result=\"accepted\"}} {}",
            load(&self.accepted)
        );
        let _ = writeln!(
            out,
            "itergate_deliveries_total{{result=\"deduplicated\"}} {}",
            load(&self.duplicate)
        );
        for (reason, n) in self
            .refused
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
        {
            let _ = writeln!(
                out,
                "itergate_deliveries_total{{result=\"refused\",reason=\"{reason}\"}} {n}"
            );
        }
        if let Some(depth) = queue_depth {
            let _ = writeln!(
                out,
                "# HELP itergate_queue_depth Deliveries not processed yet."
            );
            let _ = writeln!(out, "# TYPE itergate_queue_depth gauge");
            let _ = writeln!(out, "itergate_queue_depth {depth}");
        }
        if let Some(waiting) = waiting {
            let _ = writeln!(
                out,
                "# HELP itergate_waiting_pull_requests Pull requests whose head waits for CI's record (checked by the reconcile)."
            );
            let _ = writeln!(out, "# TYPE itergate_waiting_pull_requests gauge");
            let _ = writeln!(out, "itergate_waiting_pull_requests {waiting}");
        }
        let _ = writeln!(out, "# HELP itergate_jobs_total Jobs by outcome.");
        let _ = writeln!(out, "# TYPE itergate_jobs_total counter");
        for (outcome, n) in self.jobs.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            let _ = writeln!(out, "itergate_jobs_total{{outcome=\"{outcome}\"}} {n}");
        }
        let _ = writeln!(
            out,
            "# HELP itergate_job_latency_seconds From a delivery's receipt to its job's end."
        );
        let _ = writeln!(out, "# TYPE itergate_job_latency_seconds histogram");
        for (bound, bucket) in LATENCY_BUCKETS.iter().zip(&self.latency_buckets) {
            let _ = writeln!(
                out,
                "itergate_job_latency_seconds_bucket{{le=\"{bound}\"}} {}",
                load(bucket)
            );
        }
        let count = load(&self.latency_count);
        let _ = writeln!(
            out,
            "itergate_job_latency_seconds_bucket{{le=\"+Inf\"}} {count}"
        );
        let _ = writeln!(
            out,
            "itergate_job_latency_seconds_sum {}",
            load(&self.latency_sum_ms) as f64 / 1000.0
        );
        let _ = writeln!(out, "itergate_job_latency_seconds_count {count}");
        let _ = writeln!(
            out,
            "# HELP itergate_github_calls_total GitHub API calls by answer status."
        );
        let _ = writeln!(out, "# TYPE itergate_github_calls_total counter");
        for (status, n) in self
            .github_calls
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
        {
            let _ = writeln!(
                out,
                "itergate_github_calls_total{{status=\"{status}\"}} {n}"
            );
        }
        if let Some((replica, backend)) = self.replica.get() {
            let _ = writeln!(
                out,
                "# HELP itergate_replica_info This process: its name in leases and its database."
            );
            let _ = writeln!(out, "# TYPE itergate_replica_info gauge");
            let _ = writeln!(
                out,
                "itergate_replica_info{{replica=\"{replica}\",database=\"{backend}\"}} 1"
            );
        }
        let _ = writeln!(
            out,
            "# HELP itergate_deliveries_pruned_total Finished deliveries deleted after --keep-days."
        );
        let _ = writeln!(out, "# TYPE itergate_deliveries_pruned_total counter");
        let _ = writeln!(
            out,
            "itergate_deliveries_pruned_total {}",
            load(&self.pruned)
        );
        let _ = writeln!(
            out,
            "# HELP itergate_sweep_leader 1 while this replica runs the redelivery sweep."
        );
        let _ = writeln!(out, "# TYPE itergate_sweep_leader gauge");
        let _ = writeln!(
            out,
            "itergate_sweep_leader {}",
            self.sweep_leader.load(Ordering::Relaxed)
        );
        let remaining = self.rate_limit_remaining.load(Ordering::Relaxed);
        if remaining >= 0 {
            let _ = writeln!(
                out,
                "# HELP itergate_github_rate_limit_remaining The last X-RateLimit-Remaining seen."
            );
            let _ = writeln!(out, "# TYPE itergate_github_rate_limit_remaining gauge");
            let _ = writeln!(out, "itergate_github_rate_limit_remaining {remaining}");
        }
        out
    }
}
