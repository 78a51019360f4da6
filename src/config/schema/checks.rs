//! `checks`: each check's command, its reports (one or many, each with its format), its
//! timeout and visibility.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Visibility {
    /// Details reach agent-visible output.
    #[default]
    Full,
    /// Holdout: only pass/total is visible to agents; details go to a private path.
    AggregateOnly,
}

/// Where a check's report is read from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReportSource {
    /// A report format (`junit`, `lcov`, `sarif`, ...): an unknown name is an error when
    /// the configuration loads, with its place in the file, not after the checks ran.
    #[serde(deserialize_with = "report_format")]
    pub format: crate::model::ReportFormat,
    /// The report's file, from the check's working directory: a file, a directory or a glob
    /// (`target/surefire-reports/*.xml`), whose files are read as one report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
    /// `stdout` to read the report from the command's standard output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
}

pub(super) fn report_format<'de, D>(deserializer: D) -> Result<crate::model::ReportFormat, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let name = String::deserialize(deserializer)?;
    name.parse().map_err(serde::de::Error::custom)
}

/// `report:` as the schema describes it: one report or a list of them.
fn one_or_many_reports_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let one = generator.subschema_for::<ReportSource>();
    schemars::json_schema!({
        "anyOf": [one, { "type": "array", "items": one }],
    })
}

/// A check's reports: one (`report: {format: junit, ...}`) or several (`report: [...]`, a
/// command that writes JUnit and coverage in one run). One is written back as a mapping, so
/// a configuration's fingerprint does not change with this type.
fn one_or_many_reports<'de, D>(deserializer: D) -> Result<Vec<ReportSource>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    struct OneOrMany;
    impl<'de> serde::de::Visitor<'de> for OneOrMany {
        type Value = Vec<ReportSource>;

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a report (`{format: ..., path: ...}`) or a list of reports")
        }

        fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            ReportSource::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                .map(|one| vec![one])
        }

        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
            Vec::deserialize(serde::de::value::SeqAccessDeserializer::new(seq))
        }

        fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(Vec::new())
        }
    }
    deserializer.deserialize_any(OneOrMany)
}

fn serialize_reports<S: serde::Serializer>(
    reports: &[ReportSource],
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match reports {
        [one] => one.serialize(serializer),
        many => many.serialize(serializer),
    }
}

/// A named command whose report feeds one or more scores.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Check {
    /// Shell command; absent when the check only ingests a report an earlier step wrote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    /// The reports the command writes (none: its exit status is the signal). Each is read
    /// into an outcome of its own: the first is named like the check, each further one
    /// `<check>.<format>` (`tests.cobertura`), with `.<n>` (its place in the list, from 1)
    /// added when the check has two reports of that format.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "one_or_many_reports",
        serialize_with = "serialize_reports"
    )]
    #[schemars(schema_with = "one_or_many_reports_schema")]
    pub report: Vec<ReportSource>,
    /// Seconds before the command is stopped.
    #[serde(default = "default_check_timeout_s")]
    pub timeout: u64,
    /// Environment variables for the command, on top of the process environment.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Directory the command runs in, relative to the repository root (default: the
    /// root).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workdir: Option<PathBuf>,
    /// `full`: agents see every failure; `aggregate_only`: they see pass/total only (a
    /// holdout).
    #[serde(default)]
    pub visibility: Visibility,
    /// A failing run of the command, or a new lint error in its report, makes the iteration
    /// VOID: no score, never the best output.
    #[serde(default)]
    pub void_on_violation: bool,
    /// The check's own files, as globs from the repository root (`holdout/**`): for an
    /// `aggregate_only` check, never delivered to an agent, named or listed. Its report
    /// paths, working directory and the paths its command names are protected anyway.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
    /// Checks whose commands must finish before this one starts (one reads a report
    /// another writes); checks run concurrently otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub needs: Vec<String>,
}

impl Check {
    /// The name of each report's outcome, in the order of `report`: `name` for the first,
    /// `name.<format>` for each further one (`name.<format>.<n>` when the format repeats).
    pub fn report_names(&self, name: &str) -> Vec<String> {
        self.report
            .iter()
            .enumerate()
            .map(|(index, source)| {
                if index == 0 {
                    return name.to_string();
                }
                let format = source.format.name();
                let repeats = self
                    .report
                    .iter()
                    .filter(|r| r.format == source.format)
                    .count();
                if repeats > 1 {
                    format!("{name}.{format}.{}", index + 1)
                } else {
                    format!("{name}.{format}")
                }
            })
            .collect()
    }
}

/// The report an outcome named `outcome` was read from, if it came from a configured check.
pub fn report_of<'c>(
    checks: &'c BTreeMap<String, Check>,
    outcome: &str,
) -> Option<&'c ReportSource> {
    if let Some(check) = checks.get(outcome) {
        return check.report.first();
    }
    checks.iter().find_map(|(name, check)| {
        let index = check.report_names(name).iter().position(|n| n == outcome)?;
        check.report.get(index)
    })
}

fn default_check_timeout_s() -> u64 {
    600
}
