//! `coverage` and `complexity`: patch coverage of the changed executable lines (uncovered
//! spans as warnings) and the functions the change added or made more complex.

use crate::model::{CheckerIssue, Severity};
use crate::signals::markers;
use crate::signals::report::{ComplexitySummary, CoverageSummary};

use super::issues::location;
use super::{Accumulator, ScoreInput};

impl Accumulator {
    pub(super) fn add_coverage(
        &mut self,
        input: &ScoreInput,
        c: &CoverageSummary,
        base: Option<&CoverageSummary>,
    ) {
        let (found, hit) = self.coverage.unwrap_or_default();
        self.coverage = Some((
            found.saturating_add(c.lines_found),
            hit.saturating_add(c.lines_hit),
        ));
        let Some(changed) = input.changed else { return };
        let (mut total, mut covered) = self.patch.unwrap_or_default();
        let extension = |path: &str| path.rsplit_once('.').map(|(_, e)| e.to_string());
        let measured_kinds: std::collections::BTreeSet<String> =
            c.files.keys().filter_map(|f| extension(f)).collect();
        for (path, lines) in &changed.files {
            let Some(file) = c.files.get(path) else {
                // A changed source file of a kind the report measures, left out of it: its
                // lines are unmeasured, which the record says rather than scoring nothing.
                let code = lines
                    .iter()
                    .any(|l| !l.text.trim().is_empty() && !is_import(&l.text));
                if code
                    && (input.paths.is_source)(path)
                    && !(input.paths.is_test)(path)
                    && extension(path).is_some_and(|e| measured_kinds.contains(&e))
                {
                    self.coverage_missed.insert(path.clone());
                }
                continue;
            };
            self.coverage_seen.insert(path.clone());
            // An edit to code the base already left untested (a renamed variable, a type
            // annotation) adds no untested code: the file's uncovered lines did not grow.
            // Its covered changed lines still count.
            let untested_before = base
                .and_then(|b| b.files.get(path))
                .map(|f| f.uncovered().count());
            let no_new_untested =
                untested_before.is_some_and(|before| file.uncovered().count() <= before);
            // A reworded line the base left untested too (an error message, a rename) is
            // not new untested code, even when the file gained some elsewhere.
            let mut untested_removed: Vec<String> = match base.and_then(|b| b.files.get(path)) {
                Some(before) => changed
                    .removed
                    .get(path)
                    .into_iter()
                    .flatten()
                    .filter(|l| before.lines.get(&l.line) == Some(&0))
                    .map(|l| markers::normalise(&l.text))
                    .collect(),
                None => Vec::new(),
            };
            let mut reworded = |text: &str| {
                let text = markers::normalise(text);
                let at = untested_removed
                    .iter()
                    .position(|old| markers::same_line_edited(old, &text));
                at.map(|i| untested_removed.swap_remove(i)).is_some()
            };
            let mut uncovered = Vec::new();
            for added in lines.iter().filter(|l| !is_import(&l.text)) {
                match file.lines.get(&added.line) {
                    Some(0) if no_new_untested || reworded(&added.text) => {}
                    Some(0) => {
                        total += 1;
                        uncovered.push(added.line);
                    }
                    Some(_) => {
                        total += 1;
                        covered += 1;
                    }
                    None => {} // not an executable line
                }
            }
            for (start, end) in spans(&uncovered) {
                let at = if start == end {
                    format!("{path}:{start}")
                } else {
                    format!("{path}:{start}-{end}")
                };
                self.uncovered.push(CheckerIssue {
                    dimension: "coverage".into(),
                    severity: Severity::Warning,
                    finding: "changed lines not covered by any test".into(),
                    affected_field: Some(at),
                    suggested_fix: Some("add a test that exercises these lines".into()),
                    kind: None,
                    subject: None,
                });
            }
        }
        self.patch = Some((total, covered));
    }

    pub(super) fn add_complexity(
        &mut self,
        input: &ScoreInput,
        c: &ComplexitySummary,
        base: Option<&ComplexitySummary>,
    ) {
        let threshold = input.config.scoring.complexity_threshold;
        let in_change = |file: &str| input.changed.is_none_or(|ch| ch.files.contains_key(file));
        let unchanged = |f: &crate::signals::report::FunctionComplexity| {
            base.is_some_and(|b| {
                b.functions.iter().any(|old| {
                    old.file == f.file && old.name == f.name && old.cyclomatic >= f.cyclomatic
                })
            })
        };
        for f in c
            .functions
            .iter()
            .filter(|f| in_change(&f.file) && !unchanged(f))
        {
            self.complexity.push(f.cyclomatic);
            if f.cyclomatic > threshold {
                self.issues.push(CheckerIssue {
                    dimension: "complexity".into(),
                    severity: Severity::Warning,
                    finding: format!(
                        "function `{}` has cyclomatic complexity {} (threshold {threshold})",
                        f.name, f.cyclomatic
                    ),
                    affected_field: location(Some(&f.file), f.line),
                    suggested_fix: Some("split the function or simplify its branches".into()),
                    kind: None,
                    subject: None,
                });
            }
        }
    }
}

/// An import names code, it does not run any worth a test of its own (and under
/// `if TYPE_CHECKING:` it never runs at all).
pub(super) fn is_import(line: &str) -> bool {
    let line = line.trim_start();
    line.starts_with("import ") || (line.starts_with("from ") && line.contains(" import "))
}

/// Consecutive line numbers folded into (start, end) spans.
pub(super) fn spans(lines: &[u32]) -> Vec<(u32, u32)> {
    let mut out: Vec<(u32, u32)> = Vec::new();
    for &l in lines {
        match out.last_mut() {
            Some((_, end)) if *end + 1 == l => *end = l,
            _ => out.push((l, l)),
        }
    }
    out
}
