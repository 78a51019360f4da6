//! Integrity on the publishing side: a pull request's records, compared with each other
//! where no observation is at hand (a failure gone without a positive comparison, a skip
//! added above it, a record with no tests score).

use super::*;

/// A failing test `previous` (a pull request's earlier record) names, with its file and
/// line, that `head` (its next record) no longer fails and says nothing about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoneFailure {
    pub id: String,
    pub file: String,
    pub line: u32,
}

/// The tests `previous` names as failing that `head` neither fails nor has an integrity
/// finding about, when `head`'s tests ran: what a change since then may have rewritten.
/// For the side that publishes a record scored elsewhere (a fork's job, the App), which has
/// the previous record and can fetch the diff, not the previous test reports.
pub fn gone_failures(
    previous: &crate::model::IterationRecord,
    head: &crate::model::IterationRecord,
) -> Vec<GoneFailure> {
    if previous.commit == head.commit || head.scores.tests_passing.is_none() {
        return Vec::new();
    }
    let named = |id: &str| {
        head.issues.iter().any(|i| {
            crate::engine::grouping::failed_test(i).is_some_and(|(other, _)| other == id)
                || (i.dimension == DIMENSION && acceptance_key(i) == format!("test {id}"))
        })
    };
    let mut out: Vec<GoneFailure> = previous
        .issues
        .iter()
        .filter_map(|issue| {
            let (id, _) = crate::engine::grouping::failed_test(issue)?;
            let (file, line) = issue.affected_field.as_deref()?.rsplit_once(':')?;
            Some(GoneFailure {
                id: id.to_string(),
                file: file.to_string(),
                line: line.parse().ok()?,
            })
        })
        .filter(|gone| !named(&gone.id))
        .collect();
    out.dedup();
    out
}

/// The findings for `gone` failures whose own lines the change since the previous record
/// (`since`, with `previous_source` the previous head's version of a file) edited.
pub fn rewritten_since_record(
    gone: &[GoneFailure],
    since: &ChangedLines,
    previous_source: &dyn Fn(&str) -> Option<String>,
) -> Vec<Finding> {
    gone.iter()
        .filter_map(|g| {
            let failure = Failure {
                id: &g.id,
                file: &g.file,
                line: g.line,
                was_skipped: false,
            };
            let source = previous_source(&g.file);
            let edited = edited_in_test(&failure, source.as_deref(), since)?;
            Some(rewritten_finding(
                &failure,
                "was rewritten or removed to pass: it failed in the previous iteration and fails no more",
                edited,
                format!("{}:{}", g.file, g.line),
            ))
        })
        .collect()
}

/// The `gone` failures whose passing could not be confirmed from the change since the
/// previous record (`why`: the compare failed, the new head is not a descendant, GitHub left
/// out the file's patch). A WARNING each: not proven changed to pass, never an accept on
/// the record's word alone.
pub fn unverified_gone(gone: &[GoneFailure], why: &str) -> Vec<Finding> {
    gone.iter()
        .map(|g| {
            finding(
                Severity::Warning,
                format!(
                    "test {} failed in the previous iteration and this record no longer shows it failing, but the change since could not be compared ({why}): it is not known to pass",
                    g.id
                ),
                format!("{}:{}", g.file, g.line),
                format!(
                    "run `{}` again on this head, or a person confirms it (`/iterate accept`)",
                    g.id
                ),
            )
            .about(crate::model::FindingKind::TestUnverified, g.id.as_str())
        })
        .collect()
}

/// The `gone` failures the change since the previous record skipped: a skip marker added
/// in the test's file, inside or just above the lines from its definition to its failure.
pub fn skipped_since_record(gone: &[GoneFailure], since: &ChangedLines) -> Vec<Finding> {
    gone.iter()
        .filter_map(|g| {
            let added = since.files.get(&g.file)?;
            let marker = added.iter().find(|l| {
                SKIP_MARKERS.iter().any(|m| l.text.contains(m))
                    && l.line + 40 >= g.line
                    && l.line <= g.line + 5
            })?;
            Some(finding(
                Severity::Blocker,
                format!(
                    "test {} is newly skipped: it failed in the previous iteration, and this change added `{}` at {}:{}",
                    g.id,
                    marker.text.trim(),
                    g.file,
                    marker.line
                ),
                format!("{}:{}", g.file, marker.line),
                restore(&g.id),
            ).about(crate::model::FindingKind::TestPutAway, g.id.as_str()))
        })
        .collect()
}

/// The previous record failed tests and this one has no tests score at all: the tests
/// did not run, or did not report, which is not a pass.
pub fn missing_tests_score(
    previous: &crate::model::IterationRecord,
    head: &crate::model::IterationRecord,
) -> Option<Finding> {
    if previous.commit == head.commit || head.scores.tests_passing.is_some() {
        return None;
    }
    let failing = previous
        .issues
        .iter()
        .filter(|i| crate::engine::grouping::failed_test(i).is_some())
        .count();
    (failing > 0).then(|| {
        finding(
            Severity::Warning,
            format!(
                "the previous iteration failed {}, and this record has no tests score: its tests did not run or did not report, which is not a pass",
                crate::model::counted(failing, "test")
            ),
            "tests".into(),
            "make the tests check run and write its report".into(),
        )
        .about(crate::model::FindingKind::TestUnverified, "tests")
    })
}

/// `record` (scored elsewhere) with `findings` found since: their issues and triggers, and
/// VOID for a violation when the policy says so.
pub fn add_findings(
    record: &mut crate::model::IterationRecord,
    findings: Vec<Finding>,
    on_violation: crate::config::OnViolation,
) {
    for f in findings {
        if f.is_violation() {
            record.status = if on_violation == crate::config::OnViolation::Void {
                crate::model::Status::Void
            } else if record.status == crate::model::Status::Void {
                record.status
            } else {
                crate::model::Status::Fail
            };
        }
        record.issues.push(f.issue);
        record.triggers.extend(f.trigger);
    }
}
