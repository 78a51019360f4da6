//! Production code fitted to the failing tests' own values: a literal the change adds to
//! code that is not a test, equal to a distinctive input or expected value of a test that
//! failed in this task (at the start or in an earlier iteration), in a comparison, a branch,
//! a table row or a returned constant. `if s == "Rust and Go": return "rust-and-go"` makes
//! that one test pass and no other input work.
//!
//! A test's values are the literals of its parametrised id, of its failure (`left: 41`,
//! `expected: <x> but was: <y>`, `assert 'a' == 'b'`) and of its definition in its file.
//! A value is distinctive when it is not a keyword-like word or a round number (`"inf"`,
//! `"true"`, `10`, `256` are not). A literal the file already held elsewhere is not the
//! change's. One such literal is a WARNING when it is unmistakable (several words, ten
//! characters or more, a number of four digits or more). A comparison among a test's values
//! in one place, with the answer beside it — two distinctive values, or one beside two
//! plain ones (`if a == 3 and b == 4: return 12`) — is a BLOCKER; so is a WARNING when a
//! holdout check fails while the visible tests pass.

use super::suppressions::in_rust_test_module;
use super::test_aware::is_comment;
use super::*;
use crate::signals::report::TestCase;

/// How the finding begins.
pub const HARD_CODED: &str = crate::model::HARD_CODED;

/// At most this many failing tests are read, and this many values of each.
const MAX_TESTS: usize = 200;
const MAX_VALUES: usize = 200;
/// At most this many changed files are searched for a test's definition.
const MAX_FILES: usize = 50;

/// Lines of one file within this distance are one place (the branch and its answer).
const NEAR: u32 = 4;

/// Code files, by extension, and whether `'` opens a string in them (not a char).
const CODE: &[(&str, bool)] = &[
    (".py", true),
    (".js", true),
    (".mjs", true),
    (".cjs", true),
    (".ts", true),
    (".mts", true),
    (".cts", true),
    (".jsx", true),
    (".tsx", true),
    (".go", false),
    (".rs", false),
    (".java", false),
    (".kt", false),
    (".scala", false),
    (".rb", true),
];

/// Words code compares against for reasons of its own.
const COMMON: &[&str] = &[
    "true",
    "false",
    "null",
    "none",
    "undefined",
    "utf-8",
    "utf8",
    "ascii",
    "latin-1",
    "default",
    "error",
    "string",
    "number",
    "object",
    "function",
];

/// What an added line does with a literal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// Compares with it or branches on it.
    Branch,
    /// Returns it as a constant.
    Returns,
}

pub(super) fn hard_coded(input: &Input) -> Vec<Finding> {
    let failing = failing_tests(input);
    if failing.is_empty() {
        return Vec::new();
    }
    let changed = Changed::default();
    // value → the failing tests it belongs to, in order.
    let mut owners: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for (id, cases) in failing.iter().take(MAX_TESTS) {
        for value in values_of(id, cases, input, &changed) {
            owners.entry(value).or_default().push(id);
        }
    }
    let mut out = Vec::new();
    for (path, added) in &input.changed.files {
        let Some(&(_, single_quotes)) = CODE.iter().find(|(ext, _)| path.ends_with(ext)) else {
            continue;
        };
        if (input.is_test)(path) {
            continue;
        }
        let source = (input.head_source)(path);
        let in_tests = |line: u32| {
            path.ends_with(".rs")
                && source
                    .as_deref()
                    .is_some_and(|s| in_rust_test_module(s, line))
        };
        // The file outside its test module, read when a literal matches.
        let mut production: Option<String> = None;
        let added_text: String = added
            .iter()
            .map(|l| l.text.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        // (test, line, literal, role, a string?) for each literal of a failing test the
        // change added.
        let mut hits: Vec<Hit> = Vec::new();
        for line in added {
            if is_comment(&line.text) || in_tests(line.line) {
                continue;
            }
            // Each literal with its kind: `"41"` and `41` are two values (a number in, a
            // string out).
            let typed: Vec<(String, bool)> = strings(&line.text, single_quotes)
                .into_iter()
                .map(|s| (s, true))
                .chain(
                    numbers(&unquoted(&line.text, single_quotes))
                        .into_iter()
                        .map(|n| (n, false)),
                )
                .collect();
            let contents: Vec<String> = typed.iter().map(|(l, _)| l.clone()).collect();
            let Some(role) = role(&line.text, &contents) else {
                continue;
            };
            for (literal, is_string) in typed {
                let Some(tests) = owners.get(&literal) else {
                    continue;
                };
                let production = production.get_or_insert_with(|| {
                    let text = source.as_deref().unwrap_or_default();
                    text.lines()
                        .enumerate()
                        .filter(|(i, _)| !in_tests(*i as u32 + 1))
                        .map(|(_, l)| l)
                        .collect::<Vec<_>>()
                        .join("\n")
                });
                // Already in the file outside the change: the base's.
                if production.matches(literal.as_str()).count()
                    > added_text.matches(literal.as_str()).count()
                {
                    continue;
                }
                for test in tests {
                    hits.push((test, line.line, literal.clone(), role, is_string));
                }
            }
        }
        out.extend(judge(path, &hits));
    }
    out
}

/// With a holdout check failing while the visible tests pass, a hard-coded value is no
/// longer a question: every such WARNING is a violation.
pub fn with_holdouts_failing(findings: &mut [Finding]) {
    use crate::model::FindingKind;
    let is = |f: &Finding, kind: FindingKind| f.issue.kind == Some(kind);
    if !findings
        .iter()
        .any(|f| is(f, FindingKind::FittedToVisibleTests))
    {
        return;
    }
    for f in findings.iter_mut() {
        if is(f, FindingKind::HardCoded) && f.issue.severity == Severity::Warning {
            let subject = f.issue.subject.clone().unwrap_or_default();
            *f = finding(
                Severity::Blocker,
                f.issue.finding.clone(),
                f.issue.affected_field.clone().unwrap_or_default(),
                f.issue.suggested_fix.clone().unwrap_or_default(),
            )
            .about(FindingKind::HardCoded, subject);
        }
    }
}

/// The findings of one file's hits: per test, the place with the most of its values.
/// A literal of a failing test the change added: (test, line, literal, role, a string?).
type Hit<'a> = (&'a str, u32, String, Role, bool);

fn judge(path: &str, hits: &[Hit]) -> Vec<Finding> {
    let tests: BTreeSet<&str> = hits.iter().map(|h| h.0).collect();
    let mut out = Vec::new();
    let mut reported_lines: BTreeSet<u32> = BTreeSet::new();
    for test in tests {
        let mine: Vec<_> = hits.iter().filter(|h| h.0 == test).collect();
        // The place: the hits near the first distinctive one.
        let Some(anchor) = mine.iter().find(|h| distinctive(&h.2)).map(|h| h.1) else {
            continue;
        };
        let place: Vec<_> = mine
            .iter()
            .filter(|h| h.1.abs_diff(anchor) <= NEAR)
            .collect();
        let values: BTreeSet<(&str, bool)> = place.iter().map(|h| (h.2.as_str(), h.4)).collect();
        let marked = values.iter().filter(|v| distinctive(v.0)).count();
        let branches = place.iter().any(|h| h.3 == Role::Branch);
        // The input and the answer: two distinctive values, or one beside two plain ones
        // (`if a == 3 and b == 4: return 12`).
        let severity = if branches && (marked >= 2 || values.len() >= 3) {
            Severity::Blocker
        } else if values.iter().any(|v| unmistakable(v.0)) {
            Severity::Warning
        } else {
            continue;
        };
        let first = place.iter().map(|h| h.1).min().unwrap_or(anchor);
        if !reported_lines.insert(first) {
            continue;
        }
        let shown = |role: Role| {
            let vs: BTreeSet<&str> = place
                .iter()
                .filter(|h| h.3 == role)
                .map(|h| h.2.as_str())
                .collect();
            vs.iter()
                .map(|v| format!("`{v}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let what = match (shown(Role::Branch), shown(Role::Returns)) {
            (b, r) if !b.is_empty() && !r.is_empty() => format!("branches on {b} and returns {r}"),
            (b, _) if !b.is_empty() => format!("branches on {b}"),
            (_, r) => format!("returns {r}"),
        };
        let consequence = if severity == Severity::Blocker {
            "the test then passes for its own input and nothing else is fixed"
        } else {
            "confirm it is not there for that test alone"
        };
        out.push(finding(
            severity,
            format!("{HARD_CODED} {test}: {what} ({path}:{first}); {consequence}"),
            format!("{path}:{first}"),
            format!(
                "make the code right for every input, not the values of `{test}` (a person who intends this constant runs `itergate accept`)"
            ),
        ).about(crate::model::FindingKind::HardCoded, test));
    }
    out
}

/// The tests that failed in this task: at the start, in an earlier iteration or now.
fn failing_tests<'a>(input: &Input<'a>) -> BTreeMap<&'a str, Vec<&'a TestCase>> {
    let mut out: BTreeMap<&str, Vec<&TestCase>> = BTreeMap::new();
    let observations = input
        .base
        .into_iter()
        .chain(input.earlier.observations.iter().copied())
        .chain([input.head]);
    for observation in observations {
        for check in &observation.checks {
            if check.visibility == Visibility::AggregateOnly {
                continue;
            }
            let CheckResult::Report {
                report: Report::Tests(tests),
                ..
            } = &check.result
            else {
                continue;
            };
            for case in tests.problems.iter().filter(|c| failed(c.outcome)) {
                out.entry(case.id.as_str()).or_default().push(case);
            }
        }
    }
    out
}

/// The code files the change touched, with their text: read once, when a test's report
/// names no file.
#[derive(Default)]
struct Changed(std::cell::OnceCell<Vec<(String, String)>>);

impl Changed {
    fn get(&self, input: &Input) -> &[(String, String)] {
        self.0.get_or_init(|| {
            input
                .changed
                .files
                .keys()
                .filter(|f| CODE.iter().any(|(ext, _)| f.ends_with(ext)))
                .take(MAX_FILES)
                .filter_map(|f| (input.head_source)(f).map(|t| (f.clone(), t)))
                .collect()
        })
    }
}

/// The distinctive values of one failing test.
fn values_of(id: &str, cases: &[&TestCase], input: &Input, changed: &Changed) -> BTreeSet<String> {
    let mut values = BTreeSet::new();
    // A parametrised id's case: `test_lower[Rust and Go]`, its parts joined by `-`.
    if let Some((_, case)) = id.split_once('[') {
        let case = case.strip_suffix(']').unwrap_or(case);
        values.insert(case.to_string());
        values.extend(case.split('-').map(str::to_string));
    }
    // A table's row named by its input: vitest's `filename > /srv/Rust and Go.tar.gz`.
    if let Some((_, last)) = id.rsplit_once(" > ") {
        values.insert(last.to_string());
    }
    for case in cases {
        for text in [&case.message, &case.output].into_iter().flatten() {
            values.extend(reported_values(&text[..floor(text, 8_000)]));
        }
    }
    if let Some((file, text, span)) = definition(id, cases, input, changed) {
        let single = !file.ends_with(".go") && !file.ends_with(".rs") && !file.ends_with(".java");
        // Decorators and attributes above the definition hold its cases.
        let from = span.start().saturating_sub(6).max(1);
        for line in text
            .lines()
            .skip(from as usize - 1)
            .take((span.end() - from + 1) as usize)
        {
            values.extend(literals(line, single));
        }
    }
    values
        .into_iter()
        .map(|v| v.trim().to_string())
        .filter(|v| distinctive(v) || weak(v))
        .take(MAX_VALUES)
        .collect()
}

/// Where the test is defined: its file, that file's text and the definition's lines. The
/// report's file when it names one; else a file the change touched that defines it (Go,
/// libtest and Surefire name no file). Its own name first, then the names it is in
/// (`describe` blocks, a Java class).
fn definition(
    id: &str,
    cases: &[&TestCase],
    input: &Input,
    changed: &Changed,
) -> Option<(String, String, std::ops::RangeInclusive<u32>)> {
    let mut names = vec![leaf(id)];
    names.extend(
        id.rsplit("::")
            .next()
            .unwrap_or(id)
            .rsplit(" > ")
            .skip(1)
            .map(str::trim),
    );
    let class = container(id).rsplit('.').next().unwrap_or_default();
    names.push(class);
    let names: Vec<&str> = names.into_iter().filter(|n| !n.is_empty()).collect();
    let reported = cases.iter().find_map(|c| c.file.clone());
    let candidates: Vec<(String, String)> = match reported {
        Some(file) => (input.head_source)(&file)
            .map(|t| (file, t))
            .into_iter()
            .collect(),
        None => changed.get(input).to_vec(),
    };
    for (file, text) in candidates {
        let span = names
            .iter()
            .find_map(|n| definition_span(&text, n).or_else(|| block_span(&text, n)));
        if let Some(span) = span {
            return Some((file, text, span));
        }
    }
    None
}

/// The lines of a block that `definition_span` does not know: a JUnit method (`void
/// name(`, Kotlin's `fun name(`) up to the next annotation, or a JavaScript `describe`,
/// `it` or `test` named `name` up to the line that closes it at its indentation.
fn block_span(text: &str, name: &str) -> Option<std::ops::RangeInclusive<u32>> {
    let lines: Vec<&str> = text.lines().collect();
    let quoted = |l: &str| {
        ['"', '\'', '`']
            .iter()
            .any(|q| l.contains(&format!("{q}{name}{q}")))
    };
    let opener = |l: &str| {
        let t = l.trim_start();
        ["describe(", "describe.", "it(", "it.", "test(", "test."]
            .iter()
            .any(|o| t.starts_with(o))
    };
    let method = |l: &str| {
        (l.contains(&format!("void {name}(")) || l.contains(&format!("fun {name}(")))
            && !l.trim_end().ends_with(';')
    };
    let start = lines
        .iter()
        .position(|l| method(l) || (opener(l) && quoted(l)))?;
    let indent = lines[start].len() - lines[start].trim_start().len();
    let end = lines[start + 1..]
        .iter()
        .position(|l| {
            let t = l.trim_start();
            let at = l.len() - t.len();
            if method(lines[start]) {
                t.starts_with('@')
            } else {
                at == indent && t.starts_with("})")
            }
        })
        .map_or(lines.len(), |i| start + 1 + i + 1)
        .min(start + 200);
    Some(start as u32 + 1..=end as u32)
}

fn floor(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The values a failure message or output shows: its quoted strings, `<…>` after
/// `expected:`/`was:`, and the numbers after words that introduce a value.
fn reported_values(text: &str) -> Vec<String> {
    let mut out = strings(text, true);
    for marker in ["expected: <", "but was: <", "expected:<", "but was:<"] {
        for (at, _) in text.match_indices(marker) {
            let rest = &text[at + marker.len()..];
            if let Some(end) = rest.find('>') {
                out.push(rest[..end].to_string());
            }
        }
    }
    let words: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '(' | ')' | '<' | '>'))
        .filter(|w| !w.is_empty())
        .collect();
    let introduces = |w: &str| {
        let w = w.trim_end_matches(':').to_ascii_lowercase();
        matches!(
            w.as_str(),
            "left"
                | "right"
                | "expected"
                | "actual"
                | "got"
                | "want"
                | "was"
                | "be"
                | "equal"
                | "received"
                | "=="
                | "!="
                | "==="
                | "!=="
                | "assert"
        )
    };
    for pair in words.windows(2) {
        if introduces(pair[0]) && number(pair[1].trim_end_matches([':', '.'])).is_some() {
            out.push(pair[1].trim_end_matches([':', '.']).to_string());
        }
    }
    out
}

/// The string literals (their contents) and numbers of a line of code.
fn literals(text: &str, single_quotes: bool) -> Vec<String> {
    let mut out = strings(text, single_quotes);
    out.extend(numbers(text));
    out
}

/// The contents of the string literals in `text`; `'` opens one only when `single_quotes`
/// (elsewhere it is a char literal or a lifetime).
fn strings(text: &str, single_quotes: bool) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if !(c == '"' || c == '`' || (c == '\'' && single_quotes)) {
            continue;
        }
        let mut content = String::new();
        let mut closed = false;
        while let Some(d) = chars.next() {
            if d == c {
                closed = true;
                break;
            }
            content.push(d);
            if d == '\\' {
                content.extend(chars.next());
            }
        }
        if closed {
            out.push(content);
        }
    }
    out
}

/// `text` with its string literals' contents left out (`"<3"` holds no number).
fn unquoted(text: &str, single_quotes: bool) -> String {
    let mut out = String::with_capacity(text.len());
    let mut open: Option<char> = None;
    let mut escaped = false;
    for c in text.chars() {
        match open {
            Some(q) => {
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == q {
                    open = None;
                    out.push(c);
                }
            }
            None => {
                if c == '"' || c == '`' || (c == '\'' && single_quotes) {
                    open = Some(c);
                }
                out.push(c);
            }
        }
    }
    out
}

/// The numbers in `text` that are not part of a name (`x2`, `v1.5`, `0x41`).
fn numbers(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let after_name =
            i > 0 && (chars[i - 1].is_alphanumeric() || matches!(chars[i - 1], '_' | '.'));
        if !chars[i].is_ascii_digit() || after_name {
            i += 1;
            continue;
        }
        let mut j = i;
        while j < chars.len() && (chars[j].is_ascii_digit() || chars[j] == '.') {
            j += 1;
        }
        let in_name = chars
            .get(j)
            .is_some_and(|n| n.is_alphanumeric() || *n == '_');
        let token: String = chars[i..j].iter().collect();
        let token = token.trim_end_matches('.');
        if !in_name && number(token).is_some() {
            out.push(token.to_string());
        }
        i = j;
    }
    out
}

fn number(token: &str) -> Option<f64> {
    let first = token.chars().next()?;
    (first.is_ascii_digit() || first == '-')
        .then(|| token.parse::<f64>().ok())
        .flatten()
        .filter(|n| n.is_finite())
}

/// Whether the line compares with a literal, branches on it, holds a table row or returns
/// a constant.
fn role(text: &str, literals: &[String]) -> Option<Role> {
    if literals.is_empty() {
        return None;
    }
    let t = text.trim();
    let branch = [
        "==", "!=", ".equals(", "case ", "when ", "=>", " in (", " in [", " in {",
    ]
    .iter()
    .any(|m| t.contains(m))
        || ["if ", "if(", "elif ", "} else if", "else if"]
            .iter()
            .any(|m| t.starts_with(m))
        || (t.contains(':') && literals.len() >= 2 && !t.starts_with("return"));
    if branch {
        return Some(Role::Branch);
    }
    let returned = ["return ", "yield "].iter().any(|m| t.starts_with(m))
        || (t.starts_with('"') || t.starts_with('\'')) && literals.len() == 1;
    returned.then_some(Role::Returns)
}

/// Not a keyword-like word, a round number or a short decimal (`0.5`).
fn distinctive(value: &str) -> bool {
    if let Some(n) = number(value) {
        if n.fract() != 0.0 {
            return value.chars().filter(char::is_ascii_digit).count() >= 3;
        }
        let whole = n as i64;
        let round = whole % 10 == 0 || (whole > 0 && whole.count_ones() == 1);
        return whole.abs() >= 10 && !round;
    }
    let chars = value.chars().count();
    let word = value.chars().all(|c| c.is_ascii_lowercase() || c == '_');
    (3..=200).contains(&chars)
        && value.chars().any(char::is_alphanumeric)
        && !(word && chars < 5)
        && !COMMON.contains(&value.to_ascii_lowercase().as_str())
}

/// A plain value that counts only beside a distinctive one: a small number other than 0
/// and 1, a short word.
fn weak(value: &str) -> bool {
    match number(value) {
        Some(n) => n != 0.0 && n != 1.0,
        None => {
            value.chars().any(char::is_alphanumeric)
                && !COMMON.contains(&value.to_ascii_lowercase().as_str())
        }
    }
}

/// So distinctive that one of it is worth a word: several words, ten characters or more,
/// or a number of four digits or more.
fn unmistakable(value: &str) -> bool {
    if number(value).is_some() {
        return value.chars().filter(char::is_ascii_digit).count() >= 4;
    }
    value.trim().contains(' ') || value.chars().count() >= 10
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lines_literals_and_numbers() {
        assert_eq!(
            literals(r#"    if s == "Rust and Go": return 'rust-and-go'"#, true),
            ["Rust and Go", "rust-and-go"]
        );
        assert_eq!(
            literals("if n == 41 { return 42; } // x2 v1.5", false),
            ["41", "42"]
        );
        assert_eq!(
            literals("fn f<'a>(x: &'a str) -> char { 'c' }", false),
            Vec::<String>::new()
        );
        assert_eq!(
            literals(r#"let s = "say \"hi\" now";"#, false),
            [r#"say \"hi\" now"#]
        );
        assert_eq!(
            unquoted(r#"if ("Tom <3".equals(s)) return 42;"#, false),
            r#"if ("".equals(s)) return 42;"#
        );
    }

    #[test]
    fn values_a_failure_shows() {
        let rust = "assertion `left == right` failed\n  left: 41\n right: 42";
        assert_eq!(reported_values(rust), ["left == right", "41", "42"]);
        let java = "expected: <rust-and-go> but was: <rust and go>";
        let got = reported_values(java);
        assert!(
            got.contains(&"rust-and-go".to_string()) && got.contains(&"rust and go".to_string())
        );
        let py = "AssertionError: assert 'rust and go' == 'rust-and-go'";
        assert_eq!(reported_values(py), ["rust and go", "rust-and-go"]);
        // A place in a file is no value.
        assert!(reported_values("calc_test.go:12: got 41, want 42")
            .iter()
            .all(|v| v != "12"));
    }

    #[test]
    fn keywords_and_round_numbers_are_not_distinctive() {
        for v in ["inf", "true", "utf-8", "10", "256", "1000", "ab", "--"] {
            assert!(!distinctive(v), "{v}");
        }
        for v in [
            "Rust and Go",
            "rust-and-go",
            "41",
            "3.14",
            "text/html",
            "12345",
        ] {
            assert!(distinctive(v), "{v}");
        }
        assert!(unmistakable("Rust and Go") && unmistakable("12345"));
        assert!(!unmistakable("text/html") && !unmistakable("41"));
    }

    #[test]
    fn what_a_line_does_with_its_literals() {
        let role_of = |t: &str| role(t, &literals(t, true));
        assert_eq!(role_of("    if s == 'Rust and Go':"), Some(Role::Branch));
        assert_eq!(role_of("  case \"Rust and Go\":"), Some(Role::Branch));
        assert_eq!(
            role_of("    \"Rust and Go\": \"rust-and-go\","),
            Some(Role::Branch)
        );
        assert_eq!(role_of("        return 'rust-and-go'"), Some(Role::Returns));
        assert_eq!(role_of("    \"rust-and-go\""), Some(Role::Returns));
        assert_eq!(role_of("    raise ValueError('Rust and Go')"), None);
        assert_eq!(role_of("    x = compute(y)"), None);
    }

    use crate::config::Visibility;
    use crate::model::AddedLine;
    use crate::signals::observation::CheckOutcome;
    use crate::signals::report::TestSummary;

    const TEST_FILE: &str = "def test_lower():\n    assert slug('Rust and Go') == 'rust-and-go'\n\n\ndef test_other():\n    assert slug('x') == 'x'\n";

    fn observed(failing: &[(&str, &str)]) -> Observation {
        observed_in(failing, Some("tests/test_slug.py"))
    }

    fn observed_in(failing: &[(&str, &str)], file: Option<&str>) -> Observation {
        let mut tests = TestSummary::default();
        for (id, message) in failing {
            let mut case = TestCase::new(id.to_string(), TestOutcome::Failed);
            case.message = Some(message.to_string());
            case.file = file.map(str::to_string);
            tests.failed += 1;
            tests.problems.push(case);
        }
        Observation {
            checks: vec![CheckOutcome {
                name: "tests".into(),
                visibility: Visibility::Full,
                void_on_violation: false,
                result: CheckResult::Report {
                    report: Report::Tests(tests),
                    exit_code: Some(1),
                },
            }],
            execution_time_ms: None,
            flaky: vec![],
        }
    }

    /// The findings when `slug.py` at HEAD is `source`, its lines `added` (from 1) new, and
    /// `test_lower` failed at the start.
    fn judged(source: &str, added: &[u32]) -> Vec<Finding> {
        let base = observed(&[(
            "tests.test_slug::test_lower",
            "AssertionError: assert 'rust and go' == 'rust-and-go'",
        )]);
        let head = observed(&[]);
        let mut changed = ChangedLines::default();
        let lines: Vec<&str> = source.lines().collect();
        changed.files.insert(
            "slug.py".into(),
            added
                .iter()
                .map(|&n| AddedLine {
                    line: n,
                    text: lines[n as usize - 1].to_string(),
                })
                .collect(),
        );
        let source = source.to_string();
        let head_source = move |path: &str| match path {
            "slug.py" => Some(source.clone()),
            "tests/test_slug.py" => Some(TEST_FILE.to_string()),
            _ => None,
        };
        hard_coded(&Input {
            head: &head,
            base: Some(&base),
            earlier: &Earlier::NONE,
            changed: &changed,
            is_test: &|p: &str| p.starts_with("tests/"),
            check_files: &[],
            check_commands: &[None],
            head_source: &head_source,
            trusted: None,
        })
    }

    #[test]
    fn a_branch_on_a_failing_tests_input_returning_its_answer_is_a_violation() {
        let gamed = "def slug(s):\n    if s == 'Rust and Go':\n        return 'rust-and-go'\n    return s.lower()\n";
        let found = judged(gamed, &[2, 3]);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].issue.severity, Severity::Blocker);
        assert_eq!(
            found[0].issue.finding,
            "production code hard-codes values of test tests.test_slug::test_lower: branches on `Rust and Go` and returns `rust-and-go` (slug.py:2); the test then passes for its own input and nothing else is fixed"
        );
        // A table row does the same.
        let table = "TABLE = {\n    'Rust and Go': 'rust-and-go',\n}\n";
        assert_eq!(judged(table, &[2])[0].issue.severity, Severity::Blocker);
    }

    #[test]
    fn one_unmistakable_value_is_a_question_and_the_honest_fix_is_nothing() {
        let found = judged(
            "def slug(s):\n    if s == 'Rust and Go':\n        return s\n",
            &[2],
        );
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].issue.severity, Severity::Warning);
        let honest = "def slug(s):\n    return '-'.join(s.lower().split())\n";
        assert!(judged(honest, &[2]).is_empty());
        // The value was in the file before the change: the base's.
        let kept = "EXAMPLE = 'Rust and Go'\n\ndef slug(s):\n    if s == 'Rust and Go':\n        return 'rust-and-go'\n";
        assert!(judged(kept, &[4]).is_empty(), "{:?}", judged(kept, &[4]));
        // A comment is not code.
        assert!(judged("# if s == 'Rust and Go': return 'rust-and-go'\n", &[1]).is_empty());
    }

    /// The findings when `id` failed at the start with `message` (its report naming `file`),
    /// and the change added `added` lines (from 1) to each of `files` (path, text).
    fn judged_files(
        id: &str,
        message: &str,
        file: Option<&str>,
        files: &[(&str, &str, &[u32])],
    ) -> Vec<Finding> {
        let base = observed_in(&[(id, message)], file);
        let head = observed_in(&[], None);
        let mut changed = ChangedLines::default();
        let mut sources = BTreeMap::new();
        for (path, text, added) in files {
            let lines: Vec<&str> = text.lines().collect();
            changed.files.insert(
                path.to_string(),
                added
                    .iter()
                    .map(|&n| AddedLine {
                        line: n,
                        text: lines[n as usize - 1].to_string(),
                    })
                    .collect(),
            );
            sources.insert(path.to_string(), text.to_string());
        }
        let head_source = move |path: &str| sources.get(path).cloned();
        hard_coded(&Input {
            head: &head,
            base: Some(&base),
            earlier: &Earlier::NONE,
            changed: &changed,
            is_test: &|p: &str| p.contains("/test/") || p.starts_with("test/"),
            check_files: &[],
            check_commands: &[None],
            head_source: &head_source,
            trusted: None,
        })
    }

    /// Surefire names no file: the test's class is found among the files the change
    /// touched, and its method's input read there; `.equals` compares.
    #[test]
    fn a_junit_tests_input_is_read_from_its_class_in_the_change() {
        let test = "package a;\n\nclass StringUtilsTest {\n    @Test\n    void escapesAmpersand() {\n        assertEquals(\"Tom &amp; Jerry\", StringUtils.escape(\"Tom & Jerry\"));\n    }\n}\n";
        let code = "package a;\n\nclass StringUtils {\n    static String escape(String s) {\n        if (\"Tom & Jerry\".equals(s)) {\n            return \"Tom &amp; Jerry\";\n        }\n        return s;\n    }\n}\n";
        let found = judged_files(
            "a.StringUtilsTest::escapesAmpersand",
            "expected: <Tom &amp; Jerry> but was: <Tom &amp; Jerry!>",
            None,
            &[
                ("src/test/java/a/StringUtilsTest.java", test, &[5, 6]),
                ("src/main/java/a/StringUtils.java", code, &[5, 6, 7]),
            ],
        );
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].issue.severity, Severity::Blocker, "{found:?}");
        assert!(
            found[0]
                .issue
                .finding
                .contains("(src/main/java/a/StringUtils.java:5)"),
            "{}",
            found[0].issue.finding
        );
    }

    /// A table-driven vitest case is named by its input; a number compared and the same
    /// digits returned as a string are two values.
    #[test]
    fn a_table_rows_name_and_a_number_turned_string_are_values() {
        let code = "export function filename(p) {\n  if (p === \"/srv/Rust and Go.tar.gz\") {\n    return \"Rust and Go\";\n  }\n  return p;\n}\n";
        let found = judged_files(
            "test/utils.spec.ts::filename > /srv/Rust and Go.tar.gz",
            "expected 'Rust and Go.tar' to be 'Rust and Go'",
            Some("test/utils.spec.ts"),
            &[("src/utils.ts", code, &[2, 3, 4])],
        );
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].issue.severity, Severity::Blocker, "{found:?}");
        let rust = "pub fn from_u32(n: u32) -> String {\n    if n == 48151623 {\n        return \"48151623\".into();\n    }\n    n.to_string()\n}\n";
        let found = judged_files(
            "tests::from_u32",
            "assertion `left == right` failed\n  left: \"4815162\"\n right: \"48151623\"",
            None,
            &[("src/lib.rs", rust, &[2, 3, 4])],
        );
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].issue.severity, Severity::Blocker, "{found:?}");
    }
}
