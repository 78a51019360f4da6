//! `itergate loop` end to end: the real binary drives a scripted agent (a real process
//! that reads its prompt and edits files by the plan its test gives it) on a real node:test
//! project with the real `node`, and the decisions are the ones a reviewer would make:
//! fixed on the second try is accepted; a test deleted to pass is not; an agent that never
//! fixes it is escalated with a hand-off; one that hangs is stopped at the wall clock; one
//! over its token budget is stopped with the best iteration restored; Ctrl-C exits 130.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{json, Value};

use crate::redact;

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_itergate");

/// The scripted agent. Each run takes the next step of the plan in `$AGENT_PLAN` (the last
/// step repeats): it saves the prompt it was given, writes and deletes files, may run
/// commands, commit, print, sleep and exit with a status. `$AGENT_STATE` counts its runs
/// (in the loop's scratch directory, which the sandbox lets it write).
const AGENT: &str = r#"#!/usr/bin/env python3
import json, os, subprocess, sys, time
plan = json.load(open(os.environ["AGENT_PLAN"]))
state = os.environ["AGENT_STATE"]
os.makedirs(os.path.dirname(state), exist_ok=True)
n = int(open(state).read()) if os.path.exists(state) else 0
open(state, "w").write(str(n + 1))
given = len(sys.argv) > 1 and os.path.isfile(sys.argv[-1])
prompt = open(sys.argv[-1]).read() if given else sys.stdin.read()
open(f"{state}.prompt-{n + 1}", "w").write(prompt)
step = plan[min(n, len(plan) - 1)]
for path, text in step.get("write", {}).items():
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    open(path, "w").write(text)
for path in step.get("delete", []):
    os.remove(path)
for command in step.get("run", []):
    subprocess.run(command, shell=True)
if "commit" in step:
    subprocess.run(["git", "add", "--all"], check=True)
    subprocess.run(["git", "commit", "-q", "-m", step["commit"]], check=True)
if "print" in step:
    print(step["print"], flush=True)
open(f"{state}.started", "w").write("yes")
time.sleep(step.get("sleep", 0))
sys.exit(step.get("exit", 0))
"#;

const MATH: &str = "export function add(a, b) {\n  return a + b;\n}\n";
const TEST_ADD: &str = "import { it } from 'node:test';\nimport assert from 'node:assert/strict';\nimport { add } from '../lib/math.js';\n\nit('adds', () => {\n  assert.strictEqual(add(1, 2), 3);\n});\n";
const MULTIPLY_WRONG: &str = "export function multiply(a, b) {\n  return a + b;\n}\n";
pub(crate) const MULTIPLY_RIGHT: &str = "export function multiply(a, b) {\n  return a * b;\n}\n";
pub(crate) const TEST_MULTIPLY: &str = "import { it } from 'node:test';\nimport assert from 'node:assert/strict';\nimport { multiply } from '../lib/multiply.js';\n\nit('multiplies', () => {\n  assert.strictEqual(multiply(3, 4), 12);\n});\n";

pub(crate) struct Project {
    pub(crate) dir: tempfile::TempDir,
}

impl Project {
    /// A node:test project on `main` (`itergate init`'s configuration, at most `max`
    /// iterations), and a branch `agent` for the loop.
    pub(crate) fn new(max: u32) -> Project {
        Project::with_stopping(max, "")
    }

    /// [`Project::new`], with `stopping` added to `stopping_criteria`.
    fn with_stopping(max: u32, stopping: &str) -> Project {
        Project::with_config(max, stopping, "")
    }

    /// [`Project::with_stopping`], with `top` (whole sections) appended to the configuration.
    fn with_config(max: u32, stopping: &str, top: &str) -> Project {
        let dir = tempfile::tempdir().expect("tempdir");
        let project = Project { dir };
        let p = project.repo();
        std::fs::create_dir_all(&p).unwrap();
        git(&p, &["init", "-q", "-b", "main"]);
        git(&p, &["config", "user.name", "Test User"]);
        git(&p, &["config", "user.email", "user@example.com"]);
        write(
            &p,
            "package.json",
            r#"{"name":"fx","version":"1.0.0","type":"module","scripts":{"test":"node --test test/"}}"#,
        );
        write(&p, "lib/math.js", MATH);
        write(&p, "test/math.test.js", TEST_ADD);
        write(&p, ".gitignore", ".itergate-*\n");
        let init = itergate(&p, &["init", "--no-verify"], &[]);
        assert!(
            init.status.success(),
            "{}",
            String::from_utf8_lossy(&init.stderr)
        );
        let config = std::fs::read_to_string(p.join(".itergate.yml")).unwrap();
        let limited = config.replace("max: 10 }", &format!("max: {max} }}\n{stopping}"));
        assert!(
            config != limited || (max == 10 && stopping.is_empty()),
            "{config}"
        );
        write(&p, ".itergate.yml", &format!("{limited}\n{top}"));
        git(&p, &["add", "--all"]);
        git(&p, &["commit", "-q", "-m", "base"]);
        git(&p, &["checkout", "-q", "-b", "agent"]);
        write_agent(&project.dir.path().join("agent.py"));
        project
    }

    pub(crate) fn repo(&self) -> PathBuf {
        self.dir.path().join("repo")
    }

    /// In the loop's scratch directory: what the agent's sandbox lets it write.
    pub(crate) fn state(&self) -> PathBuf {
        self.repo().join(".git/itergate/loop/agent/tmp/agent-state")
    }

    /// Runs `itergate loop` with the scripted agent following `plan`.
    pub(crate) fn run(&self, plan: Value, args: &[&str]) -> (i32, Vec<Value>, String) {
        let output = self.command(plan, args).output().expect("itergate runs");
        outcome(&output)
    }

    pub(crate) fn command(&self, plan: Value, args: &[&str]) -> Command {
        let agent = format!(
            "python3 {} {{prompt_file}}",
            self.dir.path().join("agent.py").display()
        );
        self.command_with(&agent, plan, args)
    }

    /// The loop with `--agent agent` (a preset's name, or a command).
    fn command_with(&self, agent: &str, plan: Value, args: &[&str]) -> Command {
        let plan_file = self.dir.path().join("plan.json");
        std::fs::write(&plan_file, plan.to_string()).unwrap();
        let mut command = Command::new(BIN);
        command
            .args([
                "loop",
                "--agent",
                agent,
                "--task",
                "Add multiply(a, b) in lib/multiply.js, with a test.",
            ])
            .args(["--format", "json"])
            .args(args)
            .current_dir(self.repo())
            .env("NO_COLOR", "1")
            .env("AGENT_PLAN", &plan_file)
            .env("AGENT_STATE", self.state());
        command
    }

    /// The scripted agent on a `PATH` (returned) as the preset's program `name`.
    fn as_preset(&self, name: &str) -> String {
        let bin = self.dir.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let program = bin.join(name);
        std::fs::write(&program, AGENT).unwrap();
        std::fs::set_permissions(
            &program,
            <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o755),
        )
        .unwrap();
        format!("{}:{}", bin.display(), std::env::var("PATH").unwrap())
    }

    pub(crate) fn prompt(&self, run: u32) -> String {
        std::fs::read_to_string(format!("{}.prompt-{run}", self.state().display())).unwrap()
    }

    pub(crate) fn runs(&self) -> u32 {
        std::fs::read_to_string(self.state()).map_or(0, |s| s.parse().unwrap())
    }

    fn log(&self, args: &[&str]) -> String {
        git_out(&self.repo(), args)
    }
}

/// A message itergate wrote (a prompt, a summary, a commit message, its terminal output)
/// against the snapshot `name` in `snapshots/`: the project's directory named `<dir>`, what
/// varies between runs (SHAs, times, durations) redacted and the check progress lines,
/// whose order varies, dropped.
fn assert_message(name: &str, project: &Project, message: &str) {
    let message = message.replace(project.dir.path().to_str().expect("utf-8"), "<dir>");
    insta::with_settings!({ filters => redact::without_progress() }, {
        insta::assert_snapshot!(name, message);
    });
}

pub(crate) fn write_agent(path: &Path) {
    std::fs::write(path, AGENT).unwrap();
}

pub(crate) fn git(dir: &Path, args: &[&str]) {
    git_out(dir, args);
}

pub(crate) fn git_out(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub(crate) fn write(dir: &Path, file: &str, text: &str) {
    let path = dir.join(file);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

pub(crate) fn itergate(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .envs(env.iter().copied())
        .output()
        .expect("itergate runs")
}

/// A JSON-lines loop's exit code, its events and its stderr.
pub(crate) fn outcome(output: &Output) -> (i32, Vec<Value>, String) {
    let events = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    (
        output.status.code().unwrap_or(-1),
        events,
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

pub(crate) fn of<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["event"] == kind).collect()
}

pub(crate) fn wrong() -> Value {
    json!({ "write": { "lib/multiply.js": MULTIPLY_WRONG, "test/multiply.test.js": TEST_MULTIPLY } })
}

fn right() -> Value {
    json!({ "write": { "lib/multiply.js": MULTIPLY_RIGHT } })
}

#[test]
fn fixed_on_the_second_try_is_accepted_and_each_run_is_one_commit_with_trailers() {
    let project = Project::new(10);
    // The first run leaves its work uncommitted; the second commits twice by itself.
    let second = json!({ "write": { "lib/multiply.js": MULTIPLY_RIGHT, "notes.txt": "x\n" },
                         "commit": "fix multiply" });
    let (code, events, stderr) = project.run(json!([wrong(), second]), &[]);
    assert_eq!(code, 0, "{stderr}\n{events:?}");
    let judged = of(&events, "judged");
    let decisions: Vec<&str> = judged
        .iter()
        .map(|j| j["recommendation"].as_str().unwrap())
        .collect();
    assert_eq!(decisions, ["iterate", "accept"], "{stderr}");
    assert_eq!(of(&events, "stopped")[0]["outcome"], "accepted");
    let numbers: Vec<&Value> = of(&events, "iteration_started")
        .iter()
        .chain(judged.iter())
        .map(|e| &e["iteration"])
        .collect();
    assert_eq!(
        numbers,
        [&json!(1), &json!(2), &json!(1), &json!(2)],
        "{events:#?}"
    );
    assert_eq!(project.runs(), 2);
    // The second run was given the revision prompt, naming the failing test.
    assert_message("loop_seed_prompt", &project, &project.prompt(1));
    assert_message("loop_revision_prompt", &project, &project.prompt(2));
    // One commit per run, on top of main, with itergate's trailers last.
    let subjects = project.log(&["log", "--format=%s", "main..agent"]);
    assert_eq!(subjects.lines().count(), 2, "{subjects}");
    let first = project.log(&["log", "-1", "--format=%B", "agent~1"]);
    assert_message("loop_first_commit_message", &project, &first);
    let status = project.log(&["status", "--porcelain"]);
    assert_eq!(status, "", "the tree is left clean");
}

#[test]
fn a_test_deleted_to_pass_is_caught_and_never_accepted() {
    let project = Project::new(3);
    let delete = json!({ "delete": ["test/multiply.test.js"] });
    let (code, events, stderr) = project.run(json!([wrong(), delete]), &[]);
    eprintln!("{events:#?}\n{stderr}");
    assert_eq!(code, 20, "{stderr}\n{events:?}");
    let judged = of(&events, "judged");
    assert!(
        judged.iter().all(|j| j["recommendation"] != "accept"),
        "{events:?}"
    );
    let stopped = &of(&events, "stopped")[0];
    assert_ne!(stopped["outcome"], "accepted");
    let prompt = project.prompt(3.min(project.runs()));
    assert!(
        prompt.contains("removed") || prompt.contains("deleted") || stderr.contains("integrity"),
        "{prompt}\n{stderr}"
    );
}

#[test]
fn an_agent_that_never_fixes_it_is_escalated_with_a_hand_off() {
    let project = Project::new(3);
    let (code, events, stderr) = project.run(json!([wrong()]), &[]);
    assert_eq!(code, 20, "{stderr}\n{events:?}");
    let stopped = &of(&events, "stopped")[0];
    assert_eq!(stopped["outcome"], "escalated", "{stopped}");
    assert_message(
        "loop_escalated_summary",
        &project,
        stopped["summary"].as_str().unwrap(),
    );
    assert!(
        project.runs() <= 3,
        "the iteration limit is itergate's: {}",
        project.runs()
    );
}

#[test]
fn a_hanging_agent_is_stopped_at_the_wall_clock_and_its_work_judged() {
    let project = Project::new(10);
    let hang = json!({ "write": { "lib/multiply.js": MULTIPLY_RIGHT, "test/multiply.test.js": TEST_MULTIPLY }, "sleep": 600 });
    let started = std::time::Instant::now();
    let (_, events, stderr) = project.run(json!([hang, right()]), &["--iteration-timeout", "3s"]);
    let finished = of(&events, "agent_finished");
    assert!(
        finished[0]["exit"]
            .as_str()
            .unwrap()
            .starts_with("stopped at the per-run limit (3s"),
        "{events:?}\n{stderr}"
    );
    assert!(
        finished[0]["seconds"].as_f64().unwrap() < 10.0,
        "{events:?}"
    );
    assert!(started.elapsed().as_secs() < 120);
    let first = project.log(&["log", "--format=%B", "--reverse", "main..agent"]);
    // No filters: the `3s` is the limit, not a measured time.
    insta::assert_snapshot!(first, @"
        itergate loop: iteration 1 by custom

        Itergate-Iteration: 1
        Agent: custom
        Agent-Exit: stopped at the per-run limit (3s, --iteration-timeout or loop.iteration_minutes)
        Cost-Source: none
        ");
}

#[test]
fn ctrl_c_stops_the_agent_and_records_nothing_half_done() {
    let project = Project::new(10);
    let hang = json!({ "write": { "lib/multiply.js": MULTIPLY_RIGHT }, "sleep": 600 });
    let mut child = project
        .command(json!([hang]), &[])
        .spawn()
        .expect("itergate starts");
    let started = PathBuf::from(format!("{}.started", project.state().display()));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !started.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the agent never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let pid = i32::try_from(child.id()).unwrap();
    unsafe {
        libc::kill(pid, libc::SIGINT);
    }
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert_eq!(
        project.log(&["rev-list", "--count", "main..agent"]).trim(),
        "0"
    );
}

#[test]
fn over_its_token_budget_the_loop_stops_with_the_best_iteration_restored() {
    // The hooks append what they are given to files beside the repository.
    let hooks = "loop:\n  on_iteration: [\"cat >> ../on_iteration.jsonl; echo >> ../on_iteration.jsonl\"]\n  on_stop: [\"cat > ../on_stop.json\"]\n  on_regression: [\"cat > ../on_regression.json\", \"exit 3\"]\n";
    let project = Project::with_config(10, "  budget_limits: { total_tokens: 1000 }\n", hooks);
    // The scripted agent as the `claude` preset: on PATH as `claude`, printing Claude
    // Code's `result` object with 600 tokens a run.
    let path = project.as_preset("claude");
    let result = json!({ "type": "result", "subtype": "success", "is_error": false,
        "total_cost_usd": 0.01, "usage": { "input_tokens": 500, "output_tokens": 100 } })
    .to_string();
    // One test failing, then two: the first is the better.
    let mut good = wrong();
    good["print"] = json!(result);
    // The second run also says it failed: Claude Code's turn cap.
    let capped = json!({ "type": "result", "subtype": "error_max_turns", "is_error": true,
        "total_cost_usd": 0.01, "usage": { "input_tokens": 500, "output_tokens": 100 } })
    .to_string();
    let broken =
        json!({ "write": { "lib/math.js": MATH.replace("a + b", "a - b") }, "print": capped });
    let output = project
        .command_with("claude", json!([good, broken]), &[])
        .env("PATH", path)
        .output()
        .unwrap();
    let events: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(20), "{stderr}\n{events:#?}");
    let finished = of(&events, "agent_finished");
    assert_eq!(finished[0]["usage"]["total_tokens"], 600, "{events:#?}");
    assert_eq!(finished[0]["usage"]["cost_source"], "reported");
    let stopped = &of(&events, "stopped")[0];
    assert_eq!(stopped["outcome"], "budget_exhausted", "{stopped:#}");
    assert_eq!(
        stopped["budget_stop_report"]["stop_reason"], "total_tokens_exhausted",
        "{stopped:#}"
    );
    assert_eq!(stopped["best_iteration"], 1, "{stopped:#}");
    // The branch is back at the first iteration; the last is kept.
    let first = project.log(&["rev-list", "--reverse", "main..refs/itergate/last/agent"]);
    let first = first.lines().next().unwrap().to_string();
    assert_eq!(project.log(&["rev-parse", "agent"]).trim(), first);
    assert_eq!(
        std::fs::read_to_string(project.repo().join("lib/math.js")).unwrap(),
        MATH
    );
    let last = project.log(&["log", "-1", "--format=%B", "refs/itergate/last/agent"]);
    assert_message("loop_over_budget_last_commit_message", &project, &last);
    let message = project.log(&["log", "-1", "--format=%B", &first]);
    assert_message("loop_over_budget_first_commit_message", &project, &message);
    // The hooks: each judged iteration, the stop, and the second (worse) iteration.
    let read =
        |name: &str| std::fs::read_to_string(project.dir.path().join(name)).unwrap_or_default();
    let iterations: Vec<Value> = read("on_iteration.jsonl")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(iterations.len(), 2, "{iterations:#?}");
    assert!(
        iterations[0]["iterationDecision"]["decision"].is_object(),
        "{:#}",
        iterations[0]
    );
    let stop: Value = serde_json::from_str(&read("on_stop.json")).unwrap();
    assert!(
        stop["iterationDecision"]["budgetStopReport"].is_object(),
        "{stop:#}"
    );
    assert!(
        !read("on_regression.json").is_empty(),
        "the second iteration scored lower"
    );
    // A failing hook is reported.
    assert_message("loop_over_budget_stderr", &project, &stderr);
    // The hand-off names the budget.
    assert_message(
        "loop_over_budget_summary",
        &project,
        stopped["summary"].as_str().unwrap(),
    );
}

#[test]
fn an_agent_that_asks_for_context_is_given_exactly_that_then_fixes_it() {
    let project = Project::new(10);
    let gap = "CONTEXT_GAP_REPORT\n------------------\nNEEDS: lib/math.js | REASON: the style of the existing functions | ALTERNATIVE: none — required\nREADY_TO_EXECUTE: false";
    let ask = json!({ "print": gap });
    let work = json!({ "write": { "lib/multiply.js": MULTIPLY_RIGHT, "test/multiply.test.js": TEST_MULTIPLY } });
    let (code, events, stderr) = project.run(json!([ask, work]), &["--entry", "lib/math.js"]);
    assert_eq!(code, 0, "{stderr}\n{events:#?}");
    let rounds = of(&events, "context_round");
    assert_eq!(rounds[0]["outcome"], "delivered", "{events:#?}");
    assert_eq!(rounds[0]["items"], 1);
    assert_eq!(rounds[1]["outcome"], "worked");
    assert_message("loop_round_0_prompt", &project, &project.prompt(1));
    // The task is given again, with the delivery.
    let delivery = project.prompt(2);
    assert_message("loop_round_0_delivery", &project, &delivery);
    // A property, whatever the snapshot says.
    assert!(
        !delivery.contains("assert.strictEqual"),
        "nothing that was not asked for: {delivery}"
    );
    // What the rounds cost is not lost: one commit, the work of the second run.
    assert_eq!(
        project.log(&["rev-list", "--count", "main..agent"]).trim(),
        "1"
    );
}

#[test]
fn a_required_item_that_cannot_be_given_calls_a_person_before_any_work() {
    let project = Project::new(10);
    let gap = "CONTEXT_GAP_REPORT\n------------------\nNEEDS: docs/design.md | REASON: the design decides the API | ALTERNATIVE: none — required\nREADY_TO_EXECUTE: false";
    let (code, events, stderr) = project.run(json!([{ "print": gap }]), &[]);
    assert_eq!(code, 20, "{stderr}\n{events:#?}");
    let stopped = &of(&events, "stopped")[0];
    assert_eq!(stopped["outcome"], "escalated");
    assert_message(
        "loop_required_item_summary",
        &project,
        stopped["summary"].as_str().unwrap(),
    );
    assert_eq!(project.runs(), 1);
    assert_eq!(
        project.log(&["rev-list", "--count", "main..agent"]).trim(),
        "0"
    );
}

/// Opt-in (`cargo test -- --ignored agents_help`, needs npm, pip and their registries): each preset's
/// CLI, installed as its users install it, still documents the flags its preset uses.
#[test]
#[ignore = "installs the agents' CLIs from npm and PyPI"]
fn agents_help_still_lists_the_flags_their_presets_use() {
    let dir = tempfile::tempdir().unwrap();
    // (npm package, binary, the subcommand whose help to read, flags the preset passes)
    let agents: [(&str, &str, &[&str], &[&str]); 4] = [
        (
            "@anthropic-ai/claude-code",
            "claude",
            &[],
            &["--print", "--output-format"],
        ),
        ("@openai/codex", "codex", &["exec"], &["--json"]),
        (
            "@google/gemini-cli",
            "gemini",
            &[],
            &["--prompt", "--output-format"],
        ),
        ("opencode-ai", "opencode", &["run"], &["--format"]),
    ];
    for (package, bin, sub, flags) in agents {
        let install = Command::new("npm")
            .args(["install", "--silent", "--no-audit", "--no-fund", "--prefix"])
            .arg(dir.path())
            .arg(package)
            .output()
            .expect("npm runs");
        assert!(
            install.status.success(),
            "{package}: {}",
            String::from_utf8_lossy(&install.stderr)
        );
        let help = Command::new(dir.path().join("node_modules/.bin").join(bin))
            .args(sub)
            .arg("--help")
            .output()
            .expect("the CLI runs");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&help.stdout),
            String::from_utf8_lossy(&help.stderr)
        );
        for flag in flags {
            assert!(
                text.contains(flag),
                "{package} {sub:?} --help lists no {flag}:\n{text}"
            );
        }
    }
    // aider installs from PyPI, into a virtual environment.
    let venv = dir.path().join("venv");
    let made = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&venv)
        .status()
        .unwrap();
    assert!(made.success());
    let install = Command::new(venv.join("bin/pip"))
        .args(["install", "--quiet", "aider-chat"])
        .output()
        .expect("pip runs");
    assert!(
        install.status.success(),
        "aider-chat: {}",
        String::from_utf8_lossy(&install.stderr)
    );
    let help = Command::new(venv.join("bin/aider"))
        .arg("--help")
        .output()
        .expect("aider runs");
    let text = String::from_utf8_lossy(&help.stdout);
    for flag in [
        "--message-file",
        "--no-auto-commits",
        "--no-gitignore",
        "--no-analytics",
        "--analytics-log",
        "--yes-always",
    ] {
        assert!(text.contains(flag), "aider --help lists no {flag}:\n{text}");
    }
}

#[test]
fn an_agent_cannot_raise_its_own_budget_or_rewrite_the_branch() {
    // Under the sandbox, the agent's `itergate budget 50` cannot write the notes.
    let project = Project::new(3);
    let mut sneaky = wrong();
    sneaky["run"] = json!([format!("{BIN} budget 50")]);
    let (code, events, stderr) = project.run(json!([sneaky.clone()]), &[]);
    assert_eq!(code, 20, "{stderr}\n{events:#?}");
    assert!(
        project.runs() <= 3,
        "the budget stayed itergate's: {} runs",
        project.runs()
    );
    // With the sandbox off it can: the loop puts the notes back and escalates at once.
    let project = Project::new(3);
    let (code, events, stderr) = project.run(json!([sneaky]), &["--sandbox", "off"]);
    assert_eq!(code, 20, "{stderr}\n{events:#?}");
    let stopped = of(&events, "stopped");
    let summary = stopped[0]["summary"].as_str().unwrap_or_default();
    assert_message("loop_notes_changed_by_the_agent_summary", &project, summary);
    // Round 0's `budget` finds no iteration to raise; the first iteration's does.
    assert_eq!(project.runs(), 2);

    // An agent that rewrites the history below its start: an escalation, the branch back
    // where the run started.
    let project = Project::new(10);
    let rewrite = json!({ "run": ["git reset -q --hard main"] });
    let (code, events, stderr) = project.run(json!([wrong(), rewrite]), &["--sandbox", "off"]);
    assert_eq!(code, 20, "{stderr}");
    let stopped = of(&events, "stopped");
    let summary = stopped[0]["summary"].as_str().unwrap_or_default();
    assert_message("loop_history_rewritten_summary", &project, summary);
    assert_ne!(
        git_out(&project.repo(), &["rev-parse", "HEAD"]),
        git_out(&project.repo(), &["rev-parse", "main"]),
        "the branch is restored"
    );
}

const ADD_BROKEN: &str = "export function add(a, b) {\n  return a - b;\n}\n";

impl Project {
    /// Breaks `add` on the current branch (its test fails): the state a loop starts from.
    fn commit_broken_add(&self) {
        let p = self.repo();
        write(&p, "lib/math.js", ADD_BROKEN);
        git(&p, &["commit", "-q", "-am", "add: a regression"]);
    }

    /// The loop on the scripted agent, told to make the failing test pass.
    fn fix_add(&self, plan: Value, args: &[&str]) -> (i32, Vec<Value>, String) {
        let plan_file = self.dir.path().join("plan.json");
        std::fs::write(&plan_file, plan.to_string()).unwrap();
        let agent = format!(
            "python3 {} {{prompt_file}}",
            self.dir.path().join("agent.py").display()
        );
        let output = Command::new(BIN)
            .args([
                "loop",
                "--agent",
                &agent,
                "--task",
                "Make the math tests pass.",
            ])
            .args(["--format", "json", "--skip-context"])
            .args(args)
            .current_dir(self.repo())
            .env("NO_COLOR", "1")
            .env("AGENT_PLAN", &plan_file)
            .env("AGENT_STATE", self.state())
            .output()
            .expect("itergate runs");
        outcome(&output)
    }
}

fn never_accepted(code: i32, events: &[Value], stderr: &str) {
    assert_ne!(code, 0, "{stderr}\n{events:?}");
    assert!(
        of(events, "judged")
            .iter()
            .all(|j| j["recommendation"] != "accept"),
        "{events:?}"
    );
}

/// The book's own example (docs/src/guide/loop.md): the task is on the base branch, its
/// failing test the target.
/// A README-only edit, an agent that crashes, and a rewritten assertion never end it.
#[test]
fn on_the_base_branch_the_starts_failing_tests_are_the_target() {
    let project = Project::new(10);
    git(&project.repo(), &["checkout", "-q", "main"]);
    project.commit_broken_add();
    let readme = json!({ "write": { "README.md": "# fx\n\nMath helpers.\n" } });
    let (code, events, stderr) = project.fix_add(json!([readme]), &["--max-iterations", "2"]);
    never_accepted(code, &events, &stderr);
    assert_message("loop_targets_stderr", &project, &stderr);
    // The target is named.
    assert_message("loop_targets_prompt", &project, &project.prompt(1));
    // Iterations count from the loop's start, not one commit at a time.
    let numbers: Vec<&Value> = of(&events, "judged")
        .iter()
        .map(|j| &j["iteration"])
        .collect();
    assert_eq!(numbers, [&json!(1), &json!(2)], "{events:?}");
    // Every prompt after the first carries the task first.
    assert_message("loop_targets_second_prompt", &project, &project.prompt(2));
}

/// Iterations that leave the target failing are never the best the branch is left at: an
/// escalation takes the branch back to the start, the last iteration kept as a ref.
#[test]
fn an_unfinished_task_goes_back_to_its_start_never_to_an_iteration_failing_its_target() {
    let project = Project::new(10);
    git(&project.repo(), &["checkout", "-q", "main"]);
    project.commit_broken_add();
    let start = git_out(&project.repo(), &["rev-parse", "HEAD"]);
    let readme = json!({ "write": { "README.md": "# fx\n\nMath helpers.\n" } });
    let notes = json!({ "write": { "NOTES.md": "looked at add\n" } });
    let (code, events, stderr) =
        project.fix_add(json!([readme, notes]), &["--max-iterations", "2"]);
    assert_eq!(code, 20, "{stderr}\n{events:?}");
    let judged = of(&events, "judged");
    assert_eq!(judged.len(), 2, "{events:?}");
    let stopped = &of(&events, "stopped")[0];
    assert_eq!(stopped["best_iteration"], Value::Null, "{stopped:#}");
    let summary = stopped["summary"].as_str().unwrap_or_default();
    assert!(!summary.contains("<- best"), "{summary}");
    assert!(
        summary.contains("No iteration is worth keeping (each is VOID, unscored, suspect or fails a target): the branch is back where the task started"),
        "{summary}"
    );
    assert_eq!(git_out(&project.repo(), &["rev-parse", "HEAD"]), start);
    assert_eq!(stopped["commit"].as_str(), Some(start.trim()));
    let last = judged[1]["commit"].as_str().unwrap_or_default().to_string();
    assert_eq!(
        git_out(&project.repo(), &["rev-parse", "refs/itergate/last/main"]).trim(),
        last,
        "the last iteration is kept"
    );
}

/// Two branches whose tasks start at one commit and both go back there: each keeps its own
/// last iteration and its own escalation; a person's guidance on one does not let the
/// other's loop go on.
#[test]
fn branches_back_at_one_start_keep_their_own_last_iteration_and_decisions() {
    let project = Project::new(10);
    let p = project.repo();
    git(&p, &["checkout", "-q", "main"]);
    project.commit_broken_add();
    let readme = |text: &str| json!({ "write": { "README.md": format!("# fx\n\n{text}\n") } });
    let mut lasts = Vec::new();
    for branch in ["c", "e"] {
        git(&p, &["checkout", "-q", "-b", branch, "main"]);
        let plan = json!([
            readme(&format!("{branch} 1")),
            readme(&format!("{branch} 2"))
        ]);
        let (code, _, stderr) = project.fix_add(plan, &["--max-iterations", "2"]);
        assert_eq!(code, 20, "{stderr}");
        let last = git_out(&p, &["rev-parse", &format!("refs/itergate/last/{branch}")]);
        assert_eq!(
            git_out(&p, &["show", &format!("{}:README.md", last.trim())]).trim(),
            format!("# fx\n\n{branch} 2")
        );
        lasts.push(last);
    }
    assert_ne!(lasts[0], lasts[1], "each branch keeps its own");
    // Guidance for `e` only.
    let adjust = itergate(&p, &["adjust", "E-ONLY: fix add"], &[]);
    assert!(
        adjust.status.success(),
        "{}",
        String::from_utf8_lossy(&adjust.stderr)
    );
    // `c` still waits for a person.
    git(&p, &["checkout", "-q", "c"]);
    let runs = project.runs();
    let (code, _, stderr) = project.fix_add(json!([readme("c 3")]), &[]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("back where it started"), "{stderr}");
    assert_eq!(project.runs(), runs, "no agent ran on `c`");
}

#[test]
fn a_crashing_agent_or_a_rewritten_assertion_never_finishes_a_task_with_a_target() {
    let project = Project::new(10);
    git(&project.repo(), &["checkout", "-q", "main"]);
    project.commit_broken_add();
    let crash = json!({ "exit": 1 });
    let (code, events, stderr) = project.fix_add(json!([crash]), &["--max-iterations", "1"]);
    never_accepted(code, &events, &stderr);

    let project = Project::new(10);
    git(&project.repo(), &["checkout", "-q", "main"]);
    project.commit_broken_add();
    let rewrite = json!({ "write": { "test/math.test.js": TEST_ADD.replace("3);", "-1);") } });
    let (code, events, stderr) = project.fix_add(json!([rewrite]), &["--max-iterations", "2"]);
    never_accepted(code, &events, &stderr);
}

/// The agent changes the code and the failing target's expectation together: that is a
/// behaviour change for a person to confirm, not another round for the agent and not a
/// violation. The branch stays at that iteration; `itergate accept` confirms it.
#[test]
fn a_behaviour_change_of_the_target_stops_the_loop_for_a_person_to_confirm() {
    let project = Project::new(10);
    git(&project.repo(), &["checkout", "-q", "main"]);
    project.commit_broken_add();
    let change = json!({ "write": {
        "lib/math.js": "export function add(a, b) {\n  // the difference, on purpose\n  return a - b;\n}\n",
        "test/math.test.js": TEST_ADD.replace("3);", "-1);"),
    } });
    let (code, events, stderr) = project.fix_add(json!([change]), &[]);
    assert_eq!(code, 20, "{stderr}\n{events:?}");
    assert_eq!(project.runs(), 1, "no second round: {events:?}");
    let stopped = of(&events, "stopped");
    let summary = stopped[0]["summary"].as_str().unwrap_or_default();
    assert!(
        summary.contains("a person confirms the behaviour change: test"),
        "{summary}"
    );
    assert!(!summary.contains("VOID"), "{summary}");
    let head = Command::new("git")
        .args(["log", "-1", "--format=%s"])
        .current_dir(project.repo())
        .output()
        .unwrap();
    assert!(
        !String::from_utf8_lossy(&head.stdout).contains("add: a regression"),
        "the branch stays at the iteration to confirm"
    );
}

/// The failing test was committed on the branch before the loop: deleting it is never
/// accepted, on the next iteration either.
#[test]
fn a_target_deleted_on_the_branch_is_never_accepted() {
    let project = Project::new(10);
    project.commit_broken_add();
    let delete = json!({ "delete": ["test/math.test.js"] });
    let docs = json!({ "write": { "NOTES.md": "done\n" } });
    let (code, events, stderr) = project.fix_add(json!([delete, docs]), &["--max-iterations", "2"]);
    never_accepted(code, &events, &stderr);
    assert!(stderr.contains("did not run") || format!("{events:?}").contains("stopped"));
}

#[test]
fn the_honest_fix_of_the_target_is_accepted_and_ends_the_task() {
    let project = Project::new(10);
    git(&project.repo(), &["checkout", "-q", "main"]);
    project.commit_broken_add();
    let fix = json!({ "write": { "lib/math.js": MATH } });
    let (code, events, stderr) = project.fix_add(json!([fix]), &[]);
    assert_eq!(code, 0, "{stderr}\n{events:?}");
    // A new loop on the same branch starts a new task from where this one ended.
    let (_, _, stderr) = project.fix_add(
        json!([{ "write": { "NOTES.md": "x\n" } }]),
        &["--max-iterations", "1"],
    );
    assert!(!stderr.contains("continuing the task"), "{stderr}");
}

#[test]
fn a_check_that_cannot_run_stops_the_loop_before_an_agent_is_paid_for() {
    let project = Project::with_config(10, "", "");
    let p = project.repo();
    let config = std::fs::read_to_string(p.join(".itergate.yml")).unwrap();
    let broken = config.replace(
        "checks:\n",
        "checks:\n  lint:\n    run: no-such-linter-anywhere --json\n",
    );
    assert_ne!(broken, config);
    git(&p, &["checkout", "-q", "main"]);
    write(&p, ".itergate.yml", &broken);
    git(&p, &["commit", "-q", "-am", "a lint check"]);
    let (code, _, stderr) = project.fix_add(json!([{ "write": { "x.txt": "x" } }]), &[]);
    assert_eq!(code, 3, "{stderr}");
    assert_message("loop_check_cannot_run_stderr", &project, &stderr);
    assert_eq!(project.runs(), 0, "no agent ran");
}

#[test]
fn max_iterations_only_tightens_the_bases_limit() {
    let project = Project::new(10);
    git(&project.repo(), &["checkout", "-q", "main"]);
    project.commit_broken_add();
    let readme = json!({ "write": { "README.md": "x\n" } });
    let (code, events, stderr) = project.fix_add(json!([readme]), &["--max-iterations", "1"]);
    assert_eq!(code, 20, "{stderr}");
    assert_eq!(project.runs(), 1, "{events:?}");
    let project = Project::new(2);
    git(&project.repo(), &["checkout", "-q", "main"]);
    project.commit_broken_add();
    let (_, events, stderr) = project.fix_add(json!([readme]), &["--max-iterations", "5"]);
    assert_eq!(
        project.runs(),
        2,
        "the base's limit of 2 stands: {stderr}\n{events:?}"
    );
}

/// A check that leaves a file in the work tree (a coverage data file): the next
/// iteration's commit holds what the agent changed, never what the checks left.
#[test]
fn what_the_checks_leave_in_the_work_tree_is_not_the_agents_iteration() {
    let project = Project::new(10);
    let p = project.repo();
    let config = std::fs::read_to_string(p.join(".itergate.yml")).unwrap();
    let with_leftover = config.replace(
        "checks:\n",
        "checks:\n  data:\n    run: date +%N > check-output.dat\n",
    );
    assert_ne!(with_leftover, config);
    git(&p, &["checkout", "-q", "main"]);
    write(&p, ".itergate.yml", &with_leftover);
    git(&p, &["commit", "-q", "-am", "a check that leaves a file"]);
    git(&p, &["checkout", "-q", "agent"]);
    git(&p, &["rebase", "-q", "main"]);
    let (code, events, stderr) = project.run(json!([wrong(), right()]), &["--skip-context"]);
    assert_eq!(code, 0, "{stderr}\n{events:?}");
    let files = project.log(&["log", "--name-only", "--format=", "main..HEAD"]);
    assert!(!files.contains("check-output.dat"), "{files}");
    assert!(files.contains("lib/multiply.js"), "{files}");
}

/// `--dry-run`: the plan and the checks on the start; no agent runs, nothing is committed,
/// and the start is not recorded (the real loop later records its own).
#[test]
fn a_dry_run_prints_the_plan_and_runs_no_agent() {
    let project = Project::new(10);
    project.commit_broken_add();
    let before = project.log(&["rev-parse", "HEAD"]);
    let scripted = project
        .command(json!([{ "write": { "x.txt": "x" } }]), &["--dry-run"])
        .output()
        .expect("itergate runs");
    assert!(
        scripted.status.success(),
        "{}",
        String::from_utf8_lossy(&scripted.stderr)
    );
    assert_eq!(project.runs(), 0, "no agent ran");
    assert_eq!(
        project.log(&["rev-parse", "HEAD"]),
        before,
        "nothing committed"
    );
    let out = Command::new(BIN)
        .args([
            "loop",
            "--agent",
            "claude",
            "--task",
            "Make the math tests pass.",
            "--dry-run",
        ])
        .current_dir(project.repo())
        .env("NO_COLOR", "1")
        .output()
        .expect("itergate runs");
    let plan = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_message("loop_dry_run_plan", &project, &plan);
    let tightened = Command::new(BIN)
        .args([
            "loop",
            "--agent",
            "claude",
            "--task",
            "x",
            "--dry-run",
            "--max-iterations",
            "4",
        ])
        .current_dir(project.repo())
        .output()
        .expect("itergate runs");
    let tightened = String::from_utf8_lossy(&tightened.stdout);
    let limit = tightened.lines().find(|l| l.contains("at most"));
    insta::assert_snapshot!(limit.unwrap_or(&tightened), @"Budgets: at most 4 iterations; 30m00s a run; the loop's wall clock: no limit; tokens: no limit; spend: no limit");
}

/// A loop that escalated waits for a person; a different task is not mixed into one in
/// progress unless `--new-task` says so.
#[test]
fn an_escalated_task_waits_for_a_person_and_another_task_needs_new_task() {
    let project = Project::new(10);
    git(&project.repo(), &["checkout", "-q", "main"]);
    project.commit_broken_add();
    // An agent that changes nothing of use: the loop escalates on its own rules.
    let readme = json!({ "write": { "README.md": "x\n" } });
    let (code, events, stderr) = project.fix_add(json!([readme]), &[]);
    assert_eq!(code, 20, "{stderr}\n{events:?}");
    let runs = project.runs();
    let (code, _, stderr) = project.fix_add(json!([readme]), &[]);
    assert_eq!(code, 2, "{stderr}");
    assert_message("loop_escalated_waits_stderr", &project, &stderr);
    assert_eq!(project.runs(), runs, "no agent ran");

    let other = Command::new(BIN)
        .args([
            "loop",
            "--agent",
            "true",
            "--task",
            "Something else entirely.",
        ])
        .current_dir(project.repo())
        .output()
        .expect("itergate runs");
    let said = String::from_utf8_lossy(&other.stderr);
    assert_eq!(other.status.code(), Some(2), "{said}");
    assert_message("loop_another_task_stderr", &project, &said);

    // No iteration was worth keeping (the target failed in each): the branch is back at
    // the start, where there is nothing to accept.
    let accept = itergate(&project.repo(), &["accept"], &[]);
    let said = String::from_utf8_lossy(&accept.stderr);
    assert_eq!(accept.status.code(), Some(2), "{said}");
    assert!(said.contains("there is no iteration to accept"), "{said}");

    // A person changes the approach: the loop goes on, and its first prompt says how.
    let adjust = itergate(&project.repo(), &["adjust", "fix add in lib/math.js"], &[]);
    let said = String::from_utf8_lossy(&adjust.stderr);
    assert!(adjust.status.success(), "{said}");
    assert!(said.contains("at the task's start"), "{said}");
    let fix = json!({ "write": { "lib/math.js": MATH } });
    let (code, _, stderr) = project.fix_add(json!([fix]), &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_message("loop_adjusted_continues_stderr", &project, &stderr);
    let prompt = project.prompt(project.runs());
    assert!(
        prompt.contains("What a person said since (the words are theirs):\n- ")
            && prompt.contains(" (local): fix add in lib/math.js"),
        "{prompt}"
    );
}

#[test]
fn the_loop_judges_by_the_bases_rules_whatever_its_agent_writes_and_run_agrees_on_the_numbers() {
    let project = Project::new(5);
    // The agent's first try also empties the configuration: no checks, nothing to fail.
    let mut first = wrong();
    first["write"][".itergate.yml"] = json!("checks: {}\n");
    let (code, events, stderr) = project.run(json!([first, right()]), &[]);
    assert_eq!(code, 0, "{stderr}\n{events:?}");
    let decisions: Vec<(&Value, &str)> = of(&events, "judged")
        .iter()
        .map(|j| (&j["iteration"], j["recommendation"].as_str().unwrap()))
        .collect();
    assert_eq!(
        decisions,
        [(&json!(1), "iterate"), (&json!(2), "accept")],
        "the base's tests check judged the first try: {stderr}"
    );
    assert!(
        project
            .log(&["show", "agent~1:.itergate.yml"])
            .contains("checks: {}"),
        "the agent's configuration was committed with its work"
    );
    // `status` and `run` count the branch the way the loop did.
    let status = itergate(&project.repo(), &["status", "--format", "json"], &[]);
    let status: Value = serde_json::from_slice(&status.stdout).expect("json");
    assert_eq!(status["iterationDecision"]["budget"]["currentIteration"], 2);
    assert_eq!(status["task"]["rulesLocked"], true);
    let run = itergate(&project.repo(), &["run", "--format", "json"], &[]);
    let run: Value = serde_json::from_slice(&run.stdout).expect("json");
    assert_eq!(run["iterationDecision"]["budget"]["currentIteration"], 2);
    assert_eq!(
        run["iterationDecision"]["assessment"]["recommendation"],
        "accept"
    );
}

/// One failing test, three attempts that each change the failure, then the fix: the seed's
/// three revisions, not a stall after the first.
#[test]
fn one_failing_test_gets_three_revisions_while_each_changes_something() {
    let project = Project::new(10);
    let attempt = |body: &str| {
        json!({ "write": { "lib/multiply.js": format!("export function multiply(a, b) {{\n  return {body};\n}}\n"),
                           "test/multiply.test.js": TEST_MULTIPLY } })
    };
    let plan = json!([
        attempt("a + b"),
        attempt("a - b"),
        attempt("a * b + 1"),
        right()
    ]);
    let (code, events, stderr) = project.run(plan, &[]);
    let decisions: Vec<&str> = of(&events, "judged")
        .iter()
        .map(|j| j["recommendation"].as_str().unwrap())
        .collect();
    assert_eq!(
        decisions,
        ["iterate", "iterate", "iterate", "accept"],
        "{stderr}\n{:#?}",
        of(&events, "stopped")
    );
    assert_eq!(code, 0, "{stderr}");
}

/// An agent that crashes twice without changing anything: the crash is shown, and the
/// stall rule counts it (the loop calls a person, it does not go on paying).
#[test]
fn a_crashing_agent_is_shown_and_counted_by_the_stall_rule() {
    let project = Project::new(10);
    let crash = json!({ "exit": 2, "print": "Error: the model is overloaded" });
    let (code, events, stderr) = project.run(json!([wrong(), crash]), &[]);
    assert_eq!(code, 20, "{stderr}\n{events:?}");
    let stopped = &of(&events, "stopped")[0];
    assert_eq!(stopped["outcome"], "escalated", "{stopped}");
    assert!(
        project.runs() <= 3,
        "stopped soon after the crashes: {} runs",
        project.runs()
    );
    assert!(
        stderr.contains("exited 2") || format!("{events:?}").contains("exited 2"),
        "the crash is shown: {stderr}\n{events:?}"
    );
    // A person gives it more iterations: the loop goes on from the stall, as the refusal
    // says it can.
    let runs = project.runs();
    let refused = project.run(json!([right()]), &["--skip-context"]);
    assert_ne!(refused.0, 0, "{}", refused.2);
    assert!(refused.2.contains("`itergate budget <n>`"), "{}", refused.2);
    let budget = itergate(&project.repo(), &["budget", "5"], &[]);
    assert!(
        budget.status.success(),
        "{}",
        String::from_utf8_lossy(&budget.stderr)
    );
    let (code, events, stderr) = project.run(json!([right()]), &["--skip-context"]);
    assert_eq!(code, 0, "{stderr}\n{events:#?}");
    assert_eq!(project.runs(), runs + 1);
}

/// An agent that streams its usage (the `codex` preset's `exec --json` lines, the `claude`
/// preset's `stream-json`) is stopped mid-run when what it reports reaches the token budget,
/// not when it finishes; the stop names the budget and the overshoot.
#[test]
fn a_streaming_agent_is_stopped_mid_run_at_the_token_budget() {
    let codex = json!({ "type": "turn.completed",
        "usage": { "input_tokens": 1500, "cached_input_tokens": 0, "output_tokens": 300 } });
    let claude = json!({ "type": "assistant", "message": { "id": "msg_1", "role": "assistant",
        "content": [{ "type": "text", "text": "working" }],
        "usage": { "input_tokens": 1500, "output_tokens": 300 } } });
    let mut exits = Vec::new();
    for (preset, line) in [("codex", codex), ("claude", claude)] {
        let project = Project::with_stopping(10, "  budget_limits: { total_tokens: 1000 }\n");
        let path = project.as_preset(preset);
        // It reports 1800 tokens, then would work on for a minute.
        let mut spender = wrong();
        spender["print"] = json!(line.to_string());
        spender["sleep"] = json!(60);
        let started = std::time::Instant::now();
        let output = project
            .command_with(preset, json!([spender]), &["--skip-context"])
            .env("PATH", path)
            .output()
            .unwrap();
        let took = started.elapsed();
        let events: Vec<Value> = String::from_utf8_lossy(&output.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            took < std::time::Duration::from_secs(30),
            "{preset}: stopped mid-run, not after its minute: {took:?}\n{stderr}"
        );
        let finished = of(&events, "agent_finished");
        exits.push(format!(
            "{preset}: {}",
            finished[0]["exit"].as_str().unwrap()
        ));
        let stopped = &of(&events, "stopped")[0];
        assert_eq!(
            stopped["outcome"], "budget_exhausted",
            "{preset}: {stopped:#}\n{stderr}"
        );
        assert_ne!(output.status.code(), Some(0));
    }
    insta::assert_snapshot!(exits.join("\n"), @"
        codex: stopped: it reported 1800 tokens, and 1000 were left of budget_limits.total_tokens (over by 800)
        claude: stopped: it reported 1800 tokens, and 1000 were left of budget_limits.total_tokens (over by 800)
        ");
}

/// `--attempts 3`: three agents from the same commit, each in its own worktree; the best
/// measured one is the iteration, the others are kept as refs, and all of them count.
#[test]
fn best_of_three_attempts_keeps_the_best_measured_one() {
    let project = Project::new(10);
    let good = json!({ "write": { "lib/multiply.js": MULTIPLY_RIGHT,
                                  "test/multiply.test.js": TEST_MULTIPLY } });
    let (code, events, stderr) = project.run(
        json!([wrong(), good, wrong()]),
        &["--attempts", "3", "--jobs", "1", "--skip-context"],
    );
    assert_eq!(code, 0, "{stderr}\n{events:#?}");
    assert_eq!(project.runs(), 3, "three agents ran");
    let attempts = &of(&events, "attempts")[0];
    assert_eq!(attempts["winner"], 2, "{attempts:#}");
    assert_eq!(attempts["attempts"].as_array().unwrap().len(), 3);
    insta::assert_snapshot!(attempts["why"].as_str().unwrap(), @"the highest quality (0.94)");
    let judged = of(&events, "judged");
    assert_eq!(judged.len(), 1, "one iteration: {judged:#?}");
    assert_eq!(judged[0]["recommendation"], "accept");
    // The branch holds the winner's work, as one iteration; the others are refs.
    assert_eq!(
        std::fs::read_to_string(project.repo().join("lib/multiply.js")).unwrap(),
        MULTIPLY_RIGHT
    );
    assert_eq!(
        project.log(&["rev-list", "--count", "main..agent"]).trim(),
        "1"
    );
    let refs = project.log(&[
        "for-each-ref",
        "--format=%(refname)",
        "refs/itergate/loop/attempts/",
    ]);
    assert_eq!(refs.lines().count(), 3, "{refs}");
    assert_eq!(
        project.log(&["worktree", "list"]).lines().count(),
        1,
        "worktrees removed"
    );
}

/// An agent that hangs in round 0 (asked what it needs) is stopped at the loop's wall
/// clock there too, and the loop ends on that budget without running it again.
#[test]
fn the_loops_wall_clock_bounds_round_0_too() {
    let project = Project::with_stopping(10, "  budget_limits: { wall_clock_minutes: 1 }\n");
    let started = std::time::Instant::now();
    // Round 0 edits, then hangs: the loop's clock stops it.
    let mut hangs = wrong();
    hangs["sleep"] = json!(600);
    let (code, events, stderr) = project.run(json!([hangs]), &[]);
    let took = started.elapsed();
    assert!(took.as_secs() < 100, "{took:?}\n{stderr}\n{events:#?}");
    assert_eq!(code, 20, "{stderr}\n{events:#?}");
    assert_eq!(project.runs(), 1, "no agent ran after the clock ran out");
    let stopped = &of(&events, "stopped")[0];
    assert_ne!(stopped["outcome"], "accepted", "{stopped:#}");
    // What it left is committed and judged, its trailer naming the loop's clock.
    assert_eq!(of(&events, "judged").len(), 1, "{events:#?}");
    let status = git_out(
        &project.repo(),
        &["status", "--porcelain", "--untracked-files=no"],
    );
    assert!(status.is_empty(), "nothing left uncommitted: {status}");
    let judged = of(&events, "judged");
    let commit = judged[0]["commit"].as_str().unwrap();
    let message = project.log(&["log", "-1", "--format=%B", commit]);
    assert!(message.contains("wall clock"), "{message}");
}

/// An agent that stops changing anything: the stall rule ends the loop at once.
#[test]
fn a_stalling_agent_is_stopped_by_the_stall_rule() {
    let project = Project::new(10);
    let (code, events, stderr) = project.run(json!([wrong(), {}]), &["--skip-context"]);
    assert_eq!(code, 20, "{stderr}\n{events:#?}");
    assert!(project.runs() <= 3, "{} runs", project.runs());
    let stopped = &of(&events, "stopped")[0];
    assert_eq!(stopped["outcome"], "escalated", "{stopped:#}");
}

/// A loop stopped by its iteration limit waits for a person; after `itergate budget`, the
/// same task continues where it was: its numbers go on, its prompt still leads with it.
#[test]
fn a_task_resumes_after_a_person_raises_its_budget() {
    let project = Project::new(10);
    let (code, events, stderr) = project.run(
        json!([wrong(), right()]),
        &["--skip-context", "--max-iterations", "1"],
    );
    assert_eq!(code, 20, "{stderr}\n{events:#?}");
    assert_eq!(project.runs(), 1);
    let refused = project.run(json!([right()]), &["--skip-context"]);
    assert_ne!(refused.0, 0, "a person decides first: {}", refused.2);
    assert_message("loop_resume_refused_stderr", &project, &refused.2);
    let budget = itergate(&project.repo(), &["budget", "5"], &[]);
    assert!(
        budget.status.success(),
        "{}",
        String::from_utf8_lossy(&budget.stderr)
    );
    let (code, events, stderr) = project.run(json!([right()]), &["--skip-context"]);
    assert_eq!(code, 0, "{stderr}\n{events:#?}");
    assert_message("loop_resume_stderr", &project, &stderr);
    let judged = of(&events, "judged");
    assert_eq!(judged[0]["iteration"], 2, "{judged:#?}");
    assert_message("loop_resume_prompt", &project, &project.prompt(2));
}

/// A loop started on a branch that already has a commit above main: the agent's first
/// commit is iteration 1 everywhere (started, judged, trailers); when every iteration is
/// VOID (the failing test deleted), the branch goes back to where the task started.
#[test]
fn a_loop_started_above_main_counts_from_its_start_and_never_stays_on_a_tampered_commit() {
    let project = Project::new(10);
    project.commit_broken_add();
    let start = project.log(&["rev-parse", "HEAD"]).trim().to_string();
    let delete = json!({ "delete": ["test/math.test.js"] });
    let (code, events, stderr) = project.fix_add(json!([delete]), &["--max-iterations", "2"]);
    never_accepted(code, &events, &stderr);
    let started: Vec<&Value> = of(&events, "iteration_started")
        .iter()
        .map(|e| &e["iteration"])
        .collect();
    let judged: Vec<&Value> = of(&events, "judged")
        .iter()
        .map(|e| &e["iteration"])
        .collect();
    assert_eq!(started, judged, "{events:#?}");
    assert_eq!(judged.first(), Some(&&json!(1)), "{events:#?}");
    assert_eq!(
        project.log(&["rev-parse", "HEAD"]).trim(),
        start,
        "back at the start: {stderr}"
    );
    assert!(project.repo().join("test/math.test.js").exists());
    let stopped = &of(&events, "stopped")[0];
    assert_message(
        "loop_back_at_the_start_summary",
        &project,
        stopped["summary"].as_str().unwrap(),
    );
    // Back at the start, the task still waits for a person: a new loop is refused...
    let runs = project.runs();
    let delete = json!({ "delete": ["test/math.test.js"] });
    let (code, _, stderr) = project.fix_add(json!([delete]), &["--max-iterations", "2"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("its branch is back where it started") && stderr.contains("--new-task"),
        "{stderr}"
    );
    assert_eq!(project.runs(), runs, "no agent ran");
    // ...until a person starts it again.
    let fix = json!({ "write": { "lib/math.js": MATH } });
    let (code, _, stderr) = project.fix_add(json!([fix]), &["--new-task"]);
    assert_eq!(code, 0, "{stderr}");
}

/// After an iteration, an agent that answers with a context report instead of work is
/// given what it asked for (by `itergate context`'s rules) and runs again: no empty
/// iteration, no escalation.
#[test]
fn a_context_report_after_an_iteration_is_answered_and_the_agent_runs_again() {
    let project = Project::new(10);
    let gap = "CONTEXT_GAP_REPORT\n------------------\nNEEDS: lib/math.js | REASON: how the other functions are written | ALTERNATIVE: none — required\nREADY_TO_EXECUTE: false";
    let ask = json!({ "print": gap });
    let (code, events, stderr) = project.run(json!([wrong(), ask, right()]), &["--skip-context"]);
    assert_eq!(code, 0, "{stderr}\n{events:#?}");
    assert_eq!(project.runs(), 3);
    let rounds = of(&events, "context_round");
    assert_eq!(rounds.len(), 1, "{events:#?}");
    assert_eq!(rounds[0]["outcome"], "delivered");
    let judged: Vec<&Value> = of(&events, "judged")
        .iter()
        .map(|j| &j["iteration"])
        .collect();
    assert_eq!(
        judged,
        [&json!(1), &json!(2)],
        "no empty iteration: {events:#?}"
    );
    // The task first, then the delivery.
    assert_message(
        "loop_delivery_after_an_iteration",
        &project,
        &project.prompt(3),
    );
}

/// `--iteration-timeout` only shortens the base's `loop.iteration_minutes`: a longer one is
/// the base's (the dry run's plan says what holds).
#[test]
fn iteration_timeout_only_tightens_the_bases_per_run_limit() {
    let project = Project::with_config(10, "", "loop:\n  iteration_minutes: 2\n");
    let plan = |flag: &str| {
        let out = project
            .command(json!([{}]), &["--dry-run", "--iteration-timeout", flag])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let limit = |flag: &str| {
        let plan = plan(flag);
        let line = plan.lines().find(|l| l.contains("a run"));
        line.unwrap_or(&plan).to_string()
    };
    insta::assert_snapshot!(limit("1h"), @"Budgets: at most 10 iterations; 2m00s a run; the loop's wall clock: no limit; tokens: no limit; spend: no limit");
    insta::assert_snapshot!(limit("30s"), @"Budgets: at most 10 iterations; 30s a run; the loop's wall clock: no limit; tokens: no limit; spend: no limit");
}

/// The five gaming moves, with the failing test committed on the branch before the loop
/// and with it on the base branch (the task is "Make the math tests pass"): none is
/// accepted, and the branch is never left on the move.
#[test]
fn the_five_gaming_moves_are_never_accepted_from_the_branch_or_the_base() {
    let moves = [
        ("delete", json!({ "delete": ["test/math.test.js"] })),
        (
            "skip",
            json!({ "write": { "test/math.test.js": TEST_ADD.replace("it('adds'", "it.skip('adds'") } }),
        ),
        (
            "rewrite",
            json!({ "write": { "test/math.test.js": TEST_ADD.replace("3);", "-1);") } }),
        ),
        (
            "narrow",
            json!({ "write": { ".itergate.yml": "checks: {}\n" } }),
        ),
        ("notes", json!({ "run": [format!("{BIN} accept done")] })),
    ];
    for on_base in [false, true] {
        for (name, step) in &moves {
            let project = Project::new(10);
            if on_base {
                git(&project.repo(), &["checkout", "-q", "main"]);
            }
            project.commit_broken_add();
            let (code, events, stderr) = project.fix_add(json!([step]), &["--max-iterations", "2"]);
            let context = format!("{name} (on the base: {on_base})");
            assert_ne!(code, 0, "{context}: {stderr}\n{events:#?}");
            assert!(
                of(&events, "judged")
                    .iter()
                    .all(|j| j["recommendation"] != "accept"),
                "{context}: {events:#?}"
            );
            let math = std::fs::read_to_string(project.repo().join("lib/math.js")).unwrap();
            assert_eq!(math, ADD_BROKEN, "{context}: the code was never fixed");
        }
    }
}

/// The loop's wall clock running out mid-run: the agent's process group is stopped, what it
/// left is judged, the stop names the wall clock, and no agent starts again.
#[test]
fn the_loops_wall_clock_running_out_mid_run_stops_the_agent_and_the_loop() {
    let project = Project::with_stopping(10, "  budget_limits: { wall_clock_minutes: 1 }\n");
    let hang = json!({ "write": { "lib/multiply.js": MULTIPLY_WRONG, "test/multiply.test.js": TEST_MULTIPLY }, "sleep": 600 });
    let started = std::time::Instant::now();
    let (code, events, stderr) = project.run(json!([hang]), &["--skip-context"]);
    assert!(started.elapsed().as_secs() < 110, "{stderr}");
    assert_eq!(code, 20, "{stderr}\n{events:#?}");
    assert_eq!(project.runs(), 1, "no agent after the clock ran out");
    let exit = of(&events, "agent_finished")[0]["exit"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        exit.starts_with("stopped at the loop's wall clock"),
        "{exit}"
    );
    let stopped = &of(&events, "stopped")[0];
    assert_eq!(stopped["outcome"], "budget_exhausted", "{stopped:#}");
    assert_message(
        "loop_wall_clock_summary",
        &project,
        stopped["summary"].as_str().unwrap(),
    );
}

/// Round 0 can deliver a failing test and a check's output: the start was checked before
/// any agent ran.
#[test]
fn round_0_delivers_the_starts_failing_test_and_a_checks_output() {
    let project = Project::new(10);
    project.commit_broken_add();
    let gap = "CONTEXT_GAP_REPORT\n------------------\nNEEDS: test adds | REASON: what fails | ALTERNATIVE: none — required\nNEEDS: check tests | REASON: how it fails | ALTERNATIVE: none — required\nREADY_TO_EXECUTE: false";
    let ask = json!({ "print": gap });
    let fix = json!({ "write": { "lib/math.js": MATH } });
    let output = {
        let plan_file = project.dir.path().join("plan.json");
        std::fs::write(&plan_file, json!([ask, fix]).to_string()).unwrap();
        let agent = format!(
            "python3 {} {{prompt_file}}",
            project.dir.path().join("agent.py").display()
        );
        Command::new(BIN)
            .args([
                "loop",
                "--agent",
                &agent,
                "--task",
                "Make the math tests pass.",
            ])
            .args(["--format", "json"])
            .current_dir(project.repo())
            .env("NO_COLOR", "1")
            .env("AGENT_PLAN", &plan_file)
            .env("AGENT_STATE", project.state())
            .output()
            .unwrap()
    };
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    // Round 0 names the targets, as every prompt does.
    let round_0 = project.prompt(1);
    assert!(
        round_0.contains("The task is done when these tests, failing now, pass")
            && round_0.contains("`adds`"),
        "{round_0}"
    );
    // Every iteration's prompt file is one that exists.
    let (_, events, _) = super::agent_loop::outcome(&output);
    for started in of(&events, "iteration_started") {
        let file = started["prompt_file"].as_str().unwrap();
        assert!(Path::new(file).is_file(), "{file}");
    }
    let delivery = project.prompt(2);
    // Not a snapshot: the delivery holds node's timings and its stack traces (whose lines
    // are the installed node's).
    assert!(delivery.contains("CONTEXT_DELIVERY"), "{delivery}");
    assert!(
        delivery.contains("adds") && delivery.contains("-1"),
        "the start's failure is delivered: {delivery}"
    );
    assert!(
        !delivery.contains("NOT AVAILABLE") && !delivery.contains("not available"),
        "{delivery}"
    );
}

const DECIMALS_TODAY: &str = "import { it } from 'node:test';\nimport assert from 'node:assert/strict';\nimport { add } from '../lib/math.js';\n\nit('adds decimals', () => {\n  assert.strictEqual(add(0.1, 0.2), 0.30000000000000004);\n});\n";
const ADD_ROUNDED: &str =
    "export function add(a, b) {\n  return Math.round((a + b) * 1e10) / 1e10;\n}\n";

impl Project {
    /// `main` has a decimals test that pins today's float sum; the branch's first commit,
    /// made before the loop, is the spec: it edits that expectation to the rounded sum.
    fn commit_spec_on_the_branch(&self) {
        let p = self.repo();
        write(&p, "test/decimals.test.js", DECIMALS_TODAY);
        git(&p, &["add", "--all"]);
        git(&p, &["commit", "-q", "-m", "test: decimals"]);
        git(&p, &["branch", "-f", "main"]);
        write(
            &p,
            "test/decimals.test.js",
            &DECIMALS_TODAY.replace("0.30000000000000004", "0.3"),
        );
        git(
            &p,
            &["commit", "-q", "-am", "spec: add rounds to ten decimals"],
        );
    }
}

/// A spec committed on the branch before the loop (how users write one) is the start's:
/// its tests judge the code as tests on the base do. Rewriting it back, even followed by an
/// unrelated iteration, deleting or skipping it is never accepted; the honest fix of a spec
/// that edits an existing expectation is.
#[test]
fn a_spec_committed_on_the_branch_before_the_loop_is_the_starts() {
    let rewrite = json!({ "write": { "test/decimals.test.js": DECIMALS_TODAY } });
    let readme = json!({ "write": { "README.md": "# fx\n" } });
    let moves = [
        (
            "rewrite, then an unrelated iteration",
            json!([rewrite, readme]),
        ),
        (
            "delete",
            json!([{ "delete": ["test/decimals.test.js"] }, readme]),
        ),
        (
            "skip",
            json!([{ "write": { "test/decimals.test.js": DECIMALS_TODAY.replace("0.30000000000000004", "0.3").replace("it('adds", "it.skip('adds") } }]),
        ),
    ];
    for (name, plan) in moves {
        let project = Project::new(10);
        project.commit_spec_on_the_branch();
        let (code, events, stderr) = project.fix_add(plan, &["--max-iterations", "3"]);
        assert_ne!(code, 0, "{name}: {stderr}\n{events:#?}");
        assert!(
            of(&events, "judged")
                .iter()
                .all(|j| j["recommendation"] != "accept"),
            "{name}: {events:#?}"
        );
        let math = std::fs::read_to_string(project.repo().join("lib/math.js")).unwrap();
        assert_eq!(math, MATH, "{name}: the code was never changed");
    }
    let project = Project::new(10);
    project.commit_spec_on_the_branch();
    let fix = json!([{ "write": { "lib/math.js": ADD_ROUNDED } }]);
    let (code, events, stderr) = project.fix_add(fix, &["--max-iterations", "3"]);
    assert_eq!(code, 0, "the honest fix is accepted: {stderr}\n{events:#?}");
    let judged = of(&events, "judged");
    assert_eq!(judged.len(), 1, "{events:#?}");
    assert!(!stderr.contains("VOID"), "{stderr}");
}

/// An agent that accepts its own work and then arms a `reference-transaction` hook that
/// refuses every update of itergate's notes: the loop's undo and its own commits run no
/// hook, the acceptance is undone, and nothing is accepted.
#[test]
fn a_hook_armed_against_itergates_refs_does_not_keep_an_agents_acceptance() {
    let hook = "#!/bin/sh\nwhile read old new ref; do case \"$ref\" in refs/notes/*) exit 1;; esac; done\nexit 0\n";
    let arm = json!({
        "run": [
            format!("{BIN} accept done"),
            format!("mkdir -p .git/hooks && printf '%s' '{hook}' > .git/hooks/reference-transaction && chmod +x .git/hooks/reference-transaction"),
        ]
    });
    for sandbox in ["workspace-write", "off"] {
        let project = Project::new(10);
        project.commit_broken_add();
        let (code, events, stderr) = project.fix_add(
            json!([arm.clone()]),
            &["--max-iterations", "2", "--sandbox", sandbox],
        );
        never_accepted(code, &events, &stderr);
        assert_eq!(code, 20, "{sandbox}: {stderr}");
        assert!(
            !project
                .repo()
                .join(".git/hooks/reference-transaction")
                .exists(),
            "{sandbox}: the hook is not left armed"
        );
        if sandbox == "off" {
            let stopped = of(&events, "stopped");
            let summary = stopped[0]["summary"].as_str().unwrap_or_default();
            assert!(
                summary.contains(".git/hooks/reference-transaction (added; removed)"),
                "{summary}"
            );
        }
        let status = Command::new(BIN)
            .args(["status"])
            .current_dir(project.repo())
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&status.stderr);
        assert!(!text.contains("Accepted by"), "{sandbox}: {text}");
    }
}
