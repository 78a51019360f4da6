//! Diagnostics from failing checks' text output, against real tool output (see
//! tests/fixtures/diagnostics/VERSIONS.md): exact places and messages, details as printed,
//! warnings dropped, bounded output, and no panic on any input.

use std::path::Path;

use itergate::signals::diagnostics::{
    parse, Diagnostic, Parser, DETAIL_CAP_BYTES, MAX_DIAGNOSTICS, MAX_FRAMES,
};
use proptest::prelude::*;

fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/diagnostics")
        .join(name);
    match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) => panic!("cannot read {}: {e}", path.display()),
    }
}

type Summary<'a> = (
    &'a str,
    Option<&'a str>,
    &'a str,
    Option<&'a str>,
    Option<u32>,
    Option<u32>,
);

fn summary(d: &Diagnostic) -> Summary<'_> {
    (
        d.tool.as_str(),
        d.code.as_deref(),
        d.message.as_str(),
        d.file.as_deref(),
        d.line,
        d.column,
    )
}

fn summaries(found: &[Diagnostic]) -> Vec<Summary<'_>> {
    found.iter().map(summary).collect()
}

fn assert_detail_has(d: &Diagnostic, needle: &str) {
    assert!(
        d.detail.contains(needle),
        "`{needle}` not in detail:\n{}",
        d.detail
    );
}

fn assert_detail_lacks(d: &Diagnostic, needle: &str) {
    assert!(
        !d.detail.contains(needle),
        "`{needle}` should not be in detail:\n{}",
        d.detail
    );
}

fn frames(d: &Diagnostic) -> Vec<(&str, u32)> {
    d.frames.iter().map(|(f, l)| (f.as_str(), *l)).collect()
}

// ---------------------------------------------------------------- rustc

#[test]
fn cargo_test_whose_test_build_fails() {
    let found = parse(&fixture("cargo-test-build-failure.txt"));
    assert_eq!(
        summaries(&found),
        [
            (
                "rustc",
                Some("E0425"),
                "cannot find value `total` in this scope",
                Some("src/lib.rs"),
                Some(12),
                Some(31)
            ),
            (
                "rustc",
                Some("E0308"),
                "mismatched types",
                Some("src/lib.rs"),
                Some(17),
                Some(25)
            ),
        ]
    );
    let [e0425, e0308] = &found[..] else {
        panic!("{found:?}")
    };
    assert!(e0425.detail.starts_with(
        "error[E0425]: cannot find value `total` in this scope\n  --> src/lib.rs:12:31\n"
    ));
    assert!(e0425
        .detail
        .ends_with("   |                               ^^^^^ not found in this scope"));
    assert_detail_lacks(e0425, "E0308");
    // `help:` follows a `|` line, not a blank one: still the same block.
    assert_detail_has(e0308, "  --> src/lib.rs:17:25");
    assert_detail_has(e0308, "\nhelp: try using a conversion method\n");
    assert!(e0308.detail.ends_with("++++++++++++"), "{}", e0308.detail);
    assert_detail_lacks(e0308, "Some errors have detailed explanations");
    assert!(found.iter().all(|d| d.frames.is_empty()));
}

#[test]
fn cargo_colours_are_ignored_for_matching_and_kept_in_the_detail() {
    let plain = parse(&fixture("cargo-test-build-failure.txt"));
    let colour = parse(&fixture("cargo-test-color.txt"));
    assert_eq!(summaries(&colour), summaries(&plain));
    assert!(colour[0]
        .detail
        .starts_with("\u{1b}[1m\u{1b}[91merror[E0425]\u{1b}[0m"));
    assert_detail_has(
        &colour[0],
        "\u{1b}[1m\u{1b}[94m--> \u{1b}[0msrc/lib.rs:12:31",
    );
}

#[test]
fn rustc_errors_without_a_code_and_the_aborting_summary() {
    let found = parse(&fixture("rustc-syntax.txt"));
    assert_eq!(
        summaries(&found),
        [
            (
                "rustc",
                None,
                "expected `;`, found `println`",
                Some("main.rs"),
                Some(2),
                Some(14)
            ),
            (
                "rustc",
                Some("E0308"),
                "mismatched types",
                Some("main.rs"),
                Some(7),
                Some(5)
            ),
        ]
    );
    assert_detail_has(&found[0], " --> main.rs:2:14\n");
    assert_detail_has(&found[0], "  |     ------- unexpected token");
    assert_detail_lacks(&found[1], "aborting");
}

#[test]
fn a_block_ends_at_a_blank_line_then_an_unindented_line_or_a_cargo_status() {
    let text = "error[E0432]: unresolved import `foo`\n --> src/a.rs:1:5\n  |\n\n  = note: kept\n\nnot kept\nerror: no place here\n\n   Compiling other v0.1.0\n";
    let found = parse(text);
    assert_eq!(
        summaries(&found),
        [
            (
                "rustc",
                Some("E0432"),
                "unresolved import `foo`",
                Some("src/a.rs"),
                Some(1),
                Some(5)
            ),
            ("rustc", None, "no place here", None, None, None),
        ]
    );
    assert_eq!(
        found[0].detail,
        "error[E0432]: unresolved import `foo`\n --> src/a.rs:1:5\n  |\n\n  = note: kept"
    );
    assert_eq!(found[1].detail, "error: no place here");
}

// ---------------------------------------------------------------- gcc

#[test]
fn gcc_undeclared_identifiers_with_their_notes_and_without_the_warning() {
    let found = parse(&fixture("gcc-undeclared.txt"));
    assert_eq!(
        summaries(&found),
        [
            (
                "gcc",
                None,
                "‘x’ undeclared (first use in this function)",
                Some("src/main.c"),
                Some(9),
                Some(26)
            ),
            (
                "gcc",
                None,
                "‘count’ undeclared (first use in this function)",
                Some("src/main.c"),
                Some(10),
                Some(12)
            ),
        ]
    );
    assert_detail_has(
        &found[0],
        "    9 |     printf(\"%d\\n\", twice(x));\n      |                          ^\n",
    );
    assert_detail_has(
        &found[0],
        "src/main.c:9:26: note: each undeclared identifier",
    );
    assert_detail_lacks(&found[0], "In function");
    assert_detail_lacks(&found[1], "unused");
}

#[test]
fn gcc_fatal_error() {
    let found = parse(&fixture("gcc-fatal.txt"));
    assert_eq!(
        summaries(&found),
        [(
            "gcc",
            None,
            "missing.h: No such file or directory",
            Some("src/inc.c"),
            Some(1),
            Some(10)
        )]
    );
    assert_detail_has(&found[0], "    1 | #include \"missing.h\"\n");
    assert_detail_lacks(&found[0], "compilation terminated");
}

// ---------------------------------------------------------------- tsc

fn tsc_expected() -> Vec<Summary<'static>> {
    vec![
        (
            "tsc",
            Some("TS2552"),
            "Cannot find name 'nam'. Did you mean 'name'?",
            Some("src/a.ts"),
            Some(2),
            Some(21),
        ),
        (
            "tsc",
            Some("TS2322"),
            "Type 'string' is not assignable to type 'number'.",
            Some("src/a.ts"),
            Some(5),
            Some(7),
        ),
    ]
}

#[test]
fn tsc_plain() {
    let found = parse(&fixture("tsc-plain.txt"));
    assert_eq!(summaries(&found), tsc_expected());
    assert_eq!(
        found[0].detail,
        "src/a.ts(2,21): error TS2552: Cannot find name 'nam'. Did you mean 'name'?"
    );
}

#[test]
fn tsc_pretty_keeps_the_snippet_and_related_places() {
    for name in ["tsc-pretty.txt", "tsc7-pretty.txt"] {
        let found = parse(&fixture(name));
        assert_eq!(summaries(&found), tsc_expected(), "{name}");
        assert_detail_has(
            &found[0],
            "\u{1b}[7m2\u{1b}[0m   return \"hello \" + nam;\n",
        );
        assert_detail_has(&found[0], "'name' is declared here.");
        assert_detail_lacks(&found[0], "TS2322");
        assert_detail_lacks(&found[1], "Found 2 errors");
        assert!(found[1].detail.ends_with("~~~~~\u{1b}[0m"), "{name}");
    }
}

#[test]
fn tsc_error_without_a_place() {
    let found = parse("error TS18003: No inputs were found in config file 'tsconfig.json'.\n");
    assert_eq!(
        summaries(&found),
        [(
            "tsc",
            Some("TS18003"),
            "No inputs were found in config file 'tsconfig.json'.",
            None,
            None,
            None
        )]
    );
}

// ---------------------------------------------------------------- go

#[test]
fn go_build_under_package_headers() {
    let found = parse(&fixture("go-build.txt"));
    let go =
        |message, file, line, column| ("go", None, message, Some(file), Some(line), Some(column));
    assert_eq!(
        summaries(&found),
        [
            go("undefined: y", "util/util.go", 4, 13),
            go("imported and not used: \"os\"", "./main.go", 5, 2),
            go("undefined: foo", "./main.go", 9, 14),
            go(
                "cannot use \"five\" (untyped string constant) as int value in variable declaration",
                "./main.go",
                10,
                14
            ),
        ]
    );
    assert_eq!(found[2].detail, "./main.go:9:14: undefined: foo");
}

#[test]
fn go_vet_type_errors() {
    let found = parse(&fixture("go-vet.txt"));
    assert_eq!(
        summaries(&found),
        [
            (
                "go",
                None,
                "undeclared name: y",
                Some("util/util.go"),
                Some(4),
                Some(13)
            ),
            (
                "go",
                None,
                "undeclared name: foo",
                Some("./main.go"),
                Some(9),
                Some(14)
            ),
        ]
    );
    assert_eq!(
        found[0].detail,
        "vet: util/util.go:4:13: undeclared name: y"
    );
}

// ---------------------------------------------------------------- python

#[test]
fn python_traceback_into_a_dependency() {
    let text = fixture("python-traceback.txt");
    let found = parse(&text);
    let site = "/tmp/diag-venv/lib/python3.11/site-packages/packaging/version.py";
    assert_eq!(
        summaries(&found),
        [(
            "python",
            None,
            "packaging.version.InvalidVersion: Invalid version: 'release-candidate'",
            Some(site),
            Some(466),
            None
        )]
    );
    let app = "/tmp/diagfx/py/app.py";
    assert_eq!(
        frames(&found[0]),
        [(app, 14), (app, 10), (app, 5), (site, 466)]
    );
    let d = &found[0];
    assert!(d.detail.starts_with("Traceback (most recent call last):\n  File \"/tmp/diagfx/py/app.py\", line 14, in <module>\n"));
    assert!(d
        .detail
        .ends_with("\npackaging.version.InvalidVersion: Invalid version: 'release-candidate'"));
    assert_detail_lacks(d, "1.2.3");
}

#[test]
fn python_name_error_and_syntax_error_without_a_traceback_header() {
    let found = parse(&fixture("python-nameerror.txt"));
    let name = "/tmp/diagfx/py/name.py";
    assert_eq!(
        summaries(&found),
        [(
            "python",
            None,
            "NameError: name 'offset' is not defined",
            Some(name),
            Some(2),
            None
        )]
    );
    assert_eq!(frames(&found[0]), [(name, 5), (name, 2)]);

    let found = parse(&fixture("python-syntax-error.txt"));
    let bad = "/tmp/diagfx/py/bad.py";
    assert_eq!(
        summaries(&found),
        [(
            "python",
            None,
            "SyntaxError: invalid syntax",
            Some(bad),
            Some(1),
            None
        )]
    );
    assert_eq!(frames(&found[0]), [(bad, 1)]);
    assert_eq!(
        found[0].detail,
        fixture("python-syntax-error.txt").trim_end()
    );
}

// ---------------------------------------------------------------- pytest

#[test]
fn pytest_collection_errors() {
    let found = parse(&fixture("pytest-collection-error.txt"));
    assert_eq!(
        summaries(&found),
        [
            (
                "pytest",
                None,
                "ImportError: cannot import name 'missing_name' from 'helpers' (/tmp/diagfx/pt/helpers.py)",
                Some("tests/test_ok.py"),
                Some(1),
                None
            ),
            (
                "pytest",
                None,
                "ModuleNotFoundError: No module named 'foo'",
                Some("tests/test_x.py"),
                Some(3),
                None
            ),
        ]
    );
    let importlib = "/root/.pyenv/versions/3.11.7/lib/python3.11/importlib/__init__.py";
    assert_eq!(
        frames(&found[1]),
        [(importlib, 126), ("tests/test_x.py", 3)]
    );
    assert!(found[1]
        .detail
        .starts_with("_______________________ ERROR collecting tests/test_x.py"));
    assert!(found[1]
        .detail
        .ends_with("tests/test_x.py:3: in <module>\n    import foo\nE   ModuleNotFoundError: No module named 'foo'"));
    assert_detail_lacks(&found[0], "test_x");
}

#[test]
fn pytest_collection_syntax_error_points_at_the_test_file() {
    let found = parse(&fixture("pytest-collection-syntax-error.txt"));
    let test = "/tmp/diagfx/pt2/tests/test_syntax.py";
    assert_eq!(
        summaries(&found),
        [(
            "pytest",
            None,
            "SyntaxError: invalid syntax",
            Some(test),
            Some(1),
            None
        )]
    );
    let all = frames(&found[0]);
    assert_eq!(all.len(), 11);
    assert_eq!(
        all[0],
        (
            "/tmp/diag-venv/lib/python3.11/site-packages/_pytest/python.py",
            528
        )
    );
    assert_eq!(all[3], ("<frozen importlib._bootstrap>", 1204));
    assert_eq!(all[10], (test, 1));
    assert_detail_has(&found[0], "E       def test_a(:\n");
}

// ---------------------------------------------------------------- general rules

const FIXTURES: &[&str] = &[
    "cargo-test-build-failure.txt",
    "cargo-test-color.txt",
    "rustc-syntax.txt",
    "gcc-undeclared.txt",
    "gcc-fatal.txt",
    "tsc-plain.txt",
    "tsc-pretty.txt",
    "tsc7-pretty.txt",
    "go-build.txt",
    "go-vet.txt",
    "python-traceback.txt",
    "python-nameerror.txt",
    "python-syntax-error.txt",
    "pytest-collection-error.txt",
    "pytest-collection-syntax-error.txt",
];

#[test]
fn every_detail_is_a_verbatim_slice_of_the_output() {
    for name in FIXTURES {
        let text = fixture(name);
        let found = parse(&text);
        assert!(!found.is_empty(), "{name}");
        for d in &found {
            assert!(text.contains(&d.detail), "{name}: {}", d.detail);
            assert!(!d.detail.ends_with('\n'), "{name}");
        }
    }
}

#[test]
fn crlf_output_gives_the_same_diagnostics() {
    for name in FIXTURES {
        let text = fixture(name);
        let crlf = text.replace('\n', "\r\n");
        assert_eq!(summaries(&parse(&crlf)), summaries(&parse(&text)), "{name}");
    }
}

#[test]
fn concatenated_outputs_give_each_ones_diagnostics_in_order() {
    let names = [
        "cargo-test-build-failure.txt",
        "gcc-undeclared.txt",
        "go-build.txt",
        "python-traceback.txt",
        "tsc-pretty.txt",
        "pytest-collection-error.txt",
        "go-vet.txt",
        "rustc-syntax.txt",
    ];
    let mut joined = String::new();
    let mut expected = Vec::new();
    for name in names {
        let text = fixture(name);
        expected.extend(parse(&text));
        if !joined.is_empty() && !joined.ends_with('\n') {
            joined.push('\n');
        }
        joined.push_str(&text);
    }
    assert_eq!(parse(&joined), expected);
}

#[test]
fn output_without_errors_gives_nothing() {
    let passing = "   Compiling demo v0.1.0 (/tmp/demo)\n    Finished `test` profile [unoptimized + debuginfo] target(s) in 0.5s\n     Running unittests src/lib.rs\n\nrunning 1 test\ntest tests::adds ... ok\n\ntest result: ok. 1 passed; 0 failed\n";
    assert_eq!(parse(passing), []);
    assert_eq!(parse(""), []);
    assert_eq!(parse("\n\n   \n"), []);
    let pytest_ok = "============ test session starts ============\ncollected 2 items\n\ntests/test_a.py ..                 [100%]\n\n============ 2 passed in 0.01s ============\n";
    assert_eq!(parse(pytest_ok), []);
}

#[test]
fn warnings_and_notes_are_dropped() {
    let text = "warning: unused variable: `x`\n --> src/lib.rs:2:9\n  |\n2 |     let x = 3;\n  |         ^\n\nwarning: `demo` (lib) generated 1 warning\nsrc/a.c:8:9: warning: unused variable ‘u’ [-Wunused-variable]\n    8 |     int u;\n      |         ^\nsrc/a.c:9:1: note: declared here\nerror: could not compile `demo` (lib) due to 1 previous error\n";
    assert_eq!(parse(text), []);
    // The cargo fixture's warning comes first and is not reported.
    let found = parse(&fixture("cargo-test-build-failure.txt"));
    assert!(found.iter().all(|d| !d.detail.contains("unused")));
}

#[test]
fn repeated_errors_are_reported_once() {
    let once = fixture("rustc-syntax.txt");
    let found = parse(&format!("{once}{once}"));
    assert_eq!(summaries(&found), summaries(&parse(&once)));
}

#[test]
fn a_megabyte_of_errors_stops_at_the_limit() {
    let mut text = String::new();
    let mut n = 0;
    while text.len() < 1024 * 1024 {
        text.push_str(&format!(
            "error[E0425]: cannot find value `v{n}` in this scope\n  --> src/lib.rs:{n}:5\n   |\n\n"
        ));
        n += 1;
    }
    let found = parse(&text);
    assert_eq!(found.len(), MAX_DIAGNOSTICS);
    assert_eq!(found[49].line, Some(49));

    let mut parser = Parser::default();
    for line in text.lines() {
        parser.push_line(line);
    }
    assert!(parser.is_full());
    assert_eq!(parser.finish(), found);
}

#[test]
fn a_huge_traceback_keeps_its_head_tail_and_bounded_frames() {
    let mut text = String::from("Traceback (most recent call last):\n");
    for depth in 1..=5_000 {
        text.push_str(&format!(
            "  File \"/app/deep.py\", line {depth}, in recurse\n    recurse(n - 1)\n"
        ));
    }
    text.push_str("RecursionError: maximum recursion depth exceeded ✓\n");
    let found = parse(&text);
    let [d] = &found[..] else { panic!("{found:?}") };
    assert_eq!(
        d.message,
        "RecursionError: maximum recursion depth exceeded ✓"
    );
    assert_eq!(
        (d.file.as_deref(), d.line),
        (Some("/app/deep.py"), Some(5_000))
    );
    assert!(d.detail.len() <= DETAIL_CAP_BYTES, "{}", d.detail.len());
    assert!(d.detail.starts_with(
        "Traceback (most recent call last):\n  File \"/app/deep.py\", line 1, in recurse\n"
    ));
    assert!(d
        .detail
        .ends_with("\nRecursionError: maximum recursion depth exceeded ✓"));
    assert!(d.detail.contains(" bytes cut ...]"));
    assert_eq!(d.frames.len(), MAX_FRAMES);
    assert_eq!(d.frames[0], ("/app/deep.py".to_string(), 1));
    assert_eq!(
        d.frames[MAX_FRAMES - 1],
        ("/app/deep.py".to_string(), 5_000)
    );
}

#[test]
fn a_huge_single_line_message_is_capped() {
    let long = "é".repeat(3 * DETAIL_CAP_BYTES);
    let found = parse(&format!("src/a.c:1:2: error: {long}\n"));
    assert_eq!(found.len(), 1);
    assert!(found[0].message.len() <= DETAIL_CAP_BYTES);
    assert!(found[0].detail.len() <= DETAIL_CAP_BYTES);
    assert!(found[0].detail.ends_with('é'));
}

#[test]
fn diagnostics_round_trip_through_json() {
    let found = parse(&fixture("python-traceback.txt"));
    let json = serde_json::to_string(&found).unwrap_or_default();
    let back: Vec<Diagnostic> = serde_json::from_str(&json).unwrap_or_default();
    assert_eq!(back, found);
}

// ---------------------------------------------------------------- never panic

fn check_bounds(found: &[Diagnostic]) {
    assert!(found.len() <= MAX_DIAGNOSTICS);
    for d in found {
        assert!(d.detail.len() <= DETAIL_CAP_BYTES);
        assert!(d.frames.len() <= MAX_FRAMES);
    }
}

/// Pieces of the lines the parser looks for, glued together at random.
const SHAPES: &[&str] = &[
    "error",
    "[E0425]",
    ": ",
    "warning",
    "-->",
    " src/a.rs:1:2",
    "  ",
    "\t",
    "|",
    "Traceback (most recent call last):",
    "  File \"a.py\", line ",
    "12",
    "4294967296",
    ", in f",
    "____ ERROR collecting t.py ____",
    "E   ",
    "E     File \"b.py\", line 3",
    "ValueError: x",
    "a.c:3:4: ",
    "fatal error: ",
    "note: ",
    "m.go:1:2: ",
    "vet: ",
    "a.ts(1,2): error TS2304: ",
    "a.ts:1:2 - error TS2304: ",
    "error TS1: ",
    ": in <module>",
    "   Compiling x",
    "\u{1b}[1m",
    "\u{1b}]8;;http://x\u{7}",
    "\u{1b}",
    "é",
    "\r",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_text_never_panics(text in any::<String>()) {
        check_bounds(&parse(&text));
    }

    #[test]
    fn lines_made_of_diagnostic_shapes_never_panic(
        lines in proptest::collection::vec(
            proptest::collection::vec((prop::sample::select(SHAPES), "[^\n]{0,4}"), 0..4),
            0..32,
        )
    ) {
        let text: Vec<String> = lines
            .iter()
            .map(|parts| parts.iter().map(|(shape, noise)| format!("{shape}{noise}")).collect())
            .collect();
        check_bounds(&parse(&text.join("\n")));
    }

    #[test]
    fn truncated_and_mutated_fixtures_never_panic(
        which in 0..FIXTURES.len(),
        cut in any::<prop::sample::Index>(),
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
    ) {
        let mut bytes = fixture(FIXTURES[which]).into_bytes();
        let len = cut.index(bytes.len().max(1));
        bytes.truncate(len);
        for (at, value) in flips {
            if !bytes.is_empty() {
                let i = at.index(bytes.len());
                bytes[i] = value;
            }
        }
        check_bounds(&parse(&String::from_utf8_lossy(&bytes)));
    }
}

#[test]
fn blank_lines_inside_a_block_are_kept_as_printed_and_trailing_ones_dropped() {
    let text = "Traceback (most recent call last):\n  File \"a.py\", line 1, in <module>\n   \n\u{1b}[0m\n    f()\nValueError: bad\n";
    let found = parse(text);
    assert_eq!(found[0].detail, text.trim_end());
    let text = "error: one\n  |\n \t\n\n\nnext\n";
    assert_eq!(parse(text)[0].detail, "error: one\n  |");
}

/// Node's load-time syntax error (ESM and CommonJS, as node 20 prints it): one error at
/// the script's line, named by its kind; Node's own stack frames are not places.
#[test]
fn node_syntax_errors_in_esm_and_commonjs() {
    for (name, file) in [
        ("node-esm-syntax-error.txt", "/tmp/nodesyn/math.mjs"),
        ("node-cjs-syntax-error.txt", "/tmp/nodesyn/math.cjs"),
    ] {
        let found = parse(&fixture(name));
        assert_eq!(
            summaries(&found),
            vec![(
                "node",
                Some("SyntaxError"),
                "SyntaxError: Unexpected token ';'",
                Some(file),
                Some(2),
                None
            )],
            "{name}"
        );
        assert_detail_has(&found[0], "return a +;");
    }
    // A path and line that no error follows is not a diagnostic.
    assert!(parse("/abs/lib/x.js:3\nsome output\nmore\n").is_empty());
}

/// javac as Maven 3.8 prints it (each error twice: in the compiler's section and in the
/// build's summary) and as javac 17 prints it alone: one error per place, the detail lines
/// kept, and "cannot find symbol" and a missing package are names that do not exist.
#[test]
fn javac_errors_from_maven_and_plain() {
    let found = parse(&fixture("maven-javac-error.txt"));
    assert_eq!(
        summaries(&found),
        vec![
            (
                "javac",
                None,
                "package org.nowhere does not exist",
                Some("/tmp/mvnt/src/main/java/ex/Calc.java"),
                Some(3),
                Some(19)
            ),
            (
                "javac",
                None,
                "cannot find symbol",
                Some("/tmp/mvnt/src/main/java/ex/Calc.java"),
                Some(7),
                Some(16)
            ),
        ]
    );
    assert_detail_has(&found[1], "symbol:   method multiply(int,int)");
    let found = parse(&fixture("javac-plain.txt"));
    assert_eq!(
        summaries(&found),
        vec![
            (
                "javac",
                None,
                "package org.nowhere does not exist",
                Some("Calc.java"),
                Some(3),
                None
            ),
            (
                "javac",
                None,
                "cannot find symbol",
                Some("Calc.java"),
                Some(7),
                None
            ),
        ]
    );
    assert_detail_has(&found[1], "location: class Calc");
    for d in &found {
        assert_eq!(
            itergate::signals::classify::diagnostic_trigger(d),
            Some(itergate::model::TriggerType::HallucinationDetected),
            "{d:?}"
        );
    }
    // kotlinc under Gradle, both of its forms; warnings are dropped.
    let kotlin = "w: file:///p/src/main/kotlin/A.kt:2:5 Variable 'x' is never used\ne: file:///p/src/main/kotlin/A.kt:7:16 Unresolved reference 'multiply'.\ne: /p/src/main/kotlin/B.kt: (3, 1): Expecting a top level declaration\n";
    assert_eq!(
        summaries(&parse(kotlin)),
        vec![
            (
                "kotlinc",
                None,
                "Unresolved reference 'multiply'.",
                Some("/p/src/main/kotlin/A.kt"),
                Some(7),
                Some(16)
            ),
            (
                "kotlinc",
                None,
                "Expecting a top level declaration",
                Some("/p/src/main/kotlin/B.kt"),
                Some(3),
                Some(1)
            ),
        ]
    );
}
