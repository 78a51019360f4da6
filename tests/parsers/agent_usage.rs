//! `itergate loop`'s presets read each agent's usage from its documented output shape
//! (tests/fixtures/agents/README.md): exact figures, unknown where the agent says nothing,
//! the agent's own failure named, and no panic on any input.

use std::path::Path;

use itergate::agent::usage::{read_usage, CostSource, UsageFormat};
use proptest::prelude::*;

fn fixture(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/agents")
            .join(name),
    )
    .unwrap()
}

#[test]
fn claude_codes_result_gives_tokens_with_the_cache_and_a_reported_cost() {
    let usage = read_usage(
        UsageFormat::ClaudeJson,
        &fixture("claude-code-2.1.result.json"),
    );
    assert_eq!(usage.input_tokens, Some(1840));
    assert_eq!(usage.output_tokens, Some(2210));
    assert_eq!(usage.total_tokens, Some(1840 + 2210 + 68453 + 21012));
    assert_eq!(usage.cost_usd, Some(0.1873));
    assert_eq!(usage.cost_source, CostSource::Reported);
    assert_eq!(
        usage.tool_calls, None,
        "num_turns is not a count of tool calls"
    );
    assert_eq!(usage.failure, None);
    let capped = read_usage(
        UsageFormat::ClaudeJson,
        &fixture("claude-code-2.1.max-turns.json"),
    );
    assert_eq!(capped.failure.as_deref(), Some("error_max_turns"));
}

/// The preset's `stream-json`: the result line when the run is over; mid-run (what
/// itergate reads to hold a run to its budget) the assistant messages so far, each API
/// message once though its content blocks arrive as separate events.
#[test]
fn claude_codes_stream_gives_the_result_at_the_end_and_the_messages_so_far_before() {
    let stream = fixture("claude-code-2.1.stream.jsonl");
    let done = read_usage(UsageFormat::ClaudeStreamJson, &stream);
    assert_eq!(done.total_tokens, Some(1840 + 2210 + 68453 + 21012));
    assert_eq!(done.cost_usd, Some(0.1873));
    let running: String = stream
        .lines()
        .filter(|l| !l.contains(r#""type":"result""#))
        .map(|l| format!("{l}\n"))
        .collect();
    let so_far = read_usage(UsageFormat::ClaudeStreamJson, &running);
    assert_eq!(so_far.input_tokens, Some(920 + 920));
    assert_eq!(so_far.output_tokens, Some(610 + 1600));
    assert_eq!(
        so_far.total_tokens,
        Some((920 + 610 + 34226) + (920 + 1600 + 34227 + 21012))
    );
    assert_eq!(so_far.cost_usd, None, "no dollar figure before the result");
    assert!(UsageFormat::ClaudeStreamJson.streams());
}

#[test]
fn codex_gives_tokens_and_tool_calls_but_no_dollars() {
    let usage = read_usage(UsageFormat::CodexJsonl, &fixture("codex-exec-json.jsonl"));
    assert_eq!(usage.input_tokens, Some(24763));
    assert_eq!(usage.output_tokens, Some(122));
    assert_eq!(usage.total_tokens, Some(24763 + 122));
    assert_eq!(usage.tool_calls, Some(2));
    assert_eq!(
        (usage.cost_usd, usage.cost_source),
        (None, CostSource::None)
    );
}

#[test]
fn gemini_sums_its_models_and_counts_tool_calls_past_a_banner() {
    let usage = read_usage(
        UsageFormat::GeminiJson,
        &fixture("gemini-cli-headless.json"),
    );
    assert_eq!(usage.input_tokens, Some(12044 + 901));
    assert_eq!(usage.total_tokens, Some(13302 + 921));
    assert_eq!(usage.tool_calls, Some(4));
    assert_eq!(usage.cost_usd, None);
}

#[test]
fn opencode_and_aider_sum_their_steps_and_costs() {
    let usage = read_usage(
        UsageFormat::OpencodeJsonl,
        &fixture("opencode-run-json.jsonl"),
    );
    assert_eq!(
        usage.total_tokens,
        Some(8012 + 311 + 4096 + 1200 + 40 + 8108)
    );
    assert_eq!(usage.tool_calls, Some(2));
    assert!((usage.cost_usd.unwrap() - 0.0155).abs() < 1e-9);
    let aider = read_usage(
        UsageFormat::AiderAnalytics,
        &fixture("aider-analytics.jsonl"),
    );
    assert_eq!(aider.total_tokens, Some(5334 + 5690));
    assert_eq!(aider.output_tokens, Some(304));
    assert!((aider.cost_usd.unwrap() - 0.0238).abs() < 1e-9);
}

#[test]
fn an_agent_that_printed_no_usage_is_unknown_not_zero() {
    for format in UsageFormat::READ {
        let usage = read_usage(format, "Error: not logged in\n");
        assert_eq!(usage.total_tokens, None, "{format:?}");
        assert_eq!(usage.cost_usd, None, "{format:?}");
    }
}

proptest! {
    #[test]
    fn no_output_makes_a_reader_panic(text in ".{0,400}", big in any::<u64>()) {
        let lines = format!("{text}\n{{\"type\":\"turn.completed\",\"usage\":{{\"input_tokens\":{big},\"output_tokens\":{big}}}}}\n{{\"type\":\"turn.completed\",\"usage\":{{\"input_tokens\":{big}}}}}");
        for format in UsageFormat::READ {
            let _ = read_usage(format, &text);
            let _ = read_usage(format, &lines);
        }
    }
}
