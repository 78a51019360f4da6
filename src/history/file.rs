//! A history file: a JSON or YAML list of `IterationRecord`s, oldest first.
//!
//! A bad file is refused with its name, the place (line and column where the parser knows
//! it) and the path of the offending field, e.g. `[2].scores.coverage`. Scores, quality and
//! confidence outside 0..=1 are refused too: a record is only as good as its numbers.

use std::io::Read;
use std::path::Path;

use serde::de::DeserializeOwned;

use crate::model::IterationRecord;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{source_name}{}: {}{message}", location(*line, *column), field.as_ref().map(|f| format!("`{f}`: ")).unwrap_or_default())]
pub struct InputError {
    pub source_name: String,
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub field: Option<String>,
    pub message: String,
}

fn location(line: Option<usize>, column: Option<usize>) -> String {
    match (line, column) {
        (Some(l), Some(c)) => format!(":{l}:{c}"),
        (Some(l), None) => format!(":{l}"),
        _ => String::new(),
    }
}

/// Reads a file, or standard input for `-`.
pub fn read_text(path: &Path) -> Result<(String, String), InputError> {
    let name = path.display().to_string();
    let mut text = String::new();
    let result = if name == "-" {
        std::io::stdin().read_to_string(&mut text).map(|_| ())
    } else {
        std::fs::File::open(path).and_then(|mut f| f.read_to_string(&mut text).map(|_| ()))
    };
    result.map_err(|e| InputError {
        source_name: name.clone(),
        line: None,
        column: None,
        field: None,
        message: format!("cannot read: {e}"),
    })?;
    Ok((name, text))
}

/// Parses JSON (when the text starts with `[` or `{`) or YAML into `T`.
pub fn parse<T: DeserializeOwned>(name: &str, text: &str) -> Result<T, InputError> {
    let trimmed = text.trim_start_matches('\u{feff}').trim_start();
    if trimmed.is_empty() {
        return Err(InputError {
            source_name: name.into(),
            line: None,
            column: None,
            field: None,
            message: "the file is empty; expected a list of iteration records".into(),
        });
    }
    let error = |line, column, field: String, message: String| {
        // `?` is a place the parser had not reached (the input ended): the field around it.
        let field = field.trim_end_matches(".?").to_string();
        // serde_norway starts its message with the path the field already says.
        let message = message
            .strip_prefix(&format!(".{field}: "))
            .map_or(message.clone(), str::to_string);
        InputError {
            source_name: name.into(),
            line,
            column,
            field: Some(field).filter(|f| f != "." && f != "?"),
            message,
        }
    };
    if trimmed.starts_with('[') || trimmed.starts_with('{') {
        let de = &mut serde_json::Deserializer::from_str(trimmed);
        serde_path_to_error::deserialize(de).map_err(|e| {
            let field = e.path().to_string();
            let inner = e.into_inner();
            let message = strip_position(&inner.to_string());
            error(Some(inner.line()), Some(inner.column()), field, message)
        })
    } else {
        let de = serde_norway::Deserializer::from_str(trimmed);
        serde_path_to_error::deserialize(de).map_err(|e| {
            let field = e.path().to_string();
            let inner = e.into_inner();
            let loc = inner.location();
            let message = strip_position(&inner.to_string());
            error(
                loc.as_ref().map(|l| l.line()),
                loc.as_ref().map(|l| l.column()),
                field,
                message,
            )
        })
    }
}

fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(at) => message[..at].to_string(),
        None => message.to_string(),
    }
}

/// Reads and checks a history file.
pub fn load_history(path: &Path) -> Result<Vec<IterationRecord>, InputError> {
    let (name, text) = read_text(path)?;
    let records: Vec<IterationRecord> = parse(&name, &text)?;
    validate(&name, &records)?;
    Ok(records)
}

/// Reads and checks one record (a baseline).
pub fn load_record(path: &Path) -> Result<IterationRecord, InputError> {
    let (name, text) = read_text(path)?;
    let record: IterationRecord = parse(&name, &text)?;
    validate(&name, std::slice::from_ref(&record))?;
    Ok(record)
}

/// Every 0..=1 number in range; iterations in increasing order.
pub fn validate(name: &str, records: &[IterationRecord]) -> Result<(), InputError> {
    let bad = |index: usize, field: String, message: String| InputError {
        source_name: name.into(),
        line: None,
        column: None,
        field: Some(format!("[{index}].{field}")),
        message,
    };
    let mut previous: Option<u32> = None;
    for (i, r) in records.iter().enumerate() {
        let fractions = r
            .scores
            .observed()
            .map(|(d, v)| (format!("scores.{}", d.key()), v))
            .chain(r.quality.map(|q| ("quality".to_string(), q)))
            .chain(r.confidence.map(|c| ("confidence".to_string(), c)));
        for (field, value) in fractions {
            if !(value.is_finite() && (0.0..=1.0).contains(&value)) {
                return Err(bad(
                    i,
                    field,
                    format!("{value} is out of range; expected a number from 0 to 1"),
                ));
            }
        }
        if let Some(cost) = r.cost_usd.filter(|c| !c.is_finite() || *c < 0.0) {
            return Err(bad(
                i,
                "cost_usd".into(),
                format!("{cost} is not a valid amount; expected a number >= 0"),
            ));
        }
        for (j, t) in r.triggers.iter().enumerate() {
            if !(t.severity.is_finite() && (0.0..=1.0).contains(&t.severity)) {
                return Err(bad(
                    i,
                    format!("triggers[{j}].severity"),
                    format!(
                        "{} is out of range; expected a number from 0 to 1",
                        t.severity
                    ),
                ));
            }
        }
        if previous.is_some_and(|p| r.iteration <= p) {
            return Err(bad(
                i,
                "iteration".into(),
                format!(
                    "iteration {} does not follow iteration {}; expected the records oldest first",
                    r.iteration,
                    previous.unwrap_or_default()
                ),
            ));
        }
        previous = Some(r.iteration);
    }
    Ok(())
}
