//! The views of what itergate writes on a pull request: the sticky comment (decision, scores
//! with deltas against the previous iteration and the base, the revision line, a mermaid
//! quality chart, the checker issues and the revision prompt, both collapsible), the
//! escalation call, and the replies to commands. Every piece of untrusted text is escaped
//! or fenced here, before a template sees it.

use serde::Serialize;

use crate::config::Config;
use crate::engine::trajectory::{quality_of, Trajectory};
use crate::engine::Evaluation;
use crate::engine::{Decision, Recommendation};
use crate::markup::{
    escape_markdown_excerpt, escape_markdown_inline, escape_markdown_inline_keeping_code,
    fence_with_info,
};
use crate::model::{Dimension, IterationRecord, Severity, Status};
use crate::signals::integrity;
use crate::summary::{format_delta, format_score};

/// Issues listed in the comment; the rest are counted.
const MAX_LISTED_ISSUES: usize = 50;

#[derive(Debug, Serialize)]
pub struct ScoreRow {
    pub label: &'static str,
    pub value: String,
    pub vs_previous: String,
    pub vs_base: String,
}

#[derive(Debug, Serialize)]
pub struct IssueRow {
    pub severity: &'static str,
    pub dimension: String,
    pub at: String,
    pub finding: String,
}

#[derive(Debug, Serialize)]
pub struct CommentView {
    pub recommendation: &'static str,
    pub headline: &'static str,
    pub why: String,
    pub iteration: u32,
    pub max_iterations: u32,
    pub commit: String,
    pub scores: Vec<ScoreRow>,
    pub revision_line: String,
    pub chart_x: String,
    pub chart_y: String,
    pub issues: Vec<IssueRow>,
    pub more_issues: usize,
    /// Tamper evidence (BLOCKER and WARNING `integrity` issues), shown above the scores.
    pub integrity: Vec<IssueRow>,
    pub prompt: Option<String>,
    pub next_steps: Vec<String>,
    pub label: String,
    /// What the base already fails (escaped), not counted against the change.
    pub base_debt: String,
    /// Lines about the comment's own state (e.g. a history lost to an unreadable state),
    /// already escaped; set by the caller.
    pub notices: Vec<String>,
}

fn headline(r: Recommendation) -> &'static str {
    match r {
        Recommendation::Accept => "✅ accept",
        Recommendation::Iterate => "🔁 iterate",
        Recommendation::Escalate => "🙋 escalate: a human is needed",
        Recommendation::Abort => "⛔ abort",
    }
}

fn delta(d: Option<Dimension>, now: Option<f64>, then: Option<f64>) -> String {
    match (now, then) {
        (Some(a), Some(b)) => format_delta(d, a - b),
        _ => "–".into(),
    }
}

fn score_rows(
    config: &Config,
    history: &[IterationRecord],
    trajectory: &Trajectory,
    base: Option<&IterationRecord>,
) -> Vec<ScoreRow> {
    let Some(latest) = history.last() else {
        return Vec::new();
    };
    let previous = history.len().checked_sub(2).and_then(|i| history.get(i));
    let w = &config.quality_weights;
    // The trajectory's quality: none for a VOID or error iteration, whose scores are not
    // to be trusted (the terminal summary says the same).
    let point = |record: &IterationRecord| {
        trajectory
            .points
            .iter()
            .find(|p| p.iteration == record.iteration)
            .and_then(|p| p.quality)
    };
    let quality = point(latest);
    if quality.is_none() && matches!(latest.status, Status::Void | Status::Error) {
        let why = match latest.status {
            Status::Void => "VOID, not scored",
            _ => "error, not scored",
        };
        return vec![ScoreRow {
            label: "Quality",
            value: why.into(),
            vs_previous: "–".into(),
            vs_base: "–".into(),
        }];
    }
    let mut rows = vec![ScoreRow {
        label: "Quality",
        value: quality.map_or("–".into(), |q| format!("{q:.2}")),
        vs_previous: delta(None, quality, previous.and_then(point)),
        vs_base: delta(None, quality, base.and_then(|b| quality_of(b, w))),
    }];
    rows.extend(latest.scores.observed().map(|(d, v)| ScoreRow {
        label: d.label(),
        value: format_score(Some(d), v),
        vs_previous: delta(Some(d), Some(v), previous.and_then(|p| p.scores.get(d))),
        vs_base: delta(Some(d), Some(v), base.and_then(|b| b.scores.get(d))),
    }));
    rows
}

/// The sticky comment's visible part.
pub fn comment_view(
    config: &Config,
    history: &[IterationRecord],
    base: Option<&IterationRecord>,
    evaluation: &Evaluation,
    prompt: Option<&str>,
) -> CommentView {
    let decision = &evaluation.decision;
    let trajectory = &evaluation.trajectory;
    let points: Vec<(u32, f64)> = trajectory
        .points
        .iter()
        .filter_map(|p| Some((p.iteration, p.quality?)))
        .collect();
    let latest = history.last();
    let mut issues: Vec<_> = latest
        .map(|r| r.issues.iter().collect())
        .unwrap_or_default();
    issues.sort_by_key(|i| i.severity);
    let listed = issues
        .iter()
        .take(MAX_LISTED_ISSUES)
        .map(|i| IssueRow {
            severity: i.severity.as_str(),
            dimension: escape_markdown_inline(&i.dimension),
            at: escape_markdown_inline(i.affected_field.as_deref().unwrap_or("")),
            finding: escape_markdown_inline(&crate::model::headline(&i.finding)),
        })
        .collect();
    CommentView {
        recommendation: decision.recommendation().as_str(),
        headline: headline(decision.recommendation()),
        why: escape_markdown_inline_keeping_code(
            &decision
                .stopping_reason
                .as_ref()
                .map(|r| r.summary.clone())
                .unwrap_or_else(|| {
                    format!(
                        "{} to address",
                        crate::summary::items_to_address(latest, decision)
                    )
                }),
        ),
        iteration: decision.budget.current_iteration,
        max_iterations: decision.budget.max_iterations,
        commit: latest
            .map(|r| r.commit.0.chars().take(12).collect())
            .unwrap_or_default(),
        scores: score_rows(config, history, trajectory, base),
        revision_line: decision.revision.line(),
        chart_x: points
            .iter()
            .map(|(i, _)| i.to_string())
            .collect::<Vec<_>>()
            .join(", "),
        chart_y: points
            .iter()
            .map(|(_, q)| format!("{q:.2}"))
            .collect::<Vec<_>>()
            .join(", "),
        more_issues: issues.len().saturating_sub(MAX_LISTED_ISSUES),
        integrity: issues
            .iter()
            .filter(|i| integrity::shown_to_reviewers(i))
            .take(MAX_LISTED_ISSUES)
            .map(|i| IssueRow {
                severity: i.severity.as_str(),
                dimension: escape_markdown_inline(&i.dimension),
                at: escape_markdown_inline(i.affected_field.as_deref().unwrap_or("")),
                finding: escape_markdown_inline(&crate::model::headline(&i.finding)),
            })
            .collect(),
        issues: listed,
        prompt: prompt.map(|p| fence_with_info(p, "markdown")),
        next_steps: decision
            .next_steps
            .iter()
            .map(|s| escape_markdown_inline_keeping_code(s))
            .collect(),
        label: config.github.label.clone(),
        base_debt: escape_markdown_inline(&crate::summary::base_debt_line(latest)),
        notices: Vec::new(),
    }
}

/// What the sticky comment says about its own state: why an earlier state was lost.
pub fn state_notices(lost_state: Option<&str>) -> Vec<String> {
    lost_state
        .map(|why| {
            format!(
                "⚠️ itergate could not read the state it had saved in this comment ({}), so the history of this pull request starts afresh here.",
                escape_markdown_excerpt(why, 200)
            )
        })
        .into_iter()
        .collect()
}

/// Errors listed in a reply; the rest are counted.
const MAX_LISTED_ERRORS: usize = 5;

/// What the one reply to a comment's commands collects.
#[derive(Debug, Default)]
pub struct CommandReply {
    /// Commands refused because the commenter lacks the permission.
    pub refused_permission: Vec<&'static str>,
    /// Commands refused because the commenter opened the pull request.
    pub refused_author: Vec<&'static str>,
    /// Messages of malformed commands (they echo what was typed only escaped and cut).
    pub errors: Vec<String>,
    /// Commands beyond the number read from one comment.
    pub ignored_commands: usize,
    /// How many commands of a comment are read.
    pub commands_read: usize,
    /// The rendered `help`, when asked for.
    pub help: Option<String>,
    /// The rendered `status`, when asked for.
    pub status: Option<String>,
}

impl CommandReply {
    /// Whether the comment gets a 😕: something was refused or malformed.
    pub fn is_refusal_or_error(&self) -> bool {
        !(self.refused_permission.is_empty()
            && self.refused_author.is_empty()
            && self.errors.is_empty())
    }
}

/// The one reply to a comment's commands, or `None` when there is nothing to say. `login`
/// is the commenter's; it is shown without mentioning them.
pub fn command_reply(reply: &CommandReply, login: &str, permission: &str) -> Option<String> {
    let mut parts: Vec<String> = Vec::new();
    let who = escape_markdown_inline(&format!("@{login}"));
    let refused = unique(&reply.refused_permission);
    if !refused.is_empty() {
        let verb = if refused.len() == 1 { "needs" } else { "need" };
        parts.push(format!(
            "Sorry {who}, {} {verb} {permission} permission on this repository; nothing was changed.",
            code_list(&refused),
        ));
    }
    let refused = unique(&reply.refused_author);
    if !refused.is_empty() {
        parts.push(format!(
            "{} cannot come from the pull request's own author (`github.author_can_decide` is off); nothing was changed. Someone else with {permission} permission can give it.",
            code_list(&refused),
        ));
    }
    let mut errors: Vec<&String> = Vec::new();
    for error in &reply.errors {
        if !errors.contains(&error) {
            errors.push(error);
        }
    }
    if !errors.is_empty() {
        let mut list: Vec<String> = errors
            .iter()
            .take(MAX_LISTED_ERRORS)
            .map(|e| format!("- {e}"))
            .collect();
        if errors.len() > MAX_LISTED_ERRORS {
            list.push(format!("- … and {} more", errors.len() - MAX_LISTED_ERRORS));
        }
        parts.push(format!(
            "`/iterate` could not read:
{}

See `/iterate help`.",
            list.join(
                "
"
            )
        ));
    }
    if reply.ignored_commands > 0 {
        parts.push(format!(
            "Only the first {} commands of a comment are read; {} more were ignored.",
            reply.commands_read, reply.ignored_commands
        ));
    }
    parts.extend(reply.help.iter().cloned());
    parts.extend(reply.status.iter().cloned());
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}

/// `names` without repeats, in order.
fn unique<'n>(names: &[&'n str]) -> Vec<&'n str> {
    let mut out: Vec<&str> = Vec::new();
    for name in names {
        if !out.contains(name) {
            out.push(name);
        }
    }
    out
}

/// `a`, `a` and `b`, `a`, `b` and `c` — each in a code span (command names only).
fn code_list(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    match quoted.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// Counts for the escalation call.
#[derive(Debug, Serialize)]
pub struct EscalationView {
    pub mentions: String,
    pub why: String,
    pub blockers: usize,
    pub warnings: usize,
}

pub fn escalation_view(
    config: &Config,
    latest: &IterationRecord,
    decision: &Decision,
) -> EscalationView {
    EscalationView {
        mentions: config
            .github
            .reviewers
            .iter()
            .map(|r| format!("@{}", r.trim_start_matches('@')))
            .collect::<Vec<_>>()
            .join(" "),
        why: escape_markdown_inline_keeping_code(
            &decision
                .stopping_reason
                .as_ref()
                .map(|r| r.summary.clone())
                .unwrap_or_default(),
        ),
        blockers: latest.count(Severity::Blocker),
        warnings: latest.count(Severity::Warning),
    }
}
