//! Strategy selection, in the iteration detector's order of precedence:
//!
//! 1. the previous strategy was `retry` and the same trigger types came back → `refine`;
//! 2. a person's words (`explicit_feedback`, `user_rejection`) → `refine` around them;
//! 3. `validation_failure` → `retry`, fixing the failures (flaky failures alone: a plain
//!    `retry`);
//! 4. `low_confidence` → `expand` with evidence;
//! 5. `hallucination_detected` → `retry`, verifying every name used;
//! 6. complexity is the dimension that fell most → `simplify`;
//! 7. one iteration short of the limit → `escalate`;
//! 8. otherwise `retry`, addressing the identified issues.
//!
//! The stopping flow may add a structural-variant or revert modification afterwards.

use std::collections::BTreeSet;

use crate::model::{Delta, Dimension, IterationRecord, Severity, Trigger, TriggerType};

use super::decision::{ContextAdjustment, Modification, Strategy, StrategyType};

/// Most spans listed in a focus adjustment; beyond this the prompt lists the issues.
const MAX_FOCUS_SPANS: usize = 20;

pub struct StrategyInput<'a> {
    pub triggers: &'a [Trigger],
    /// Trigger types of the previous iteration, if any.
    pub previous: Option<&'a [Trigger]>,
    pub latest: &'a IterationRecord,
    pub delta: &'a Delta,
    pub iteration: u32,
    pub max_iterations: u32,
}

pub fn select(input: &StrategyInput) -> Strategy {
    let types: BTreeSet<TriggerType> = input.triggers.iter().map(|t| t.kind).collect();
    let previous_retry = input
        .previous
        .filter(|prev| basic(prev) == StrategyType::Retry);
    let mut strategy =
        if previous_retry.is_some_and(|prev| !types.is_empty() && kinds(prev) == types) {
            refine(
                input.triggers,
                "Focus on the specific issues identified; the last retry did not change them",
            )
        } else {
            select_basic(input, &types)
        };
    let spans = focus_spans(input.latest);
    if !spans.is_empty() && strategy.kind != StrategyType::Escalate {
        strategy
            .context_adjustments
            .push(ContextAdjustment::FocusSpans { spans });
    }
    strategy
}

fn kinds(triggers: &[Trigger]) -> BTreeSet<TriggerType> {
    triggers.iter().map(|t| t.kind).collect()
}

/// The type rules 2–5 and 8 would pick, without history (used for the previous iteration).
fn basic(triggers: &[Trigger]) -> StrategyType {
    let types = kinds(triggers);
    if types.contains(&TriggerType::ExplicitFeedback) || types.contains(&TriggerType::UserRejection)
    {
        StrategyType::Refine
    } else if types.contains(&TriggerType::LowConfidence)
        && !types.contains(&TriggerType::ValidationFailure)
    {
        StrategyType::Expand
    } else {
        StrategyType::Retry
    }
}

fn details(triggers: &[Trigger], kind: TriggerType) -> Vec<String> {
    triggers
        .iter()
        .filter(|t| t.kind == kind)
        .map(|t| t.details.clone())
        .collect()
}

fn refine(triggers: &[Trigger], guidance: &str) -> Strategy {
    let targets: Vec<String> = triggers.iter().map(|t| t.details.clone()).collect();
    Strategy {
        kind: StrategyType::Refine,
        modifications: vec![Modification::FixErrors { targets }],
        context_adjustments: vec![
            ContextAdjustment::AddGuidance {
                content: guidance.into(),
            },
            ContextAdjustment::IncreaseDetail { factor: 1.5 },
        ],
    }
}

fn select_basic(input: &StrategyInput, types: &BTreeSet<TriggerType>) -> Strategy {
    let triggers = input.triggers;
    let guidance = |content: &str| ContextAdjustment::AddGuidance {
        content: content.into(),
    };
    let feedback: Vec<String> = triggers
        .iter()
        .filter(|t| {
            matches!(
                t.kind,
                TriggerType::ExplicitFeedback | TriggerType::UserRejection
            )
        })
        .map(|t| t.details.clone())
        .collect();
    if !feedback.is_empty() {
        return Strategy {
            kind: StrategyType::Refine,
            modifications: vec![Modification::AddressFeedback { feedback }],
            context_adjustments: vec![guidance(
                "Address the reviewer's feedback first, quoting it where you act on it",
            )],
        };
    }
    if types.contains(&TriggerType::ValidationFailure) {
        let failures: Vec<&Trigger> = triggers
            .iter()
            .filter(|t| t.kind == TriggerType::ValidationFailure)
            .collect();
        if failures.iter().all(|t| t.source == "flaky") {
            return Strategy {
                kind: StrategyType::Retry,
                modifications: vec![],
                context_adjustments: vec![guidance(
                    "These failures are flaky (they flip without related changes): re-run them \
                     and change code only if they fail again",
                )],
            };
        }
        return Strategy {
            kind: StrategyType::Retry,
            modifications: vec![Modification::FixErrors {
                targets: failures.iter().map(|t| t.details.clone()).collect(),
            }],
            context_adjustments: vec![guidance(
                "Make the failing checks pass without weakening the tests",
            )],
        };
    }
    if types.contains(&TriggerType::LowConfidence) {
        return Strategy {
            kind: StrategyType::Expand,
            modifications: vec![
                Modification::RequestEvidence {
                    areas: details(triggers, TriggerType::LowConfidence),
                },
                Modification::RequestSources,
            ],
            context_adjustments: vec![guidance(
                "Provide more evidence: tests that demonstrate the change and the reasoning behind it",
            )],
        };
    }
    if types.contains(&TriggerType::HallucinationDetected) {
        return Strategy {
            kind: StrategyType::Retry,
            modifications: vec![
                Modification::RemoveClaims {
                    claims: details(triggers, TriggerType::HallucinationDetected),
                },
                Modification::RequireVerification,
            ],
            context_adjustments: vec![guidance(
                "Verify that every module, function and type you use exists before using it",
            )],
        };
    }
    if complexity_fell_most(input.delta) {
        return Strategy {
            kind: StrategyType::Simplify,
            modifications: vec![Modification::ReduceComplexity {
                targets: complexity_targets(input.latest),
            }],
            context_adjustments: vec![guidance(
                "Reduce the cyclomatic complexity of the changed functions; split and simplify",
            )],
        };
    }
    if input.iteration.saturating_add(1) >= input.max_iterations {
        return Strategy {
            kind: StrategyType::Escalate,
            modifications: vec![Modification::FlagForHuman {
                reason: "Max iterations reached".into(),
            }],
            context_adjustments: vec![],
        };
    }
    Strategy {
        kind: StrategyType::Retry,
        modifications: vec![],
        context_adjustments: vec![guidance("Address the identified issues")],
    }
}

/// Complexity fell, and fell more than any other dimension.
fn complexity_fell_most(delta: &Delta) -> bool {
    let Some(drop) = delta.complexity.filter(|d| *d < 0.0) else {
        return false;
    };
    Dimension::ALL
        .into_iter()
        .filter(|d| *d != Dimension::Complexity)
        .filter_map(|d| delta.get(d))
        .all(|other| drop < other)
}

fn complexity_targets(record: &IterationRecord) -> Vec<String> {
    record
        .issues
        .iter()
        .filter(|i| i.dimension == "complexity")
        .filter_map(|i| i.affected_field.clone())
        .collect()
}

/// The spans implicated by BLOCKER and WARNING issues: the minimum context to revise.
fn focus_spans(record: &IterationRecord) -> Vec<String> {
    let mut spans: Vec<String> = Vec::new();
    for severity in [Severity::Blocker, Severity::Warning] {
        for issue in record.issues.iter().filter(|i| i.severity == severity) {
            if let Some(span) = &issue.affected_field {
                if spans.len() < MAX_FOCUS_SPANS && !spans.contains(span) {
                    spans.push(span.clone());
                }
            }
        }
    }
    spans
}
