//! Hostile report paths and sizes: nothing buffers without limit, nothing blocks, and
//! what cannot be read is a located error; LCOV totals cannot be inflated.

use std::io::{BufReader, Read};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use itergate::config::Visibility;
use itergate::signals::observation::{CheckOutcome, CheckResult, Observation};
use itergate::signals::report::{
    parse, parse_file, parse_file_in_tree, ParseOptions, Report, ReportFormat,
};
use itergate::signals::tree_file::remove_in_tree;

use super::*;

const XML_FORMATS: [ReportFormat; 3] = [
    ReportFormat::Junit,
    ReportFormat::Cobertura,
    ReportFormat::Checkstyle,
];

/// Runs `work` on a thread and fails the test if it takes longer than `limit`.
fn within<T: Send + 'static>(limit: Duration, work: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(work());
    });
    rx.recv_timeout(limit)
        .unwrap_or_else(|_| panic!("did not finish within {limit:?}"))
}

#[test]
fn a_64_mib_attribute_is_a_located_error_read_in_bounded_time() {
    let attribute = 64 * 1024 * 1024;
    let started = Instant::now();
    let error = within(Duration::from_secs(30), move || {
        let head = &b"<testsuite name=\"s\"><testcase classname=\"s\" name=\""[..];
        let body = std::io::repeat(b'A').take(attribute);
        let tail = &b"\"/></testsuite>"[..];
        let input = BufReader::new(head.chain(body).chain(tail));
        parse(
            ReportFormat::Junit,
            input,
            "big.xml",
            &ParseOptions::default(),
        )
        .expect_err("an attribute past the limit")
    });
    let text = error.to_string();
    assert!(text.contains("longer than 16 MiB"), "{text}");
    assert!(text.contains("big.xml") && text.contains("byte"), "{text}");
    assert!(started.elapsed() < Duration::from_secs(30));
}

/// A start tag of 80,000 distinct attributes (a failing case's, so its attributes are
/// decoded) is read in linear time in every XML format: quick-xml's duplicate check, which
/// is quadratic in them (RUSTSEC-2026-0194: about 6 s for this tag), is never run.
#[test]
fn a_start_tag_of_80_000_attributes_is_read_in_linear_time() {
    let attributes: String = (0..80_000).map(|i| format!(" a{i}=\"{i}\"")).collect();
    for format in XML_FORMATS {
        let tag = |name: &str| format!("<{name}{attributes}>");
        let document = match format {
            ReportFormat::Junit => format!(
                "<testsuite name=\"s\">{}<failure message=\"m\"/></testcase></testsuite>",
                tag("testcase classname=\"s\" name=\"t\"")
            ),
            ReportFormat::Cobertura => format!(
                "<coverage lines-valid=\"1\" lines-covered=\"1\">{}</package></coverage>",
                tag("package name=\"p\"")
            ),
            _ => format!(
                "<checkstyle>{}</file></checkstyle>",
                tag("file name=\"a.rs\"")
            ),
        };
        let started = Instant::now();
        within(Duration::from_secs(20), move || {
            parse(
                format,
                document.as_bytes(),
                "wide.xml",
                &ParseOptions::default(),
            )
            .map(|_| ())
            .map_err(|e| e.to_string())
        })
        .unwrap_or_else(|e| panic!("{format:?}: {e}"));
        let took = started.elapsed();
        assert!(took < Duration::from_secs(2), "{format:?}: {took:?}");
    }
}

#[test]
fn a_long_text_run_and_nul_bytes_are_errors() {
    for format in XML_FORMATS {
        let error = within(Duration::from_secs(30), move || {
            let input = BufReader::new(std::io::repeat(0).take(200 * 1024 * 1024));
            parse(format, input, "zeros.xml", &ParseOptions::default()).expect_err("NULs")
        });
        assert!(error.to_string().contains("NUL"), "{format}: {error}");
        let error = within(Duration::from_secs(30), move || {
            let head = &b"<testsuite><testcase name=\"a\"><failure>"[..];
            let input = BufReader::new(head.chain(std::io::repeat(b'x').take(40 << 20)));
            parse(format, input, "text.xml", &ParseOptions::default()).expect_err("long")
        });
        let text = error.to_string();
        assert!(
            text.contains("longer than 16 MiB") || text.contains("root element"),
            "{format}: {text}"
        );
    }
    // Reports of normal size are unaffected.
    let t = tests(ReportFormat::Junit, "junit/nextest.xml");
    assert_eq!(t.total(), 4);
}

#[test]
fn dev_zero_a_fifo_a_directory_and_a_symlink_are_refused_quickly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fifo = dir.path().join("report.fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success(), "mkfifo");
    let real = dir.path().join("real.xml");
    std::fs::write(&real, "<testsuite/>").expect("write");
    let link = dir.path().join("link.xml");
    std::os::unix::fs::symlink(&real, &link).expect("symlink");
    let zero_link = dir.path().join("zero.xml");
    std::os::unix::fs::symlink("/dev/zero", &zero_link).expect("symlink");
    let cases = [
        (PathBuf::from("/dev/zero"), "a device"),
        (fifo, "a FIFO"),
        (dir.path().to_path_buf(), "a directory"),
        (link, "symbolic link"),
        (zero_link, "symbolic link"),
    ];
    for format in XML_FORMATS.into_iter().chain([ReportFormat::Lcov]) {
        for (path, expected) in cases.clone() {
            let shown = path.display().to_string();
            let error = within(Duration::from_secs(5), move || {
                parse_file(format, &path, &ParseOptions::default()).expect_err("refused")
            });
            let text = error.to_string();
            assert!(text.contains(expected), "{format} {shown}: {text}");
            assert!(text.contains(&shown), "names the path: {text}");
        }
    }
    assert!(parse_file(ReportFormat::Junit, &real, &ParseOptions::default()).is_ok());
}

/// A work tree `repo` beside a directory `elsewhere`, each holding `junit.xml` (one
/// passing test), and in the work tree links to directories out of it (`out` relative,
/// `abs` absolute, `etc` to /etc) and one that stays inside (`inside` to `reports`).
fn tree_with_links_out() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("repo");
    let elsewhere = dir.path().join("elsewhere");
    let report = r#"<testsuite name="s"><testcase classname="s" name="ok"/></testsuite>"#;
    for d in [root.join("reports"), root.join("sub"), elsewhere.clone()] {
        std::fs::create_dir_all(&d).expect("mkdir");
        std::fs::write(d.join("junit.xml"), report).expect("write");
    }
    std::os::unix::fs::symlink("../elsewhere", root.join("out")).expect("symlink");
    std::os::unix::fs::symlink(&elsewhere, root.join("abs")).expect("symlink");
    std::os::unix::fs::symlink("/etc", root.join("etc")).expect("symlink");
    std::os::unix::fs::symlink("reports", root.join("inside")).expect("symlink");
    (dir, root, elsewhere)
}

#[test]
fn a_report_through_a_directory_link_out_of_the_work_tree_is_refused() {
    let (_dir, root, elsewhere) = tree_with_links_out();
    let opts = ParseOptions::default();
    let refused = [
        ("out/junit.xml", "`out` is a symbolic link to "),
        ("abs/junit.xml", "`abs` is a symbolic link to "),
        ("etc/passwd", "`etc` is a symbolic link to /etc,"),
        ("sub/../../elsewhere/junit.xml", "`..` leads to "),
    ];
    for (rel, why) in refused {
        let path = root.join(rel);
        let error = parse_file_in_tree(ReportFormat::Junit, &root, &path, &opts)
            .expect_err("a report outside the work tree");
        let text = error.to_string();
        assert!(
            text.starts_with(&format!("{}: cannot open the report: ", path.display())),
            "names the path: {text}"
        );
        assert!(
            text.contains(why) && text.contains("outside the work tree"),
            "{rel}: {text}"
        );
    }
    // What the link points at is a good report: only where it lies refuses it.
    assert!(parse_file(ReportFormat::Junit, &elsewhere.join("junit.xml"), &opts).is_ok());
    // Links and `..` that stay inside the work tree are followed.
    for rel in [
        "inside/junit.xml",
        "sub/../reports/junit.xml",
        "reports/junit.xml",
    ] {
        let report = parse_file_in_tree(ReportFormat::Junit, &root, &root.join(rel), &opts)
            .unwrap_or_else(|e| panic!("{rel}: {e}"));
        let Report::Tests(t) = report else {
            panic!("tests")
        };
        assert_eq!(t.total(), 1, "{rel}");
    }
    // The file itself still must not be a link, even to a file inside.
    std::os::unix::fs::symlink("reports/junit.xml", root.join("link.xml")).expect("symlink");
    let error = parse_file_in_tree(ReportFormat::Junit, &root, &root.join("link.xml"), &opts)
        .expect_err("a link");
    assert!(error.to_string().contains("symbolic link"), "{error}");
}

#[test]
fn a_stale_report_is_removed_only_inside_the_work_tree() {
    let (_dir, root, elsewhere) = tree_with_links_out();
    remove_in_tree(&root, &root.join("out/junit.xml")).expect_err("outside");
    assert!(elsewhere.join("junit.xml").exists(), "left alone");
    remove_in_tree(&root, &root.join("inside/junit.xml")).expect("inside");
    assert!(!root.join("reports/junit.xml").exists(), "removed");
}

#[test]
fn source_lines_are_read_only_from_regular_files_inside_the_work_tree() {
    let (_dir, root, elsewhere) = tree_with_links_out();
    std::fs::write(elsewhere.join("secret.py"), "TOKEN = 'outside'\n").expect("write");
    std::fs::write(root.join("reports/mod.py"), "import os\n").expect("write");
    let made = std::process::Command::new("mkfifo")
        .arg(root.join("fifo.py"))
        .status()
        .expect("mkfifo runs");
    assert!(made.success(), "mkfifo");
    let checkstyle = r#"<checkstyle>
<file name="out/secret.py"><error line="1" severity="error" message="m" source="r"/></file>
<file name="fifo.py"><error line="1" severity="error" message="m" source="r"/></file>
<file name="inside/mod.py"><error line="1" severity="error" message="m" source="r"/></file>
</checkstyle>"#;
    let report = parse(
        ReportFormat::Checkstyle,
        checkstyle.as_bytes(),
        "lint.xml",
        &ParseOptions::default(),
    )
    .expect("parses");
    let mut observation = Observation {
        checks: vec![CheckOutcome {
            name: "lint".into(),
            visibility: Visibility::Full,
            void_on_violation: false,
            result: CheckResult::Report {
                report,
                exit_code: Some(0),
            },
        }],
        execution_time_ms: None,
        flaky: Vec::new(),
    };
    // Opening the FIFO for reading would wait for a writer forever.
    let observation = within(Duration::from_secs(5), move || {
        observation.normalise(&root);
        observation
    });
    let CheckResult::Report {
        report: Report::Lint(lint),
        ..
    } = &observation.checks[0].result
    else {
        panic!("lint")
    };
    let contexts: Vec<_> = lint
        .findings
        .iter()
        .map(|f| (f.file.as_deref(), f.context.as_deref()))
        .collect();
    assert_eq!(
        contexts,
        [
            (Some("out/secret.py"), None),
            (Some("fifo.py"), None),
            (Some("inside/mod.py"), Some("import os")),
        ]
    );
}

#[test]
fn lcov_records_of_one_file_are_merged_not_counted_twice() {
    let mut text = String::from("SF:src/a.rs\n");
    for line in 1..=100 {
        text.push_str(&format!("DA:{line},0\n"));
    }
    text.push_str("end_of_record\nSF:src/a.rs\n");
    for line in 1..=100 {
        text.push_str(&format!("DA:{line},3\n"));
    }
    text.push_str("end_of_record\n");
    let Report::Coverage(c) = parse(
        ReportFormat::Lcov,
        text.as_bytes(),
        "dup.info",
        &ParseOptions::default(),
    )
    .expect("parses") else {
        panic!("coverage")
    };
    assert_eq!((c.lines_found, c.lines_hit), (100, 100));

    // Overlapping records: the union of their lines, covered if either covers it.
    let text =
        "SF:b.rs\nDA:3,1\nDA:1,0\nend_of_record\nSF:b.rs\nDA:2,0\nDA:3,0\nDA:4,2\nend_of_record\n";
    let Report::Coverage(c) = parse(
        ReportFormat::Lcov,
        text.as_bytes(),
        "overlap.info",
        &ParseOptions::default(),
    )
    .expect("parses") else {
        panic!("coverage")
    };
    assert_eq!((c.lines_found, c.lines_hit), (4, 2));
}

#[test]
fn implausible_lcov_totals_cannot_saturate_the_summary() {
    let text = "SF:weird.rs\nLF:18446744073709551615\nLH:18446744073709551615\nend_of_record\n\
                SF:b.rs\nDA:1,0\nDA:2,0\nDA:3,0\nend_of_record\n\
                SF:c.rs\nLF:10\nLH:99\nend_of_record\n";
    let Report::Coverage(c) = parse(
        ReportFormat::Lcov,
        text.as_bytes(),
        "weird.info",
        &ParseOptions::default(),
    )
    .expect("parses") else {
        panic!("coverage")
    };
    // weird.rs is ignored; c.rs's LH is capped at its LF.
    assert_eq!((c.lines_found, c.lines_hit), (13, 10));
}

#[test]
fn junit_suite_counts_without_failing_cases_are_failures() {
    let text = r#"<testsuites failures="3"><testsuite name="a" failures="2" errors="0"><testcase classname="a" name="ok"/></testsuite><testsuite name="b" failures="1"><testcase classname="b" name="bad"><failure message="x"/></testcase></testsuite></testsuites>"#;
    let Report::Tests(t) = parse(
        ReportFormat::Junit,
        text.as_bytes(),
        "counts.xml",
        &ParseOptions::default(),
    )
    .expect("parses") else {
        panic!("tests")
    };
    // One named failure, two counted only by suite a; the root's total adds nothing.
    assert_eq!((t.passed, t.failed, t.errored), (1, 3, 0));
    assert_eq!(t.failures().count(), 1);
}
