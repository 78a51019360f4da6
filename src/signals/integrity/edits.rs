//! The edits that explain a finding: runner configuration and build conditions that
//! deselect a test, and a failing test's own lines rewritten (or a `#[should_panic]` added)
//! so that it passes.

use super::*;

/// Runner configuration files, by name.
pub(super) const RUNNER_CONFIG: &[&str] = &[
    "conftest.py",
    "pytest.ini",
    "pyproject.toml",
    "setup.cfg",
    "tox.ini",
    "Cargo.toml",
    "package.json",
    "jest.config.js",
    "jest.config.ts",
    "jest.config.mjs",
    "jest.config.cjs",
    "vitest.config.ts",
    "vitest.config.js",
    "vitest.config.mts",
    "vitest.config.mjs",
    "vite.config.ts",
    "vite.config.js",
    ".mocharc.json",
    ".mocharc.yml",
    ".mocharc.yaml",
    ".mocharc.js",
    ".mocharc.cjs",
    // Surefire's and Failsafe's configuration, Gradle's `test` task.
    "pom.xml",
    "build.gradle",
    "build.gradle.kts",
];

/// What in a line stops tests from being collected.
pub(super) const DESELECTING: &[&str] = &[
    "collect_ignore",
    "pytest_collection_modifyitems",
    "--deselect",
    "--ignore",
    "-k ",
    "testpaths",
    "python_files",
    "exclude",
    "testPathIgnorePatterns",
    "testMatch",
    "include",
    ".only(",
    "cfg(any())",
    "//go:build",
    "// +build",
    "test = false",
    "autotests",
    // Maven and Gradle: a test filter, a skipped test phase, a group left out.
    "<test>",
    "-Dtest",
    "skipTests",
    "maven.test.skip",
    "<groups>",
    "excludedGroups",
    "excludeTestsMatching",
    "includeTestsMatching",
    "excludeTags",
    "includeTags",
];

/// The added line that deselects the test `id`: in runner configuration, or a build
/// condition or `.only` anywhere. A line that names the test (its class, module or
/// function) is preferred over the first one found (`<exclude>**/AddTest.java</exclude>`
/// rather than the `<excludes>` around it).
pub(super) fn deselection(
    changed: &ChangedLines,
    head_source: &dyn Fn(&str) -> Option<String>,
    id: &str,
) -> Option<(String, u32, String)> {
    let hits: Vec<(String, u32, String)> = changed
        .iter()
        .filter(|(path, l)| deselects(path, l, head_source))
        .map(|(path, l)| (path.to_string(), l.line, l.text.clone()))
        .collect();
    let names: Vec<&str> = id
        .split(['.', ':', '/', '[', ' '])
        .filter(|part| part.len() >= 4)
        .collect();
    let names_it = |text: &str| names.iter().any(|name| text.contains(name));
    let preferred = hits.iter().position(|(_, _, text)| names_it(text));
    hits.into_iter().nth(preferred.unwrap_or(0))
}

fn deselects(
    path: &str,
    l: &crate::model::AddedLine,
    head_source: &dyn Fn(&str) -> Option<String>,
) -> bool {
    if path.ends_with(".rs") && gates_a_rust_test(path, l, head_source) {
        return true;
    }
    let name = path.rsplit('/').next().unwrap_or(path);
    let anywhere = [
        ".only(",
        "cfg(any())",
        "//go:build",
        "// +build",
        "collect_ignore",
    ];
    if RUNNER_CONFIG.contains(&name) {
        DESELECTING.iter().any(|d| l.text.contains(d))
    } else {
        anywhere.iter().any(|d| l.text.contains(d))
    }
}

/// An added `#[cfg(…)]` (a feature, a target: not `cfg(test)`) among a Rust test's
/// attributes, above or below its `#[test]`: the test is compiled out.
pub(super) fn gates_a_rust_test(
    path: &str,
    l: &crate::model::AddedLine,
    head_source: &dyn Fn(&str) -> Option<String>,
) -> bool {
    let text = l.text.trim();
    if !text.starts_with("#[cfg(") || text.contains("cfg(test)") {
        return false;
    }
    let Some(source) = head_source(path) else {
        return false;
    };
    let lines: Vec<&str> = source.lines().map(str::trim).collect();
    let at = (l.line as usize).saturating_sub(1);
    if lines.get(at) != Some(&text) {
        return false;
    }
    let attribute = |t: &&str| t.starts_with("#[") || t.starts_with("//");
    let start = (0..at)
        .rev()
        .take_while(|&k| attribute(&lines[k]))
        .last()
        .unwrap_or(at);
    let end = (at + 1..lines.len())
        .take_while(|&k| attribute(&lines[k]))
        .last()
        .unwrap_or(at);
    let block = &lines[start..=end];
    let is_test = |t: &&str| *t == "#[test]" || t.ends_with("::test]");
    block.iter().any(is_test)
        && lines
            .get(end + 1)
            .is_some_and(|t| t.starts_with("fn ") || t.contains(" fn "))
}

/// An added `#[should_panic]` right above the test `name` in HEAD's `file`: a failing test
/// made to pass by expecting it to fail.
pub(super) fn inverted_expectation(
    input: &Input,
    since: &ChangedLines,
    file: &str,
    name: &str,
) -> Option<RemovedLine> {
    let added = since.files.get(file)?;
    let source = (input.head_source)(file)?;
    added
        .iter()
        .filter(|l| l.text.trim_start().starts_with("#[should_panic"))
        .find(|l| {
            source
                .lines()
                .skip(l.line as usize)
                .take(6)
                .map(str::trim)
                .find(|t| !t.starts_with("#[") && !t.starts_with("//"))
                .is_some_and(|t| definition_name(t) == Some(name))
        })
        .map(|l| RemovedLine {
            line: l.line,
            text: l.text.clone(),
        })
}

/// Tests that failed when they last ran and pass now, while the change since the previous
/// iteration edited their own lines: from the definition to the failing assertion, or, for a
/// test the previous iteration skipped, its whole definition there.
pub(super) fn rewritten(input: &Input, head: &Inventory, chain: &[Inventory]) -> Vec<Finding> {
    let (Some(previous), Some(since)) = (chain.last(), input.earlier.since_previous) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (key, now) in head {
        if now.outcome != TestOutcome::Passed {
            continue;
        }
        let Some(before) = previous.get(key) else {
            continue;
        };
        let (failing, was_skipped) = match before.outcome {
            o if failed(o) => (before, false),
            TestOutcome::Skipped => match last_run(chain, key) {
                Some(e) if failed(e.outcome) => (e, true),
                _ => continue,
            },
            _ => continue,
        };
        let (Some(file), Some(line)) = (failing.file.as_deref(), failing.line) else {
            continue;
        };
        let failure = Failure {
            id: &key.1,
            file,
            line,
            was_skipped,
        };
        let source = (input.earlier.previous_source)(file);
        let added_marker;
        let edited = match edited_in_test(&failure, source.as_deref(), since) {
            Some(edited) => edited,
            None => match inverted_expectation(input, since, file, leaf(failure.id)) {
                Some(marker) => {
                    added_marker = marker;
                    &added_marker
                }
                None => continue,
            },
        };
        let place = at(
            now.file.as_deref().or(Some(file)),
            now.line.or(Some(line)),
            failure.id,
        );
        let when = if was_skipped {
            "it failed before the previous iteration skipped it"
        } else {
            "it failed in the previous iteration"
        };
        out.push(rewritten_finding(
            &failure,
            &format!("was rewritten to pass: {when}"),
            edited,
            place,
        ));
    }
    out
}

/// Tests that failed earlier in the task and passed again in the previous iteration,
/// whose own lines the change since then edited while they still pass — tests inside a
/// source file (Rust's `#[cfg(test)]` modules, documentation examples), which no run with
/// the start's tests covers: an expectation that may have moved with the code, for a
/// person to confirm (a WARNING, never VOID).
pub(super) fn reexpected(input: &Input, head: &Inventory, chain: &[Inventory]) -> Vec<Finding> {
    let (Some(previous), Some(since)) = (chain.last(), input.earlier.since_previous) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (key, now) in head {
        if now.outcome != TestOutcome::Passed {
            continue;
        }
        let Some(before) = previous
            .get(key)
            .filter(|e| e.outcome == TestOutcome::Passed)
        else {
            continue;
        };
        // Where it failed last (a passing test's place is often not reported).
        let Some(failing) = chain[..chain.len() - 1]
            .iter()
            .rev()
            .filter_map(|inv| inv.get(key))
            .find(|e| failed(e.outcome))
        else {
            continue;
        };
        let (Some(file), Some(line)) = (
            before.file.as_deref().or(failing.file.as_deref()),
            before.line.or(failing.line),
        ) else {
            continue;
        };
        if (input.is_test)(file) {
            continue;
        }
        let failure = Failure {
            id: &key.1,
            file,
            line,
            was_skipped: false,
        };
        let source = (input.earlier.previous_source)(file);
        let Some(edited) = edited_in_test(&failure, source.as_deref(), since) else {
            continue;
        };
        out.push(finding(
            Severity::Warning,
            format!(
                "test {} {}: its own lines changed after it passed again (`{}` at {file}:{}), and no run with the start's tests covers a test inside a source file: confirm the behaviour change with `itergate accept` (`/iterate accept` on a pull request)",
                key.1,
                super::EXPECTATION_TO_CONFIRM,
                edited.text.trim(),
                edited.line
            ),
            at(now.file.as_deref().or(Some(file)), now.line.or(Some(line)), &key.1),
            format!(
                "a person confirms the new expectation (`itergate accept`); if it is not intended, restore `{}` and fix the code",
                key.1
            ),
        ).about(crate::model::FindingKind::ExpectationToConfirm, key.1.as_str()));
    }
    out
}

/// A test that failed earlier in the task, where it failed.
pub(super) struct Failure<'a> {
    pub(super) id: &'a str,
    pub(super) file: &'a str,
    pub(super) line: u32,
    /// The previous iteration skipped it (it failed before that).
    pub(super) was_skipped: bool,
}

/// The first line of `failure`'s own test that the change since the previous iteration
/// removed or replaced: from its definition (found in `source`, the previous version of its
/// file) to two lines past the failing one, or its whole definition when it was skipped.
pub(super) fn edited_in_test<'c>(
    failure: &Failure,
    source: Option<&str>,
    since: &'c ChangedLines,
) -> Option<&'c RemovedLine> {
    let removed = since.removed.get(failure.file)?;
    let name = leaf(failure.id);
    let span = if let Some(example) = doc_example_span(failure.id, source) {
        // A documentation example (rustdoc's `src/lib.rs - add (line 3)`): every line of
        // its code block is its expectation.
        example
    } else if failure.was_skipped {
        // Its lines moved with the skip: the whole definition, found by name.
        definition_span(source?, name)?
    } else {
        let start = source
            .and_then(|text| definition_line(text, name, failure.line))
            .unwrap_or(failure.line.saturating_sub(2));
        start..=failure.line.saturating_add(2)
    };
    // Taking the skip off is no rewrite: the marker's line is not the test's expectation.
    removed
        .iter()
        .filter(|l| !(failure.was_skipped && SKIP_MARKERS.iter().any(|m| l.text.contains(m))))
        .find(|l| span.contains(&l.line))
}

/// The lines of the documentation example rustdoc names `<file> - <item> (line N)`: from
/// its opening fence on line N to its closing one, in `source` (the example's file).
fn doc_example_span(id: &str, source: Option<&str>) -> Option<std::ops::RangeInclusive<u32>> {
    let (_, rest) = id.split_once(" - ")?;
    let opening: u32 = rest
        .rsplit_once("(line ")?
        .1
        .strip_suffix(')')?
        .parse()
        .ok()?;
    let fence = |line: &str| {
        let text = line.trim_start();
        let text = ["///", "//!", "*"]
            .iter()
            .find_map(|doc| text.strip_prefix(doc))
            .unwrap_or(text);
        text.trim_start().starts_with("```")
    };
    let closing = source?
        .lines()
        .enumerate()
        .skip(opening as usize) // the lines after the opening fence (numbered from 1)
        .take(200)
        .find(|(_, line)| fence(line))
        .map_or(opening.saturating_add(200), |(index, _)| index as u32 + 1);
    Some(opening..=closing)
}

pub(super) fn rewritten_finding(
    failure: &Failure,
    what: &str,
    edited: &RemovedLine,
    place: String,
) -> Finding {
    let id = failure.id;
    finding(
        Severity::Blocker,
        format!(
            "test {id} {what}, and this one edited its own lines (`{}` at {}:{})",
            edited.text.trim(),
            failure.file,
            edited.line
        ),
        place,
        format!(
            "restore `{id}` as it was and fix the code it tests; do not skip, delete or \
             rewrite it (a person who intends the new expectation runs `itergate accept`)"
        ),
    )
    .about(crate::model::FindingKind::TestChangedToPass, id)
}

/// What marks a test skipped in its source.
pub(super) const SKIP_MARKERS: [&str; 12] = [
    ".skip(",
    ".skip`",
    "skip:",
    "xit(",
    "xdescribe(",
    ".todo(",
    "@pytest.mark.skip",
    "@pytest.mark.xfail",
    "@unittest.skip",
    "#[ignore",
    "t.Skip",
    "pytest.skip(",
];

/// The lines (from 1) of the definition of the test `name` in `text`: from its first line to
/// the line before the next definition, at most 200 lines.
pub(super) fn definition_span(text: &str, name: &str) -> Option<std::ops::RangeInclusive<u32>> {
    let lines: Vec<&str> = text.lines().collect();
    let opens = |l: &str| definition_name(l).is_some() || is_test_opener(l);
    let start = lines.iter().position(|l| mentions(l, name) && opens(l))?;
    let end = lines[start + 1..]
        .iter()
        .position(|l| opens(l))
        .map_or(lines.len(), |i| start + 1 + i)
        .min(start + 200);
    Some(start as u32 + 1..=end as u32)
}

/// The line (from 1) at or above `line` that defines the test `name`, within 300 lines.
pub(super) fn definition_line(text: &str, name: &str, line: u32) -> Option<u32> {
    let lines: Vec<&str> = text.lines().collect();
    let last = (line as usize).min(lines.len());
    (last.saturating_sub(300)..last)
        .rev()
        .find(|&i| {
            mentions(lines[i], name)
                && (definition_name(lines[i]).is_some() || is_test_opener(lines[i]))
        })
        .map(|i| i as u32 + 1)
}
