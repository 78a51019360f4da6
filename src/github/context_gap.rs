//! An agent's `CONTEXT_GAP_REPORT` reply (minimum sufficient context, `iterative-retrieval`):
//!
//! ```text
//! CONTEXT_GAP_REPORT
//! ------------------
//! NEEDS: <file path or concept> | REASON: <why it blocks> | ALTERNATIVE: <or: none — required>
//! READY_TO_EXECUTE: false
//! ```
//!
//! Agents often put the block in a code fence, so it is found anywhere in the comment, fenced
//! or not. The items are untrusted requests: whoever delivers them decides what may be sent.

/// One `NEEDS:` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GapItem {
    pub needs: String,
    pub reason: Option<String>,
    /// `None` when the agent wrote `none — required` (or left it out).
    pub alternative: Option<String>,
}

impl GapItem {
    /// Without this item the agent cannot go on: it names no alternative.
    pub fn required(&self) -> bool {
        self.alternative.is_none()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ContextGapReport {
    pub items: Vec<GapItem>,
    /// `READY_TO_EXECUTE:`; `None` when the line is missing or not `true`/`false`.
    pub ready_to_execute: Option<bool>,
    /// `NEEDS:` lines that could not be read (no item named).
    pub malformed: Vec<String>,
}

const HEADER: &str = "CONTEXT_GAP_REPORT";

/// The first `CONTEXT_GAP_REPORT` block in `body`, if any.
pub fn parse_context_gap_report(body: &str) -> Option<ContextGapReport> {
    if !body.contains(HEADER) {
        return None;
    }
    let mut lines = body.lines().map(str::trim);
    lines.find(|l| l.trim_matches(|c| c == '*' || c == ':' || c == '#' || c == ' ') == HEADER)?;
    let mut report = ContextGapReport::default();
    let mut started = false;
    for line in lines {
        if line.is_empty() || line.chars().all(|c| c == '-' || c == '=') {
            if started && line.is_empty() && report.ready_to_execute.is_some() {
                break;
            }
            continue;
        }
        if let Some(value) = strip_key(line, "READY_TO_EXECUTE") {
            report.ready_to_execute = match value.to_ascii_lowercase().as_str() {
                "true" => Some(true),
                "false" => Some(false),
                _ => None,
            };
            break;
        }
        if strip_key(line, "NEEDS").is_some() {
            started = true;
            match parse_item(line) {
                Some(item) => report.items.push(item),
                None => report.malformed.push(line.to_string()),
            }
            continue;
        }
        // Anything else ends the block (a closing fence, prose after it).
        break;
    }
    Some(report)
}

fn strip_key<'l>(text: &'l str, key: &str) -> Option<&'l str> {
    let rest = text.trim().strip_prefix(key)?;
    Some(rest.trim_start().strip_prefix(':')?.trim())
}

fn parse_item(line: &str) -> Option<GapItem> {
    let mut item = GapItem {
        needs: String::new(),
        reason: None,
        alternative: None,
    };
    for part in line.split('|') {
        if let Some(v) = strip_key(part, "NEEDS") {
            item.needs = v.to_string();
        } else if let Some(v) = strip_key(part, "REASON") {
            item.reason = (!v.is_empty()).then(|| v.to_string());
        } else if let Some(v) = strip_key(part, "ALTERNATIVE") {
            item.alternative = alternative(v);
        }
    }
    (!item.needs.is_empty()).then_some(item)
}

fn alternative(value: &str) -> Option<String> {
    let bare = value.trim_matches(|c| c == '<' || c == '>').trim();
    let lower = bare.to_lowercase();
    if bare.is_empty()
        || lower == "none"
        || lower.starts_with("none ")
        || lower.starts_with("none—")
    {
        None
    } else {
        Some(value.to_string())
    }
}
