//! Quality over iterations: the weighted quality of each record, its delta against the
//! previous scored iteration, the running totals (improvement, plateaus, regressions, flat
//! cycles) and the best iteration. One pass, O(n).
//!
//! VOID and error iterations carry no trustworthy score: they are skipped when deltas are
//! taken and fenced out of best-output selection.
//!
//! A regression is a drop below the best of at least the improvement threshold (when that
//! is enabled): smaller dips are noise, as improvements smaller than it are no progress.

use crate::config::{Config, QualityWeights};
use crate::model::{Cumulative, Delta, Dimension, IterationRecord, Scores};

/// Scores within this distance are equal; guards against float noise deciding a regression.
pub const EPSILON: f64 = 1e-9;

/// Rounds to six decimals: scores are reported, not computed on, past that precision, and
/// rounding keeps `0.75` from printing as `0.7500000000000001`.
pub fn round6(value: f64) -> f64 {
    (value * 1e6).round() / 1e6
}

/// Weighted quality renormalised over the observed dimensions; `None` when nothing with a
/// positive weight was observed.
pub fn weighted_quality(scores: &Scores, weights: &QualityWeights) -> Option<f64> {
    let (sum, weight) = scores
        .observed()
        .map(|(d, v)| (v.clamp(0.0, 1.0), weights.get(d)))
        .filter(|(_, w)| *w > 0.0)
        .fold((0.0, 0.0), |(s, tw), (v, w)| (s + v * w, tw + w));
    (weight > 0.0).then(|| round6((sum / weight).clamp(0.0, 1.0)))
}

/// A record's quality: from its scores with the configured weights, else the quality it
/// carries (a hand-written history may only have that).
pub fn quality_of(record: &IterationRecord, weights: &QualityWeights) -> Option<f64> {
    weighted_quality(&record.scores, weights)
        .or(record.quality)
        .filter(|q| q.is_finite())
        .map(|q| q.clamp(0.0, 1.0))
}

/// An open integrity finding (a test removed, skipped or deselected, the environment
/// tampered with): such an iteration is never the best.
pub fn suspect(record: &IterationRecord) -> bool {
    record.issues.iter().any(|i| {
        i.dimension == crate::model::INTEGRITY_DIMENSION && i.severity.counts_for_revision()
    })
}

/// One iteration as the trajectory sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub iteration: u32,
    /// Quality when the iteration is scored (not VOID/error) and anything was observed.
    pub quality: Option<f64>,
    /// The record's scores (what was observed).
    pub scores: Scores,
    pub delta: Delta,
    pub cumulative: Cumulative,
    /// Improvement over the previous scored iteration fell below the improvement threshold.
    pub flat: bool,
    /// Quality fell below the best so far by at least the noise tolerance.
    pub regression: bool,
    /// Average improvement over the plateau window fell below its threshold.
    pub plateau: bool,
    /// Regressions since the current attempt began.
    pub attempt_regressions: u32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Trajectory {
    pub points: Vec<Point>,
    /// Index into `points` of the best scored iteration (ties go to the later one).
    pub best: Option<usize>,
    /// Index into `points` where the current attempt began: the first iteration after the
    /// last one that met the quality bar. What came before was finished work; flat cycles,
    /// plateaus and regressions are counted within an attempt.
    pub attempt_start: usize,
    /// Index into `points` of the best scored iteration of the current attempt.
    pub attempt_best: Option<usize>,
}

impl Trajectory {
    pub fn build(config: &Config, records: &[IterationRecord]) -> Trajectory {
        let mut builder = Builder::new(config);
        let points = records.iter().map(|r| builder.push(r)).collect();
        Trajectory {
            points,
            // An iteration with an open integrity finding (a test removed, skipped or
            // deselected, the environment tampered with) is never the best, nor is a VOID
            // one (it has no score): with none left, there is no best. One that passes
            // (no failing test, no BLOCKER) beats any that fails, whatever their scores.
            best: builder.trusted_best,
            attempt_start: builder.attempt_start,
            attempt_best: builder.trusted_attempt_best.map(|(index, _)| index),
        }
    }

    /// The scored qualities of the current attempt.
    pub fn attempt_qualities(&self) -> impl Iterator<Item = f64> + '_ {
        self.points
            .get(self.attempt_start..)
            .unwrap_or_default()
            .iter()
            .filter_map(|p| p.quality)
    }

    pub fn latest(&self) -> Option<&Point> {
        self.points.last()
    }

    pub fn qualities(&self) -> impl Iterator<Item = f64> + '_ {
        self.points.iter().filter_map(|p| p.quality)
    }

    pub fn first_quality(&self) -> Option<f64> {
        self.qualities().next()
    }

    pub fn best_point(&self) -> Option<&Point> {
        self.best.and_then(|i| self.points.get(i))
    }

    /// The best iteration of the current attempt: what a regression goes back to.
    pub fn attempt_best_point(&self) -> Option<&Point> {
        self.attempt_best.and_then(|i| self.points.get(i))
    }

    /// The one best every output names ("Best iteration so far", "start again from", the
    /// budget report): the current attempt's when an iteration before the latest holds it
    /// (what a regression goes back to), else the task's.
    pub fn chosen_best(&self) -> Option<&Point> {
        let latest = self.points.len().checked_sub(1);
        match self.attempt_best {
            Some(at) if Some(at) != latest => self.points.get(at),
            _ => self.best_point(),
        }
    }
}

struct Builder<'c> {
    config: &'c Config,
    first: Option<f64>,
    previous: Option<(f64, Scores)>,
    best_quality: Option<f64>,
    best: Option<usize>,
    /// Recent improvements, for the plateau window.
    improvements: std::collections::VecDeque<f64>,
    cumulative: Cumulative,
    index: usize,
    attempt_start: usize,
    attempt_regressions: u32,
    /// The best iteration (index, quality) within the current attempt: regressions are
    /// drops below it.
    attempt_best: Option<(usize, f64)>,
    /// `best` and `attempt_best` among iterations with no open integrity finding, ranked
    /// by (passes, quality).
    trusted_best: Option<usize>,
    trusted_attempt_best: Option<(usize, (bool, f64))>,
    trusted_best_quality: Option<(bool, f64)>,
}

impl<'c> Builder<'c> {
    fn new(config: &'c Config) -> Self {
        Builder {
            config,
            first: None,
            previous: None,
            best_quality: None,
            best: None,
            improvements: Default::default(),
            cumulative: Cumulative::default(),
            index: 0,
            attempt_start: 0,
            attempt_regressions: 0,
            attempt_best: None,
            trusted_best: None,
            trusted_attempt_best: None,
            trusted_best_quality: None,
        }
    }

    /// The quality at which an iteration is finished work.
    fn bar(&self) -> f64 {
        let threshold = &self.config.stopping_criteria.quality_threshold;
        if threshold.enabled {
            threshold.value.get()
        } else {
            1.0
        }
    }

    fn push(&mut self, record: &IterationRecord) -> Point {
        let index = self.index;
        self.index += 1;
        let quality = record
            .status
            .is_scored()
            .then(|| quality_of(record, &self.config.quality_weights))
            .flatten();
        let mut point = Point {
            iteration: record.iteration,
            quality,
            scores: record.scores,
            delta: Delta::default(),
            cumulative: self.cumulative,
            flat: false,
            regression: false,
            plateau: false,
            attempt_regressions: self.attempt_regressions,
        };
        let Some(q) = quality else {
            return point;
        };
        // After an iteration that met the bar, a new attempt begins: its problems are new
        // work, not a plateau or a lack of progress on the old.
        let new_attempt = self
            .previous
            .is_some_and(|(prev_q, _)| prev_q >= self.bar() - EPSILON);
        if new_attempt {
            self.attempt_start = index;
            self.attempt_regressions = 0;
            self.attempt_best = None;
            self.trusted_attempt_best = None;
            self.improvements.clear();
            self.cumulative.flat_cycle_count = 0;
        }
        if let Some((prev_q, prev_scores)) = self.previous {
            point.delta = delta(q, prev_q, &record.scores, &prev_scores);
            if !new_attempt {
                self.observe_change(round6(q - prev_q), &mut point);
            }
        } else {
            point.delta.quality = Some(q);
        }
        if self
            .attempt_best
            .is_some_and(|(_, b)| self.is_regression(b - q))
        {
            point.regression = true;
            self.cumulative.regression_count += 1;
            self.attempt_regressions += 1;
        }
        if self.attempt_best.is_none_or(|(_, b)| q >= b - EPSILON) {
            self.attempt_best = Some((index, q));
        }
        point.attempt_regressions = self.attempt_regressions;
        if self.best_quality.is_none_or(|b| q >= b - EPSILON) {
            self.best_quality = Some(q);
            self.best = Some(index);
        }
        if !suspect(record) {
            let rank = (record.status == crate::model::Status::Pass, q);
            let beats = |best: (bool, f64)| {
                (rank.0 && !best.0) || (rank.0 == best.0 && q >= best.1 - EPSILON)
            };
            if self.trusted_attempt_best.is_none_or(|(_, b)| beats(b)) {
                self.trusted_attempt_best = Some((index, rank));
            }
            if self.trusted_best_quality.is_none_or(beats) {
                self.trusted_best_quality = Some(rank);
                self.trusted_best = Some(index);
            }
        }
        let first = *self.first.get_or_insert(q);
        self.cumulative.total_improvement = round6(q - first);
        self.previous = Some((q, record.scores));
        point.cumulative = self.cumulative;
        point
    }

    /// A drop below the best that is not noise: larger than `EPSILON` and at least the
    /// improvement threshold when that is enabled.
    fn is_regression(&self, drop: f64) -> bool {
        let threshold = &self.config.stopping_criteria.improvement_threshold;
        let tolerance = if threshold.enabled {
            threshold.value.get()
        } else {
            0.0
        };
        drop > EPSILON && drop >= tolerance - EPSILON
    }

    fn observe_change(&mut self, improvement: f64, point: &mut Point) {
        let criteria = &self.config.stopping_criteria;
        point.flat = criteria.improvement_threshold.enabled
            && improvement < criteria.improvement_threshold.value.get() - EPSILON;
        let plateau = &criteria.plateau_detection;
        let window = plateau.window.max(1) as usize;
        self.improvements.push_back(improvement);
        while self.improvements.len() > window {
            self.improvements.pop_front();
        }
        if plateau.enabled && self.improvements.len() == window {
            let average = self.improvements.iter().sum::<f64>() / window as f64;
            if average < plateau.threshold.get() - EPSILON {
                point.plateau = true;
                self.cumulative.plateau_count += 1;
            }
        }
        // A flat cycle: a non-terminal iteration that did not improve enough.
        self.cumulative.flat_cycle_count = if point.flat || point.plateau {
            self.cumulative.flat_cycle_count + 1
        } else {
            0
        };
    }
}

fn delta(q: f64, prev_q: f64, scores: &Scores, prev: &Scores) -> Delta {
    let dim = |d: Dimension| Some(round6(scores.get(d)? - prev.get(d)?));
    Delta {
        quality: Some(round6(q - prev_q)),
        tests_passing: dim(Dimension::TestsPassing),
        code_quality: dim(Dimension::CodeQuality),
        coverage: dim(Dimension::Coverage),
        complexity: dim(Dimension::Complexity),
    }
}

/// The quality drop from `best` to `latest` comes from coverage alone: coverage was observed
/// on both and fell, and every other dimension observed on `latest` was observed on `best`
/// and did not fall.
pub fn only_coverage_fell(latest: &Scores, best: &Scores) -> bool {
    let coverage_fell = matches!(
        (latest.get(Dimension::Coverage), best.get(Dimension::Coverage)),
        (Some(l), Some(b)) if l < b - EPSILON
    );
    coverage_fell
        && Dimension::ALL
            .into_iter()
            .filter(|d| *d != Dimension::Coverage)
            .all(|d| match (latest.get(d), best.get(d)) {
                (None, _) => true,
                (Some(l), Some(b)) => l >= b - EPSILON,
                (Some(_), None) => false,
            })
}

/// Least-squares slope of quality per iteration (0 with fewer than two points).
pub fn trend(values: &[f64]) -> f64 {
    let n = values.len() as f64;
    if values.len() < 2 {
        return 0.0;
    }
    let mean_x = (n - 1.0) / 2.0;
    let mean_y = values.iter().sum::<f64>() / n;
    let (num, den) = values
        .iter()
        .enumerate()
        .fold((0.0, 0.0), |(num, den), (i, y)| {
            let dx = i as f64 - mean_x;
            (num + dx * (y - mean_y), den + dx * dx)
        });
    if den == 0.0 {
        0.0
    } else {
        num / den
    }
}

/// Population variance.
pub fn variance(values: &[f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n
}
