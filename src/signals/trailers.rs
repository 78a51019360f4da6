//! Commit trailers: what the agent reports about an iteration (git's trailer syntax).
//!
//! Usage: `Tokens-Used`, `Output-Tokens`, `Cost-USD`, `Tool-Calls`; self-assessment:
//! `Confidence` (0..1 or a percentage); the experiment record: `Hypothesis`,
//! `Expected-Failure-Mode`, `Diagnostic`, `Structural-Variant`. A malformed value is not
//! dropped silently: it becomes a WARNING checker issue naming the trailer and the value.

use crate::model::{CheckerIssue, IterationRecord, Severity};

/// Applies trailers to `record`; returns the problems found (also added as issues).
pub fn apply(trailers: &[(String, String)], record: &mut IterationRecord) -> Vec<String> {
    let mut problems = Vec::new();
    for (key, value) in trailers {
        let value = value.trim();
        let key_lower = key.to_ascii_lowercase();
        let experiment = &mut record.experiment;
        let text_slot = match key_lower.as_str() {
            "hypothesis" => Some(&mut experiment.hypothesis),
            "expected-failure-mode" => Some(&mut experiment.expected_failure_mode),
            "diagnostic" => Some(&mut experiment.distinguishing_diagnostic),
            "structural-variant" => Some(&mut experiment.structural_variant),
            _ => None,
        };
        if let Some(slot) = text_slot {
            *slot = Some(value.to_string());
            continue;
        }
        let result = match key_lower.as_str() {
            "tokens-used" => count(value).map(|v| record.tokens_used = Some(v)),
            "output-tokens" => count(value).map(|v| record.output_tokens = Some(v)),
            "tool-calls" => count(value).map(|v| record.tool_calls = Some(v)),
            "cost-usd" => money(value).map(|v| record.cost_usd = Some(v)),
            "confidence" => confidence(value).map(|v| record.confidence = Some(v)),
            _ => Ok(()),
        };
        if let Err(expected) = result {
            problems.push(format!(
                "trailer `{key}: {value}` is malformed; expected {expected}"
            ));
        }
    }
    record.issues.extend(problems.iter().map(|p| CheckerIssue {
        dimension: "trailers".into(),
        severity: Severity::Warning,
        finding: p.clone(),
        affected_field: Some("commit message".into()),
        suggested_fix: Some("fix the trailer value in the next commit".into()),
        kind: None,
        subject: None,
    }));
    problems
}

fn count(value: &str) -> Result<u64, &'static str> {
    value
        .replace(['_', ','], "")
        .parse()
        .map_err(|_| "a whole number, e.g. 12500")
}

fn money(value: &str) -> Result<f64, &'static str> {
    let v: f64 = value
        .trim_start_matches('$')
        .parse()
        .map_err(|_| "an amount in US dollars, e.g. 0.42")?;
    if v.is_finite() && v >= 0.0 {
        Ok(v)
    } else {
        Err("an amount in US dollars, e.g. 0.42")
    }
}

fn confidence(value: &str) -> Result<f64, &'static str> {
    const EXPECTED: &str = "a number from 0 to 1 or a percentage, e.g. 0.8 or 80%";
    let (number, scale) = match value.strip_suffix('%') {
        Some(n) => (n.trim(), 100.0),
        None => (value, 1.0),
    };
    let v: f64 = number.parse().map_err(|_| EXPECTED)?;
    let v = v / scale;
    if v.is_finite() && (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(EXPECTED)
    }
}
