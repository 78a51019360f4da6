//! `itergate context [FILE|-]`: read an agent's `CONTEXT_GAP_REPORT` and print the reply
//! (a `CONTEXT_DELIVERY`, or the round cap's "execute" line) for the branch's latest
//! recorded iteration; see [`crate::app::context`].

use std::io::{IsTerminal as _, Read as _};

use crate::app::context::answer;
use crate::app::local as task;
use crate::cli::{ContextArgs, OutputFormat};
use crate::context::{delivery_view, parse_gap_report};

use super::print;
use super::run::current_task;
use super::{user, Env, Failure};

/// The most of an agent's answer read.
const MAX_INPUT_BYTES: u64 = 4 * 1024 * 1024;

pub fn context(env: &Env, args: &ContextArgs, quiet: bool) -> Result<(), Failure> {
    let (name, text) = read_input(args)?;
    let report = parse_gap_report(&text).ok_or_else(|| {
        user(format!(
            "{name} holds no CONTEXT_GAP_REPORT: the report starts with a line \
             `CONTEXT_GAP_REPORT`, then lines \
             `NEEDS: <file path or concept> | REASON: <why it blocks> | ALTERNATIVE: <what you can do without it, or none — required>`, \
             and ends with `READY_TO_EXECUTE: true` or `false`"
        ))
    })?;
    let repo = task::open_repository(env)?;
    let store = task::open_store(env, &repo)?;
    let task = current_task(env, store.repository(), args.branch.as_deref())?;
    let answered = answer(env, &store, &task, &report)?;
    if answered.escalated && !quiet {
        eprintln!(
            "itergate: {}: a required item cannot be provided; the branch is escalated to a human (`itergate status`)",
            answered.task
        );
    }
    match args.format {
        OutputFormat::Json => print(
            &(serde_json::to_string_pretty(&answered).map_err(|e| Failure::Internal(e.into()))?
                + "\n"),
        ),
        OutputFormat::Text => {
            let view = delivery_view(&answered.reply, Some(&answered.commit), false);
            print(&env.renderer()?.render("context-delivery.md.j2", &view)?)
        }
    }
}

fn read_input(args: &ContextArgs) -> Result<(String, String), Failure> {
    let mut bytes = Vec::new();
    if args.input.as_os_str() == "-" {
        if std::io::stdin().is_terminal() {
            return Err(user(
                "give the file with the agent's CONTEXT_GAP_REPORT (`itergate context gap.txt`), \
                 or pipe it in (`agent-output | itergate context`)",
            ));
        }
        std::io::stdin()
            .take(MAX_INPUT_BYTES)
            .read_to_end(&mut bytes)
            .map_err(|e| user(format!("reading standard input: {e}")))?;
        return Ok(("standard input".into(), lossy(bytes)));
    }
    let name = args.input.display().to_string();
    std::fs::File::open(&args.input)
        .and_then(|f| f.take(MAX_INPUT_BYTES).read_to_end(&mut bytes))
        .map_err(|e| user(format!("reading {name}: {e}")))?;
    Ok((name, lossy(bytes)))
}

fn lossy(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}
