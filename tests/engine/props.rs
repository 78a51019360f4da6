//! Properties of the engine over arbitrary histories and configurations.

use crate::common;

use chrono::Duration;
use common::t0;
use itergate::config::Config;
use itergate::engine::{decide, DecideInput, Feedback, Recommendation};
use itergate::model::{
    CheckerIssue, IterationRecord, Scores, Severity, Status, Trigger, TriggerType,
};
use proptest::prelude::*;

fn score() -> impl Strategy<Value = Option<f64>> {
    prop_oneof![Just(None), (0.0f64..=1.0).prop_map(Some)]
}

fn status() -> impl Strategy<Value = Status> {
    prop_oneof![
        Just(Status::Pass),
        Just(Status::Fail),
        Just(Status::Void),
        Just(Status::Error)
    ]
}

fn trigger_type() -> impl Strategy<Value = TriggerType> {
    prop_oneof![
        Just(TriggerType::ValidationFailure),
        Just(TriggerType::IncompleteOutput),
        Just(TriggerType::HallucinationDetected),
        Just(TriggerType::LowConfidence),
        Just(TriggerType::QualityThreshold),
        Just(TriggerType::RequirementUnmet),
    ]
}

fn feedback() -> impl Strategy<Value = Feedback> {
    (0usize..2, 0usize..2).prop_map(|(messages, rejections)| Feedback {
        messages: (0..messages).map(|i| format!("please {i}")).collect(),
        rejections: (0..rejections).map(|i| format!("no {i}")).collect(),
        ..Feedback::default()
    })
}

/// The items of the prompt's `<checker_issues>` YAML block.
fn prompt_items(
    record: &IterationRecord,
    decision: &itergate::engine::Decision,
) -> Vec<serde_norway::Value> {
    let prompt = itergate::render::Renderer::new(None, false)
        .expect("templates")
        .render(
            "revision-prompt.md.j2",
            &itergate::prompt::prompt_view(record, decision),
        )
        .expect("prompt renders");
    // An accepted iteration's prompt has no issue list at all.
    let Some(at) = prompt.find("<checker_issues>") else {
        return Vec::new();
    };
    let block = &prompt[at..];
    let start = block.find("```yaml\n").expect("a yaml fence") + "```yaml\n".len();
    let end = block[start..].find("\n```").expect("the fence closes") + start;
    serde_norway::from_str(&block[start..end]).expect("the block is a YAML list")
}

prop_compose! {
    fn record()(
        scores in (score(), score(), score(), score()),
        status in status(),
        blockers in 0usize..4,
        warnings in 0usize..3,
        infos in 0usize..2,
        triggers in proptest::collection::vec((trigger_type(), -0.5f64..1.5, any::<bool>()), 0..3),
        tokens in proptest::option::of(0u64..100_000),
        confidence in proptest::option::of(0.0f64..=1.0),
        variant in any::<bool>(),
    ) -> IterationRecord {
        let mut r = IterationRecord::new(0, t0());
        r.scores = Scores { tests_passing: scores.0, code_quality: scores.1, coverage: scores.2, complexity: scores.3 };
        r.status = status;
        let issue = |severity, i| CheckerIssue { dimension: "tests".into(), severity, finding: format!("f{i}"), affected_field: None, suggested_fix: None, kind: None, subject: None };
        r.issues = (0..blockers).map(|i| issue(Severity::Blocker, i))
            .chain((0..warnings).map(|i| issue(Severity::Warning, i)))
            .chain((0..infos).map(|i| issue(Severity::Info, i)))
            .collect();
        r.triggers = triggers.into_iter().enumerate().map(|(i, (kind, severity, fixable))| Trigger {
            kind, source: "p".into(), severity, details: format!("d{i}"), fixable }).collect();
        r.tokens_used = tokens;
        r.confidence = confidence;
        if variant { r.experiment.structural_variant = Some("v".into()); }
        r
    }
}

prop_compose! {
    fn history(max_len: usize)(records in proptest::collection::vec(record(), 1..max_len)) -> Vec<IterationRecord> {
        records.into_iter().enumerate().map(|(i, mut r)| {
            r.iteration = i as u32 + 1;
            r.timestamp = t0() + Duration::minutes(i as i64 * 7);
            r
        }).collect()
    }
}

prop_compose! {
    fn config()(
        min in 1u32..4, extra in 0u32..8, revisions in 1u32..5, k in 1u32..4,
        quota in any::<bool>(), tokens in proptest::option::of(1u64..300_000),
    ) -> Config {
        let mut c = Config::default();
        c.stopping_criteria.iteration_limits.min = min;
        c.stopping_criteria.iteration_limits.max = min + extra;
        c.revision.max_iterations = revisions;
        c.stopping_criteria.exploration_quota.k = k;
        c.stopping_criteria.exploration_quota.enabled = quota;
        c.stopping_criteria.budget_limits.total_tokens = tokens;
        c
    }
}

fn run(config: &Config, history: &[IterationRecord]) -> itergate::engine::Decision {
    decide(&DecideInput {
        task_id: "p",
        config,
        history,
        feedback: &Feedback::default(),
        baseline: history.first(),
        now: t0() + Duration::hours(10),
    })
    .expect("non-empty history")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn never_panics_and_stays_in_range(config in config(), history in history(14)) {
        let d = run(&config, &history);
        for t in &d.triggers {
            prop_assert!((0.0..=1.0).contains(&t.severity), "severity {}", t.severity);
        }
        prop_assert!((0.0..=1.0).contains(&d.assessment.likelihood));
        prop_assert!((0.0..=1.0).contains(&d.assessment.expected_gain));
        prop_assert_eq!(d.decision.needs_iteration, d.recommendation() == Recommendation::Iterate);
        if let Some(best) = d.best_iteration {
            let r = &history[best as usize - 1];
            prop_assert!(r.status.is_scored(), "best iteration {} is {:?}", best, r.status);
            let suspect = r.issues.iter().any(|i| {
                i.dimension == itergate::model::INTEGRITY_DIMENSION
                    && i.severity.counts_for_revision()
            });
            prop_assert!(!suspect, "best iteration {} has an open integrity finding", best);
        }
    }

    #[test]
    fn limits_are_never_exceeded(config in config(), history in history(14)) {
        let d = run(&config, &history);
        let max = config.stopping_criteria.iteration_limits.max as usize;
        if history.len() >= max {
            prop_assert_ne!(d.recommendation(), Recommendation::Iterate);
        }
        let used: u64 = history.iter().filter_map(|r| r.tokens_used).sum();
        if let Some(limit) = config.stopping_criteria.budget_limits.total_tokens {
            if history.iter().any(|r| r.tokens_used.is_some()) && used >= limit {
                prop_assert_ne!(d.recommendation(), Recommendation::Iterate);
            }
        }
        // The revision round is the trailing run of iterations with BLOCKER/WARNING issues.
        let round = history.iter().rev().take_while(|r| r.revision_issue_count() > 0).count() as u32;
        prop_assert_eq!(d.revision.iteration, round);
        if round > config.revision.max_iterations {
            prop_assert_ne!(d.recommendation(), Recommendation::Iterate);
        }
    }

    #[test]
    fn iterate_always_lists_an_issue_in_the_prompt(
        mut config in config(),
        history in history(14),
        feedback in feedback(),
        requirement in any::<bool>(),
    ) {
        if requirement {
            config.requirements.push(serde_norway::from_str("{ metric: coverage, min: 0.9 }").expect("requirement"));
        }
        let d = decide(&DecideInput {
            task_id: "p",
            config: &config,
            history: &history,
            feedback: &feedback,
            baseline: history.first(),
            now: t0() + Duration::hours(10),
        })
        .expect("non-empty history");
        let latest = history.last().expect("non-empty");
        let items = prompt_items(latest, &d);
        if d.recommendation() == Recommendation::Iterate {
            prop_assert!(!items.is_empty(), "iterate with an empty issue list: {:?}", d.triggers);
        }
        // Nothing to act on: accepted when it passed, else a person looks.
        let open = itergate::engine::revision::revision_items(latest, &d.triggers);
        if open.is_empty() && d.stopping_reason.as_ref().is_some_and(|r| r.code == itergate::engine::StopCode::NothingActionable) {
            let expected = if latest.status == Status::Pass { Recommendation::Accept } else { Recommendation::Escalate };
            prop_assert_eq!(d.recommendation(), expected);
        }
        if open.is_empty() {
            prop_assert_ne!(d.recommendation(), Recommendation::Iterate);
        }
    }

    #[test]
    fn the_revision_round_never_passes_the_limit_unless_escalating(config in config(), history in history(14)) {
        let d = run(&config, &history);
        // Abort (limits hit before any iteration could be scored) also stops the loop; it
        // keeps the true round, which the line shows as "limit of m rounds reached".
        if !matches!(d.recommendation(), Recommendation::Escalate | Recommendation::Abort) {
            prop_assert!(
                d.revision.iteration <= d.revision.max_iterations,
                "{:?} with round {}/{}", d.recommendation(), d.revision.iteration, d.revision.max_iterations
            );
        }
        let line = d.revision.line();
        prop_assert!(!line.starts_with("Revision iteration") || d.revision.iteration <= d.revision.max_iterations, "{}", line);
    }

    #[test]
    fn deterministic(config in config(), history in history(10)) {
        prop_assert_eq!(run(&config, &history), run(&config, &history));
    }
}

/// Files whose names the readers of changed lines look at.
const CHANGED_FILES: [&str; 8] = [
    "tests/conftest.py",
    "pyproject.toml",
    "Cargo.toml",
    "src/lib.rs",
    "test/a.test.ts",
    "eslint.config.js",
    "tsconfig.json",
    "pkg/a_test.go",
];

/// Lines that look like what the readers look for, and anything else.
fn change_line() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("-def test_x():".to_string()),
        Just("collect_ignore = [\"test_x.py\"]".to_string()),
        Just("x = 1  # noqa: E501".to_string()),
        Just("#[allow(clippy::unwrap_used)]".to_string()),
        Just("#![allow(".to_string()),
        Just("    clippy::unwrap_used,".to_string()),
        Just(")]".to_string()),
        Just("// eslint-disable-next-line".to_string()),
        Just("\"strict\": false".to_string()),
        Just("    todo!()".to_string()),
        Just("-    // TODO: é".to_string()),
        "\\PC{0,80}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Tamper evidence and markers read any change without panicking (the `integrity` fuzz
    /// target does the same with arbitrary bytes).
    #[test]
    fn readers_of_changed_lines_never_panic(lines in proptest::collection::vec(change_line(), 0..60)) {
        use itergate::model::{AddedLine, ChangedLines, RemovedLine};
        use itergate::signals::{integrity, markers, observation::Observation};
        let mut changed = ChangedLines::default();
        for (i, line) in lines.iter().enumerate() {
            let file = CHANGED_FILES[i % CHANGED_FILES.len()].to_string();
            let number = i as u32 + 1;
            match line.strip_prefix('-') {
                Some(text) => changed.removed.entry(file).or_default().push(RemovedLine { line: number, text: text.into() }),
                None => changed.files.entry(file).or_default().push(AddedLine { line: number, text: line.clone() }),
            }
        }
        let head = Observation::default();
        let is_test = |p: &str| p.contains("test");
        let found = integrity::check(&integrity::Input {
            head: &head,
            base: Some(&head),
            earlier: &integrity::Earlier::NONE,
            changed: &changed,
            is_test: &is_test,
            check_files: &[("tests".into(), "package.json".into())],
            check_commands: &[Some("npm test".into())],
            // Every file reads as all the lines: line numbers past its end, lists opened
            // anywhere.
            head_source: &|_| Some(lines.join("\n")),
            trusted: None,
        });
        for f in &found {
            prop_assert_eq!(&f.issue.dimension, integrity::DIMENSION);
            prop_assert!(f.issue.affected_field.is_some());
        }
        let paths = markers::Paths { is_source: &|_| true, is_test: &is_test };
        let _ = markers::new_markers(&changed, &paths, itergate::config::MarkerComments::Warning);
    }
}
