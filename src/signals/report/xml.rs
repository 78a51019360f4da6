//! The pull loop the XML formats share (JUnit, Cobertura, checkstyle, lizard `--xml`).
//!
//! It runs quick-xml's streaming reader over the input and checks the document's shape
//! itself: exactly one root element with an expected name, no text outside it, every
//! element closed before the end of the input. A format module only reacts to the
//! elements it cares about ([`XmlHandler`]); it never sees a DOM.
//!
//! quick-xml keeps one whole event (a tag with its attributes, a text run) in memory, so
//! memory is bounded here: an event longer than [`MAX_EVENT_BYTES`] (a 1 GiB attribute,
//! `/dev/zero` with no `<` in sight) is a located error after that many bytes, like the
//! line formats' 16 MiB line limit; a NUL byte, which XML never has, is one at once.

use std::borrow::Cow;
use std::io::{self, BufRead, Read};

use quick_xml::events::{BytesStart, Event};
use quick_xml::Reader;

use super::error::{ParseError, Position};
use super::input::{Ctx, Input};

/// A format's reaction to the elements of its document. Errors are plain messages; the
/// driver adds the place.
pub(crate) trait XmlHandler {
    /// Local names the root element may have, e.g. `["testsuites", "testsuite"]`.
    fn roots(&self) -> &'static [&'static str];

    /// An element opened at `depth` (the root is depth 0). Empty elements get `start`
    /// followed by `end`.
    fn start(&mut self, name: &[u8], depth: usize, e: &BytesStart) -> Result<(), String>;

    /// The element opened at `depth` closed.
    fn end(&mut self, name: &[u8], depth: usize) -> Result<(), String>;

    /// Whether text directly inside the current element (at `depth`) is wanted; text is
    /// only unescaped when it is.
    fn wants_text(&self, _depth: usize) -> bool {
        false
    }

    fn text(&mut self, _text: &str) {}
}

/// Open elements, as one byte buffer plus boundaries: no allocation per element.
#[derive(Default)]
struct ElementStack {
    names: Vec<u8>,
    starts: Vec<usize>,
}

impl ElementStack {
    fn push(&mut self, name: &[u8]) {
        self.starts.push(self.names.len());
        self.names.extend_from_slice(name);
    }

    fn pop(&mut self) {
        if let Some(start) = self.starts.pop() {
            self.names.truncate(start);
        }
    }

    fn depth(&self) -> usize {
        self.starts.len()
    }

    fn innermost(&self) -> Cow<'_, str> {
        let start = self.starts.last().copied().unwrap_or(0);
        String::from_utf8_lossy(self.names.get(start..).unwrap_or_default())
    }
}

/// Longest XML event (a start tag with its attributes, a text run, a comment) read.
pub(crate) const MAX_EVENT_BYTES: u64 = super::input::MAX_LINE_BYTES as u64;

/// Why [`Bounded`] stopped the reader.
#[derive(Clone, Copy, PartialEq)]
enum Stop {
    TooLong,
    Nul,
}

/// The input as quick-xml sees it: at most [`MAX_EVENT_BYTES`] per event, and no NUL.
struct Bounded<'i, R> {
    input: &'i mut Input<R>,
    /// Offset where the current event started.
    event_start: u64,
    /// Offset up to which the input was checked for NUL bytes.
    checked: u64,
    stopped: Option<(Stop, u64)>,
}

impl<R: BufRead> Bounded<'_, R> {
    fn offset(&self) -> u64 {
        self.input.offset()
    }

    fn stop(&mut self, why: Stop, at: u64) -> io::Error {
        self.stopped = Some((why, at));
        let message = match why {
            Stop::TooLong => "an XML event longer than 16 MiB",
            Stop::Nul => "a NUL byte",
        };
        io::Error::new(io::ErrorKind::InvalidData, message)
    }
}

impl<R: BufRead> Read for Bounded<'_, R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let buf = self.fill_buf()?;
        let n = buf.len().min(out.len());
        if let (Some(dst), Some(src)) = (out.get_mut(..n), buf.get(..n)) {
            dst.copy_from_slice(src);
        }
        self.consume(n);
        Ok(n)
    }
}

impl<R: BufRead> BufRead for Bounded<'_, R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        let at = self.offset();
        if at.saturating_sub(self.event_start) > MAX_EVENT_BYTES {
            return Err(self.stop(Stop::TooLong, self.event_start));
        }
        let checked = self.checked;
        let buf = self.input.fill_buf()?;
        let unchecked = usize::try_from(checked.saturating_sub(at)).unwrap_or(usize::MAX);
        let nul = buf
            .get(unchecked..)
            .and_then(|fresh| memchr::memchr(0, fresh))
            .map(|i| at + (unchecked + i) as u64);
        let end = at + buf.len() as u64;
        if let Some(nul) = nul {
            return Err(self.stop(Stop::Nul, nul));
        }
        self.checked = self.checked.max(end);
        self.input.fill_buf()
    }

    fn consume(&mut self, amt: usize) {
        self.input.consume(amt);
    }
}

/// Reads the whole document, feeding `handler`.
pub(crate) fn drive<R: BufRead>(
    input: &mut Input<R>,
    ctx: &Ctx,
    handler: &mut impl XmlHandler,
) -> Result<(), ParseError> {
    let start = input.offset();
    let bounded = Bounded {
        input,
        event_start: start,
        checked: start,
        stopped: None,
    };
    let mut reader = Reader::from_reader(bounded);
    let config = reader.config_mut();
    config.check_end_names = true;
    // No events for the indentation between elements (half of all events in a pretty
    // printed report); text bodies only lose their leading whitespace.
    config.trim_text_start = true;
    let mut buf = Vec::with_capacity(4096);
    let mut stack = ElementStack::default();
    let mut root_done = false;
    loop {
        buf.clear();
        let before = reader.buffer_position();
        let place = |reader: &Reader<Bounded<R>>, at: u64| reader.get_ref().input.position_at(at);
        let event_start = reader.get_ref().offset();
        reader.get_mut().event_start = event_start;
        let event = match reader.read_event_into(&mut buf) {
            Ok(event) => event,
            Err(e) => return Err(xml_error(ctx, &reader, &e)),
        };
        let fail = |msg: String| ctx.at(place(&reader, before), msg);
        match event {
            Event::Start(e) | Event::Empty(e) if stack.depth() == 0 && root_done => {
                let name = String::from_utf8_lossy(e.local_name().into_inner()).into_owned();
                return Err(ctx.expected(
                    place(&reader, before),
                    &format!("a second root element <{name}> after the document ended"),
                ));
            }
            Event::Start(e) => {
                let name = e.local_name();
                check_root(handler, &stack, name.as_ref())
                    .map_err(|m| ctx_expected(ctx, &reader, before, &m))?;
                handler
                    .start(name.as_ref(), stack.depth(), &e)
                    .map_err(fail)?;
                stack.push(name.as_ref());
            }
            Event::Empty(e) => {
                let name = e.local_name();
                check_root(handler, &stack, name.as_ref())
                    .map_err(|m| ctx_expected(ctx, &reader, before, &m))?;
                let depth = stack.depth();
                handler.start(name.as_ref(), depth, &e).map_err(&fail)?;
                handler.end(name.as_ref(), depth).map_err(fail)?;
                root_done |= depth == 0;
            }
            Event::End(e) => {
                stack.pop();
                let depth = stack.depth();
                handler.end(e.local_name().as_ref(), depth).map_err(fail)?;
                root_done |= depth == 0;
            }
            Event::Text(t) => {
                if stack.depth() == 0 {
                    if !t.iter().all(u8::is_ascii_whitespace) {
                        return Err(outside_root(ctx, &reader, before, root_done));
                    }
                } else if handler.wants_text(stack.depth() - 1) {
                    let text = t
                        .unescape()
                        .map_err(|e| fail(format!("malformed XML text: {e}")))?;
                    handler.text(&text);
                }
            }
            Event::CData(c) => {
                if stack.depth() == 0 {
                    return Err(outside_root(ctx, &reader, before, root_done));
                }
                if handler.wants_text(stack.depth() - 1) {
                    handler.text(&String::from_utf8_lossy(&c));
                }
            }
            Event::Decl(_) | Event::PI(_) | Event::Comment(_) | Event::DocType(_) => {}
            Event::Eof => return finish(ctx, &reader, handler, &stack, root_done),
        }
    }
}

fn ctx_expected<R: BufRead>(
    ctx: &Ctx,
    reader: &Reader<Bounded<R>>,
    at: u64,
    message: &str,
) -> ParseError {
    ctx.expected(reader.get_ref().input.position_at(at), message)
}

fn check_root(handler: &impl XmlHandler, stack: &ElementStack, name: &[u8]) -> Result<(), String> {
    if stack.depth() > 0 || handler.roots().iter().any(|r| r.as_bytes() == name) {
        return Ok(());
    }
    let wanted: Vec<String> = handler.roots().iter().map(|r| format!("<{r}>")).collect();
    // The roots of the XML formats read here, and the format each says the report is.
    let known = match name {
        b"testsuites" | b"testsuite" => Some("junit"),
        b"report" => Some("jacoco"),
        b"checkstyle" => Some("checkstyle"),
        _ => None,
    };
    let hint = known.map_or_else(String::new, |f| {
        format!(": it looks like {f}, give it as `{f}`")
    });
    Err(format!(
        "the root element is <{}>, not {}{hint}",
        String::from_utf8_lossy(name),
        wanted.join(" or ")
    ))
}

fn outside_root<R: BufRead>(
    ctx: &Ctx,
    reader: &Reader<Bounded<R>>,
    at: u64,
    root_done: bool,
) -> ParseError {
    let what = if root_done {
        "text after the root element"
    } else {
        "text before the root element (not XML?)"
    };
    ctx_expected(ctx, reader, at, what)
}

fn finish<R: BufRead>(
    ctx: &Ctx,
    reader: &Reader<Bounded<R>>,
    handler: &impl XmlHandler,
    stack: &ElementStack,
    root_done: bool,
) -> Result<(), ParseError> {
    let end = reader.get_ref().input.position_at(reader.buffer_position());
    if stack.depth() > 0 {
        let msg = format!("unexpected end of file inside <{}>", stack.innermost());
        return Err(ctx.expected(end, &msg));
    }
    if !root_done {
        let wanted: Vec<String> = handler.roots().iter().map(|r| format!("<{r}>")).collect();
        let msg = format!("no {} element", wanted.join(" or "));
        return Err(ctx.expected(end, &msg));
    }
    Ok(())
}

fn xml_error<R: BufRead>(
    ctx: &Ctx,
    reader: &Reader<Bounded<R>>,
    err: &quick_xml::Error,
) -> ParseError {
    let bounded = reader.get_ref();
    let input = &bounded.input;
    match bounded.stopped {
        Some((Stop::TooLong, at)) => {
            let message = "an element, attribute or text longer than 16 MiB (binary data?)";
            return ctx.expected(input.position_at(at), message);
        }
        Some((Stop::Nul, at)) => {
            return ctx.expected(input.position_at(at), "binary data (a NUL byte)");
        }
        None => {}
    }
    let mut pos: Position = input.position_at(reader.error_position());
    if pos.line.is_none() {
        pos = input.position_at(reader.buffer_position());
    }
    ctx.expected(pos, &format!("malformed XML ({err})"))
}

/// Calls `each(local_key, value)` for the attributes of `e` named in `wanted`, values
/// unescaped.
///
/// A small scanner of its own rather than quick-xml's attribute iterator: that one checks
/// and decodes every attribute (timestamps, timings, uuids), which was a third of a JUnit
/// parse. This one finds each value's end with one memchr and decodes only wanted values.
/// Syntax errors (no `=`, no quotes, an unterminated value) are still errors.
pub(crate) fn for_each_attr<'e>(
    e: &'e BytesStart<'_>,
    wanted: &[&[u8]],
    each: impl FnMut(&[u8], Cow<'e, str>) -> Result<(), String>,
) -> Result<(), String> {
    for_each_raw_attr(e.attributes_raw(), wanted, each)
}

/// [`for_each_attr`] over the raw attribute text of a tag (after its name).
pub(crate) fn for_each_raw_attr<'e>(
    raw: &'e [u8],
    wanted: &[&[u8]],
    mut each: impl FnMut(&[u8], Cow<'e, str>) -> Result<(), String>,
) -> Result<(), String> {
    let mut rest: &'e [u8] = raw;
    loop {
        rest = skip_space(rest);
        if rest.is_empty() || rest == b"/" {
            return Ok(());
        }
        let key_len = rest
            .iter()
            .position(|&b| b == b'=' || b.is_ascii_whitespace())
            .unwrap_or(rest.len());
        let (key, after_key) = rest.split_at(key_len);
        let malformed = || {
            let key = String::from_utf8_lossy(key);
            format!("malformed XML attribute `{key}`: expected {key}=\"value\"")
        };
        let after_eq = skip_space(after_key)
            .strip_prefix(b"=")
            .ok_or_else(malformed)?;
        let after_eq = skip_space(after_eq);
        let (&quote, value_and_rest) = after_eq.split_first().ok_or_else(malformed)?;
        if quote != b'"' && quote != b'\'' {
            return Err(malformed());
        }
        let end = memchr::memchr(quote, value_and_rest).ok_or_else(malformed)?;
        let (value, after_value) = value_and_rest.split_at(end);
        rest = after_value.get(1..).unwrap_or_default();
        let local = match key.iter().rposition(|&b| b == b':') {
            Some(colon) => key.get(colon + 1..).unwrap_or_default(),
            None => key,
        };
        if wanted.contains(&local) {
            each(local, attr_value(key, value)?)?;
        }
    }
}

fn skip_space(bytes: &[u8]) -> &[u8] {
    let blank = bytes.iter().take_while(|b| b.is_ascii_whitespace()).count();
    bytes.get(blank..).unwrap_or_default()
}

fn attr_value<'e>(key: &[u8], raw: &'e [u8]) -> Result<Cow<'e, str>, String> {
    let text = std::str::from_utf8(raw).map_err(|_| {
        let key = String::from_utf8_lossy(key);
        format!("attribute {key} is not UTF-8 text")
    })?;
    if !text.contains('&') {
        return Ok(Cow::Borrowed(text));
    }
    quick_xml::escape::unescape(text).map_err(|err| {
        let key = String::from_utf8_lossy(key);
        format!("malformed XML attribute value for {key}: {err}")
    })
}

/// A numeric attribute value, with a message naming the attribute when it is not a number.
pub(crate) fn number_attr(key: &str, value: &str) -> Result<u64, String> {
    super::text::parse_u64(value.trim().as_bytes())
        .ok_or_else(|| format!("attribute {key}=\"{value}\" is not a whole number"))
}
