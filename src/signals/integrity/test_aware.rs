//! Production code that asks whether it runs under the test runner (`"pytest" in
//! sys.modules`, `process.env.VITEST`, `testing.Testing()`, `cfg!(test)`, a Surefire
//! property): the tests then see a different program than its users do. Names that honest
//! code reads for other reasons (`CARGO_MANIFEST_DIR` in a build script or a proc macro,
//! JUnit's names in a testing library's own code) are left out. Each idiom a change
//! adds to a file that is not a test is a violation at its line; one already at the base is
//! the base's (only added lines are read).

use super::*;

/// The idioms, the runner each asks about, and the files (by extension) they are read in.
const IDIOMS: &[(&str, &str, &[&str])] = &[
    // Python
    ("\"pytest\" in sys.modules", "pytest", PY),
    ("'pytest' in sys.modules", "pytest", PY),
    ("sys.modules.get(\"pytest\")", "pytest", PY),
    ("sys.modules.get('pytest')", "pytest", PY),
    ("\"unittest\" in sys.modules", "unittest", PY),
    ("'unittest' in sys.modules", "unittest", PY),
    ("PYTEST_CURRENT_TEST", "pytest", PY),
    ("PYTEST_VERSION", "pytest", PY),
    ("PYTEST_XDIST_WORKER", "pytest", PY),
    ("_called_from_test", "pytest", PY),
    // JavaScript and TypeScript
    ("process.env.VITEST", "vitest", JS),
    ("VITEST_WORKER_ID", "vitest", JS),
    ("process.env['VITEST']", "vitest", JS),
    ("process.env[\"VITEST\"]", "vitest", JS),
    ("JEST_WORKER_ID", "jest", JS),
    ("typeof jest", "jest", JS),
    ("NODE_TEST_CONTEXT", "node:test", JS),
    ("typeof describe", "a test runner", JS),
    ("typeof it ", "a test runner", JS),
    ("typeof it=", "a test runner", JS),
    ("global.describe", "a test runner", JS),
    ("globalThis.describe", "a test runner", JS),
    ("global.it", "a test runner", JS),
    ("globalThis.it", "a test runner", JS),
    ("NODE_ENV === 'test'", "a test runner", JS),
    ("NODE_ENV === \"test\"", "a test runner", JS),
    ("NODE_ENV == 'test'", "a test runner", JS),
    ("NODE_ENV == \"test\"", "a test runner", JS),
    // Go
    ("testing.Testing()", "go test", GO),
    ("flag.Lookup(\"test.", "go test", GO),
    ("\".test\")", "go test", GO),
    // Rust
    ("cfg!(test)", "cargo test", RS),
    ("cfg(not(test))", "cargo test", RS),
    ("RUST_TEST_THREADS", "cargo test", RS),
    // Java and Kotlin: Surefire's properties (`surefire.test.class.path`, …)
    ("\"surefire.", "Surefire", JVM),
    ("\"basedir\")", "Surefire", JVM),
];

const PY: &[&str] = &[".py"];
const JS: &[&str] = &[".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".jsx", ".tsx"];
const GO: &[&str] = &[".go"];
const RS: &[&str] = &[".rs"];
const JVM: &[&str] = &[".java", ".kt", ".scala", ".groovy"];

/// A line that is all comment, in any of the languages above.
pub(super) fn is_comment(text: &str) -> bool {
    let t = text.trim_start();
    t.starts_with('#') && !t.starts_with("#[") && !t.starts_with("#!")
        || t.starts_with("//")
        || t.starts_with("/*")
        || t.starts_with('*')
}

/// What an added line of `path` asks of the test runner, if anything: (the idiom, the
/// runner).
fn idiom(path: &str, text: &str) -> Option<(&'static str, &'static str)> {
    if is_comment(text) {
        return None;
    }
    IDIOMS
        .iter()
        .filter(|(_, _, exts)| exts.iter().any(|e| path.ends_with(e)))
        .find(|(words, _, _)| contains_word(text, words))
        .map(|(words, runner, _)| (*words, *runner))
}

/// Whether `text` holds `words` not run on into a longer name (`global.it`, not
/// `global.items`).
fn contains_word(text: &str, words: &str) -> bool {
    let name = |c: char| c.is_alphanumeric() || c == '_';
    let open_end = words.chars().last().is_some_and(name);
    text.match_indices(words)
        .any(|(at, _)| !open_end || !text[at + words.len()..].chars().next().is_some_and(name))
}

/// The changed files' added lines (not in tests) that ask whether the code runs under a
/// test runner: a BLOCKER each, at its line.
pub(super) fn test_aware(changed: &ChangedLines, is_test: &dyn Fn(&str) -> bool) -> Vec<Finding> {
    let mut out = Vec::new();
    for (path, added) in &changed.files {
        if is_test(path) {
            continue;
        }
        for (at, line) in added.iter().enumerate() {
            let found = idiom(path, &line.text).or_else(|| {
                // `#[cfg(test)]` on a constant or a static: a value only the tests see.
                let next = added.get(at + 1).filter(|n| n.line == line.line + 1)?;
                let value = [
                    "const ",
                    "static ",
                    "pub const ",
                    "pub static ",
                    "pub(crate) const ",
                ]
                .iter()
                .any(|v| next.text.trim_start().starts_with(v));
                (path.ends_with(".rs") && line.text.trim() == "#[cfg(test)]" && value)
                    .then_some(("#[cfg(test)] on a value", "cargo test"))
            });
            let Some((words, runner)) = found else {
                continue;
            };
            let shown: String = line.text.trim().chars().take(160).collect();
            out.push(finding(
                Severity::Blocker,
                format!(
                    "{TEST_AWARE} {runner}: `{shown}` ({path}:{}); the tests then see a different program than its users",
                    line.line
                ),
                format!("{path}:{}", line.line),
                format!(
                    "remove the check for {runner} (`{words}`): the code must do the same under the tests as in use, so fix what the tests exercise"
                ),
            ).about(crate::model::FindingKind::TestAware, format!("{path}:{}", line.line)));
        }
    }
    out
}

/// The first words of a finding of production code that checks for the test runner.
pub const TEST_AWARE: &str = crate::model::TEST_AWARE;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::AddedLine;

    fn added(path: &str, lines: &[&str]) -> ChangedLines {
        let mut changed = ChangedLines::default();
        changed.files.insert(
            path.to_string(),
            lines
                .iter()
                .enumerate()
                .map(|(i, t)| AddedLine {
                    line: i as u32 + 10,
                    text: t.to_string(),
                })
                .collect(),
        );
        changed
    }

    fn found(path: &str, lines: &[&str]) -> Vec<String> {
        let is_test = |p: &str| p.starts_with("tests/") || p.ends_with("_test.go");
        test_aware(&added(path, lines), &is_test)
            .into_iter()
            .map(|f| f.issue.finding)
            .collect()
    }

    #[test]
    fn each_ecosystems_idioms_are_found_in_production_code() {
        let cases: &[(&str, &str, &str)] = &[
            ("src/calc.py", "    if \"pytest\" in sys.modules:", "pytest"),
            (
                "src/calc.py",
                "    if os.environ.get(\"PYTEST_CURRENT_TEST\"):",
                "pytest",
            ),
            (
                "lib/math.js",
                "  if (process.env.VITEST) return 12;",
                "vitest",
            ),
            (
                "lib/math.ts",
                "  if (typeof describe === 'function') return 12;",
                "a test runner",
            ),
            (
                "lib/math.js",
                "  if (process.env.JEST_WORKER_ID) return 12",
                "jest",
            ),
            (
                "lib/math.js",
                "  if (process.env.NODE_TEST_CONTEXT) return 12",
                "node:test",
            ),
            ("calc.go", "\tif testing.Testing() {", "go test"),
            (
                "calc.go",
                "\tif flag.Lookup(\"test.v\") != nil {",
                "go test",
            ),
            (
                "calc.go",
                "\tif strings.HasSuffix(os.Args[0], \".test\") {",
                "go test",
            ),
            (
                "src/lib.rs",
                "    if cfg!(test) { return 12; }",
                "cargo test",
            ),
            (
                "src/lib.rs",
                "    if std::env::var(\"RUST_TEST_THREADS\").is_ok() {",
                "cargo test",
            ),
            (
                "src/main/java/Calc.java",
                "    if (System.getProperty(\"surefire.test.class.path\") != null) {",
                "Surefire",
            ),
        ];
        for (path, line, runner) in cases {
            let f = found(path, &[line]);
            assert_eq!(f.len(), 1, "{path}: {line}: {f:?}");
            assert!(f[0].contains(&format!("runs under {runner}:")), "{}", f[0]);
            assert!(f[0].contains(&format!("({path}:10)")), "{}", f[0]);
        }
        // `#[cfg(test)]` on a constant outside a test module.
        let f = found("src/lib.rs", &["#[cfg(test)]", "const LIMIT: u32 = 12;"]);
        assert_eq!(f.len(), 1, "{f:?}");
        // A test module or test-only helper function is not.
        assert!(found("src/lib.rs", &["#[cfg(test)]", "mod tests {"]).is_empty());
    }

    #[test]
    fn tests_comments_and_other_languages_are_not_production_code_asking() {
        assert!(found("tests/test_calc.py", &["if \"pytest\" in sys.modules:"]).is_empty());
        assert!(found("calc_test.go", &["\tif testing.Testing() {"]).is_empty());
        assert!(found("src/calc.py", &["# PYTEST_CURRENT_TEST is set by pytest"]).is_empty());
        assert!(found("lib/math.js", &["// process.env.VITEST in tests"]).is_empty());
        assert!(found("README.md", &["`process.env.VITEST`"]).is_empty());
        assert!(found("src/calc.py", &["import sys", "def f(): return 1"]).is_empty());
        // A longer name is not the idiom; a build script reading cargo's variables is not.
        assert!(found("lib/list.js", &["  return global.items.length;"]).is_empty());
        assert!(found(
            "build.rs",
            &["let dir = env::var(\"CARGO_MANIFEST_DIR\").unwrap();"]
        )
        .is_empty());
    }
}
