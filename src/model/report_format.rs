//! The report formats itergate reads, by name: what the configuration, the CLI and the
//! parsers (`signals::report`) share.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Declares [`ReportFormat`] from one table: each format's variant, CLI name, the summary
/// it produces and what a document of it looks like ("expected ..."), so [`ReportFormat::ALL`]
/// and every mapping list exactly the variants there are.
macro_rules! report_formats {
    ($($(#[$doc:meta])* $variant:ident => $name:literal, $kind:ident, $expected:literal;)*) => {
        /// A report format, named as on the command line (`--format junit`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        pub enum ReportFormat {
            $($(#[$doc])* #[serde(rename = $name)] $variant,)*
        }

        impl ReportFormat {
            /// Every format, in the order the CLI lists them.
            pub const ALL: &'static [ReportFormat] = &[$(ReportFormat::$variant),*];

            /// The CLI name (`cargo-json`, `ruff-json`, ...).
            pub fn name(self) -> &'static str {
                match self {
                    $(ReportFormat::$variant => $name,)*
                }
            }

            /// The summary this format produces.
            pub fn kind(self) -> ReportKind {
                match self {
                    $(ReportFormat::$variant => ReportKind::$kind,)*
                }
            }

            /// What a document of this format looks like, for error messages ("expected ...").
            pub fn expected(self) -> &'static str {
                match self {
                    $(ReportFormat::$variant => $expected,)*
                }
            }
        }
    };
}

report_formats! {
    /// JUnit XML (cargo-nextest, pytest, jest-junit, go-junit-report, Maven Surefire).
    Junit => "junit", Tests, "a complete JUnit XML document";
    /// Test Anything Protocol, versions 12 to 14.
    Tap => "tap", Tests, "a TAP stream (`TAP version 13`, a plan `1..N`, `ok`/`not ok` lines)";
    /// The plain text `cargo test` prints (libtest's default formatter).
    Libtest => "libtest", Tests, "`cargo test` output (`running N tests` ... `test result:`)";
    /// LCOV tracefiles (`SF:`/`DA:`/`end_of_record`).
    Lcov => "lcov", Coverage, "an LCOV tracefile (`SF:`, `DA:`, `end_of_record`)";
    /// Cobertura XML (coverage.py, JaCoCo converters, cargo-llvm-cov).
    Cobertura => "cobertura", Coverage, "a complete Cobertura XML document";
    /// Clover XML (istanbul's `clover` reporter, PHPUnit, Kover).
    Clover => "clover", Coverage, "a complete Clover XML document (`<coverage>`, `<project>`)";
    /// JaCoCo XML (`jacoco:report`, Gradle's `jacocoTestReport`).
    Jacoco => "jacoco", Coverage, "a complete JaCoCo XML document (`<report>`, `<package>`, `<sourcefile>`)";
    /// SARIF 2.1.0.
    Sarif => "sarif", Lint, "a SARIF 2.1.0 JSON document";
    /// `cargo build|check|clippy --message-format=json` lines.
    CargoJson => "cargo-json", Lint, "cargo `--message-format=json` lines";
    /// Checkstyle XML.
    Checkstyle => "checkstyle", Lint, "a complete checkstyle XML document";
    /// `ruff check --output-format=json`.
    RuffJson => "ruff-json", Lint, "`ruff check --output-format=json` output (a JSON array)";
    /// `mypy --output json` (JSON lines).
    MypyJson => "mypy-json", Lint, "`mypy --output json` output (a JSON object per line)";
    /// `pyright --outputjson`.
    PyrightJson => "pyright-json", Lint, "`pyright --outputjson` output (an object with `generalDiagnostics`)";
    /// `eslint --format json`.
    EslintJson => "eslint-json", Lint, "`eslint --format json` output (a JSON array)";
    /// `lizard --csv` or `lizard --xml`.
    Lizard => "lizard", Complexity, "`lizard --csv` or `lizard --xml` output";
    /// `go test -json` (test2json events).
    GoTestJson => "go-test-json", Tests, "`go test -json` output (JSON lines with an `Action`)";
    /// `go test -coverprofile` profiles.
    GoCover => "go-cover", Coverage, "a Go coverage profile (`mode: set`, then blocks)";
    /// `go vet` output (`file.go:line:col: message`).
    GoVet => "go-vet", Lint, "`go vet` output (`file.go:line:col: message` lines)";
    /// `tsc --noEmit` output (`file(line,col): error TSnnnn: message`).
    Tsc => "tsc", Lint, "`tsc --noEmit` output (`file(line,col): error TSnnnn: message`)";
    /// `jest --json` or `vitest --reporter=json`.
    JestJson => "jest-json", Tests, "`jest --json` or `vitest --reporter=json` output";
    /// Istanbul's `coverage-final.json`.
    IstanbulJson => "istanbul-json", Coverage, "istanbul's `coverage-final.json` (an object of files with a `statementMap`)";
}

/// Which summary a format produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReportKind {
    Tests,
    Lint,
    Coverage,
    Complexity,
}

impl ReportFormat {
    /// Formats whose tool prints nothing when all is well: empty input is a clean report.
    pub fn empty_is_clean(self) -> bool {
        matches!(
            self,
            ReportFormat::GoVet | ReportFormat::Tsc | ReportFormat::MypyJson
        )
    }
}

/// In `.itergate.yml`'s schema: one of the names.
impl schemars::JsonSchema for ReportFormat {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ReportFormat".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let names: Vec<&str> = ReportFormat::ALL.iter().map(|f| f.name()).collect();
        schemars::json_schema!({
            "description": "A report format, as `--format` names it.",
            "type": "string",
            "enum": names,
        })
    }
}

impl fmt::Display for ReportFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An unknown format name; its message lists the valid ones.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown report format `{given}`; expected one of: {}", valid_names())]
pub struct UnknownFormat {
    pub given: String,
}

fn valid_names() -> String {
    let names: Vec<&str> = ReportFormat::ALL.iter().map(|f| f.name()).collect();
    names.join(", ")
}

impl FromStr for ReportFormat {
    type Err = UnknownFormat;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let wanted = s.trim().to_ascii_lowercase().replace('_', "-");
        ReportFormat::ALL
            .iter()
            .copied()
            .find(|f| f.name() == wanted)
            .ok_or_else(|| UnknownFormat {
                given: s.to_string(),
            })
    }
}
