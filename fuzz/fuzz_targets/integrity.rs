//! Fuzzes the reading of changed lines for tamper evidence and markers (runner
//! configuration, suppressions, tool configuration, test definitions, marker comments):
//! any text in any file must give findings, never a panic or a hang.
#![no_main]

use itergate::config::MarkerComments;
use itergate::model::{AddedLine, ChangedLines, RemovedLine};
use itergate::signals::{integrity, markers};
use libfuzzer_sys::fuzz_target;

/// Files whose names the readers look at.
const FILES: [&str; 8] = [
    "tests/conftest.py",
    "pyproject.toml",
    "Cargo.toml",
    "src/lib.rs",
    "test/a.test.ts",
    "eslint.config.js",
    "tsconfig.json",
    "pkg/a_test.go",
];

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut changed = ChangedLines::default();
    for (i, line) in text.lines().take(2000).enumerate() {
        let file = FILES[i % FILES.len()].to_string();
        let number = i as u32 + 1;
        if line.starts_with('-') {
            changed.removed.entry(file).or_default().push(RemovedLine {
                line: number,
                text: line[1..].to_string(),
            });
        } else {
            changed.files.entry(file).or_default().push(AddedLine {
                line: number,
                text: line.to_string(),
            });
        }
    }
    let head = itergate::signals::observation::Observation::default();
    let is_test = |p: &str| p.contains("test");
    let _ = integrity::check(&integrity::Input {
        head: &head,
        base: Some(&head),
        earlier: &integrity::Earlier::NONE,
        changed: &changed,
        is_test: &is_test,
        check_files: &[],
        check_commands: &[None],
        // Every file reads as the whole input: attribute lists opened anywhere.
        head_source: &|_| Some(text.to_string()),
        trusted: None,
    });
    let paths = markers::Paths {
        is_source: &|_| true,
        is_test: &is_test,
    };
    let _ = markers::new_markers(&changed, &paths, MarkerComments::Warning);
});
