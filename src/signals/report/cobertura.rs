//! Cobertura XML (coverage.py `coverage xml`, cargo-llvm-cov `--cobertura`, JaCoCo and
//! Istanbul converters): `<coverage>` / `<packages>` / `<package>` / `<classes>` / `<class
//! filename=...>` / `<lines>` / `<line number hits>`.
//!
//! Only the `<line>`s directly in a class's `<lines>` count; the copies under
//! `<methods>/<method>/<lines>` would count a line twice. A line is found once per class
//! that lists it and hit when `hits > 0`. Class filenames are relative to the `<source>`
//! roots and are reported that way (an absolute filename under a `<source>` is made
//! relative to it), so they match the paths in a diff. A report with no `<line>` at all
//! falls back to the root's `lines-valid`/`lines-covered`. Per-line hits are kept only for
//! files the caller's filter accepts.

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
    let mut handler = CoberturaHandler {
        opts,
        summary: CoverageSummary::default(),
        declared: (None, None),
        sources: Vec::new(),
        source_depth: None,
        class: None,
        saw_line: false,
    };
    drive(input, ctx, &mut handler)?;
    Ok(handler.finish())
}

struct OpenClass {
    depth: usize,
    /// Depth of the class's own `<lines>` element while it is open.
    lines_depth: Option<usize>,
    /// Per-line hits, when the caller keeps this file.
    kept: Option<(String, FileLines)>,
}

struct CoberturaHandler<'o> {
    opts: &'o ParseOptions<'o>,
    summary: CoverageSummary,
    /// The root's `lines-valid` and `lines-covered`.
    declared: (Option<u64>, Option<u64>),
    sources: Vec<String>,
    source_depth: Option<usize>,
    class: Option<OpenClass>,
    saw_line: bool,
}

impl XmlHandler for CoberturaHandler<'_> {
    fn roots(&self) -> &'static [&'static str] {
        &["coverage"]
    }

    fn start(&mut self, name: &[u8], depth: usize, e: &BytesStart) -> Result<(), String> {
        match name {
            b"coverage" if depth == 0 => self.root(e),
            b"project" if depth == 1 => Err(
                "a <project> under <coverage> is Clover's layout, not Cobertura's <packages>; give it as `clover`"
                    .to_string(),
            ),
            b"source" => {
                self.source_depth = Some(depth);
                self.sources.push(String::new());
                Ok(())
            }
            b"class" => self.open_class(depth, e),
            b"lines" => {
                if let Some(class) = self.class.as_mut().filter(|c| c.depth + 1 == depth) {
                    class.lines_depth = Some(depth);
                }
                Ok(())
            }
            b"line" => self.line(depth, e),
            _ => Ok(()),
        }
    }

    fn end(&mut self, name: &[u8], depth: usize) -> Result<(), String> {
        if self.source_depth == Some(depth) {
            self.source_depth = None;
        }
        let Some(class) = self.class.as_mut() else {
            return Ok(());
        };
        if class.lines_depth == Some(depth) {
            class.lines_depth = None;
        }
        if class.depth == depth && name == b"class" {
            if let Some(Some((file, lines))) = self.class.take().map(|c| c.kept) {
                let merged = self.summary.files.entry(file).or_default();
                for (line, hits) in lines.lines {
                    merged.add(line, hits);
                }
            }
        }
        Ok(())
    }

    fn wants_text(&self, depth: usize) -> bool {
        self.source_depth == Some(depth)
    }

    fn text(&mut self, text: &str) {
        if let Some(source) = self.sources.last_mut() {
            source.push_str(text.trim());
        }
    }
}

impl CoberturaHandler<'_> {
    fn root(&mut self, e: &BytesStart) -> Result<(), String> {
        for_each_attr(
            e,
            &[b"lines-valid", b"lines-covered", b"clover"],
            |key, value| {
                match key {
                    b"clover" => {
                        return Err(format!(
                        "this is a Clover report (`<coverage clover=\"{value}\">`), not Cobertura; \
                         give it as `clover`"
                    ))
                    }
                    b"lines-valid" => self.declared.0 = Some(number_attr("lines-valid", &value)?),
                    b"lines-covered" => {
                        self.declared.1 = Some(number_attr("lines-covered", &value)?)
                    }
                    _ => {}
                }
                Ok(())
            },
        )
    }

    fn open_class(&mut self, depth: usize, e: &BytesStart) -> Result<(), String> {
        if self.class.is_some() {
            return Err("a <class> nested inside another <class>".to_string());
        }
        let (mut filename, mut name) = (None, None);
        for_each_attr(e, &[b"filename", b"name"], |key, value| {
            match key {
                b"filename" => filename = Some(value.into_owned()),
                b"name" => name = Some(value.into_owned()),
                _ => {}
            }
            Ok(())
        })?;
        let file = filename
            .or(name)
            .ok_or_else(|| "a <class> without a filename attribute".to_string())?;
        let file = self.relative(file);
        let kept = self
            .opts
            .keeps_lines(&file)
            .then(|| (file, FileLines::default()));
        self.class = Some(OpenClass {
            depth,
            lines_depth: None,
            kept,
        });
        Ok(())
    }

    fn line(&mut self, depth: usize, e: &BytesStart) -> Result<(), String> {
        let Some(class) = self.class.as_mut() else {
            return Ok(());
        };
        if class.lines_depth.map(|d| d + 1) != Some(depth) {
            return Ok(()); // a method's copy of the line
        }
        let (mut number, mut hits) = (None, None);
        for_each_attr(e, &[b"number", b"hits"], |key, value| {
            match key {
                b"number" => number = Some(number_attr("number", &value)?),
                b"hits" => hits = Some(number_attr("hits", &value)?),
                _ => {}
            }
            Ok(())
        })?;
        let number = number.ok_or("a <line> without a number attribute")?;
        let number =
            u32::try_from(number).map_err(|_| format!("line number {number} is too large"))?;
        let hits = hits.ok_or("a <line> without a hits attribute")?;
        self.saw_line = true;
        self.summary.lines_found = self.summary.lines_found.saturating_add(1);
        self.summary.lines_hit = self.summary.lines_hit.saturating_add(u64::from(hits > 0));
        if let Some((_, lines)) = class.kept.as_mut() {
            lines.add(number, hits);
        }
        Ok(())
    }

    /// `file` relative to the `<source>` it lives under, when it is absolute.
    fn relative(&self, file: String) -> String {
        if !file.starts_with('/') {
            return file;
        }
        self.sources
            .iter()
            .filter(|s| !s.is_empty())
            .find_map(|source| {
                let rest = file.strip_prefix(source.trim_end_matches('/'))?;
                rest.strip_prefix('/').map(str::to_string)
            })
            .unwrap_or(file)
    }

    fn finish(mut self) -> CoverageSummary {
        self.summary.sources = self
            .sources
            .iter()
            .filter(|s| !s.is_empty())
            .cloned()
            .collect();
        if !self.saw_line {
            if let (Some(valid), Some(covered)) = self.declared {
                self.summary.lines_found = valid;
                self.summary.lines_hit = covered.min(valid);
            }
        }
        self.summary
    }
}
