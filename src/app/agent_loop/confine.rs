//! What the loop lets its agent write (`loop.sandbox`, `--sandbox`): under
//! `workspace-write` the agent's process tree writes its work tree and the loop's scratch
//! directory only; `.git`, the project's virtualenvs and `node_modules` are read-only, the
//! holdout details hidden, and everything outside the work tree (itergate's state, the home
//! directory's configuration, toolchains) read-only (`agent::sandbox`).

use std::path::{Path, PathBuf};

use git2::Repository;

use crate::agent::sandbox::{self, Policy};
use crate::agent::AgentRun;
use crate::app::{user, Env, Failure};
use crate::config::SandboxMode;

/// The sandbox the loop's agents run in, or none (`--sandbox off`).
pub struct Confinement {
    git_dirs: Vec<PathBuf>,
    /// The holdout checks' directories (their `files`), relative to a work tree.
    holdouts: Vec<PathBuf>,
    extra: Vec<PathBuf>,
    scratch: PathBuf,
}

impl Confinement {
    /// The loop's sandbox, checked to work here before any agent is paid for: a refusal
    /// names `--sandbox off`. `off` says what it risks, once.
    pub(super) fn prepare(
        env: &Env,
        repo: &Repository,
        mode: SandboxMode,
    ) -> Result<Option<Confinement>, Failure> {
        if mode == SandboxMode::Off {
            eprintln!(
                "itergate loop: --sandbox off: the agent can write .git, the project's environment and itergate's state as you can; what it tampers with is voided, not prevented"
            );
            return Ok(None);
        }
        sandbox::check_support().map_err(user)?;
        let scratch = repo.path().join("itergate").join("loop").join("agent");
        for sub in ["tmp", "cache"] {
            std::fs::create_dir_all(scratch.join(sub))
                .map_err(|e| user(format!("{}: {e}", scratch.join(sub).display())))?;
        }
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let extra = env.config.agent_loop.sandbox_writable.iter().map(|p| {
            match (p.strip_prefix("~/"), &home) {
                (Some(rest), Some(home)) => home.join(rest),
                _ => env.root.join(p),
            }
        });
        let confinement = Confinement {
            holdouts: holdout_dirs(&env.config),
            git_dirs: sandbox::existing([
                repo.path().to_path_buf(),
                repo.commondir().to_path_buf(),
            ]),
            extra: sandbox::existing(extra),
            scratch: sandbox::existing([scratch]).pop().unwrap_or_default(),
        };
        confinement.preflight(&env.root)?;
        Ok(Some(confinement))
    }

    /// The policy for an agent working in `dir`, its run's files in `logs`.
    pub(super) fn policy(&self, dir: &Path, logs: &Path) -> Policy {
        let _ = std::fs::create_dir_all(logs);
        let root = sandbox::existing([dir.to_path_buf()]);
        let mut read_only = self.git_dirs.clone();
        // A linked worktree's `.git` is a file naming its git directory.
        read_only.extend(sandbox::existing([dir.join(".git")]));
        read_only.extend(sandbox::existing(project_environments(dir)));
        read_only.sort();
        read_only.dedup();
        // Vite writes its bundled configuration into `node_modules/.vite-temp` when a
        // vitest or vite config loads: a scratch of its own, never read back.
        let vite_temp = read_only
            .iter()
            .filter(|p| p.ends_with("node_modules"))
            .map(|m| m.join(".vite-temp"))
            .filter(|t| std::fs::create_dir_all(t).is_ok())
            .collect::<Vec<_>>();
        let mut writable = root;
        writable.extend(sandbox::existing(vite_temp));
        writable.extend(sandbox::existing([
            logs.to_path_buf(),
            self.scratch.clone(),
        ]));
        writable.extend(self.extra.iter().cloned());
        let mut hidden =
            sandbox::existing(self.git_dirs.iter().map(|g| g.join("itergate/private")));
        let holdouts = self
            .holdouts
            .iter()
            .map(|h| dir.join(h))
            .filter(|h| h.is_dir());
        hidden.extend(sandbox::existing(holdouts));
        Policy {
            writable,
            read_only,
            hidden,
            tmp: Some(self.scratch.join("tmp")),
            cache: Some(self.scratch.join("cache")),
        }
    }

    /// The plan's line: what the agent may write, what it may not, relative to `root`.
    pub(super) fn describe(&self, root: &Path, logs: &Path) -> String {
        let policy = self.policy(root, logs);
        let root = sandbox::existing([root.to_path_buf()])
            .pop()
            .unwrap_or_default();
        let shown = |paths: &[PathBuf]| {
            paths
                .iter()
                .map(|p| match p.strip_prefix(&root) {
                    Ok(rel) if rel.as_os_str().is_empty() => "the work tree".to_string(),
                    Ok(rel) => rel.display().to_string(),
                    Err(_) => p.display().to_string(),
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut text = format!(
            "workspace-write: the agent writes {}; read-only: {}, and everything else",
            shown(&policy.writable),
            shown(&policy.read_only)
        );
        if !policy.hidden.is_empty() {
            text.push_str(&format!("; hidden: {}", shown(&policy.hidden)));
        }
        text
    }

    /// Enters the sandbox once with `true`: where the kernel refuses a namespace, the loop
    /// stops before an agent runs.
    fn preflight(&self, root: &Path) -> Result<(), Failure> {
        let logs = self.scratch.join("tmp");
        let argv = self
            .policy(root, &logs)
            .wrap(&["true".to_string()])
            .map_err(|e| user(format!("the agent sandbox: {e}")))?;
        let out = std::process::Command::new(&argv[0])
            .args(&argv[1..])
            .output()
            .map_err(|e| user(format!("the agent sandbox: {e}")))?;
        if out.status.success() {
            return Ok(());
        }
        let said = String::from_utf8_lossy(&out.stderr);
        Err(user(format!(
            "{}\n(run with `--sandbox off`, or set `loop.sandbox: off`, to let the agent write what you can)",
            said.trim().trim_start_matches("itergate: sandbox: ")
        )))
    }
}

/// The lines of an agent's output that say the sandbox refused a write (`Read-only file
/// system`, `Permission denied`), at most [`MAX_REFUSED`], each cut to 200 characters and
/// stripped of control characters: what the loop tells a person the agent tried.
pub(super) fn refused(run: &AgentRun) -> Vec<String> {
    let mut lines = Vec::new();
    for file in [&run.stderr, &run.stdout] {
        let Ok(text) = std::fs::read(file) else {
            continue;
        };
        for line in String::from_utf8_lossy(&text).lines() {
            if lines.len() == MAX_REFUSED {
                return lines;
            }
            if REFUSALS.iter().any(|r| line.contains(r)) {
                let clean: String = line.chars().filter(|c| !c.is_control()).take(200).collect();
                if !lines.contains(&clean) {
                    lines.push(clean);
                }
            }
        }
    }
    lines
}

/// `lines` of an agent's output, indented and marked as quoted.
pub(super) fn quoted(lines: &[String]) -> String {
    lines
        .iter()
        .map(|line| format!("    | {line}"))
        .collect::<Vec<_>>()
        .join("\n")
}

const MAX_REFUSED: usize = 5;
const REFUSALS: [&str; 4] = [
    "Read-only file system",
    "Permission denied",
    "EROFS",
    "EACCES",
];

/// The directories of the holdout checks' files (`files: [holdout/**]` is `holdout`):
/// each glob's leading directories with no pattern in them.
fn holdout_dirs(config: &crate::config::Config) -> Vec<PathBuf> {
    config
        .checks
        .values()
        .filter(|c| c.visibility == crate::config::Visibility::AggregateOnly)
        .flat_map(|c| c.files.iter())
        .filter_map(|glob| {
            let literal: PathBuf = Path::new(glob)
                .components()
                .take_while(|part| {
                    !part
                        .as_os_str()
                        .to_string_lossy()
                        .contains(['*', '?', '[', '{'])
                })
                .collect();
            (!literal.as_os_str().is_empty()).then_some(literal)
        })
        .collect()
}

/// The virtualenvs and `node_modules` in `dir` the checks execute.
fn project_environments(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    if let Ok(children) = std::fs::read_dir(dir) {
        for child in children.flatten() {
            let path = child.path();
            if path.join("pyvenv.cfg").is_file() || child.file_name() == "node_modules" {
                found.push(path);
            }
        }
    }
    found
}
