//! Next steps: short imperative lines a person or an agent can act on. A step that asks a
//! person to decide names the command of the surface they are on: `itergate accept` at the
//! terminal, `/iterate accept` in a pull request comment.

use crate::model::{headline, IterationRecord, Severity, Status};

use super::decision::{Budget, Modification, Recommendation, Strategy};
use super::Surface;

/// Issues listed one by one before the rest are summarised.
const MAX_LISTED_ISSUES: usize = 5;

pub struct Context<'a> {
    pub recommendation: Recommendation,
    pub strategy: Option<&'a Strategy>,
    pub latest: &'a IterationRecord,
    pub best: Option<u32>,
    pub budget: &'a Budget,
    pub surface: Surface,
}

/// Whether `record`'s violation is the work fitted to the visible tests (a holdout fails).
fn fitted(record: &IterationRecord) -> bool {
    record.issues.iter().any(|i| {
        i.dimension == crate::model::INTEGRITY_DIMENSION
            && i.is(crate::model::FindingKind::FittedToVisibleTests)
    })
}

pub fn build(ctx: &Context) -> Vec<String> {
    let mut steps = Vec::new();
    match ctx.recommendation {
        Recommendation::Accept => {
            steps.push(format!(
                "Accept iteration {}: nothing more is required",
                ctx.latest.iteration
            ));
        }
        Recommendation::Abort => steps.push(if ctx.latest.status == Status::Void && fitted(ctx.latest) {
            "No iteration could be scored, and this one is VOID: the targets pass while a holdout check fails; make the code do the task for every input, not the visible tests' (see Integrity)".into()
        } else if ctx.latest.status == Status::Void {
            "No iteration could be scored, and this one is VOID: restore the tests and checks the change edited (see Integrity), then fix the code".into()
        } else {
            "No iteration could be scored: fix the checks configuration".into()
        }),
        Recommendation::Escalate => {
            if let Some(best) = ctx.best.filter(|b| *b != ctx.latest.iteration) {
                steps.push(format!("Review iteration {best}, the best output so far"));
            } else if ctx.latest.status == Status::Void && fitted(ctx.latest) {
                steps.push("No iteration could be scored, and this one is VOID: the targets pass while a holdout check fails; the code must do the task for every input, not the visible tests' (see Integrity)".into());
            } else if ctx.latest.status == Status::Void && ctx.best.is_none() {
                steps.push("No iteration could be scored, and this one is VOID: restore the tests and checks the change edited (see Integrity), then fix the code".into());
            }
            steps.push(human_decides(ctx.surface).into());
        }
        Recommendation::Iterate => {
            steps.extend(modification_steps(ctx.strategy));
            steps.extend(issue_steps(ctx.latest));
        }
    }
    steps.extend(ctx.budget.warnings.iter().map(|w| format!("Budget: {w}")));
    steps
}

fn human_decides(surface: Surface) -> &'static str {
    match surface {
        Surface::Local => "A human decides: `itergate accept [reason]` to proceed with the remaining issues, or `itergate adjust <guidance>` to change the approach",
        Surface::PullRequest => "A human decides: `/iterate accept` to proceed with the remaining issues, or `/iterate adjust <guidance>` to change the approach",
    }
}

fn modification_steps(strategy: Option<&Strategy>) -> Vec<String> {
    let Some(strategy) = strategy else {
        return vec![];
    };
    strategy
        .modifications
        .iter()
        .filter_map(|m| match m {
            Modification::AddressFeedback { feedback } => Some(format!(
                "Address the reviewer feedback ({} comment{})",
                feedback.len(),
                if feedback.len() == 1 { "" } else { "s" }
            )),
            Modification::StructuralVariant { .. } => Some(
                "Try a structurally different approach and name it in a `Structural-Variant:` commit trailer".into(),
            ),
            Modification::RevertTo { iteration } => Some(format!(
                "Start again from iteration {iteration}, the best so far: the latest iteration regressed"
            )),
            Modification::RequestEvidence { .. } => {
                Some("Add tests or evidence for the parts you are unsure of".into())
            }
            Modification::RequireVerification => {
                Some("Check that every name you use exists (modules, functions, types, crates)".into())
            }
            Modification::ReduceComplexity { .. } => {
                Some("Simplify the functions whose complexity rose".into())
            }
            _ => None,
        })
        .collect()
}

fn issue_steps(record: &IterationRecord) -> Vec<String> {
    let mut ordered: Vec<_> = record
        .issues
        .iter()
        .filter(|i| i.severity.counts_for_revision())
        .cloned()
        .collect();
    // What tampered with the tests first (never cut off), then by severity.
    super::revision::integrity_first(&mut ordered);
    ordered.sort_by_key(|i| (i.dimension != crate::model::INTEGRITY_DIMENSION, i.severity));
    let ordered: Vec<_> = ordered.iter().collect();
    // Failures with one cause are one step.
    let items = super::grouping::group_issues(&ordered);
    let mut steps: Vec<String> = items
        .iter()
        .take(MAX_LISTED_ISSUES)
        .map(|i| {
            let verb = if i.severity == Severity::Blocker {
                "Fix"
            } else {
                "Address"
            };
            let finding = headline(&i.finding);
            // A finding that names its place already (`… at src/x.py:12`) is not told it again.
            let named = |at: &&str| at.contains([':', '/']) && finding.contains(at);
            match i.affected_field.as_deref().filter(|at| !named(at)) {
                Some(at) => format!("{verb} {}: {finding} ({at})", i.dimension),
                None => format!("{verb} {}: {finding}", i.dimension),
            }
        })
        .collect();
    if items.len() > MAX_LISTED_ISSUES {
        steps.push(format!(
            "... and {} more issues (see the revision prompt)",
            items.len() - MAX_LISTED_ISSUES
        ));
    }
    steps
}
