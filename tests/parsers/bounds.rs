//! Hostile report paths and sizes: nothing buffers without limit, nothing blocks, and
//! what cannot be read is a located error; LCOV totals cannot be inflated.

use std::io::{BufReader, Read};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use itergate::signals::report::{parse, parse_file, ParseOptions, Report, ReportFormat};

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
