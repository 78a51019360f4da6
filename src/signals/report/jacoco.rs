//! JaCoCo XML (`jacoco:report`, Gradle's `jacocoTestReport`): `<report>` / `[<group>]` /
//! `<package name="ex/util">` / `<sourcefile name="Text.java">` / `<line nr mi ci mb cb>`.
//!
//! A line is found once per `<sourcefile>` that lists it and hit when it has a covered
//! instruction (`ci > 0`), as JaCoCo's own HTML colours it. Files are named
//! `package/File.java`, relative to a source root the report does not name; the paths
//! module finds them under the project's (`src/main/java`, a module's). The `<class>` and
//! `<method>` counters repeat what the source files say and are skipped. A report with no
//! `<line>` at all (classes compiled without debug information) falls back to the root's
//! `LINE` counter. Per-line hits are kept only for files the caller's filter accepts.

use std::io::BufRead;

use quick_xml::events::BytesStart;

use super::input::{Ctx, Input};
use super::types::{CoverageSummary, FileLines};
use super::xml::{drive, for_each_attr, number_attr, XmlHandler};
use super::{ParseError, ParseOptions};

pub(crate) fn parse<R: BufRead>(
    input: &mut Input<R>,
    ctx: &Ctx,
    opts: &ParseOptions,
) -> Result<CoverageSummary, ParseError> {
    let mut handler = JacocoHandler {
        opts,
        summary: CoverageSummary::default(),
        package: None,
        file: None,
        declared: None,
        saw_line: false,
    };
    drive(input, ctx, &mut handler)?;
    Ok(handler.finish())
}

struct OpenFile {
    depth: usize,
    /// Per-line hits, when the caller keeps this file.
    kept: Option<(String, FileLines)>,
}

struct JacocoHandler<'o> {
    opts: &'o ParseOptions<'o>,
    summary: CoverageSummary,
    /// The open `<package>`: its depth and its name (`ex/util`, empty for the default one).
    package: Option<(usize, String)>,
    file: Option<OpenFile>,
    /// The root's `LINE` counter: missed, covered.
    declared: Option<(u64, u64)>,
    saw_line: bool,
}

impl XmlHandler for JacocoHandler<'_> {
    fn roots(&self) -> &'static [&'static str] {
        &["report"]
    }

    fn start(&mut self, name: &[u8], depth: usize, e: &BytesStart) -> Result<(), String> {
        match name {
            b"package" => {
                if self.package.is_some() {
                    return Err("a <package> nested inside another <package>".to_string());
                }
                let name = required_name(e, "package")?;
                self.package = Some((depth, name));
                Ok(())
            }
            b"sourcefile" => self.open_file(depth, e),
            b"line" => self.line(depth, e),
            b"counter" if depth == 1 => self.root_counter(e),
            _ => Ok(()),
        }
    }

    fn end(&mut self, name: &[u8], depth: usize) -> Result<(), String> {
        if name == b"sourcefile" && self.file.as_ref().is_some_and(|f| f.depth == depth) {
            if let Some(Some((file, lines))) = self.file.take().map(|f| f.kept) {
                let merged = self.summary.files.entry(file).or_default();
                for (line, hits) in lines.lines {
                    merged.add(line, hits);
                }
            }
        }
        if name == b"package" && self.package.as_ref().is_some_and(|(d, _)| *d == depth) {
            self.package = None;
        }
        Ok(())
    }
}

impl JacocoHandler<'_> {
    fn open_file(&mut self, depth: usize, e: &BytesStart) -> Result<(), String> {
        let Some((package_depth, package)) = &self.package else {
            return Err("a <sourcefile> outside a <package>".to_string());
        };
        if *package_depth + 1 != depth {
            return Err("a <sourcefile> that is not directly in its <package>".to_string());
        }
        let name = required_name(e, "sourcefile")?;
        let file = if package.is_empty() {
            name
        } else {
            format!("{}/{name}", package.trim_end_matches('/'))
        };
        let kept = self
            .opts
            .keeps_lines(&file)
            .then(|| (file, FileLines::default()));
        self.file = Some(OpenFile { depth, kept });
        Ok(())
    }

    fn line(&mut self, depth: usize, e: &BytesStart) -> Result<(), String> {
        let Some(file) = self.file.as_mut().filter(|f| f.depth + 1 == depth) else {
            return Ok(());
        };
        let (mut number, mut covered) = (None, None);
        for_each_attr(e, &[b"nr", b"ci"], |key, value| {
            match key {
                b"nr" => number = Some(number_attr("nr", &value)?),
                b"ci" => covered = Some(number_attr("ci", &value)?),
                _ => {}
            }
            Ok(())
        })?;
        let number = number.ok_or("a <line> without an nr attribute")?;
        let number =
            u32::try_from(number).map_err(|_| format!("line number {number} is too large"))?;
        let covered = covered.ok_or("a <line> without a ci attribute")?;
        self.saw_line = true;
        self.summary.lines_found = self.summary.lines_found.saturating_add(1);
        self.summary.lines_hit = self
            .summary
            .lines_hit
            .saturating_add(u64::from(covered > 0));
        if let Some((_, lines)) = file.kept.as_mut() {
            lines.add(number, covered);
        }
        Ok(())
    }

    fn root_counter(&mut self, e: &BytesStart) -> Result<(), String> {
        let (mut kind, mut missed, mut covered) = (None, None, None);
        for_each_attr(e, &[b"type", b"missed", b"covered"], |key, value| {
            match key {
                b"type" => kind = Some(value.into_owned()),
                b"missed" => missed = Some(number_attr("missed", &value)?),
                b"covered" => covered = Some(number_attr("covered", &value)?),
                _ => {}
            }
            Ok(())
        })?;
        if kind.as_deref() == Some("LINE") {
            let missed = missed.ok_or("a LINE <counter> without a missed attribute")?;
            let covered = covered.ok_or("a LINE <counter> without a covered attribute")?;
            self.declared = Some((missed, covered));
        }
        Ok(())
    }

    fn finish(mut self) -> CoverageSummary {
        if !self.saw_line {
            if let Some((missed, covered)) = self.declared {
                self.summary.lines_found = missed.saturating_add(covered);
                self.summary.lines_hit = covered;
            }
        }
        self.summary
    }
}

fn required_name(e: &BytesStart, element: &str) -> Result<String, String> {
    let mut name = None;
    for_each_attr(e, &[b"name"], |_, value| {
        name = Some(value.into_owned());
        Ok(())
    })?;
    name.ok_or_else(|| format!("a <{element}> without a name attribute"))
}
