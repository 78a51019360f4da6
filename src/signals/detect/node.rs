//! Node: the package manager (from the lockfile), the test runner's JUnit report,
//! coverage, ESLint and TypeScript.

use std::collections::BTreeMap;
use std::path::Path;

use crate::config::Check;
use crate::signals::report::ReportFormat;

use super::{check, project_file, source};

/// Where Node test runners write their reports (untracked files at the root).
pub(super) const NODE_JUNIT_PATH: &str = ".itergate-junit.xml";
pub(super) const NODE_JEST_PATH: &str = ".itergate-jest.json";
pub(super) const NODE_COVERAGE_DIR: &str = ".itergate-coverage";
pub(super) const NODE_LCOV_PATH: &str = ".itergate-coverage/lcov.info";

/// The package manager a Node project uses: `packageManager`, else its lockfile.
pub fn node_package_manager(root: &Path, manifest: Option<&serde_json::Value>) -> &'static str {
    let declared = manifest
        .and_then(|m| m.get("packageManager"))
        .and_then(|v| v.as_str())
        .unwrap_or("");
    for name in ["pnpm", "yarn", "bun", "npm"] {
        if declared.starts_with(&format!("{name}@")) {
            return name;
        }
    }
    let has = |f: &str| root.join(f).is_file();
    if has("pnpm-lock.yaml") {
        "pnpm"
    } else if has("yarn.lock") {
        "yarn"
    } else if has("bun.lockb") || has("bun.lock") {
        "bun"
    } else {
        "npm"
    }
}

/// The command that installs a Node project's locked dependencies, as its users do.
pub fn node_install_command(manager: &str) -> &'static str {
    match manager {
        "pnpm" => "pnpm install --frozen-lockfile",
        "yarn" => "yarn install --immutable",
        "bun" => "bun install --frozen-lockfile",
        _ => "npm ci --no-audit --no-fund",
    }
}

/// The command that installs a Node project's dependencies when it has no lockfile.
pub fn node_unlocked_install_command(manager: &str) -> &'static str {
    match manager {
        "pnpm" => "pnpm install --no-frozen-lockfile",
        "yarn" => "yarn install",
        "bun" => "bun install",
        _ => "npm install --no-audit --no-fund --no-package-lock",
    }
}

pub(super) fn add_dev_command(manager: &str, package: &str) -> String {
    match manager {
        "npm" => format!("npm install --save-dev {package}"),
        "yarn" => format!("yarn add --dev {package}"),
        other => format!("{other} add -D {package}"),
    }
}

/// The test runner to run: the one the `test` script runs (a project may have vitest for its
/// benchmarks and run its tests with mocha), else the first of vitest, jest, mocha it
/// depends on.
fn chosen_runner(test_script: &str, has_dep: &dyn Fn(&str) -> bool) -> Option<&'static str> {
    if node_test_args(test_script).is_some() {
        return Some("node:test");
    }
    let words: Vec<&str> = test_script
        .split(|c: char| c.is_whitespace() || matches!(c, '&' | ';' | '|' | '(' | ')'))
        .collect();
    let runs = |name: &str| {
        words
            .iter()
            .any(|w| *w == name || w.ends_with(&format!("/{name}")))
    };
    let runners = ["vitest", "jest", "mocha"];
    runners
        .into_iter()
        .find(|r| has_dep(r) && runs(r))
        .or_else(|| runners.into_iter().find(|r| has_dep(r)))
}

/// Why `runner` was chosen, for what `init` says it chose.
fn runner_reason(runner: Option<&str>, test_script: &str) -> Option<String> {
    let runner = runner?;
    let word = if runner == "node:test" {
        "--test"
    } else {
        runner
    };
    Some(if test_script.contains(word) {
        format!("the runner package.json's `test` script runs (`{test_script}`)")
    } else if test_script.is_empty() {
        "a dependency in package.json (there is no `test` script)".to_string()
    } else {
        format!("a dependency in package.json (the `test` script, `{test_script}`, names no runner itergate knows)")
    })
}

/// A Node project: the test runner itself with its machine-readable reporter (vitest,
/// jest, node:test, mocha), coverage where its provider is installed, `tsc --noEmit` when
/// the project has a tsconfig.json and TypeScript, and eslint when configured.
pub(super) fn node(
    root: &Path,
    checks: &mut BTreeMap<String, Check>,
    (notes, chosen): (&mut Vec<String>, &mut Vec<String>),
) -> &'static str {
    let manifest: Option<serde_json::Value> =
        project_file(root, "package.json").and_then(|t| serde_json::from_str(&t).ok());
    let manager = node_package_manager(root, manifest.as_ref());
    let deps: std::collections::BTreeSet<String> = ["dependencies", "devDependencies"]
        .iter()
        .filter_map(|k| manifest.as_ref()?.get(*k)?.as_object())
        .flat_map(|o| o.keys().cloned())
        .collect();
    let has_dep = |name: &str| deps.contains(name);
    let test_script = manifest
        .as_ref()
        .and_then(|m| m.get("scripts")?.get("test")?.as_str())
        .unwrap_or("")
        .to_string();
    let add = |p: &str| add_dev_command(manager, p);
    let runner = chosen_runner(&test_script, &has_dep);
    if let Some((name, why)) = runner.zip(runner_reason(runner, &test_script)) {
        chosen.push(format!("tests: {name}, {why}"));
    }
    if runner == Some("vitest") {
        let coverage = ["@vitest/coverage-v8", "@vitest/coverage-istanbul"]
            .iter()
            .any(|p| has_dep(p));
        let mut run = format!(
            "npx --no-install vitest run --reporter=default --reporter=junit --outputFile.junit={NODE_JUNIT_PATH}"
        );
        let mut report = vec![source(ReportFormat::Junit, Some(NODE_JUNIT_PATH))];
        if coverage {
            run.push_str(&format!(
                " --coverage.enabled --coverage.reporter=lcov --coverage.reportsDirectory={NODE_COVERAGE_DIR} --coverage.reportOnFailure"
            ));
            report.push(source(ReportFormat::Lcov, Some(NODE_LCOV_PATH)));
        } else {
            notes.push(format!(
                "coverage: no vitest coverage provider is installed; `{}`, then run `itergate init --force`",
                add("@vitest/coverage-v8")
            ));
        }
        checks.insert(
            "tests".into(),
            Check {
                report,
                ..check(&run, ReportFormat::Junit, None)
            },
        );
    } else if runner == Some("jest") {
        let run = format!(
            "npx --no-install jest --ci --json --outputFile={NODE_JEST_PATH} --testLocationInResults --coverage --coverageReporters=lcov --coverageDirectory={NODE_COVERAGE_DIR}"
        );
        let report = vec![
            source(ReportFormat::JestJson, Some(NODE_JEST_PATH)),
            source(ReportFormat::Lcov, Some(NODE_LCOV_PATH)),
        ];
        checks.insert(
            "tests".into(),
            Check {
                report,
                ..check(&run, ReportFormat::JestJson, None)
            },
        );
    } else if let Some(args) = node_test_args(&test_script).filter(|_| runner == Some("node:test"))
    {
        // node:test: TAP on stdout (nested tests, error/expected/actual, location), LCOV
        // from the built-in coverage (Node 20.11 and later).
        let run = format!(
            "node --test --test-reporter=tap --test-reporter-destination=stdout --experimental-test-coverage --test-reporter=lcov --test-reporter-destination={NODE_LCOV_PATH}{args}"
        );
        let report = vec![
            source(ReportFormat::Tap, None),
            source(ReportFormat::Lcov, Some(NODE_LCOV_PATH)),
        ];
        checks.insert(
            "tests".into(),
            Check {
                report,
                ..check(
                    &format!("mkdir -p {NODE_COVERAGE_DIR} && {run}"),
                    ReportFormat::Tap,
                    None,
                )
            },
        );
    } else if runner == Some("mocha") {
        let mocha = format!("mocha --reporter xunit --reporter-option output={NODE_JUNIT_PATH}");
        // Coverage through the wrapper the project has: c8 (V8's), else nyc (istanbul's).
        let wrapper = ["c8", "nyc"].into_iter().find(|w| has_dep(w));
        let run = match wrapper {
            Some(w) => format!(
                "npx --no-install {w} --reporter=lcov --report-dir={NODE_COVERAGE_DIR} {mocha}"
            ),
            None => format!("npx --no-install {mocha}"),
        };
        let mut report = vec![source(ReportFormat::Junit, Some(NODE_JUNIT_PATH))];
        if wrapper.is_some() {
            report.push(source(ReportFormat::Lcov, Some(NODE_LCOV_PATH)));
        } else {
            notes.push(format!(
                "coverage: mocha has none of its own; `{}`, then run `itergate init --force`",
                add("c8")
            ));
        }
        checks.insert(
            "tests".into(),
            Check {
                report,
                ..check(&run, ReportFormat::Junit, None)
            },
        );
    } else if !test_script.is_empty() {
        // An unknown runner: its exit status and the failures its output names.
        let run = format!("{manager} test");
        checks.insert(
            "tests".into(),
            Check {
                report: Vec::new(),
                ..check(&run, ReportFormat::Junit, None)
            },
        );
        notes.push(format!(
            "tests: `{manager} test` runs `{test_script}`, whose runner itergate does not know: failures are read from its output, not per test; point `checks.tests` at a JUnit or TAP report for per-test results and coverage"
        ));
    } else {
        notes.push("tests: package.json has no test script and no known test runner (vitest, jest, node:test, mocha)".into());
    }
    if root.join("tsconfig.json").is_file() {
        if has_dep("typescript") {
            checks.insert(
                "types".into(),
                check(
                    "npx --no-install tsc --noEmit -p . --pretty false",
                    ReportFormat::Tsc,
                    None,
                ),
            );
        } else {
            notes.push(format!(
                "types: tsconfig.json exists but typescript is not a dependency; `{}`, then run `itergate init --force`",
                add("typescript")
            ));
        }
    }
    if eslint_configured(root) {
        checks.insert(
            "lint".into(),
            check(
                "npx --no-install eslint -f json --ignore-pattern '.itergate-*/' .",
                ReportFormat::EslintJson,
                None,
            ),
        );
    } else {
        notes.push("lint: no eslint configuration found (eslint.config.js or .eslintrc); with one, eslint is checked".into());
    }
    manager
}

/// The arguments after `node --test` in a test script (` test/`), when it runs node:test.
pub(super) fn node_test_args(script: &str) -> Option<String> {
    let at = script.find("node --test")?;
    let rest = &script[at + "node --test".len()..];
    let end = rest.find(['&', '|', ';']).unwrap_or(rest.len());
    let args: Vec<&str> = rest[..end]
        .split_whitespace()
        .filter(|a| {
            !a.starts_with("--test-reporter") && !a.starts_with("--experimental-test-coverage")
        })
        .collect();
    Some(args.iter().map(|a| format!(" {a}")).collect())
}

pub(super) fn eslint_configured(root: &Path) -> bool {
    let files = [
        "eslint.config.js",
        "eslint.config.mjs",
        "eslint.config.cjs",
        "eslint.config.ts",
        ".eslintrc",
        ".eslintrc.js",
        ".eslintrc.cjs",
        ".eslintrc.json",
        ".eslintrc.yml",
        ".eslintrc.yaml",
    ];
    files.iter().any(|f| root.join(f).is_file())
        || project_file(root, "package.json").is_some_and(|text| text.contains("\"eslintConfig\""))
}
