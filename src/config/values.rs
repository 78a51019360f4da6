//! Checked value types of the configuration: each rejects a bad value while the YAML is
//! being read, so the error carries the line and column of the value itself.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::model::Dimension;

/// A number in 0..=1 (a score, a threshold, a weight).
#[derive(
    Debug, Clone, Copy, PartialEq, PartialOrd, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(try_from = "f64", into = "f64")]
pub struct Fraction(f64);

impl Fraction {
    /// For constants known to be in range.
    pub const fn new_const(value: f64) -> Self {
        Fraction(value)
    }

    pub fn get(self) -> f64 {
        self.0
    }
}

impl TryFrom<f64> for Fraction {
    type Error = String;
    fn try_from(value: f64) -> Result<Self, String> {
        if value.is_finite() && (0.0..=1.0).contains(&value) {
            Ok(Fraction(value))
        } else {
            Err(format!("expected a number from 0 to 1, found {value}"))
        }
    }
}

impl From<Fraction> for f64 {
    fn from(f: Fraction) -> f64 {
        f.0
    }
}

/// A finite number >= 0 (money).
#[derive(
    Debug, Clone, Copy, PartialEq, PartialOrd, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(try_from = "f64", into = "f64")]
pub struct NonNegative(f64);

impl NonNegative {
    pub fn get(self) -> f64 {
        self.0
    }
}

impl TryFrom<f64> for NonNegative {
    type Error = String;
    fn try_from(value: f64) -> Result<Self, String> {
        if value.is_finite() && value >= 0.0 {
            Ok(NonNegative(value))
        } else {
            Err(format!("expected a number >= 0, found {value}"))
        }
    }
}

impl From<NonNegative> for f64 {
    fn from(n: NonNegative) -> f64 {
        n.0
    }
}

/// Weights of the four dimensions in the aggregate quality; they sum to 1.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(try_from = "RawWeights")]
pub struct QualityWeights {
    /// Weight of passed / total tests.
    pub tests_passing: f64,
    /// Weight of the lint score (`scoring.code_quality`).
    pub code_quality: f64,
    /// Weight of line coverage.
    pub coverage: f64,
    /// Weight of the complexity of changed functions (`scoring.complexity_threshold`).
    pub complexity: f64,
}

impl Default for QualityWeights {
    fn default() -> Self {
        QualityWeights {
            tests_passing: 0.4,
            code_quality: 0.3,
            coverage: 0.2,
            complexity: 0.1,
        }
    }
}

impl QualityWeights {
    pub fn get(&self, dimension: Dimension) -> f64 {
        match dimension {
            Dimension::TestsPassing => self.tests_passing,
            Dimension::CodeQuality => self.code_quality,
            Dimension::Coverage => self.coverage,
            Dimension::Complexity => self.complexity,
        }
    }
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
struct RawWeights {
    /// Weight of passed / total tests.
    tests_passing: f64,
    /// Weight of the lint score (`scoring.code_quality`).
    code_quality: f64,
    /// Weight of line coverage.
    coverage: f64,
    /// Weight of the complexity of changed functions (`scoring.complexity_threshold`).
    complexity: f64,
}

impl Default for RawWeights {
    fn default() -> Self {
        let d = QualityWeights::default();
        RawWeights {
            tests_passing: d.tests_passing,
            code_quality: d.code_quality,
            coverage: d.coverage,
            complexity: d.complexity,
        }
    }
}

const WEIGHT_SUM_TOLERANCE: f64 = 1e-6;

impl TryFrom<RawWeights> for QualityWeights {
    type Error = String;
    fn try_from(raw: RawWeights) -> Result<Self, String> {
        let all = [
            ("tests_passing", raw.tests_passing),
            ("code_quality", raw.code_quality),
            ("coverage", raw.coverage),
            ("complexity", raw.complexity),
        ];
        if let Some((key, value)) = all.iter().find(|(_, v)| !v.is_finite() || *v < 0.0) {
            return Err(format!("weight `{key}` is {value}; expected a number >= 0"));
        }
        let sum: f64 = all.iter().map(|(_, v)| v).sum();
        if (sum - 1.0).abs() > WEIGHT_SUM_TOLERANCE {
            return Err(format!(
                "the weights sum to {sum}; expected them to sum to 1 \
                 (unset weights default to 0.4/0.3/0.2/0.1)"
            ));
        }
        Ok(QualityWeights {
            tests_passing: raw.tests_passing,
            code_quality: raw.code_quality,
            coverage: raw.coverage,
            complexity: raw.complexity,
        })
    }
}

/// A metric a requirement can name: a score, the aggregate quality, or a count.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(try_from = "String", into = "String")]
pub struct Metric(String);

impl Metric {
    /// Every metric name a requirement may use.
    pub const KNOWN: [&'static str; 15] = [
        "quality",
        "tests_passing",
        "code_quality",
        "coverage",
        "complexity",
        "patch_coverage",
        "coverage.project",
        "tests.failed",
        "tests.failed_total",
        "tests.skipped",
        "lint.errors",
        "lint.warnings",
        "issues.blockers",
        "issues.warnings",
        "confidence",
    ];

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for Metric {
    type Error = String;
    fn try_from(name: String) -> Result<Self, String> {
        if Metric::KNOWN.contains(&name.as_str()) {
            return Ok(Metric(name));
        }
        let hint = super::did_you_mean(&name, Metric::KNOWN.iter().copied())
            .map(|m| format!(" (did you mean `{m}`?)"))
            .unwrap_or_default();
        Err(format!(
            "unknown metric `{name}`{hint}; expected one of: {}",
            Metric::KNOWN.join(", ")
        ))
    }
}

impl From<Metric> for String {
    fn from(m: Metric) -> String {
        m.0
    }
}

/// A repository permission level, ordered `None < Read < Triage < Write < Maintain < Admin`.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Default,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Permission {
    #[default]
    None,
    Read,
    Triage,
    Write,
    Maintain,
    Admin,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a permission level (admin, maintain, write, triage, read, none)")]
pub struct PermissionError(pub String);

impl FromStr for Permission {
    type Err = PermissionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "admin" => Ok(Permission::Admin),
            "maintain" => Ok(Permission::Maintain),
            "write" | "push" => Ok(Permission::Write),
            "triage" => Ok(Permission::Triage),
            "read" | "pull" => Ok(Permission::Read),
            "none" => Ok(Permission::None),
            _ => Err(PermissionError(s.to_string())),
        }
    }
}

impl Permission {
    /// From the collaborator-permission answer: `role_name` is the finer one (it knows
    /// maintain and triage) unless it is a custom role; then `permission` decides.
    pub fn from_github(role_name: Option<&str>, permission: Option<&str>) -> Self {
        role_name
            .and_then(|r| r.parse().ok())
            .or_else(|| permission.and_then(|p| p.parse().ok()))
            .unwrap_or(Permission::None)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Permission::None => "none",
            Permission::Read => "read",
            Permission::Triage => "triage",
            Permission::Write => "write",
            Permission::Maintain => "maintain",
            Permission::Admin => "admin",
        }
    }
}

impl fmt::Display for Permission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
