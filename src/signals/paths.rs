//! Paths as the repository names them. Tools report paths their own way: ruff, eslint and
//! mypy print absolute paths, coverage tools prefix `./`, and a base scored in a scratch
//! worktree lives in another directory than the branch. Every path in a report is made
//! relative to the root the checks ran in before anything compares or displays it, so a
//! finding on the base and the same finding on the branch are one finding.
//!
//! A failing test is located where a person would look: the deepest frame of its traceback
//! (or panic) that lies inside the repository, never a dependency's file.

use std::path::Path;

use super::report::{strip_ansi, Report, TestCase};
use super::tree_file::read_text_in_tree;

/// Source files larger than this are not read for a finding's line.
pub const SOURCE_FILE_BYTES_MAX: u64 = 16 * 1024 * 1024;

/// Path fragments that mark a file as someone else's code even when it sits under the root
/// (a virtualenv or `node_modules` inside the work tree).
const FOREIGN_MARKERS: [&str; 6] = [
    "site-packages/",
    "dist-packages/",
    "node_modules/",
    ".venv/",
    "/.cargo/registry/",
    "/rustc/",
];

/// Turns report paths into repository paths for one checkout.
#[derive(Debug, Clone)]
pub struct RepoPaths {
    roots: Vec<String>,
    /// The Go module path of `go.mod` at the root (`example.com/mod`): Go tools name files
    /// by import path.
    go_module: Option<String>,
}

impl RepoPaths {
    /// Paths under `root` (as given and as the file system resolves it) become relative.
    pub fn new(root: &Path) -> RepoPaths {
        let mut roots = vec![slashed(root)];
        if let Ok(canonical) = std::fs::canonicalize(root) {
            let canonical = slashed(&canonical);
            if !roots.contains(&canonical) {
                roots.push(canonical);
            }
        }
        for root in &mut roots {
            while root.len() > 1 && root.ends_with('/') {
                root.pop();
            }
        }
        let go_module = read_text_in_tree(root, &root.join("go.mod"), 1024 * 1024)
            .and_then(|text| go_module_path(&text));
        RepoPaths { roots, go_module }
    }

    /// `path` relative to the root when it lies under it; `./` prefixes dropped; other
    /// absolute paths (a dependency's) are kept as they are.
    pub fn relative(&self, path: &str) -> String {
        let path = path.trim();
        for root in &self.roots {
            if let Some(rest) = path.strip_prefix(root.as_str()) {
                if let Some(rest) = rest.strip_prefix('/') {
                    return strip_dot(rest).to_string();
                }
            }
        }
        if let Some(module) = &self.go_module {
            if let Some(rest) = path.strip_prefix(module.as_str()) {
                if let Some(rest) = rest.strip_prefix('/') {
                    return strip_dot(rest).to_string();
                }
            }
        }
        strip_dot(path).to_string()
    }

    /// `text` with every mention of the root (`/tmp/wt/src/x.ts:3`) made relative
    /// (`src/x.ts:3`): output of the same failure in two checkouts reads the same.
    pub fn without_root(&self, text: &str) -> String {
        let mut out = text.to_string();
        for root in &self.roots {
            if root.len() > 1 {
                out = out.replace(&format!("{root}/"), "");
            }
        }
        out
    }

    /// A coverage path relative to one of the report's source directories (`pytest
    /// --cov=src` writes `pkg/mod.py` for `src/pkg/mod.py`), made a repository path: the
    /// first source under which the file exists. Paths that exist as they are stay.
    fn under_a_source(&self, path: &str, sources: &[String]) -> String {
        let Some(root) = self.roots.first() else {
            return path.to_string();
        };
        let exists = |p: &str| Path::new(root).join(p).is_file();
        if path.starts_with('/') || exists(path) {
            return path.to_string();
        }
        sources
            .iter()
            .map(|source| self.relative(&format!("{}/{path}", source.trim_end_matches('/'))))
            .find(|candidate| !candidate.starts_with('/') && exists(candidate))
            // JaCoCo names no source root: `ex/Calc.java` is under the project's.
            .or_else(|| {
                let jvm = [".java", ".kt", ".scala", ".groovy"];
                jvm.iter()
                    .any(|ext| path.ends_with(ext))
                    .then(|| self.jvm_source(path))
                    .flatten()
            })
            .unwrap_or_else(|| path.to_string())
    }

    /// Makes every path of `report` relative to the root, and relocates failing tests to
    /// their deepest frame inside the repository.
    pub fn normalise(&self, report: &mut Report) {
        match report {
            Report::Tests(tests) => {
                for case in &mut tests.problems {
                    for text in [&mut case.message, &mut case.output].into_iter().flatten() {
                        if let std::borrow::Cow::Owned(clean) = strip_ansi(text) {
                            *text = clean;
                        }
                    }
                    // `/abs/root/test/x.test.ts::name` → `test/x.test.ts::name`: an id
                    // must not depend on where the checks ran.
                    if let Some((file, name)) = case.id.split_once("::") {
                        let relative = self.relative(file);
                        if relative != file {
                            case.id = format!("{relative}::{name}");
                        }
                    }
                    self.locate_test(case);
                    // No machine's path in what a prompt quotes.
                    for text in [&mut case.message, &mut case.output].into_iter().flatten() {
                        *text = self.without_root(text);
                    }
                }
            }
            Report::Lint(lint) => {
                for finding in &mut lint.findings {
                    if let Some(file) = &mut finding.file {
                        // SpotBugs names `ex/Calc.java`, under a source root it leaves out.
                        *file = self.under_a_source(&self.relative(file), &[]);
                    }
                }
            }
            Report::Coverage(coverage) => {
                let files = std::mem::take(&mut coverage.files);
                let sources = std::mem::take(&mut coverage.sources);
                for (path, lines) in files {
                    let path = self.under_a_source(&self.relative(&path), &sources);
                    match coverage.files.get_mut(&path) {
                        Some(existing) => {
                            for (line, hits) in lines.lines {
                                existing.add(line, hits);
                            }
                        }
                        None => {
                            coverage.files.insert(path, lines);
                        }
                    }
                }
            }
            Report::Complexity(complexity) => {
                for function in &mut complexity.functions {
                    function.file = self.relative(&function.file);
                }
            }
        }
    }

    /// Where a JVM frame's `package/File.java` is in the repository: under a source root
    /// of the project or of one of its modules (one level down).
    fn jvm_source(&self, path: &str) -> Option<String> {
        let root = Path::new(self.roots.first()?);
        let mut bases = vec![String::new()];
        if let Ok(entries) = std::fs::read_dir(root) {
            let mut modules: Vec<String> = entries
                .flatten()
                .filter(|e| e.path().join("src").is_dir())
                .filter_map(|e| e.file_name().to_str().map(|n| format!("{n}/")))
                .filter(|n| !n.starts_with('.'))
                .collect();
            modules.sort();
            bases.extend(modules);
        }
        bases.iter().find_map(|base| {
            JVM_SOURCE_ROOTS.iter().find_map(|source| {
                let candidate = format!("{base}{source}/{path}");
                root.join(&candidate).is_file().then_some(candidate)
            })
        })
    }

    /// The case's location: the deepest frame inside the repository that its failure text
    /// names, else its own (reported) location when that is inside the repository.
    fn locate_test(&self, case: &mut TestCase) {
        if let Some(file) = &mut case.file {
            *file = self.relative(file);
        }
        // A doctest (`src/lib.rs - double (line 16)`): rustdoc's own panic lines count its
        // generated program's lines, not the file's; its example's line is in its name.
        let doctest = doctest_place(&case.id).map(|(file, line)| (self.relative(file), line));
        let text = [case.message.as_deref(), case.output.as_deref()];
        let found: Vec<(String, u32)> = text.iter().flatten().flat_map(|t| frames(t)).collect();
        // A JVM trace lists the innermost frame first: the first that is the project's.
        let jvm = found.iter().find_map(|(file, line)| {
            let source = self.jvm_source(file.strip_prefix(JVM_FRAME)?)?;
            Some((source, *line))
        });
        let deepest = jvm
            .or_else(|| {
                found
                    .iter()
                    .filter(|(file, _)| !file.starts_with(JVM_FRAME))
                    .map(|(file, line)| (self.relative(file), *line))
                    .filter(|(file, _)| doctest.as_ref().is_none_or(|(d, _)| d != file))
                    .rfind(|(file, _)| is_repository_path(file))
            })
            .or(doctest)
            .or_else(|| {
                case.file
                    .is_none()
                    .then(|| self.go_example_place(&case.id))
                    .flatten()
            });
        match deepest {
            Some((file, line)) => {
                case.file = Some(file);
                case.line = Some(line);
            }
            None if case.file.as_deref().is_some_and(|f| !is_repository_path(f)) => {
                case.file = None;
                case.line = None;
            }
            None => {}
        }
    }
}

impl RepoPaths {
    /// Where a Go `Example` function is (`pkg/sum_test.go`, its `func` line): `go test`
    /// names no place for an example whose output differs, so its package's test files
    /// are read for `func ExampleName(`.
    fn go_example_place(&self, id: &str) -> Option<(String, u32)> {
        let (package, name) = id.split_once("::")?;
        let name = name.split('/').next()?;
        if !name.starts_with("Example") {
            return None;
        }
        let root = Path::new(self.roots.first()?);
        let dir = match &self.go_module {
            Some(module) if package == module => String::new(),
            _ => self.relative(package),
        };
        if dir.starts_with('/') {
            return None;
        }
        let needle = format!("func {name}(");
        let mut files: Vec<String> = std::fs::read_dir(root.join(&dir))
            .ok()?
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|f| f.ends_with("_test.go"))
            .collect();
        files.sort();
        files.into_iter().find_map(|file| {
            let path = if dir.is_empty() {
                file
            } else {
                format!("{dir}/{file}")
            };
            let text = read_text_in_tree(root, &root.join(&path), 4 * 1024 * 1024)?;
            let line = text.lines().position(|l| l.starts_with(&needle))?;
            Some((path, u32::try_from(line + 1).ok()?))
        })
    }
}

/// Whether a (normalised) path names the repository's own code.
pub fn is_repository_path(path: &str) -> bool {
    !path.is_empty()
        && !path.starts_with(JVM_FRAME)
        && !path.starts_with('/')
        && !path.starts_with("../")
        && !path.starts_with('<')
        && !FOREIGN_MARKERS
            .iter()
            .any(|m| path.contains(m) || path.starts_with(m.trim_start_matches('/')))
}

/// Source locations a failure text names, outermost first: Python traceback frames
/// (`File "x.py", line 3`), pytest frames (`tests/x.py:12: in test_y`, `x.py:3: Error`) and
/// Rust panic locations (`panicked at src/lib.rs:17:9`).
pub fn frames(text: &str) -> Vec<(String, u32)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(frame) = python_frame(line)
            .or_else(|| pytest_frame(line))
            .or_else(|| panic_frame(line))
            .or_else(|| js_frame(line))
            .or_else(|| go_frame(line))
            .or_else(|| jvm_frame(line))
        {
            out.push(frame);
        }
    }
    out
}

/// A JVM stack frame, `at ex.calc.AddTest.works(AddTest.java:12)`: the class's package as
/// a path and the file name (`ex/calc/AddTest.java`), which [`RepoPaths::locate_test`]
/// looks for under the source roots of a Maven or Gradle layout.
fn jvm_frame(line: &str) -> Option<(String, u32)> {
    let rest = line.strip_prefix("at ")?;
    let (method, place) = rest.split_once('(')?;
    let (file, line_no) = place.strip_suffix(')')?.rsplit_once(':')?;
    if !(file.ends_with(".java") || file.ends_with(".kt") || file.ends_with(".scala")) {
        return None;
    }
    // `ex.calc.AddTest$Inner.works` → the package `ex.calc`.
    let mut parts: Vec<&str> = method.split('.').collect();
    parts.pop(); // the method
    parts.pop(); // the class
    let package: String = parts.join("/");
    let path = if package.is_empty() {
        file.to_string()
    } else {
        format!("{package}/{file}")
    };
    Some((format!("{JVM_FRAME}{path}"), line_no.parse().ok()?))
}

/// Marks a JVM frame's path: relative to a source root, not to the repository.
const JVM_FRAME: &str = "jvm:";

/// The source roots of Maven and Gradle layouts, where a JVM frame's file is looked for.
const JVM_SOURCE_ROOTS: [&str; 6] = [
    "src/test/java",
    "src/main/java",
    "src/test/kotlin",
    "src/main/kotlin",
    "src/test/scala",
    "src/main/scala",
];

fn python_frame(line: &str) -> Option<(String, u32)> {
    let rest = line.strip_prefix("File \"")?;
    let (file, rest) = rest.split_once("\", line ")?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    Some((file.to_string(), digits.parse().ok()?))
}

fn pytest_frame(line: &str) -> Option<(String, u32)> {
    let (file, rest) = line.split_once(".py:")?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let after = rest.get(digits.len()..)?;
    if file.is_empty() || file.contains(' ') || !after.starts_with(':') {
        return None;
    }
    Some((format!("{file}.py"), digits.parse().ok()?))
}

fn panic_frame(line: &str) -> Option<(String, u32)> {
    let after = line.split_once("panicked at ")?.1;
    let spot = after.trim_end_matches(':').rsplit(", ").next()?;
    let mut parts = spot.rsplitn(3, ':');
    let _column = parts.next()?;
    let line_no: u32 = parts.next()?.parse().ok()?;
    let file = parts.next()?;
    (!file.is_empty() && !file.contains(' ')).then(|| (file.to_string(), line_no))
}

/// A JavaScript stack frame (`at fn (/abs/src/x.ts:12:5)`, `at /abs/x.js:3:1`,
/// `at file:///abs/x.mjs:3:1`) or vitest's source pointer (`❯ test/x.test.ts:89:35`).
fn js_frame(line: &str) -> Option<(String, u32)> {
    let spot = if let Some(rest) = line.strip_prefix("at ") {
        match rest.rsplit_once(" (") {
            Some((_, inner)) => inner.strip_suffix(')')?,
            None => rest,
        }
    } else {
        line.strip_prefix("❯ ")?.split(' ').next()?
    };
    let spot = spot.strip_prefix("file://").unwrap_or(spot);
    let mut parts = spot.rsplitn(3, ':');
    let _column: u32 = parts.next()?.parse().ok()?;
    let line_no: u32 = parts.next()?.parse().ok()?;
    let file = parts.next()?;
    let script = [".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".tsx", ".jsx"];
    (script.iter().any(|e| file.ends_with(e)) && !file.contains(' ') && !file.starts_with("node:"))
        .then(|| (file.to_string(), line_no))
}

/// A Go panic's frame: a tab-indented `/abs/pkg/x.go:16 +0x1d`.
fn go_frame(line: &str) -> Option<(String, u32)> {
    let (spot, _) = line.split_once(" +0x").unwrap_or((line, ""));
    let (file, line_no) = spot.rsplit_once(':')?;
    (file.starts_with('/') && file.ends_with(".go"))
        .then(|| line_no.parse().ok().map(|n| (file.to_string(), n)))
        .flatten()
}

/// The module path `go.mod` declares.
fn go_module_path(go_mod: &str) -> Option<String> {
    go_mod.lines().find_map(|line| {
        let rest = line.trim().strip_prefix("module")?;
        let path = rest.trim().trim_matches('"');
        (!path.is_empty() && !path.contains(' ')).then(|| path.to_string())
    })
}

fn strip_dot(path: &str) -> &str {
    let mut path = path;
    while let Some(rest) = path.strip_prefix("./") {
        path = rest;
    }
    path
}

fn slashed(path: &Path) -> String {
    let text = path.to_string_lossy();
    if std::path::MAIN_SEPARATOR == '/' {
        text.into_owned()
    } else {
        text.replace(std::path::MAIN_SEPARATOR, "/")
    }
}

/// The text of line `line` (1-based) of `file` under `root`, trimmed: what a finding is
/// about, so it can be matched across line shifts. `None` when unreadable, larger than
/// [`SOURCE_FILE_BYTES_MAX`], or not a regular file inside the work tree (a report names
/// `file`, and a check writes the report).
pub fn line_text(root: &Path, file: &str, line: u32) -> Option<String> {
    let text = read_text_in_tree(root, &root.join(file), SOURCE_FILE_BYTES_MAX)?;
    let index = usize::try_from(line).ok()?.checked_sub(1)?;
    text.lines().nth(index).map(|l| l.trim().to_string())
}

/// The file and line a doctest's name gives: `src/lib.rs - double (line 16)`.
fn doctest_place(id: &str) -> Option<(&str, u32)> {
    let (file, rest) = id.split_once(" - ")?;
    let line = rest.trim_end().strip_suffix(')')?.rsplit_once("(line ")?.1;
    let line = line.trim().parse().ok()?;
    (file.ends_with(".rs") || file.ends_with(".md")).then_some((file, line))
}

#[cfg(test)]
mod jvm_tests {
    #[test]
    fn a_jvm_frame_names_its_package_path_and_line() {
        assert_eq!(
            super::jvm_frame("at ex.calc.AddTest.works(AddTest.java:12)"),
            Some(("jvm:ex/calc/AddTest.java".to_string(), 12))
        );
        assert_eq!(
            super::jvm_frame("at ex.Outer$Inner.run(Outer.kt:3)"),
            Some(("jvm:ex/Outer.kt".to_string(), 3))
        );
        assert_eq!(
            super::jvm_frame("at java.base/jdk.internal.Native(Native Method)"),
            None
        );
        assert!(!super::is_repository_path("jvm:ex/AddTest.java"));
    }
}
