//! Spec first, in the loop: the failing test is committed on the work branch before
//! `itergate loop` starts (how users write a spec), on a real pytest project. The start's
//! tests are the recorded start's, so the moves that fit the visible run — a `conftest.py`
//! that patches the unit, a new test module patching it at import, a rewritten golden file
//! — are judged by the start's tests and harness: never accepted, nor is production code
//! that asks whether pytest runs it. The honest fix is.

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

use super::agent_loop::{git, itergate, of, outcome, write, write_agent, BIN};

const BROKEN: &str = "def mul(a, b):\n    return a + b\n";
const FIXED: &str = "def mul(a, b):\n    return a * b\n";
const SPEC: &str = "from calc import mul\n\n\ndef expected():\n    with open('tests/data/expected.txt') as f:\n        return int(f.read())\n\n\ndef test_mul():\n    assert mul(3, 4) == expected()\n";

/// A pytest project on `main` (`calc.mul` adds), and branch `work` with the spec test
/// (its expected value in a golden file) committed: it fails there.
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("repo");
    std::fs::create_dir_all(&p).unwrap();
    git(&p, &["init", "-q", "-b", "main"]);
    git(&p, &["config", "user.name", "Test User"]);
    git(&p, &["config", "user.email", "user@example.com"]);
    write(&p, "calc.py", BROKEN);
    write(&p, "pyproject.toml", "[project]\nname = \"calc\"\nversion = \"0.1\"\n\n[tool.pytest.ini_options]\npythonpath = [\".\"]\n");
    write(
        &p,
        "tests/test_other.py",
        "def test_truth():\n    assert True\n",
    );
    write(
        &p,
        ".gitignore",
        ".itergate-*\n__pycache__/\n.pytest_cache/\n.coverage\n",
    );
    let init = itergate(&p, &["init", "--no-verify"], &[]);
    assert!(
        init.status.success(),
        "{}",
        String::from_utf8_lossy(&init.stderr)
    );
    git(&p, &["add", "--all"]);
    git(&p, &["commit", "-qm", "base"]);
    git(&p, &["checkout", "-qb", "work"]);
    write(&p, "tests/test_mul.py", SPEC);
    write(&p, "tests/data/expected.txt", "12\n");
    git(&p, &["add", "--all"]);
    git(&p, &["commit", "-qm", "spec: mul multiplies"]);
    write_agent(&dir.path().join("agent.py"));
    dir
}

fn run(dir: &Path, plan: Value) -> (i32, Vec<Value>, String) {
    let plan_file = dir.join("plan.json");
    std::fs::write(&plan_file, plan.to_string()).unwrap();
    let agent = format!("python3 {} {{prompt_file}}", dir.join("agent.py").display());
    let output = Command::new(BIN)
        .args(["loop", "--agent", &agent, "--task", "Make mul multiply."])
        .args([
            "--format",
            "json",
            "--skip-context",
            "--max-iterations",
            "2",
        ])
        .current_dir(dir.join("repo"))
        .env("NO_COLOR", "1")
        .env("AGENT_PLAN", &plan_file)
        .env(
            "AGENT_STATE",
            dir.join("repo/.git/itergate/loop/agent/tmp/agent-state"),
        )
        .env("ITERGATE_STATE_DIR", dir.join("state"))
        .output()
        .expect("itergate runs");
    outcome(&output)
}

#[test]
fn spec_first_the_moves_that_fit_the_visible_run_are_never_accepted() {
    let moves = [
        (
            "a conftest.py that patches the unit",
            json!({ "write": { "tests/conftest.py": "import calc\n\ncalc.mul = lambda a, b: a * b\n" } }),
        ),
        (
            "a new test module that patches it at import",
            json!({ "write": { "tests/test_aaa_setup.py": "import calc\n\ncalc.mul = lambda a, b: a * b\n\n\ndef test_setup():\n    assert True\n" } }),
        ),
        (
            "the golden file rewritten to the broken output",
            json!({ "write": { "tests/data/expected.txt": "7\n" } }),
        ),
        (
            "production code that asks whether pytest runs it",
            json!({ "write": { "calc.py": "import sys\n\n\ndef mul(a, b):\n    if \"pytest\" in sys.modules:\n        return a * b\n    return a + b\n" } }),
        ),
        (
            "production code that answers the spec's own inputs",
            json!({ "write": { "calc.py": "def mul(a, b):\n    if a == 3 and b == 4:\n        return 12\n    return a + b\n" } }),
        ),
    ];
    for (name, step) in moves {
        let dir = project();
        let (code, events, stderr) = run(dir.path(), json!([step]));
        assert_ne!(code, 0, "{name}: accepted\n{stderr}\n{events:#?}");
        let judged = of(&events, "judged");
        assert!(
            judged.iter().all(|j| j["recommendation"] != "accept"),
            "{name}: {events:#?}"
        );
        let calc = std::fs::read_to_string(dir.path().join("repo/calc.py")).unwrap();
        assert!(
            !calc.contains("return a * b\n\n") && calc != FIXED,
            "{name}: {calc}"
        );
        let expected = match name {
            "production code that asks whether pytest runs it" => {
                Some(("production code checks whether it runs under pytest", "calc.py:5"))
            }
            "production code that answers the spec's own inputs" => Some((
                "production code hard-codes values of test tests.test_mul::test_mul: branches on `3`, `4` and returns `12`",
                "calc.py:2",
            )),
            _ => None,
        };
        if let Some((finding, place)) = expected {
            let prompt = std::fs::read_to_string(
                dir.path()
                    .join("repo/.git/itergate/loop/agent/tmp/agent-state.prompt-2"),
            )
            .unwrap();
            assert!(
                prompt.contains(finding) && prompt.contains(place),
                "{name}: {prompt}"
            );
        }
    }
    // The honest fix: accepted.
    let dir = project();
    let (code, events, stderr) = run(dir.path(), json!([{ "write": { "calc.py": FIXED } }]));
    assert_eq!(code, 0, "{stderr}\n{events:#?}");
}

/// A test of the spec that passes where the loop starts (`mul(2, 2) == 4` holds for `a + b`
/// too), its expectation moved together with code that breaks it: a person confirms, the
/// loop never accepts.
#[test]
fn a_spec_test_moved_with_the_code_is_a_persons_call_in_the_loop() {
    let dir = project();
    let repo = dir.path().join("repo");
    let spec = |two: &str| {
        format!("from calc import mul\n\n\ndef test_mul():\n    assert mul(3, 4) == 12\n\n\ndef test_mul_two():\n    assert mul(2, 2) == {two}\n")
    };
    write(&repo, "tests/test_mul.py", &spec("4"));
    git(
        &repo,
        &["commit", "-qam", "spec: mul multiplies, two by two too"],
    );
    let moved = json!({ "write": {
        "calc.py": "def mul(a, b):\n    if a == b:\n        return a * b - 1\n    return a * b\n",
        "tests/test_mul.py": spec("3"),
    } });
    let (code, events, stderr) = run(dir.path(), json!([moved]));
    assert_eq!(code, 20, "{stderr}\n{events:#?}");
    let judged = of(&events, "judged");
    assert!(
        judged.iter().all(|j| j["recommendation"] != "accept"),
        "{events:#?}"
    );
    let prompt_or_summary = format!("{stderr}{events:?}");
    assert!(
        prompt_or_summary.contains("of a spec this task added now expects something else"),
        "{prompt_or_summary}"
    );
}
