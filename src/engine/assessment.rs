//! Improvement assessment of the iteration detector: trend, plateau (variance of the last
//! three qualities below 0.02), fixability ratio, expected gain and the raw
//! recommendation. The stopping flow decides the final recommendation; this one feeds it.

use crate::model::Trigger;

use super::decision::{Assessment, Recommendation};
use super::trajectory::{trend, variance};

/// Variance of the last qualities below which the loop is plateauing.
pub const PLATEAU_VARIANCE: f64 = 0.02;
/// Number of recent qualities the plateau variance is taken over.
pub const PLATEAU_POINTS: usize = 3;
/// A trend (quality per iteration) below this while plateauing means "not improving".
pub const MIN_TREND: f64 = 0.01;
/// Expected gain below which another iteration is not worth it.
pub const MIN_EXPECTED_GAIN: f64 = 0.1;
/// Fixability ratio below which most issues cannot be fixed by iterating.
pub const MIN_FIXABILITY: f64 = 0.3;

#[derive(Debug, Clone, PartialEq)]
pub struct Potential {
    pub assessment: Assessment,
    pub trend: f64,
    pub plateauing: bool,
    pub fixability: f64,
}

pub fn assess(qualities: &[f64], triggers: &[Trigger], remaining_iterations: u32) -> Potential {
    let trend = trend(qualities);
    let recent = &qualities[qualities.len().saturating_sub(PLATEAU_POINTS)..];
    let plateauing = recent.len() >= PLATEAU_POINTS && variance(recent) < PLATEAU_VARIANCE;
    // With no triggers there is nothing to fix: ratio 1, gain 0.
    let fixability = if triggers.is_empty() {
        1.0
    } else {
        triggers.iter().filter(|t| t.fixable).count() as f64 / triggers.len() as f64
    };
    let avg_severity = if triggers.is_empty() {
        0.0
    } else {
        triggers.iter().map(|t| t.severity).sum::<f64>() / triggers.len() as f64
    };
    let expected_gain = fixability * avg_severity * if plateauing { 0.3 } else { 0.7 };
    let recommendation = if remaining_iterations == 0 {
        Recommendation::Accept
    } else if plateauing && trend < MIN_TREND {
        Recommendation::Escalate
    } else if expected_gain < MIN_EXPECTED_GAIN {
        Recommendation::Accept
    } else if fixability < MIN_FIXABILITY {
        Recommendation::Escalate
    } else {
        Recommendation::Iterate
    };
    Potential {
        assessment: Assessment {
            likelihood: fixability * if plateauing { 0.5 } else { 1.0 },
            expected_gain,
            diminishing_returns: plateauing,
            recommendation,
        },
        trend,
        plateauing,
        fixability,
    }
}
