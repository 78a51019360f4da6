//! Reading one JSON document from the input into typed structs, with errors that say
//! where (line, column and the JSON path, e.g. `runs[0].results[3].level`) and what.

use std::io::{BufRead, Read};

use serde::de::DeserializeOwned;

use super::error::Position;
use super::input::{Ctx, Input};
use super::ParseError;

/// Deserializes the whole input as one `T`; trailing non-whitespace is an error.
///
/// The document is read into memory and parsed from the slice (serde_json reads a slice
/// several times faster than a reader); only a document that does not deserialize is read
/// again with its JSON path tracked, for the error.
pub(crate) fn from_input<R: BufRead, T: DeserializeOwned>(
    input: &mut Input<R>,
    ctx: &Ctx,
) -> Result<T, ParseError> {
    let mut bytes = Vec::new();
    input
        .read_to_end(&mut bytes)
        .map_err(|e| ctx.io(input, &e))?;
    let mut de = serde_json::Deserializer::from_slice(&bytes);
    if let Ok(value) = T::deserialize(&mut de).and_then(|v| de.end().map(|()| v)) {
        return Ok(value);
    }
    let mut de = serde_json::Deserializer::from_slice(&bytes);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        json_error(ctx, e.inner(), &path)
    })?;
    de.end().map_err(|e| json_error(ctx, &e, ""))?;
    Ok(value)
}

/// Deserializes one line of a JSON-lines stream (its path tracked only for an error).
pub(crate) fn from_line<T: DeserializeOwned>(
    line: &[u8],
    line_no: u64,
    ctx: &Ctx,
) -> Result<T, ParseError> {
    let mut de = serde_json::Deserializer::from_slice(line);
    if let Ok(value) = T::deserialize(&mut de).and_then(|v| de.end().map(|()| v)) {
        return Ok(value);
    }
    let mut de = serde_json::Deserializer::from_slice(line);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let mut err = json_error(ctx, e.inner(), &path);
        err.line = Some(line_no);
        err
    })?;
    de.end().map_err(|e| {
        let mut err = json_error(ctx, &e, "");
        err.line = Some(line_no);
        err
    })?;
    Ok(value)
}

fn json_error(ctx: &Ctx, err: &serde_json::Error, path: &str) -> ParseError {
    let pos = Position {
        line: (err.line() > 0).then_some(err.line() as u64),
        column: (err.line() > 0).then_some(err.column() as u64),
        byte: None,
    };
    let text = err.to_string();
    let bare = match text.rfind(" at line ") {
        Some(at) => text.get(..at).unwrap_or(&text),
        None => &text,
    };
    let at_path = if path.is_empty() || path == "." {
        String::new()
    } else {
        format!(" at `{path}`")
    };
    match err.classify() {
        serde_json::error::Category::Eof => ctx.expected(
            pos,
            &format!("unexpected end of input{at_path} (truncated JSON)"),
        ),
        serde_json::error::Category::Syntax => {
            ctx.expected(pos, &format!("malformed JSON{at_path}: {bare}"))
        }
        serde_json::error::Category::Data => {
            ctx.expected(pos, &format!("unexpected JSON{at_path}: {bare}"))
        }
        serde_json::error::Category::Io => ctx.at(pos, format!("cannot read the report: {bare}")),
    }
}
