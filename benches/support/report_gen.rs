//! Deterministic generators of large reports, shared by `benches/parsers.rs` and
//! `examples/gen_reports.rs` (which `benches/parsers_vs_python.sh` runs). The shapes follow
//! the real tools' output in tests/fixtures/reports.

#![allow(dead_code)] // each includer uses a different subset

use std::fmt::Write;

/// Cheap deterministic pseudo-random numbers (xorshift), so runs compare like with like.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// An LCOV tracefile of about `target_bytes`, in records of 400 DA lines (as coverage.py
/// or cargo-llvm-cov write them for a monorepo), with FN/BRDA noise.
pub fn lcov(target_bytes: usize) -> String {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut out = String::with_capacity(target_bytes + 64 * 1024);
    let mut file = 0u32;
    while out.len() < target_bytes {
        file += 1;
        let _ = writeln!(out, "TN:\nSF:src/module_{}/file_{file}.rs", file % 97);
        let _ = writeln!(out, "FN:1,main_{file}\nFNDA:3,main_{file}\nFNF:1\nFNH:1");
        let (mut found, mut hit) = (0, 0);
        for line in 1..=400u32 {
            let hits = match rng.next() % 10 {
                0..=1 => 0,
                2..=8 => rng.next() % 50 + 1,
                _ => rng.next() % 100_000,
            };
            found += 1;
            hit += u32::from(hits > 0);
            let _ = writeln!(out, "DA:{line},{hits}");
            if line % 50 == 0 {
                let _ = writeln!(out, "BRDA:{line},0,0,{}", hits % 3);
            }
        }
        let _ = writeln!(out, "LF:{found}\nLH:{hit}\nend_of_record");
    }
    out
}

/// A JUnit report in the shape cargo-nextest writes, with `cases` testcases in suites of
/// 500; one in 200 fails (with a panic body and captured output), one in 100 is skipped.
pub fn junit(cases: u32) -> String {
    let mut out = String::with_capacity(cases as usize * 220);
    out.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"nextest-run\" tests=\"{cases}\" failures=\"{}\" errors=\"0\" time=\"12.5\">",
        cases / 200
    );
    for case in 0..cases {
        if case % 500 == 0 {
            if case > 0 {
                out.push_str("    </testsuite>\n");
            }
            let _ = writeln!(
                out,
                "    <testsuite name=\"crate_{}\" tests=\"500\" failures=\"2\" errors=\"0\">",
                case / 500
            );
        }
        let suite = case / 500;
        let _ = write!(
            out,
            "        <testcase name=\"module_{}::tests::case_{case}\" classname=\"crate_{suite}\" timestamp=\"2026-01-01T00:00:00.000+00:00\" time=\"0.0{}\"",
            case % 31,
            case % 10
        );
        if case % 200 == 7 {
            let _ = write!(
                out,
                ">\n            <failure message=\"thread &apos;case_{case}&apos; panicked at src/lib.rs:{}:9\" type=\"test failure\">thread &apos;case_{case}&apos; panicked at src/lib.rs:{}:9:\nassertion `left == right` failed\n  left: 1\n right: 2</failure>\n            <system-out>running 1 test\ntest case_{case} ... FAILED\n</system-out>\n        </testcase>\n",
                case % 900 + 1,
                case % 900 + 1
            );
        } else if case % 100 == 3 {
            out.push_str(">\n            <skipped/>\n        </testcase>\n");
        } else {
            out.push_str("/>\n");
        }
    }
    out.push_str("    </testsuite>\n</testsuites>\n");
    out
}

/// A SARIF 2.1.0 log with `results` results over 40 rules, a third of them with fixes.
pub fn sarif(results: u32) -> String {
    let mut out = String::with_capacity(results as usize * 420);
    out.push_str("{\"version\":\"2.1.0\",\"$schema\":\"https://json.schemastore.org/sarif-2.1.0.json\",\"runs\":[{\"tool\":{\"driver\":{\"name\":\"bench-analyzer\",\"rules\":[");
    for rule in 0..40 {
        if rule > 0 {
            out.push(',');
        }
        let level = ["error", "warning", "note"][rule % 3];
        let _ = write!(out, "{{\"id\":\"R{rule:03}\",\"shortDescription\":{{\"text\":\"Rule {rule}\"}},\"defaultConfiguration\":{{\"level\":\"{level}\"}}}}");
    }
    out.push_str("]}},\"results\":[");
    for result in 0..results {
        if result > 0 {
            out.push(',');
        }
        let rule = result % 40;
        let _ = write!(
            out,
            "\n{{\"ruleId\":\"R{rule:03}\",\"ruleIndex\":{rule},\"message\":{{\"text\":\"Finding number {result} about `value_{result}` in this function.\"}},\"locations\":[{{\"physicalLocation\":{{\"artifactLocation\":{{\"uri\":\"src/module_{}/file_{}.rs\",\"uriBaseId\":\"%SRCROOT%\"}},\"region\":{{\"startLine\":{},\"startColumn\":{},\"endLine\":{},\"endColumn\":40}}}}}}],\"partialFingerprints\":{{\"primaryLocationLineHash\":\"{:016x}:1\"}}",
            result % 97,
            result % 1000,
            result % 700 + 1,
            result % 60 + 1,
            result % 700 + 2,
            u64::from(result).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        );
        if result % 3 == 0 {
            let _ = write!(out, ",\"fixes\":[{{\"description\":{{\"text\":\"Rename it\"}},\"artifactChanges\":[{{\"artifactLocation\":{{\"uri\":\"src/x.rs\"}},\"replacements\":[{{\"deletedRegion\":{{\"startLine\":1}},\"insertedContent\":{{\"text\":\"value_{result}_fixed\"}}}}]}}]}}]");
        }
        out.push('}');
    }
    out.push_str("]}]}\n");
    out
}

/// A Cobertura report (coverage.py shape) with `classes` classes of 500 lines each.
pub fn cobertura(classes: u32) -> String {
    let mut rng = Rng(0xD1B5_4A32_D192_ED03);
    let mut out = String::with_capacity(classes as usize * 500 * 36);
    out.push_str("<?xml version=\"1.0\" ?>\n<coverage version=\"7.17.5\" timestamp=\"1\" lines-valid=\"0\" lines-covered=\"0\" line-rate=\"0.8\" branches-covered=\"0\" branches-valid=\"0\" branch-rate=\"0\" complexity=\"0\">\n\t<sources>\n\t\t<source>/home/ci/app</source>\n\t</sources>\n\t<packages>\n");
    for class in 0..classes {
        if class % 50 == 0 {
            if class > 0 {
                out.push_str("\t\t\t</classes>\n\t\t</package>\n");
            }
            let _ = writeln!(out, "\t\t<package name=\"pkg{}\" line-rate=\"0.8\" branch-rate=\"0\" complexity=\"0\">\n\t\t\t<classes>", class / 50);
        }
        let _ = writeln!(out, "\t\t\t\t<class name=\"m{class}.py\" filename=\"pkg{}/m{class}.py\" complexity=\"0\" line-rate=\"0.8\" branch-rate=\"0\">\n\t\t\t\t\t<methods/>\n\t\t\t\t\t<lines>", class / 50);
        for line in 1..=500 {
            let hits = if rng.next() % 5 == 0 {
                0
            } else {
                rng.next() % 40 + 1
            };
            let _ = writeln!(out, "\t\t\t\t\t\t<line number=\"{line}\" hits=\"{hits}\"/>");
        }
        out.push_str("\t\t\t\t\t</lines>\n\t\t\t\t</class>\n");
    }
    out.push_str("\t\t\t</classes>\n\t\t</package>\n\t</packages>\n</coverage>\n");
    out
}

/// A JaCoCo XML report of `classes` source files of 500 lines each, 50 to a package, the
/// class counters JaCoCo writes before each source file included.
pub fn jacoco(classes: u32) -> String {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut out = String::with_capacity(classes as usize * 500 * 48);
    out.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?><!DOCTYPE report PUBLIC \"-//JACOCO//DTD Report 1.1//EN\" \"report.dtd\"><report name=\"bench\"><sessioninfo id=\"s\" start=\"1\" dump=\"2\"/>");
    for class in 0..classes {
        if class % 50 == 0 {
            if class > 0 {
                out.push_str("</package>");
            }
            let _ = write!(out, "<package name=\"com/example/pkg{}\">", class / 50);
        }
        let _ = write!(out, "<class name=\"com/example/pkg{}/C{class}\" sourcefilename=\"C{class}.java\"><method name=\"run\" desc=\"()V\" line=\"3\"><counter type=\"INSTRUCTION\" missed=\"4\" covered=\"9\"/><counter type=\"LINE\" missed=\"1\" covered=\"3\"/></method><counter type=\"LINE\" missed=\"100\" covered=\"400\"/></class><sourcefile name=\"C{class}.java\">", class / 50);
        for line in 1..=500 {
            let (mi, ci) = if rng.next() % 5 == 0 {
                (rng.next() % 9 + 1, 0)
            } else {
                (0, rng.next() % 9 + 1)
            };
            let _ = write!(
                out,
                "<line nr=\"{line}\" mi=\"{mi}\" ci=\"{ci}\" mb=\"0\" cb=\"0\"/>"
            );
        }
        out.push_str("<counter type=\"LINE\" missed=\"100\" covered=\"400\"/></sourcefile>");
    }
    out.push_str("</package><counter type=\"LINE\" missed=\"0\" covered=\"0\"/></report>");
    out
}

/// `go test -json` events for `tests` passing tests (run, output, pass each) in 100
/// packages, every 1,000th failing with a located message.
pub fn go_test_json(tests: u32) -> String {
    let mut out = String::new();
    for i in 0..tests {
        let pkg = format!("example.com/mod/pkg{}", i % 100);
        let test = format!("TestCase{i}");
        out.push_str(&format!(
            "{{\"Time\":\"2026-12-01T00:00:00Z\",\"Action\":\"run\",\"Package\":\"{pkg}\",\"Test\":\"{test}\"}}\n"
        ));
        out.push_str(&format!(
            "{{\"Time\":\"2026-12-01T00:00:00Z\",\"Action\":\"output\",\"Package\":\"{pkg}\",\"Test\":\"{test}\",\"Output\":\"=== RUN   {test}\\n\"}}\n"
        ));
        let action = if i % 1000 == 999 {
            out.push_str(&format!(
                "{{\"Time\":\"2026-12-01T00:00:00Z\",\"Action\":\"output\",\"Package\":\"{pkg}\",\"Test\":\"{test}\",\"Output\":\"    thing_test.go:{}: got 1, want 2\\n\"}}\n",
                i % 500 + 1
            ));
            "fail"
        } else {
            "pass"
        };
        out.push_str(&format!(
            "{{\"Time\":\"2026-12-01T00:00:00Z\",\"Action\":\"{action}\",\"Package\":\"{pkg}\",\"Test\":\"{test}\",\"Elapsed\":0.001}}\n"
        ));
    }
    out
}

/// A Go coverage profile of about `target_bytes`: blocks of 3 lines in files of 200 blocks.
pub fn go_cover(target_bytes: usize) -> String {
    let mut out = String::from("mode: set\n");
    let mut i = 0u64;
    while out.len() < target_bytes {
        let file = i / 200;
        let start = (i % 200) * 4 + 1;
        out.push_str(&format!(
            "example.com/mod/pkg{}/file{file}.go:{start}.14,{}.2 2 {}\n",
            file % 50,
            start + 2,
            i % 3 % 2
        ));
        i += 1;
    }
    out
}

/// `tsc --pretty false` output: `errors` errors over 500 files.
pub fn tsc(errors: u32) -> String {
    let mut out = String::new();
    for i in 0..errors {
        out.push_str(&format!(
            "src/module{}/file{}.ts({},{}): error TS2322: Type 'string' is not assignable to type 'number'.\n",
            i % 20,
            i % 500,
            i % 900 + 1,
            i % 40 + 1
        ));
    }
    out
}

/// Clover XML (istanbul's layout): `files` files of 500 lines in packages of 50, one line
/// in six a condition, about one in five not hit.
pub fn clover(files: u32) -> String {
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let mut out = String::with_capacity(files as usize * 500 * 40);
    out.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<coverage generated=\"1\" clover=\"3.2.0\">\n  <project timestamp=\"1\" name=\"All files\">\n    <metrics statements=\"0\" coveredstatements=\"0\"/>\n");
    for file in 0..files {
        if file % 50 == 0 {
            if file > 0 {
                out.push_str("    </package>\n");
            }
            let _ = writeln!(out, "    <package name=\"src.pkg{}\">", file / 50);
        }
        let _ = writeln!(
            out,
            "      <file name=\"m{file}.ts\" path=\"/home/ci/app/src/pkg{}/m{file}.ts\">",
            file / 50
        );
        for line in 1..=500 {
            let count = if rng.next() % 5 == 0 {
                0
            } else {
                rng.next() % 40 + 1
            };
            if line % 6 == 0 {
                let _ = writeln!(out, "        <line num=\"{line}\" count=\"{count}\" type=\"cond\" truecount=\"{count}\" falsecount=\"1\"/>");
            } else {
                let _ = writeln!(
                    out,
                    "        <line num=\"{line}\" count=\"{count}\" type=\"stmt\"/>"
                );
            }
        }
        out.push_str("      </file>\n");
    }
    out.push_str("    </package>\n  </project>\n</coverage>\n");
    out
}

/// `jest --json` output: `tests` assertion results in files of 100, every 1,000th failing
/// with jest's message (the `●` header, Expected/Received and the code frame).
pub fn jest_json(tests: u32) -> String {
    let mut out = String::from("{\"numTotalTests\":0,\"success\":false,\"testResults\":[");
    for file in 0..tests.div_ceil(100) {
        if file > 0 {
            out.push(',');
        }
        let _ = write!(out, "{{\"name\":\"/home/ci/app/test/t{file}.test.js\",\"status\":\"failed\",\"message\":\"\",\"assertionResults\":[");
        for i in 0..100.min(tests - file * 100) {
            let n = file * 100 + i;
            if i > 0 {
                out.push(',');
            }
            let (status, messages) = if n % 1000 == 999 {
                ("failed", format!("[\"expect(received).toBe(expected) // Object.is equality\\n\\nExpected: {n}\\nReceived: 0\\n\\n    at Object.toBe (test/t{file}.test.js:{}:25)\"]", i + 3))
            } else {
                ("passed", "[]".to_string())
            };
            let _ = write!(out, "{{\"ancestorTitles\":[\"suite {file}\"],\"fullName\":\"suite {file} case {n}\",\"title\":\"case {n}\",\"status\":\"{status}\",\"duration\":1,\"failureMessages\":{messages},\"location\":{{\"line\":{},\"column\":3}}}}", i + 3);
        }
        out.push_str("]}");
    }
    out.push_str("]}\n");
    out
}

/// Istanbul's `coverage-final.json`: `files` files of 500 one-line statements, about one
/// in five not hit.
pub fn istanbul_json(files: u32) -> String {
    let mut rng = Rng(0x9FB2_1C65_1E98_DF25);
    let mut out = String::from("{");
    for file in 0..files {
        if file > 0 {
            out.push(',');
        }
        let path = format!("/home/ci/app/src/m{file}.ts");
        let _ = write!(out, "\"{path}\":{{\"path\":\"{path}\",\"statementMap\":{{");
        for s in 0..500 {
            if s > 0 {
                out.push(',');
            }
            let _ = write!(out, "\"{s}\":{{\"start\":{{\"line\":{},\"column\":2}},\"end\":{{\"line\":{},\"column\":30}}}}", s + 1, s + 1);
        }
        out.push_str("},\"fnMap\":{},\"branchMap\":{},\"s\":{");
        for s in 0..500 {
            if s > 0 {
                out.push(',');
            }
            let hits = if rng.next() % 5 == 0 {
                0
            } else {
                rng.next() % 40 + 1
            };
            let _ = write!(out, "\"{s}\":{hits}");
        }
        out.push_str("},\"f\":{},\"b\":{}}");
    }
    out.push_str("}\n");
    out
}
