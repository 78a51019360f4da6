//! The test inventory of each observation, compared with the base's and the task's earlier
//! iterations': tests removed, newly skipped, deselected or still away, and what explains
//! an absence (a successor, a collection error, the code removed with its test).

use super::*;

/// What one test is in one observation.
#[derive(Debug, Clone)]
pub(super) struct Entry {
    pub(super) outcome: TestOutcome,
    pub(super) file: Option<String>,
    pub(super) line: Option<u32>,
}

/// `(check, test id)` → entry.
pub(super) type Inventory = BTreeMap<(String, String), Entry>;

pub(super) fn inventory(observation: &Observation) -> Inventory {
    let mut out = Inventory::new();
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
        for t in &tests.passing {
            let entry = Entry {
                outcome: TestOutcome::Passed,
                file: t.file.clone(),
                line: t.line,
            };
            out.insert((check.name.clone(), t.id.clone()), entry);
        }
        for c in &tests.problems {
            let entry = Entry {
                outcome: c.outcome,
                file: c.file.clone(),
                line: c.line,
            };
            out.insert((check.name.clone(), c.id.clone()), entry);
        }
    }
    out
}

/// The checks whose tests `observation` inventoried.
pub(super) fn inventoried_checks(observation: &Observation) -> BTreeSet<&str> {
    observation
        .checks
        .iter()
        .filter(|c| c.visibility != Visibility::AggregateOnly)
        .filter(|c| {
            matches!(
                c.result,
                CheckResult::Report {
                    report: Report::Tests(_),
                    ..
                }
            )
        })
        .map(|c| c.name.as_str())
        .collect()
}

pub(super) fn tests(input: &Input) -> Vec<Finding> {
    let head = inventory(input.head);
    let judged = inventoried_checks(input.head);
    // Every inventory before this iteration, oldest first: the base, then the earlier
    // iterations.
    let chain: Vec<Inventory> = input
        .base
        .map(inventory)
        .into_iter()
        .chain(input.earlier.observations.iter().map(|o| inventory(o)))
        .collect();
    let Some(reference) = chain.last() else {
        return Vec::new();
    };
    // This iteration's own step: from the previous iteration, or from the base.
    let step = match input.earlier.since_previous {
        Some(since) if !input.earlier.observations.is_empty() => since,
        _ => input.changed,
    };
    let errored: Vec<(&(String, String), &Entry)> = head
        .iter()
        .filter(|(_, e)| e.outcome == TestOutcome::Errored)
        .collect();
    let mut appeared: Vec<&(String, String)> = head
        .keys()
        .filter(|k| !reference.contains_key(*k))
        .collect();
    let removed_defs = removed_definitions(step, input.is_test);
    let mut findings = Vec::new();
    let mut flagged: BTreeSet<&(String, String)> = BTreeSet::new();
    for (key, entry) in reference {
        if !judged.contains(key.0.as_str()) {
            continue;
        }
        let (check, id) = (&key.0, &key.1);
        // Failing when it last ran (a skip in between does not run it): putting it away
        // hides a failure.
        let was_failing = last_run(&chain, key).is_some_and(|e| failed(e.outcome));
        match head.get(key) {
            Some(now) if now.outcome == TestOutcome::Skipped => {
                if entry.outcome != TestOutcome::Skipped {
                    flagged.insert(key);
                    findings.push(skipped(check, id, now, entry, was_failing));
                }
            }
            Some(_) => {}
            None => {
                if errored.iter().any(|(k, e)| shadows(k, e, key, entry)) {
                    continue;
                }
                // A Go test whose subtest failed is reported by that subtest alone: it ran.
                let subtest = format!("{}/", key.1);
                if head
                    .keys()
                    .any(|(check, id)| *check == key.0 && id.starts_with(&subtest))
                {
                    continue;
                }
                if let Some(i) = successor(&appeared, key, entry, &head, was_failing) {
                    appeared.remove(i);
                    continue;
                }
                flagged.insert(key);
                // On the base under this name, or under another before a move.
                let in_base = input.base.is_some()
                    && chain.first().is_some_and(|b| {
                        b.keys().any(|k| k.0 == key.0 && leaf(&k.1) == leaf(&key.1))
                    });
                findings.extend(vanished(
                    step,
                    input,
                    key,
                    entry,
                    was_failing,
                    in_base,
                    &removed_defs,
                ));
            }
        }
    }
    findings.extend(still_away(&chain, &head, &judged, &flagged));
    if !input.earlier.observations.is_empty() {
        findings.extend(rewritten(input, &head, &chain));
        findings.extend(reexpected(input, &head, &chain));
    }
    findings
}

/// The test's latest outcome where it ran (not skipped), in `chain` (oldest first).
pub(super) fn last_run<'i>(chain: &'i [Inventory], key: &(String, String)) -> Option<&'i Entry> {
    chain
        .iter()
        .rev()
        .filter_map(|inv| inv.get(key))
        .find(|e| e.outcome != TestOutcome::Skipped)
}

/// Failing tests an earlier iteration removed or skipped that have not run since: the
/// violation stands until the test is back.
pub(super) fn still_away(
    chain: &[Inventory],
    head: &Inventory,
    judged: &BTreeSet<&str>,
    flagged: &BTreeSet<&(String, String)>,
) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    for (j, pair) in chain.windows(2).enumerate() {
        let (before, after) = (&pair[0], &pair[1]);
        for (key, entry) in before {
            let away = |inv: &Inventory| {
                inv.get(key)
                    .is_none_or(|e| e.outcome == TestOutcome::Skipped)
            };
            let renamed = |inv: &Inventory| {
                inv.keys()
                    .any(|k| k.0 == key.0 && k != key && leaf(&k.1) == leaf(&key.1))
            };
            if !failed(entry.outcome)
                || entry.outcome == TestOutcome::Errored
                || is_module_level(&key.1)
                || !judged.contains(key.0.as_str())
                || flagged.contains(key)
                || !away(after)
                || !away(head)
                || renamed(after)
                || chain[j + 1..].iter().any(|inv| {
                    inv.get(key)
                        .is_some_and(|e| e.outcome != TestOutcome::Skipped)
                })
                || !seen.insert(key.clone())
            {
                continue;
            }
            let id = &key.1;
            // Still skipped is the violation going on; absent, the iteration that removed
            // it was judged for it, and this one is asked to bring it back.
            let (severity, how) = match head.get(key) {
                Some(_) => (Severity::Blocker, "is still skipped"),
                None => (Severity::Warning, "has not run"),
            };
            out.push(finding(
                severity,
                format!(
                    "test {id} was failing and {how} since an earlier iteration of this task (check `{}`)",
                    key.0
                ),
                at(entry.file.as_deref(), entry.line, id),
                restore(id),
            ).about(crate::model::FindingKind::TestPutAway, id.as_str()));
        }
    }
    out
}

/// Whether an errored case in the head (a file that failed to import, a package that did
/// not build) accounts for a test's absence.
pub(super) fn shadows(
    errored: &(String, String),
    e: &Entry,
    missing: &(String, String),
    m: &Entry,
) -> bool {
    let prefix = |outer: &str, inner: &str| !outer.is_empty() && inner.starts_with(outer);
    // A module or package that failed to import or build (`tests.test_more`,
    // `example.com/m/pkg`): pytest stops collecting altogether, Go runs none of its tests.
    let module_level = is_module_level(&errored.1);
    errored.0 == missing.0
        && (module_level
            || prefix(&errored.1, &missing.1)
            || prefix(container(&errored.1), &missing.1)
            || (e.file.is_some() && e.file == m.file))
}

/// Whether an id names a module, package or file rather than a test (`tests.test_more`,
/// `example.com/m/pkg`, `test/any.js`): what a runner reports when it cannot import, build
/// or load it.
pub(super) fn is_module_level(id: &str) -> bool {
    !id.contains("::") && !id.contains(" > ") && !id.contains(' ') && id.contains(['.', '/'])
}

/// A new test in the head that takes the missing one's place: the same name elsewhere (a
/// move), or, for a test that was not failing, a new one in the same file or module (a
/// rename).
pub(super) fn successor(
    appeared: &[&(String, String)],
    missing: &(String, String),
    entry: &Entry,
    head: &Inventory,
    was_failing: bool,
) -> Option<usize> {
    let name = leaf(&missing.1);
    let moved = appeared
        .iter()
        .position(|k| k.0 == missing.0 && leaf(&k.1) == name);
    moved.or_else(|| {
        (!was_failing)
            .then(|| {
                appeared.iter().position(|k| {
                    k.0 == missing.0
                        && (container(&k.1) == container(&missing.1)
                            || (entry.file.is_some()
                                && head.get(*k).and_then(|e| e.file.as_ref())
                                    == entry.file.as_ref()))
                })
            })
            .flatten()
    })
}

/// The test's own name: the last part of its id (`tests/a.py::test_x[1]` → `test_x`,
/// `suite > adds` → `adds`, `pkg::TestX/case` → `TestX`).
pub(super) fn leaf(id: &str) -> &str {
    let id = id.rsplit("::").next().unwrap_or(id);
    let id = id.rsplit(" > ").next().unwrap_or(id);
    // `test_x[1-2]` is `test_x`; a name that starts with a bracket (`["a","b"]`) is whole.
    let id = match id.split_once('[') {
        Some((name, _)) if !name.trim().is_empty() => name,
        _ => id,
    };
    let id = match id.split_once('/') {
        Some((function, _)) if function.starts_with("Test") => function,
        _ => id,
    };
    id.trim()
}

/// The id without its own name: the module, class, file or suite it is in.
pub(super) fn container(id: &str) -> &str {
    let name = leaf(id);
    match id.rfind(name) {
        Some(at) if at > 0 => id[..at].trim_end_matches([':', '.', ' ', '>']),
        _ => "",
    }
}

pub(super) fn skipped(
    check: &str,
    id: &str,
    now: &Entry,
    before: &Entry,
    was_failing: bool,
) -> Finding {
    let why = if was_failing {
        "it was failing when it last ran"
    } else {
        "it ran before this change"
    };
    finding(
        severity_for(was_failing),
        format!("test {id} is newly skipped in check `{check}`: {why}, and a skipped test proves nothing"),
        // A runner may not locate a skipped test: where it ran before.
        match now.file {
            Some(_) => at(now.file.as_deref(), now.line, id),
            None => at(before.file.as_deref(), before.line, id),
        },
        restore(id),
    )
    .about(crate::model::FindingKind::TestPutAway, id)
}

/// A test that no longer runs and has no successor.
pub(super) fn vanished(
    changed: &ChangedLines,
    input: &Input,
    key: &(String, String),
    entry: &Entry,
    was_failing: bool,
    in_base: bool,
    removed_defs: &BTreeSet<String>,
) -> Option<Finding> {
    let (check, id) = (&key.0, &key.1);
    let name = leaf(id);
    let body = removed_body(changed, name, input.is_test);
    let Some((file, line, body)) = body else {
        // Its definition is still there: something stopped collecting it.
        let Some((file, line, text)) = deselection(changed, input.head_source, id) else {
            if entry.outcome == TestOutcome::Errored || is_module_level(id) {
                // A package that did not build, a module that did not import: fixed.
                return None;
            }
            // Nothing in the change explains it (a parametrised id that changed, a
            // generated test, a test file renamed out of the runner's patterns): a
            // failing test is asked about, a passing one noted.
            return Some(finding(
                if was_failing {
                    Severity::Warning
                } else {
                    Severity::Info
                },
                format!("test {id} ran before and no longer runs in check `{check}`; its definition is still there, and no line of the change that deselects it was found"),
                at(entry.file.as_deref(), entry.line, id),
                if was_failing {
                    format!("make `{id}` run again (undo what stopped it from being collected) and fix the code it tests")
                } else {
                    "nothing to do, if that is intended".into()
                },
            ).about(crate::model::FindingKind::TestPutAway, id.as_str()));
        };
        return Some(finding(
            severity_for(was_failing),
            format!(
                "test {id}{}`{check}`: it ran before and is no longer collected; the change edited `{}` at {file}:{line}",
                super::DESELECTED,
                text.trim()
            ),
            format!("{file}:{line}"),
            restore(id),
        ).about(crate::model::FindingKind::TestPutAway, id.as_str()));
    };
    if let Some(code) = body
        .iter()
        .skip(1)
        .find_map(|l| removed_defs.iter().find(|d| *d != name && mentions(l, d)))
    {
        // Added by the task and gone again with its code: nothing of it is left to note.
        if !in_base {
            return None;
        }
        return Some(
            finding(
                Severity::Info,
                format!("test {id} was removed together with `{code}`, the code it tested"),
                format!("{file}:{line}"),
                "nothing to do, if the code is meant to go".into(),
            )
            .about(crate::model::FindingKind::TestPutAway, id.as_str()),
        );
    }
    let why = if was_failing {
        "it was failing when it last ran"
    } else {
        "no test took its place"
    };
    Some(
        finding(
            severity_for(was_failing),
            format!("test {id} was removed from check `{check}`: {why}"),
            format!("{file}:{line}"),
            restore(id),
        )
        .about(crate::model::FindingKind::TestPutAway, id.as_str()),
    )
}

/// Whether `line` uses the identifier `name` (not as part of a longer one).
pub(super) fn mentions(line: &str, name: &str) -> bool {
    line.match_indices(name).any(|(at, _)| {
        let before = line[..at].chars().next_back();
        let after = line[at + name.len()..].chars().next();
        let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        !ident(before) && !ident(after)
    })
}

/// Where the change removed the definition of the test `name` (file and old line) and the
/// removed lines of its body, up to the next removed definition.
pub(super) fn removed_body<'c>(
    changed: &'c ChangedLines,
    name: &str,
    is_test: &dyn Fn(&str) -> bool,
) -> Option<(&'c str, u32, Vec<&'c str>)> {
    // Test files first: a test defined in a source file (Rust's `mod tests`) is found next.
    let mut files: Vec<(&String, _)> = changed.removed.iter().collect();
    files.sort_by_key(|(path, _)| !is_test(path));
    for (path, lines) in files {
        let Some(start) = lines.iter().position(|l| {
            definition_name(&l.text) == Some(name)
                || (is_test_opener(&l.text) && l.text.contains(name))
        }) else {
            continue;
        };
        let body = lines[start..]
            .iter()
            .enumerate()
            .take_while(|(i, l)| {
                *i == 0 || (definition_name(&l.text).is_none() && !is_test_opener(&l.text))
            })
            .map(|(_, l)| l.text.as_str())
            .collect();
        return Some((path.as_str(), lines[start].line, body));
    }
    None
}

/// The name a line defines, if it opens a definition: `def x(`, `fn x(`, `func X(`,
/// `function x(`, `class X`, `const x =`.
pub(super) fn definition_name(line: &str) -> Option<&str> {
    let t = line.trim_start();
    let t = t
        .trim_start_matches("pub(crate) ")
        .trim_start_matches("pub ")
        .trim_start_matches("export ")
        .trim_start_matches("async ")
        .trim_start_matches("default ");
    for keyword in [
        "def ",
        "fn ",
        "func ",
        "function ",
        "class ",
        "const ",
        "let ",
    ] {
        if let Some(rest) = t.strip_prefix(keyword) {
            // A Go method: `func (r *T) Name(`.
            let rest = if keyword == "func " && rest.starts_with('(') {
                rest.split_once(") ").map_or(rest, |(_, r)| r)
            } else {
                rest
            };
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            return (end > 0).then(|| &rest[..end]);
        }
    }
    None
}

/// A JS test opener: `it(`, `test(`, `it.only(` ….
pub(super) fn is_test_opener(line: &str) -> bool {
    let t = line.trim_start();
    ["it(", "test(", "it.", "test.", "t.Run("]
        .iter()
        .any(|o| t.starts_with(o))
}

/// Names of functions, classes and constants the change removed from non-test source and
/// did not define again.
pub(super) fn removed_definitions(
    changed: &ChangedLines,
    is_test: &dyn Fn(&str) -> bool,
) -> BTreeSet<String> {
    let added: BTreeSet<&str> = changed
        .iter()
        .filter_map(|(_, l)| definition_name(&l.text))
        .collect();
    changed
        .removed
        .iter()
        .filter(|(path, _)| !is_test(path))
        .flat_map(|(_, lines)| lines.iter())
        .filter_map(|l| definition_name(&l.text))
        .filter(|name| !added.contains(name) && name.len() > 2)
        .map(str::to_string)
        .collect()
}
