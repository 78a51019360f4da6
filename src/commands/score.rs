//! `itergate score` (judge one commit against its base and print its iteration record)
//! and `itergate init`.

use crate::app::judge::{judge, Judgement};
use crate::app::local;
use crate::app::observe::ingest;
use crate::app::observe::{cached_observation, RecordOptions};
use crate::cli::{DecideFormat, InitArgs, ScoreArgs};
use crate::config::Config;
use crate::engine::trajectory::weighted_quality;
use crate::git;
use crate::model::IterationRecord;
use crate::signals::checks::Progress;
use crate::signals::detect;

use super::print;
use super::{user, Env, Failure};

pub fn score(env: &Env, args: &ScoreArgs, quiet: bool) -> Result<(), Failure> {
    let repo = local::open_repository(env)?;
    let store = local::open_store(env, &repo)?;
    let base_branch = args.base.as_deref().or(env.config.hook.base.as_deref());
    let commit = git::resolve_commit(&repo, &args.rev).map_err(|e| user(format!("{e:#}")))?;
    let env_for_base = Env {
        config: Config {
            hook: crate::config::Hook {
                base: base_branch.map(str::to_string),
                ..env.config.hook.clone()
            },
            ..env.config.clone()
        },
        ..env.clone()
    };
    let task = local::Task::locate(&env_for_base, &repo, &args.rev, commit)?;
    let options = RecordOptions {
        progress: Progress::from_quiet(quiet),
        rescore: args.rescore,
    };
    let (observed, base_observed) = if args.reports.is_empty() {
        let observed = cached_observation(env, &store, commit, None, options)?;
        let base = match task.merge_base.filter(|_| env.config.scoring.compare_base) {
            Some(base) => {
                let label = format!("base {}", local::short(base));
                Some(cached_observation(
                    env,
                    &store,
                    base,
                    Some(&label),
                    options,
                )?)
            }
            None => None,
        };
        (observed, base)
    } else {
        (ingest(env, &args.reports)?, None)
    };
    let (earlier, accepted) = if args.reports.is_empty() {
        (
            task.earlier_observations(env, &store, commit)?,
            task.accepted_findings(&store, commit)?,
        )
    } else {
        (Vec::new(), Vec::new())
    };
    let record = judge(
        &env.config,
        &repo,
        &Judgement {
            commit,
            base: task.merge_base,
            iteration: task.iteration_of(commit),
            observed: &observed,
            base_observed: base_observed.as_ref(),
            earlier: &earlier,
            void: &[],
            accepted: &accepted,
            trusted: None,
            targets: &[],
            environment: &crate::signals::environment::Unsealed::default(),
        },
    )?;
    let text = match args.format {
        DecideFormat::Json => {
            serde_json::to_string_pretty(&record).map_err(|e| Failure::Internal(e.into()))? + "\n"
        }
        DecideFormat::Yaml => {
            serde_norway::to_string(&record).map_err(|e| Failure::Internal(e.into()))?
        }
        DecideFormat::Text => record_text(&env.config, &record),
    };
    print(&text)
}

fn record_text(config: &Config, r: &IterationRecord) -> String {
    let mut out = format!(
        "iteration {} · {} · {:?}\n",
        r.iteration,
        r.commit.0.get(..12).unwrap_or(&r.commit.0),
        r.status
    );
    if let Some(q) = weighted_quality(&r.scores, &config.quality_weights) {
        out.push_str(&format!("quality {q:.2}\n"));
    }
    for (d, v) in r.scores.observed() {
        out.push_str(&format!(
            "  {}: {}\n",
            d.label(),
            crate::summary::format_score(Some(d), v)
        ));
    }
    for (k, v) in &r.metrics {
        out.push_str(&format!("  {k}: {v}\n"));
    }
    for i in &r.issues {
        let at = i.affected_field.as_deref().unwrap_or("-");
        let first = crate::model::headline(&i.finding);
        out.push_str(&format!(
            "{} {} {at}: {first}\n",
            i.severity.as_str(),
            i.dimension
        ));
    }
    for t in &r.triggers {
        out.push_str(&format!(
            "trigger {} ({:.2}): {}\n",
            t.kind.as_str(),
            t.severity,
            t.details
        ));
    }
    out
}

/// The report files of generated checks (`.itergate-junit.xml`, `.itergate-coverage/` …)
/// and the data files their tools leave (coverage.py's `.coverage`) are not the project's:
/// kept out of `git status` and `git add -A` by the clone's own `info/exclude`, which is
/// never committed. What was done, if anything.
fn exclude_report_files(git_dir: &std::path::Path) -> Option<String> {
    const PATTERNS: [&str; 3] = [".itergate-*", ".coverage", ".coverage.*"];
    let path = git_dir.join("info").join("exclude");
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let missing: Vec<&str> = PATTERNS
        .into_iter()
        .filter(|p| !text.lines().any(|l| l.trim() == *p))
        .collect();
    if missing.is_empty() {
        return None;
    }
    let mut text = text;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str("# the report files of itergate's checks, and what their tools leave\n");
    for pattern in &missing {
        text.push_str(&format!("{pattern}\n"));
    }
    let shown = missing
        .iter()
        .map(|p| format!("`{p}`"))
        .collect::<Vec<_>>()
        .join(", ");
    let written =
        std::fs::create_dir_all(path.parent()?).and_then(|()| std::fs::write(&path, text));
    Some(match written {
        Ok(()) => format!(
            "added {shown} (the checks' report files) to {}",
            path.display()
        ),
        Err(e) => format!(
            "could not add {shown} to {}: {e}; add them to .gitignore",
            path.display()
        ),
    })
}

pub fn init(env: &Env, args: &InitArgs, quiet: bool) -> Result<(), Failure> {
    // The file belongs at the repository's root, next to what it configures.
    let repo = local::open_repository(env)?;
    let root = repo
        .workdir()
        .ok_or_else(|| user("a bare repository has no work tree for .itergate.yml"))?
        .to_path_buf();
    let env = &Env {
        root,
        ..env.clone()
    };
    let path = env.root.join(".itergate.yml");
    if path.exists() && !args.force {
        return Err(user(format!(
            "{} exists; use --force to overwrite it",
            path.display()
        )));
    }
    let detected = detect::detect(&env.root);
    let text = detect::starter_config(detected.as_ref())?;
    // The file we write must be one we accept.
    let config = Config::from_yaml(&text, &path)
        .map_err(|e| Failure::Internal(anyhow::anyhow!("generated config is invalid: {e}")))?;
    std::fs::write(&path, text).map_err(|e| user(format!("{}: {e}", path.display())))?;
    for choice in detected.iter().flat_map(|d| &d.chosen) {
        eprintln!("itergate: chose {choice}");
    }
    for note in detected.iter().flat_map(|d| &d.notes) {
        eprintln!("itergate: not measured yet: {note}");
    }
    for warning in detected.iter().flat_map(|d| &d.warnings) {
        eprintln!("itergate: warning: {warning}");
    }
    if let Some(added) = exclude_report_files(repo.path()) {
        eprintln!("itergate: {added}");
    }
    eprintln!(
        "itergate: wrote {} ({})",
        path.display(),
        detected
            .as_ref()
            .map(|d| format!("{} checks", d.toolchain))
            .unwrap_or_else(|| "no toolchain detected".into())
    );
    if detected.is_some() && !args.no_verify {
        let env = Env {
            config,
            ..env.clone()
        };
        first_run(&env, &repo, quiet)?;
    }
    Ok(())
}

/// Runs the tests checks just written once and says what they counted; then the types
/// check, timed, said once if every decision would wait for it.
fn first_run(env: &Env, repo: &git2::Repository, quiet: bool) -> Result<(), Failure> {
    use crate::app::first_run::{
        run_tests_once, slow_types_note, time_types_once, FirstRun, Timed,
    };
    let written = ".itergate.yml";
    let mut tests_seconds = None;
    match run_tests_once(env, repo, Progress::from_quiet(quiet))? {
        FirstRun::Counted {
            executed,
            failing,
            seconds,
        } => {
            tests_seconds = Some(seconds);
            eprintln!(
                "itergate: a first run of the tests on HEAD: {} ran, {failing} failing, in {seconds:.1}s",
                crate::model::counted(executed as usize, "test")
            )
        }
        FirstRun::NoTests { checks, why } => eprintln!(
            "itergate: warning: a first run of `{}` on HEAD counted no test ({why}). Until it does, no iteration's behaviour is measured: make its `run:` in {written} run the project's tests (or `itergate init --force` once the runner is installed)",
            checks.join("`, `")
        ),
        FirstRun::NotRun(said) => eprintln!(
            "itergate: warning: a first run of the tests on HEAD could not run; every iteration would stop here until it can:\n{said}"
        ),
        FirstRun::Nothing(why) => eprintln!("itergate: no first run of the tests: {why}"),
    }
    match time_types_once(env, repo, Progress::from_quiet(quiet))? {
        Some(Timed::Ran { checks, seconds }) => {
            eprintln!(
                "itergate: a first run of `{}` on HEAD took {seconds:.1}s",
                checks.join("`, `")
            );
            if let Some(note) = tests_seconds.and_then(|t| slow_types_note(&checks, seconds, t)) {
                eprintln!("itergate: note: {note}");
            }
        }
        Some(Timed::NotRun(said)) => eprintln!(
            "itergate: warning: a first run of the types check on HEAD could not run; every iteration would stop here until it can:\n{said}"
        ),
        None => {}
    }
    Ok(())
}
