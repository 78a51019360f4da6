//! The prompts `itergate loop` starts an agent with: round 0's seed (task, entry point,
//! spec, and the request for a CONTEXT_GAP_REPORT before any work) and the task itself.

use itergate::render::Renderer;
use serde_json::json;

fn render(template: &str, view: serde_json::Value) -> String {
    Renderer::new(None, false)
        .expect("templates")
        .render(template, &view)
        .expect("renders")
}

#[test]
fn the_seed_asks_for_a_gap_report_before_any_work() {
    let text = render(
        "loop-seed.md.j2",
        json!({
            "task_name": "Add multiply(a, b)",
            "task": "Add multiply(a, b) in lib/multiply.js, with a test.",
            "entry": "lib/math.js",
            "spec": "docs/math.md",
            "branch": "agent",
            "checks": "tests, lint",
        }),
    );
    assert!(text.contains("Do not implement yet"), "{text}");
    insta::assert_snapshot!("loop_seed", text);
}

#[test]
fn the_task_prompt_says_how_the_work_is_judged() {
    let text = render(
        "loop-task.md.j2",
        json!({
            "task_name": "Add multiply(a, b)",
            "task": "Add multiply(a, b) in lib/multiply.js, with a test.",
            "branch": "agent",
            "checks": "tests",
        }),
    );
    assert!(text.contains("is detected and is not"), "{text}");
    insta::assert_snapshot!("loop_task", text);
}
