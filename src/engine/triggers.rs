//! Trigger detection: why the latest iteration may need another one.
//!
//! The record already carries the triggers its signals revealed when it was scored
//! (failing tests, hallucinated names, `todo!()`s). Here the engine adds those that depend
//! on configuration or on people: `low_confidence` (the `Confidence:` trailer against
//! `detection.min_confidence`), `quality_threshold`, `requirement_unmet`, and
//! `explicit_feedback` / `user_rejection` from the task's feedback. A VOID or error
//! iteration is itself a validation failure. Severities are clamped into 0..=1 and
//! duplicates (same type and details) are dropped.
//!
//! A record written by another tool or by hand may carry issues but no triggers. When a
//! record has no trigger of its own, its BLOCKER issues become one `validation_failure` per
//! dimension ("3 tests failed", "2 blocking `lint` issues"; severity 0.7, or 1.0 when no test
//! passed), and a `fail` status with no issue at all becomes one ("the iteration failed its
//! checks"), so the decision has something to act on.

use crate::config::{Config, Requirement, RequirementPriority};
use crate::model::{IterationRecord, Severity, Status, Trigger, TriggerType};

use super::Feedback;

pub fn detect(
    config: &Config,
    record: &IterationRecord,
    quality: Option<f64>,
    feedback: &Feedback,
) -> Vec<Trigger> {
    let mut triggers: Vec<Trigger> = if record.triggers.is_empty() {
        derived_triggers(record)
    } else {
        record.triggers.clone()
    };
    triggers.extend(status_trigger(record));
    triggers.extend(confidence_trigger(config, record));
    triggers.extend(quality_trigger(config, quality));
    triggers.extend(
        config
            .requirements
            .iter()
            .filter_map(|r| requirement_trigger(r, record, quality)),
    );
    triggers.extend(feedback.messages.iter().map(|text| Trigger {
        kind: TriggerType::ExplicitFeedback,
        source: "user".into(),
        severity: 0.9,
        details: text.clone(),
        fixable: true,
    }));
    triggers.extend(feedback.rejections.iter().map(|text| Trigger {
        kind: TriggerType::UserRejection,
        source: "reviewer".into(),
        severity: 1.0,
        details: text.clone(),
        fixable: true,
    }));
    normalise(triggers)
}

fn normalise(triggers: Vec<Trigger>) -> Vec<Trigger> {
    let mut out: Vec<Trigger> = Vec::with_capacity(triggers.len());
    for mut t in triggers {
        t.severity = if t.severity.is_finite() {
            t.severity.clamp(0.0, 1.0)
        } else {
            1.0
        };
        if !out
            .iter()
            .any(|o| o.kind == t.kind && o.details == t.details)
        {
            out.push(t);
        }
    }
    out
}

/// Severity of a derived validation failure: 1.0 when no test passed.
fn derived_severity(record: &IterationRecord) -> f64 {
    if record.scores.tests_passing == Some(0.0) {
        1.0
    } else {
        0.7
    }
}

/// Triggers for a record that carries none: its BLOCKER issues, grouped by dimension in the
/// order they first appear, or its `fail` status when it has no issue at all.
fn derived_triggers(record: &IterationRecord) -> Vec<Trigger> {
    let failure = |details: String, source: &str| Trigger {
        kind: TriggerType::ValidationFailure,
        source: source.into(),
        severity: derived_severity(record),
        details,
        fixable: true,
    };
    if record.issues.is_empty() {
        return (record.status == Status::Fail)
            .then(|| failure("the iteration failed its checks".into(), "checks"))
            .into_iter()
            .collect();
    }
    let mut dimensions: Vec<(&str, usize)> = Vec::new();
    for issue in record
        .issues
        .iter()
        .filter(|i| i.severity == Severity::Blocker)
    {
        match dimensions.iter_mut().find(|(d, _)| *d == issue.dimension) {
            Some((_, n)) => *n += 1,
            None => dimensions.push((issue.dimension.as_str(), 1)),
        }
    }
    dimensions
        .into_iter()
        .map(|(dimension, n)| {
            let details = match (dimension, n) {
                ("tests", 1) => "1 test failed".to_string(),
                ("tests", n) => format!("{n} tests failed"),
                (other, 1) => format!("1 blocking `{other}` issue"),
                (other, n) => format!("{n} blocking `{other}` issues"),
            };
            failure(details, "issues")
        })
        .collect()
}

fn status_trigger(record: &IterationRecord) -> Option<Trigger> {
    use crate::model::FindingKind;
    let integrity = |kinds: &[FindingKind]| {
        record.issues.iter().any(|i| {
            i.dimension == crate::model::INTEGRITY_DIMENSION
                && i.severity == crate::model::Severity::Blocker
                && kinds.iter().any(|k| i.is(*k))
        })
    };
    let details = match record.status {
        Status::Void
            if integrity(&[
                FindingKind::EnvironmentChanged,
                FindingKind::EnvironmentUnmeasured,
            ]) =>
        {
            "iteration is VOID: what the checks execute changed since the task started"
        }
        Status::Void if integrity(&[FindingKind::HardCoded, FindingKind::TestAware]) => {
            "iteration is VOID: production code was fitted to the tests instead of fixed"
        }
        Status::Void => "iteration is VOID: a check that guards the harness was violated",
        Status::Error => "checks did not complete; the iteration could not be scored",
        Status::Pass | Status::Fail => return None,
    };
    Some(Trigger {
        kind: TriggerType::ValidationFailure,
        source: "checks".into(),
        severity: 1.0,
        details: details.into(),
        fixable: true,
    })
}

fn confidence_trigger(config: &Config, record: &IterationRecord) -> Option<Trigger> {
    let confidence = record.confidence?.clamp(0.0, 1.0);
    let min = config.detection.min_confidence.get();
    (confidence < min).then(|| Trigger {
        kind: TriggerType::LowConfidence,
        source: "confidence-trailer".into(),
        severity: 1.0 - confidence,
        details: format!(
            "Confidence {:.0}% below threshold {:.0}%",
            confidence * 100.0,
            min * 100.0
        ),
        fixable: true,
    })
}

fn quality_trigger(config: &Config, quality: Option<f64>) -> Option<Trigger> {
    let threshold = &config.stopping_criteria.quality_threshold;
    let quality = quality?;
    (threshold.enabled && quality < threshold.value.get()).then(|| Trigger {
        kind: TriggerType::QualityThreshold,
        source: "quality-scorer".into(),
        severity: (threshold.value.get() - quality).clamp(0.0, 1.0),
        details: {
            let bar = threshold.value.get();
            // Two decimals would print "0.95 below 0.95" for 0.947.
            let places = if format!("{quality:.2}") == format!("{bar:.2}") {
                3
            } else {
                2
            };
            format!("Quality {quality:.places$} below threshold {bar:.2}")
        },
        fixable: true,
    })
}

/// The value of a requirement's metric on a record; `None` when it was not observed.
pub fn metric_value(metric: &str, record: &IterationRecord, quality: Option<f64>) -> Option<f64> {
    let count = |dimension: &str, severity: Severity| {
        record
            .issues
            .iter()
            .filter(|i| i.dimension == dimension && i.severity == severity)
            .count() as f64
    };
    match metric {
        "quality" => quality,
        "tests_passing" => record.scores.tests_passing,
        "code_quality" => record.scores.code_quality,
        "coverage" => record.scores.coverage,
        "complexity" => record.scores.complexity,
        "confidence" => record.confidence,
        "issues.blockers" => Some(record.count(Severity::Blocker) as f64),
        "issues.warnings" => Some(record.count(Severity::Warning) as f64),
        "lint.errors" if record.scores.code_quality.is_some() => {
            Some(count("code_quality", Severity::Blocker))
        }
        "lint.warnings" if record.scores.code_quality.is_some() => {
            Some(count("code_quality", Severity::Warning))
        }
        other => record.metrics.get(other).copied(),
    }
}

fn requirement_trigger(
    requirement: &Requirement,
    record: &IterationRecord,
    quality: Option<f64>,
) -> Option<Trigger> {
    let name = requirement.metric.as_str();
    let description = requirement
        .description
        .clone()
        .unwrap_or_else(|| describe(requirement));
    let problem = match metric_value(name, record, quality) {
        None => format!("{name} was not measured"),
        Some(v) if requirement.min.is_some_and(|min| v < min) => format!("{name} is {v:.3}"),
        Some(v) if requirement.max.is_some_and(|max| v > max) => format!("{name} is {v:.3}"),
        Some(_) => return None,
    };
    Some(Trigger {
        kind: TriggerType::RequirementUnmet,
        source: "requirement-checker".into(),
        severity: match requirement.priority {
            RequirementPriority::Required => 0.9,
            RequirementPriority::Preferred => 0.5,
        },
        details: format!("Requirement not met: {description} ({problem})"),
        fixable: true,
    })
}

fn describe(requirement: &Requirement) -> String {
    let name = requirement.metric.as_str();
    match (requirement.min, requirement.max) {
        (Some(min), Some(max)) => format!("{min} <= {name} <= {max}"),
        (Some(min), None) => format!("{name} >= {min}"),
        (None, Some(max)) => format!("{name} <= {max}"),
        (None, None) => format!("{name} measured"),
    }
}
