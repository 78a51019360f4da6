//! Failing tests with one cause are one problem: grouped by the place they fail at or the
//! message they fail with, each group is one item with a count and the first few test ids.
//! The record keeps every failure (the base comparison goes by test id, and the revision
//! loop must see 39 of 40 fixed as progress); the prompt and the next steps show the groups.

use serde::Serialize;

use crate::model::{CheckerIssue, FindingKind, Severity};

/// One item of the prompt's issue list: an issue, or failing tests with one cause.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PromptIssue {
    pub dimension: String,
    pub severity: Severity,
    pub finding: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub affected_field: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suggested_fix: Option<String>,
    /// How many failing tests this item stands for, when more than one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<usize>,
    /// The first few of them ([`MAX_GROUP_TEST_IDS`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tests: Vec<String>,
}

/// Test ids an item of grouped failures names; the count says how many there are.
pub const MAX_GROUP_TEST_IDS: usize = 5;

/// A failing test's id and its failure's message. The test is the finding's data
/// ([`FindingKind::TestFailed`] and its subject), its message what the finding says after
/// the id and a colon; a record of an older version's is read from its words (`test ID
/// failed: MESSAGE`).
pub(crate) fn failed_test(issue: &CheckerIssue) -> Option<(&str, &str)> {
    if issue.dimension != "tests" || issue.severity != Severity::Blocker {
        return None;
    }
    if let Some(kind) = issue.kind {
        let failed = matches!(kind, FindingKind::TestFailed | FindingKind::TestFlaky);
        let id = issue.subject.as_deref().filter(|_| failed)?;
        let after = issue.finding.split_once(id).map_or("", |(_, rest)| rest);
        let message = after.split_once(": ").map_or("", |(_, m)| m);
        return Some((id, message));
    }
    let rest = issue.finding.strip_prefix("test ")?;
    ["failed", "errored"].iter().find_map(|verb| {
        let marker = format!(" {verb}: ");
        match rest.split_once(&marker) {
            Some((id, message)) => Some((id, message)),
            None => rest.strip_suffix(&format!(" {verb}")).map(|id| (id, "")),
        }
    })
}

/// Groups failing tests with one cause (same place of failure, or same message); every
/// other issue is its own item. Order: the first member of each group, as listed.
pub fn group_issues(issues: &[&CheckerIssue]) -> Vec<PromptIssue> {
    struct Group<'a> {
        first: &'a CheckerIssue,
        place: Option<&'a str>,
        messages: Vec<&'a str>,
        ids: Vec<&'a str>,
    }
    let mut groups: Vec<Group> = Vec::new();
    for issue in issues {
        // A flaky failure says so on its own line.
        let grouped = failed_test(issue).filter(|_| !issue.is(FindingKind::TestFlaky));
        let Some((id, message)) = grouped else {
            groups.push(Group {
                first: issue,
                place: None,
                messages: Vec::new(),
                ids: Vec::new(),
            });
            continue;
        };
        // A location is a place in the code; a finding without one names the test instead.
        let place = issue.affected_field.as_deref().filter(|at| *at != id);
        let same = groups.iter_mut().find(|g| {
            !g.ids.is_empty()
                && (place.is_some() && g.place == place
                    || !message.is_empty() && g.messages.contains(&message))
        });
        match same {
            Some(group) => {
                group.ids.push(id);
                if !group.messages.contains(&message) {
                    group.messages.push(message);
                }
            }
            None => groups.push(Group {
                first: issue,
                place,
                messages: vec![message],
                ids: vec![id],
            }),
        }
    }
    groups
        .into_iter()
        .map(|g| {
            let mut item = PromptIssue {
                dimension: g.first.dimension.clone(),
                severity: g.first.severity,
                finding: g.first.finding.clone(),
                affected_field: g.first.affected_field.clone(),
                suggested_fix: g.first.suggested_fix.clone(),
                count: None,
                tests: Vec::new(),
            };
            if g.ids.len() > 1 {
                let message = g.messages.first().copied().unwrap_or("");
                let how = if g.messages.len() == 1 {
                    "with one cause"
                } else {
                    "at one place; the first says"
                };
                item.finding = format!("{} tests failed {how}: {message}", g.ids.len());
                item.count = Some(g.ids.len());
                item.tests = g
                    .ids
                    .iter()
                    .take(MAX_GROUP_TEST_IDS)
                    .map(|id| id.to_string())
                    .collect();
            }
            item
        })
        .collect()
}
