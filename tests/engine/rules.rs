//! Table-driven tests: one row per stopping rule, each naming the seed rule it checks.

use crate::common;

use common::*;
use itergate::config::Config;
use itergate::engine::{Feedback, Modification, Recommendation, StopCode, StrategyType};
use itergate::model::{IterationRecord, Severity, Status, TriggerType};

struct Case {
    rule: &'static str,
    config: &'static str,
    history: Vec<IterationRecord>,
    feedback: Feedback,
    recommendation: Recommendation,
    stop: Option<StopCode>,
}

fn case(rule: &'static str, config: &'static str, history: Vec<IterationRecord>) -> Case {
    Case {
        rule,
        config,
        history,
        feedback: Feedback::default(),
        recommendation: Recommendation::Iterate,
        stop: None,
    }
}

impl Case {
    fn expect(mut self, recommendation: Recommendation, stop: Option<StopCode>) -> Case {
        self.recommendation = recommendation;
        self.stop = stop;
        self
    }
    fn feedback(mut self, feedback: Feedback) -> Case {
        self.feedback = feedback;
        self
    }
}

fn with_variant(mut r: IterationRecord) -> IterationRecord {
    r.experiment.structural_variant = Some("table-driven parser".into());
    r
}

fn with_tokens(mut r: IterationRecord, tokens: u64) -> IterationRecord {
    r.tokens_used = Some(tokens);
    r
}

fn unfixable(mut r: IterationRecord, n: usize) -> IterationRecord {
    for i in 0..n {
        let mut t = trigger(
            TriggerType::HallucinationDetected,
            &format!("unknown crate {i}"),
        );
        t.fixable = false;
        r.triggers.push(t);
    }
    r
}

/// The latest record gets one WARNING: something the next iteration can act on, so the rule
/// under test decides rather than "nothing actionable".
fn warned(mut h: Vec<IterationRecord>) -> Vec<IterationRecord> {
    if let Some(r) = h.last_mut() {
        r.issues
            .push(issue(Severity::Warning, "unused variable `x`"));
    }
    h
}

fn info_only(mut r: IterationRecord) -> IterationRecord {
    r.issues = vec![issue(Severity::Info, "pre-existing lint finding")];
    r
}

fn cases() -> Vec<Case> {
    use Recommendation::*;
    vec![
        case("002 step 5: quality at or above the threshold, nothing to fix -> accept", "", history(&[0.96]))
            .expect(Accept, Some(StopCode::QualityThresholdReached)),
        case("002 step 3: below min iterations -> continue", "", warned(history(&[0.5])))
            .expect(Iterate, None),
        case("002 steps 1/4: max iterations reached with issues -> stop with best (escalate)",
            "stopping_criteria: {iteration_limits: {min: 1, max: 3}}", history(&[0.5, 0.6, 0.7]))
            .expect(Escalate, Some(StopCode::MaxIterationsReached)),
        case("002 steps 1/4: max iterations reached, latest clean -> accepted for being clean",
            "stopping_criteria: {iteration_limits: {min: 1, max: 2}}", history(&[0.5, 0.96]))
            .expect(Accept, Some(StopCode::QualityThresholdReached)),
        case("002 step 2: a declared budget exhausted -> stop with budget report",
            "stopping_criteria: {budget_limits: {total_tokens: 1000}}",
            vec![with_tokens(rec(1, 0.5), 600), with_tokens(rec(2, 0.7), 600)])
            .expect(Escalate, Some(StopCode::BudgetExhausted)),
        case("002 step 2: an unobservable budget is not exhausted",
            "stopping_criteria: {budget_limits: {total_tokens: 1000}}", warned(history(&[0.5, 0.7])))
            .expect(Iterate, None),
        case("002 step 6: improvement below threshold, no exploration quota -> stop",
            "stopping_criteria: {exploration_quota: {enabled: false}}", history(&[0.5, 0.52]))
            .expect(Escalate, Some(StopCode::ImprovementBelowThreshold)),
        case("002 step 6 + quota: a flat cycle under k continues", "", warned(history(&[0.5, 0.52])))
            .expect(Iterate, None),
        case("002 quota: k flat cycles -> require a structural variant", "", warned(history(&[0.5, 0.51, 0.52, 0.53])))
            .expect(Iterate, None),
        case("002 quota: the structural variant was flat too -> stop with best", "",
            { let mut h = history(&[0.5, 0.51, 0.52]); h.push(with_variant(rec(4, 0.53))); h })
            .expect(Escalate, Some(StopCode::FlatCycleQuota)),
        case("002 quota: flat_cycle_action human_review -> escalate",
            "stopping_criteria: {exploration_quota: {flat_cycle_action: human_review}}", history(&[0.5, 0.51, 0.52, 0.53]))
            .expect(Escalate, Some(StopCode::FlatCycleQuota)),
        case("002 quota: flat_cycle_action stop_with_best_output -> stop",
            "stopping_criteria: {exploration_quota: {flat_cycle_action: stop_with_best_output}}", history(&[0.5, 0.51, 0.52, 0.53]))
            .expect(Escalate, Some(StopCode::FlatCycleQuota)),
        case("002 step 7: plateau (average improvement over the window) -> stop",
            "stopping_criteria: {improvement_threshold: {enabled: false}, exploration_quota: {enabled: false}}",
            history(&[0.5, 0.52, 0.54, 0.56]))
            .expect(Escalate, Some(StopCode::Plateau)),
        case("002 step 8: one regression -> continue and revert to the best", "", warned(history(&[0.5, 0.7, 0.6])))
            .expect(Iterate, None),
        case("002 step 8: more regressions than max_regressions -> stop", "", history(&[0.3, 0.6, 0.4, 0.5, 0.45]))
            .expect(Escalate, Some(StopCode::RegressionLimit)),
        case("002 step 8: allow_regression never stops for regressions",
            "stopping_criteria: {regression_protection: {allow_regression: true}}", warned(history(&[0.3, 0.6, 0.4, 0.5, 0.45])))
            .expect(Iterate, None),
        case("001: more revision rounds than revision.max_iterations -> escalate", "",
            vec![failing(1, 0.5, 5), failing(2, 0.6, 4), failing(3, 0.7, 3), failing(4, 0.8, 2)])
            .expect(Escalate, Some(StopCode::RevisionLimitReached)),
        case("001: BLOCKER+WARNING count not decreasing -> escalate (stalled)", "",
            vec![failing(1, 0.5, 2), failing(2, 0.6, 2)])
            .expect(Escalate, Some(StopCode::RevisionStalled)),
        case("001: every issue fixed and as many new ones made is progress -> iterate", "",
            vec![failing(1, 0.5, 1), {
                let mut r = failing(2, 0.6, 1);
                r.issues[0].finding = "changed lines not covered by any test (src/a.go:3-5)".into();
                r
            }])
            .expect(Iterate, None),
        case("001, `revision.stall: count`: every issue fixed and as many new ones is a stall, as written",
            "revision: {stall: count}",
            vec![failing(1, 0.5, 1), {
                let mut r = failing(2, 0.6, 1);
                r.issues[0].finding = "changed lines not covered by any test (src/a.go:3-5)".into();
                r
            }])
            .expect(Escalate, Some(StopCode::RevisionStalled)),
        case("001: a falling issue count keeps iterating", "", vec![failing(1, 0.5, 3), failing(2, 0.7, 1)])
            .expect(Iterate, None),
        case("001: INFO issues never trigger a revision", "", vec![info_only(rec(1, 0.97))])
            .expect(Accept, Some(StopCode::QualityThresholdReached)),
        case("001 gate: `/iterate adjust` restarts the revision count", "",
            vec![failing(1, 0.5, 5), failing(2, 0.6, 4), failing(3, 0.7, 3), failing(4, 0.8, 2)])
            .feedback(Feedback { restart_after: Some(3), ..Feedback::default() })
            .expect(Iterate, None),
        case("001 gate: `/iterate accept` proceeds anyway", "", vec![failing(1, 0.5, 2), failing(2, 0.6, 2)])
            .feedback(Feedback { accepted: true, ..Feedback::default() })
            .expect(Accept, Some(StopCode::AcceptedByHuman)),
        case("`/iterate escalate` calls a human", "", history(&[0.5]))
            .feedback(Feedback { escalation: Some("needs a design review".into()), ..Feedback::default() })
            .expect(Escalate, Some(StopCode::EscalatedByHuman)),
        case("`/iterate budget` raises the iteration limit", "stopping_criteria: {iteration_limits: {min: 1, max: 3}}",
            warned(history(&[0.3, 0.5, 0.7])))
            .feedback(Feedback { max_iterations: Some(6), ..Feedback::default() })
            .expect(Iterate, None),
        case("000 assessment: plateauing with no upward trend -> escalate", "", history(&[0.5, 0.5, 0.5]))
            .expect(Escalate, Some(StopCode::NotImproving)),
        case("000 assessment: fixability ratio below 0.3 -> escalate", "", vec![rec(1, 0.3), unfixable(rec(2, 0.5), 3)])
            .expect(Escalate, Some(StopCode::Unfixable)),
        case("000 assessment: expected gain below 0.1, no issues, quality at the bar -> accept",
            "detection: {min_confidence: 0.95}", { let mut h = history(&[0.96, 0.97]); h[1].confidence = Some(0.9); h })
            .expect(Accept, Some(StopCode::NotWorthIterating)),
        case("000 assessment: expected gain below 0.1 but quality below the bar -> escalate", "", history(&[0.90, 0.935]))
            .expect(Escalate, Some(StopCode::NotWorthIterating)),
        case("000 strategy: one iteration short of the limit -> escalate",
            "stopping_criteria: {iteration_limits: {min: 1, max: 3}}", warned(vec![failing(1, 0.5, 2), rec(2, 0.7)]))
            .expect(Escalate, Some(StopCode::IterationLimitNear)),
        case("compacted history: the latest record's number counts toward max iterations",
            "stopping_criteria: {iteration_limits: {min: 1, max: 10}}", vec![rec(9, 0.5), rec(10, 0.6)])
            .expect(Escalate, Some(StopCode::MaxIterationsReached)),
        case("VOID iteration alone: a validation failure, no best output -> iterate", "",
            { let mut r = rec(1, 0.9); r.status = Status::Void; vec![r] })
            .expect(Iterate, None),
        // The revision loop counts rounds: a clean iteration ends a round.
        case("001 rounds: the first failure after three clean iterations is round 1 -> iterate", "",
            vec![rec(1, 0.96), rec(2, 0.96), rec(3, 0.96), failing(4, 0.5, 1)])
            .expect(Iterate, None),
        case("001 rounds: a clean iteration in between restarts the round count", "",
            vec![failing(1, 0.5, 5), failing(2, 0.6, 4), failing(3, 0.7, 3), rec(4, 0.96), failing(5, 0.8, 2)])
            .expect(Iterate, None),
        case("001 rounds: issues after a clean iteration are a new round 1, never stalled", "",
            vec![failing(1, 0.5, 2), rec(2, 0.96), failing(3, 0.6, 2)])
            .expect(Iterate, None),
        case("001 rounds: the trailing run past revision.max_iterations -> escalate", "",
            vec![rec(1, 0.96), failing(2, 0.5, 5), failing(3, 0.6, 4), failing(4, 0.7, 3), failing(5, 0.8, 2)])
            .expect(Escalate, Some(StopCode::RevisionLimitReached)),
        case("001 rounds: a stall within the run still escalates", "",
            vec![rec(1, 0.96), failing(2, 0.5, 2), failing(3, 0.6, 3)])
            .expect(Escalate, Some(StopCode::RevisionStalled)),
        // Iterate is always actionable.
        case("actionable: pass, below the bar, nothing to fix -> accept (nothing actionable)", "", history(&[0.5]))
            .expect(Accept, Some(StopCode::NothingActionable)),
        case("actionable: a regression with nothing to fix is not a reason to iterate -> accept", "",
            history(&[0.5, 0.7, 0.6]))
            .expect(Accept, Some(StopCode::NothingActionable)),
        case("actionable: a flat cycle with nothing to fix -> accept", "", history(&[0.5, 0.52]))
            .expect(Accept, Some(StopCode::NothingActionable)),
        case("actionable: status fail, only INFO issues, no trigger -> escalate (a human looks)", "",
            { let mut r = info_only(rec(1, 0.5)); r.status = Status::Fail; vec![r] })
            .expect(Escalate, Some(StopCode::NothingActionable)),
        case("actionable: a WARNING is something to act on -> iterate", "", warned(history(&[0.5])))
            .expect(Iterate, None),
        case("actionable: a trigger other than quality_threshold is something to act on -> iterate", "",
            { let mut r = rec(1, 0.5); r.triggers.push(trigger(TriggerType::IncompleteOutput, "todo!() added at src/lib.rs:3")); vec![r] })
            .expect(Iterate, None),
        case("actionable: limits keep precedence over nothing actionable", "stopping_criteria: {iteration_limits: {min: 1, max: 2}}",
            history(&[0.5, 0.6]))
            .expect(Escalate, Some(StopCode::MaxIterationsReached)),
        case("actionable: a human's escalation keeps precedence", "", history(&[0.5]))
            .feedback(Feedback { escalation: Some(String::new()), ..Feedback::default() })
            .expect(Escalate, Some(StopCode::EscalatedByHuman)),
        // Regression protection ignores noise.
        case("002 step 8 noise: a dip smaller than improvement_threshold is not a regression", "",
            warned(history(&[0.5, 0.7, 0.68])))
            .expect(Iterate, None),
        // Records from elsewhere get triggers.
        case("triggers: a hand-written failing record without triggers -> iterate on its BLOCKERs", "",
            { let mut r = failing(1, 0.5, 2); r.triggers.clear(); vec![r] })
            .expect(Iterate, None),
    ]
}

#[test]
fn every_stopping_rule() {
    let mut failures = Vec::new();
    for case in cases() {
        let config = config(case.config);
        let d = decide_with(&config, &case.history, &case.feedback);
        let stop = d.stopping_reason.as_ref().map(|r| r.code);
        if d.recommendation() != case.recommendation || stop != case.stop {
            failures.push(format!(
                "{}\n    expected {:?} {:?}, got {:?} {:?} ({:?})",
                case.rule,
                case.recommendation,
                case.stop,
                d.recommendation(),
                stop,
                d.stopping_reason.as_ref().map(|r| &r.summary)
            ));
        }
        assert_eq!(
            d.decision.needs_iteration,
            d.recommendation() == Recommendation::Iterate
        );
    }
    assert!(
        failures.is_empty(),
        "rules broken:\n{}",
        failures.join("\n")
    );
}

#[test]
fn quota_reached_asks_for_a_structural_variant() {
    let d = decide_default(&warned(history(&[0.5, 0.51, 0.52, 0.53])));
    let strategy = d.strategy.expect("iterate has a strategy");
    assert!(strategy
        .modifications
        .iter()
        .any(|m| matches!(m, Modification::StructuralVariant { .. })));
}

#[test]
fn regression_asks_to_revert_to_the_best() {
    let d = decide_default(&warned(history(&[0.5, 0.7, 0.6])));
    assert_eq!(d.best_iteration, Some(2));
    let strategy = d.strategy.expect("strategy");
    assert!(strategy
        .modifications
        .contains(&Modification::RevertTo { iteration: 2 }));
}

#[test]
fn budget_stop_report_has_the_schema_fields() {
    let config = config("stopping_criteria: {budget_limits: {total_tokens: 1000, tool_calls: 50}}");
    let mut a = with_tokens(rec(1, 0.5), 600);
    a.experiment.hypothesis = Some("cache the parse".into());
    let h = vec![a, with_tokens(rec(2, 0.7), 600)];
    let d = decide_with(&config, &h, &Feedback::default());
    let report = d.budget_stop_report.expect("budget stop report");
    assert_eq!(report.stop_reason, "total_tokens_exhausted");
    assert_eq!(report.budgets.exhausted, vec!["total_tokens".to_string()]);
    assert_eq!(report.budgets.unobservable, vec!["tool_calls".to_string()]);
    assert_eq!(report.selected_iteration, Some(2));
    assert_eq!(report.final_iteration, Some(2));
    assert_eq!(report.hypothesis_outcomes.len(), 1);
    assert_eq!(d.budget.used_tokens, Some(1200));
    assert_eq!(d.budget.remaining_tokens, Some(0));
}

#[test]
fn unobserved_usage_is_null_not_zero() {
    let config = config("stopping_criteria: {budget_limits: {total_tokens: 1000}}");
    let d = decide_with(&config, &history(&[0.5]), &Feedback::default());
    assert_eq!(d.budget.used_tokens, None);
    assert_eq!(d.budget.remaining_tokens, None);
    assert_eq!(d.budget.unobservable, vec!["total_tokens".to_string()]);
}

#[test]
fn projected_overrun_is_a_warning_or_a_hard_stop() {
    let h = warned(vec![
        with_tokens(rec(1, 0.5), 400),
        with_tokens(rec(2, 0.7), 400),
    ]);
    let soft = decide_with(
        &config("stopping_criteria: {budget_limits: {total_tokens: 1000}}"),
        &h,
        &Feedback::default(),
    );
    assert_eq!(soft.recommendation(), Recommendation::Iterate);
    assert!(
        soft.budget
            .warnings
            .iter()
            .any(|w| w.contains("total_tokens")),
        "{:?}",
        soft.budget.warnings
    );
    let hard = decide_with(
        &config("stopping_criteria: {budget_limits: {total_tokens: 1000, rate_caps_are_hard_stops: true}}"),
        &h,
        &Feedback::default(),
    );
    assert_eq!(
        hard.stopping_reason.map(|r| r.code),
        Some(StopCode::BudgetExhausted)
    );
}

#[test]
fn void_iterations_are_fenced_out_of_best_selection() {
    let mut h = history(&[0.6, 0.99, 0.7]);
    h[1].status = Status::Void;
    let d = decide_default(&h);
    assert_eq!(d.best_iteration, Some(3));
}

#[test]
fn revision_progress_line_matches_the_pattern() {
    let d = decide_default(&[failing(1, 0.5, 3), failing(2, 0.6, 2)]);
    assert_eq!(
        d.revision.line(),
        "Revision iteration 2/3 -- 2 blockers, 0 warnings"
    );
    assert_eq!(d.revision.previous_count, Some(3));
}

#[test]
fn strategy_precedence() {
    let kind = |h: &[IterationRecord], f: Feedback| {
        decide_with(&Config::default(), h, &f)
            .strategy
            .map(|s| s.kind)
    };
    // validation failure -> retry
    assert_eq!(
        kind(&[failing(1, 0.5, 2)], Feedback::default()),
        Some(StrategyType::Retry)
    );
    // same triggers after a retry -> refine
    assert_eq!(
        kind(
            &[failing(1, 0.5, 3), failing(2, 0.6, 2)],
            Feedback::default()
        ),
        Some(StrategyType::Refine)
    );
    // low confidence -> expand
    let mut r = rec(1, 0.6);
    r.confidence = Some(0.5);
    assert_eq!(kind(&[r], Feedback::default()), Some(StrategyType::Expand));
    // hallucination -> retry with verification
    let mut r = rec(1, 0.6);
    r.triggers.push(trigger(
        TriggerType::HallucinationDetected,
        "E0432 unresolved import `serde_jsn`",
    ));
    let d = decide_default(&[r]);
    let s = d.strategy.expect("strategy");
    assert_eq!(s.kind, StrategyType::Retry);
    assert!(s.modifications.contains(&Modification::RequireVerification));
    // explicit feedback -> refine around it
    let f = Feedback {
        messages: vec!["please keep the public API".into()],
        ..Feedback::default()
    };
    assert_eq!(kind(&[rec(1, 0.6)], f), Some(StrategyType::Refine));
    // flaky failures only -> plain retry
    let mut r = rec(1, 0.6);
    let mut t = trigger(
        TriggerType::ValidationFailure,
        "net::tests::timeout flipped",
    );
    t.source = "flaky".into();
    r.triggers.push(t);
    let d = decide_default(&[r]);
    let s = d.strategy.expect("strategy");
    assert_eq!(s.kind, StrategyType::Retry);
    assert!(s.modifications.is_empty());
}

#[test]
fn simplify_when_complexity_is_what_fell() {
    let mut a = rec(1, 1.0);
    a.scores.complexity = Some(0.8);
    let mut b = rec(2, 1.0);
    b.scores.complexity = Some(0.5);
    let d = decide_default(&warned(vec![a, b]));
    assert_eq!(d.strategy.map(|s| s.kind), Some(StrategyType::Simplify));
}

fn trigger_types(config: &Config, r: IterationRecord, f: Feedback) -> Vec<TriggerType> {
    decide_with(config, &[r], &f)
        .triggers
        .iter()
        .map(|t| t.kind)
        .collect()
}

#[test]
fn every_trigger_type() {
    let none = Feedback::default;
    let d = Config::default();
    // validation_failure: from the record's signals, and a VOID/error status
    assert!(trigger_types(&d, failing(1, 0.5, 1), none()).contains(&TriggerType::ValidationFailure));
    let mut void = rec(1, 0.97);
    void.status = Status::Error;
    assert_eq!(
        trigger_types(&d, void, none()),
        vec![TriggerType::ValidationFailure]
    );
    // low_confidence: the Confidence trailer below detection.min_confidence
    let mut r = rec(1, 0.97);
    r.confidence = Some(0.6);
    let t = decide_default(&[r]).triggers;
    assert_eq!(t[0].kind, TriggerType::LowConfidence);
    assert_eq!(t[0].details, "Confidence 60% below threshold 75%");
    assert!((t[0].severity - 0.4).abs() < 1e-9);
    // incomplete_output and hallucination_detected pass through from the record
    let mut r = rec(1, 0.97);
    r.triggers.push(trigger(
        TriggerType::IncompleteOutput,
        "todo!() added at src/lib.rs:3",
    ));
    r.triggers.push(trigger(
        TriggerType::HallucinationDetected,
        "E0425 cannot find function `parse_all`",
    ));
    let kinds = trigger_types(&d, r, none());
    assert!(
        kinds.contains(&TriggerType::IncompleteOutput)
            && kinds.contains(&TriggerType::HallucinationDetected)
    );
    // explicit_feedback and user_rejection come from people
    let f = Feedback {
        messages: vec!["use the existing helper".into()],
        rejections: vec!["changes requested".into()],
        ..Feedback::default()
    };
    let kinds = trigger_types(&d, rec(1, 0.97), f);
    assert_eq!(
        kinds,
        vec![TriggerType::ExplicitFeedback, TriggerType::UserRejection]
    );
    // quality_threshold below the threshold
    assert_eq!(
        trigger_types(&d, rec(1, 0.5), none()),
        vec![TriggerType::QualityThreshold]
    );
    // requirement_unmet: measured below the minimum, and not measured at all
    let c = config("requirements: [{metric: coverage, min: 0.8}, {metric: lint.errors, max: 0, priority: preferred}]");
    let mut r = rec(1, 0.97);
    r.scores.coverage = Some(0.5);
    let t = decide_with(&c, &[r], &none()).triggers;
    let unmet: Vec<_> = t
        .iter()
        .filter(|t| t.kind == TriggerType::RequirementUnmet)
        .collect();
    assert_eq!(unmet.len(), 2, "{t:?}");
    assert!(
        (unmet[0].severity - 0.9).abs() < 1e-9 && unmet[0].details.contains("coverage is 0.500")
    );
    assert!((unmet[1].severity - 0.5).abs() < 1e-9 && unmet[1].details.contains("not measured"));
}

#[test]
fn baseline_comparison_reports_the_lift() {
    let base = rec(0, 0.6);
    let h = history(&[0.7, 0.9]);
    let d = itergate::engine::decide(&itergate::engine::DecideInput {
        task_id: "t",
        config: &Config::default(),
        history: &h,
        feedback: &Feedback::default(),
        baseline: Some(&base),
        now: t0(),
    })
    .expect("decision");
    let b = d.baseline_comparison.expect("comparison");
    assert!((b.quality_lift - 0.3).abs() < 1e-9);
    assert!((b.quality_lift_pct.expect("pct") - 50.0).abs() < 1e-6);
}

#[test]
fn empty_history_is_an_error_not_a_panic() {
    let r = itergate::engine::decide(&itergate::engine::DecideInput {
        task_id: "t",
        config: &Config::default(),
        history: &[],
        feedback: &Feedback::default(),
        baseline: None,
        now: t0(),
    });
    assert!(r.is_err());
}

// ---- The revision loop counts rounds -------------------------------------------------

#[test]
fn revision_round_is_the_trailing_run_of_iterations_with_issues() {
    // (history, round, previous count in the same run)
    let rows: Vec<(&str, Vec<IterationRecord>, u32, Option<usize>)> = vec![
        (
            "clean latest: no open round",
            vec![failing(1, 0.5, 2), rec(2, 0.96)],
            0,
            None,
        ),
        (
            "first failure after clean ones: round 1",
            vec![rec(1, 0.96), rec(2, 0.96), rec(3, 0.96), failing(4, 0.5, 1)],
            1,
            None,
        ),
        (
            "two failing in a row: round 2",
            vec![rec(1, 0.96), failing(2, 0.5, 3), failing(3, 0.6, 2)],
            2,
            Some(3),
        ),
        (
            "INFO only is clean",
            vec![failing(1, 0.5, 2), info_only(rec(2, 0.97))],
            0,
            None,
        ),
        (
            "a clean one in between restarts",
            vec![failing(1, 0.5, 3), rec(2, 0.96), failing(3, 0.6, 2)],
            1,
            None,
        ),
    ];
    for (rule, h, round, previous) in rows {
        let d = decide_default(&h);
        assert_eq!(d.revision.iteration, round, "{rule}");
        assert_eq!(d.revision.previous_count, previous, "{rule}");
    }
}

#[test]
fn adjust_restarts_the_round_count() {
    let h = vec![
        failing(1, 0.5, 5),
        failing(2, 0.6, 4),
        failing(3, 0.7, 3),
        failing(4, 0.8, 2),
    ];
    let f = Feedback {
        restart_after: Some(2),
        ..Feedback::default()
    };
    let d = decide_with(&Config::default(), &h, &f);
    assert_eq!(d.revision.iteration, 2);
    assert_eq!(d.revision.previous_count, Some(3));

    // Adjusted at the latest iteration: no round is counted yet, but its issues are still
    // there to fix, and the line says so instead of "no open round".
    let f = Feedback {
        restart_after: Some(4),
        ..Feedback::default()
    };
    let d = decide_with(&Config::default(), &h, &f);
    assert_eq!(d.revision.iteration, 0);
    assert!(d.revision.restarted());
    assert_eq!(
        d.revision.blockers,
        h[3].count(itergate::model::Severity::Blocker)
    );
}

#[test]
fn revision_line_never_shows_a_round_past_the_limit() {
    use itergate::engine::RevisionProgress;
    let p = |iteration, max_iterations| RevisionProgress {
        iteration,
        max_iterations,
        blockers: 1,
        warnings: 2,
        previous_count: None,
    };
    let clean = RevisionProgress {
        blockers: 0,
        warnings: 0,
        ..p(0, 3)
    };
    assert_eq!(clean.line(), "No open revision round");
    // A person's adjust at an iteration that still has issues: the count starts again.
    assert_eq!(
        p(0, 3).line(),
        "Revision rounds restarted by a person (next: 1/3) -- 1 blocker, 2 warnings"
    );
    assert_eq!(
        p(3, 3).line(),
        "Revision iteration 3/3 -- 1 blocker, 2 warnings"
    );
    assert_eq!(
        p(4, 3).line(),
        "Revision limit of 3 rounds reached -- 1 blocker, 2 warnings"
    );
    assert_eq!(
        p(12, 1).line(),
        "Revision limit of 1 round reached -- 1 blocker, 2 warnings"
    );
    // The exceeded round escalates.
    let d = decide_default(&[
        failing(1, 0.5, 5),
        failing(2, 0.6, 4),
        failing(3, 0.7, 3),
        failing(4, 0.8, 2),
    ]);
    assert_eq!(d.recommendation(), Recommendation::Escalate);
    assert!(!d.revision.line().contains("4/3"), "{}", d.revision.line());
}

#[test]
fn clean_iteration_has_no_revision_line_in_the_summary() {
    use itergate::render::Renderer;
    let config = Config::default();
    let renderer = Renderer::new(None, false).expect("templates");
    let render = |h: &[IterationRecord]| {
        let now = h.last().map(|r| r.timestamp).unwrap_or_else(t0) + chrono::Duration::minutes(1);
        let evaluation = itergate::engine::evaluate(&itergate::engine::DecideInput {
            task_id: "task",
            config: &config,
            history: h,
            feedback: &Feedback::default(),
            baseline: None,
            now,
        })
        .expect("evaluation");
        renderer
            .render(
                "decision.txt.j2",
                &itergate::summary::decision_view(h, &evaluation),
            )
            .expect("renders")
    };
    let clean = render(&[failing(1, 0.5, 2), rec(2, 0.96)]);
    assert!(!clean.contains("Revision"), "{clean}");
    let failing_text = render(&[rec(1, 0.96), failing(2, 0.5, 1)]);
    assert!(
        failing_text.contains("Revision iteration 1/3 -- 1 blocker, 0 warnings"),
        "{failing_text}"
    );
}

// ---- Iterate is always actionable ----------------------------------------------------

#[test]
fn nothing_actionable_accepts_with_a_reason_that_says_so() {
    let d = decide_default(&history(&[0.91]));
    assert_eq!(d.recommendation(), Recommendation::Accept);
    let reason = d.stopping_reason.expect("reason");
    assert_eq!(
        reason.summary,
        "No actionable problem in the change: quality 0.91 is below 0.95 but no check reported anything to fix"
    );
    let yaml = serde_norway::to_string(&reason.code).expect("yaml");
    assert_eq!(yaml.trim(), "nothing_actionable");
}

// ---- Regression protection -----------------------------------------------------------

#[test]
fn regression_noise_is_neither_flagged_nor_counted() {
    use itergate::engine::trajectory::Trajectory;
    let h = history(&[0.3, 0.6, 0.57, 0.58, 0.56, 0.5]);
    let t = Trajectory::build(&Config::default(), &h);
    let flags: Vec<bool> = t.points.iter().map(|p| p.regression).collect();
    assert_eq!(flags, vec![false, false, false, false, false, true]);
    assert_eq!(t.points[5].cumulative.regression_count, 1);
    // Exactly the threshold below the best is a regression.
    let t = Trajectory::build(&Config::default(), &history(&[0.6, 0.55]));
    assert!(t.points[1].regression);
    // Without an improvement threshold every drop counts.
    let c = config("stopping_criteria: {improvement_threshold: {enabled: false}}");
    let t = Trajectory::build(&c, &h);
    assert_eq!(t.points[5].cumulative.regression_count, 4);
    // And a noisy dip asks for no revert.
    let d = decide_default(&warned(history(&[0.5, 0.7, 0.68])));
    let strategy = d.strategy.expect("iterate has a strategy");
    assert!(
        !strategy
            .modifications
            .iter()
            .any(|m| matches!(m, Modification::RevertTo { .. })),
        "{strategy:?}"
    );
}

fn with_coverage(iteration: u32, tests: f64, coverage: f64) -> IterationRecord {
    let mut r = rec(iteration, tests);
    r.scores.coverage = Some(coverage);
    r
}

fn coverage_warning(mut r: IterationRecord) -> IterationRecord {
    let mut i = issue(Severity::Warning, "changed lines not covered");
    i.dimension = "coverage".into();
    r.issues.push(i);
    r
}

#[test]
fn untested_code_dip_asks_for_tests_not_a_restart() {
    // Iteration 2 (quality 0.97) stays below this bar: all three are one attempt.
    let config = config("stopping_criteria: {quality_threshold: {value: 0.99}}");
    let reverts = |h: &[IterationRecord]| {
        let d = decide_with(&config, h, &Feedback::default());
        assert_eq!(
            d.recommendation(),
            Recommendation::Iterate,
            "{:?}",
            d.stopping_reason
        );
        d.strategy
            .expect("strategy")
            .modifications
            .iter()
            .any(|m| matches!(m, Modification::RevertTo { iteration: 2 }))
    };
    // Coverage alone fell, and coverage warnings say where: no revert.
    let untested = vec![
        with_coverage(1, 1.0, 0.5),
        with_coverage(2, 1.0, 0.9),
        coverage_warning(with_coverage(3, 1.0, 0.6)),
    ];
    assert!(!reverts(&untested), "a coverage-only dip is not a restart");
    let t = itergate::engine::trajectory::Trajectory::build(&config, &untested);
    assert!(t.points[2].regression, "it is still a regression");
    // Tests fell too: a real regression, revert.
    let broken = vec![
        with_coverage(1, 1.0, 0.5),
        with_coverage(2, 1.0, 0.9),
        coverage_warning(with_coverage(3, 0.8, 0.6)),
    ];
    assert!(reverts(&broken));
    // Coverage fell but no coverage issue says what to test: revert.
    let unexplained = vec![
        with_coverage(1, 1.0, 0.5),
        with_coverage(2, 1.0, 0.9),
        warned(vec![with_coverage(3, 1.0, 0.6)]).remove(0),
    ];
    assert!(reverts(&unexplained));
}

// ---- Attempts: what follows finished work is new work ---------------------------------

#[test]
fn after_an_iteration_that_met_the_bar_a_new_attempt_begins() {
    // Accepted twice, then one warning: a new problem, not a plateau, a flat cycle or a
    // regression to revert.
    let h = vec![
        rec(1, 1.0),
        rec(2, 1.0),
        rec(3, 1.0),
        warned(vec![rec(4, 0.9)]).remove(0),
    ];
    let d = decide_default(&h);
    assert_eq!(
        d.recommendation(),
        Recommendation::Iterate,
        "{:?}",
        d.stopping_reason
    );
    let strategy = d.strategy.expect("strategy");
    assert!(
        !strategy.modifications.iter().any(|m| matches!(
            m,
            Modification::RevertTo { .. } | Modification::StructuralVariant { .. }
        )),
        "{strategy:?}"
    );
    let t = itergate::engine::trajectory::Trajectory::build(&Config::default(), &h);
    assert_eq!(t.attempt_start, 3);
    assert!(!t.points[3].flat && !t.points[3].regression);
    // Regressions are counted within an attempt: three dips, each fixed back to the bar,
    // never add up to the regression limit.
    let mut wavy = Vec::new();
    for i in 0..4 {
        wavy.push(rec(2 * i + 1, 1.0));
        wavy.push(warned(vec![rec(2 * i + 2, 0.8)]).remove(0));
    }
    let d = decide_default(&wavy);
    assert_ne!(
        d.stopping_reason.as_ref().map(|r| r.code),
        Some(StopCode::RegressionLimit),
        "{:?}",
        d.stopping_reason
    );
    // Within one attempt, they do.
    let stuck = vec![
        rec(1, 0.8),
        warned(vec![rec(2, 0.6)]).remove(0),
        warned(vec![rec(3, 0.8)]).remove(0),
        warned(vec![rec(4, 0.6)]).remove(0),
    ];
    let t = itergate::engine::trajectory::Trajectory::build(&Config::default(), &stuck);
    assert_eq!(t.points[3].attempt_regressions, 2);
}

// ---- Records from elsewhere get triggers ----------------------------------------------

#[test]
fn records_without_triggers_get_them_from_their_issues() {
    let mut r = rec(1, 0.5);
    r.status = Status::Fail;
    r.issues = vec![
        issue(Severity::Blocker, "test a failed"),
        issue(Severity::Blocker, "test b failed"),
        issue(Severity::Warning, "slow test"),
    ];
    let mut lint = issue(Severity::Blocker, "E0308 mismatched types");
    lint.dimension = "lint".into();
    r.issues.push(lint);
    let t = decide_default(std::slice::from_ref(&r)).triggers;
    let derived: Vec<_> = t
        .iter()
        .filter(|t| t.kind == TriggerType::ValidationFailure)
        .map(|t| (t.details.as_str(), t.source.as_str(), t.severity, t.fixable))
        .collect();
    assert_eq!(
        derived,
        vec![
            ("2 tests failed", "issues", 0.7, true),
            ("1 blocking `lint` issue", "issues", 0.7, true),
        ]
    );
    // No test passed: the most severe.
    r.scores.tests_passing = Some(0.0);
    let t = decide_default(std::slice::from_ref(&r)).triggers;
    assert!(t
        .iter()
        .filter(|t| t.kind == TriggerType::ValidationFailure)
        .all(|t| t.severity == 1.0));
    // A record's own triggers are kept as they are.
    let own = failing(1, 0.5, 3);
    let t = decide_default(&[own]).triggers;
    let details: Vec<_> = t.iter().map(|t| t.details.as_str()).collect();
    assert!(details.contains(&"3 tests failed") && !details.contains(&"3 blocking `tests` issues"));
    assert_eq!(
        t.iter()
            .filter(|t| t.kind == TriggerType::ValidationFailure)
            .count(),
        1
    );
    // A failed record without issues.
    let mut failed = rec(1, 0.5);
    failed.status = Status::Fail;
    let t = decide_default(&[failed]).triggers;
    assert!(t.iter().any(|t| t.kind == TriggerType::ValidationFailure
        && t.details == "the iteration failed its checks"));
    // A passing record with only warnings gets none.
    let t = decide_default(&warned(history(&[0.5]))).triggers;
    assert!(t.iter().all(|t| t.kind == TriggerType::QualityThreshold));
}

#[test]
fn hand_written_history_file_gets_triggers_and_iterates() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/histories/handwritten.yml");
    let h = itergate::history::file::load_history(&path).expect("fixture parses");
    assert!(
        h.iter().all(|r| r.triggers.is_empty()),
        "the fixture carries no triggers"
    );
    let d = decide_default(&h);
    assert_eq!(
        d.recommendation(),
        Recommendation::Iterate,
        "{:?}",
        d.stopping_reason
    );
    let failures: Vec<_> = d
        .triggers
        .iter()
        .filter(|t| t.kind == TriggerType::ValidationFailure)
        .map(|t| t.details.as_str())
        .collect();
    assert_eq!(failures, vec!["1 test failed", "2 blocking `lint` issues"]);
    assert_eq!(d.revision.iteration, 2);
}

#[test]
fn budget_sums_saturate_instead_of_wrapping() {
    let config = config("stopping_criteria: {budget_limits: {total_tokens: 1000, tool_calls: 50}}");
    let half = 1u64 << 63;
    for (a, b) in [(half, half), (5000, u64::MAX - 999), (u64::MAX, u64::MAX)] {
        let mut first = with_tokens(rec(1, 0.5), a);
        first.tool_calls = Some(a);
        let mut second = with_tokens(rec(2, 0.7), b);
        second.tool_calls = Some(b);
        let d = decide_with(&config, &[first, second], &Feedback::default());
        assert_eq!(d.budget.used_tokens, Some(u64::MAX), "{a} + {b}");
        assert_eq!(d.budget.remaining_tokens, Some(0), "{a} + {b}");
        let report = d.budget_stop_report.expect("the budget is exhausted");
        assert!(
            report
                .budgets
                .exhausted
                .contains(&"total_tokens".to_string()),
            "{a} + {b}: {:?}",
            report.budgets.exhausted
        );
    }
}

#[test]
fn next_steps_name_failures_with_one_cause_once() {
    let mut r = rec(1, 0.5);
    r.status = Status::Fail;
    for i in 0..40 {
        r.issues.push(itergate::model::CheckerIssue {
            dimension: "tests".into(),
            severity: Severity::Blocker,
            finding: format!(
                "test suite::case_{i:02} failed: called `Option::unwrap()` on a `None` value"
            ),
            affected_field: Some("src/parse.rs:17".into()),
            suggested_fix: None,
            kind: None,
            subject: None,
        });
    }
    let d = decide_default(&[r]);
    let fixes: Vec<_> = d
        .next_steps
        .iter()
        .filter(|s| s.starts_with("Fix tests"))
        .collect();
    assert_eq!(fixes.len(), 1, "{:?}", d.next_steps);
    assert!(
        fixes[0].contains("40 tests failed with one cause"),
        "{}",
        fixes[0]
    );
    assert!(fixes[0].contains("src/parse.rs:17"), "{}", fixes[0]);
}

/// An iteration that removed passing tests (an integrity WARNING, not VOID) scores high,
/// but is never named the best while an iteration without such a finding is there.
#[test]
fn an_iteration_with_an_open_integrity_finding_is_not_the_best() {
    let mut removed = rec(1, 1.0);
    removed.issues.push(itergate::model::CheckerIssue {
        dimension: itergate::signals::integrity::DIMENSION.into(),
        severity: Severity::Warning,
        finding: "test t::case[1] was removed from check `tests`".into(),
        affected_field: Some("tests/test_t.py:3".into()),
        suggested_fix: None,
        kind: None,
        subject: None,
    });
    let history = vec![removed.clone(), failing(2, 0.8, 1)];
    let d = decide_default(&history);
    assert_eq!(d.best_iteration, Some(2), "{d:?}");
    // Nor when it is the only scored one: no best at all (the loop goes back to the start).
    let d = decide_default(&[removed]);
    assert_eq!(d.best_iteration, None, "{d:?}");
}

/// An iteration with a failing test scores high when its failure costs it nothing else (a
/// coverage report the failing run never wrote), but it is never named the best beside one
/// that passes: not the previous one, nor a later one after the passing latest.
#[test]
fn a_failing_iteration_is_never_the_best_beside_a_passing_one() {
    let d = decide_default(&[failing(1, 0.99, 1), rec(2, 0.9)]);
    assert_eq!(d.best_iteration, Some(2), "{d:?}");
    let d = decide_default(&[rec(1, 0.8), failing(2, 0.99, 1), failing(3, 0.98, 1)]);
    assert_eq!(d.best_iteration, Some(1), "{d:?}");
    // With none passing, the best of those that fail is still the one to go back to.
    let d = decide_default(&[failing(1, 0.6, 2), failing(2, 0.9, 1), failing(3, 0.5, 3)]);
    assert_eq!(d.best_iteration, Some(2), "{d:?}");
}

/// One output names one best: the current attempt's (after iteration 2 met the bar),
/// in "Best iteration so far" and in "start again from".
#[test]
fn one_output_names_one_best() {
    let history = vec![
        failing(1, 0.5, 4),
        rec(2, 1.0),
        failing(3, 0.80, 3),
        failing(4, 0.88, 2),
        failing(5, 0.70, 1),
    ];
    let d = decide_default(&history);
    let reverted = d.strategy.as_ref().and_then(|s| {
        s.modifications.iter().find_map(|m| match m {
            itergate::engine::Modification::RevertTo { iteration } => Some(*iteration),
            _ => None,
        })
    });
    if let Some(reverted) = reverted {
        assert_eq!(d.best_iteration, Some(reverted), "{d:?}");
    }
    assert_eq!(d.best_iteration, Some(4), "{d:?}");
}

/// Two iterations fitted to the visible tests (their targets pass, a holdout fails): the
/// second escalates, and says what happened — not that tests were changed.
#[test]
fn iterations_fitted_to_the_visible_tests_escalate_saying_so() {
    let fitted = |iteration: u32| {
        let mut r = rec(iteration, 0.9);
        r.status = Status::Void;
        r.quality = None;
        r.issues.push(itergate::model::CheckerIssue {
            dimension: itergate::signals::integrity::DIMENSION.into(),
            severity: Severity::Blocker,
            finding: format!(
                "{}: the task's target tests pass, and holdout check `holdout`: 0 of 2 passed",
                itergate::model::FITTED
            ),
            affected_field: Some("holdout".into()),
            suggested_fix: None,
            kind: None,
            subject: None,
        });
        r
    };
    let d = decide_default(&[fitted(1), fitted(2)]);
    let reason = d
        .stopping_reason
        .as_ref()
        .map(|r| r.summary.clone())
        .unwrap_or_default();
    assert!(
        reason.contains("fitted to the visible tests") && !reason.contains("changed the tests"),
        "{reason}"
    );
}

/// A VOID iteration's integrity finding is the first thing asked, in the prompt and in the
/// next steps; the type errors in the file that tampered with the tests are not asked at
/// all (restoring it removes them), while the failing tests and findings elsewhere stay.
#[test]
fn a_void_iterations_integrity_item_comes_first_and_its_files_findings_go() {
    let issue =
        |dimension: &str, severity, finding: &str, at: &str| itergate::model::CheckerIssue {
            dimension: dimension.into(),
            severity,
            finding: finding.into(),
            affected_field: Some(at.into()),
            suggested_fix: None,
            kind: None,
            subject: None,
        };
    let mut r = rec(1, 0.5);
    r.status = Status::Void;
    for k in 0..5 {
        r.issues.push(issue(
            "code_quality",
            Severity::Blocker,
            &format!("error: Function is missing a type annotation [no-untyped-def] {k}"),
            &format!("tests/conftest.py:{}", k + 3),
        ));
    }
    r.issues.push(issue(
        "code_quality",
        Severity::Warning,
        "F401 `os` imported but unused",
        "src/calc.py:1",
    ));
    r.issues.push(issue(
        "tests",
        Severity::Blocker,
        "test tests/test_calc.py::test_add failed: assert 1 == 2",
        "tests/test_calc.py:4",
    ));
    r.issues.push(issue(
        itergate::signals::integrity::DIMENSION,
        Severity::Blocker,
        "test tests/test_calc.py::test_add was changed to pass: under the task's start's tests and harness it still fails on this code, while this iteration's own run reports it passing; the change edited `tests/conftest.py`",
        "tests/test_calc.py:4",
    ));
    let items = itergate::engine::revision::revision_items(&r, &[]);
    assert_eq!(items[0].dimension, itergate::signals::integrity::DIMENSION);
    assert!(
        !items.iter().any(|i| i
            .affected_field
            .as_deref()
            .is_some_and(|f| f.starts_with("tests/conftest.py"))),
        "{items:?}"
    );
    assert!(
        items.iter().any(|i| i.finding.starts_with("F401")),
        "{items:?}"
    );
    assert!(items.iter().any(|i| i.dimension == "tests"), "{items:?}");
    let d = decide_default(&[r]);
    assert!(
        d.next_steps[0].contains("was changed to pass"),
        "{:?}",
        d.next_steps
    );
}

/// Two iterations whose production code hard-codes a failing test's values: VOID each time,
/// the first saying so in its trigger, the second escalating as code fitted to the tests —
/// not as tests changed.
#[test]
fn iterations_that_hard_code_test_values_escalate_saying_so() {
    let hard_coded = |iteration: u32| {
        let mut r = rec(iteration, 0.9);
        r.status = Status::Void;
        r.quality = None;
        r.issues.push(itergate::model::CheckerIssue {
            dimension: itergate::signals::integrity::DIMENSION.into(),
            severity: Severity::Blocker,
            finding: format!(
                "{} t::slug: branches on `Rust and Go` and returns `rust-and-go` (src/slug.rs:3)",
                itergate::model::HARD_CODED
            ),
            affected_field: Some("src/slug.rs:3".into()),
            suggested_fix: None,
            kind: None,
            subject: None,
        });
        r
    };
    let d = decide_default(&[hard_coded(1)]);
    assert!(
        d.triggers.iter().any(|t| t.details
            == "iteration is VOID: production code was fitted to the tests instead of fixed"),
        "{:?}",
        d.triggers
    );
    let d = decide_default(&[hard_coded(1), hard_coded(2)]);
    let reason = d
        .stopping_reason
        .as_ref()
        .map(|r| r.summary.clone())
        .unwrap_or_default();
    assert!(
        reason.contains("fitted the code to the tests") && !reason.contains("changed the tests"),
        "{reason}"
    );
}

/// The iteration limit reached with every iteration VOID for a violation: a person
/// decides (ESCALATE), never an abort as if nothing could be scored.
#[test]
fn the_limit_reached_on_violations_escalates() {
    let violated = |iteration: u32| {
        let mut r = rec(iteration, 0.9);
        r.status = Status::Void;
        r.quality = None;
        r.issues.push(itergate::model::CheckerIssue {
            dimension: itergate::signals::integrity::DIMENSION.into(),
            severity: Severity::Blocker,
            finding: "test t::spec was changed to pass".into(),
            affected_field: Some("tests/t.py:3".into()),
            suggested_fix: None,
            kind: Some(itergate::model::FindingKind::TestChangedToPass),
            subject: Some("t::spec".into()),
        });
        r
    };
    let mut config = itergate::config::Config::default();
    config.stopping_criteria.iteration_limits.max = 2;
    let d = decide_with(&config, &[violated(1), violated(2)], &Feedback::default());
    assert_eq!(d.recommendation(), Recommendation::Escalate, "{d:?}");
}
