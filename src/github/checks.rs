//! Check runs as itergate writes them, and GitHub's limits on them: at most
//! [`ANNOTATIONS_PER_REQUEST`] annotations per request (more go out as follow-up updates,
//! which GitHub appends) and output `summary`/`text` of at most [`OUTPUT_LIMIT_CHARS`]
//! characters (longer ones are cut at a line boundary and say so).
//!
//! Annotations are capped in total at [`MAX_ANNOTATIONS`] (a few requests, whatever a report
//! holds: GitHub's secondary limits allow about 80 content-creating requests a minute):
//! failures first, then warnings, then notices, each in the order given; the summary says
//! how many were left out.

use serde_json::{json, Map, Value};

use crate::model::CommitSha;

/// The Checks API takes at most 50 annotations per create/update request.
pub const ANNOTATIONS_PER_REQUEST: usize = 50;
/// Annotations sent per check run at most: three requests.
pub const MAX_ANNOTATIONS: usize = 3 * ANNOTATIONS_PER_REQUEST;
/// `output.summary` and `output.text` are limited to 65,535 characters.
pub const OUTPUT_LIMIT_CHARS: usize = 65_535;

const CUT_NOTE: &str =
    "\n\n… (cut to GitHub's 65,535-character limit; the full report is in the job log)";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnnotationLevel {
    Notice,
    Warning,
    Failure,
}

impl AnnotationLevel {
    pub fn as_str(self) -> &'static str {
        match self {
            AnnotationLevel::Notice => "notice",
            AnnotationLevel::Warning => "warning",
            AnnotationLevel::Failure => "failure",
        }
    }
}

/// A finding shown on a line of the diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Annotation {
    pub path: String,
    pub start_line: u32,
    pub end_line: u32,
    pub level: AnnotationLevel,
    pub message: String,
    pub title: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckConclusion {
    Success,
    Failure,
    Neutral,
    Cancelled,
    Skipped,
    TimedOut,
    ActionRequired,
}

impl CheckConclusion {
    pub fn as_str(self) -> &'static str {
        match self {
            CheckConclusion::Success => "success",
            CheckConclusion::Failure => "failure",
            CheckConclusion::Neutral => "neutral",
            CheckConclusion::Cancelled => "cancelled",
            CheckConclusion::Skipped => "skipped",
            CheckConclusion::TimedOut => "timed_out",
            CheckConclusion::ActionRequired => "action_required",
        }
    }
}

/// Where a check run stands; a completed run always has a conclusion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckState {
    Queued,
    InProgress,
    Completed(CheckConclusion),
}

/// A check run to create or update. `head_sha` is only sent on create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckRunSpec {
    pub name: String,
    pub head_sha: CommitSha,
    pub state: CheckState,
    pub title: String,
    pub summary: String,
    pub text: Option<String>,
    pub annotations: Vec<Annotation>,
    pub details_url: Option<String>,
    pub external_id: Option<String>,
}

/// Cuts `text` to GitHub's output limit, at a line boundary where one is near, and appends
/// a note saying so. Text within the limit is returned unchanged.
pub fn cut_output(text: &str) -> String {
    cut_to(text, OUTPUT_LIMIT_CHARS, CUT_NOTE)
}

/// Cuts `text` to at most `limit_chars` characters including `note`.
pub(crate) fn cut_to(text: &str, limit_chars: usize, note: &str) -> String {
    if text.chars().count() <= limit_chars {
        return text.to_string();
    }
    let keep = limit_chars.saturating_sub(note.chars().count());
    let end = text.char_indices().nth(keep).map_or(text.len(), |(i, _)| i);
    let head = &text[..end];
    // Prefer a line boundary if one is within the last tenth, so no line is half-shown.
    let head = match head.rfind('\n') {
        Some(nl) if nl >= end - end / 10 => &head[..nl],
        _ => head,
    };
    format!("{head}{note}")
}

fn annotation_json(a: &Annotation) -> Value {
    let mut v = json!({
        "path": a.path,
        "start_line": a.start_line.max(1),
        "end_line": a.end_line.max(a.start_line).max(1),
        "annotation_level": a.level.as_str(),
        "message": cut_to(&a.message, OUTPUT_LIMIT_CHARS, "…"),
    });
    if let (Some(title), Some(map)) = (&a.title, v.as_object_mut()) {
        map.insert("title".into(), Value::String(title.clone()));
    }
    v
}

fn level_rank(level: AnnotationLevel) -> u8 {
    match level {
        AnnotationLevel::Failure => 0,
        AnnotationLevel::Warning => 1,
        AnnotationLevel::Notice => 2,
    }
}

/// The annotations sent: at most [`MAX_ANNOTATIONS`], failures first, then warnings, then
/// notices (stable within a level).
pub fn selected_annotations(annotations: &[Annotation]) -> Vec<&Annotation> {
    let mut ordered: Vec<&Annotation> = annotations.iter().collect();
    ordered.sort_by_key(|a| level_rank(a.level));
    ordered.truncate(MAX_ANNOTATIONS);
    ordered
}

/// The summary, with a line saying how many annotations were left out, if any.
fn summary_with_omissions(spec: &CheckRunSpec) -> String {
    let omitted = spec.annotations.len().saturating_sub(MAX_ANNOTATIONS);
    if omitted == 0 {
        return cut_output(&spec.summary);
    }
    let note = format!(
        "\n\n{omitted} of {} annotations were left out: itergate shows at most {MAX_ANNOTATIONS}, failures first, then warnings.",
        spec.annotations.len()
    );
    cut_to(
        &spec.summary,
        OUTPUT_LIMIT_CHARS - note.chars().count(),
        "…",
    ) + &note
}

fn output_json(spec: &CheckRunSpec, annotations: &[&Annotation], with_text: bool) -> Value {
    let mut output = Map::new();
    output.insert("title".into(), Value::String(spec.title.clone()));
    output.insert(
        "summary".into(),
        Value::String(summary_with_omissions(spec)),
    );
    if let Some(text) = spec.text.as_ref().filter(|_| with_text) {
        output.insert("text".into(), Value::String(cut_output(text)));
    }
    if !annotations.is_empty() {
        let list = annotations.iter().map(|a| annotation_json(a)).collect();
        output.insert("annotations".into(), Value::Array(list));
    }
    Value::Object(output)
}

/// The request bodies for creating (`create = true`) or updating a check run: the first
/// carries the state and the first batch of annotations, each further one the next batch.
/// At most [`MAX_ANNOTATIONS`] annotations go out ([`selected_annotations`]).
pub fn check_run_bodies(spec: &CheckRunSpec, create: bool) -> Vec<Value> {
    let selected = selected_annotations(&spec.annotations);
    let mut batches = selected.chunks(ANNOTATIONS_PER_REQUEST);
    let first_batch = batches.next().unwrap_or(&[]);
    let mut first = Map::new();
    first.insert("name".into(), Value::String(spec.name.clone()));
    if create {
        first.insert("head_sha".into(), Value::String(spec.head_sha.0.clone()));
    }
    match spec.state {
        CheckState::Queued => {
            first.insert("status".into(), "queued".into());
        }
        CheckState::InProgress => {
            first.insert("status".into(), "in_progress".into());
        }
        CheckState::Completed(conclusion) => {
            first.insert("status".into(), "completed".into());
            first.insert("conclusion".into(), conclusion.as_str().into());
        }
    }
    for (key, value) in [
        ("details_url", &spec.details_url),
        ("external_id", &spec.external_id),
    ] {
        if let Some(value) = value {
            first.insert(key.into(), Value::String(value.clone()));
        }
    }
    first.insert("output".into(), output_json(spec, first_batch, true));
    let mut bodies = vec![Value::Object(first)];
    for batch in batches {
        // Follow-ups repeat the required title and summary but not the long text.
        bodies.push(json!({ "output": output_json(spec, batch, false) }));
    }
    bodies
}
