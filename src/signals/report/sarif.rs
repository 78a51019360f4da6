//! SARIF 2.1.0, the static-analysis interchange format (CodeQL, Semgrep, clippy-sarif,
//! ESLint's SARIF formatter, many scanners): `runs[].results[]`.
//!
//! Each result is one finding. Tool = `runs[].tool.driver.name`; rule = `ruleId` (or the
//! `id` of the rule `ruleIndex`/`rule.index` points at). Level = the result's `level`, else
//! the rule's `defaultConfiguration.level`, else `warning` (SARIF's own default); `error` →
//! Error, `warning` → Warning, `note`/`none` → Note. A result whose `kind` is not `fail`
//! is informational: `pass` and `notApplicable` are dropped, `informational`, `review` and
//! `open` become Notes. Message = `message.text` with `{0}`-style placeholders filled from
//! `message.arguments` (else the rule's `messageStrings[message.id]`, else its short
//! description). Location = `locations[0].physicalLocation` (`artifactLocation.uri`,
//! `region.startLine`/`startColumn`; `file://` stripped). Suggested fix = the
//! `fixes[].artifactChanges[].replacements[].insertedContent.text` joined by newlines,
//! else the first fix's description.
//!
//! The document is deserialized from the reader into structs naming only these fields;
//! everything else (and any unknown property) is skipped without being kept.

use std::collections::HashMap;
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
    let log: Log = from_input(input, ctx)?;
    let mut summary = LintSummary::default();
    for run in log.runs {
        let tool = run.tool.driver.name.clone();
        for result in &run.results {
            if let Some(finding) = finding(&run, &tool, result) {
                summary.findings.push(finding);
            }
        }
    }
    Ok(summary)
}

#[derive(Deserialize)]
struct Log {
    runs: Vec<Run>,
}

#[derive(Deserialize)]
struct Run {
    tool: Tool,
    #[serde(default)]
    results: Vec<SarifResult>,
}

#[derive(Deserialize)]
struct Tool {
    driver: Driver,
}

#[derive(Deserialize)]
struct Driver {
    name: String,
    #[serde(default)]
    rules: Vec<Rule>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Rule {
    id: Option<String>,
    default_configuration: Option<Configuration>,
    #[serde(default)]
    message_strings: HashMap<String, Text>,
    short_description: Option<Text>,
}

#[derive(Deserialize)]
struct Configuration {
    level: Option<String>,
}

#[derive(Deserialize, Default)]
struct Text {
    text: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SarifResult {
    rule_id: Option<String>,
    rule_index: Option<usize>,
    rule: Option<RuleRef>,
    level: Option<String>,
    kind: Option<String>,
    message: Message,
    #[serde(default)]
    locations: Vec<Location>,
    #[serde(default)]
    fixes: Vec<Fix>,
}

#[derive(Deserialize)]
struct RuleRef {
    id: Option<String>,
    index: Option<usize>,
}

#[derive(Deserialize)]
struct Message {
    text: Option<String>,
    id: Option<String>,
    #[serde(default)]
    arguments: Vec<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Location {
    physical_location: Option<PhysicalLocation>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PhysicalLocation {
    artifact_location: Option<ArtifactLocation>,
    region: Option<Region>,
}

#[derive(Deserialize)]
struct ArtifactLocation {
    uri: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Region {
    start_line: Option<u32>,
    start_column: Option<u32>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Fix {
    description: Option<Text>,
    #[serde(default)]
    artifact_changes: Vec<ArtifactChange>,
}

#[derive(Deserialize)]
struct ArtifactChange {
    #[serde(default)]
    replacements: Vec<Replacement>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Replacement {
    inserted_content: Option<Text>,
}

fn finding(run: &Run, tool: &str, result: &SarifResult) -> Option<LintFinding> {
    let rule = rule_of(run, result);
    let kind = result.kind.as_deref().unwrap_or("fail");
    let level = match kind {
        "pass" | "notApplicable" => return None,
        "fail" => {
            let default = rule.and_then(|r| r.default_configuration.as_ref()?.level.as_deref());
            level_of(result.level.as_deref().or(default).unwrap_or("warning"))
        }
        _ => LintLevel::Note,
    };
    let physical = result
        .locations
        .first()
        .and_then(|l| l.physical_location.as_ref());
    let region = physical.and_then(|p| p.region.as_ref());
    let file = physical
        .and_then(|p| p.artifact_location.as_ref()?.uri.as_deref())
        .map(|uri| uri.strip_prefix("file://").unwrap_or(uri).to_string());
    Some(LintFinding {
        context: None,
        tool: tool.to_string(),
        rule: result
            .rule_id
            .clone()
            .or_else(|| result.rule.as_ref().and_then(|r| r.id.clone()))
            .or_else(|| rule.and_then(|r| r.id.clone())),
        level,
        message: message_of(result, rule),
        file,
        line: region.and_then(|r| r.start_line),
        column: region.and_then(|r| r.start_column),
        suggested_fix: fix_of(&result.fixes),
    })
}

fn rule_of<'r>(run: &'r Run, result: &SarifResult) -> Option<&'r Rule> {
    let rules = &run.tool.driver.rules;
    let index = result
        .rule_index
        .or_else(|| result.rule.as_ref().and_then(|r| r.index));
    if let Some(rule) = index.and_then(|i| rules.get(i)) {
        return Some(rule);
    }
    let id = result.rule_id.as_deref()?;
    rules.iter().find(|r| r.id.as_deref() == Some(id))
}

fn level_of(level: &str) -> LintLevel {
    match level {
        "error" => LintLevel::Error,
        "warning" => LintLevel::Warning,
        _ => LintLevel::Note,
    }
}

fn message_of(result: &SarifResult, rule: Option<&Rule>) -> String {
    let message = &result.message;
    let template = message
        .text
        .clone()
        .or_else(|| {
            let id = message.id.as_deref()?;
            rule?.message_strings.get(id)?.text.clone()
        })
        .or_else(|| rule?.short_description.as_ref()?.text.clone())
        .unwrap_or_default();
    let mut text = template;
    for (i, argument) in message.arguments.iter().enumerate() {
        text = text.replace(&format!("{{{i}}}"), argument);
    }
    text
}

fn fix_of(fixes: &[Fix]) -> Option<String> {
    let inserted: Vec<&str> = fixes
        .iter()
        .flat_map(|f| &f.artifact_changes)
        .flat_map(|c| &c.replacements)
        .filter_map(|r| r.inserted_content.as_ref()?.text.as_deref())
        .collect();
    if inserted.iter().any(|t| !t.is_empty()) {
        return Some(inserted.join("\n"));
    }
    fixes
        .first()
        .and_then(|f| f.description.as_ref()?.text.clone())
}
