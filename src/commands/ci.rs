//! `itergate ci`: the GitHub Actions adapter's command. It reads the workflow's event and
//! arguments, runs the Actions flow ([`crate::app::actions`]), and prints: the actions
//! taken, a job summary (`GITHUB_STEP_SUMMARY`), step outputs (`GITHUB_OUTPUT`:
//! recommendation, quality, iteration); the exit status follows `github.gate`.

use crate::app::actions::{self, append_env_file, ActionsRequest};
use crate::app::pull_request::Outcome;
use crate::cli::CiArgs;
use crate::config::Gate;
use crate::engine::Decision;

use super::{user, Env, Failure};

pub fn ci(env: &Env, args: &CiArgs, quiet: bool) -> Result<(), Failure> {
    let payload = std::fs::read(&args.event_path).map_err(|e| {
        user(format!(
            "{}: cannot read the event: {e}",
            args.event_path.display()
        ))
    })?;
    let request = ActionsRequest {
        event_name: args.event_name.clone(),
        payload,
        token: args.token.clone(),
        record_out: args.record_out.clone(),
        write_on_fork: args.write_on_fork,
        score_only: args.score_only,
        publish_record: args.publish_record.clone(),
        record_digest: args.record_digest.clone(),
    };
    let Some((outcome, config)) = actions::run(env, &request, quiet)? else {
        return Ok(());
    };
    for action in &outcome.actions {
        eprintln!("itergate: {action}");
    }
    publish_outputs(&outcome)?;
    gate(config.github.gate, outcome.decision.as_ref())
}

fn publish_outputs(outcome: &Outcome) -> Result<(), Failure> {
    if let Some(summary) = &outcome.summary {
        append_env_file("GITHUB_STEP_SUMMARY", &format!("{summary}\n"))?;
    }
    let Some(decision) = &outcome.decision else {
        return Ok(());
    };
    let quality = outcome
        .quality
        .map_or_else(String::new, |q| format!("{q:.4}"));
    append_env_file(
        "GITHUB_OUTPUT",
        &format!(
            "recommendation={}\nquality={quality}\niteration={}\n",
            decision.recommendation().as_str(),
            decision.budget.current_iteration
        ),
    )
}

fn gate(gate: Gate, decision: Option<&Decision>) -> Result<(), Failure> {
    let Some(decision) = decision else {
        return Ok(());
    };
    let r = decision.recommendation();
    let blocked = super::gate_blocks(gate, r);
    if blocked {
        return Err(Failure::Blocked(format!(
            "itergate: the decision is `{}` and github.gate blocks it",
            r.as_str()
        )));
    }
    Ok(())
}
