//! lizard's cyclomatic complexity reports, in either of its machine formats (told apart by
//! the first byte: `<` is XML):
//!
//! - `lizard --csv`: one row per function, `NLOC,CCN,token,PARAM,length,location,file,
//!   function,long_name,start,end` (a header row with those names is optional; lizard
//!   prints none). Name = `function`, file = `file`, line = `start`, cyclomatic = `CCN`.
//! - `lizard --xml` (cppncss style): `<cppncss>` / `<measure type="Function">` with
//!   `<labels>` naming the value columns and one `<item name="NAME(...) at FILE:LINE">` with
//!   `<value>`s per function; the `CCN` column is the cyclomatic number. Other measures
//!   (`File`) are per-file aggregates and are skipped.

use std::io::BufRead;

use quick_xml::events::BytesStart;

use super::error::Position;
use super::input::{for_each_line, Ctx, Input};
use super::text::{parse_u32, parse_u32_str};
use super::types::{ComplexitySummary, FunctionComplexity};
use super::xml::{drive, for_each_attr, XmlHandler};
use super::ParseError;

const CSV_COLUMNS: usize = 11;

pub(crate) fn parse<R: BufRead>(
    input: &mut Input<R>,
    ctx: &Ctx,
) -> Result<ComplexitySummary, ParseError> {
    let is_xml = match input.fill_buf() {
        Ok(first) => first.first() == Some(&b'<'),
        Err(e) => return Err(ctx.io(input, &e)),
    };
    if is_xml {
        let mut handler = XmlFunctions::default();
        drive(input, ctx, &mut handler)?;
        return Ok(handler.summary);
    }
    let mut summary = ComplexitySummary::default();
    let mut fields: Vec<String> = Vec::with_capacity(CSV_COLUMNS);
    let mut rows = 0u64;
    let last_line = for_each_line(input, ctx, |line_no, line| {
        if line.trim_ascii().is_empty() {
            return Ok(());
        }
        let text = std::str::from_utf8(line)
            .map_err(|_| ctx.expected(Position::line(line_no), "a row that is not UTF-8 text"))?;
        split_csv(text, &mut fields).map_err(|m| ctx.expected(Position::line(line_no), &m))?;
        rows += 1;
        if rows == 1 && fields.first().is_some_and(|f| f == "NLOC") {
            return Ok(()); // header
        }
        summary
            .functions
            .push(csv_function(&fields).map_err(|m| ctx.expected(Position::line(line_no), &m))?);
        Ok(())
    })?;
    if rows == 0 {
        return Err(ctx.expected(Position::line(last_line), "no rows"));
    }
    Ok(summary)
}

fn csv_function(fields: &[String]) -> Result<FunctionComplexity, String> {
    if fields.len() < CSV_COLUMNS {
        return Err(format!(
            "a row with {} columns, not the {CSV_COLUMNS} of `lizard --csv`",
            fields.len()
        ));
    }
    let field = |i: usize| fields.get(i).map(String::as_str).unwrap_or_default();
    let cyclomatic = parse_u32(field(1).trim().as_bytes())
        .ok_or_else(|| format!("CCN column `{}` is not a whole number", field(1)))?;
    Ok(FunctionComplexity {
        name: field(7).to_string(),
        file: field(6).to_string(),
        line: parse_u32_str(field(9)),
        cyclomatic,
    })
}

/// Splits one CSV row into `fields` (RFC 4180 quoting, `""` inside quotes).
fn split_csv(row: &str, fields: &mut Vec<String>) -> Result<(), String> {
    fields.clear();
    let mut current = String::new();
    let mut chars = row.chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                current.push('"');
                chars.next();
            }
            (true, '"') => quoted = false,
            (false, '"') if current.is_empty() => quoted = true,
            (false, ',') => fields.push(std::mem::take(&mut current)),
            (_, c) => current.push(c),
        }
    }
    if quoted {
        return Err("an unterminated quoted field".to_string());
    }
    fields.push(current);
    Ok(())
}

#[derive(Default)]
struct XmlFunctions {
    summary: ComplexitySummary,
    /// Depth of the open `<measure type="Function">`.
    measure: Option<usize>,
    labels: Vec<String>,
    /// Collecting a `<label>` or `<value>` text.
    text_depth: Option<usize>,
    text: String,
    item: Option<(String, Vec<String>)>,
}

impl XmlHandler for XmlFunctions {
    fn roots(&self) -> &'static [&'static str] {
        &["cppncss"]
    }

    fn start(&mut self, name: &[u8], depth: usize, e: &BytesStart) -> Result<(), String> {
        match name {
            b"measure" => {
                let mut is_function = false;
                for_each_attr(e, &[b"type"], |key, value| {
                    is_function |= key == b"type" && value == "Function";
                    Ok(())
                })?;
                if is_function {
                    self.measure = Some(depth);
                    self.labels.clear();
                }
            }
            _ if self.measure.is_none() => {}
            b"item" => {
                let mut item_name = String::new();
                for_each_attr(e, &[b"name"], |key, value| {
                    if key == b"name" {
                        item_name = value.into_owned();
                    }
                    Ok(())
                })?;
                self.item = Some((item_name, Vec::new()));
            }
            b"label" | b"value" => {
                self.text_depth = Some(depth);
                self.text.clear();
            }
            _ => {}
        }
        Ok(())
    }

    fn end(&mut self, name: &[u8], depth: usize) -> Result<(), String> {
        if self.measure == Some(depth) {
            self.measure = None;
        }
        if self.text_depth == Some(depth) {
            self.text_depth = None;
            let text = std::mem::take(&mut self.text).trim().to_string();
            match (name, self.item.as_mut()) {
                (b"value", Some((_, values))) => values.push(text),
                (b"label", _) => self.labels.push(text),
                _ => {}
            }
        }
        if name == b"item" {
            if let Some((item_name, values)) = self.item.take() {
                let function = self.xml_function(&item_name, &values)?;
                self.summary.functions.push(function);
            }
        }
        Ok(())
    }

    fn wants_text(&self, depth: usize) -> bool {
        self.text_depth == Some(depth)
    }

    fn text(&mut self, text: &str) {
        self.text.push_str(text);
    }
}

impl XmlFunctions {
    fn xml_function(&self, item: &str, values: &[String]) -> Result<FunctionComplexity, String> {
        let column = self
            .labels
            .iter()
            .position(|l| l == "CCN")
            .ok_or("a Function measure without a CCN label")?;
        let value = values
            .get(column)
            .ok_or_else(|| format!("item `{item}` has no CCN value"))?;
        let cyclomatic = parse_u32_str(value)
            .ok_or_else(|| format!("item `{item}` has CCN `{value}`, not a whole number"))?;
        let (signature, place) = item.rsplit_once(" at ").unwrap_or((item, ""));
        let (file, line) = match place.rsplit_once(':') {
            Some((file, line)) => (file, parse_u32_str(line)),
            None => (place, None),
        };
        let name = signature.split('(').next().unwrap_or(signature).trim();
        Ok(FunctionComplexity {
            name: name.to_string(),
            file: file.to_string(),
            line,
            cyclomatic,
        })
    }
}
