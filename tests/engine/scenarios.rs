//! Scenarios on small real projects: a Cargo crate checked with `cargo test` and `cargo
//! clippy`, a Python package checked with pytest and ruff, each in a temporary git
//! repository, scored commit by commit with the real `itergate run`.
//!
//! Every step asserts the decision, that the revision prompt names `file:line` for each
//! problem the change made and nothing else (never the base's debt), and the revision round.
//! Nothing is shared between tests except the Python virtual environment (created once per
//! run of this binary; it holds only pytest, ruff and a stand-in third-party module).

use crate::gitrepo;

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use gitrepo::TestRepo;

const BIN: &str = env!("CARGO_BIN_EXE_itergate");

/// Variables that would point itergate's git at another repository (as in `gitrepo`).
const REPOSITORY_ENV_VARS: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_COMMON_DIR",
    "GIT_PREFIX",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
];

// ---------------------------------------------------------------------------------------
// Driving itergate and reading what it said
// ---------------------------------------------------------------------------------------

/// One `itergate` invocation's result.
pub(crate) struct Run {
    code: Option<i32>,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl Run {
    pub(crate) fn from(output: Output) -> Run {
        Run {
            code: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// The word after `Decision:` in the summary.
    pub(crate) fn decision(&self) -> &str {
        self.stderr
            .lines()
            .find_map(|l| l.strip_prefix("Decision: "))
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_else(|| panic!("no `Decision:` line in:\n{}", self.stderr))
    }

    pub(crate) fn expect_decision(&self, expected: &str, step: &str) {
        eprintln!("--- {step}:\n{}", self.stderr);
        assert_eq!(
            self.code,
            Some(0),
            "{step}: itergate run failed:\n{}",
            self.stderr
        );
        assert_eq!(
            self.decision(),
            expected,
            "{step}: wrong decision:\n{}",
            self.stderr
        );
    }
}

/// A project in a temporary git repository, with the environment its checks run in.
pub(crate) struct Project {
    repo: TestRepo,
    env: Vec<(String, OsString)>,
}

impl Project {
    pub(crate) fn new() -> Project {
        Project {
            repo: TestRepo::new(),
            env: Vec::new(),
        }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.repo.path
    }

    pub(crate) fn set_env(&mut self, key: &str, value: impl Into<OsString>) {
        self.env.push((key.to_string(), value.into()));
    }

    pub(crate) fn itergate(&self, args: &[&str]) -> Run {
        let mut command = Command::new(BIN);
        command.args(args).current_dir(self.path());
        for var in REPOSITORY_ENV_VARS {
            command.env_remove(var);
        }
        command
            .env_remove("ITERGATE_LOG")
            .env("NO_COLOR", "1")
            .env("GIT_AUTHOR_NAME", "Test Author")
            .env("GIT_AUTHOR_EMAIL", "author@example.com")
            .env("GIT_COMMITTER_NAME", "Test Committer")
            .env("GIT_COMMITTER_EMAIL", "committer@example.com");
        for (key, value) in &self.env {
            command.env(key, value);
        }
        Run::from(command.output().expect("itergate runs"))
    }

    pub(crate) fn run(&self) -> Run {
        self.itergate(&["run"])
    }

    /// The revision prompt file, if the last decision left one.
    pub(crate) fn prompt_file(&self) -> Option<String> {
        std::fs::read_to_string(self.path().join(".git/itergate/revision-prompt.md")).ok()
    }

    /// The prompt file, which must exist, and `itergate prompt`, which must agree with it.
    pub(crate) fn prompt(&self, step: &str) -> String {
        let file = self
            .prompt_file()
            .unwrap_or_else(|| panic!("{step}: no revision prompt was written"));
        let printed = self.itergate(&["prompt"]);
        assert_eq!(printed.code, Some(0), "{step}: {}", printed.stderr);
        assert_eq!(
            printed.stdout.trim_end(),
            file.trim_end(),
            "{step}: `itergate prompt` and the prompt file disagree"
        );
        eprintln!("--- {step}, prompt:\n{file}");
        file
    }

    /// The record in HEAD's note.
    pub(crate) fn head_record(&self) -> serde_json::Value {
        let head = self.repo.head();
        let out = gitrepo::git_output(self.path(), &["notes", "--ref", "itergate", "show", &head]);
        assert!(
            out.status.success(),
            "HEAD {head} has no note: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("note is JSON");
        v.get("record").cloned().unwrap_or(v)
    }

    pub(crate) fn notes_list(&self) -> String {
        gitrepo::git_output(self.path(), &["notes", "--ref", "itergate", "list"])
            .stdout
            .iter()
            .map(|b| char::from(*b))
            .collect()
    }

    pub(crate) fn write(&self, file: &str, content: &str) {
        self.repo.write(file, content);
    }

    /// Stages exactly `files` (never everything) and commits.
    pub(crate) fn commit(&self, files: &[&str], message: &str) -> String {
        let mut args = vec!["add", "--"];
        args.extend_from_slice(files);
        self.repo.git(&args);
        self.repo.git(&["commit", "--quiet", "-m", message]);
        self.repo.head()
    }

    pub(crate) fn git(&self, args: &[&str]) -> String {
        self.repo.git(args)
    }

    pub(crate) fn tree(&self, rev: &str) -> String {
        self.repo.git(&["rev-parse", &format!("{rev}^{{tree}}")])
    }
}

/// The 1-based line of the first line of `text` containing `needle`.
pub(crate) fn line_of(text: &str, needle: &str) -> u32 {
    let index = text
        .lines()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("`{needle}` not in:\n{text}"));
    u32::try_from(index + 1).expect("small file")
}

/// Every `path:line` the text names for a file with one of `extensions`.
fn locations(text: &str, extensions: &[&str]) -> BTreeSet<String> {
    let is_path_char = |c: char| c.is_ascii_alphanumeric() || "_./-".contains(c);
    let mut found = BTreeSet::new();
    for ext in extensions {
        let marker = format!(".{ext}:");
        let mut from = 0;
        while let Some(at) = text[from..].find(&marker) {
            let dot = from + at;
            let after = dot + marker.len();
            let digits: String = text[after..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            let start = text[..dot]
                .char_indices()
                .rev()
                .take_while(|(_, c)| is_path_char(*c))
                .last()
                .map_or(dot, |(i, _)| i);
            if !digits.is_empty() {
                found.insert(format!("{}.{ext}:{digits}", &text[start..dot]));
            }
            from = after;
        }
    }
    found
}

/// Asserts the prompt names exactly `expected` among the project's `path:line` places, and
/// none of `forbidden` (substrings: test names, files of the base's debt, dependencies).
fn assert_prompt_names(
    prompt: &str,
    extensions: &[&str],
    expected: &[String],
    forbidden: &[&str],
    step: &str,
) {
    let named = locations(prompt, extensions);
    let expected: BTreeSet<String> = expected.iter().cloned().collect();
    assert_eq!(
        named, expected,
        "{step}: the prompt must name exactly the change's problems:\n{prompt}"
    );
    // The diff stat names the files the change touched, debt or not: only the issues and
    // the instructions must leave the base's problems out.
    let without_changes = match prompt.split_once("What this iteration changed") {
        Some((before, after)) => {
            let rest = after.split_once("\n```\n").map_or("", |(_, r)| r);
            format!("{before}{rest}")
        }
        None => prompt.to_string(),
    };
    for word in forbidden {
        assert!(
            !without_changes.contains(word),
            "{step}: the prompt mentions `{word}`, which is not the change's:\n{prompt}"
        );
    }
}

/// The revision round in the summary's `Revision …` line, as (round, limit); None when the
/// summary has no such line (no open round).
fn revision_round(summary: &str) -> Option<(u32, Option<u32>)> {
    let line = summary
        .lines()
        .find(|l| l.starts_with("Revision") && !l.starts_with("Revision prompt"))?;
    let numbers: Vec<u32> = line
        .split(|c: char| !c.is_ascii_digit() && c != '/')
        .filter(|w| !w.is_empty())
        .find_map(|word| {
            let parts: Vec<&str> = word.split('/').collect();
            let parsed: Option<Vec<u32>> = parts.iter().map(|p| p.parse().ok()).collect();
            parsed.filter(|p| !p.is_empty())
        })
        .unwrap_or_else(|| panic!("no round number in `{line}`"));
    Some((numbers[0], numbers.get(1).copied()))
}

/// The round is `expected`, and never more than the limit it is shown against.
fn assert_round(run: &Run, expected: u32, step: &str) {
    let (round, limit) = revision_round(&run.stderr)
        .unwrap_or_else(|| panic!("{step}: no `Revision` line in:\n{}", run.stderr));
    assert_eq!(
        round, expected,
        "{step}: wrong revision round:\n{}",
        run.stderr
    );
    if let Some(limit) = limit {
        assert!(
            round <= limit,
            "{step}: round {round}/{limit} is past its limit:\n{}",
            run.stderr
        );
    }
}

/// No open revision round: either no `Revision` line, or one without a round past 0.
fn assert_no_round(run: &Run, step: &str) {
    if let Some(line) = run
        .stderr
        .lines()
        .find(|l| l.starts_with("Revision") && !l.starts_with("Revision prompt"))
    {
        assert!(
            line.contains("No open revision round"),
            "{step}: a clean iteration shows a revision round: `{line}`\n{}",
            run.stderr
        );
    }
}

fn score(record: &serde_json::Value, dimension: &str) -> f64 {
    record["scores"][dimension]
        .as_f64()
        .unwrap_or_else(|| panic!("no score `{dimension}` in {record}"))
}

pub(crate) fn has_trigger(record: &serde_json::Value, kind: &str) -> bool {
    record["triggers"]
        .as_array()
        .is_some_and(|ts| ts.iter().any(|t| t["type"] == kind))
}

// ---------------------------------------------------------------------------------------
// A Cargo crate
// ---------------------------------------------------------------------------------------

/// Fails loudly when clippy is missing: the lint scenarios cannot mean anything without it.
fn require_clippy() {
    let out = Command::new("cargo")
        .args(["clippy", "--version"])
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "these scenarios need clippy (`cargo clippy --version` failed: {}); install it with \
         `rustup component add clippy`",
        String::from_utf8_lossy(&out.stderr)
    );
}

const CARGO_TOML: &str =
    "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n";

/// The base: one failing test (`known_bug`), one clippy warning (`len_zero` in `is_blank`).
pub(crate) const LIB_BASE: &str = r#"//! A tiny calculator.

pub fn add(a: i32, b: i32) -> i32 {
    a + b
}

pub fn is_blank(items: &[i32]) -> bool {
    items.len() == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds() {
        assert_eq!(add(2, 2), 4);
    }

    #[test]
    fn known_bug() {
        assert_eq!(add(1, 1), 3, "a known bug of the base");
    }
}
"#;

const CARGO_TESTS: &str =
    "cargo test --offline --no-fail-fast --color never\n    report: { format: libtest, from: stdout }";
const CARGO_LINT: &str = "cargo clippy --offline --all-targets --message-format=json --color never\n    report: { format: cargo-json, from: stdout }";

fn cargo_config(lint_run: &str, counter: &Path) -> String {
    format!(
        "checks:\n  tests:\n    run: git rev-parse 'HEAD^{{tree}}' >> \"$COUNT_FILE\"; {CARGO_TESTS}\n    env: {{ COUNT_FILE: {} }}\n  lint:\n    run: {lint_run}\nhook:\n  base: main\n",
        counter.display()
    )
}

pub(crate) struct Crate {
    pub(crate) project: Project,
    counter: PathBuf,
}

impl Crate {
    /// A crate on `main` with `lib` as src/lib.rs, checked by cargo test and clippy, its
    /// build outputs under the test's temporary directory.
    pub(crate) fn new(lib: &str) -> Crate {
        require_clippy();
        let mut project = Project::new();
        let target = project.repo.sibling("cargo-target");
        let counter = project.repo.sibling("test-runs.txt");
        std::fs::write(&counter, "").expect("counter");
        project.set_env("CARGO_TARGET_DIR", &target);
        project.set_env("CARGO_TERM_COLOR", "never");
        project.write("Cargo.toml", CARGO_TOML);
        project.write("src/lib.rs", lib);
        project.write("README.md", "# calc\n\nTODO: document the API.\n");
        project.write(".gitignore", "/target\nCargo.lock\n");
        project.write(".itergate.yml", &cargo_config(CARGO_LINT, &counter));
        project.commit(
            &[
                "Cargo.toml",
                "src/lib.rs",
                "README.md",
                ".gitignore",
                ".itergate.yml",
            ],
            "base: a calculator with a known bug",
        );
        project.repo.git(&["checkout", "--quiet", "-b", "feature"]);
        Crate { project, counter }
    }

    fn runs(&self) -> usize {
        std::fs::read_to_string(&self.counter)
            .expect("counter")
            .lines()
            .count()
    }

    /// How many times the tests check ran on `tree`.
    fn runs_of(&self, tree: &str) -> usize {
        std::fs::read_to_string(&self.counter)
            .expect("counter")
            .lines()
            .filter(|l| l.trim() == tree)
            .count()
    }
}

/// src/lib.rs with `insert` placed after `add` (and `test` appended to the tests module).
fn lib_with(insert: &str, test: &str) -> String {
    let with_fn = LIB_BASE.replacen(
        "    a + b\n}\n",
        &format!("    a + b\n}}\n\n{}", insert.trim_end_matches('\n')),
        1,
    );
    if test.is_empty() {
        return with_fn;
    }
    with_fn.replacen(
        "    #[test]\n    fn known_bug",
        &format!("{test}\n    #[test]\n    fn known_bug"),
        1,
    )
}

/// ~300 lines of plain functions and one clippy warning (`needless_return`).
fn table_module() -> String {
    let mut text = String::from("//! Lookup rows.\n\n");
    for i in 2..60 {
        text.push_str(&format!(
            "/// Row {i}.\npub fn row_{i}(x: i64) -> i64 {{\n    x * {i} + {i}\n}}\n\n"
        ));
    }
    text.push_str(
        "/// Sums the values; nothing tests it.\npub fn untested_sum(values: &[i64]) -> i64 {\n    let mut total = 0;\n    for v in values {\n        total += v;\n    }\n    return total;\n}\n",
    );
    text
}

#[test]
fn a_cargo_crate_change_by_change() {
    let c = Crate::new(LIB_BASE);
    let p = &c.project;
    let base_bug_line = line_of(LIB_BASE, "a known bug of the base");
    let base_warning_line = line_of(LIB_BASE, "items.len() == 0");

    // 1. A call to a function that does not exist: the error is only on stderr.
    let broken = lib_with("pub fn double(x: i32) -> i32 {\n    add_twice(x)\n}\n", "");
    p.write("src/lib.rs", &broken);
    p.commit(
        &["src/lib.rs"],
        "double, calling a function that is not there",
    );
    let run = p.run();
    run.expect_decision("ITERATE", "1 (build broken)");
    let record = p.head_record();
    assert_eq!(score(&record, "tests_passing"), 0.0, "{record}");
    assert!(
        has_trigger(&record, "hallucination_detected"),
        "1: calling a function that does not exist is a hallucination: {record}"
    );
    let prompt = p.prompt("1");
    let error_at = format!("src/lib.rs:{}", line_of(&broken, "add_twice(x)"));
    assert_prompt_names(
        &prompt,
        &["rs"],
        std::slice::from_ref(&error_at),
        &["known_bug", "len_zero", "length comparison"],
        "1",
    );
    assert!(prompt.contains("add_twice"), "1: {prompt}");
    assert_round(&run, 1, "1");

    // 2. Fixed, with a test: accepted; the base's debt is shown, the prompt is gone.
    let fixed = lib_with(
        "pub fn double(x: i32) -> i32 {\n    add(x, x)\n}\n",
        "    #[test]\n    fn doubles() {\n        assert_eq!(double(3), 6);\n    }\n",
    );
    p.write("src/lib.rs", &fixed);
    p.commit(&["src/lib.rs"], "double: add the value to itself");
    let run = p.run();
    run.expect_decision("ACCEPT", "2 (fixed)");
    assert!(
        run.stderr.contains("Base: 1 failing test") && run.stderr.contains("1 lint warning"),
        "2: the summary shows the base's debt:\n{}",
        run.stderr
    );
    assert!(p.prompt_file().is_none(), "2: the stale prompt is removed");
    assert_no_round(&run, "2");
    let record = p.head_record();
    assert_eq!(score(&record, "tests_passing"), 1.0, "{record}");
    assert_eq!(score(&record, "code_quality"), 1.0, "{record}");

    // 3. ~300 new lines: an untested public function and one new clippy warning. A line
    // added at the top moves the base's warning; it stays the base's.
    let table = table_module();
    let moved = fixed.replacen(
        "//! A tiny calculator.\n",
        "//! A tiny calculator.\n\npub mod table;\n",
        1,
    );
    p.write("src/table.rs", &table);
    p.write("src/lib.rs", &moved);
    p.commit(&["src/table.rs", "src/lib.rs"], "a lookup table");
    let run = p.run();
    run.expect_decision("ITERATE", "3 (new warning)");
    let record = p.head_record();
    let quality = score(&record, "code_quality");
    assert!(
        (0.8..1.0).contains(&quality),
        "3: one warning in 300 lines: {quality}"
    );
    let prompt = p.prompt("3");
    let warning_at = format!("src/table.rs:{}", line_of(&table, "return total;"));
    let moved_base_warning = format!("src/lib.rs:{}", line_of(&moved, "items.len() == 0"));
    assert_prompt_names(
        &prompt,
        &["rs"],
        std::slice::from_ref(&warning_at),
        &[
            "known_bug",
            "len_zero",
            &moved_base_warning,
            &format!("src/lib.rs:{base_warning_line}"),
            &format!("src/lib.rs:{base_bug_line}"),
        ],
        "3",
    );
    // 5. After the accept in 2, this is a new round: round 1, never n/m with n > m.
    assert_round(&run, 1, "3");

    // 4. Back to the base's tree exactly: nothing of the change is left.
    p.repo.git(&["rm", "--quiet", "src/table.rs"]);
    p.write("src/lib.rs", LIB_BASE);
    p.commit(&["src/lib.rs"], "revert to the base");
    assert_eq!(p.tree("HEAD"), p.tree("main"), "4: the base's tree");
    let run = p.run();
    run.expect_decision("ACCEPT", "4 (reverted)");
    assert!(p.prompt_file().is_none(), "4: no prompt after an accept");
    assert_no_round(&run, "4");
    for stale in ["table.rs", "add_twice", "needless_return"] {
        assert!(
            !run.stderr.contains(stale),
            "4: stale `{stale}` in the summary:\n{}",
            run.stderr
        );
    }
    let record = p.head_record();
    assert_eq!(
        record["issues"].as_array().map_or(0, Vec::len),
        0,
        "4: {record}"
    );
}

#[test]
fn a_cargo_crate_with_a_missing_tool_records_nothing_then_rescores() {
    let c = Crate::new(LIB_BASE);
    let p = &c.project;
    // The branch changes its checks, and the person running it names the file: the
    // branch's configuration judges (without `--config`, the base's would).

    p.write(
        "src/lib.rs",
        &lib_with("pub fn triple(x: i32) -> i32 {\n    x * 3\n}\n", ""),
    );
    p.write(
        ".itergate.yml",
        &cargo_config(
            "cargo-lint-not-installed --all-targets\n    report: { format: cargo-json, from: stdout }",
            &c.counter,
        ),
    );
    let commit = p.commit(
        &["src/lib.rs", ".itergate.yml"],
        "triple; lint with a missing tool",
    );
    let notes_before = p.notes_list();
    let run = p.itergate(&["--config", ".itergate.yml", "run"]);
    eprintln!("--- missing tool:\n{}", run.stderr);
    assert_eq!(
        run.code,
        Some(3),
        "a check that cannot run:\n{}",
        run.stderr
    );
    for expected in ["lint", "cargo-lint-not-installed", "not found"] {
        assert!(
            run.stderr.contains(expected),
            "stderr names `{expected}`:\n{}",
            run.stderr
        );
    }
    let notes_after = p.notes_list();
    assert_eq!(notes_before, notes_after, "nothing was recorded");
    let tree = p.tree("HEAD");
    assert!(
        !notes_after.contains(&commit) && !notes_after.contains(&tree),
        "no note for {commit} or its tree {tree}:\n{notes_after}"
    );

    // The configuration fixed: the new tree is scored.
    p.write(".itergate.yml", &cargo_config(CARGO_LINT, &c.counter));
    p.commit(&[".itergate.yml"], "lint with clippy again");
    let before = c.runs();
    let run = p.itergate(&["--config", ".itergate.yml", "run"]);
    run.expect_decision("ACCEPT", "fixed config");
    assert!(c.runs() > before, "the tests check ran for the new tree");
    assert_eq!(score(&p.head_record(), "tests_passing"), 1.0);

    // Cached now: a plain run runs nothing; --rescore runs the checks again.
    let before = c.runs();
    let run = p.itergate(&["--config", ".itergate.yml", "run"]);
    run.expect_decision("ACCEPT", "cached");
    assert_eq!(
        c.runs(),
        before,
        "a tree already observed is not checked again"
    );
    let run = p.itergate(&["--config", ".itergate.yml", "run", "--rescore"]);
    run.expect_decision("ACCEPT", "rescore");
    assert!(
        c.runs() > before,
        "--rescore runs the checks again:\n{}",
        run.stderr
    );
}

#[test]
fn a_cargo_crate_tree_judged_against_each_base_it_sits_on() {
    let c = Crate::new(LIB_BASE);
    let p = &c.project;
    let b1 = p.repo.git(&["rev-parse", "main"]);

    // On B1 (the known bug fails there too) the branch's change is clean.
    let with_triple = lib_with(
        "pub fn triple(x: i32) -> i32 {\n    x * 3\n}\n",
        "    #[test]\n    fn triples() {\n        assert_eq!(triple(2), 6);\n    }\n",
    );
    p.write("src/lib.rs", &with_triple);
    let on_b1 = p.commit(&["src/lib.rs"], "triple");
    let run = p.run();
    run.expect_decision("ACCEPT", "on B1");
    assert!(
        run.stderr.contains("Base: 1 failing test"),
        "{}",
        run.stderr
    );

    // B2 fixes the known bug.
    p.repo.git(&["checkout", "--quiet", "main"]);
    let fixed_base = LIB_BASE.replace("assert_eq!(add(1, 1), 3,", "assert_eq!(add(1, 1), 2,");
    p.write("src/lib.rs", &fixed_base);
    p.commit(&["src/lib.rs"], "fix the known bug");

    // The branch on B2 with exactly the same tree (the rebase kept the old test).
    p.repo
        .git(&["checkout", "--quiet", "-B", "feature", "main"]);
    p.write("src/lib.rs", &with_triple);
    let on_b2 = p.commit(&["src/lib.rs"], "triple (rebased)");
    assert_eq!(p.tree(&on_b1), p.tree(&on_b2), "the same tree");
    assert_ne!(b1, p.repo.git(&["merge-base", "feature", "main"]));
    let tree = p.tree("HEAD");
    assert_eq!(c.runs_of(&tree), 1, "the tree was checked on B1");
    let run = p.run();
    run.expect_decision("ITERATE", "on B2");
    assert_eq!(c.runs_of(&tree), 1, "the tree's observation is reused");
    assert_eq!(c.runs_of(&p.tree("main")), 1, "B2 is checked once");
    let before = c.runs();
    let record = p.head_record();
    assert!(score(&record, "tests_passing") < 1.0, "{record}");
    assert_eq!(
        record["base_debt"]["failing_tests"].as_u64().unwrap_or(0),
        0,
        "{record}"
    );
    let prompt = p.prompt("on B2");
    assert_prompt_names(
        &prompt,
        &["rs"],
        &[format!(
            "src/lib.rs:{}",
            line_of(&with_triple, "a known bug of the base")
        )],
        &[],
        "on B2",
    );
    assert!(prompt.contains("known_bug"), "{prompt}");
    assert_round(&run, 1, "on B2");

    // Back on B1: the same tree is the base's debt again, not a stale failure.
    p.repo
        .git(&["checkout", "--quiet", "-B", "feature", &on_b1]);
    p.repo.git(&["branch", "--quiet", "-f", "main", &b1]);
    let run = p.run();
    run.expect_decision("ACCEPT", "back on B1");
    assert!(p.prompt_file().is_none(), "back on B1: no stale prompt");
    assert_eq!(c.runs(), before, "nothing ran: both trees are cached");
}

#[test]
fn cargo_target_dir_is_not_shared_with_a_scratch_worktree() {
    let c = Crate::new(LIB_BASE);
    let p = &c.project;
    let shared = p.repo.sibling("cargo-target");
    // The user has built the base in the work tree: the shared directory has its outputs.
    p.repo.git(&["checkout", "--quiet", "main"]);
    let built = Command::new("cargo")
        .args(["test", "--offline", "--no-run", "--color", "never"])
        .current_dir(p.path())
        .env("CARGO_TARGET_DIR", &shared)
        .output()
        .expect("cargo runs");
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    p.repo.git(&["checkout", "--quiet", "feature"]);
    let snapshot_before = tree_snapshot(&shared);

    let broken = lib_with("pub fn double(x: i32) -> i32 {\n    add_twice(x)\n}\n", "");
    p.write("src/lib.rs", &broken);
    p.commit(
        &["src/lib.rs"],
        "double, calling a function that is not there",
    );
    // A dirty work tree: HEAD and the base are both checked in scratch worktrees.
    p.write(
        "README.md",
        "# calc\n\nTODO: document the API.\nWork in progress.\n",
    );
    let run = p.run();
    assert!(
        run.stderr.contains("scratch worktree"),
        "checked in a scratch worktree:\n{}",
        run.stderr
    );
    run.expect_decision("ITERATE", "dirty HEAD");
    assert_eq!(score(&p.head_record(), "tests_passing"), 0.0);
    let prompt = p.prompt("dirty HEAD");
    assert_prompt_names(
        &prompt,
        &["rs"],
        &[format!("src/lib.rs:{}", line_of(&broken, "add_twice(x)"))],
        &["known_bug"],
        "dirty HEAD",
    );
    assert_eq!(
        snapshot_before,
        tree_snapshot(&shared),
        "the scratch worktrees wrote into the work tree's CARGO_TARGET_DIR"
    );

    // Committed (clean, checked in place with the shared directory): still failing.
    p.commit(&["README.md"], "note the work in progress");
    let run = p.run();
    // The same single error as before: the revision loop has stalled.
    run.expect_decision("ESCALATE", "clean HEAD");
    assert!(run.stderr.contains("stalled"), "{}", run.stderr);
    assert_eq!(score(&p.head_record(), "tests_passing"), 0.0);
    assert_round(&run, 2, "clean HEAD");
}

/// Every file under `dir` with its size and modification time.
fn tree_snapshot(dir: &Path) -> Vec<(PathBuf, u64, std::time::SystemTime)> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let meta = entry.metadata().expect("metadata");
            if meta.is_dir() {
                pending.push(path);
            } else {
                out.push((path, meta.len(), meta.modified().expect("mtime")));
            }
        }
    }
    out.sort();
    out
}

// ---------------------------------------------------------------------------------------
// A Python package with pytest (and ruff)
// ---------------------------------------------------------------------------------------

/// A virtual environment with pytest (and ruff when it installs), plus `helperlib`, a module
/// outside any repository standing in for a third-party dependency.
pub(crate) struct Python {
    pub(crate) python: PathBuf,
    pub(crate) ruff: Option<PathBuf>,
}

static PYTHON: OnceLock<Python> = OnceLock::new();
static VENV_DIR: OnceLock<PathBuf> = OnceLock::new();

extern "C" fn remove_venv() {
    if let Some(dir) = VENV_DIR.get() {
        let _ = std::fs::remove_dir_all(dir);
    }
}

pub(crate) fn python() -> &'static Python {
    PYTHON.get_or_init(|| {
        let dir = tempfile::Builder::new()
            .prefix("itergate-scenarios-venv")
            .tempdir()
            .expect("temporary directory")
            .keep();
        if VENV_DIR.set(dir.clone()).is_ok() {
            // Statics are never dropped: remove the environment when the test binary exits.
            unsafe {
                libc::atexit(remove_venv);
            }
        }
        let venv = dir.join("venv");
        let made = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .output()
            .expect("python3 runs (these scenarios need python3 with venv)");
        assert!(
            made.status.success(),
            "python3 -m venv failed: {}",
            String::from_utf8_lossy(&made.stderr)
        );
        let pip = |package: &str| {
            Command::new(venv.join("bin/pip"))
                .args(["install", "--quiet", package])
                .output()
                .expect("pip runs")
        };
        let pytest = pip("pytest");
        assert!(
            pytest.status.success(),
            "`pip install pytest` failed (is the package registry reachable?): {}",
            String::from_utf8_lossy(&pytest.stderr)
        );
        let ruff = pip("ruff").status.success().then(|| venv.join("bin/ruff"));
        if ruff.is_none() {
            eprintln!("ruff could not be installed: the Python scenarios run without lint");
        }
        // A module outside the repository, importable from the venv like an installed one.
        let lib = dir.join("thirdparty");
        std::fs::create_dir_all(&lib).expect("mkdir");
        std::fs::write(
            lib.join("helperlib.py"),
            "def parse_positive(text):\n    value = int(text)\n    if value <= 0:\n        raise ValueError(f\"not positive: {value}\")\n    return value\n",
        )
        .expect("write helperlib");
        let site = Command::new(venv.join("bin/python"))
            .args(["-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
            .output()
            .expect("venv python runs");
        let site = PathBuf::from(String::from_utf8_lossy(&site.stdout).trim());
        std::fs::write(site.join("thirdparty.pth"), format!("{}\n", lib.display()))
            .expect("write .pth");
        Python {
            python: venv.join("bin/python"),
            ruff,
        }
    })
}

/// The base: `import os` unused (a ruff finding), one failing test, a TODO in docs/.
const CORE_BASE: &str =
    "import os\n\n\ndef add(a, b):\n    return a + b\n\n\ndef divide(a, b):\n    return a / b\n";
const TEST_CORE: &str = "from calc.core import add\n\n\ndef test_add():\n    assert add(2, 2) == 4\n\n\ndef test_known_bug():\n    assert add(1, 1) == 3\n";

fn python_project(py: &Python) -> Project {
    let p = Project::new();
    let mut config = format!(
        "checks:\n  tests:\n    run: {} -m pytest -p no:cacheprovider -q --junitxml=out/junit.xml\n    report: {{ format: junit, path: out/junit.xml }}\n",
        py.python.display()
    );
    if let Some(ruff) = &py.ruff {
        config.push_str(&format!(
            "  lint:\n    run: {} check --no-cache --output-format=json .\n    report: {{ format: ruff-json, from: stdout }}\n",
            ruff.display()
        ));
    }
    config.push_str("hook:\n  base: main\n");
    p.write(".itergate.yml", &config);
    p.write(".gitignore", "out/\n__pycache__/\n");
    p.write("calc/__init__.py", "");
    p.write("calc/core.py", CORE_BASE);
    p.write("tests/test_core.py", TEST_CORE);
    p.write("docs/guide.md", "# Guide\n\nTODO: write the guide.\n");
    p.commit(
        &[
            ".itergate.yml",
            ".gitignore",
            "calc/__init__.py",
            "calc/core.py",
            "tests/test_core.py",
            "docs/guide.md",
        ],
        "base: a calculator with a known bug",
    );
    p.repo.git(&["checkout", "--quiet", "-b", "feature"]);
    p
}

#[test]
fn a_python_package_with_pytest() {
    let py = python();
    let p = python_project(py);
    // The base's ruff finding moves down a line on the branch: still the base's.
    let core = format!("\"\"\"A tiny calculator.\"\"\"\n{CORE_BASE}");
    let not_ours: &[&str] = &[
        "test_known_bug",
        "calc/core.py",
        "F401",
        "_strptime",
        "helperlib.py",
        "/usr/lib",
        "site-packages",
    ];

    // 1. Tests failing inside code that is not the repository's: the standard library and
    // an installed module. The issue is where the test called it.
    let test_parse = "import datetime\n\nimport helperlib\n\n\ndef test_parses_a_date():\n    assert datetime.datetime.strptime(\"2024-13-01\", \"%Y-%m-%d\").year == 2024\n\n\ndef test_parses_a_positive_number():\n    assert helperlib.parse_positive(\"-3\") == 3\n";
    p.write("calc/core.py", &core);
    p.write("tests/test_parse.py", test_parse);
    p.commit(
        &["calc/core.py", "tests/test_parse.py"],
        "parse dates and numbers",
    );
    let run = p.run();
    run.expect_decision("ITERATE", "1 (failing in dependencies)");
    let prompt = p.prompt("1");
    assert_prompt_names(
        &prompt,
        &["py"],
        &[
            format!("tests/test_parse.py:{}", line_of(test_parse, "strptime(")),
            format!(
                "tests/test_parse.py:{}",
                line_of(test_parse, "parse_positive(")
            ),
        ],
        not_ours,
        "1",
    );
    assert_round(&run, 1, "1");

    // 2. The tests fixed, a new test module that cannot be imported.
    let test_parse_fixed = test_parse
        .replace("2024-13-01", "2024-12-01")
        .replace("parse_positive(\"-3\")", "parse_positive(\"3\")");
    let test_more = "from calc.core import multiply\n\n\ndef test_multiply():\n    assert multiply(2, 3) == 6\n";
    p.write("tests/test_parse.py", &test_parse_fixed);
    p.write("tests/test_more.py", test_more);
    p.commit(
        &["tests/test_parse.py", "tests/test_more.py"],
        "test multiply",
    );
    let run = p.run();
    run.expect_decision("ITERATE", "2 (collection error)");
    let record = p.head_record();
    assert!(score(&record, "tests_passing") < 1.0, "{record}");
    let prompt = p.prompt("2");
    assert_prompt_names(
        &prompt,
        &["py"],
        &[format!(
            "tests/test_more.py:{}",
            line_of(test_more, "import multiply")
        )],
        // The ImportError's own text names calc/core.py (what the import looked in): only
        // the other files must stay out.
        &not_ours
            .iter()
            .copied()
            .filter(|w| !w.contains("core.py"))
            .collect::<Vec<_>>(),
        "2",
    );
    assert!(
        prompt.contains("cannot import name"),
        "2: what failed to import is said:\n{prompt}"
    );
    assert_round(&run, 2, "2");

    // 3. multiply written: accepted, the base's debt shown and not counted.
    p.write(
        "calc/core.py",
        &format!("{core}\n\ndef multiply(a, b):\n    return a * b\n"),
    );
    p.commit(&["calc/core.py"], "multiply");
    let run = p.run();
    run.expect_decision("ACCEPT", "3 (fixed)");
    assert!(
        run.stderr.contains("Base: 1 failing test"),
        "3: the base's debt is shown:\n{}",
        run.stderr
    );
    if py.ruff.is_some() {
        assert!(
            run.stderr.contains(", 1 lint "),
            "3: the base's ruff finding is debt:\n{}",
            run.stderr
        );
        assert_eq!(score(&p.head_record(), "code_quality"), 1.0);
    }
    assert!(p.prompt_file().is_none(), "3: the stale prompt is removed");
    assert_no_round(&run, "3");
    assert_eq!(score(&p.head_record(), "tests_passing"), 1.0);
}

#[test]
fn a_pytest_collection_error_says_what_failed_to_import() {
    let p = python_project(python());
    let test_more = "from calc.core import multiply\n\n\ndef test_multiply():\n    assert multiply(2, 3) == 6\n";
    p.write("tests/test_more.py", test_more);
    p.commit(&["tests/test_more.py"], "test multiply");
    p.run().expect_decision("ITERATE", "collection error");
    let prompt = p.prompt("collection error");
    assert!(
        prompt.contains("tests/test_more.py:1"),
        "the import's place: {prompt}"
    );
    assert!(
        prompt.contains("cannot import name 'multiply'")
            || prompt.contains("cannot import name ''multiply''"),
        "the prompt says what could not be imported:\n{prompt}"
    );
}

#[test]
fn the_prompt_header_names_the_branch_iteration() {
    let p = python_project(python());
    let test_sub =
        "from calc.core import add\n\n\ndef test_add_negative():\n    assert add(2, -2) == 0\n";
    p.write("tests/test_sub.py", test_sub);
    p.commit(&["tests/test_sub.py"], "a passing test");
    p.run().expect_decision("ACCEPT", "1 (clean)");
    p.write("tests/test_sub.py", &test_sub.replace("== 0", "== 1"));
    p.commit(&["tests/test_sub.py"], "a failing test");
    let run = p.run();
    run.expect_decision("ITERATE", "2 (failing)");
    assert!(
        run.stderr.contains("iteration 2/"),
        "the summary: iteration 2:\n{}",
        run.stderr
    );
    assert_round(&run, 1, "2 (failing)");
    let prompt = p.prompt("2 (failing)");
    let header = prompt.lines().next().unwrap_or_default();
    assert!(
        !header.contains("iteration 1"),
        "the header contradicts the summary (iteration 2 of the branch): `{header}`"
    );
}

#[test]
fn the_revision_round_never_reads_past_its_limit() {
    let p = python_project(python());
    let tests: String = (0..4)
        .map(|i| format!("def test_{i}():\n    assert value({i}) == {i}\n\n\n"))
        .collect();
    p.write(
        "tests/test_rounds.py",
        &format!("from calc.rounds import value\n\n\n{tests}"),
    );
    // The code is off by one below `n`: fixing it fixes the tests, which stay as they are.
    let failing = |n: usize| format!("def value(i):\n    return i + 1 if i < {n} else i\n");
    // Four rounds in a row, each with one failure fewer (never stalled): the fourth is past
    // the limit of three.
    for (round, failures) in [(1, 4), (2, 3), (3, 2), (4, 1)] {
        p.write("calc/rounds.py", &failing(failures));
        p.commit(
            &["tests/test_rounds.py", "calc/rounds.py"],
            &format!("{failures} failing"),
        );
        let run = p.run();
        let step = format!("round {round}");
        let expected = if round <= 3 { "ITERATE" } else { "ESCALATE" };
        run.expect_decision(expected, &step);
        let line = run
            .stderr
            .lines()
            .find(|l| l.starts_with("Revision") && !l.starts_with("Revision prompt"))
            .unwrap_or_else(|| panic!("{step}: no `Revision` line:\n{}", run.stderr));
        if round <= 3 {
            assert_round(&run, round, &step);
        } else {
            assert!(
                !line.contains("4/3") && line.contains("limit"),
                "{step}: `{line}`"
            );
        }
    }
}
