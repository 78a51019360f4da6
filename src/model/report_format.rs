//! The report formats itergate reads, by name: what the configuration, the CLI and the
//! parsers (`signals::report`) share.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A report format, named as on the command line (`--format junit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReportFormat {
    /// JUnit XML (cargo-nextest, pytest, jest-junit, go-junit-report, Maven Surefire).
    Junit,
    /// Test Anything Protocol, versions 12 to 14.
    Tap,
    /// The plain text `cargo test` prints (libtest's default formatter).
    Libtest,
    /// LCOV tracefiles (`SF:`/`DA:`/`end_of_record`).
    Lcov,
    /// Cobertura XML (coverage.py, JaCoCo converters, cargo-llvm-cov).
    Cobertura,
    /// Clover XML (istanbul's `clover` reporter, PHPUnit, Kover).
    Clover,
    /// JaCoCo XML (`jacoco:report`, Gradle's `jacocoTestReport`).
    Jacoco,
    /// SARIF 2.1.0.
    Sarif,
    /// `cargo build|check|clippy --message-format=json` lines.
    CargoJson,
    /// Checkstyle XML.
    Checkstyle,
    /// `ruff check --output-format=json`.
    RuffJson,
    /// `mypy --output json` (JSON lines).
    MypyJson,
    /// `pyright --outputjson`.
    PyrightJson,
    /// `eslint --format json`.
    EslintJson,
    /// `lizard --csv` or `lizard --xml`.
    Lizard,
    /// `go test -json` (test2json events).
    GoTestJson,
    /// `go test -coverprofile` profiles.
    GoCover,
    /// `go vet` output (`file.go:line:col: message`).
    GoVet,
    /// `tsc --noEmit` output (`file(line,col): error TSnnnn: message`).
    Tsc,
    /// `jest --json` or `vitest --reporter=json`.
    JestJson,
    /// Istanbul's `coverage-final.json`.
    IstanbulJson,
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
    /// Every format, in the order the CLI lists them.
    pub const ALL: [ReportFormat; 21] = [
        ReportFormat::Junit,
        ReportFormat::Tap,
        ReportFormat::Libtest,
        ReportFormat::Lcov,
        ReportFormat::Cobertura,
        ReportFormat::Clover,
        ReportFormat::Jacoco,
        ReportFormat::Sarif,
        ReportFormat::CargoJson,
        ReportFormat::Checkstyle,
        ReportFormat::RuffJson,
        ReportFormat::MypyJson,
        ReportFormat::PyrightJson,
        ReportFormat::EslintJson,
        ReportFormat::Lizard,
        ReportFormat::GoTestJson,
        ReportFormat::GoCover,
        ReportFormat::GoVet,
        ReportFormat::Tsc,
        ReportFormat::JestJson,
        ReportFormat::IstanbulJson,
    ];

    /// The CLI name (`cargo-json`, `ruff-json`, ...).
    pub fn name(self) -> &'static str {
        match self {
            ReportFormat::Junit => "junit",
            ReportFormat::Tap => "tap",
            ReportFormat::Libtest => "libtest",
            ReportFormat::Lcov => "lcov",
            ReportFormat::Cobertura => "cobertura",
            ReportFormat::Clover => "clover",
            ReportFormat::Jacoco => "jacoco",
            ReportFormat::Sarif => "sarif",
            ReportFormat::CargoJson => "cargo-json",
            ReportFormat::Checkstyle => "checkstyle",
            ReportFormat::RuffJson => "ruff-json",
            ReportFormat::MypyJson => "mypy-json",
            ReportFormat::PyrightJson => "pyright-json",
            ReportFormat::EslintJson => "eslint-json",
            ReportFormat::Lizard => "lizard",
            ReportFormat::GoTestJson => "go-test-json",
            ReportFormat::GoCover => "go-cover",
            ReportFormat::GoVet => "go-vet",
            ReportFormat::Tsc => "tsc",
            ReportFormat::JestJson => "jest-json",
            ReportFormat::IstanbulJson => "istanbul-json",
        }
    }

    /// The summary this format produces.
    pub fn kind(self) -> ReportKind {
        match self {
            ReportFormat::Junit
            | ReportFormat::Tap
            | ReportFormat::Libtest
            | ReportFormat::GoTestJson
            | ReportFormat::JestJson => ReportKind::Tests,
            ReportFormat::Lcov
            | ReportFormat::Cobertura
            | ReportFormat::Clover
            | ReportFormat::Jacoco
            | ReportFormat::GoCover
            | ReportFormat::IstanbulJson => ReportKind::Coverage,
            ReportFormat::Lizard => ReportKind::Complexity,
            ReportFormat::Sarif
            | ReportFormat::CargoJson
            | ReportFormat::Checkstyle
            | ReportFormat::RuffJson
            | ReportFormat::MypyJson
            | ReportFormat::PyrightJson
            | ReportFormat::EslintJson
            | ReportFormat::GoVet
            | ReportFormat::Tsc => ReportKind::Lint,
        }
    }

    /// What a document of this format looks like, for error messages ("expected ...").
    pub fn expected(self) -> &'static str {
        match self {
            ReportFormat::Junit => "a complete JUnit XML document",
            ReportFormat::Tap => {
                "a TAP stream (`TAP version 13`, a plan `1..N`, `ok`/`not ok` lines)"
            }
            ReportFormat::Libtest => "`cargo test` output (`running N tests` ... `test result:`)",
            ReportFormat::Lcov => "an LCOV tracefile (`SF:`, `DA:`, `end_of_record`)",
            ReportFormat::Cobertura => "a complete Cobertura XML document",
            ReportFormat::Clover => "a complete Clover XML document (`<coverage>`, `<project>`)",
            ReportFormat::Jacoco => {
                "a complete JaCoCo XML document (`<report>`, `<package>`, `<sourcefile>`)"
            }
            ReportFormat::Sarif => "a SARIF 2.1.0 JSON document",
            ReportFormat::CargoJson => "cargo `--message-format=json` lines",
            ReportFormat::Checkstyle => "a complete checkstyle XML document",
            ReportFormat::RuffJson => "`ruff check --output-format=json` output (a JSON array)",
            ReportFormat::MypyJson => "`mypy --output json` output (a JSON object per line)",
            ReportFormat::PyrightJson => {
                "`pyright --outputjson` output (an object with `generalDiagnostics`)"
            }
            ReportFormat::EslintJson => "`eslint --format json` output (a JSON array)",
            ReportFormat::Lizard => "`lizard --csv` or `lizard --xml` output",
            ReportFormat::GoTestJson => "`go test -json` output (JSON lines with an `Action`)",
            ReportFormat::GoCover => "a Go coverage profile (`mode: set`, then blocks)",
            ReportFormat::GoVet => "`go vet` output (`file.go:line:col: message` lines)",
            ReportFormat::Tsc => "`tsc --noEmit` output (`file(line,col): error TSnnnn: message`)",
            ReportFormat::JestJson => "`jest --json` or `vitest --reporter=json` output",
            ReportFormat::IstanbulJson => {
                "istanbul's `coverage-final.json` (an object of files with a `statementMap`)"
            }
        }
    }

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
            .into_iter()
            .find(|f| f.name() == wanted)
            .ok_or_else(|| UnknownFormat {
                given: s.to_string(),
            })
    }
}
