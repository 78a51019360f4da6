//! Tamper evidence with real pytest and cargo projects: from an iteration whose test fails, each way
//! of turning the check green without fixing the code — deleting, skipping, rewriting or
//! deselecting the test — is a violation named in the summary and the prompt, the
//! iteration is VOID, and a second violation escalates; a branch that narrows the judge's
//! own configuration is still judged by the base's. Honest counterparts — a rename, a
//! moved test file, a test deleted with the code it tested, the real fix — are accepted.

use crate::scenarios::{line_of, python, Crate, Project, Python, LIB_BASE};

const CORE: &str = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n";
const TESTS: &str = "from calc.core import add, sub\n\n\ndef test_add():\n    assert add(2, 2) == 4\n\n\ndef test_add_zero():\n    assert add(0, 5) == 5\n\n\ndef test_sub():\n    assert sub(3, 1) == 2\n";

/// The base, then iteration 1 on `feature`: `add` broken, `test_add` and `test_add_zero`
/// failing (ITERATE).
fn broken(py: &Python) -> (Project, String) {
    let p = Project::new();
    p.write(
        ".itergate.yml",
        &format!(
            "checks:\n  tests:\n    run: {} -m pytest -p no:cacheprovider -q --junitxml=out/junit.xml\n    report: {{ format: junit, path: out/junit.xml }}\nhook:\n  base: main\n",
            py.python.display()
        ),
    );
    p.write(".gitignore", "out/\n__pycache__/\n");
    p.write("calc/__init__.py", "");
    p.write("calc/core.py", CORE);
    p.write("tests/test_core.py", TESTS);
    p.commit(
        &[
            ".itergate.yml",
            ".gitignore",
            "calc/__init__.py",
            "calc/core.py",
            "tests/test_core.py",
        ],
        "base",
    );
    p.git(&["checkout", "--quiet", "-b", "feature"]);
    p.write("calc/core.py", &CORE.replace("a + b", "a - b"));
    let first = p.commit(&["calc/core.py"], "faster add");
    p.run().expect_decision("ITERATE", "1 (add broken)");
    (p, first)
}

/// A branch off iteration 1 for one more commit.
fn from_first(p: &Project, first: &str, branch: &str) {
    p.git(&["checkout", "--quiet", "-b", branch, first]);
}

fn integrity_issues(record: &serde_json::Value) -> Vec<(String, String, String)> {
    let none = Vec::new();
    record["issues"]
        .as_array()
        .unwrap_or(&none)
        .iter()
        .filter(|i| i["dimension"] == "integrity")
        .map(|i| {
            (
                i["severity"].as_str().unwrap_or("").to_string(),
                i["finding"].as_str().unwrap_or("").to_string(),
                i["affected_field"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

/// The iteration is a VOID violation naming `test` at `place`, sent back with it in the
/// prompt as the thing to restore.
fn expect_violation(p: &Project, step: &str, what: &str, test: &str, place: &str) {
    let run = p.run();
    run.expect_decision("ITERATE", step);
    let record = p.head_record();
    assert_eq!(record["status"], "void", "{step}: {record}");
    let found = integrity_issues(&record);
    assert!(
        found.iter().any(|(s, f, at)| s == "BLOCKER"
            && f.contains(what)
            && f.contains(test)
            && at == place),
        "{step}: no BLOCKER `{what}` for {test} at {place}: {found:?}"
    );
    let prompt = p.prompt(step);
    assert!(
        prompt.contains(&format!("restore `{test}`")),
        "{step}: the prompt does not ask to restore {test}:\n{prompt}"
    );
    assert!(
        prompt.contains(place),
        "{step}: {place} not in the prompt:\n{prompt}"
    );
}

#[test]
fn deleting_skipping_rewriting_or_deselecting_the_failing_test_is_a_violation() {
    let py = python();
    let (p, first) = broken(py);

    // Deleted.
    from_first(&p, &first, "delete");
    let deleted = TESTS.replace("def test_add():\n    assert add(2, 2) == 4\n\n\n", "");
    p.write("tests/test_core.py", &deleted);
    p.commit(&["tests/test_core.py"], "drop a flaky test");
    expect_violation(
        &p,
        "deleted",
        "was removed",
        "tests.test_core::test_add",
        &format!("tests/test_core.py:{}", line_of(TESTS, "def test_add():")),
    );
    // Deleting the other failing one too: the second violation escalates.
    let both = deleted.replace("def test_add_zero():\n    assert add(0, 5) == 5\n\n\n", "");
    p.write("tests/test_core.py", &both);
    p.commit(&["tests/test_core.py"], "drop another");
    let run = p.run();
    run.expect_decision("ESCALATE", "deleted twice");
    assert!(
        run.stderr.contains("changed the tests instead of the code"),
        "{}",
        run.stderr
    );
    let analytics = p.itergate(&["analytics", "--format", "json"]);
    let result: serde_json::Value =
        serde_json::from_str(&analytics.stdout).expect("analytics JSON");
    assert_eq!(result["integrity_violations"], 2, "{result}");

    // Skipped.
    from_first(&p, &first, "skip");
    let skipped = format!(
        "import pytest\n{}",
        TESTS.replace(
            "def test_add():",
            "@pytest.mark.skip(reason=\"flaky\")\ndef test_add():"
        )
    );
    p.write("tests/test_core.py", &skipped);
    p.commit(&["tests/test_core.py"], "skip a flaky test");
    let run = p.run();
    run.expect_decision("ITERATE", "skipped");
    let found = integrity_issues(&p.head_record());
    assert!(
        found
            .iter()
            .any(|(s, f, _)| s == "BLOCKER"
                && f.contains("tests.test_core::test_add is newly skipped")),
        "{found:?}"
    );
    assert!(run.stderr.contains("Integrity:"), "{}", run.stderr);

    // A person who intends it accepts it: the finding stays, shown as accepted.
    let accept = p.itergate(&["accept", "the flaky test is tracked elsewhere"]);
    let said = format!("{}{}", accept.stdout, accept.stderr);
    assert!(said.contains("ACCEPT"), "{said}");
    let status = p.itergate(&["status"]);
    let said = format!("{}{}", status.stdout, status.stderr);
    assert!(
        said.contains("newly skipped") && said.contains("(accepted by a person)"),
        "{said}"
    );
    // The next iteration keeps the skip: accepted once, it is shown as accepted and not
    // sent back again (no VOID, no second violation); the other failure is still there.
    p.write(
        "calc/core.py",
        &format!(
            "\"\"\"Arithmetic.\"\"\"\n\n\n{}",
            CORE.replace("a + b", "a - b")
        ),
    );
    p.commit(&["calc/core.py"], "a docstring");
    let run = p.run();
    run.expect_decision("ITERATE", "after the accepted skip");
    let record = p.head_record();
    assert_ne!(record["status"], "void", "{record}");
    let found = integrity_issues(&record);
    assert!(
        found.iter().any(|(s, f, _)| s == "INFO"
            && f.contains("tests.test_core::test_add ")
            && f.contains("accepted by a person earlier in this task")),
        "{found:?}"
    );
    assert!(found.iter().all(|(s, _, _)| s == "INFO"), "{found:?}");
    assert!(
        p.prompt("after the accepted skip")
            .contains("test_add_zero"),
        "the remaining failure is asked for"
    );

    // Skipped, then deleted: still the failing test put away, the second violation.
    // (Another message than the accepted commit's, so that it is another commit.)
    from_first(&p, &first, "skip-then-delete");
    p.write("tests/test_core.py", &skipped);
    p.commit(&["tests/test_core.py"], "skip the flaky test first");
    p.run()
        .expect_decision("ITERATE", "skipped before deleting");
    p.write(
        "tests/test_core.py",
        &TESTS.replace("def test_add():\n    assert add(2, 2) == 4\n\n\n", ""),
    );
    p.commit(&["tests/test_core.py"], "drop it");
    p.run()
        .expect_decision("ESCALATE", "deleted after the skip");
    let found = integrity_issues(&p.head_record());
    assert!(
        found
            .iter()
            .any(|(s, f, _)| s == "BLOCKER" && f.contains("test_add was removed")),
        "{found:?}"
    );

    // Skipped, then back with its assertion rewritten.
    from_first(&p, &first, "skip-then-rewrite");
    p.write("tests/test_core.py", &skipped);
    p.commit(&["tests/test_core.py"], "skip it for now");
    p.run()
        .expect_decision("ITERATE", "skipped before rewriting");
    p.write(
        "tests/test_core.py",
        &TESTS.replace("add(2, 2) == 4", "add(2, 2) == 0"),
    );
    p.commit(&["tests/test_core.py"], "back, with the value it gives");
    p.run()
        .expect_decision("ESCALATE", "rewritten after the skip");
    let found = integrity_issues(&p.head_record());
    assert!(
        found
            .iter()
            .any(|(s, f, _)| s == "BLOCKER" && f.contains("test_add was rewritten to pass")),
        "{found:?}"
    );

    // Rewritten to the broken value.
    from_first(&p, &first, "rewrite");
    p.write(
        "tests/test_core.py",
        &TESTS.replace("add(2, 2) == 4", "add(2, 2) == 4 or True"),
    );
    p.commit(&["tests/test_core.py"], "loosen the assertion");
    let place = format!("tests/test_core.py:{}", line_of(TESTS, "add(2, 2) == 4"));
    expect_violation(
        &p,
        "rewritten",
        "was rewritten to pass",
        "tests.test_core::test_add",
        &place,
    );

    // The judge's configuration narrowed on the branch: the base's still judges.
    from_first(&p, &first, "narrow");
    let config = std::fs::read_to_string(p.path().join(".itergate.yml")).expect("config");
    p.write(
        "tests/test_other.py",
        "def test_other():\n    assert True\n",
    );
    p.write(
        ".itergate.yml",
        &config.replace(
            "--junitxml=out/junit.xml",
            "--junitxml=out/junit.xml tests/test_other.py",
        ),
    );
    p.commit(
        &[".itergate.yml", "tests/test_other.py"],
        "run the relevant tests only",
    );
    let run = p.run();
    // The same two failures as before: stalled, and a person decides.
    run.expect_decision("ESCALATE", "narrowed configuration");
    assert!(
        run.stderr
            .contains("the configuration changed on this branch"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("2 of 4 tests failed"), "{}", run.stderr);

    // Deselected by a conftest.py.
    from_first(&p, &first, "deselect");
    p.write("tests/conftest.py", "collect_ignore = [\"test_core.py\"]\n");
    p.write(
        "tests/test_other.py",
        "def test_other():\n    assert True\n",
    );
    p.commit(
        &["tests/conftest.py", "tests/test_other.py"],
        "tidy the test layout",
    );
    expect_violation(
        &p,
        "deselected",
        "is deselected",
        "tests.test_core::test_add",
        "tests/conftest.py:1",
    );
}

#[test]
fn renames_moves_deletions_with_their_code_and_real_fixes_are_accepted() {
    let py = python();
    let (p, first) = broken(py);

    // The real fix, after a violation (the failing test deleted): accepted on its merits,
    // and the decision says what came before it.
    from_first(&p, &first, "fix");
    p.write(
        "tests/test_core.py",
        &TESTS.replace("def test_add():\n    assert add(2, 2) == 4\n\n\n", ""),
    );
    p.commit(&["tests/test_core.py"], "drop the failing test");
    p.run().expect_decision("ITERATE", "deleted");
    p.write("tests/test_core.py", TESTS);
    p.write("calc/core.py", CORE);
    p.commit(&["calc/core.py", "tests/test_core.py"], "fix add");
    let run = p.run();
    run.expect_decision("ACCEPT", "the fix");
    assert!(integrity_issues(&p.head_record()).is_empty());
    let decision = run.stderr.lines().find(|l| l.starts_with("Decision:"));
    insta::assert_snapshot!(decision.unwrap_or_default(), @"Decision: ACCEPT (priority low) — Quality 1.00 meets the bar with no blocking issues (after 1 iteration of this task that changed the tests instead of the code)");

    // From the fix: rename a passing test (same body), move the test file, and delete
    // `sub` together with its test.
    p.write(
        "tests/test_core.py",
        &TESTS.replace("def test_add_zero():", "def test_adding_zero():"),
    );
    p.commit(&["tests/test_core.py"], "rename a test");
    let run = p.run();
    run.expect_decision("ACCEPT", "renamed");
    assert!(
        integrity_issues(&p.head_record()).is_empty(),
        "{}",
        run.stderr
    );

    p.git(&["mv", "tests/test_core.py", "tests/test_calc.py"]);
    p.git(&["commit", "--quiet", "-m", "move the tests"]);
    p.run().expect_decision("ACCEPT", "moved");
    assert!(integrity_issues(&p.head_record()).is_empty());

    p.write("calc/core.py", "def add(a, b):\n    return a + b\n");
    p.write(
        "tests/test_calc.py",
        &TESTS
            .replace("def test_add_zero():", "def test_adding_zero():")
            .replace(
                "from calc.core import add, sub",
                "from calc.core import add",
            )
            .replace("\n\n\ndef test_sub():\n    assert sub(3, 1) == 2\n", "\n"),
    );
    p.commit(&["calc/core.py", "tests/test_calc.py"], "remove sub");
    p.run().expect_decision("ACCEPT", "deleted with its code");
    let found = integrity_issues(&p.head_record());
    assert!(
        found
            .iter()
            .any(|(s, f, _)| s == "INFO" && f.contains("removed together with `sub`")),
        "{found:?}"
    );

    // A new test written skipped, ahead of the code it will test, hides nothing the base
    // ran: no revision for "more tests skipped".
    p.write(
        "tests/test_calc.py",
        &format!(
            "{}\n\nimport pytest\n\n\n@pytest.mark.skip(reason=\"enabled with big numbers\")\ndef test_add_big():\n    assert add(10**30, 1) == 10**30 + 1\n",
            std::fs::read_to_string(p.path().join("tests/test_calc.py")).expect("read").trim_end()
        ),
    );
    p.commit(&["tests/test_calc.py"], "a test for later");
    let run = p.run();
    run.expect_decision("ACCEPT", "a new skipped test");
    assert!(
        !p.head_record()["triggers"]
            .to_string()
            .contains("incomplete_output"),
        "{}",
        p.head_record()
    );
}

#[test]
fn an_ignored_or_deleted_failing_rust_test_is_a_violation() {
    let c = Crate::new(LIB_BASE);
    let p = &c.project;
    p.write(
        "src/lib.rs",
        &LIB_BASE.replace("    a + b\n", "    a - b\n"),
    );
    let first = p.commit(&["src/lib.rs"], "subtract");
    p.run().expect_decision("ITERATE", "1 (add broken)");
    let adds_line = line_of(LIB_BASE, "fn adds()");

    // Ignored.
    p.git(&["checkout", "--quiet", "-b", "ignore", &first]);
    let broken = LIB_BASE.replace("    a + b\n", "    a - b\n");
    p.write(
        "src/lib.rs",
        &broken.replace(
            "    #[test]\n    fn adds()",
            "    #[test]\n    #[ignore]\n    fn adds()",
        ),
    );
    p.commit(&["src/lib.rs"], "ignore a flaky test");
    p.run().expect_decision("ITERATE", "ignored");
    let record = p.head_record();
    assert_eq!(record["status"], "void", "{record}");
    let found = integrity_issues(&record);
    assert!(
        found
            .iter()
            .any(|(s, f, _)| s == "BLOCKER" && f.contains("test tests::adds is newly skipped")),
        "{found:?}"
    );
    assert!(p.prompt("ignored").contains("restore `tests::adds`"));

    // Deleted.
    p.git(&["checkout", "--quiet", "-b", "delete", &first]);
    p.write(
        "src/lib.rs",
        &broken.replace(
            "    #[test]\n    fn adds() {\n        assert_eq!(add(2, 2), 4);\n    }\n\n",
            "",
        ),
    );
    p.commit(&["src/lib.rs"], "drop a test");
    p.run().expect_decision("ITERATE", "deleted");
    let found = integrity_issues(&p.head_record());
    assert!(
        found.iter().any(|(s, f, at)| s == "BLOCKER"
            && f.contains("test tests::adds was removed")
            && *at == format!("src/lib.rs:{adds_line}")),
        "{found:?}"
    );

    // Expected to panic: the failing test passes by expecting the failure.
    p.git(&["checkout", "--quiet", "-b", "should-panic", &first]);
    p.write(
        "src/lib.rs",
        &broken.replace(
            "    #[test]\n    fn adds()",
            "    #[test]\n    #[should_panic]\n    fn adds()",
        ),
    );
    p.commit(&["src/lib.rs"], "the test expects a panic");
    p.run().expect_decision("ITERATE", "should_panic");
    let found = integrity_issues(&p.head_record());
    assert!(
        found.iter().any(|(s, f, _)| s == "BLOCKER"
            && f.contains("test tests::adds was rewritten to pass")
            && f.contains("#[should_panic]")),
        "{found:?}"
    );

    // Compiled out behind a feature nobody enables, the gate above or below `#[test]`.
    for (branch, gated) in [
        (
            "feature-gate-above",
            "    #[cfg(feature = \"slow-tests\")]\n    #[test]\n    fn adds()",
        ),
        (
            "feature-gate-below",
            "    #[test]\n    #[cfg(feature = \"slow-tests\")]\n    fn adds()",
        ),
    ] {
        p.git(&["checkout", "--quiet", "-b", branch, &first]);
        p.write(
            "src/lib.rs",
            &broken.replace("    #[test]\n    fn adds()", gated),
        );
        p.commit(&["src/lib.rs"], "gate a slow test");
        p.run().expect_decision("ITERATE", branch);
        let found = integrity_issues(&p.head_record());
        assert!(
            found.iter().any(|(s, f, _)| s == "BLOCKER"
                && f.contains("tests::adds")
                && f.contains("deselected")),
            "{branch}: {found:?}"
        );
        assert!(
            !found
                .iter()
                .any(|(_, f, _)| f.contains("no line of the change that deselects it was found")),
            "{branch}: {found:?}"
        );
    }
}
