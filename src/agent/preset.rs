//! The agents itergate knows by name. Each is a small declarative entry: the command line,
//! how the prompt goes in, how usage and the agent's own failure are read, and whether it
//! commits by itself. None adds a flag that widens what the agent may do without asking:
//! each names the flag a user must opt into with `--agent-args`.

use std::path::Path;

use super::usage::UsageFormat;

/// How the prompt reaches the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptInput {
    /// On standard input.
    Stdin,
    /// As the value of the last argument.
    Argument,
    /// In a file, named where `{prompt_file}` stands in the arguments.
    File,
}

/// A known agent CLI.
#[derive(Debug, Clone, Copy)]
pub struct Preset {
    pub name: &'static str,
    pub program: &'static str,
    /// Placeholders: `{prompt_file}`, `{usage_file}` (a file the agent writes its usage to).
    pub args: &'static [&'static str],
    pub prompt: PromptInput,
    pub usage: UsageFormat,
    /// It commits its own edits (the loop folds them into one iteration either way).
    pub commits: bool,
    /// What the user must add (`--agent-args`) to let it edit files unattended.
    pub opt_in: &'static str,
    /// Where its command line and output shape are documented.
    pub documented: &'static str,
}

/// The presets, by name.
pub const PRESETS: &[Preset] = &[
    Preset {
        name: "claude",
        program: "claude",
        args: &["-p", "--output-format", "stream-json", "--verbose"],
        prompt: PromptInput::Stdin,
        usage: UsageFormat::ClaudeStreamJson,
        commits: false,
        opt_in:
            "--permission-mode acceptEdits (edits only) or --allowedTools \"Edit Bash(npm test:*)\"",
        documented: "docs.anthropic.com/en/docs/claude-code/cli-reference (2.1)",
    },
    Preset {
        name: "codex",
        program: "codex",
        args: &["exec", "--json", "-"],
        prompt: PromptInput::Stdin,
        usage: UsageFormat::CodexJsonl,
        commits: false,
        opt_in: "--sandbox workspace-write (or --full-auto)",
        documented: "github.com/openai/codex docs/exec.md (0.5x)",
    },
    Preset {
        name: "aider",
        program: "aider",
        args: &[
            "--message-file",
            "{prompt_file}",
            "--no-auto-commits",
            // aider would add its own files to .gitignore (committed into the iteration)
            // and may ask to send telemetry; its local analytics log is still written.
            "--no-gitignore",
            "--no-analytics",
            "--analytics-log",
            "{usage_file}",
        ],
        prompt: PromptInput::File,
        usage: UsageFormat::AiderAnalytics,
        commits: false,
        opt_in: "--yes-always (answers its confirmations; shell commands stay refused)",
        documented: "aider.chat/docs/scripting.html, aider/analytics.py (0.8x)",
    },
    Preset {
        name: "gemini",
        program: "gemini",
        args: &["--output-format", "json", "-p"],
        prompt: PromptInput::Argument,
        usage: UsageFormat::GeminiJson,
        commits: false,
        opt_in: "--approval-mode auto_edit (or --yolo)",
        documented: "github.com/google-gemini/gemini-cli docs/cli/headless.md (0.x)",
    },
    Preset {
        name: "opencode",
        program: "opencode",
        args: &["run", "--format", "json"],
        prompt: PromptInput::Argument,
        usage: UsageFormat::OpencodeJsonl,
        commits: false,
        opt_in: "a `permission` block in opencode.json allowing `edit`",
        documented: "opencode.ai/docs/cli (run --format json)",
    },
    Preset {
        name: "goose",
        program: "goose",
        args: &["run", "--no-session", "-i", "-"],
        prompt: PromptInput::Stdin,
        usage: UsageFormat::None,
        commits: false,
        opt_in: "GOOSE_MODE=auto in the environment",
        documented: "block.github.io/goose/docs/guides/goose-cli-commands (run)",
    },
];

/// The agent as the loop starts it: a preset, or a user's command.
#[derive(Debug, Clone)]
pub struct AgentCommand {
    /// The preset's name, or `custom`.
    pub name: String,
    pub program: String,
    pub args: Vec<String>,
    pub prompt: PromptInput,
    pub usage: UsageFormat,
}

impl AgentCommand {
    /// `--agent` and `--agent-args`: a preset's name, or a command line (run with `sh -c`)
    /// where `{prompt_file}` names the prompt's file; without it the prompt is on stdin.
    pub fn parse(agent: &str, extra: &[String]) -> Result<AgentCommand, String> {
        let agent = agent.trim();
        if agent.is_empty() {
            return Err(format!(
                "--agent is empty; name a preset ({}) or give a command",
                preset_names()
            ));
        }
        if let Some(preset) = PRESETS.iter().find(|p| p.name == agent) {
            let mut args: Vec<String> = Vec::new();
            // The user's flags go before a prompt given as the last argument.
            let (head, tail) = match preset.prompt {
                PromptInput::Argument => preset.args.split_at(
                    preset
                        .args
                        .len()
                        .saturating_sub(usize::from(preset.args.last() == Some(&"-p"))),
                ),
                _ => (preset.args, &[][..]),
            };
            args.extend(head.iter().map(|s| s.to_string()));
            args.extend(extra.iter().cloned());
            args.extend(tail.iter().map(|s| s.to_string()));
            return Ok(AgentCommand {
                name: preset.name.into(),
                program: preset.program.into(),
                args,
                prompt: preset.prompt,
                usage: preset.usage,
            });
        }
        let mut line = agent.to_string();
        for arg in extra {
            line.push(' ');
            line.push_str(&shell_quote(arg));
        }
        let prompt = if line.contains("{prompt_file}") {
            PromptInput::File
        } else {
            PromptInput::Stdin
        };
        Ok(AgentCommand {
            name: "custom".into(),
            program: "sh".into(),
            args: vec!["-c".into(), line],
            prompt,
            usage: UsageFormat::None,
        })
    }

    /// The program and its arguments for one run, placeholders filled in.
    pub fn argv(&self, prompt: &str, prompt_file: &Path, usage_file: &Path) -> Vec<String> {
        let custom = self.name == "custom";
        let fill = |arg: &str| {
            let (p, u) = (
                prompt_file.display().to_string(),
                usage_file.display().to_string(),
            );
            if custom {
                arg.replace("{prompt_file}", &shell_quote(&p))
                    .replace("{usage_file}", &shell_quote(&u))
            } else {
                arg.replace("{prompt_file}", &p).replace("{usage_file}", &u)
            }
        };
        let mut argv = vec![self.program.clone()];
        argv.extend(self.args.iter().map(|a| fill(a)));
        if self.prompt == PromptInput::Argument {
            argv.push(prompt.to_string());
        }
        argv
    }
}

/// The presets' names, for messages.
pub fn preset_names() -> String {
    PRESETS
        .iter()
        .map(|p| p.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// `value` quoted for `sh`.
fn shell_quote(value: &str) -> String {
    format!("'{}'", value.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_put_the_users_flags_before_an_argument_prompt_and_add_no_bypass() {
        let gemini =
            AgentCommand::parse("gemini", &["--approval-mode".into(), "auto_edit".into()]).unwrap();
        let argv = gemini.argv("fix it", Path::new("/p"), Path::new("/u"));
        assert_eq!(
            argv,
            [
                "gemini",
                "--output-format",
                "json",
                "--approval-mode",
                "auto_edit",
                "-p",
                "fix it"
            ]
        );
        let aider = AgentCommand::parse("aider", &[]).unwrap();
        assert_eq!(
            aider.argv("x", Path::new("/t/prompt.md"), Path::new("/t/usage.jsonl")),
            [
                "aider",
                "--message-file",
                "/t/prompt.md",
                "--no-auto-commits",
                "--no-gitignore",
                "--no-analytics",
                "--analytics-log",
                "/t/usage.jsonl"
            ]
        );
        for preset in PRESETS {
            let joined = preset.args.join(" ");
            for bypass in ["dangerously", "yolo", "full-auto", "yes-always", "bypass"] {
                assert!(!joined.contains(bypass), "{}: {joined}", preset.name);
            }
        }
    }

    #[test]
    fn a_command_is_run_by_the_shell_with_its_prompt_file_quoted() {
        let custom = AgentCommand::parse("./agent.py {prompt_file}", &["it's".into()]).unwrap();
        assert_eq!(custom.prompt, PromptInput::File);
        let argv = custom.argv("x", Path::new("/a b/prompt.md"), Path::new("/u"));
        assert_eq!(argv, ["sh", "-c", "./agent.py '/a b/prompt.md' 'it'\\''s'"]);
        let stdin = AgentCommand::parse("my-agent --fast", &[]).unwrap();
        assert_eq!(stdin.prompt, PromptInput::Stdin);
        assert!(AgentCommand::parse("  ", &[])
            .unwrap_err()
            .contains("claude"));
    }
}
