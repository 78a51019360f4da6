//! Istanbul's `coverage-final.json` (jest, vitest, nyc, c8 `--reporter=json`): an object
//! keyed by file, each `{path, statementMap: {id: {start: {line}, end}}, s: {id: count}}`.
//!
//! Line coverage is istanbul's own: a statement counts on the line it starts, and a line's
//! hits are the most of any statement starting there, so the figures equal the LCOV the
//! same run writes. `coverage-summary.json` has totals only, no lines: it is refused (a
//! file without a `statementMap`).

use std::fmt;
use std::io::BufRead;
use std::marker::PhantomData;

use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

use super::input::{Ctx, Input};
use super::json::from_input;
use super::types::{CoverageSummary, FileLines};
use super::{ParseError, ParseOptions};

pub(crate) fn parse<R: BufRead>(
    input: &mut Input<R>,
    ctx: &Ctx,
    opts: &ParseOptions,
) -> Result<CoverageSummary, ParseError> {
    let files: Entries<String, FileCoverage> = from_input(input, ctx)?;
    let mut summary = CoverageSummary::default();
    for (key, file) in files.0 {
        let name = file.path.unwrap_or(key);
        let (mut statements, mut counts) = (file.statement_map.0, file.s.0);
        // Istanbul writes ids in order; sorting what is sorted costs one pass.
        statements.sort_unstable_by_key(|(id, _)| *id);
        counts.sort_unstable_by_key(|(id, _)| *id);
        let mut counts = counts.into_iter().peekable();
        let mut lines = FileLines::default();
        for (id, statement) in statements {
            while counts.next_if(|(c, _)| *c < id).is_some() {}
            let hits = counts.next_if(|(c, _)| *c == id).map_or(0, |(_, h)| h);
            let entry = lines.lines.entry(statement.start.line).or_insert(0);
            *entry = (*entry).max(hits);
        }
        summary.lines_found = summary.lines_found.saturating_add(lines.lines.len() as u64);
        summary.lines_hit = summary
            .lines_hit
            .saturating_add(lines.lines.values().filter(|h| **h > 0).count() as u64);
        if opts.keeps_lines(&name) {
            summary.files.insert(name, lines);
        }
    }
    Ok(summary)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FileCoverage {
    path: Option<String>,
    statement_map: Entries<Id, Span>,
    s: Entries<Id, u64>,
}

#[derive(Deserialize)]
struct Span {
    start: Position,
}

#[derive(Deserialize)]
struct Position {
    line: u32,
}

/// A JSON object read as its entries in order, without building a map.
struct Entries<K, V>(Vec<(K, V)>);

impl<'de, K: Deserialize<'de>, V: Deserialize<'de>> Deserialize<'de> for Entries<K, V> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit<K, V>(PhantomData<(K, V)>);
        impl<'de, K: Deserialize<'de>, V: Deserialize<'de>> Visitor<'de> for Visit<K, V> {
            type Value = Entries<K, V>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(0));
                while let Some(entry) = map.next_entry()? {
                    entries.push(entry);
                }
                Ok(Entries(entries))
            }
        }
        deserializer.deserialize_map(Visit(PhantomData))
    }
}

/// A statement id: istanbul's object keys `"0"`, `"1"`, …, read without allocating.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Id(u32);

impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit;
        impl Visitor<'_> for Visit {
            type Value = Id;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a statement id (a whole number as a string)")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Id, E> {
                v.parse()
                    .map(Id)
                    .map_err(|_| E::invalid_value(de::Unexpected::Str(v), &self))
            }
        }
        deserializer.deserialize_str(Visit)
    }
}

#[cfg(test)]
mod tests {
    use crate::signals::report::{parse, ParseOptions, Report, ReportFormat};

    fn lines(json: &str) -> Result<Vec<(u32, u64)>, String> {
        let keep = |_: &str| true;
        let opts = ParseOptions {
            keep_lines_for: Some(&keep),
        };
        match parse(ReportFormat::IstanbulJson, json.as_bytes(), "t.json", &opts) {
            Ok(Report::Coverage(c)) => Ok(c.files["a.ts"].lines.clone().into_iter().collect()),
            Ok(_) => Err("not coverage".into()),
            Err(e) => Err(e.to_string()),
        }
    }

    #[test]
    fn counts_are_matched_by_id_whatever_the_order_and_a_missing_one_is_no_hit() {
        let json = r#"{"a.ts":{"path":"a.ts","statementMap":{
            "2":{"start":{"line":7}},"0":{"start":{"line":3}},"1":{"start":{"line":3}}},
            "s":{"1":4,"0":0}}}"#;
        assert_eq!(lines(json), Ok(vec![(3, 4), (7, 0)]));
    }

    #[test]
    fn an_id_that_is_not_a_number_is_refused_with_its_place() {
        let json = r#"{"a.ts":{"statementMap":{"x":{"start":{"line":3}}},"s":{}}}"#;
        let err = lines(json).unwrap_err();
        assert!(err.contains("statement id"), "{err}");
        assert!(err.contains("statementMap"), "{err}");
    }
}
