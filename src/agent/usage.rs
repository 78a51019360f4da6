//! What an agent says it used, read from its own output: tokens, tool calls, dollars, and
//! whether it says it failed. A figure the agent does not report stays unknown (seed 002's
//! "unobservable"), never zero. Each format follows the agent's documented output; a line
//! that is not the expected JSON is skipped, since agents print other text around it.

use serde::Serialize;
use serde_json::Value;

/// How an agent reports its usage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UsageFormat {
    /// Nothing is read.
    None,
    /// Claude Code's `--output-format json`: one `result` object.
    ClaudeJson,
    /// Claude Code's `--output-format stream-json --verbose`: JSON lines, `assistant`
    /// messages with the API's `usage` while it works, the `result` object last.
    ClaudeStreamJson,
    /// Codex's `exec --json`: JSON lines, `turn.completed` carrying `usage`.
    CodexJsonl,
    /// Gemini CLI's `--output-format json`: `{response, stats, error}`.
    GeminiJson,
    /// opencode's `run --format json`: JSON lines, `step_finish` carrying tokens and cost.
    OpencodeJsonl,
    /// aider's `--analytics-log`: JSON lines of `message_send` events, in the usage file.
    AiderAnalytics,
}

impl UsageFormat {
    /// Formats whose lines arrive while the agent works (its usage can be read mid-run).
    pub fn streams(self) -> bool {
        matches!(
            self,
            UsageFormat::CodexJsonl | UsageFormat::OpencodeJsonl | UsageFormat::ClaudeStreamJson
        )
    }

    /// The formats that read something.
    pub const READ: [UsageFormat; 6] = [
        UsageFormat::ClaudeJson,
        UsageFormat::ClaudeStreamJson,
        UsageFormat::CodexJsonl,
        UsageFormat::GeminiJson,
        UsageFormat::OpencodeJsonl,
        UsageFormat::AiderAnalytics,
    ];
}

/// Where a dollar figure came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CostSource {
    /// The agent printed it (often an estimate at list prices).
    Reported,
    /// Nobody said.
    None,
}

/// One run's usage, as far as the agent told.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Usage {
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    /// Input, output and cached tokens together.
    pub total_tokens: Option<u64>,
    pub tool_calls: Option<u64>,
    pub cost_usd: Option<f64>,
    pub cost_source: CostSource,
    /// The agent's own word that it failed (an error result, a failed turn).
    pub failure: Option<String>,
}

impl Usage {
    pub fn unknown() -> Usage {
        Usage {
            input_tokens: None,
            output_tokens: None,
            total_tokens: None,
            tool_calls: None,
            cost_usd: None,
            cost_source: CostSource::None,
            failure: None,
        }
    }
}

impl Usage {
    /// This and `other` together (a figure known in either is known).
    pub fn add(&mut self, other: &Usage) {
        add(&mut self.input_tokens, other.input_tokens);
        add(&mut self.output_tokens, other.output_tokens);
        add(&mut self.total_tokens, other.total_tokens);
        add(&mut self.tool_calls, other.tool_calls);
        if let Some(cost) = other.cost_usd {
            self.cost_usd = Some(self.cost_usd.unwrap_or(0.0) + cost);
            self.cost_source = CostSource::Reported;
        }
    }
}

/// What the agent said in words, from its stdout: the final message of a JSON format,
/// else the output itself (where a CONTEXT_GAP_REPORT is looked for).
pub fn read_text(format: UsageFormat, output: &str) -> String {
    let texts: Vec<String> = match format {
        UsageFormat::ClaudeJson => one_document(output)
            .and_then(|d| d.get("result").and_then(Value::as_str).map(str::to_string))
            .into_iter()
            .collect(),
        UsageFormat::ClaudeStreamJson => json_lines(output)
            .filter(|e| e.get("type").and_then(Value::as_str) == Some("result"))
            .filter_map(|e| e.get("result").and_then(Value::as_str).map(str::to_string))
            .collect(),
        UsageFormat::GeminiJson => one_document(output)
            .and_then(|d| {
                d.get("response")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
            .into_iter()
            .collect(),
        UsageFormat::CodexJsonl => json_lines(output)
            .filter(|e| e.pointer("/item/type").and_then(Value::as_str) == Some("agent_message"))
            .filter_map(|e| {
                e.pointer("/item/text")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
            .collect(),
        UsageFormat::OpencodeJsonl => json_lines(output)
            .filter(|e| e.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|e| {
                e.pointer("/part/text")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
            .collect(),
        UsageFormat::None | UsageFormat::AiderAnalytics => Vec::new(),
    };
    if texts.is_empty() {
        output.to_string()
    } else {
        texts.join("\n")
    }
}

/// Reads `output` (the agent's stdout, or for aider its usage file) as `format` says.
pub fn read_usage(format: UsageFormat, output: &str) -> Usage {
    match format {
        UsageFormat::None => Usage::unknown(),
        UsageFormat::ClaudeJson => claude(output),
        UsageFormat::ClaudeStreamJson => claude_stream(output),
        UsageFormat::CodexJsonl => codex(output),
        UsageFormat::GeminiJson => gemini(output),
        UsageFormat::OpencodeJsonl => opencode(output),
        UsageFormat::AiderAnalytics => aider(output),
    }
}

fn json_lines(output: &str) -> impl Iterator<Item = Value> + '_ {
    output
        .lines()
        .filter(|l| l.trim_start().starts_with('{'))
        .filter_map(|l| serde_json::from_str(l).ok())
}

/// The last JSON object in the output that starts at the beginning of a line (it may
/// span lines, and text such as a banner may come before it).
fn one_document(output: &str) -> Option<Value> {
    let mut found = None;
    let mut at = 0;
    while at < output.len() {
        let rest = &output[at..];
        let line_end = rest.find('\n').map_or(rest.len(), |i| i + 1);
        if rest.trim_start_matches([' ', '\t']).starts_with('{') {
            let mut values = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
            if let Some(Ok(value)) = values.next() {
                found = Some(value);
                at += values.byte_offset().max(1);
                continue;
            }
        }
        at += line_end;
    }
    found
}

fn n(value: &Value, pointer: &str) -> Option<u64> {
    value.pointer(pointer).and_then(Value::as_u64)
}

fn sum(parts: &[Option<u64>]) -> Option<u64> {
    parts.iter().any(Option::is_some).then(|| {
        parts
            .iter()
            .flatten()
            .fold(0u64, |a, b| a.saturating_add(*b))
    })
}

fn add(total: &mut Option<u64>, part: Option<u64>) {
    if let Some(part) = part {
        *total = Some(total.unwrap_or(0).saturating_add(part));
    }
}

fn claude(output: &str) -> Usage {
    let Some(result) = one_document(output) else {
        return Usage::unknown();
    };
    let input = n(&result, "/usage/input_tokens");
    let output_tokens = n(&result, "/usage/output_tokens");
    let cached = sum(&[
        n(&result, "/usage/cache_creation_input_tokens"),
        n(&result, "/usage/cache_read_input_tokens"),
    ]);
    let cost = result.get("total_cost_usd").and_then(Value::as_f64);
    let failure = (result.get("is_error").and_then(Value::as_bool) == Some(true)).then(|| {
        result
            .get("subtype")
            .and_then(Value::as_str)
            .unwrap_or("error")
            .to_string()
    });
    Usage {
        input_tokens: input,
        output_tokens,
        total_tokens: sum(&[input, output_tokens, cached]),
        // `num_turns` counts turns, not tool calls.
        tool_calls: None,
        cost_usd: cost,
        cost_source: if cost.is_some() {
            CostSource::Reported
        } else {
            CostSource::None
        },
        failure,
    }
}

/// The `result` line when the run finished; while it runs, the `assistant` messages' usage,
/// each API message counted once (its content blocks arrive as events sharing its id).
fn claude_stream(output: &str) -> Usage {
    let mut result = None;
    let mut messages: Vec<(String, Value)> = Vec::new();
    for event in json_lines(output) {
        match event.get("type").and_then(Value::as_str) {
            Some("result") => result = Some(event),
            Some("assistant") => {
                let id = event
                    .pointer("/message/id")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let Some(usage) = event.pointer("/message/usage").cloned() else {
                    continue;
                };
                match messages
                    .iter_mut()
                    .find(|(seen, _)| *seen == id && !id.is_empty())
                {
                    Some((_, last)) => *last = usage,
                    None => messages.push((id, usage)),
                }
            }
            _ => {}
        }
    }
    if let Some(result) = result {
        return claude(&result.to_string());
    }
    let mut usage = Usage::unknown();
    for (_, m) in &messages {
        let input = n(m, "/input_tokens");
        let out = n(m, "/output_tokens");
        add(&mut usage.input_tokens, input);
        add(&mut usage.output_tokens, out);
        add(
            &mut usage.total_tokens,
            sum(&[
                input,
                out,
                n(m, "/cache_creation_input_tokens"),
                n(m, "/cache_read_input_tokens"),
            ]),
        );
    }
    usage
}

fn codex(output: &str) -> Usage {
    let mut usage = Usage::unknown();
    let mut tools = None;
    for event in json_lines(output) {
        match event.get("type").and_then(Value::as_str) {
            Some("turn.completed") => {
                let input = n(&event, "/usage/input_tokens");
                let out = n(&event, "/usage/output_tokens");
                add(&mut usage.input_tokens, input);
                add(&mut usage.output_tokens, out);
                // Cached input tokens are a part of the input tokens.
                add(&mut usage.total_tokens, sum(&[input, out]));
            }
            Some("item.completed") => {
                let kind = event.pointer("/item/type").and_then(Value::as_str);
                if matches!(kind, Some("command_execution" | "mcp_tool_call")) {
                    add(&mut tools, Some(1));
                }
            }
            Some("turn.failed" | "error") => {
                let message = event
                    .pointer("/error/message")
                    .or_else(|| event.get("message"))
                    .and_then(Value::as_str)
                    .unwrap_or("a turn failed");
                usage.failure = Some(message.to_string());
            }
            _ => {}
        }
    }
    usage.tool_calls = tools.or(usage.total_tokens.map(|_| 0));
    usage
}

fn gemini(output: &str) -> Usage {
    let Some(doc) = one_document(output) else {
        return Usage::unknown();
    };
    let mut usage = Usage::unknown();
    if let Some(models) = doc.pointer("/stats/models").and_then(Value::as_object) {
        for model in models.values() {
            add(&mut usage.input_tokens, n(model, "/tokens/prompt"));
            add(&mut usage.output_tokens, n(model, "/tokens/candidates"));
            add(&mut usage.total_tokens, n(model, "/tokens/total"));
        }
    }
    usage.tool_calls = n(&doc, "/stats/tools/totalCalls");
    usage.failure = doc.get("error").filter(|e| !e.is_null()).map(|e| {
        e.get("message")
            .and_then(Value::as_str)
            .map_or_else(|| e.to_string(), str::to_string)
    });
    usage
}

fn opencode(output: &str) -> Usage {
    let mut usage = Usage::unknown();
    let mut cost: Option<f64> = None;
    let mut tools = None;
    for event in json_lines(output) {
        match event.get("type").and_then(Value::as_str) {
            Some("step_finish") => {
                let input = n(&event, "/part/tokens/input");
                let out = n(&event, "/part/tokens/output");
                add(&mut usage.input_tokens, input);
                add(&mut usage.output_tokens, out);
                add(
                    &mut usage.total_tokens,
                    sum(&[
                        input,
                        out,
                        n(&event, "/part/tokens/reasoning"),
                        n(&event, "/part/tokens/cache/read"),
                        n(&event, "/part/tokens/cache/write"),
                    ]),
                );
                if let Some(c) = event.pointer("/part/cost").and_then(Value::as_f64) {
                    cost = Some(cost.unwrap_or(0.0) + c);
                }
            }
            Some("tool_use") => add(&mut tools, Some(1)),
            Some("error") => {
                usage.failure = Some(
                    event
                        .pointer("/error/data/message")
                        .or_else(|| event.pointer("/error/message"))
                        .and_then(Value::as_str)
                        .unwrap_or("an error")
                        .to_string(),
                );
            }
            _ => {}
        }
    }
    usage.tool_calls = tools.or(usage.total_tokens.map(|_| 0));
    usage.cost_usd = cost;
    usage.cost_source = if cost.is_some() {
        CostSource::Reported
    } else {
        CostSource::None
    };
    usage
}

fn aider(log: &str) -> Usage {
    let mut usage = Usage::unknown();
    let mut session_cost: Option<f64> = None;
    for event in json_lines(log) {
        if event.get("event").and_then(Value::as_str) != Some("message_send") {
            continue;
        }
        let input = n(&event, "/properties/prompt_tokens");
        let out = n(&event, "/properties/completion_tokens");
        add(&mut usage.input_tokens, input);
        add(&mut usage.output_tokens, out);
        add(
            &mut usage.total_tokens,
            n(&event, "/properties/total_tokens").or(sum(&[input, out])),
        );
        if let Some(c) = event.pointer("/properties/cost").and_then(Value::as_f64) {
            session_cost = Some(session_cost.unwrap_or(0.0) + c);
        }
    }
    usage.cost_usd = session_cost;
    usage.cost_source = if session_cost.is_some() {
        CostSource::Reported
    } else {
        CostSource::None
    };
    usage
}
