//! Scoring rules on parsed reports: holdout isolation, the base's debt, the lint scale,
//! paths made relative, build failures.

use chrono::{TimeZone, Utc};
use itergate::config::{Config, LintScore, Scope, Visibility};
use itergate::model::{AddedLine, ChangedLines, IterationRecord, Severity, Status, TriggerType};
use itergate::signals::observation::{CheckOutcome, CheckResult, Observation};
use itergate::signals::report::{self, ParseOptions, ReportFormat};
use itergate::signals::score::{lint_score, score, ScoreInput};

const JUNIT: &str = r#"<testsuite name="holdout" tests="3">
<testcase classname="holdout" name="secret_case_42"><failure message="expected 7, got 8">diff: secret answer 7</failure></testcase>
<testcase classname="holdout" name="secret_case_43"/>
<testcase classname="holdout" name="secret_case_44"/>
</testsuite>"#;

fn outcome(name: &str, format: ReportFormat, text: &str, visibility: Visibility) -> CheckOutcome {
    let keep_all = |_: &str| true;
    let options = ParseOptions {
        keep_lines_for: Some(&keep_all),
    };
    let report = report::parse(format, text.as_bytes(), name, &options).expect("parses");
    CheckOutcome {
        name: name.into(),
        visibility,
        void_on_violation: false,
        result: CheckResult::Report {
            report,
            exit_code: Some(1),
        },
    }
}

fn observation(checks: &[CheckOutcome]) -> Observation {
    Observation {
        checks: checks.to_vec(),
        execution_time_ms: None,
        flaky: Vec::new(),
    }
}

fn scored(checks: &[CheckOutcome], base: Option<&[CheckOutcome]>) -> IterationRecord {
    scored_with(&Config::default(), checks, base, None)
}

fn scored_with(
    config: &Config,
    checks: &[CheckOutcome],
    base: Option<&[CheckOutcome]>,
    changed: Option<&ChangedLines>,
) -> IterationRecord {
    let mut r = IterationRecord::new(
        1,
        Utc.with_ymd_and_hms(2026, 11, 2, 9, 0, 0)
            .single()
            .expect("date"),
    );
    let head = observation(checks);
    let base = base.map(observation);
    score(
        &ScoreInput {
            config,
            head: &head,
            base: base.as_ref(),
            changed,
            paths: &itergate::signals::markers::Paths {
                is_source: &|_| true,
                is_test: &|p| p.starts_with("tests/"),
            },
            earlier: &itergate::signals::integrity::Earlier::NONE,
            head_source: &|_| None,
            accepted: &[],
            trusted: None,
            targets: &[],
            environment: &itergate::signals::environment::Unsealed::default(),
            test_file: None,
        },
        &mut r,
    );
    r
}

#[test]
fn holdout_details_never_reach_the_record() {
    let r = scored(
        &[outcome(
            "holdout",
            ReportFormat::Junit,
            JUNIT,
            Visibility::AggregateOnly,
        )],
        None,
    );
    let visible = serde_json::to_string(&r).expect("json");
    assert!(
        !visible.contains("secret_case"),
        "holdout case id leaked: {visible}"
    );
    assert!(
        !visible.contains("secret answer"),
        "holdout output leaked: {visible}"
    );
    assert!(visible.contains("2 of 3 passed"), "{visible}");
    assert_eq!(r.scores.tests_passing, Some(2.0 / 3.0));
    assert_eq!(r.status, Status::Fail);
}

#[test]
fn full_visibility_names_the_failing_test() {
    let r = scored(
        &[outcome(
            "tests",
            ReportFormat::Junit,
            JUNIT,
            Visibility::Full,
        )],
        None,
    );
    assert!(r
        .issues
        .iter()
        .any(|i| i.finding.contains("secret_case_42") && i.severity == Severity::Blocker));
    assert!(r
        .triggers
        .iter()
        .any(|t| t.kind == TriggerType::ValidationFailure && t.details == "1 of 3 tests failed"));
}

#[test]
fn failures_already_on_the_base_are_its_debt_never_counted() {
    let checks = [outcome(
        "tests",
        ReportFormat::Junit,
        JUNIT,
        Visibility::Full,
    )];
    let r = scored(&checks, Some(&checks));
    assert!(r.issues.is_empty(), "{:?}", r.issues);
    assert!(r.triggers.is_empty(), "{:?}", r.triggers);
    assert_eq!(r.status, Status::Pass);
    assert_eq!(r.scores.tests_passing, Some(1.0));
    assert_eq!(r.base_debt.failing_tests, 1);
    assert_eq!(r.base_debt.examples, ["holdout::secret_case_42"]);
    assert_eq!(r.base_debt.describe(), "1 failing test");
    // The whole tree, when asked for, counts it.
    let mut whole = Config::default();
    whole.scoring.scope = Scope::Whole;
    let r = scored_with(&whole, &checks, Some(&checks), None);
    assert_eq!(r.scores.tests_passing, Some(2.0 / 3.0));
    assert_eq!(r.status, Status::Fail);
}

#[test]
fn lint_severity_scale_and_hallucinations() {
    let sarif = r#"{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"rustc"}},"results":[
      {"ruleId":"E0425","level":"error","message":{"text":"cannot find function `parse_all` in this scope"},
       "locations":[{"physicalLocation":{"artifactLocation":{"uri":"src/lib.rs"},"region":{"startLine":9}}}]},
      {"ruleId":"W1","level":"warning","message":{"text":"w"}},
      {"ruleId":"N1","level":"note","message":{"text":"n"}}]}]}"#;
    let r = scored(
        &[outcome(
            "lint",
            ReportFormat::Sarif,
            sarif,
            Visibility::Full,
        )],
        None,
    );
    // density: 1 / (1 + (1.0 + 0.5 + 0.1) / 1)
    let expected = 1.0 / 2.6;
    assert!((r.scores.code_quality.expect("observed") - expected).abs() < 1e-9);
    assert!(r
        .triggers
        .iter()
        .any(|t| t.kind == TriggerType::HallucinationDetected && t.details.contains("E0425")));
    assert_eq!(r.count(Severity::Blocker), 1);
    assert_eq!(r.count(Severity::Warning), 1);
    assert_eq!(r.count(Severity::Info), 1);
}

fn failing_at(iteration: u32, spans: &[&str]) -> IterationRecord {
    let mut r = IterationRecord::new(
        iteration,
        Utc.with_ymd_and_hms(2026, 11, 2, 9, 0, 0)
            .single()
            .expect("date"),
    );
    r.issues = spans
        .iter()
        .map(|s| itergate::model::CheckerIssue {
            dimension: "tests".into(),
            severity: Severity::Blocker,
            finding: format!("test at {s} failed"),
            affected_field: Some((*s).into()),
            suggested_fix: None,
            kind: None,
            subject: None,
        })
        .collect();
    if !spans.is_empty() {
        r.triggers.push(itergate::model::Trigger {
            kind: TriggerType::ValidationFailure,
            source: "tests".into(),
            severity: 0.7,
            details: "tests failed".into(),
            fixable: true,
        });
    }
    r
}

#[test]
fn a_test_that_flips_without_related_changes_is_flaky() {
    use itergate::signals::flaky;
    let earlier = [failing_at(1, &["tests/net.rs:10"]), failing_at(2, &[])];
    let mut current = failing_at(3, &["tests/net.rs:10"]);
    assert_eq!(flaky::mark(&mut current, &earlier, &|_| false), 1);
    assert!(current.issues[0].finding.starts_with("(flaky"));
    assert_eq!(current.triggers[0].source, "flaky");
    // The same flip, but the change touched the test's file: a real failure.
    let mut touched = failing_at(3, &["tests/net.rs:10"]);
    assert_eq!(
        flaky::mark(&mut touched, &earlier, &|f| f == "tests/net.rs"),
        0
    );
    assert_eq!(touched.triggers[0].source, "tests");
    // Failing throughout is not flaky.
    let steady = [
        failing_at(1, &["tests/net.rs:10"]),
        failing_at(2, &["tests/net.rs:10"]),
    ];
    let mut again = failing_at(3, &["tests/net.rs:10"]);
    assert_eq!(flaky::mark(&mut again, &steady, &|_| false), 0);
    // A VOID iteration in between (the environment made it pass) is no pass.
    let mut void = failing_at(2, &[]);
    void.status = itergate::model::Status::Void;
    let through_void = [failing_at(1, &["tests/net.rs:10"]), void];
    let mut after = failing_at(3, &["tests/net.rs:10"]);
    assert_eq!(flaky::mark(&mut after, &through_void, &|_| false), 0);
}

#[test]
fn lint_score_falls_with_count_and_severity_and_scales_with_the_change() {
    let density = |weights: &[f64], lines| lint_score(LintScore::Density, weights, lines);
    assert_eq!(density(&[], Some(3)), 1.0);
    // One warning in a 300-line change costs little; in a 3-line change much more.
    assert!((density(&[0.5], Some(300)) - 1.0 / (1.0 + 0.5 / 3.0)).abs() < 1e-12);
    assert!(density(&[0.5], Some(3)) < density(&[0.5], Some(300)));
    // More findings, or more severe ones, always score lower.
    assert!(density(&[0.5, 0.5], Some(3)) < density(&[0.5], Some(3)));
    assert!(density(&[1.0], Some(3)) < density(&[0.5], Some(3)));
    let many: Vec<f64> = vec![1.0; 1000];
    assert!(density(&many, Some(3000)) < 0.1);
    // The analytics schema's formula ignores the count.
    let average = |weights: &[f64]| lint_score(LintScore::AverageSeverity, weights, None);
    assert_eq!(average(&[0.5]), average(&[0.5, 0.5]));
    assert_eq!(average(&[0.5]), 0.5);
}

const RUFF_BASE: &str = r#"[
 {"code":"F401","message":"`os` imported but unused","filename":"ROOT/src/pkg/a.py",
  "location":{"row":1,"column":8},"end_location":{"row":1,"column":10},"fix":null,"noqa_row":1,"url":null},
 {"code":"E741","message":"Ambiguous variable name: `l`","filename":"ROOT/src/pkg/b.py",
  "location":{"row":10,"column":5},"end_location":{"row":10,"column":6},"fix":null,"noqa_row":10,"url":null}
]"#;

/// ruff writes absolute paths; the base ran in another directory than the branch.
fn ruff_outcome(root: &std::path::Path, text: &str) -> CheckOutcome {
    let text = text.replace("ROOT", &root.to_string_lossy());
    let mut observation = observation(&[outcome(
        "lint",
        ReportFormat::RuffJson,
        &text,
        Visibility::Full,
    )]);
    observation.normalise(root);
    observation.checks.remove(0)
}

fn write_tree(root: &std::path::Path, files: &[(&str, &str)]) {
    for (path, text) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }
}

#[test]
fn absolute_paths_and_moved_lines_match_the_base_findings() {
    let base_dir = tempfile::tempdir().expect("tempdir");
    let head_dir = tempfile::tempdir().expect("tempdir");
    let b_py: String = (1..=12)
        .map(|i| {
            if i == 10 {
                "l = 1\n".to_string()
            } else {
                format!("x{i} = {i}\n")
            }
        })
        .collect();
    write_tree(
        base_dir.path(),
        &[("src/pkg/a.py", "import os\n"), ("src/pkg/b.py", &b_py)],
    );
    // The branch adds two lines above the old finding in b.py, and one new finding.
    let head_b = format!("y = 0\nz = 0\n{b_py}");
    write_tree(
        head_dir.path(),
        &[
            ("src/pkg/a.py", "import os\nimport sys\n"),
            ("src/pkg/b.py", &head_b),
        ],
    );
    let base = ruff_outcome(base_dir.path(), RUFF_BASE);
    let head_text = RUFF_BASE.replace("\"row\":10", "\"row\":12").replacen(
        "[",
        r#"[{"code":"F401","message":"`sys` imported but unused","filename":"ROOT/src/pkg/a.py",
  "location":{"row":2,"column":8},"end_location":{"row":2,"column":11},"fix":null,"noqa_row":2,"url":null},"#,
        1,
    );
    let head = ruff_outcome(head_dir.path(), &head_text);
    let r = scored(&[head], Some(&[base]));
    let counted: Vec<_> = r.issues.iter().map(|i| i.affected_field.clone()).collect();
    assert_eq!(
        counted,
        [Some("src/pkg/a.py:2".to_string())],
        "{:?}",
        r.issues
    );
    assert_eq!(r.base_debt.lint_warnings, 2, "{:?}", r.base_debt);
}

#[test]
fn a_build_that_fails_passes_no_test_and_names_its_errors() {
    use itergate::signals::diagnostics;
    let output = "   Compiling demo v0.1.0 (/tmp/demo)\nerror[E0425]: cannot find value `missing` in this scope\n --> src/lib.rs:3:5\n  |\n3 |     missing\n  |     ^^^^^^^ not found in this scope\n\nerror: could not compile `demo` (lib test) due to 1 previous error\n";
    let failed = CheckOutcome {
        name: "tests".into(),
        visibility: Visibility::Full,
        void_on_violation: false,
        result: CheckResult::BuildFailed {
            exit_code: 101,
            diagnostics: diagnostics::parse(output),
            tail: String::new(),
        },
    };
    let r = scored(std::slice::from_ref(&failed), None);
    assert_eq!(r.scores.tests_passing, Some(0.0));
    assert_eq!(r.status, Status::Fail);
    let blocker = r
        .issues
        .iter()
        .find(|i| i.severity == Severity::Blocker)
        .expect("blocker");
    assert_eq!(blocker.affected_field.as_deref(), Some("src/lib.rs:3"));
    assert!(
        blocker.finding.contains("cannot find value `missing`"),
        "{}",
        blocker.finding
    );
    assert!(r
        .triggers
        .iter()
        .any(|t| t.kind == TriggerType::HallucinationDetected));
    // The same failure on the base is its debt.
    let both = std::slice::from_ref(&failed);
    let r = scored(both, Some(both));
    assert!(r.issues.is_empty(), "{:?}", r.issues);
    assert_eq!(r.base_debt.failing_checks, 1);
}

#[test]
fn coverage_is_patch_coverage_of_the_changed_lines() {
    let lcov = "SF:src/lib.rs\nDA:1,1\nDA:2,0\nDA:3,0\nDA:10,1\nDA:11,0\nend_of_record\n";
    let checks = [outcome(
        "coverage",
        ReportFormat::Lcov,
        lcov,
        Visibility::Full,
    )];
    let mut changed = ChangedLines::default();
    changed.files.insert(
        "src/lib.rs".into(),
        [10, 11, 12]
            .map(|line| AddedLine {
                line,
                text: String::new(),
            })
            .to_vec(),
    );
    // The base had lines 1-3 only: the change added 10-12, and 11 is untested.
    let base = [outcome(
        "coverage",
        ReportFormat::Lcov,
        "SF:src/lib.rs\nDA:1,1\nDA:2,0\nDA:3,0\nend_of_record\n",
        Visibility::Full,
    )];
    let r = scored_with(&Config::default(), &checks, Some(&base), Some(&changed));
    assert_eq!(r.scores.coverage, Some(0.5));
    assert_eq!(r.metrics["coverage.project"], 0.4);
    let uncovered: Vec<_> = r
        .issues
        .iter()
        .filter_map(|i| i.affected_field.as_deref())
        .collect();
    assert_eq!(uncovered, ["src/lib.rs:11"]);
}

/// A changed source file that the coverage report leaves out (coverage.py's `source`
/// naming another package) is said to be unmeasured, never silently scored as nothing;
/// a test file, a file of another kind, and a file another report measures are not.
#[test]
fn a_changed_file_the_coverage_report_leaves_out_is_unmeasured_not_silent() {
    let added = |text: &str| {
        vec![AddedLine {
            line: 3,
            text: text.into(),
        }]
    };
    let mut changed = ChangedLines::default();
    for file in ["src/codec.py", "tests/test_codec.py", "docs/conf.rs"] {
        changed.files.insert(file.into(), added("    return n + 1"));
    }
    changed
        .files
        .insert("src/imports.py".into(), added("import os"));
    let cobertura = |file: &str| {
        format!(
            r#"<?xml version="1.0" ?><coverage version="7.6" lines-valid="1" lines-covered="1" line-rate="1"><packages><package name="p"><classes><class name="m" filename="{file}" line-rate="1"><lines><line number="1" hits="1"/></lines></class></classes></package></packages></coverage>"#
        )
    };
    let only_tests = [outcome(
        "tests",
        ReportFormat::Cobertura,
        &cobertura("tests/test_other.py"),
        Visibility::Full,
    )];
    let r = scored_with(&Config::default(), &only_tests, None, Some(&changed));
    let notes: Vec<_> = r
        .issues
        .iter()
        .filter(|i| i.dimension == "unmeasured")
        .map(|i| (i.severity, i.affected_field.clone(), i.finding.clone()))
        .collect();
    assert_eq!(
        notes,
        [(
            Severity::Info,
            Some("src/codec.py".to_string()),
            "coverage of `src/codec.py` unmeasured: the coverage report leaves the changed file out (what it measures is set in the coverage tool's configuration)".to_string()
        )]
    );

    // A second report that measures it: nothing is unmeasured.
    let both = [
        only_tests[0].clone(),
        outcome(
            "tests.cobertura",
            ReportFormat::Cobertura,
            &cobertura("src/codec.py"),
            Visibility::Full,
        ),
    ];
    let r = scored_with(&Config::default(), &both, None, Some(&changed));
    assert!(
        r.issues.iter().all(|i| i.dimension != "unmeasured"),
        "{:?}",
        r.issues
    );
}

#[test]
fn a_python_failure_inside_a_dependency_is_located_in_the_repository() {
    let root = tempfile::tempdir().expect("tempdir");
    let root_text = root.path().to_string_lossy().into_owned();
    // pytest's junit (xunit2: no file/line attributes); the innermost frame is freezegun's.
    let junit = format!(
        r#"<testsuite name="pytest" tests="2"><testcase classname="tests.test_timed" name="test_expired"/>
<testcase classname="tests.test_timed" name="test_future"><failure message="ValueError: bad time">tests/test_timed.py:41: in test_future
    with freeze_time(when):
{root}/src/itsdangerous/timed.py:120: in check
    return freezer(value)
{root}/.venv/lib/python3.11/site-packages/freezegun/api.py:392: in __init__
    raise ValueError("bad time")
E   ValueError: bad time</failure></testcase></testsuite>"#,
        root = root_text
    );
    let mut observation = observation(&[outcome(
        "tests",
        ReportFormat::Junit,
        &junit,
        Visibility::Full,
    )]);
    observation.normalise(root.path());
    let r = scored(&observation.checks, None);
    let located: Vec<_> = r
        .issues
        .iter()
        .filter_map(|i| i.affected_field.as_deref())
        .collect();
    assert_eq!(located, ["src/itsdangerous/timed.py:120"], "{:?}", r.issues);
    // 1 of 2 failing is 50%, and the deepest frame of the repository, not site-packages.
    assert!(!format!("{:?}", r.issues).contains("site-packages/freezegun/api.py:392\""));
}

#[test]
fn paths_are_made_relative_to_the_checkout() {
    use itergate::signals::paths::{is_repository_path, RepoPaths};
    let root = tempfile::tempdir().expect("tempdir");
    let paths = RepoPaths::new(root.path());
    let absolute = format!("{}/src/a.py", root.path().display());
    assert_eq!(paths.relative(&absolute), "src/a.py");
    assert_eq!(paths.relative("./src/a.py"), "src/a.py");
    assert_eq!(
        paths.relative("/usr/lib/python3/x.py"),
        "/usr/lib/python3/x.py"
    );
    assert!(is_repository_path("src/a.py"));
    assert!(!is_repository_path("/usr/lib/python3/x.py"));
    assert!(!is_repository_path(
        ".venv/lib/python3.11/site-packages/x.py"
    ));
    assert!(!is_repository_path("node_modules/x/index.js"));
}

#[test]
fn an_edit_to_code_the_base_left_untested_asks_for_no_test() {
    let lcov = "SF:src/a.py\nDA:1,1\nDA:2,0\nDA:3,0\nend_of_record\n";
    let checks = [outcome(
        "coverage",
        ReportFormat::Lcov,
        lcov,
        Visibility::Full,
    )];
    let mut changed = ChangedLines::default();
    // Line 2 was edited (a type annotation); the file's untested lines did not grow.
    changed.files.insert(
        "src/a.py".into(),
        vec![AddedLine {
            line: 2,
            text: "def f(x: int) -> int:".into(),
        }],
    );
    let r = scored_with(&Config::default(), &checks, Some(&checks), Some(&changed));
    assert!(r.issues.is_empty(), "{:?}", r.issues);
    assert_eq!(r.scores.coverage, None, "no changed line to judge");
    // An import added where nothing runs it (under `if TYPE_CHECKING:`) asks for no test.
    let head = "SF:src/a.py\nDA:1,1\nDA:2,0\nDA:3,0\nDA:4,0\nend_of_record\n";
    let head = [outcome(
        "coverage",
        ReportFormat::Lcov,
        head,
        Visibility::Full,
    )];
    let mut changed = ChangedLines::default();
    changed.files.insert(
        "src/a.py".into(),
        vec![AddedLine {
            line: 4,
            text: "    from typing import Sequence".into(),
        }],
    );
    let r = scored_with(&Config::default(), &head, Some(&checks), Some(&changed));
    assert!(r.issues.is_empty(), "{:?}", r.issues);
}

#[test]
fn a_reworded_line_the_base_left_untested_is_not_new_untested_code() {
    // The base: line 3 (an error message) untested. The change rewords it and adds an
    // untested line 4 of new logic: only line 4 is asked for.
    let base = "SF:err.go\nDA:1,1\nDA:2,1\nDA:3,0\nend_of_record\n";
    let head = "SF:err.go\nDA:1,1\nDA:2,1\nDA:3,0\nDA:4,0\nend_of_record\n";
    let lcov = |text| {
        [outcome(
            "coverage",
            ReportFormat::Lcov,
            text,
            Visibility::Full,
        )]
    };
    let mut changed = ChangedLines::default();
    changed.files.insert(
        "err.go".into(),
        vec![
            AddedLine {
                line: 3,
                text: "\t\treturn nil, fmt.Errorf(\"invalid semantic version\")".into(),
            },
            AddedLine {
                line: 4,
                text: "\t\tlog.Printf(\"retrying %d\", n)".into(),
            },
        ],
    );
    changed.removed.insert(
        "err.go".into(),
        vec![itergate::model::RemovedLine {
            line: 3,
            text: "\t\treturn nil, fmt.Errorf(\"Invalid Semantic Version\")".into(),
        }],
    );
    let r = scored_with(
        &Config::default(),
        &lcov(head),
        Some(&lcov(base)),
        Some(&changed),
    );
    let spans: Vec<_> = r
        .issues
        .iter()
        .filter(|i| i.dimension == "coverage")
        .filter_map(|i| i.affected_field.clone())
        .collect();
    assert_eq!(spans, ["err.go:4"], "{:?}", r.issues);
    assert_eq!(
        r.scores.coverage,
        Some(0.0),
        "one changed line judged, uncovered"
    );
}

#[test]
fn uncovered_lines_in_a_well_tested_change_are_shown_not_asked_for() {
    // 9 of 10 changed lines covered: 90% meets the 80% target.
    let mut lcov = String::from("SF:src/lib.rs\n");
    for line in 1..=10 {
        lcov.push_str(&format!("DA:{line},{}\n", u32::from(line != 5)));
    }
    lcov.push_str("end_of_record\n");
    let checks = [outcome(
        "coverage",
        ReportFormat::Lcov,
        &lcov,
        Visibility::Full,
    )];
    let base = [outcome(
        "coverage",
        ReportFormat::Lcov,
        "SF:src/other.rs\nDA:1,1\nend_of_record\n",
        Visibility::Full,
    )];
    let mut changed = ChangedLines::default();
    changed.files.insert(
        "src/lib.rs".into(),
        (1..=10)
            .map(|line| AddedLine {
                line,
                text: format!("x{line}"),
            })
            .collect(),
    );
    let r = scored_with(&Config::default(), &checks, Some(&base), Some(&changed));
    assert_eq!(r.scores.coverage, Some(0.9));
    let severities: Vec<_> = r.issues.iter().map(|i| i.severity).collect();
    assert_eq!(severities, [Severity::Info], "{:?}", r.issues);
    // With a stricter target the same line asks for a test.
    let mut strict = Config::default();
    strict.scoring.patch_coverage_target =
        itergate::config::Fraction::try_from(0.95).expect("fraction");
    let r = scored_with(&strict, &checks, Some(&base), Some(&changed));
    let severities: Vec<_> = r.issues.iter().map(|i| i.severity).collect();
    assert_eq!(severities, [Severity::Warning], "{:?}", r.issues);
}

// ---- counts without names, saturation, bounded findings -------------------------------

#[test]
fn failures_counted_without_names_fail_the_run() {
    let libtest = "running 5 tests\ntest result: FAILED. 3 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s\n";
    let junit = r#"<testsuites><testsuite name="s" tests="5" failures="2"><testcase classname="s" name="a"/></testsuite></testsuites>"#;
    for (format, text) in [
        (ReportFormat::Libtest, libtest),
        (ReportFormat::Junit, junit),
    ] {
        let r = scored(&[outcome("tests", format, text, Visibility::Full)], None);
        assert_eq!(r.status, Status::Fail, "{format}: {r:?}");
        let blocker = r
            .issues
            .iter()
            .find(|i| i.severity == Severity::Blocker)
            .unwrap_or_else(|| panic!("{format}: a BLOCKER: {:?}", r.issues));
        assert!(
            blocker.finding.contains("2 tests failed without names"),
            "{format}: {}",
            blocker.finding
        );
        assert!(r.scores.tests_passing.is_some_and(|s| s < 1.0), "{r:?}");
        assert!(
            r.triggers
                .iter()
                .any(|t| t.kind == TriggerType::ValidationFailure),
            "{format}: {:?}",
            r.triggers
        );
    }
    // The same unnamed failures on the base are its debt.
    let head = [outcome(
        "tests",
        ReportFormat::Libtest,
        libtest,
        Visibility::Full,
    )];
    let r = scored(&head, Some(&head));
    assert_eq!(r.status, Status::Pass, "{r:?}");
    assert_eq!(r.base_debt.failing_tests, 2);
}

#[test]
fn huge_counts_saturate_instead_of_wrapping() {
    let huge = "running 1 test\ntest result: FAILED. 18446744073709551615 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s\n";
    let checks = [
        outcome("a", ReportFormat::Libtest, huge, Visibility::Full),
        outcome("b", ReportFormat::Libtest, huge, Visibility::Full),
    ];
    let r = scored(&checks, None);
    assert_eq!(r.status, Status::Fail, "{r:?}");
    let lcov = "SF:a.rs\nLF:18446744073709551615\nLH:18446744073709551615\nend_of_record\n";
    let cov = [
        outcome("c1", ReportFormat::Lcov, lcov, Visibility::Full),
        outcome("c2", ReportFormat::Lcov, lcov, Visibility::Full),
    ];
    let _ = scored(&cov, None); // no overflow panic in a debug build
}

#[test]
fn very_long_findings_are_cut_when_they_become_issues() {
    let name = "n".repeat(200_000);
    let message = "m".repeat(300_000);
    let junit = format!(
        r#"<testsuite name="s"><testcase classname="s" name="{name}"><failure message="{message}"/></testcase></testsuite>"#
    );
    let r = scored(
        &[outcome(
            "tests",
            ReportFormat::Junit,
            &junit,
            Visibility::Full,
        )],
        None,
    );
    assert_eq!(r.status, Status::Fail);
    for issue in &r.issues {
        assert!(issue.finding.len() <= 4200, "{}", issue.finding.len());
        assert!(
            issue
                .affected_field
                .as_ref()
                .is_none_or(|a| a.len() <= 4200),
            "affected field cut"
        );
    }
    // The middle is cut, so the end of the message stays.
    assert!(r
        .issues
        .iter()
        .any(|i| i.finding.contains(" bytes cut] …") && i.finding.ends_with("mmm")));
    for trigger in &r.triggers {
        assert!(trigger.details.len() <= 4200, "{}", trigger.details.len());
    }
}

#[test]
fn a_finding_over_a_block_whose_first_line_changed_is_still_the_bases() {
    // ruff's I001 covers the whole import block and sits on its first line: the branch adds
    // an import at line 1, so the finding's source line changed, not the finding.
    let base_dir = tempfile::tempdir().expect("tempdir");
    let head_dir = tempfile::tempdir().expect("tempdir");
    write_tree(
        base_dir.path(),
        &[("src/pkg/a.py", "import sys\nimport os\n")],
    );
    write_tree(
        head_dir.path(),
        &[("src/pkg/a.py", "import abc\nimport sys\nimport os\n")],
    );
    let i001 = |end: u32| {
        format!(
            r#"[{{"code":"I001","message":"Import block is un-sorted or un-formatted","filename":"ROOT/src/pkg/a.py",
  "location":{{"row":1,"column":1}},"end_location":{{"row":{end},"column":10}},"fix":null,"noqa_row":1,"url":null}}]"#
        )
    };
    let base = ruff_outcome(base_dir.path(), &i001(2));
    let head = ruff_outcome(head_dir.path(), &i001(3));
    let r = scored(&[head], Some(&[base]));
    assert!(r.issues.is_empty(), "{:?}", r.issues);
    assert_eq!(r.base_debt.lint_errors + r.base_debt.lint_warnings, 1);
    // A second finding of that kind in the file is new: only the excess counts.
    let two = i001(3).replacen(
        "[",
        r#"[{"code":"I001","message":"Import block is un-sorted or un-formatted","filename":"ROOT/src/pkg/a.py",
  "location":{"row":3,"column":1},"end_location":{"row":3,"column":10},"fix":null,"noqa_row":3,"url":null},"#,
        1,
    );
    let base = ruff_outcome(base_dir.path(), &i001(2));
    let head = ruff_outcome(head_dir.path(), &two);
    let r = scored(&[head], Some(&[base]));
    assert_eq!(r.issues.len(), 1, "{:?}", r.issues);
}

#[test]
fn warnings_on_lines_the_change_did_not_add_are_not_its_own() {
    let sarif = |results: &str| {
        format!(
            r#"{{"version":"2.1.0","runs":[{{"tool":{{"driver":{{"name":"lint"}}}},"results":[{results}]}}]}}"#
        )
    };
    let result = |rule: &str, level: &str, file: &str| {
        let (file, line) = file.split_once(':').unwrap_or((file, "1"));
        format!(
            r#"{{"ruleId":"{rule}","level":"{level}","message":{{"text":"{rule} here"}},"locations":[{{"physicalLocation":{{"artifactLocation":{{"uri":"{file}"}},"region":{{"startLine":{line}}}}}}}]}}"#
        )
    };
    // The base's linter stopped early and reported nothing; the head reports a warning in
    // the file the change touched, one in another file, and an error in that other file.
    let base = [outcome(
        "lint",
        ReportFormat::Sarif,
        &sarif(""),
        Visibility::Full,
    )];
    let head_text = sarif(
        &[
            result("W1", "warning", "src/a.rs"),
            // In the file the change touched, on a line it did not.
            result("W3", "warning", "src/a.rs:7"),
            result("W2", "warning", "tests/other.rs"),
            result("E1", "error", "src/caller.rs"),
        ]
        .join(","),
    );
    let head = [outcome(
        "lint",
        ReportFormat::Sarif,
        &head_text,
        Visibility::Full,
    )];
    let mut changed = ChangedLines::default();
    changed.files.insert(
        "src/a.rs".into(),
        vec![AddedLine {
            line: 1,
            text: "let x = 1;".into(),
        }],
    );
    let r = scored_with(&Config::default(), &head, Some(&base), Some(&changed));
    let places: Vec<_> = r
        .issues
        .iter()
        .filter_map(|i| i.affected_field.clone())
        .collect();
    assert_eq!(places, ["src/a.rs:1", "src/caller.rs:1"], "{:?}", r.issues);
    assert_eq!(r.base_debt.lint_warnings, 2, "{:?}", r.base_debt);
}

#[test]
fn more_of_a_warning_a_test_file_has_throughout_is_its_style_not_a_revision() {
    let sarif = |places: &[&str]| {
        let results: Vec<String> = places
            .iter()
            .map(|place| {
                let (file, line) = place.split_once(':').unwrap_or((place, "1"));
                format!(
                    r#"{{"ruleId":"toplevel_ref_arg","level":"warning","message":{{"text":"`ref` on an entire `let` pattern is discouraged"}},"locations":[{{"physicalLocation":{{"artifactLocation":{{"uri":"{file}"}},"region":{{"startLine":{line}}}}}}}]}}"#
                )
            })
            .collect();
        let text = format!(
            r#"{{"version":"2.1.0","runs":[{{"tool":{{"driver":{{"name":"clippy"}}}},"results":[{}]}}]}}"#,
            results.join(",")
        );
        [outcome(
            "lint",
            ReportFormat::Sarif,
            &text,
            Visibility::Full,
        )]
    };
    let judge = |file: &str, on_base: usize| {
        let base_places: Vec<String> = (1..=on_base).map(|n| format!("{file}:{n}")).collect();
        let base_refs: Vec<&str> = base_places.iter().map(String::as_str).collect();
        let mut head_refs = base_refs.clone();
        let new = format!("{file}:9");
        head_refs.push(&new);
        let mut changed = ChangedLines::default();
        changed.files.insert(
            file.into(),
            vec![AddedLine {
                line: 9,
                text: "let ref r = req(\">1\");".into(),
            }],
        );
        let r = scored_with(
            &Config::default(),
            &sarif(&head_refs),
            Some(&sarif(&base_refs)),
            Some(&changed),
        );
        let issue = r
            .issues
            .iter()
            .find(|i| i.affected_field.as_deref() == Some(new.as_str()))
            .cloned()
            .expect("the new finding is shown");
        (issue.severity, r.scores.code_quality)
    };
    // Three of them in the test file already: the fourth is a note, and costs nothing.
    assert_eq!(judge("tests/req.rs", 3), (Severity::Info, Some(1.0)));
    // Fewer, or in source code: a warning like any other.
    assert_eq!(judge("tests/req.rs", 2).0, Severity::Warning);
    assert_eq!(judge("src/req.rs", 3).0, Severity::Warning);
}

/// A linter whose output varies between runs of the same code (clippy on a warm target
/// replays some warnings and not others): the base's debt stays the base's own count, from
/// its one cached run, whatever a later run leaves out.
#[test]
fn the_bases_lint_debt_does_not_move_with_a_noisy_run() {
    let sarif = |rules: &[&str]| {
        let results: Vec<String> = rules
            .iter()
            .enumerate()
            .map(|(i, rule)| {
                format!(
                    r#"{{"ruleId":"{rule}","level":"warning","message":{{"text":"{rule} here"}},"locations":[{{"physicalLocation":{{"artifactLocation":{{"uri":"src/old.rs"}},"region":{{"startLine":{}}}}}}}]}}"#,
                    i + 1
                )
            })
            .collect();
        format!(
            r#"{{"version":"2.1.0","runs":[{{"tool":{{"driver":{{"name":"lint"}}}},"results":[{}]}}]}}"#,
            results.join(",")
        )
    };
    let lint = |rules: &[&str]| {
        [outcome(
            "lint",
            ReportFormat::Sarif,
            &sarif(rules),
            Visibility::Full,
        )]
    };
    let base = lint(&["W1", "W2", "W3"]);
    let mut changed = ChangedLines::default();
    changed.files.insert(
        "src/new.rs".into(),
        vec![AddedLine {
            line: 1,
            text: "let x = 1;".into(),
        }],
    );
    let debts: Vec<u32> = [
        lint(&["W1", "W2", "W3"]),
        lint(&["W1"]),
        lint(&["W2", "W3"]),
    ]
    .iter()
    .map(|head| {
        scored_with(&Config::default(), head, Some(&base), Some(&changed))
            .base_debt
            .lint_warnings
    })
    .collect();
    assert_eq!(debts, [3, 3, 3]);
}
