//! A test rewritten to pass, found by the side that publishes: the previous iteration's
//! failing tests come from the state (which only itergate writes), the change since that
//! head from GitHub's compare API. So a record scored by code itergate does not control (a
//! fork's job, the App's CI) cannot leave it out by not looking.

use std::collections::BTreeMap;

use super::Handler;
use crate::github::compare;
use crate::model::IterationRecord;
use crate::signals::integrity;

/// The most previous versions of test files fetched for one record.
const MAX_SOURCES: usize = 10;

impl Handler<'_> {
    /// Adds to `record` a finding for each test `previous` failed that `record` no longer
    /// fails while the change since `previous` edited its own lines. Returns what the job
    /// log should say, when there was anything to look at.
    pub(super) async fn find_rewritten(
        &self,
        previous: &IterationRecord,
        record: &mut IterationRecord,
    ) -> Option<String> {
        let on_violation = self.config.integrity.on_violation;
        if let Some(missing) = integrity::missing_tests_score(previous, record) {
            integrity::add_findings(record, vec![missing], on_violation);
            return Some("the previous iteration failed tests; this record has none".into());
        }
        let gone = integrity::gone_failures(previous, record);
        if gone.is_empty() {
            return None;
        }
        let (from, to) = (&previous.commit.0, &record.commit.0);
        // Without a positive comparison, a failure that is gone is not known to pass.
        let unverified = |record: &mut IterationRecord,
                          gone: &[integrity::GoneFailure],
                          why: String| {
            let findings = integrity::unverified_gone(gone, &why);
            integrity::add_findings(record, findings, on_violation);
            Some(format!(
                "{} test(s) that failed on {} and no longer fail could not be compared with it: {why}",
                gone.len(),
                super::short(&previous.commit)
            ))
        };
        let comparison = match self.forge.compare(&self.repo, from, to).await {
            Ok(c) => c,
            Err(e) => return unverified(record, &gone, e.to_string()),
        };
        if !comparison.is_linear() {
            let why = format!("the new head is {} of it (a force push)", comparison.status);
            return unverified(record, &gone, why);
        }
        let since = match compare::changed_lines(&comparison.files) {
            Ok(since) => since,
            Err(e) => return unverified(record, &gone, e.to_string()),
        };
        let patchless: Vec<integrity::GoneFailure> = gone
            .iter()
            .filter(|g| {
                comparison
                    .files
                    .iter()
                    .any(|f| f.filename == g.file && f.patch.is_none())
            })
            .cloned()
            .collect();
        if !patchless.is_empty() {
            unverified(
                record,
                &patchless,
                "GitHub's compare leaves out the patch of its file".into(),
            );
        }
        let skipped = integrity::skipped_since_record(&gone, &since);
        integrity::add_findings(record, skipped, on_violation);
        let mut sources = BTreeMap::new();
        for file in gone.iter().map(|g| g.file.as_str()) {
            // Several tests of one file: it is read once.
            if sources.contains_key(file)
                || sources.len() >= MAX_SOURCES
                || !since.removed.contains_key(file)
            {
                continue;
            }
            if let Ok(Some(bytes)) = self.forge.file_content(&self.repo, from, file).await {
                sources.insert(
                    file.to_string(),
                    String::from_utf8_lossy(&bytes).into_owned(),
                );
            }
        }
        let source = |file: &str| sources.get(file).cloned();
        let findings = integrity::rewritten_since_record(&gone, &since, &source);
        let found = findings.len();
        integrity::add_findings(record, findings, on_violation);
        Some(format!(
            "compared {} test(s) that no longer fail with the change since {}: {found} rewritten",
            gone.len(),
            super::short(&previous.commit)
        ))
    }
}
