//! Scoring rules on parsed reports: holdout isolation, pre-existing findings, lint scale.

use chrono::{TimeZone, Utc};
use itergate::config::{Config, Visibility};
use itergate::model::{IterationRecord, Severity, Status, TriggerType};
use itergate::signals::report::{self, ParseOptions, ReportFormat};
use itergate::signals::score::{score, CheckOutcome, CheckResult, ScoreInput};

const JUNIT: &str = r#"<testsuite name="holdout" tests="3">
<testcase classname="holdout" name="secret_case_42"><failure message="expected 7, got 8">diff: secret answer 7</failure></testcase>
<testcase classname="holdout" name="secret_case_43"/>
<testcase classname="holdout" name="secret_case_44"/>
</testsuite>"#;

fn outcome(name: &str, format: ReportFormat, text: &str, visibility: Visibility) -> CheckOutcome {
    let report =
        report::parse(format, text.as_bytes(), name, &ParseOptions::default()).expect("parses");
    CheckOutcome {
        name: name.into(),
        visibility,
        void_on_violation: false,
        result: CheckResult::Report {
            report,
            exit_code: Some(1),
        },
    }
}

fn scored(checks: &[CheckOutcome], base: Option<&IterationRecord>) -> IterationRecord {
    let config = Config::default();
    let mut r = IterationRecord::new(
        1,
        Utc.with_ymd_and_hms(2026, 11, 2, 9, 0, 0)
            .single()
            .expect("date"),
    );
    score(
        &ScoreInput {
            config: &config,
            checks,
            changed: None,
            base,
        },
        &mut r,
    );
    r
}

#[test]
fn holdout_details_never_reach_the_record() {
    let r = scored(
        &[outcome(
            "holdout",
            ReportFormat::Junit,
            JUNIT,
            Visibility::AggregateOnly,
        )],
        None,
    );
    let visible = serde_json::to_string(&r).expect("json");
    assert!(
        !visible.contains("secret_case"),
        "holdout case id leaked: {visible}"
    );
    assert!(
        !visible.contains("secret answer"),
        "holdout output leaked: {visible}"
    );
    assert!(visible.contains("2 of 3 passed"), "{visible}");
    assert_eq!(r.scores.tests_passing, Some(2.0 / 3.0));
    assert_eq!(r.status, Status::Fail);
}

#[test]
fn full_visibility_names_the_failing_test() {
    let r = scored(
        &[outcome(
            "tests",
            ReportFormat::Junit,
            JUNIT,
            Visibility::Full,
        )],
        None,
    );
    assert!(r
        .issues
        .iter()
        .any(|i| i.finding.contains("secret_case_42") && i.severity == Severity::Blocker));
    assert!(r
        .triggers
        .iter()
        .any(|t| t.kind == TriggerType::ValidationFailure && t.details == "1 of 3 tests failed"));
}

#[test]
fn findings_already_on_the_base_are_info_and_trigger_nothing() {
    let checks = [outcome(
        "tests",
        ReportFormat::Junit,
        JUNIT,
        Visibility::Full,
    )];
    let base = scored(&checks, None);
    let r = scored(&checks, Some(&base));
    assert!(
        r.issues.iter().all(|i| i.severity == Severity::Info),
        "{:?}",
        r.issues
    );
    assert!(r.issues[0]
        .finding
        .starts_with("(pre-existing on the base)"));
    assert!(r.triggers.is_empty(), "{:?}", r.triggers);
    assert_eq!(r.status, Status::Pass);
}

#[test]
fn lint_severity_scale_and_hallucinations() {
    let sarif = r#"{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"rustc"}},"results":[
      {"ruleId":"E0425","level":"error","message":{"text":"cannot find function `parse_all` in this scope"},
       "locations":[{"physicalLocation":{"artifactLocation":{"uri":"src/lib.rs"},"region":{"startLine":9}}}]},
      {"ruleId":"W1","level":"warning","message":{"text":"w"}},
      {"ruleId":"N1","level":"note","message":{"text":"n"}}]}]}"#;
    let r = scored(
        &[outcome(
            "lint",
            ReportFormat::Sarif,
            sarif,
            Visibility::Full,
        )],
        None,
    );
    // avg severity (1.0 + 0.5 + 0.1) / 3
    let expected = 1.0 - (1.6 / 3.0);
    assert!((r.scores.code_quality.expect("observed") - expected).abs() < 1e-9);
    assert!(r
        .triggers
        .iter()
        .any(|t| t.kind == TriggerType::HallucinationDetected && t.details.contains("E0425")));
    assert_eq!(r.count(Severity::Blocker), 1);
    assert_eq!(r.count(Severity::Warning), 1);
    assert_eq!(r.count(Severity::Info), 1);
}

fn failing_at(iteration: u32, spans: &[&str]) -> IterationRecord {
    let mut r = IterationRecord::new(
        iteration,
        Utc.with_ymd_and_hms(2026, 11, 2, 9, 0, 0)
            .single()
            .expect("date"),
    );
    r.issues = spans
        .iter()
        .map(|s| itergate::model::CheckerIssue {
            dimension: "tests".into(),
            severity: Severity::Blocker,
            finding: format!("test at {s} failed"),
            affected_field: Some((*s).into()),
            suggested_fix: None,
        })
        .collect();
    if !spans.is_empty() {
        r.triggers.push(itergate::model::Trigger {
            kind: TriggerType::ValidationFailure,
            source: "tests".into(),
            severity: 0.7,
            details: "tests failed".into(),
            fixable: true,
        });
    }
    r
}

#[test]
fn a_test_that_flips_without_related_changes_is_flaky() {
    use itergate::signals::flaky;
    let earlier = [failing_at(1, &["tests/net.rs:10"]), failing_at(2, &[])];
    let mut current = failing_at(3, &["tests/net.rs:10"]);
    assert_eq!(flaky::mark(&mut current, &earlier, &|_| false), 1);
    assert!(current.issues[0].finding.starts_with("(flaky"));
    assert_eq!(current.triggers[0].source, "flaky");
    // The same flip, but the change touched the test's file: a real failure.
    let mut touched = failing_at(3, &["tests/net.rs:10"]);
    assert_eq!(
        flaky::mark(&mut touched, &earlier, &|f| f == "tests/net.rs"),
        0
    );
    assert_eq!(touched.triggers[0].source, "tests");
    // Failing throughout is not flaky.
    let steady = [
        failing_at(1, &["tests/net.rs:10"]),
        failing_at(2, &["tests/net.rs:10"]),
    ];
    let mut again = failing_at(3, &["tests/net.rs:10"]);
    assert_eq!(flaky::mark(&mut again, &steady, &|_| false), 0);
}
