//! The stopping flow: the analytics schema's nine steps merged with the revision loop and
//! the improvement assessment, in this order (first match wins):
//!
//! 1. a person decided (`/iterate accept`, `/iterate escalate`);
//! 2. hard limits — max iterations (steps 1 and 4), declared budgets (step 2) — stop with
//!    the best output; then a second integrity violation in the task (a failing test
//!    removed, skipped, rewritten or deselected again) escalates;
//! 3. revision-loop limits — more than `revision.max_iterations` rounds with issues, or an
//!    issue count that did not fall — escalate;
//! 4. the latest iteration is clean (no trigger, no BLOCKER/WARNING, status pass, quality
//!    at or above the threshold: step 5) — accept;
//! 5. fewer than `iteration_limits.min` iterations (step 3) — continue;
//! 6. improvement below threshold (step 6) or plateau (step 7) — within the exploration
//!    quota continue; at `k` flat cycles apply `flat_cycle_action`; without a quota stop;
//!    not while the revision loop is at work (issues that change from one iteration to the
//!    next, within the round limit: each revision gets its turn);
//! 7. regression protection (step 8) — stop past `max_regressions`, else ask to revert;
//!    a drop smaller than the improvement threshold is noise, not a regression (see
//!    [`super::trajectory`]), and a drop that comes from coverage alone, with coverage
//!    WARNINGs on the latest iteration, asks for tests instead of a revert;
//! 8. the assessment — plateauing with no upward trend or mostly unfixable triggers
//!    escalate; an expected gain too small to matter accepts when no issue is left and
//!    quality meets the threshold, and escalates when quality is below it (the stricter
//!    reading of "accept: not worth iterating");
//! 9. continue (step 9).
//!
//! **Iterate is always actionable.** Whatever step continues the flow (too early, a flat
//! cycle under the quota, a structural variant, a revert after a regression, step 9), the
//! decision iterates only when the latest iteration carries something to act on: an item
//! of [`super::revision::revision_items`] (a BLOCKER or WARNING issue, a person's words, an
//! unmet requirement, a low confidence; never `quality_threshold`, which only restates the
//! score). The revision prompt lists those items, so it is never empty when it iterates. Otherwise there is nothing to ask of the next iteration: a passing iteration is
//! accepted ("no check reported anything to fix") and any other status escalates, so a
//! human looks (`nothing_actionable`). People's decisions, hard limits and the revision
//! loop's stops come first and are never overridden by this rule.
//!
//! Flat cycles, plateaus, regressions and the assessment's trend are counted within the
//! current *attempt*: the iterations after the last one that met the quality bar. An
//! accepted iteration is finished work; the problems of the next change are new, not a
//! plateau of the old ones, and a regression goes back to the attempt's best.
//!
//! Limits always win over anything that would iterate again. "Stop with the best output"
//! accepts only when the latest iteration is clean; otherwise a human is called (escalate),
//! or the task is aborted when no iteration could be scored at all.

use crate::config::{Config, FlatCycleAction};
use crate::model::{IterationRecord, Severity, Status, Trigger};

use super::assessment::{Potential, MIN_EXPECTED_GAIN, MIN_FIXABILITY, MIN_TREND};
use super::budget::BudgetStatus;
use super::decision::{Modification, Recommendation, StopCode, StoppingReason};
use super::revision::{revision_items, RevisionState};
use super::trajectory::{only_coverage_fell, Trajectory};
use super::Feedback;

#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Continue {
        modifications: Vec<Modification>,
    },
    Stop {
        recommendation: Recommendation,
        reason: StoppingReason,
    },
}

pub struct StopContext<'a> {
    pub config: &'a Config,
    pub trajectory: &'a Trajectory,
    pub budget: &'a BudgetStatus,
    pub revision: &'a RevisionState,
    pub potential: &'a Potential,
    pub latest: &'a IterationRecord,
    pub triggers: &'a [Trigger],
    pub feedback: &'a Feedback,
    /// Iterations of the task (since the last `/iterate adjust`) with an integrity
    /// violation, the latest included.
    pub violations: usize,
}

impl StopContext<'_> {
    fn clean(&self) -> bool {
        self.triggers.is_empty() && !self.revision.has_issues && self.latest.status == Status::Pass
    }

    fn stop(&self, recommendation: Recommendation, code: StopCode, summary: String) -> Outcome {
        Outcome::Stop {
            recommendation,
            reason: StoppingReason { code, summary },
        }
    }

    /// Stop and keep the best output: accept a clean latest iteration, else call a human;
    /// abort when no iteration could be scored — unless the latest is an integrity
    /// violation, which a person decides.
    fn stop_with_best(&self, code: StopCode, summary: String) -> Outcome {
        let recommendation = if self.clean() {
            Recommendation::Accept
        } else if self.trajectory.best.is_none() && !is_violation(self.latest) {
            Recommendation::Abort
        } else {
            Recommendation::Escalate
        };
        self.stop(recommendation, code, summary)
    }
}

pub fn evaluate(ctx: &StopContext) -> Outcome {
    let outcome = human(ctx)
        .or_else(|| limits(ctx))
        .or_else(|| integrity(ctx))
        .or_else(|| revision_loop(ctx))
        .or_else(|| clean_or_too_early(ctx))
        .or_else(|| improvement(ctx))
        .or_else(|| regression(ctx))
        .or_else(|| assessment(ctx))
        .unwrap_or(Outcome::Continue {
            modifications: vec![],
        });
    match outcome {
        Outcome::Continue { .. } if !has_actionable_item(ctx.latest, ctx.triggers) => {
            nothing_actionable(ctx)
        }
        outcome => outcome,
    }
}

/// Something the next iteration can act on: an item of [`revision_items`].
pub fn has_actionable_item(latest: &IterationRecord, triggers: &[Trigger]) -> bool {
    !revision_items(latest, triggers).is_empty()
}

fn status_name(status: Status) -> &'static str {
    match status {
        Status::Pass => "pass",
        Status::Fail => "fail",
        Status::Void => "VOID",
        Status::Error => "error",
    }
}

/// The flow would iterate, but there is nothing to ask of the next iteration.
fn nothing_actionable(ctx: &StopContext) -> Outcome {
    if ctx.latest.status == Status::Pass {
        let threshold = &ctx.config.stopping_criteria.quality_threshold;
        let quality = ctx.trajectory.latest().and_then(|p| p.quality);
        let summary = match quality {
            Some(q) if threshold.enabled && q < threshold.value.get() => format!(
                "No actionable problem in the change: quality {q:.2} is below {:.2} but no \
                 check reported anything to fix",
                threshold.value.get()
            ),
            _ => "No actionable problem in the change: no check reported anything to fix".into(),
        };
        return ctx.stop(Recommendation::Accept, StopCode::NothingActionable, summary);
    }
    ctx.stop(
        Recommendation::Escalate,
        StopCode::NothingActionable,
        format!(
            "The iteration's status is {} but no check reported anything to fix; a human looks",
            status_name(ctx.latest.status)
        ),
    )
}

/// Whether a record removed, skipped, rewrote or deselected a test it had to make pass.
pub fn is_violation(record: &IterationRecord) -> bool {
    record.issues.iter().any(|i| {
        i.dimension == crate::model::INTEGRITY_DIMENSION && i.severity == Severity::Blocker
    })
}

/// A second violation in the task: the agent keeps changing the checks instead of the
/// code, and a person decides.
/// An iteration no environment of itergate's could measure again is a person's at once.
fn integrity(ctx: &StopContext) -> Option<Outcome> {
    let voids = ctx.config.integrity.on_violation == crate::config::OnViolation::Void;
    let integrity_findings = || {
        ctx.latest
            .issues
            .iter()
            .filter(|i| i.dimension == crate::model::INTEGRITY_DIMENSION)
    };
    use crate::model::FindingKind;
    let latest_says = |kind: FindingKind| integrity_findings().any(|i| i.is(kind));
    let unmeasured = latest_says(FindingKind::EnvironmentUnmeasured);
    if voids && unmeasured {
        return Some(ctx.stop(
            Recommendation::Escalate,
            StopCode::IntegrityViolated,
            "The environment the checks run in changed since the task started, and itergate could not build one of its own to measure this iteration in; a person decides".to_string(),
        ));
    }
    (voids && ctx.violations >= 2 && is_violation(ctx.latest)).then(|| {
        let what = if latest_says(FindingKind::FittedToVisibleTests) {
            "were fitted to the visible tests instead of doing the task (the latest: the \
             targets pass and a holdout check still fails)"
        } else if latest_says(FindingKind::HardCoded) || latest_says(FindingKind::TestAware) {
            "fitted the code to the tests instead of fixing it (the latest: production code \
             that hard-codes a failing test's values or asks for the test runner)"
        } else if latest_says(FindingKind::EnvironmentChanged)
            || latest_says(FindingKind::EnvironmentUnmeasured)
        {
            "changed the tests or the environment they run in instead of the code (the \
             latest: what the checks execute changed since the task started)"
        } else {
            "changed the tests instead of the code (removed, skipped, rewritten or \
             deselected a failing test)"
        };
        ctx.stop(
            Recommendation::Escalate,
            StopCode::IntegrityViolated,
            format!(
                "{} iterations of this task {what}; a person decides",
                ctx.violations
            ),
        )
    })
}

fn human(ctx: &StopContext) -> Option<Outcome> {
    if ctx.feedback.accepted {
        return Some(ctx.stop(
            Recommendation::Accept,
            StopCode::AcceptedByHuman,
            match (ctx.feedback.surface, ctx.feedback.accepted_by.as_deref()) {
                (super::Surface::Local, Some(by)) => {
                    format!("Accepted by {by} (`itergate accept`)")
                }
                (super::Surface::Local, None) => "Accepted by a person (`itergate accept`)".into(),
                (super::Surface::PullRequest, Some(by)) => {
                    format!("Accepted by {by} (`/iterate accept`)")
                }
                (super::Surface::PullRequest, None) => {
                    "Accepted by a maintainer (`/iterate accept`)".into()
                }
            },
        ));
    }
    if let Some(why) = &ctx.feedback.unverified_history {
        return Some(ctx.stop(
            Recommendation::Escalate,
            StopCode::HistoryUnverified,
            format!(
                "itergate's saved history could not be verified ({why}): its iterations and budget are unknown, so a person decides (`/iterate accept` vouches for it)"
            ),
        ));
    }
    let reason = ctx.feedback.escalation.as_ref()?;
    let command = match ctx.feedback.surface {
        super::Surface::Local => "`itergate escalate`",
        super::Surface::PullRequest => "`/iterate escalate`",
    };
    // A person is named; itergate's own escalations (a context item that cannot be
    // provided, the loop's stop) say why in their reason.
    let who = match (ctx.feedback.escalated_by.as_deref(), ctx.feedback.surface) {
        (Some(by), _) => format!("Escalated by {by} ({command})"),
        (None, _) if !reason.is_empty() => "Escalated".into(),
        (None, super::Surface::Local) => format!("Escalated by a person ({command})"),
        (None, super::Surface::PullRequest) => format!("Escalated by a maintainer ({command})"),
    };
    Some(ctx.stop(
        Recommendation::Escalate,
        StopCode::EscalatedByHuman,
        if reason.is_empty() {
            who
        } else {
            format!("{who}: {reason}")
        },
    ))
}

fn limits(ctx: &StopContext) -> Option<Outcome> {
    if ctx.clean() {
        // Nothing would iterate again: the clean iteration is accepted for what it is.
        return None;
    }
    let budget = &ctx.budget.budget;
    if budget.current_iteration >= budget.max_iterations {
        return Some(ctx.stop_with_best(
            StopCode::MaxIterationsReached,
            format!(
                "Max iterations reached ({}/{})",
                budget.current_iteration, budget.max_iterations
            ),
        ));
    }
    let hard = ctx
        .config
        .stopping_criteria
        .budget_limits
        .rate_caps_are_hard_stops;
    ctx.budget.stop_reason(hard)?;
    Some(ctx.stop_with_best(
        StopCode::BudgetExhausted,
        format!("Budget exhausted: {}", ctx.budget.describe_exhausted()),
    ))
}

fn revision_loop(ctx: &StopContext) -> Option<Outcome> {
    let state = ctx.revision;
    let p = &state.progress;
    if state.limit_exceeded {
        return Some(ctx.stop(
            Recommendation::Escalate,
            StopCode::RevisionLimitReached,
            format!(
                "Issues remain after {} ({}, {})",
                crate::model::counted(p.max_iterations as usize, "revision attempt"),
                crate::model::counted(p.blockers, "blocker"),
                crate::model::counted(p.warnings, "warning")
            ),
        ));
    }
    // A first violation is sent back with what to restore: its count says nothing of
    // progress on the code (the second one escalates, above).
    let first_violation = ctx.config.integrity.on_violation == crate::config::OnViolation::Void
        && is_violation(ctx.latest);
    if state.stalled && !first_violation {
        return Some(ctx.stop(
            Recommendation::Escalate,
            StopCode::RevisionStalled,
            format!(
                "Revision loop stalled (issue count not decreasing: {} -> {})",
                p.previous_count.unwrap_or(0),
                p.blockers + p.warnings
            ),
        ));
    }
    None
}

fn clean_or_too_early(ctx: &StopContext) -> Option<Outcome> {
    if ctx.clean() {
        let quality = ctx.trajectory.latest().and_then(|p| p.quality);
        let mut summary = match quality {
            Some(q) => format!("Quality {q:.2} meets the bar with no blocking issues"),
            None => "No issues and no triggers".into(),
        };
        // Accepted on its merits, but a reader of the decision is told what came before.
        if ctx.violations > 0 {
            summary.push_str(&format!(
                " (after {} of this task that changed the tests instead of the code)",
                crate::model::counted(ctx.violations, "iteration")
            ));
        }
        return Some(ctx.stop(
            Recommendation::Accept,
            StopCode::QualityThresholdReached,
            summary,
        ));
    }
    let min = ctx.config.stopping_criteria.iteration_limits.min;
    (ctx.budget.budget.current_iteration < min).then(|| Outcome::Continue {
        modifications: vec![],
    })
}

/// The revision loop is at work: the latest iteration still has issues, within the round
/// limit, and changed them (not stalled). A flat score is then no plateau: the seed's
/// revisions run first, and the round limit bounds them.
fn revising(ctx: &StopContext) -> bool {
    let r = ctx.revision;
    r.has_issues && !r.limit_exceeded && !r.stalled && r.progress.previous_count.is_some()
}

fn improvement(ctx: &StopContext) -> Option<Outcome> {
    let point = ctx.trajectory.latest()?;
    if !(point.flat || point.plateau) || revising(ctx) {
        return None;
    }
    let criteria = &ctx.config.stopping_criteria;
    let (code, summary) = if point.flat {
        let gain = point.delta.quality.unwrap_or(0.0);
        (
            StopCode::ImprovementBelowThreshold,
            format!(
                "Improvement below threshold ({gain:.2} < {:.2})",
                criteria.improvement_threshold.value.get()
            ),
        )
    } else {
        (
            StopCode::Plateau,
            format!(
                "Plateau: average improvement over the last {} iterations below {:.2}",
                criteria.plateau_detection.window,
                criteria.plateau_detection.threshold.get()
            ),
        )
    };
    let quota = &criteria.exploration_quota;
    if !quota.enabled {
        return Some(ctx.stop_with_best(code, summary));
    }
    let flat_cycles = point.cumulative.flat_cycle_count;
    if flat_cycles < quota.k {
        return None;
    }
    let summary = format!("{summary}; {flat_cycles} flat cycles reached the exploration quota");
    Some(match quota.flat_cycle_action {
        FlatCycleAction::StopWithBestOutput => {
            ctx.stop_with_best(StopCode::FlatCycleQuota, summary)
        }
        FlatCycleAction::HumanReview => {
            ctx.stop(Recommendation::Escalate, StopCode::FlatCycleQuota, summary)
        }
        FlatCycleAction::StructuralVariant => match &ctx.latest.experiment.structural_variant {
            Some(variant) => ctx.stop_with_best(
                StopCode::FlatCycleQuota,
                format!("{summary}; the structural variant `{variant}` did not improve either"),
            ),
            None => Outcome::Continue {
                modifications: vec![Modification::StructuralVariant { reason: summary }],
            },
        },
    })
}

fn regression(ctx: &StopContext) -> Option<Outcome> {
    let protection = &ctx.config.stopping_criteria.regression_protection;
    if !protection.enabled || protection.allow_regression {
        return None;
    }
    let point = ctx.trajectory.latest()?;
    let best = ctx.trajectory.chosen_best()?;
    let count = point.attempt_regressions;
    if count > protection.max_regressions {
        return Some(ctx.stop_with_best(
            StopCode::RegressionLimit,
            format!(
                "{count} regressions (max {}); the best output is iteration {}",
                protection.max_regressions, best.iteration
            ),
        ));
    }
    if !point.regression {
        return None;
    }
    // Untested new code lowers coverage alone; its coverage issues ask for tests, and
    // starting over from the best would throw the addition away.
    let untested_code = only_coverage_fell(&point.scores, &best.scores)
        && ctx
            .latest
            .issues
            .iter()
            .any(|i| i.dimension == "coverage" && i.severity == Severity::Warning);
    let modifications = if untested_code {
        vec![]
    } else {
        vec![Modification::RevertTo {
            iteration: best.iteration,
        }]
    };
    Some(Outcome::Continue { modifications })
}

fn assessment(ctx: &StopContext) -> Option<Outcome> {
    let p = ctx.potential;
    if p.plateauing && p.trend < MIN_TREND && !revising(ctx) {
        return Some(ctx.stop(
            Recommendation::Escalate,
            StopCode::NotImproving,
            format!(
                "Not improving: quality is flat over the last iterations (trend {:+.3} per iteration)",
                p.trend
            ),
        ));
    }
    if p.fixability < MIN_FIXABILITY {
        return Some(ctx.stop(
            Recommendation::Escalate,
            StopCode::Unfixable,
            format!(
                "Most triggers cannot be fixed by iterating ({:.0}% fixable)",
                p.fixability * 100.0
            ),
        ));
    }
    let gain = p.assessment.expected_gain;
    if gain >= MIN_EXPECTED_GAIN || ctx.revision.has_issues || ctx.latest.status != Status::Pass {
        return None;
    }
    // The detector would accept here; below the quality bar a human makes that call.
    let threshold = &ctx.config.stopping_criteria.quality_threshold;
    let meets_bar = !threshold.enabled
        || ctx
            .trajectory
            .latest()
            .and_then(|p| p.quality)
            .is_some_and(|q| q >= threshold.value.get());
    let summary = format!("Expected gain {gain:.2} is too small to be worth another iteration");
    Some(if meets_bar {
        ctx.stop(Recommendation::Accept, StopCode::NotWorthIterating, summary)
    } else {
        ctx.stop(
            Recommendation::Escalate,
            StopCode::NotWorthIterating,
            format!("{summary}, and quality is below the bar"),
        )
    })
}
