//! Checkstyle XML, the lingua franca of many linters (checkstyle itself, `eslint -f
//! checkstyle`, ktlint, phpcs, golangci-lint, hadolint, swiftlint):
//! `<checkstyle>` / `<file name=...>` / `<error line column severity message source/>`.
//!
//! Each `<error>` is one finding: `severity` `error` → Error, `warning` → Warning, `info`
//! and `ignore` → Note (a missing severity is an error, as checkstyle's own default). The
//! rule is the `source` attribute (e.g.
//! `com.puppycrawl.tools.checkstyle.checks.javadoc.JavadocPackageCheck`,
//! `eslint.rules.no-unused-vars`). The tool is `checkstyle`, or the first segment of
//! `source` when it names another tool that writes this format (`eslint.rules.x` → eslint).
//! Checkstyle has no fixes, so `suggested_fix` is always empty.

use std::io::BufRead;

use quick_xml::events::BytesStart;

use super::input::{Ctx, Input};
use super::text::parse_u32_str;
use super::types::{LintFinding, LintLevel, LintSummary};
use super::xml::{drive, for_each_attr, XmlHandler};
use super::ParseError;

pub(crate) fn parse<R: BufRead>(
    input: &mut Input<R>,
    ctx: &Ctx,
) -> Result<LintSummary, ParseError> {
    let mut handler = CheckstyleHandler::default();
    drive(input, ctx, &mut handler)?;
    Ok(handler.summary)
}

#[derive(Default)]
struct CheckstyleHandler {
    summary: LintSummary,
    file: Option<String>,
}

impl XmlHandler for CheckstyleHandler {
    fn roots(&self) -> &'static [&'static str] {
        &["checkstyle"]
    }

    fn start(&mut self, name: &[u8], _depth: usize, e: &BytesStart) -> Result<(), String> {
        match name {
            b"file" => {
                let mut file = None;
                for_each_attr(e, &[b"name"], |key, value| {
                    if key == b"name" {
                        file = Some(value.into_owned());
                    }
                    Ok(())
                })?;
                self.file = Some(file.ok_or("a <file> without a name attribute")?);
                Ok(())
            }
            b"error" => self.error(e),
            _ => Ok(()),
        }
    }

    fn end(&mut self, name: &[u8], _depth: usize) -> Result<(), String> {
        if name == b"file" {
            self.file = None;
        }
        Ok(())
    }
}

impl CheckstyleHandler {
    fn error(&mut self, e: &BytesStart) -> Result<(), String> {
        let mut finding = LintFinding {
            context: None,
            tool: "checkstyle".to_string(),
            rule: None,
            level: LintLevel::Error,
            message: String::new(),
            file: self.file.clone(),
            line: None,
            column: None,
            suggested_fix: None,
        };
        for_each_attr(
            e,
            &[b"line", b"column", b"message", b"source", b"severity"],
            |key, value| {
                match key {
                    b"line" => finding.line = parse_u32_str(&value),
                    b"column" => finding.column = parse_u32_str(&value),
                    b"message" => finding.message = value.into_owned(),
                    b"source" => finding.rule = Some(value.into_owned()),
                    b"severity" => finding.level = level(&value)?,
                    _ => {}
                }
                Ok(())
            },
        )?;
        if let Some(tool) = finding.rule.as_deref().and_then(foreign_tool) {
            finding.tool = tool.to_string();
        }
        self.summary.findings.push(finding);
        Ok(())
    }
}

fn level(severity: &str) -> Result<LintLevel, String> {
    match severity.trim().to_ascii_lowercase().as_str() {
        "error" | "" => Ok(LintLevel::Error),
        "warning" | "warn" => Ok(LintLevel::Warning),
        "info" | "ignore" | "note" => Ok(LintLevel::Note),
        other => Err(format!(
            "unknown severity \"{other}\"; expected error, warning, info or ignore"
        )),
    }
}

/// `eslint.rules.no-unused-vars` → `eslint`: tools other than checkstyle prefix their rules.
fn foreign_tool(source: &str) -> Option<&str> {
    let (head, _) = source.split_once('.')?;
    let known = [
        "eslint",
        "ktlint",
        "golangci",
        "phpcs",
        "hadolint",
        "swiftlint",
        "stylelint",
    ];
    known.contains(&head).then_some(head)
}
