//! The application layer: the one flow every mode runs. Observe a tree (run its checks, or
//! reuse the cached observation), judge a commit against its base (`judge`), keep the
//! branch's history (`local`) or a pull request's (`pull_request`: the sticky comment,
//! commands, reviews), and decide (`evaluate`). `commands/` parses arguments, calls this and
//! prints; `github/` and the hook are adapters around it.
//!
//! Errors: [`Failure::User`] is something a person can fix (exit status 2),
//! [`Failure::Check`] a check the environment kept from running (exit status 3; nothing
//! was recorded), [`Failure::Blocked`] a gate that stopped a push, and
//! [`Failure::Internal`] everything else (exit status 1).

pub mod actions;
pub mod agent_loop;
pub mod clean_env;
pub mod context;
pub mod evaluate;
pub mod exit;
pub mod first_run;
pub mod forge_flow;
pub mod interpreter;
pub mod judge;
pub mod local;
pub mod observe;
pub mod pull_request;
pub mod scratch;
pub mod sealed;
pub mod trusted;
pub mod unrunnable;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use crate::config::Config;
use crate::render::Renderer;

#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// Bad usage, configuration or input: the message says what to change.
    #[error("{0}")]
    User(String),
    /// The gate stopped the push: the message says why and how to proceed.
    #[error("{0}")]
    Blocked(String),
    /// A check could not run (not found, no report, unreadable report): the environment's
    /// failure, not the work's. Nothing was recorded.
    #[error("{0}")]
    Check(String),
    /// Checks of a commit could not run while others did: as [`Failure::Check`], with what
    /// each said and what the rest observed, for the caller that can tell whether the
    /// commit itself stopped them (`local::record_commit`).
    #[error("{}", .0.message)]
    Unrunnable(Box<Unrunnable>),
    /// Ctrl-C or SIGTERM stopped the checks or an agent; nothing was recorded (exit 128 + signal).
    #[error(
        "interrupted: what was running (the checks, an agent) was stopped and nothing was recorded"
    )]
    Interrupted(i32),
    /// Not an error: `--exit-code` asked for the recommendation as the exit status.
    #[error("")]
    Decided(u8),
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

impl Failure {
    pub fn exit_code(&self) -> u8 {
        use exit::ExitStatus;
        match self {
            Failure::User(_) => ExitStatus::Usage.code(),
            Failure::Check(_) | Failure::Unrunnable(_) => ExitStatus::CheckCouldNotRun.code(),
            Failure::Decided(code) => *code,
            Failure::Interrupted(signal) => ExitStatus::Interrupted(*signal).code(),
            Failure::Blocked(_) | Failure::Internal(_) => ExitStatus::Failure.code(),
        }
    }
}

/// Checks that could not run on a commit ([`Failure::Unrunnable`]).
#[derive(Debug)]
pub struct Unrunnable {
    /// The commit whose checks these are.
    pub commit: git2::Oid,
    pub message: String,
    pub errors: Vec<crate::signals::observation::CheckError>,
    /// What the checks that did run observed.
    pub observed: crate::signals::observation::Observation,
}

pub fn user(e: impl std::fmt::Display) -> Failure {
    Failure::User(e.to_string())
}

/// Where a command runs and how it prints, as the person asked (the CLI's global flags).
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// Run as if started here (`-C`).
    pub directory: Option<PathBuf>,
    /// A configuration file named on purpose (`--config`): used as it is, never locked to
    /// the base's.
    pub config: Option<PathBuf>,
    pub color: Color,
    /// How many check commands may run at once (`--jobs`); default the number of cores.
    pub jobs: Option<usize>,
}

/// When to colour the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Color {
    /// On a terminal, unless `NO_COLOR` is set.
    #[default]
    Auto,
    Always,
    Never,
}

/// What every command gets: where it runs, the configuration, how to print.
#[derive(Clone)]
pub struct Env {
    pub root: PathBuf,
    pub config: Config,
    pub color: bool,
    /// Colour for what goes to stderr (summaries of the hook and `run`).
    pub color_stderr: bool,
    /// What checks inherit: everything locally, an allow-list in `itergate ci`.
    pub check_env: crate::signals::checks::EnvPolicy,
    /// Where the configuration that judges came from, and whether the work can change it.
    pub rules: Rules,
    /// How many check commands run at once (`--jobs`).
    pub jobs: crate::signals::checks::Jobs,
    /// The environment the checks run in, as last scanned (`app::sealed`).
    pub sealed: sealed::Sealed,
    /// The judge's own environment the checks run in instead, when the inherited one
    /// changed since the task's start (`app::clean_env`).
    pub clean: Option<std::sync::Arc<clean_env::CleanEnv>>,
}

/// Where the rules (the configuration) that judge a task come from.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Rules {
    /// The configuration committed at the task's start (`abc1234:.itergate.yml`), or on the
    /// base branch at HEAD: the work cannot change what judges it.
    Locked(String),
    /// A file a person named with `--config`.
    Named(PathBuf),
    /// The work tree's configuration (or the built-in defaults) while the start has none
    /// committed: a commit of the task could change its own judge.
    #[default]
    Unlocked,
}

impl Rules {
    /// Whether the task's own commits cannot change its rules.
    pub fn locked(&self) -> bool {
        !matches!(self, Rules::Unlocked)
    }

    /// One line for a person: why the rules are not locked and how to lock them; `None`
    /// when they are.
    pub fn unlocked_notice(&self, base_branch: Option<&str>) -> Option<String> {
        if self.locked() {
            return None;
        }
        let base = base_branch
            .map(|b| {
                b.trim_start_matches("refs/heads/")
                    .trim_start_matches("refs/remotes/")
            })
            .unwrap_or("the base branch");
        Some(format!(
            "the rules are not locked: where this task started there is no committed .itergate.yml, so the work tree's configuration (or the defaults) judges and a commit of this task could change it; commit .itergate.yml on {base} to lock them"
        ))
    }
}

impl Env {
    pub fn load(global: &Settings) -> Result<Env, Failure> {
        Env::load_reading(global, true)
    }

    /// [`Env::load`] with the built-in configuration, whatever `.itergate.yml` says: for
    /// commands that write one (`init --force` repairs a broken file).
    pub fn load_without_config(global: &Settings) -> Result<Env, Failure> {
        Env::load_reading(global, false)
    }

    fn load_reading(global: &Settings, read_config: bool) -> Result<Env, Failure> {
        let root = match &global.directory {
            Some(dir) => dir.clone(),
            None => std::env::current_dir().map_err(|e| Failure::Internal(e.into()))?,
        };
        if !root.is_dir() {
            return Err(user(format!("-C {}: not a directory", root.display())));
        }
        let (config, rules) = match &global.config {
            _ if !read_config => (Config::default(), Rules::Unlocked),
            Some(path) => {
                let path = resolve(&root, path);
                (Config::load(&path).map_err(user)?, Rules::Named(path))
            }
            None => (Config::discover(&root).map_err(user)?.0, Rules::Unlocked),
        };
        let auto = |terminal: bool| terminal && std::env::var_os("NO_COLOR").is_none();
        let (color, color_stderr) = match global.color {
            Color::Always => (true, true),
            Color::Never => (false, false),
            Color::Auto => (
                auto(std::io::stdout().is_terminal()),
                auto(std::io::stderr().is_terminal()),
            ),
        };
        Ok(Env {
            root,
            config,
            color,
            color_stderr,
            check_env: crate::signals::checks::EnvPolicy::Inherit,
            rules,
            jobs: global
                .jobs
                .map_or_else(crate::signals::checks::Jobs::per_core, |n| {
                    crate::signals::checks::Jobs::new(n)
                }),
            sealed: sealed::Sealed::default(),
            clean: None,
        })
    }

    /// The configuration of the base, not the branch's own (seed 002's locked harness):
    /// the checks, reports, thresholds and weights that judge a branch are those of
    /// `.itergate.yml` at its merge-base with the base branch, so a change cannot narrow
    /// its own judge. Kept as loaded when a person named the file (`--config`), on the base
    /// branch itself, outside a repository, or when the base has no configuration (a
    /// branch that adopts itergate: the rules are then [`Rules::Unlocked`]). On the base
    /// branch the rules are locked when the work tree's configuration is HEAD's. Says so when
    /// the branch's configuration differs.
    pub fn locked_to_base(mut self, global: &Settings, quiet: bool) -> Result<Env, Failure> {
        if global.config.is_some() {
            return Ok(self);
        }
        let Ok(repo) = crate::git::open(&self.root) else {
            return Ok(self);
        };
        let Ok(tip) = crate::git::resolve_commit(&repo, "HEAD") else {
            return Ok(self);
        };
        if crate::git::task_start(&repo, self.config.hook.base.as_deref(), tip)
            .1
            .is_none()
        {
            // On the base branch: the committed configuration is the base's own.
            if let Some((config, origin)) = config_at(&repo, tip)? {
                if config == self.config {
                    self.rules = Rules::Locked(origin);
                }
            }
            return Ok(self);
        }
        // The base branch is named by the branch's configuration, then by the base's own.
        let mut locked: Option<(Config, String)> = None;
        for _ in 0..2 {
            let hook_base = match &locked {
                Some((config, _)) => config.hook.base.clone(),
                None => self.config.hook.base.clone(),
            };
            let Some(merge_base) = crate::git::task_start(&repo, hook_base.as_deref(), tip).1
            else {
                break;
            };
            let Some(found) = config_at(&repo, merge_base)? else {
                break;
            };
            let same_base = locked
                .as_ref()
                .is_some_and(|(c, _)| c.hook.base == found.0.hook.base);
            locked = Some(found);
            if same_base
                || locked
                    .as_ref()
                    .is_some_and(|(c, _)| c.hook.base == hook_base)
            {
                break;
            }
        }
        if let Some((config, origin)) = locked {
            if config != self.config && !quiet {
                eprintln!(
                    "itergate: the configuration changed on this branch; it takes effect once it \
                     is on the base. Judging with the base's ({origin}); `--config <file>` \
                     judges with another"
                );
            }
            self.config = config;
            self.rules = Rules::Locked(origin);
        }
        Ok(self)
    }

    pub fn renderer(&self) -> Result<Renderer, Failure> {
        self.renderer_with(self.color)
    }

    /// For what goes to stderr (the hook's and `run`'s summaries).
    pub fn renderer_stderr(&self) -> Result<Renderer, Failure> {
        self.renderer_with(self.color_stderr)
    }

    pub fn renderer_with(&self, color: bool) -> Result<Renderer, Failure> {
        let dir = self
            .config
            .templates
            .dir
            .as_ref()
            .map(|d| resolve(&self.root, d));
        Renderer::new(dir.as_deref(), color).map_err(user)
    }

    pub fn path(&self, path: &Path) -> PathBuf {
        resolve(&self.root, path)
    }
}

/// The configuration committed at `commit` (the first of [`CONFIG_LOCATIONS`] there), with
/// where it was read (`3f2a1b0:.itergate.yml`).
fn config_at(
    repo: &git2::Repository,
    commit: git2::Oid,
) -> Result<Option<(Config, String)>, Failure> {
    let tree = repo
        .find_commit(commit)
        .and_then(|c| c.tree())
        .map_err(|e| Failure::Internal(e.into()))?;
    for name in crate::config::CONFIG_LOCATIONS {
        let Ok(entry) = tree.get_path(Path::new(name)) else {
            continue;
        };
        let Ok(blob) = repo.find_blob(entry.id()) else {
            continue;
        };
        let origin = format!("{}:{name}", local::short(commit));
        let text = String::from_utf8_lossy(blob.content());
        let config = Config::from_yaml(&text, Path::new(&origin)).map_err(user)?;
        return Ok(Some((config, origin)));
    }
    Ok(None)
}

fn resolve(root: &Path, path: &Path) -> PathBuf {
    if path.is_absolute() || path.as_os_str() == "-" {
        path.to_path_buf()
    } else {
        root.join(path)
    }
}
