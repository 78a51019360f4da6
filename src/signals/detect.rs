//! Toolchain detection: the checks itergate runs when a repository has none configured, and
//! the starting point `itergate init` writes.
//!
//! It measures what the toolchain can measure: tests always; coverage where a coverage
//! tool is installed (pytest-cov when Python can import it, written by the same pytest run
//! as the JUnit report; cargo-llvm-cov, else cargo-tarpaulin); the linter the project
//! configures (`[tool.ruff]` in pyproject.toml or a ruff.toml; an eslint configuration),
//! even before it is installed. What is missing is said in [`Detected::notes`], each with
//! the command that installs it. Checks never change the work tree: ruff runs with
//! `--no-fix` whatever the project's `fix` setting.

use std::collections::BTreeMap;
use std::path::Path;

use crate::config::{Check, ReportSource, Visibility};
use crate::signals::report::ReportFormat;

/// A detected toolchain and the checks chosen for it.
#[derive(Debug, Clone, PartialEq)]
pub struct Detected {
    pub toolchain: &'static str,
    pub checks: BTreeMap<String, Check>,
    /// What could be measured but is not, and how to install what is missing.
    pub notes: Vec<String>,
}

fn source(format: ReportFormat, path: Option<&str>) -> ReportSource {
    ReportSource {
        format,
        path: path.map(Into::into),
        from: path.is_none().then(|| "stdout".into()),
    }
}

fn check(run: &str, format: ReportFormat, path: Option<&str>) -> Check {
    Check {
        run: Some(run.into()),
        report: vec![source(format, path)],
        timeout: 900,
        env: BTreeMap::new(),
        workdir: None,
        visibility: Visibility::Full,
        void_on_violation: false,
        files: Vec::new(),
        needs: Vec::new(),
    }
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

/// The first toolchain found at `root`: Cargo, Python, Node (npm, pnpm, yarn, bun), Go,
/// Maven, Gradle.
pub fn detect(root: &Path) -> Option<Detected> {
    let has = |f: &str| root.join(f).exists();
    let mut checks = BTreeMap::new();
    let mut notes = Vec::new();
    let toolchain = if has("Cargo.toml") {
        cargo(root, &mut checks, &mut notes);
        "cargo"
    } else if has("pyproject.toml") || has("setup.py") || has("requirements.txt") {
        python(root, &mut checks, &mut notes);
        "python"
    } else if has("package.json") {
        node(root, &mut checks, &mut notes)
    } else if has("go.mod") {
        go(root, &mut checks, &mut notes);
        "go"
    } else if has("pom.xml") {
        maven(root, &mut checks, &mut notes);
        "maven"
    } else if GRADLE_BUILDS.iter().any(|f| has(f)) {
        gradle(root, &mut checks, &mut notes);
        "gradle"
    } else {
        return None;
    };
    complexity(&mut checks, &mut notes);
    Some(Detected {
        toolchain,
        checks,
        notes,
    })
}

/// Where Maven Surefire writes its JUnit reports: one file per test class, in every module.
const SUREFIRE_REPORTS: &str = "**/target/surefire-reports/TEST-*.xml";

/// Where JaCoCo's `report` goal writes its XML: in every module.
const JACOCO_REPORTS: &str = "**/target/site/jacoco/jacoco.xml";
/// Where the checkstyle plugin's `checkstyle` goal writes its XML: in every module.
const CHECKSTYLE_REPORTS: &str = "**/target/checkstyle-result.xml";

/// A Maven project: `mvn test` (the wrapper when the project has one), read from Surefire's
/// JUnit files; coverage from JaCoCo and lint from checkstyle when the build configures
/// them (the root `pom.xml`, where a multi-module build declares its plugins).
fn maven(root: &Path, checks: &mut BTreeMap<String, Check>, notes: &mut Vec<String>) {
    let mvn = if root.join("mvnw").is_file() {
        "./mvnw"
    } else {
        if !on_path("mvn") {
            notes.push(
                "tests: `mvn` is not on PATH and the project has no `mvnw`; install Maven (Debian: `apt-get install maven`)"
                    .into(),
            );
        }
        "mvn"
    };
    let pom = std::fs::read_to_string(root.join("pom.xml")).unwrap_or_default();
    // Batch mode, no download progress; a failing test still writes every report.
    let command = format!("{mvn} -B -ntp test -Dsurefire.printSummary=true");
    let tests = if pom.contains("jacoco-maven-plugin") {
        // Failing tests do not stop the build before the coverage report; the failures are
        // read from Surefire's files, not from Maven's exit status.
        let command = format!("{command} -Dmaven.test.failure.ignore=true jacoco:report");
        Check {
            report: vec![
                source(ReportFormat::Junit, Some(SUREFIRE_REPORTS)),
                source(ReportFormat::Jacoco, Some(JACOCO_REPORTS)),
            ],
            ..check(&command, ReportFormat::Junit, None)
        }
    } else {
        notes.push(
            "coverage: the build does not configure jacoco-maven-plugin; add it (goal `prepare-agent`), then run `itergate init --force`"
                .into(),
        );
        check(&command, ReportFormat::Junit, Some(SUREFIRE_REPORTS))
    };
    checks.insert("tests".into(), tests);
    if pom.contains("maven-checkstyle-plugin") {
        checks.insert(
            "lint".into(),
            check(
                &format!("{mvn} -B -ntp checkstyle:checkstyle"),
                ReportFormat::Checkstyle,
                Some(CHECKSTYLE_REPORTS),
            ),
        );
    }
    if pom.contains("apache-rat-plugin") {
        notes.push(
            "the build checks licence headers with Apache RAT: add `.itergate.yml` to its `<excludes>`, or `mvn verify` fails on it"
                .into(),
        );
    }
}

/// The files that make a directory a Gradle build.
const GRADLE_BUILDS: [&str; 4] = [
    "build.gradle",
    "build.gradle.kts",
    "settings.gradle",
    "settings.gradle.kts",
];
/// Where Gradle's `test` task writes its JUnit reports: one file per test class.
const GRADLE_TEST_REPORTS: &str = "**/build/test-results/test/TEST-*.xml";
/// Where the jacoco plugin's `jacocoTestReport` writes its XML (when `xml.required`).
const GRADLE_JACOCO_REPORTS: &str = "**/build/reports/jacoco/test/jacocoTestReport.xml";

/// A Gradle build (Java or Kotlin): `./gradlew test` when the wrapper is committed (the
/// build's own Gradle), else `gradle`; JUnit XML from the test task; JaCoCo when a build
/// file applies its plugin (its XML report must be enabled: `xml.required = true`).
fn gradle(root: &Path, checks: &mut BTreeMap<String, Check>, notes: &mut Vec<String>) {
    let gradle = if root.join("gradlew").is_file() {
        "./gradlew"
    } else {
        if !on_path("gradle") {
            notes.push(
                "tests: `gradle` is not on PATH and the project has no `gradlew`; commit the wrapper (`gradle wrapper`) or install Gradle"
                    .into(),
            );
        }
        "gradle"
    };
    let build: String = GRADLE_BUILDS
        .iter()
        .filter_map(|f| std::fs::read_to_string(root.join(f)).ok())
        .collect();
    // `--continue`: a failing test task still lets the coverage report run.
    let command = format!("{gradle} test --continue --console=plain");
    let tests = if build.contains("jacoco") {
        Check {
            report: vec![
                source(ReportFormat::Junit, Some(GRADLE_TEST_REPORTS)),
                source(ReportFormat::Jacoco, Some(GRADLE_JACOCO_REPORTS)),
            ],
            ..check(
                &format!("{command} jacocoTestReport"),
                ReportFormat::Junit,
                None,
            )
        }
    } else {
        notes.push(
            "coverage: the build does not apply the jacoco plugin; add `id(\"jacoco\")` with `jacocoTestReport { reports { xml.required = true } }`, then run `itergate init --force`"
                .into(),
        );
        check(&command, ReportFormat::Junit, Some(GRADLE_TEST_REPORTS))
    };
    checks.insert("tests".into(), tests);
    if build.contains("checkstyle") {
        checks.insert(
            "lint".into(),
            check(
                &format!("{gradle} checkstyleMain --continue --console=plain"),
                ReportFormat::Checkstyle,
                Some("**/build/reports/checkstyle/main.xml"),
            ),
        );
    }
}

/// Cyclomatic complexity with lizard (every language here) when it is on PATH.
fn complexity(checks: &mut BTreeMap<String, Check>, notes: &mut Vec<String>) {
    if on_path("lizard") {
        checks.insert(
            "complexity".into(),
            check(
                "lizard --csv -x './node_modules/*' -x './target/*' -x './.venv/*' -x './vendor/*' .",
                ReportFormat::Lizard,
                None,
            ),
        );
    } else {
        notes.push(
            "complexity: lizard is not on PATH; `pipx install lizard` (or `pip install lizard`), then run `itergate init --force`"
                .into(),
        );
    }
}

/// Where cargo-llvm-cov writes its LCOV report: beside the manifest, not under `target/`
/// (`CARGO_TARGET_DIR` may put that elsewhere, and a scratch worktree has none);
/// `.itergate-*` is ignored by git once `init` ran.
const CARGO_LCOV_PATH: &str = ".itergate-lcov.info";

/// cargo-llvm-cov is installed and can run: the toolchain has llvm-tools (its
/// `llvm-profdata` in the sysroot), or `LLVM_PROFDATA` names one.
fn llvm_cov_runs() -> bool {
    if !on_path("cargo-llvm-cov") {
        return false;
    }
    if std::env::var_os("LLVM_PROFDATA").is_some() {
        return true;
    }
    let sysroot = std::process::Command::new("rustc")
        .args(["--print", "sysroot"])
        .stdin(std::process::Stdio::null())
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    sysroot.is_some_and(|root| {
        std::fs::read_dir(Path::new(&root).join("lib/rustlib"))
            .into_iter()
            .flatten()
            .flatten()
            .any(|target| target.path().join("bin/llvm-profdata").is_file())
    })
}

/// Whether the project (or a member of its workspace, up to two levels down) has a library
/// target: doctests live only there.
fn has_library(root: &Path) -> bool {
    let declared = std::fs::read_to_string(root.join("Cargo.toml"))
        .is_ok_and(|manifest| manifest.contains("[lib]"));
    let lib_rs = |dir: &Path| dir.join("src/lib.rs").is_file();
    let children = |dir: &Path| -> Vec<std::path::PathBuf> {
        std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir() && !p.ends_with("target") && !p.ends_with(".git"))
            .collect()
    };
    declared
        || lib_rs(root)
        || children(root)
            .iter()
            .any(|child| lib_rs(child) || children(child).iter().any(|c| lib_rs(c)))
}

fn cargo(root: &Path, checks: &mut BTreeMap<String, Check>, notes: &mut Vec<String>) {
    let llvm_cov = llvm_cov_runs();
    let tests = if llvm_cov {
        // One run: libtest's output on stdout, coverage in the LCOV file.
        Check {
            report: vec![
                source(ReportFormat::Libtest, None),
                source(ReportFormat::Lcov, Some(CARGO_LCOV_PATH)),
            ],
            ..check(
                &format!("cargo llvm-cov --no-fail-fast --color never --lcov --output-path {CARGO_LCOV_PATH}"),
                ReportFormat::Libtest,
                None,
            )
        }
    } else {
        check(
            "cargo test --no-fail-fast --color never",
            ReportFormat::Libtest,
            None,
        )
    };
    checks.insert("tests".into(), tests);
    // cargo-llvm-cov runs no doctests on a stable toolchain: they run on their own, so a
    // crate's examples stay among its tests whatever measures coverage.
    if llvm_cov && has_library(root) {
        let workspace = std::fs::read_to_string(root.join("Cargo.toml"))
            .is_ok_and(|manifest| manifest.contains("[workspace]"));
        let every = if workspace { " --workspace" } else { "" };
        checks.insert(
            "doctests".into(),
            check(
                &format!("cargo test --doc{every} --no-fail-fast --color never"),
                ReportFormat::Libtest,
                None,
            ),
        );
    }
    if !llvm_cov {
        if on_path("cargo-tarpaulin") {
            checks.insert(
                "coverage".into(),
                check(
                    "cargo tarpaulin --skip-clean --no-fail-fast --out Lcov --output-dir target/itergate-tarpaulin",
                    ReportFormat::Lcov,
                    Some("target/itergate-tarpaulin/lcov.info"),
                ),
            );
        } else {
            notes.push(
                "coverage: neither cargo-llvm-cov with llvm-tools nor cargo-tarpaulin is installed; \
                 `cargo install cargo-llvm-cov` and `rustup component add llvm-tools-preview`, \
                 or `cargo install cargo-tarpaulin` (no llvm-tools needed), then run `itergate init --force`"
                    .into(),
            );
        }
    }
    checks.insert(
        "lint".into(),
        check(
            "cargo clippy --all-targets --message-format=json --color never",
            ReportFormat::CargoJson,
            None,
        ),
    );
}

const PYTEST_JUNIT_PATH: &str = ".itergate-pytest.xml";
const PYTEST_COVERAGE_PATH: &str = ".itergate-coverage.xml";

fn python(root: &Path, checks: &mut BTreeMap<String, Check>, notes: &mut Vec<String>) {
    let python = if on_path("python") {
        "python"
    } else {
        "python3"
    };
    let junit = format!("{python} -m pytest -q --junitxml={PYTEST_JUNIT_PATH}");
    let tests = if python_can_import(python, "pytest_cov") {
        // One pytest run writes both reports.
        Check {
            report: vec![
                source(ReportFormat::Junit, Some(PYTEST_JUNIT_PATH)),
                source(ReportFormat::Cobertura, Some(PYTEST_COVERAGE_PATH)),
            ],
            ..check(
                &format!("{junit} --cov --cov-report=xml:{PYTEST_COVERAGE_PATH}"),
                ReportFormat::Junit,
                None,
            )
        }
    } else {
        notes.push(format!(
            "coverage: pytest-cov is not importable by `{python}`; `{python} -m pip install pytest-cov`, \
             then run `itergate init --force`"
        ));
        check(&junit, ReportFormat::Junit, Some(PYTEST_JUNIT_PATH))
    };
    checks.insert("tests".into(), tests);
    let configured = ruff_configured(root);
    if configured || on_path("ruff") {
        if !on_path("ruff") {
            notes.push(format!(
                "lint: the project configures ruff, but `ruff` is not on PATH; `{python} -m pip install ruff`"
            ));
        }
        // Without its own configuration, ruff's defaults grow with each release (style
        // rules, the newest Python): a project that never chose them is held to the
        // errors pyflakes and pycodestyle report, for the oldest Python it supports.
        let command = if configured {
            "ruff check --no-fix --output-format=json --exit-zero .".to_string()
        } else {
            let target = python_floor(root)
                .map(|(major, minor)| format!(" --target-version py{major}{}", minor.max(7)))
                .unwrap_or_default();
            format!(
                "ruff check --no-fix --output-format=json --exit-zero --select {RUFF_BASELINE}{target} ."
            )
        };
        checks.insert("lint".into(), check(&command, ReportFormat::RuffJson, None));
    }
    if let Some(files_configured) = mypy_configured(root) {
        if python_can_import(python, "mypy") {
            // `--output json` is mypy 1.11+; a status over 1 (mypy could not check) prints
            // a line that is not its JSON, so the check is refused, never read as clean.
            let targets = if files_configured { "" } else { " ." };
            let command = format!(
                "{python} -m mypy --output json{targets}; s=$?; [ $s -le 1 ] || echo \"mypy exited with status $s\""
            );
            checks.insert(
                "types".into(),
                check(&command, ReportFormat::MypyJson, None),
            );
        } else {
            notes.push(format!(
                "types: the project configures mypy, but `{python}` cannot import it; `{python} -m pip install mypy`, then run `itergate init --force`"
            ));
        }
    }
}

/// Whether the project configures mypy (`[tool.mypy]` in pyproject.toml, `mypy.ini`,
/// `.mypy.ini`, `[mypy]` in setup.cfg), and if so whether that configuration names the
/// `files` to check.
fn mypy_configured(root: &Path) -> Option<bool> {
    let section = |text: &str, header: &str| -> Option<bool> {
        let mut lines = text.lines().skip_while(|l| l.trim() != header);
        lines.next()?;
        Some(
            lines
                .take_while(|l| !l.trim_start().starts_with('['))
                .any(|l| l.trim_start().starts_with("files")),
        )
    };
    for (file, header) in [
        ("mypy.ini", "[mypy]"),
        (".mypy.ini", "[mypy]"),
        ("pyproject.toml", "[tool.mypy]"),
        ("setup.cfg", "[mypy]"),
    ] {
        if let Some(found) = project_file(root, file).and_then(|text| section(&text, header)) {
            return Some(found);
        }
    }
    None
}

/// ruff's long-standing default rules: syntax and import errors, undefined and unused names.
const RUFF_BASELINE: &str = "E4,E7,E9,F";

/// The oldest Python 3 the project declares where ruff does not look: `python_requires`
/// in setup.cfg or setup.py, as (3, minor). (ruff reads pyproject.toml's
/// `requires-python` itself, and follows it when it changes.)
fn python_floor(root: &Path) -> Option<(u32, u32)> {
    let in_pyproject = project_file(root, "pyproject.toml").is_some_and(|t| {
        t.lines()
            .any(|l| l.trim_start().starts_with("requires-python"))
    });
    if in_pyproject {
        return None;
    }
    let declared = [
        ("setup.cfg", "python_requires"),
        ("setup.py", "python_requires"),
    ]
    .iter()
    .find_map(|(file, key)| {
        let text = project_file(root, file)?;
        text.lines()
            .map(str::trim)
            .find(|l| l.starts_with(key))
            .map(|l| l[key.len()..].to_string())
    })?;
    // `>=3.8`, `>= 3.8, <4`, `~=3.9`, `>=2.7, !=3.0.*, …, >=3.6`: the lowest 3.x floor.
    declared
        .split(',')
        .filter_map(|clause| {
            let clause = clause.trim_matches(|c: char| c.is_whitespace() || "\"'=".contains(c));
            let version = clause
                .strip_prefix(">=")
                .or_else(|| clause.strip_prefix("~="))?;
            let mut parts = version.trim().split('.');
            let major: u32 = parts.next()?.trim().parse().ok()?;
            let minor: u32 = parts
                .next()?
                .chars()
                .take_while(char::is_ascii_digit)
                .collect::<String>()
                .parse()
                .ok()?;
            (major == 3).then_some((major, minor))
        })
        .min()
}

/// Where Node test runners write their reports (untracked files at the root).
const NODE_JUNIT_PATH: &str = ".itergate-junit.xml";
const NODE_JEST_PATH: &str = ".itergate-jest.json";
const NODE_COVERAGE_DIR: &str = ".itergate-coverage";
const NODE_LCOV_PATH: &str = ".itergate-coverage/lcov.info";

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

fn add_dev_command(manager: &str, package: &str) -> String {
    match manager {
        "npm" => format!("npm install --save-dev {package}"),
        "yarn" => format!("yarn add --dev {package}"),
        other => format!("{other} add -D {package}"),
    }
}

/// A Node project: the test runner itself with its machine-readable reporter (vitest,
/// jest, node:test, mocha), coverage where its provider is installed, `tsc --noEmit` when
/// the project has a tsconfig.json and TypeScript, and eslint when configured.
fn node(
    root: &Path,
    checks: &mut BTreeMap<String, Check>,
    notes: &mut Vec<String>,
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
    if has_dep("vitest") {
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
    } else if has_dep("jest") {
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
    } else if let Some(args) = node_test_args(&test_script) {
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
    } else if has_dep("mocha") {
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
                "npx --no-install eslint -f json .",
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
fn node_test_args(script: &str) -> Option<String> {
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

const GO_COVER_PATH: &str = ".itergate-cover.out";

/// A Go module: `go test -json` with a coverage profile, `go vet`, and staticcheck or
/// golangci-lint when installed.
fn go(root: &Path, checks: &mut BTreeMap<String, Check>, notes: &mut Vec<String>) {
    checks.insert(
        "tests".into(),
        Check {
            report: vec![
                source(ReportFormat::GoTestJson, None),
                source(ReportFormat::GoCover, Some(GO_COVER_PATH)),
            ],
            ..check(
                &format!("go test -json -coverprofile={GO_COVER_PATH} ./..."),
                ReportFormat::GoTestJson,
                None,
            )
        },
    );
    checks.insert(
        "vet".into(),
        check("go vet ./... 2>&1", ReportFormat::GoVet, None),
    );
    let configured = GOLANGCI_CONFIGS.iter().any(|f| root.join(f).is_file());
    let golangci = on_path("golangci-lint").then(golangci_major).flatten();
    match golangci {
        // The project's own linter set-up, or the only linter installed.
        Some(major) if configured || !on_path("staticcheck") => {
            let run = if major >= 2 {
                "golangci-lint run --output.checkstyle.path=stdout --show-stats=false ./..."
            } else {
                "golangci-lint run --out-format=checkstyle ./..."
            };
            checks.insert("lint".into(), check(run, ReportFormat::Checkstyle, None));
        }
        _ if on_path("staticcheck") => {
            checks.insert(
                "lint".into(),
                check("staticcheck -f sarif ./...", ReportFormat::Sarif, None),
            );
            if configured {
                notes.push("lint: the project configures golangci-lint, which is not on PATH (staticcheck runs instead); install it (https://golangci-lint.run/welcome/install/), then run `itergate init --force`".into());
            }
        }
        _ => notes.push(
            "lint: neither golangci-lint nor staticcheck is on PATH (only `go vet` runs); `go install honnef.co/go/tools/cmd/staticcheck@latest`, then run `itergate init --force`"
                .into(),
        ),
    }
}

/// golangci-lint's configuration files.
const GOLANGCI_CONFIGS: [&str; 4] = [
    ".golangci.yml",
    ".golangci.yaml",
    ".golangci.toml",
    ".golangci.json",
];

/// The major version of the golangci-lint on PATH (`golangci-lint has version 2.1.6 …`):
/// its flags for the output format changed in 2.
fn golangci_major() -> Option<u32> {
    let out = std::process::Command::new("golangci-lint")
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let version = text.split("version ").nth(1)?.trim_start_matches('v');
    version.split('.').next()?.parse().ok()
}

/// `[tool.ruff]` (or a `[tool.ruff.…]` table) in pyproject.toml, or a ruff.toml.
fn ruff_configured(root: &Path) -> bool {
    if root.join("ruff.toml").is_file() || root.join(".ruff.toml").is_file() {
        return true;
    }
    project_file(root, "pyproject.toml").is_some_and(|text| {
        text.lines().any(|l| {
            let l = l.trim();
            l == "[tool.ruff]" || l.starts_with("[tool.ruff.")
        })
    })
}

fn eslint_configured(root: &Path) -> bool {
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

/// A project file detection reads: a regular file inside the work tree, at most 1 MiB (a
/// FIFO, a device or a link out of the tree named `package.json` is no project file).
fn project_file(root: &Path, name: &str) -> Option<String> {
    crate::signals::tree_file::read_text_in_tree(root, &root.join(name), 1024 * 1024)
}

/// Whether `python` can import `module` (it runs the interpreter once).
fn python_can_import(python: &str, module: &str) -> bool {
    std::process::Command::new(python)
        .args(["-c", &format!("import {module}")])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn article(word: &str) -> &'static str {
    // "an npm project": the letter's name starts with a vowel sound.
    match word.chars().next() {
        Some('a' | 'e' | 'i' | 'o' | 'u' | 'n') => "an",
        _ => "a",
    }
}

/// A commented `.itergate.yml` for the detected toolchain.
pub fn starter_config(detected: Option<&Detected>) -> anyhow::Result<String> {
    let mut text = String::from(
        "# yaml-language-server: $schema=https://raw.githubusercontent.com/itergate/itergate/main/config/itergate.schema.json\n# itergate configuration. Every key and its default: `itergate config --default`\n",
    );
    match detected {
        Some(d) => {
            text.push_str(&format!(
                "# Checks detected for {} {} project; edit freely.\n",
                article(d.toolchain),
                d.toolchain
            ));
            for note in &d.notes {
                text.push_str(&format!("# Not measured yet: {note}\n"));
            }
            let mut wrapper = BTreeMap::new();
            wrapper.insert("checks", &d.checks);
            text.push_str(&serde_norway::to_string(&wrapper)?);
        }
        None => text.push_str("# No toolchain detected: add your checks.\nchecks: {}\n"),
    }
    text.push_str(
        "\nstopping_criteria:\n  quality_threshold: { value: 0.95 }\n  iteration_limits: { min: 2, max: 10 }\n\nrevision:\n  max_iterations: 3\n",
    );
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::python_floor;

    fn detected_in(files: &[(&str, &str)]) -> super::Detected {
        let dir = tempfile::tempdir().expect("tempdir");
        for (file, text) in files {
            let path = dir.path().join(file);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(path, text).expect("write");
        }
        super::detect(dir.path()).expect("a toolchain")
    }

    #[test]
    fn a_gradle_build_runs_its_wrapper_and_reads_jacoco_when_the_build_applies_it() {
        let build = "plugins {\n    java\n    jacoco\n    checkstyle\n}\n";
        let found = detected_in(&[("build.gradle.kts", build), ("gradlew", "#!/bin/sh\n")]);
        assert_eq!(found.toolchain, "gradle");
        let tests = &found.checks["tests"];
        let run = tests.run.as_deref().unwrap_or("");
        assert_eq!(
            run,
            "./gradlew test --continue --console=plain jacocoTestReport"
        );
        let formats: Vec<_> = tests.report.iter().map(|r| r.format.name()).collect();
        assert_eq!(formats, ["junit", "jacoco"]);
        assert!(found.checks.contains_key("lint"));
        let bare = detected_in(&[("build.gradle", "apply plugin: 'java'\n")]);
        assert_eq!(bare.checks["tests"].report.len(), 1);
        assert!(
            bare.notes.iter().any(|n| n.contains("jacoco plugin")),
            "{:?}",
            bare.notes
        );
    }

    #[test]
    fn a_rust_library_is_found_at_the_root_or_in_a_workspace_member() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        std::fs::write(
            root.join("Cargo.toml"),
            "[workspace]\nmembers = [\"crates/*\"]\n",
        )
        .unwrap();
        assert!(!super::has_library(root));
        std::fs::create_dir_all(root.join("crates/app/src")).unwrap();
        std::fs::write(root.join("crates/app/src/main.rs"), "fn main() {}\n").unwrap();
        assert!(!super::has_library(root), "a binary has no doctests");
        std::fs::create_dir_all(root.join("crates/core/src")).unwrap();
        std::fs::write(root.join("crates/core/src/lib.rs"), "").unwrap();
        assert!(super::has_library(root));
    }

    #[test]
    fn mocha_is_measured_through_the_coverage_wrapper_the_project_declares() {
        let detected = |dev: &str| {
            let dir = tempfile::tempdir().expect("tempdir");
            std::fs::write(
                dir.path().join("package.json"),
                format!(r#"{{"name":"m","scripts":{{"test":"mocha"}},"devDependencies":{{"mocha":"11.0.0"{dev}}}}}"#),
            )
            .expect("write");
            super::detect(dir.path()).expect("a node project")
        };
        let with_nyc = detected(r#","nyc":"17.0.0""#);
        let tests = &with_nyc.checks["tests"];
        let run = tests.run.as_deref().unwrap_or("");
        assert!(
            run.starts_with("npx --no-install nyc --reporter=lcov"),
            "{run}"
        );
        assert!(run.contains("mocha --reporter xunit"), "{run}");
        assert_eq!(tests.report.len(), 2, "JUnit and LCOV");
        let bare = detected("");
        assert_eq!(bare.checks["tests"].report.len(), 1);
        assert!(
            bare.notes
                .iter()
                .any(|n| n.contains("mocha has none of its own")),
            "{:?}",
            bare.notes
        );
    }

    fn floor(file: &str, text: &str) -> Option<(u32, u32)> {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join(file), text).expect("write");
        python_floor(dir.path())
    }

    #[test]
    fn the_oldest_python_a_project_declares_is_read_where_ruff_does_not_look() {
        // ruff reads pyproject.toml's own.
        let pyproject = "[project]\nrequires-python = \">=3.9\"\n";
        assert_eq!(floor("pyproject.toml", pyproject), None);
        let cfg = "[options]\npython_requires = >= 3.6\n";
        assert_eq!(floor("setup.cfg", cfg), Some((3, 6)));
        let py = "setup(\n    python_requires=\">=2.7, !=3.0.*, >=3.5\",\n)\n";
        assert_eq!(floor("setup.py", py), Some((3, 5)));
        assert_eq!(
            floor("setup.cfg", "python_requires = ~=3.10\n"),
            Some((3, 10))
        );
        assert_eq!(floor("setup.cfg", "python_requires = ==3.12.*\n"), None);
        assert_eq!(floor("setup.cfg", "[metadata]\nname = x\n"), None);
    }
}
