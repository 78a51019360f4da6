//! `eslint --format json`: a JSON array of files `{filePath, messages: [{ruleId, severity,
//! message, line, column, fatal?, fix?: {range, text}}]}`.
//!
//! Each message is one finding: tool = `eslint`, rule = `ruleId` (none for parse errors),
//! `severity` 2 (and every `fatal` parse error) → Error, 1 → Warning, 0 → Note. Suggested
//! fix = `fix.text`, the replacement for `fix.range` (an empty text means "delete it");
//! without a fix, the first suggestion's `desc`.

use std::io::BufRead;

use serde::Deserialize;

use super::input::{Ctx, Input};
use super::json::from_input;
use super::types::{LintFinding, LintLevel, LintSummary};
use super::ParseError;

pub(crate) fn parse<R: BufRead>(
    input: &mut Input<R>,
    ctx: &Ctx,
) -> Result<LintSummary, ParseError> {
    let files: Vec<FileResult> = from_input(input, ctx)?;
    let mut summary = LintSummary::default();
    for file in files {
        for message in file.messages {
            summary.findings.push(finding(&file.file_path, message));
        }
    }
    Ok(summary)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FileResult {
    file_path: String,
    messages: Vec<Message>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Message {
    rule_id: Option<String>,
    severity: u8,
    message: String,
    line: Option<u32>,
    column: Option<u32>,
    #[serde(default)]
    fatal: bool,
    fix: Option<Fix>,
    #[serde(default)]
    suggestions: Vec<Suggestion>,
}

#[derive(Deserialize)]
struct Fix {
    text: String,
}

#[derive(Deserialize)]
struct Suggestion {
    desc: Option<String>,
}

fn finding(file: &str, m: Message) -> LintFinding {
    let level = match (m.fatal, m.severity) {
        (true, _) | (_, 2..) => LintLevel::Error,
        (false, 1) => LintLevel::Warning,
        (false, _) => LintLevel::Note,
    };
    let suggested_fix = m
        .fix
        .map(|f| f.text)
        .or_else(|| m.suggestions.into_iter().find_map(|s| s.desc));
    LintFinding {
        context: None,
        tool: "eslint".to_string(),
        rule: m.rule_id,
        level,
        message: m.message,
        file: Some(file.to_string()),
        line: m.line,
        column: m.column,
        suggested_fix,
    }
}
