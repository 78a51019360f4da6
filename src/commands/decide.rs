//! `itergate decide` and `itergate analytics` over a history file.

use chrono::Utc;

use crate::analytics;
use crate::app::evaluate::{evaluate, EvaluateInput, Evaluation};
use crate::cli::{AnalyticsArgs, AnalyticsFormat, DecideArgs, DecideFormat, HistoryArgs};
use crate::engine::{DecisionReport, Feedback};
use crate::history::file;
use crate::model::IterationRecord;
use crate::summary;

use super::{print, user, Env, Failure};

struct Loaded {
    history: Vec<IterationRecord>,
    baseline: Option<IterationRecord>,
    evaluation: Evaluation,
}

fn load_and_decide(env: &Env, args: &HistoryArgs) -> Result<Loaded, Failure> {
    let Some(path) = &args.history else {
        return Err(user(
            "--history FILE is required (a JSON or YAML list of iteration records)",
        ));
    };
    let history = file::load_history(&env.path(path)).map_err(user)?;
    decide_loaded(env, args, history, path.display().to_string())
}

fn decide_loaded(
    env: &Env,
    args: &HistoryArgs,
    history: Vec<IterationRecord>,
    source: String,
) -> Result<Loaded, Failure> {
    let baseline = match &args.baseline {
        Some(path) => Some(file::load_record(&env.path(path)).map_err(user)?),
        None => None,
    };
    let evaluation = evaluate(&EvaluateInput {
        task_id: &args.task,
        config: &env.config,
        history: &history,
        feedback: &Feedback::default(),
        baseline: baseline.as_ref(),
        now: args.now.unwrap_or_else(Utc::now),
    })
    .map_err(|e| user(format!("{source}: {e}")))?;
    Ok(Loaded {
        history,
        baseline,
        evaluation,
    })
}

pub fn decide(env: &Env, args: &DecideArgs) -> Result<(), Failure> {
    let loaded = load_and_decide(env, &args.history)?;
    let text = match args.format {
        DecideFormat::Text => {
            let view = summary::decision_view(&loaded.history, &loaded.evaluation);
            env.renderer()?
                .render("decision.txt.j2", &view)
                .map_err(user)?
        }
        DecideFormat::Yaml => serde_norway::to_string(&DecisionReport {
            iteration_decision: loaded.evaluation.decision,
            task: None,
        })
        .map_err(|e| Failure::Internal(e.into()))?,
        DecideFormat::Json => {
            let report = DecisionReport {
                iteration_decision: loaded.evaluation.decision,
                task: None,
            };
            serde_json::to_string_pretty(&report).map_err(|e| Failure::Internal(e.into()))? + "\n"
        }
    };
    print(&text)
}

pub fn analytics(env: &Env, args: &AnalyticsArgs) -> Result<(), Failure> {
    let loaded = if args.history.history.is_some() {
        load_and_decide(env, &args.history)?
    } else {
        let (name, history) = super::run::recorded_history(env, args.branch.as_deref())?;
        let mut named = HistoryArgs {
            task: name.clone(),
            ..args.history.clone()
        };
        if args.history.task != "task" {
            named.task = args.history.task.clone();
        }
        decide_loaded(env, &named, history, name)?
    };
    let mut result = analytics::build(
        &env.config,
        &loaded.history,
        &loaded.evaluation,
        loaded.baseline.as_ref(),
    );
    if args.history.history.is_none() {
        result.context = crate::app::context::usage(env, &loaded.history)?;
    }
    let text = match args.format {
        AnalyticsFormat::Text => env
            .renderer()?
            .render("analytics.txt.j2", &analytics::text_view(&result))
            .map_err(user)?,
        AnalyticsFormat::Json => {
            serde_json::to_string_pretty(&result).map_err(|e| Failure::Internal(e.into()))? + "\n"
        }
        AnalyticsFormat::Csv => analytics::to_csv(&result)?,
    };
    print(&text)
}
