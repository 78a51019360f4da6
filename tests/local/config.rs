//! `.itergate.yml`: defaults, and what a bad file says.

use std::path::Path;

use itergate::config::{Config, ConfigError, DEFAULT_CONFIG_YAML};

fn err(yaml: &str) -> ConfigError {
    Config::from_yaml(yaml, Path::new(".itergate.yml")).expect_err("config should be refused")
}

#[test]
fn documented_defaults_are_the_defaults() {
    let documented = Config::from_yaml(DEFAULT_CONFIG_YAML, Path::new("default.itergate.yml"))
        .expect("the documented default file parses");
    assert_eq!(documented, Config::default());
}

#[test]
fn empty_file_means_defaults() {
    assert_eq!(
        Config::from_yaml("", Path::new("x.yml")),
        Ok(Config::default())
    );
    assert_eq!(
        Config::from_yaml("# only a comment\n", Path::new("x.yml")),
        Ok(Config::default())
    );
}

#[test]
fn partial_sections_keep_other_defaults() {
    let c = Config::from_yaml(
        "stopping_criteria:\n  quality_threshold:\n    value: 0.9\n",
        Path::new("x.yml"),
    )
    .expect("valid");
    assert_eq!(c.stopping_criteria.quality_threshold.value.get(), 0.9);
    assert!(c.stopping_criteria.quality_threshold.enabled);
    assert_eq!(c.stopping_criteria.iteration_limits.max, 10);
}

#[test]
fn unknown_key_names_place_and_suggests() {
    let e = err("stopping_criteria:\n  quality_treshold:\n    value: 0.9\n");
    assert_eq!(e.line, Some(2));
    assert_eq!(e.column, Some(3));
    assert_eq!(e.key.as_deref(), Some("stopping_criteria.quality_treshold"));
    assert!(
        e.message.contains("did you mean `quality_threshold`?"),
        "{e}"
    );
    assert!(e.to_string().starts_with(".itergate.yml:2:3: "), "{e}");
}

#[test]
fn unknown_top_level_key_suggests() {
    let e = err("qualty_weights:\n  tests_passing: 1.0\n");
    assert!(e.message.contains("did you mean `quality_weights`?"), "{e}");
    assert_eq!(e.line, Some(1));
}

#[test]
fn wrong_type_names_the_key_and_expectation() {
    let e = err("stopping_criteria:\n  iteration_limits:\n    max: ten\n");
    assert_eq!(
        e.key.as_deref(),
        Some("stopping_criteria.iteration_limits.max")
    );
    assert_eq!(e.line, Some(3));
    assert!(e.message.contains("expected u32"), "{e}");
}

#[test]
fn out_of_range_threshold() {
    let e = err("stopping_criteria:\n  quality_threshold:\n    value: 1.5\n");
    assert_eq!(
        e.key.as_deref(),
        Some("stopping_criteria.quality_threshold.value")
    );
    assert!(e.message.contains("expected a number from 0 to 1"), "{e}");
    assert_eq!(e.line, Some(3));
}

#[test]
fn negative_weight() {
    let e = err("quality_weights:\n  tests_passing: -0.4\n  code_quality: 0.7\n  coverage: 0.6\n  complexity: 0.1\n");
    assert!(
        e.message
            .contains("weight `tests_passing` is -0.4; expected a number >= 0"),
        "{e}"
    );
    assert!(e.line.is_some());
}

#[test]
fn weights_must_sum_to_one() {
    let e = err("quality_weights:\n  tests_passing: 0.5\n");
    assert!(e.message.contains("sum to 1.1"), "{e}");
    assert_eq!(e.key.as_deref(), Some("quality_weights"));
}

#[test]
fn min_greater_than_max() {
    let e = err("stopping_criteria:\n  iteration_limits: {min: 5, max: 3}\n");
    assert!(
        e.message.contains("`min` (5) is greater than `max` (3)"),
        "{e}"
    );
    assert_eq!(e.key.as_deref(), Some("stopping_criteria.iteration_limits"));
}

#[test]
fn unknown_requirement_metric_suggests() {
    let e = err("requirements:\n  - metric: covrage\n    min: 0.8\n");
    assert!(e.message.contains("did you mean `coverage`?"), "{e}");
    assert_eq!(e.key.as_deref(), Some("requirements[0].metric"));
}

#[test]
fn bad_enum_value_lists_the_choices() {
    let e = err("hook:\n  gate: block\n");
    assert!(
        e.message.contains("warn") && e.message.contains("block-on-escalate"),
        "{e}"
    );
    assert_eq!(e.line, Some(2));
}

#[test]
fn broken_yaml_syntax() {
    let e = err("stopping_criteria:\n  quality_threshold: {value: 0.9\n");
    assert!(e.line.is_some(), "{e}");
}

#[test]
fn github_location_is_discovered() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join(".github")).expect("mkdir");
    std::fs::write(
        dir.path().join(".github/itergate.yml"),
        "revision: {max_iterations: 5}\n",
    )
    .expect("write");
    let (c, path) = Config::discover(dir.path()).expect("valid");
    assert_eq!(c.revision.max_iterations, 5);
    assert!(path.expect("found").ends_with(".github/itergate.yml"));
}

#[test]
fn unknown_report_format_is_refused_when_the_file_loads() {
    let e = err(
        "checks:\n  tests:\n    run: pytest\n    report: { format: junit-xml, path: out.xml }\n",
    );
    assert_eq!((e.line, e.column), (Some(4), Some(13)), "{e}");
    assert_eq!(e.key.as_deref(), Some("checks.tests.report.format"));
    assert!(
        e.message.contains("unknown report format `junit-xml`"),
        "{e}"
    );
    assert!(e.message.contains("expected one of: junit, tap"), "{e}");
}

#[test]
fn scope_and_lint_score_and_marker_globs() {
    let c = Config::from_yaml(
        "scoring: { scope: whole, code_quality: average_severity }\ndetection:\n  markers: { include: [\"src/**\"], exclude: [] }\n",
        Path::new("x.yml"),
    )
    .expect("valid");
    assert_eq!(c.scoring.scope, itergate::config::Scope::Whole);
    assert_eq!(
        c.scoring.code_quality,
        itergate::config::LintScore::AverageSeverity
    );
    assert_eq!(c.detection.markers.include, ["src/**"]);
    let e = err("scoring: { scope: branch }\n");
    assert!(e.message.contains("expected `change` or `whole`"), "{e}");
}

#[test]
fn a_check_takes_one_report_or_a_list_and_names_each_outcome() {
    let yaml = r#"
checks:
  tests:
    run: pytest
    report:
      - { format: junit, path: junit.xml }
      - { format: cobertura, path: coverage.xml }
      - { format: junit, path: more.xml }
  lint:
    run: ruff check
    report: { format: ruff-json, from: stdout }
"#;
    let config = Config::from_yaml(yaml, Path::new(".itergate.yml")).expect("parses");
    let tests = &config.checks["tests"];
    assert_eq!(tests.report.len(), 3);
    assert_eq!(
        tests.report_names("tests"),
        ["tests", "tests.cobertura", "tests.junit.3"]
    );
    let lint = &config.checks["lint"];
    assert_eq!(lint.report.len(), 1);
    assert_eq!(lint.report_names("lint"), ["lint"]);
    let source = itergate::config::report_of(&config.checks, "tests.cobertura").expect("found");
    assert_eq!(source.format.name(), "cobertura");
    // One report is written back as a mapping, as before lists were accepted.
    let written = serde_norway::to_string(lint).expect("serialises");
    assert!(
        written.contains("report:\n  format: ruff-json"),
        "{written}"
    );

    let bad = err("checks:\n  t:\n    run: x\n    report:\n      - { format: junit }\n      - { format: junit-xml }\n");
    assert_eq!(bad.key.as_deref(), Some("checks.t.report[1].format"));
    assert_eq!(bad.line, Some(6));
}

#[test]
fn every_error_of_a_file_is_reported_in_one_run() {
    let e = err("stopping_criteria:\n  quality_treshold: { value: 0.9 }\ncheck:\n  x: 1\nrevision:\n  max_iterations: three\n");
    let all: Vec<(Option<usize>, Option<&str>)> = std::iter::once(&e)
        .chain(e.more.iter())
        .map(|e| (e.line, e.key.as_deref()))
        .collect();
    assert_eq!(
        all,
        [
            (Some(2), Some("stopping_criteria.quality_treshold")),
            (Some(3), Some("check")),
            (Some(6), Some("revision.max_iterations")),
        ],
        "{e}"
    );
    let text = e.to_string();
    assert_eq!(text.lines().count(), 3, "{text}");
    assert!(text.contains("did you mean `quality_threshold`?"), "{text}");
}

#[test]
fn needs_names_other_checks_and_a_circle_is_refused_with_its_keys() {
    let unknown = err(
        "checks:\n  coverage:\n    run: \"true\"\n    needs: [test]\n  tests:\n    run: \"true\"\n",
    );
    assert_eq!(unknown.key.as_deref(), Some("checks.coverage.needs"));
    assert_eq!((unknown.line, unknown.column), (Some(4), Some(5)));
    assert!(unknown.message.contains("`test`"), "{unknown}");
    assert!(
        unknown.message.contains("did you mean `tests`"),
        "{unknown}"
    );

    let circle = err(
        "checks:\n  a:\n    run: \"true\"\n    needs: [b]\n  b:\n    run: \"true\"\n    needs: [a]\n",
    );
    assert_eq!(circle.key.as_deref(), Some("checks.a.needs"));
    assert!(circle.message.contains("a -> b -> a"), "{circle}");

    let itself = err("checks:\n  a:\n    run: \"true\"\n    needs: [a]\n");
    assert!(itself.message.contains("cannot need itself"), "{itself}");

    let fine = Config::from_yaml(
        "checks:\n  coverage:\n    run: \"true\"\n    needs: [tests]\n  tests:\n    run: \"true\"\n",
        Path::new("x.yml"),
    )
    .expect("valid");
    assert_eq!(fine.checks["coverage"].needs, ["tests"]);
}

fn schema_validator() -> jsonschema::Validator {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/config/itergate.schema.json"
    ))
    .expect("the schema file");
    let schema: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    jsonschema::validator_for(&schema).expect("a valid JSON Schema")
}

fn yaml_as_json(text: &str) -> serde_json::Value {
    serde_norway::from_str(text).expect("YAML")
}

/// The schema in the repository is the one the configuration's types give, and what
/// `config --schema` prints, even beside a broken `.itergate.yml`.
#[test]
fn the_committed_schema_is_the_generated_one() {
    let committed = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/config/itergate.schema.json"
    ))
    .expect("the schema file");
    assert_eq!(
        committed,
        itergate::config::json_schema(),
        "regenerate it: itergate config --schema > config/itergate.schema.json"
    );
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join(".itergate.yml"), "checks: [\n").expect("write");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_itergate"))
        .args(["config", "--schema"])
        .current_dir(dir.path())
        .output()
        .expect("runs");
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout), committed);
}

/// The book's page of every key is the one the schema gives, `config --reference` prints
/// it, and it has a row for every key the documented defaults set, with that default.
#[test]
fn the_reference_of_every_key_is_generated_and_covers_the_defaults() {
    let committed = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/src/reference/configuration-keys.md"
    ))
    .expect("the reference page");
    assert_eq!(
        committed,
        itergate::config::reference_markdown(),
        "regenerate it: itergate config --reference > docs/src/reference/configuration-keys.md"
    );
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join(".itergate.yml"), "checks: [\n").expect("write");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_itergate"))
        .args(["config", "--reference"])
        .current_dir(dir.path())
        .output()
        .expect("runs");
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout), committed);

    fn leaves(prefix: &str, value: &serde_norway::Value, out: &mut Vec<(String, String)>) {
        match value {
            serde_norway::Value::Mapping(map) if !map.is_empty() => {
                for (key, child) in map {
                    let key = key.as_str().expect("string keys");
                    let path = match prefix {
                        "" => key.to_string(),
                        _ => format!("{prefix}.{key}"),
                    };
                    leaves(&path, child, out);
                }
            }
            other => {
                let json = serde_json::to_string(other).expect("json");
                out.push((prefix.to_string(), json));
            }
        }
    }
    let defaults: serde_norway::Value =
        serde_norway::from_str(itergate::config::DEFAULT_CONFIG_YAML).expect("defaults");
    let mut keys = Vec::new();
    leaves("", &defaults, &mut keys);
    assert!(keys.len() > 50, "{keys:?}");
    for (key, default) in keys {
        // A map of names (`checks: {}`) and a list of tables are documented by their keys.
        if default == "{}" || key == "requirements" || key == "github.reports" {
            continue;
        }
        let row = committed
            .lines()
            .find(|line| line.starts_with(&format!("| `{key}` |")))
            .unwrap_or_else(|| panic!("no row for `{key}`"));
        assert!(
            row.contains(&format!("| `{default}` |")),
            "`{key}`: the default {default} is not in {row}"
        );
        let meaning = row.rsplit(" | ").next().unwrap_or_default();
        assert!(
            meaning.trim_end_matches('|').trim().len() > 5,
            "`{key}` has no meaning: {row}"
        );
    }
}

/// Every documented default, every example configuration and what `init` writes validate;
/// an unknown key, a misspelt format and a wrong type do not.
#[test]
fn the_defaults_and_examples_validate_against_the_schema_and_mistakes_do_not() {
    let validator = schema_validator();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("config/default.itergate.yml")];
    for dir in ["examples", "examples/github-app"] {
        for entry in std::fs::read_dir(root.join(dir))
            .into_iter()
            .flatten()
            .flatten()
        {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.ends_with("itergate.yml") {
                files.push(entry.path());
            }
        }
    }
    // What `init` writes for a Rust crate, a Maven build (two reports in one check) and a
    // Node package.
    let projects: [&[(&str, &str)]; 3] = [
        &[
            ("Cargo.toml", "[package]\nname = \"x\"\n"),
            ("src/lib.rs", ""),
        ],
        &[(
            "pom.xml",
            "<project><artifactId>jacoco-maven-plugin</artifactId></project>",
        )],
        &[("package.json", r#"{"scripts":{"test":"vitest"}}"#)],
    ];
    let scratch = tempfile::tempdir().expect("tempdir");
    for (n, project) in projects.iter().enumerate() {
        let dir = scratch.path().join(n.to_string());
        for (file, text) in *project {
            let path = dir.join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let detected = itergate::signals::detect::detect(&dir);
        let text = itergate::signals::detect::starter_config(detected.as_ref()).expect("text");
        let path = dir.join(".itergate.yml");
        std::fs::write(&path, text).unwrap();
        files.push(path);
    }
    for file in &files {
        let text = std::fs::read_to_string(file).expect("read");
        let errors: Vec<String> = validator
            .iter_errors(&yaml_as_json(&text))
            .map(|e| format!("{} at {}", e, e.instance_path))
            .collect();
        assert!(errors.is_empty(), "{}: {errors:#?}", file.display());
    }
    for (wrong, what) in [
        ("chekcs: {}\n", "an unknown key"),
        (
            "checks:\n  tests:\n    run: x\n    report: { format: junitt }\n",
            "a misspelt format",
        ),
        (
            "checks:\n  tests:\n    run: x\n    report: [{ format: junit }, { formt: lcov }]\n",
            "a misspelt key in a list of reports",
        ),
        (
            "stopping_criteria: { quality_threshold: { value: high } }\n",
            "a wrong type",
        ),
    ] {
        assert!(
            !validator.is_valid(&yaml_as_json(wrong)),
            "{what} validates: {wrong}"
        );
    }
}
