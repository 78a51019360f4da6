//! Coverage, lint and complexity formats.

use std::io::Cursor;

use itergate::signals::report::{
    parse, parse_file, LintFinding, LintLevel, ParseOptions, Report, ReportFormat,
};

use super::*;

// ---------------------------------------------------------------- coverage

fn keep_ops(file: &str) -> bool {
    file == "calc/ops.py"
}

#[test]
fn lcov_from_coverage_py() {
    let c = coverage(
        ReportFormat::Lcov,
        "lcov/coverage-py.lcov",
        &ParseOptions::default(),
    );
    assert_eq!((c.lines_found, c.lines_hit), (40, 33));
    assert_eq!(c.line_rate(), Some(33.0 / 40.0));
    assert!(c.files.is_empty(), "no filter keeps no lines");

    let opts = ParseOptions {
        keep_lines_for: Some(&keep_ops),
    };
    let c = coverage(ReportFormat::Lcov, "lcov/coverage-py.lcov", &opts);
    assert_eq!((c.lines_found, c.lines_hit), (40, 33));
    assert_eq!(c.files.keys().collect::<Vec<_>>(), ["calc/ops.py"]);
    let ops = &c.files["calc/ops.py"];
    assert_eq!(ops.lines.len(), 16);
    assert_eq!(ops.lines.get(&1), Some(&1));
    assert_eq!(ops.lines.get(&16), Some(&0));
    assert_eq!(ops.uncovered().collect::<Vec<_>>(), [16, 20, 21, 22, 23]);
}

#[test]
fn lcov_trusts_da_lines_merges_duplicates_and_falls_back_to_lf_lh() {
    let text = "TN:\nSF:a.rs\nDA:1,1\nDA:2,0\nDA:1,4\nLF:99\nLH:99\nend_of_record\n\
                SF:b.rs\nLF:10\nLH:7\nend_of_record\n";
    let keep_all = |_: &str| true;
    let opts = ParseOptions {
        keep_lines_for: Some(&keep_all),
    };
    let Ok(Report::Coverage(c)) = parse(ReportFormat::Lcov, Cursor::new(text), "x.lcov", &opts)
    else {
        panic!("should parse");
    };
    assert_eq!((c.lines_found, c.lines_hit), (12, 8));
    assert_eq!(c.files["a.rs"].lines.get(&1), Some(&5));
    assert!(c.files["b.rs"].lines.is_empty());
}

#[test]
fn cobertura_from_coverage_py() {
    let opts = ParseOptions {
        keep_lines_for: Some(&keep_ops),
    };
    let c = coverage(ReportFormat::Cobertura, "cobertura/coverage-py.xml", &opts);
    assert_eq!((c.lines_found, c.lines_hit), (40, 33));
    let ops = &c.files["calc/ops.py"];
    assert_eq!(ops.lines.len(), 16);
    assert_eq!(ops.uncovered().collect::<Vec<_>>(), [16, 20, 21, 22, 23]);
    // The source directory the file names are relative to is kept for the caller.
    assert_eq!(c.sources, ["/tmp/fx/py"]);
    // Same numbers as the LCOV written from the same run.
    let lcov = coverage(ReportFormat::Lcov, "lcov/coverage-py.lcov", &opts);
    assert_eq!(
        CoverageSummary {
            sources: Vec::new(),
            ..c
        },
        lcov
    );
}

/// Written by JaCoCo 0.8.15 (`jacoco-maven-plugin`, `mvn test` with `prepare-agent` and
/// `report`) on a project of two packages, a nested class and an untested method.
#[test]
fn jacoco_reads_each_source_files_lines_as_jacoco_counts_them() {
    let keep = |_: &str| true;
    let opts = ParseOptions {
        keep_lines_for: Some(&keep),
    };
    let c = coverage(ReportFormat::Jacoco, "jacoco/maven-calc.xml", &opts);
    // The root's LINE counter says 7 missed, 5 covered: the lines agree with it.
    assert_eq!((c.lines_found, c.lines_hit), (12, 5));
    let calc = &c.files["ex/Calc.java"];
    assert_eq!(calc.lines.len(), 11);
    // `clamp`'s two returns, `untested` and the nested class are not covered.
    assert_eq!(
        calc.uncovered().collect::<Vec<_>>(),
        [12, 13, 15, 19, 20, 23, 25]
    );
    assert_eq!(c.files["ex/util/Text.java"].uncovered().count(), 0);
    assert!(c.sources.is_empty());
    // Without lines (no debug information), the root's counter is the figure.
    let xml = r#"<report name="x"><package name="p"><class name="p/A"/></package><counter type="LINE" missed="3" covered="1"/></report>"#;
    let Ok(Report::Coverage(c)) = parse(ReportFormat::Jacoco, Cursor::new(xml), "j.xml", &opts)
    else {
        panic!("should parse");
    };
    assert_eq!((c.lines_found, c.lines_hit), (4, 1));
}

/// A JaCoCo report given as Cobertura, or a Cobertura one as JaCoCo, is refused and named.
#[test]
fn jacoco_and_cobertura_are_never_read_as_each_other() {
    let err = parse_file(
        ReportFormat::Cobertura,
        &fixture("jacoco/maven-calc.xml"),
        &ParseOptions::default(),
    )
    .expect_err("not Cobertura");
    assert!(err.message.contains("give it as `jacoco`"), "{err}");
    let err = parse_file(
        ReportFormat::Jacoco,
        &fixture("cobertura/coverage-py.xml"),
        &ParseOptions::default(),
    )
    .expect_err("not JaCoCo");
    assert!(err.message.contains("<coverage>, not <report>"), "{err}");
    let broken = "<report name=\"x\"><package name=\"p\"><sourcefile name=\"A.java\"><line nr=\"x\" ci=\"1\"/>";
    let err = parse(
        ReportFormat::Jacoco,
        Cursor::new(broken),
        "j.xml",
        &ParseOptions::default(),
    )
    .expect_err("a bad line number");
    assert!(
        err.to_string().contains("j.xml: line 1, column 62")
            && err.to_string().contains("nr=\"x\""),
        "{err}"
    );
}

#[test]
fn cobertura_skips_method_lines_and_relativises_absolute_filenames() {
    let xml = r#"<?xml version="1.0"?>
<coverage lines-valid="3" lines-covered="2">
  <sources><source>/src/app/</source></sources>
  <packages><package name="p"><classes>
    <class name="A" filename="/src/app/pkg/A.java">
      <methods><method name="m"><lines><line number="3" hits="1"/></lines></method></methods>
      <lines><line number="3" hits="1"/><line number="4" hits="0"/><line number="5" hits="12"/></lines>
    </class>
  </classes></package></packages>
</coverage>"#;
    let keep = |f: &str| f == "pkg/A.java";
    let opts = ParseOptions {
        keep_lines_for: Some(&keep),
    };
    let Ok(Report::Coverage(c)) = parse(ReportFormat::Cobertura, Cursor::new(xml), "c.xml", &opts)
    else {
        panic!("should parse");
    };
    assert_eq!((c.lines_found, c.lines_hit), (3, 2));
    assert_eq!(c.files["pkg/A.java"].lines.get(&5), Some(&12));
}

// ---------------------------------------------------------------- lint

#[test]
fn clippy_json_warnings_with_machine_applicable_fixes() {
    let l = lint(ReportFormat::CargoJson, "cargo-json/clippy-warnings.json");
    let rules: Vec<_> = l
        .findings
        .iter()
        .map(|f| f.rule.as_deref().unwrap_or(""))
        .collect();
    assert_eq!(
        rules,
        [
            "unused_variables",
            "clippy::needless_return",
            "clippy::ptr_arg",
            "clippy::len_zero"
        ]
    );
    assert!(l.findings.iter().all(|f| f.level == LintLevel::Warning));
    let unused = finding(&l, "unused_variables");
    assert_eq!(unused.tool, "rustc");
    assert_eq!(unused.message, "unused variable: `unused_value`");
    assert_eq!(place(unused), (Some("src/lib.rs"), Some(10), Some(9)));
    assert_eq!(unused.suggested_fix.as_deref(), Some("_unused_value"));
    let ret = finding(&l, "clippy::needless_return");
    assert_eq!(ret.tool, "clippy");
    assert_eq!(place(ret), (Some("src/lib.rs"), Some(2), Some(5)));
    assert_eq!(ret.suggested_fix.as_deref(), Some("x * 2"));
    assert_eq!(
        finding(&l, "clippy::ptr_arg").suggested_fix,
        None,
        "only MachineApplicable"
    );
    assert_eq!(
        finding(&l, "clippy::len_zero").suggested_fix.as_deref(),
        Some("v.is_empty()")
    );
}

#[test]
fn cargo_json_compile_errors_and_duplicates() {
    let l = lint(ReportFormat::CargoJson, "cargo-json/clippy-e0425.json");
    assert_eq!(l.findings.len(), 2);
    assert_eq!(l.count(LintLevel::Error), 2);
    let scale = &l.findings[0];
    assert_eq!(scale.rule.as_deref(), Some("E0425"));
    assert_eq!(scale.message, "cannot find function `scale` in this scope");
    assert_eq!(place(scale), (Some("src/lib.rs"), Some(2), Some(26)));
    assert_eq!(
        l.findings[1].message,
        "cannot find function `undefined_helper` in this scope"
    );
    assert_eq!(l.findings[1].line, Some(6));

    // The same warning reported for the lib and its test target is one finding.
    let text = std::fs::read_to_string(fixture("cargo-json/clippy-warnings.json")).unwrap();
    let doubled = format!("   Compiling clippyok v0.1.0\n{text}{text}");
    let Ok(Report::Lint(again)) = parse(
        ReportFormat::CargoJson,
        Cursor::new(doubled),
        "x",
        &ParseOptions::default(),
    ) else {
        panic!("should parse");
    };
    assert_eq!(again.findings.len(), 4);
}

/// Written by pyright 1.1.407 (`pyright --outputjson`, from npm) on a package with a wrong
/// return type and a call to a name that does not exist: errors at 1-based places, the
/// undefined name a hallucination; a document that is not pyright's is refused.
#[test]
fn pyright_json() {
    let lint = match read(
        ReportFormat::PyrightJson,
        "pyright-json/pyright.json",
        &ParseOptions::default(),
    ) {
        Report::Lint(lint) => lint,
        other => panic!("expected lint, got {other:?}"),
    };
    let found: Vec<_> = lint
        .findings
        .iter()
        .map(|f| {
            (
                f.tool.as_str(),
                f.rule.as_deref(),
                f.level,
                f.line,
                f.column,
            )
        })
        .collect();
    assert_eq!(
        found,
        [
            (
                "pyright",
                Some("reportReturnType"),
                LintLevel::Error,
                Some(2),
                Some(12)
            ),
            (
                "pyright",
                Some("reportUndefinedVariable"),
                LintLevel::Error,
                Some(8),
                Some(1)
            ),
        ]
    );
    assert!(lint.findings[0]
        .message
        .starts_with("Type \"int\" is not assignable"));
    let triggers: Vec<_> = lint
        .findings
        .iter()
        .map(itergate::signals::classify::lint_trigger)
        .collect();
    assert_eq!(
        triggers,
        [
            None,
            Some(itergate::model::TriggerType::HallucinationDetected)
        ]
    );
    let not_pyright = parse(
        ReportFormat::PyrightJson,
        Cursor::new(r#"{"summary": {}}"#),
        "p.json",
        &ParseOptions::default(),
    );
    assert!(not_pyright.is_err(), "{not_pyright:?}");
}

#[test]
fn mypy_json() {
    let l = lint(ReportFormat::MypyJson, "mypy-json/mypy-strict.jsonl");
    assert_eq!(l.findings.len(), 5);
    assert_eq!(
        l.findings[0],
        LintFinding {
            context: None,
            tool: "mypy".into(),
            rule: Some("assignment".into()),
            level: LintLevel::Error,
            message: "Incompatible types in assignment (expression has type \"int\", variable has type \"str\")".into(),
            file: Some("pkg/m.py".into()),
            line: Some(13),
            column: Some(18),
            suggested_fix: None,
        }
    );
    let operator = finding(&l, "operator");
    assert_eq!(
        operator.suggested_fix.as_deref(),
        Some("Left operand is of type \"str | Any\"")
    );
    // A clean run prints nothing; a line that is not mypy's JSON is refused, not skipped.
    let clean = parse(
        ReportFormat::MypyJson,
        &b""[..],
        "x",
        &ParseOptions::default(),
    );
    assert!(matches!(clean, Ok(Report::Lint(ref s)) if s.findings.is_empty()));
    let fatal = parse(
        ReportFormat::MypyJson,
        &b"Found 1 error in 1 file (errors prevented further checking)\n"[..],
        "x",
        &ParseOptions::default(),
    )
    .expect_err("not mypy's JSON");
    assert!(fatal.to_string().contains("line 1"), "{fatal}");
}

#[test]
fn ruff_json() {
    let l = lint(ReportFormat::RuffJson, "ruff-json/ruff-default.json");
    assert_eq!(
        l.findings,
        [LintFinding {
            context: None,
            tool: "ruff".into(),
            rule: Some("F401".into()),
            level: LintLevel::Warning,
            message: "`os` imported but unused".into(),
            file: Some("/tmp/fx/py/calc/ops.py".into()),
            line: Some(1),
            column: Some(8),
            suggested_fix: Some("Remove unused import: `os`".into()),
        }]
    );
    let all = lint(ReportFormat::RuffJson, "ruff-json/ruff-select-all.json");
    assert_eq!(all.findings.len(), 51);
    let ann = all
        .findings
        .iter()
        .filter(|f| f.rule.as_deref() == Some("ANN201"))
        .count();
    assert_eq!(ann, 11);
    let print = finding(&all, "T201");
    assert_eq!((print.line, print.column), (Some(22), Some(13)));
    assert_eq!(print.suggested_fix.as_deref(), Some("Remove `print`"));
}

#[test]
fn ruff_json_without_severity_maps_syntax_errors_to_error() {
    let json = r#"[{"code":null,"message":"SyntaxError: Expected ')'","filename":"a.py","location":{"row":3,"column":1},"fix":null},
                  {"code":"E501","message":"Line too long","filename":"a.py","location":{"row":9,"column":89},"fix":null},
                  {"code":"F821","message":"Undefined name `x`","filename":"a.py","location":{"row":4,"column":1},"fix":null,"severity":"error"},
                  {"code":"D103","message":"Missing docstring","filename":"a.py","location":{"row":5,"column":1},"fix":null,"severity":"error"}]"#;
    let Ok(Report::Lint(l)) = parse(
        ReportFormat::RuffJson,
        Cursor::new(json),
        "r.json",
        &ParseOptions::default(),
    ) else {
        panic!("should parse");
    };
    let levels: Vec<_> = l.findings.iter().map(|f| f.level).collect();
    assert_eq!(
        levels,
        [
            LintLevel::Error,
            LintLevel::Warning,
            LintLevel::Error,
            LintLevel::Warning
        ]
    );
}

#[test]
fn eslint_json() {
    let l = lint(ReportFormat::EslintJson, "eslint-json/eslint.json");
    assert_eq!(l.findings.len(), 4);
    let unused = finding(&l, "no-unused-vars");
    assert_eq!(unused.level, LintLevel::Error);
    assert_eq!(
        place(unused),
        (Some("/home/ci/app/src/index.js"), Some(3), Some(10))
    );
    assert_eq!(unused.suggested_fix, None);
    let semi = finding(&l, "semi");
    assert_eq!(semi.level, LintLevel::Warning);
    assert_eq!(semi.suggested_fix.as_deref(), Some(";"));
    assert_eq!(
        finding(&l, "no-console").suggested_fix.as_deref(),
        Some("Remove the console.log().")
    );
    let fatal = &l.findings[3];
    assert_eq!(
        (fatal.rule.as_deref(), fatal.level),
        (None, LintLevel::Error)
    );
    assert_eq!(
        place(fatal),
        (Some("/home/ci/app/src/broken.js"), Some(4), Some(12))
    );
}

#[test]
fn checkstyle_xml() {
    let l = lint(ReportFormat::Checkstyle, "checkstyle/checkstyle.xml");
    let levels: Vec<_> = l.findings.iter().map(|f| f.level).collect();
    assert_eq!(
        levels,
        [
            LintLevel::Warning,
            LintLevel::Error,
            LintLevel::Note,
            LintLevel::Error
        ]
    );
    let braces = finding(
        &l,
        "com.puppycrawl.tools.checkstyle.checks.blocks.NeedBracesCheck",
    );
    assert_eq!(braces.message, "'if' construct must use '{}'s.");
    assert_eq!(
        place(braces),
        (
            Some("/home/ci/app/src/main/java/com/example/App.java"),
            Some(12),
            Some(9)
        )
    );
    assert_eq!(l.findings[0].column, None);
    let eslint = finding(&l, "eslint.rules.no-unused-vars");
    assert_eq!(
        (eslint.tool.as_str(), eslint.file.as_deref()),
        ("eslint", Some("web/app.js"))
    );
    assert!(l.findings[..3].iter().all(|f| f.tool == "checkstyle"));
}

#[test]
fn sarif_levels_defaults_messages_and_fixes() {
    let l = lint(ReportFormat::Sarif, "sarif/codeql-style.sarif");
    assert_eq!(l.findings.len(), 5, "the `pass` result is dropped");
    let sql = finding(&l, "js/sql-injection");
    assert_eq!((sql.tool.as_str(), sql.level), ("CodeQL", LintLevel::Error));
    assert_eq!(place(sql), (Some("src/db/users.js"), Some(42), Some(18)));
    assert_eq!(
        sql.message,
        "This query depends on a [user-provided value](1)."
    );
    let unused = finding(&l, "js/unused-local-variable");
    assert_eq!(unused.level, LintLevel::Note);
    assert_eq!(unused.message, "Unused variable tmp.");
    assert_eq!(unused.file.as_deref(), Some("/home/ci/app/src/util.js"));
    assert_eq!(
        unused.suggested_fix.as_deref(),
        Some("Remove the unused variable")
    );
    let rate = finding(&l, "js/missing-rate-limiting");
    assert_eq!(rate.level, LintLevel::Warning, "SARIF's default level");
    assert_eq!(place(rate), (Some("src/routes/files.js"), Some(12), None));
    let ret = finding(&l, "clippy::needless_return");
    assert_eq!(
        (ret.tool.as_str(), ret.level),
        ("clippy", LintLevel::Warning)
    );
    assert_eq!(ret.suggested_fix.as_deref(), Some("x * 2"));
    let todo = finding(&l, "clippy::todo");
    assert_eq!((todo.level, todo.file.as_deref()), (LintLevel::Note, None));

    assert!(lint(ReportFormat::Sarif, "sarif/empty-run.sarif")
        .findings
        .is_empty());
}

// ---------------------------------------------------------------- complexity

#[test]
fn lizard_csv_and_xml_agree() {
    let csv = complexity("lizard/lizard.csv");
    assert_eq!(csv.functions.len(), 11);
    let classify = &csv.functions[1];
    assert_eq!(
        (
            classify.name.as_str(),
            classify.file.as_str(),
            classify.line,
            classify.cyclomatic
        ),
        ("classify", "calc/ops.py", Some(8), 4)
    );
    assert_eq!(csv.functions.iter().map(|f| f.cyclomatic).sum::<u32>(), 17);
    assert_eq!(csv.max_cyclomatic().map(|f| f.cyclomatic), Some(4));
    let xml = complexity("lizard/lizard.xml");
    assert_eq!(xml, csv);
}

#[test]
fn lizard_csv_with_a_header_row() {
    let csv = "NLOC,CCN,token,PARAM,length,location,file,function,long_name,start,end\n\
               12,7,80,2,14,\"run@3-16@src/a.c\",\"src/a.c\",\"run\",\"run( int a , char * b )\",3,16\n";
    let Ok(Report::Complexity(c)) = parse(
        ReportFormat::Lizard,
        Cursor::new(csv),
        "l.csv",
        &ParseOptions::default(),
    ) else {
        panic!("should parse");
    };
    assert_eq!(c.functions.len(), 1);
    assert_eq!(
        (c.functions[0].cyclomatic, c.functions[0].line),
        (7, Some(3))
    );
}
