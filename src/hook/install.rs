//! Installing and removing the `pre-push` hook.
//!
//! The hook goes where git runs hooks from: `core.hooksPath` when set (a relative path is
//! relative to the work tree root, as git resolves it), else the `hooks` directory of the
//! common git dir, which linked worktrees share. A hook that is already there and is not
//! ours is kept and chained: it is renamed to `pre-push.itergate-chained` (keeping its mode)
//! and our script runs it first with the same arguments and stdin. Nothing here ever
//! deletes a file it did not write: uninstalling puts the chained hook back, and a
//! `pre-push` hook without our marker is refused.

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::Context;
use git2::{ErrorCode, Repository};

/// The hook git runs before a push.
pub const HOOK_NAME: &str = "pre-push";
/// Where a foreign hook is kept while ours is installed; our script runs it first.
pub const CHAINED_HOOK_NAME: &str = "pre-push.itergate-chained";
/// The line that marks a hook as ours (any version).
pub const HOOK_MARKER: &str = "# itergate-managed hook v1";
const MARKER_PREFIX: &str = "# itergate-managed hook v";
const BACKUP_NAME: &str = "pre-push.itergate-backup";

/// Errors a caller (the CLI) reports differently from internal failures.
#[derive(Debug, thiserror::Error)]
pub enum HookError {
    #[error(
        "{hook} is not an itergate hook, and {chained} (where itergate keeps the hook it \
         chains) is already taken; move one of them away, or pass --force to keep {chained} \
         as a backup and chain {hook}"
    )]
    ChainedSlotTaken { hook: PathBuf, chained: PathBuf },
    #[error("{hook} was not installed by itergate; not removing it")]
    ForeignHook { hook: PathBuf },
    #[error(transparent)]
    Other(#[from] anyhow::Error),
}

/// How to install.
#[derive(Debug, Clone, Default)]
pub struct InstallOptions {
    /// Chain a foreign hook even when the chained slot is taken (the old occupant is kept
    /// under a backup name).
    pub force: bool,
    /// The itergate binary the hook runs when `ITERGATE_BIN` is not set; `None` means
    /// `itergate` from PATH.
    pub binary: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InstallOutcome {
    Installed,
    AlreadyInstalled,
    /// Ours was there, but an older script or another binary path.
    Updated,
}

/// What `install` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstallReport {
    pub hook: PathBuf,
    pub outcome: InstallOutcome,
    /// A foreign hook this run moved to the chained slot.
    pub chained: Option<PathBuf>,
    /// A hook already in the chained slot, which ours will run first.
    pub runs_chained: Option<PathBuf>,
    /// With `force`: where the previous occupant of the chained slot was moved.
    pub backup: Option<PathBuf>,
}

impl fmt::Display for InstallReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hook = self.hook.display();
        match self.outcome {
            InstallOutcome::Installed => write!(f, "installed the pre-push hook at {hook}")?,
            InstallOutcome::AlreadyInstalled => {
                write!(f, "the pre-push hook at {hook} is already installed")?
            }
            InstallOutcome::Updated => write!(f, "updated the pre-push hook at {hook}")?,
        }
        if let Some(backup) = &self.backup {
            write!(
                f,
                "\nmoved the previously chained hook to {}",
                backup.display()
            )?;
        }
        if let Some(chained) = &self.chained {
            write!(
                f,
                "\nkept the existing hook as {}; it runs before itergate",
                chained.display()
            )?;
        } else if let Some(chained) = &self.runs_chained {
            write!(
                f,
                "\nthe chained hook {} runs before itergate",
                chained.display()
            )?;
        }
        Ok(())
    }
}

/// What `uninstall` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UninstallReport {
    /// Our hook was removed; there was nothing to put back.
    Removed { hook: PathBuf },
    /// The chained hook is back at `hook`.
    Restored { hook: PathBuf, from: PathBuf },
    /// There was no itergate hook.
    NotInstalled { hook: PathBuf },
}

impl fmt::Display for UninstallReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UninstallReport::Removed { hook } => {
                write!(f, "removed the pre-push hook at {}", hook.display())
            }
            UninstallReport::Restored { hook, from } => write!(
                f,
                "removed the itergate hook and restored {} to {}",
                from.display(),
                hook.display()
            ),
            UninstallReport::NotInstalled { hook } => {
                write!(f, "no itergate hook at {}; nothing to do", hook.display())
            }
        }
    }
}

/// Installs the hook for the repository containing `repo_dir`, baking in the path of the
/// running binary.
pub fn install(repo_dir: &Path, force: bool) -> Result<InstallReport, HookError> {
    let options = InstallOptions {
        force,
        binary: std::env::current_exe().ok(),
    };
    install_with(repo_dir, &options)
}

/// Installs the hook; see the module doc for where it goes and how a foreign hook is kept.
/// Installing twice changes nothing.
pub fn install_with(repo_dir: &Path, options: &InstallOptions) -> Result<InstallReport, HookError> {
    let repo = crate::git::open(repo_dir)?;
    let dir = hooks_dir(&repo)?;
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let hook = dir.join(HOOK_NAME);
    let chained = dir.join(CHAINED_HOOK_NAME);
    let script = hook_script(options.binary.as_deref());
    let mut report = InstallReport {
        hook: hook.clone(),
        outcome: InstallOutcome::Installed,
        chained: None,
        runs_chained: exists(&chained).then(|| chained.clone()),
        backup: None,
    };
    match existing_hook(&hook)? {
        Some(current) if is_ours(&current) => {
            if current == script.as_bytes() {
                report.outcome = InstallOutcome::AlreadyInstalled;
                return Ok(report);
            }
            report.outcome = InstallOutcome::Updated;
        }
        Some(_) => {
            if exists(&chained) {
                if !options.force {
                    return Err(HookError::ChainedSlotTaken { hook, chained });
                }
                let backup = free_backup_path(&dir);
                rename(&chained, &backup)?;
                report.backup = Some(backup);
            }
            rename(&hook, &chained)?;
            report.chained = Some(chained);
            report.runs_chained = None;
        }
        None => {}
    }
    write_executable(&hook, &script)?;
    Ok(report)
}

/// Removes our hook and puts back the hook it chained. Refuses to remove a `pre-push` hook
/// that is not ours.
pub fn uninstall(repo_dir: &Path) -> Result<UninstallReport, HookError> {
    let repo = crate::git::open(repo_dir)?;
    let dir = hooks_dir(&repo)?;
    let hook = dir.join(HOOK_NAME);
    let chained = dir.join(CHAINED_HOOK_NAME);
    match existing_hook(&hook)? {
        Some(current) if !is_ours(&current) => Err(HookError::ForeignHook { hook }),
        current => {
            if exists(&chained) {
                rename(&chained, &hook)?;
                return Ok(UninstallReport::Restored {
                    hook,
                    from: chained,
                });
            }
            if current.is_none() {
                return Ok(UninstallReport::NotInstalled { hook });
            }
            fs::remove_file(&hook).with_context(|| format!("removing {}", hook.display()))?;
            Ok(UninstallReport::Removed { hook })
        }
    }
}

/// The directory git runs this repository's hooks from.
pub fn hooks_dir(repo: &Repository) -> anyhow::Result<PathBuf> {
    let config = repo.config().context("reading the git configuration")?;
    match config.get_path("core.hooksPath") {
        Ok(path) if path.as_os_str().is_empty() => Ok(default_hooks_dir(repo)),
        Ok(path) if path.is_absolute() => Ok(path),
        Ok(path) => {
            let base = repo.workdir().unwrap_or_else(|| repo.path());
            Ok(base.join(path))
        }
        Err(e) if e.code() == ErrorCode::NotFound => Ok(default_hooks_dir(repo)),
        Err(e) => Err(e).context("reading core.hooksPath"),
    }
}

fn default_hooks_dir(repo: &Repository) -> PathBuf {
    repo.commondir().join("hooks")
}

/// Whether a hook file carries our marker.
pub fn is_ours(content: &[u8]) -> bool {
    content
        .split(|&b| b == b'\n')
        .any(|line| line.starts_with(MARKER_PREFIX.as_bytes()))
}

/// The content of the hook at `path`: `None` when there is none, empty bytes when it
/// exists but cannot be read as a file (a dangling symlink): still someone else's.
fn existing_hook(path: &Path) -> anyhow::Result<Option<Vec<u8>>> {
    if !exists(path) {
        return Ok(None);
    }
    match fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Some(Vec::new())),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

fn exists(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok()
}

fn rename(from: &Path, to: &Path) -> anyhow::Result<()> {
    fs::rename(from, to).with_context(|| format!("moving {} to {}", from.display(), to.display()))
}

fn free_backup_path(dir: &Path) -> PathBuf {
    let first = dir.join(BACKUP_NAME);
    if !exists(&first) {
        return first;
    }
    (1..)
        .map(|n| dir.join(format!("{BACKUP_NAME}.{n}")))
        .find(|p| !exists(p))
        .unwrap_or(first)
}

/// Writes through a temporary file and a rename, so git never runs a half-written hook.
fn write_executable(path: &Path, content: &str) -> anyhow::Result<()> {
    let tmp = path.with_file_name(format!("{HOOK_NAME}.itergate-tmp-{}", std::process::id()));
    fs::write(&tmp, content).with_context(|| format!("writing {}", tmp.display()))?;
    make_executable(&tmp)?;
    fs::rename(&tmp, path).with_context(|| format!("installing {}", path.display()))
}

#[cfg(unix)]
fn make_executable(path: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(0o755))
        .with_context(|| format!("making {} executable", path.display()))
}

#[cfg(not(unix))]
fn make_executable(_path: &Path) -> anyhow::Result<()> {
    // Git for Windows runs hooks through its sh regardless of mode bits.
    Ok(())
}

/// The hook script. With a chained hook it saves stdin once so that the chained hook and
/// itergate both read the same ref list; without one it execs itergate directly, so a push
/// pays for one shell and no helper process.
pub fn hook_script(binary: Option<&Path>) -> String {
    let fallback = match binary.and_then(Path::to_str) {
        Some(path) => format!(
            "\tbin={}\n\t[ -x \"$bin\" ] || bin=itergate\n",
            shell_quote(path)
        ),
        None => "\tbin=itergate\n".to_owned(),
    };
    format!(
        r#"#!/bin/sh
{HOOK_MARKER}
# Installed by `itergate hook install`; `itergate hook uninstall` removes it and puts
# back the hook it chained. ITERGATE_SKIP=1 skips itergate (a chained hook still runs);
# `git push --no-verify` skips every hook.
case $0 in */*) chained="${{0%/*}}/{CHAINED_HOOK_NAME}" ;; *) chained="./{CHAINED_HOOK_NAME}" ;; esac
if [ "${{ITERGATE_SKIP:-0}}" = "1" ]; then
	[ -x "$chained" ] && exec "$chained" "$@"
	exit 0
fi
bin=${{ITERGATE_BIN:-}}
if [ -z "$bin" ]; then
{fallback}fi
if ! command -v "$bin" >/dev/null 2>&1; then
	echo "itergate: cannot run '$bin' (set ITERGATE_BIN, or push with ITERGATE_SKIP=1)" >&2
	exit 1
fi
if [ -x "$chained" ]; then
	input=$(mktemp "${{TMPDIR:-/tmp}}/itergate-pre-push.XXXXXX") || exit 1
	trap 'rm -f -- "$input"' EXIT
	trap 'exit 130' HUP INT TERM
	cat >"$input" || exit 1
	"$chained" "$@" <"$input" || exit $?
	exec <"$input"
	rm -f -- "$input"
	trap - EXIT HUP INT TERM
fi
exec "$bin" hook pre-push "$@"
"#
    )
}

/// Single-quotes a string for sh.
fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}
