//! Builders shared by the integration tests.
#![allow(dead_code)] // each test binary uses a different subset

use chrono::{DateTime, Duration, TimeZone, Utc};
use itergate::config::Config;
use itergate::engine::{decide, DecideInput, Decision, Feedback};
use itergate::model::{
    CheckerIssue, IterationRecord, Scores, Severity, Status, Trigger, TriggerType,
};

pub fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 2, 9, 0, 0)
        .single()
        .expect("valid date")
}

/// A record scored only on tests, with quality `q`.
pub fn rec(iteration: u32, q: f64) -> IterationRecord {
    let mut r = IterationRecord::new(
        iteration,
        t0() + Duration::minutes(10 * i64::from(iteration)),
    );
    r.scores = Scores {
        tests_passing: Some(q),
        ..Scores::default()
    };
    r
}

pub fn issue(severity: Severity, finding: &str) -> CheckerIssue {
    CheckerIssue {
        dimension: "tests".into(),
        severity,
        finding: finding.into(),
        affected_field: Some(format!("src/lib.rs:{}", finding.len())),
        suggested_fix: None,
        kind: None,
        subject: None,
    }
}

pub fn trigger(kind: TriggerType, details: &str) -> Trigger {
    Trigger {
        kind,
        source: "tests".into(),
        severity: 0.7,
        details: details.into(),
        fixable: true,
    }
}

/// A failing record with `n` BLOCKER issues and a validation failure.
pub fn failing(iteration: u32, q: f64, n: usize) -> IterationRecord {
    let mut r = rec(iteration, q);
    r.status = Status::Fail;
    r.issues = (0..n)
        .map(|i| issue(Severity::Blocker, &format!("test t{i} failed")))
        .collect();
    r.triggers = vec![trigger(
        TriggerType::ValidationFailure,
        &format!("{n} tests failed"),
    )];
    r
}

pub fn history(qs: &[f64]) -> Vec<IterationRecord> {
    qs.iter()
        .enumerate()
        .map(|(i, q)| rec(i as u32 + 1, *q))
        .collect()
}

pub fn decide_with(config: &Config, history: &[IterationRecord], feedback: &Feedback) -> Decision {
    let now = history.last().map(|r| r.timestamp).unwrap_or_else(t0) + Duration::minutes(1);
    decide(&DecideInput {
        task_id: "task",
        config,
        history,
        feedback,
        baseline: None,
        now,
    })
    .expect("non-empty history")
}

pub fn decide_default(history: &[IterationRecord]) -> Decision {
    decide_with(&Config::default(), history, &Feedback::default())
}

pub fn config(yaml: &str) -> Config {
    Config::from_yaml(yaml, std::path::Path::new("test.yml")).expect("valid test config")
}
