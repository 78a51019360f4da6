//! Java: Maven and Gradle (the committed wrapper first), Surefire's JUnit XML, JaCoCo and
//! checkstyle when the build applies them.

use std::collections::BTreeMap;
use std::path::Path;

use crate::config::Check;
use crate::signals::report::ReportFormat;

use super::{check, on_path, source};

/// Where Maven Surefire writes its JUnit reports: one file per test class, in every module.
pub(super) const SUREFIRE_REPORTS: &str = "**/target/surefire-reports/TEST-*.xml";

/// Where JaCoCo's `report` goal writes its XML: in every module.
pub(super) const JACOCO_REPORTS: &str = "**/target/site/jacoco/jacoco.xml";
/// Where the SpotBugs plugin writes its SARIF (`-Dspotbugs.sarifOutput=true`).
pub(super) const SPOTBUGS_REPORTS: &str = "**/target/spotbugsSarif.json";
/// Where the PMD plugin writes its SARIF.
pub(super) const PMD_REPORTS: &str = "**/target/pmd.sarif.json";
/// Where the checkstyle plugin's `checkstyle` goal writes its XML: in every module.
pub(super) const CHECKSTYLE_REPORTS: &str = "**/target/checkstyle-result.xml";

/// A Maven project: `mvn test` (the wrapper when the project has one), read from Surefire's
/// JUnit files; coverage from JaCoCo and lint from checkstyle, PMD and SpotBugs (SARIF) when
/// the build configures them. What the build configures is read from its effective POM (a parent's plugins and
/// active profiles included), else from the root `pom.xml`.
pub(super) fn maven(
    root: &Path,
    checks: &mut BTreeMap<String, Check>,
    notes: &mut Vec<String>,
    warnings: &mut Vec<String>,
) {
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
    let pom = effective_pom(root, mvn)
        .or_else(|| std::fs::read_to_string(root.join("pom.xml")).ok())
        .unwrap_or_default();
    // Batch mode, no download progress; a failing test still writes every report.
    let mut command = format!("{mvn} -B -ntp test -Dsurefire.printSummary=true");
    if pom.contains("apache-rat-plugin") {
        // RAT runs in `validate` and refuses any file without a licence header, this
        // configuration too: the checks skip it (the project's own CI still runs it).
        command.push_str(" -Drat.skip=true");
        warnings.push(
            "the build checks licence headers with Apache RAT, which fails `mvn test` and `mvn verify` on `.itergate.yml`: add it (and `.itergate-*`) to RAT's `<excludes>`; itergate's checks run with `-Drat.skip=true`"
                .into(),
        );
    }
    let tests = if pom.contains("jacoco-maven-plugin") {
        // Failing tests do not stop the build before the coverage report; the failures are
        // read from Surefire's files, not from Maven's exit status.
        // By full coordinates: a base whose pom does not declare the plugin yet (it was
        // added with this configuration) still resolves the goal instead of failing on
        // "No plugin found for prefix 'jacoco'".
        let command = format!(
            "{command} -Dmaven.test.failure.ignore=true org.jacoco:jacoco-maven-plugin:{}:report",
            jacoco_version(&pom)
        );
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
    let skip_rat = if pom.contains("apache-rat-plugin") {
        " -Drat.skip=true"
    } else {
        ""
    };
    // SpotBugs reads the compiled classes and PMD resolves types from them: both wait for
    // the tests' build, which writes `target/classes` in the same checkout (run at once, one
    // reads a class file the other is writing).
    let after_the_build = || vec!["tests".to_string()];
    if pom.contains("spotbugs-maven-plugin") {
        checks.insert(
            "spotbugs".into(),
            Check {
                needs: after_the_build(),
                ..check(
                    &format!(
                        "{mvn} -B -ntp compile spotbugs:spotbugs -Dspotbugs.sarifOutput=true{skip_rat}"
                    ),
                    ReportFormat::Sarif,
                    Some(SPOTBUGS_REPORTS),
                )
            },
        );
    }
    if pom.contains("maven-pmd-plugin") {
        // The plugin writes SARIF through PMD's renderer class (it knows no `sarif` name).
        checks.insert(
            "pmd".into(),
            Check {
                needs: after_the_build(),
                ..check(
                    &format!(
                        "{mvn} -B -ntp pmd:pmd -Dformat=net.sourceforge.pmd.renderers.SarifRenderer{skip_rat}"
                    ),
                    ReportFormat::Sarif,
                    Some(PMD_REPORTS),
                )
            },
        );
    }
    if pom.contains("maven-checkstyle-plugin") {
        checks.insert(
            "lint".into(),
            check(
                &format!("{mvn} -B -ntp checkstyle:checkstyle{skip_rat}"),
                ReportFormat::Checkstyle,
                Some(CHECKSTYLE_REPORTS),
            ),
        );
    }
}

/// How long `init` waits for Maven to print the effective POM (it may download the help
/// plugin first).
const EFFECTIVE_POM_SECONDS: u64 = 180;

/// The build's effective POM (`mvn help:effective-pom`): the root `pom.xml` with its
/// parents' plugins and its active profiles, where a parent such as commons-parent
/// configures JaCoCo and RAT. `None` when Maven cannot say (not installed, offline, slow).
fn effective_pom(root: &Path, mvn: &str) -> Option<String> {
    if mvn == "mvn" && !on_path("mvn") {
        return None;
    }
    let out =
        std::env::temp_dir().join(format!("itergate-effective-pom-{}.xml", std::process::id()));
    let mut child = std::process::Command::new(mvn)
        .args(["-B", "-q", "-ntp", "help:effective-pom"])
        .arg(format!("-Doutput={}", out.display()))
        .current_dir(root)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    let deadline =
        std::time::Instant::now() + std::time::Duration::from_secs(EFFECTIVE_POM_SECONDS);
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => break,
            Ok(Some(_)) | Err(_) => {
                let _ = std::fs::remove_file(&out);
                return None;
            }
            Ok(None) if std::time::Instant::now() > deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
            Ok(None) => std::thread::sleep(std::time::Duration::from_millis(100)),
        }
    }
    let text = std::fs::read_to_string(&out).ok();
    let _ = std::fs::remove_file(&out);
    text.filter(|text| text.contains("<project"))
}

/// The files that make a directory a Gradle build.
pub(super) const GRADLE_BUILDS: [&str; 4] = [
    "build.gradle",
    "build.gradle.kts",
    "settings.gradle",
    "settings.gradle.kts",
];
/// Where Gradle's `test` task writes its JUnit reports: one file per test class.
pub(super) const GRADLE_TEST_REPORTS: &str = "**/build/test-results/test/TEST-*.xml";
/// The JaCoCo version the pom declares (a `${property}` looked up in its properties), or
/// the one itergate's tests use.
fn jacoco_version(pom: &str) -> String {
    const DEFAULT: &str = "0.8.15";
    let tag = |text: &str, name: &str| -> Option<String> {
        let open = format!("<{name}>");
        let start = text.find(&open)? + open.len();
        let end = start + text[start..].find(&format!("</{name}>"))?;
        Some(text[start..end].trim().to_string())
    };
    let Some(at) = pom.find("<artifactId>jacoco-maven-plugin</artifactId>") else {
        return DEFAULT.into();
    };
    // The plugin's own element: up to its closing tag.
    let rest = &pom[at..];
    let element = &rest[..rest.find("</plugin>").unwrap_or(rest.len())];
    match tag(element, "version") {
        Some(property) if property.starts_with("${") => property
            .strip_prefix("${")
            .and_then(|p| p.strip_suffix('}'))
            .and_then(|name| tag(pom, name))
            .filter(|v| !v.is_empty() && !v.contains('$'))
            .unwrap_or_else(|| DEFAULT.into()),
        Some(version) if !version.is_empty() => version,
        _ => DEFAULT.into(),
    }
}

/// Where the jacoco plugin's `jacocoTestReport` writes its XML (when `xml.required`).
pub(super) const GRADLE_JACOCO_REPORTS: &str = "**/build/reports/jacoco/test/jacocoTestReport.xml";

/// A Gradle build (Java or Kotlin): `./gradlew test` when the wrapper is committed (the
/// build's own Gradle), else `gradle`; JUnit XML from the test task; JaCoCo when a build
/// file applies its plugin (its XML report must be enabled: `xml.required = true`).
pub(super) fn gradle(root: &Path, checks: &mut BTreeMap<String, Check>, notes: &mut Vec<String>) {
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

#[cfg(test)]
mod tests {
    use super::jacoco_version;

    #[test]
    fn the_jacoco_version_is_the_poms_own_or_a_pinned_one() {
        let plugin = |version: &str| {
            format!("<plugin><groupId>org.jacoco</groupId><artifactId>jacoco-maven-plugin</artifactId>{version}</plugin><plugin><version>9.9</version></plugin>")
        };
        assert_eq!(
            jacoco_version(&plugin("<version>0.8.11</version>")),
            "0.8.11"
        );
        let by_property = format!(
            "<properties><jacoco.version>0.8.13</jacoco.version></properties>{}",
            plugin("<version>${jacoco.version}</version>")
        );
        assert_eq!(jacoco_version(&by_property), "0.8.13");
        // Declared without a version (a parent's pluginManagement), or not at all.
        assert_eq!(jacoco_version(&plugin("")), "0.8.15");
        assert_eq!(jacoco_version("<project/>"), "0.8.15");
        assert_eq!(
            jacoco_version(&plugin("<version>${unset}</version>")),
            "0.8.15"
        );
    }
}
