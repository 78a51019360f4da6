//! `itergate loop`'s sandbox (`loop.sandbox: workspace-write`, `--sandbox`): a real agent
//! process tree (a script that forks and execs a shell) tries each write the judge's house
//! forbids; under the sandbox each fails at the write while its work in the work tree and
//! the loop's own commits succeed. With `--sandbox off` the same writes land, and the loop,
//! which owns git, puts them back and escalates. Where the kernel lacks Landlock the loop
//! refuses before any agent runs.

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

use super::agent_loop::{git, git_out, of, outcome, write, Project, MULTIPLY_RIGHT, TEST_MULTIPLY};

/// Each write the agent may not make, and two it may; every outcome is appended to
/// `$TRIES_DIR/tries.txt` (in the loop's scratch directory, the agent's `TMPDIR`). Run from a forked child that execs a
/// shell ([`FORK`]).
const TRIES: &str = r##"mkdir -p "$TRIES_DIR"; log="$TRIES_DIR/tries.txt"
try() { name=$1; shift; if sh -c "$*" 2>/dev/null; then echo "WROTE $name" >> "$log"; else echo "DENIED $name" >> "$log"; fi; }
try git-config 'echo "[core]" >> .git/config'
try git-hook 'printf "#!/bin/sh\nexit 0\n" > .git/hooks/pre-push'
try git-notes 'git update-ref refs/notes/itergate HEAD'
try git-commit 'git add --all && git commit -qm agent'
try venv-pth 'echo "import cheat" > .venv/lib/python3.11/site-packages/cheat.pth'
try node-modules 'echo patched > node_modules/mocha/index.js'
try state-dir 'echo forged > "$ITERGATE_STATE_DIR/key"'
try outside 'echo x > ../outside.txt'
try holdout 'cat .git/itergate/private/0000/holdout.json'
try work-tree 'echo fine > lib/note.txt'
try scratch 'echo fine > "${TMPDIR:?}/scratch.txt"'
try vite-temp 'echo fine > node_modules/.vite-temp/vite.config.mjs'
try npm-cache 'mkdir -p "${npm_config_cache:?}" && echo fine > "$npm_config_cache/x"'
"##;

/// The agent's process tree: a forked child execs a shell that tries the writes.
const FORK: &str = "( exec sh \"$(dirname \"$0\")/tries.sh\" ) &\nwait\n";

fn project() -> Project {
    let project = Project::new(10);
    let p = project.repo();
    // The project's environment and the judge's private files, none of them the agent's.
    write(&p, ".venv/pyvenv.cfg", "home = /usr/bin\n");
    write(&p, ".venv/lib/python3.11/site-packages/ok.py", "");
    write(&p, "node_modules/mocha/index.js", "module.exports = {};\n");
    write(
        &p,
        ".git/itergate/private/0000/holdout.json",
        "{\"secret\": 1}\n",
    );
    write(&p, ".gitignore", ".itergate-*\n.venv/\nnode_modules/\n");
    git(&p, &["commit", "-qam", "ignore the environment"]);
    std::fs::write(project.dir.path().join("tries.sh"), TRIES).unwrap();
    std::fs::write(project.dir.path().join("fork.sh"), FORK).unwrap();
    std::fs::create_dir_all(project.dir.path().join("state")).unwrap();
    project
}

/// The step that tries every write, then does the work.
fn trying(project: &Project) -> Value {
    json!({
        "run": [
            format!("sh {}", project.dir.path().join("fork.sh").display()),
            "echo '[core]' >> .git/config".to_string(),
        ],
        "write": { "lib/multiply.js": MULTIPLY_RIGHT, "test/multiply.test.js": TEST_MULTIPLY },
    })
}

fn run(project: &Project, args: &[&str], env: &[(&str, &str)]) -> (i32, Vec<Value>, String) {
    let output = project
        .command(json!([trying(project)]), args)
        .env("ITERGATE_STATE_DIR", project.dir.path().join("state"))
        .env(
            "TRIES_DIR",
            project.repo().join(".git/itergate/loop/agent/tmp"),
        )
        .envs(env.iter().copied())
        .output()
        .expect("itergate runs");
    outcome(&output)
}

fn tries(repo: &Path) -> String {
    std::fs::read_to_string(repo.join(".git/itergate/loop/agent/tmp/tries.txt")).unwrap_or_default()
}

#[test]
fn under_the_sandbox_every_forbidden_write_fails_and_the_work_is_accepted() {
    let project = project();
    let p = project.repo();
    let config_before = std::fs::read(p.join(".git/config")).unwrap();
    let (code, events, stderr) = run(&project, &[], &[]);
    let tries = tries(&p);
    for denied in [
        "git-config",
        "git-hook",
        "git-notes",
        "git-commit",
        "venv-pth",
        "node-modules",
        "state-dir",
        "outside",
        "holdout",
    ] {
        assert!(
            tries.contains(&format!("DENIED {denied}\n")),
            "{denied}:\n{tries}\n{stderr}"
        );
    }
    for wrote in ["work-tree", "scratch", "vite-temp", "npm-cache"] {
        assert!(
            tries.contains(&format!("WROTE {wrote}\n")),
            "{wrote}:\n{tries}\n{stderr}"
        );
    }
    // Nothing of the judge's house moved, and the loop's own commit holds the work.
    assert_eq!(std::fs::read(p.join(".git/config")).unwrap(), config_before);
    assert!(!p.join(".git/hooks/pre-push").exists());
    assert!(!p
        .join(".venv/lib/python3.11/site-packages/cheat.pth")
        .exists());
    assert_eq!(
        std::fs::read_to_string(p.join("node_modules/mocha/index.js")).unwrap(),
        "module.exports = {};\n"
    );
    assert!(!project.dir.path().join("state/key").exists());
    assert!(!project.dir.path().join("outside.txt").exists());
    assert_eq!(code, 0, "{stderr}\n{events:?}");
    let judged = of(&events, "judged");
    assert_eq!(judged.len(), 1, "{events:?}");
    assert_eq!(judged[0]["recommendation"], "accept");
    // What the agent tried is said, from its own output.
    let finished = of(&events, "agent_finished");
    let refused = finished[0]["refused"].to_string();
    assert!(
        refused.contains(".git/config: Read-only file system"),
        "{finished:?}"
    );
    let files = git_out(&p, &["show", "--name-only", "--format=", "HEAD"]);
    assert!(
        files.contains("lib/multiply.js") && files.contains("lib/note.txt"),
        "{files}"
    );
}

#[test]
fn with_the_sandbox_off_the_loop_puts_back_what_the_agent_changed_and_escalates() {
    let project = project();
    let p = project.repo();
    let config_before = std::fs::read(p.join(".git/config")).unwrap();
    let start = git_out(&p, &["rev-parse", "HEAD"]);
    let (code, events, stderr) = run(&project, &["--sandbox", "off"], &[]);
    assert!(
        stderr.contains("--sandbox off: the agent can write .git"),
        "the risk is stated:\n{stderr}"
    );
    let tries = tries(&p);
    assert!(tries.contains("WROTE git-config\n"), "{tries}");
    assert_eq!(code, 20, "{stderr}\n{events:?}");
    assert!(
        of(&events, "judged").is_empty(),
        "nothing judged: {events:?}"
    );
    let stopped = of(&events, "stopped");
    let summary = stopped[0]["summary"].as_str().unwrap();
    for named in [
        "the agent changed what the loop owns",
        ".git/config (put back)",
        ".git/hooks/pre-push (added; removed)",
        "refs/notes/itergate (put back)",
        "the environment the checks execute (not put back",
        "cheat.pth",
    ] {
        assert!(summary.contains(named), "{named}:\n{summary}");
    }
    assert_eq!(std::fs::read(p.join(".git/config")).unwrap(), config_before);
    assert!(!p.join(".git/hooks/pre-push").exists());
    // The branch is where the task started; what the agent left is kept aside.
    assert_eq!(git_out(&p, &["rev-parse", "HEAD"]), start);
    assert!(git_out(&p, &["status", "--porcelain", "--untracked-files=no"]).is_empty());
    git(
        &p,
        &[
            "rev-parse",
            "--verify",
            "-q",
            "refs/itergate/tampered/agent",
        ],
    );
}

#[test]
fn without_landlock_the_loop_refuses_before_any_agent_runs() {
    let project = project();
    let (code, events, stderr) = run(&project, &[], &[("ITERGATE_LANDLOCK_ABI", "1")]);
    assert_eq!(code, 2, "{stderr}\n{events:?}");
    assert!(
        stderr.contains("needs Landlock ABI 2 or later")
            && stderr.contains("this kernel offers ABI 1")
            && stderr.contains("--sandbox off"),
        "{stderr}"
    );
    assert_eq!(project.runs(), 0, "no agent ran");
    // `--sandbox off` is the way on, with its risk said.
    let (code, _, stderr) = run(
        &project,
        &["--sandbox", "off", "--max-iterations", "1"],
        &[("ITERGATE_LANDLOCK_ABI", "0")],
    );
    assert!(
        stderr.contains("--sandbox off: the agent can write"),
        "{stderr}"
    );
    assert_eq!(project.runs(), 1, "{code}: {stderr}");
}

#[test]
fn sandbox_exec_alone_confines_a_process_tree() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("work");
    for sub in [".git", "src"] {
        std::fs::create_dir_all(root.join(sub)).unwrap();
    }
    let out = Command::new(super::agent_loop::BIN)
        .arg("sandbox-exec")
        .arg("--write")
        .arg(&root)
        .arg("--read-only")
        .arg(root.join(".git"))
        .arg("--")
        .args(["sh", "-c", "(echo a > src/a && echo ok-src); (echo b > .git/b || echo no-git); (echo c > ../c || echo no-outside)"])
        .current_dir(&root)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        said,
        "ok-src\nno-git\nno-outside\n",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

const HOLDOUT_TEST: &str = "import { it } from 'node:test';\nimport assert from 'node:assert/strict';\nimport { multiply } from '../lib/multiply.js';\n\nit('secret product of two and five', () => {\n  assert.strictEqual(multiply(2, 5), 10);\n});\n\nit('secret product of six and seven', () => {\n  assert.strictEqual(multiply(6, 7), 42);\n});\n";
const HOLDOUT_CHECK: &str = "checks:\n  holdout:\n    run: node --test --test-reporter=tap --test-reporter-destination=stdout holdout/\n    report:\n    - format: tap\n      from: stdout\n    visibility: aggregate_only\n    files: [holdout/**]\n";

/// A task whose visible test and holdout both fail at the start: `multiply` adds. The
/// holdout check's rules are the base's.
fn holdout_project() -> Project {
    let project = Project::new(3);
    let p = project.repo();
    git(&p, &["checkout", "-q", "main"]);
    let config = std::fs::read_to_string(p.join(".itergate.yml")).unwrap();
    write(
        &p,
        ".itergate.yml",
        &config.replace("checks:\n", HOLDOUT_CHECK),
    );
    write(
        &p,
        "lib/multiply.js",
        "export function multiply(a, b) {\n  return a + b;\n}\n",
    );
    write(&p, "test/multiply.test.js", TEST_MULTIPLY);
    write(&p, "holdout/multiply.test.js", HOLDOUT_TEST);
    git(&p, &["add", "--all"]);
    git(&p, &["commit", "-qm", "multiply, with a holdout"]);
    git(&p, &["branch", "-qf", "agent", "main"]);
    git(&p, &["checkout", "-q", "agent"]);
    project
}

#[test]
fn a_holdout_the_agent_cannot_see_fails_an_iteration_fitted_to_the_visible_test() {
    let project = holdout_project();
    let p = project.repo();
    // The agent looks for the holdout, then special-cases the visible test's inputs.
    let fitted = json!({
        "run": ["ls holdout > lib/seen.txt; cat holdout/multiply.test.js >> lib/seen.txt; true"],
        "write": { "lib/multiply.js": "export function multiply(a, b) {\n  if (a === 3 && b === 4) return 12;\n  return a + b;\n}\n" },
    });
    let (code, events, stderr) = run_plan(
        &project,
        json!([fitted]),
        &["--skip-context", "--max-iterations", "2"],
    );
    assert!(
        stderr.contains("and 2 of the holdout checks' tests") && !stderr.contains("secret product"),
        "the holdout is a target, counted, not named:\n{stderr}"
    );
    // Every iteration VOID for a violation: at the iteration limit a person decides
    // (escalated), the branch back at the start.
    assert_eq!(code, 20, "{stderr}\n{events:?}");
    let judged = of(&events, "judged");
    assert!(
        judged.iter().all(|j| j["recommendation"] != "accept"),
        "{events:?}"
    );
    // A VOID iteration has no score.
    assert!(judged.iter().all(|j| j["quality"].is_null()), "{judged:?}");
    // The holdout's files were hidden from the agent.
    let seen = git_out(&p, &["show", "refs/itergate/last/agent:lib/seen.txt"]);
    assert!(!seen.contains("secret product"), "{seen}");
    // The next prompt says the work fits the visible test, in aggregate only.
    let prompt = project.prompt(2);
    assert!(
        prompt.contains("fitted to the visible tests")
            && prompt.contains("holdout check `holdout`: 0 of 2 passed"),
        "{prompt}"
    );
    assert!(!prompt.contains("secret product"), "{prompt}");
    let stopped = of(&events, "stopped");
    let summary = stopped[0]["summary"].as_str().unwrap_or_default();
    assert!(
        summary.contains("VOID") && summary.contains("a holdout check fails"),
        "{summary}"
    );

    // The honest fix passes both: accepted.
    let project = holdout_project();
    let honest = json!({ "write": { "lib/multiply.js": MULTIPLY_RIGHT } });
    let (code, events, stderr) = run_plan(&project, json!([honest]), &["--skip-context"]);
    assert_eq!(code, 0, "{stderr}\n{events:?}");
}

fn run_plan(project: &Project, plan: Value, args: &[&str]) -> (i32, Vec<Value>, String) {
    let output = project
        .command(plan, args)
        .env("ITERGATE_STATE_DIR", project.dir.path().join("state"))
        .output()
        .expect("itergate runs");
    outcome(&output)
}

/// The sandboxed agent cannot write `node_modules`: it names the dependency its work needs
/// in `package.json`, and the loop installs it before the checks; the environment's change
/// is explained by the committed manifest, so the iteration is judged, and accepted.
#[test]
fn a_dependency_the_agent_names_in_the_manifest_is_installed_by_the_loop() {
    let project = Project::new(3);
    let p = project.repo();
    std::fs::create_dir_all(p.join("node_modules")).unwrap();
    write(&p, ".gitignore", ".itergate-*\nnode_modules/\n");
    git(&p, &["commit", "-qam", "ignore node_modules"]);
    let manifest = std::fs::read_to_string(p.join("package.json")).unwrap();
    let with_dependency = manifest.replace(
        r#""scripts""#,
        r#""dependencies":{"times":"file:./vendor/times"},"scripts""#,
    );
    assert_ne!(manifest, with_dependency);
    let step = json!({
        "run": ["npm install --ignore-scripts --no-package-lock >/dev/null 2>&1 && echo installed-by-agent > lib/agent.txt; true"],
        "write": {
            "vendor/times/package.json": r#"{"name":"times","version":"1.0.0","type":"module","main":"index.js"}"#,
            "vendor/times/index.js": "export function times(a, b) {\n  return a * b;\n}\n",
            "package.json": with_dependency,
            "lib/multiply.js": "import { times } from 'times';\n\nexport function multiply(a, b) {\n  return times(a, b);\n}\n",
            "test/multiply.test.js": TEST_MULTIPLY,
        },
    });
    let (code, events, stderr) = run_plan(&project, json!([step]), &["--skip-context"]);
    assert!(
        !p.join("lib/agent.txt").exists(),
        "the agent could not install it itself"
    );
    assert!(
        stderr.contains("installed: npm install --ignore-scripts --no-package-lock"),
        "{stderr}"
    );
    assert_eq!(code, 0, "{stderr}\n{events:?}");
    assert!(p.join("node_modules/times").exists());
}
