//! Git plumbing for the hook and CI modes: finding the repository, the task's iterations
//! (first-parent commits since the merge-base with the base branch), commit trailers, the
//! lines a commit added, and throw-away worktrees for scoring a commit that is not checked
//! out.
//!
//! Everything here reads the repository through git2 and never writes the user's work tree,
//! index or branches. The one exception to "git2 only" is [`TempWorktree`]: libgit2 can only
//! add a worktree on a branch (it would create one in the user's repository), so it runs
//! `git worktree add --detach`, with the user's hooks switched off. Object ids are kept as
//! the text git prints; nothing here assumes a 40-character sha1.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::lock;
use anyhow::{anyhow, bail, Context, Result};
use git2::{BranchType, Diff, DiffFindOptions, DiffOptions, Oid, Repository, Sort};

/// Environment variables that point git at a repository, index or object store. A hook
/// runs with some of them set for the repository being pushed; a git subprocess we start
/// names its repository explicitly, so they are removed to keep it from writing elsewhere
/// (for example into the user's index through `GIT_INDEX_FILE`).
const REPOSITORY_ENV_VARS: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_COMMON_DIR",
    "GIT_PREFIX",
    "GIT_IMPLICIT_WORK_TREE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_GRAFT_FILE",
    "GIT_SHALLOW_FILE",
    "GIT_NO_REPLACE_OBJECTS",
    "GIT_REPLACE_REF_BASE",
    "GIT_INTERNAL_SUPER_PREFIX",
];

/// Opens the repository that contains `dir` (like `git -C dir`): searches upwards, and
/// works from a linked worktree or a subdirectory.
pub fn open(dir: &Path) -> Result<Repository> {
    static OPTIONS: std::sync::Once = std::sync::Once::new();
    // libgit2 re-hashes every object it reads (with collision-detecting SHA-1, a third of a
    // cached push); git does not, and zlib already checks what it inflates.
    OPTIONS.call_once(|| git2::opts::strict_hash_verification(false));
    Repository::discover(dir).map_err(|e| {
        if e.class() == git2::ErrorClass::Repository && e.message().contains("'sha256'") {
            // git's `--object-format=sha256`: libgit2 (as built here) reads sha1 only.
            anyhow!(
                "{}: this repository uses sha256 object ids, which itergate cannot read yet \
                 ({})",
                dir.display(),
                e.message()
            )
        } else {
            anyhow!(
                "no git repository at or above {} ({}); run this inside a clone, or `git init` first",
                dir.display(),
                e.message()
            )
        }
    })
}

/// The short name of the checked-out branch, or `None` when HEAD is detached. An unborn
/// branch (a repository without commits) is reported by name.
pub fn head_branch(repo: &Repository) -> Result<Option<String>> {
    if repo.head_detached().context("reading HEAD")? {
        return Ok(None);
    }
    let head = repo.find_reference("HEAD").context("reading HEAD")?;
    let Ok(Some(target)) = head.symbolic_target() else {
        return Ok(None);
    };
    Ok(target.strip_prefix("refs/heads/").map(str::to_owned))
}

/// Resolves a revision (`main`, `origin/main`, `HEAD~2`, a full or abbreviated id) to the
/// commit it names.
pub fn resolve_commit(repo: &Repository, rev: &str) -> Result<Oid> {
    let object = match repo.revparse_single(rev) {
        Ok(object) => object,
        Err(_)
            if rev == "HEAD"
                && repo
                    .head()
                    .is_err_and(|e| e.code() == git2::ErrorCode::UnbornBranch) =>
        {
            bail!("the repository has no commits yet: make a first commit, then run again")
        }
        Err(e) => bail!("unknown revision `{rev}`: {}", e.message()),
    };
    let commit = object
        .peel_to_commit()
        .map_err(|e| anyhow!("`{rev}` does not name a commit: {}", e.message()))?;
    Ok(commit.id())
}

/// The tree of `commit`, read through the walking handle (see `with_walker`): a branch's
/// commits are read once for its walks and its trees together.
pub fn commit_tree(repo: &Repository, commit: Oid) -> Result<Oid> {
    with_walker(repo, |walker| {
        let odb = walker.odb().context("opening the object database")?;
        commit_header(&odb, commit, b"tree ")?
            .ok_or_else(|| anyhow!("commit {commit} names no tree"))
    })
}

/// The first `name` header of `commit` (`tree `, `parent `), read raw: a commit looked up
/// parsed on the walking handle would be read from disk again by every walk.
fn commit_header(odb: &git2::Odb<'_>, commit: Oid, name: &[u8]) -> Result<Option<Oid>> {
    let object = odb
        .read(commit)
        .with_context(|| format!("reading commit {commit}"))?;
    if object.kind() != git2::ObjectType::Commit {
        bail!("{commit} is a {}, not a commit", object.kind());
    }
    // The headers end at the first empty line; `tree` comes first, then the parents.
    let found = object
        .data()
        .split(|b| *b == b'\n')
        .take_while(|line| !line.is_empty())
        .find_map(|line| line.strip_prefix(name));
    found
        .map(|hex| {
            std::str::from_utf8(hex)
                .ok()
                .and_then(|hex| Oid::from_str(hex).ok())
                .ok_or_else(|| anyhow!("commit {commit} has a malformed header"))
        })
        .transpose()
}

/// The best common ancestor of two commits, or `None` when their histories are unrelated.
pub fn merge_base(repo: &Repository, a: Oid, b: Oid) -> Result<Option<Oid>> {
    let key = (repo.path().to_path_buf(), a.min(b), a.max(b));
    if let Some(&known) = WALKED
        .with(|w| w.borrow().merge_bases.get(&key).copied())
        .as_ref()
    {
        return Ok(known);
    }
    let found = match with_walker(repo, |walker| walker.merge_base(a, b)) {
        Ok(oid) => Some(oid),
        Err(e) if e.code() == git2::ErrorCode::NotFound => None,
        Err(e) => return Err(e).with_context(|| format!("finding the merge-base of {a} and {b}")),
    };
    if found.is_some() {
        WALKED.with(|w| w.borrow_mut().merge_bases.insert(key, found));
    }
    Ok(found)
}

/// History walks already made in this thread: what two commits have in common never
/// changes, and one command asks for the same merge-base and ancestry several times (the
/// rules' lock, the task, the push's classification). Only what was found is kept: a
/// fetch that deepens a shallow history can still find what was missing.
#[derive(Default)]
struct Walked {
    merge_bases: std::collections::HashMap<(std::path::PathBuf, Oid, Oid), Option<Oid>>,
    ancestry: std::collections::HashMap<(std::path::PathBuf, Oid, Oid), bool>,
}

thread_local! {
    static WALKED: std::cell::RefCell<Walked> = std::cell::RefCell::new(Walked::default());
    static WALKER: std::cell::RefCell<Option<Repository>> = const { std::cell::RefCell::new(None) };
}

/// Runs a history walk through this thread's walking handle of `repo`. libgit2 caches
/// objects per handle, and its walks read from disk again every commit the handle also
/// holds parsed (`find_commit` does): on `repo` itself, each walk of a branch re-read all of
/// its commits. A handle that only walks keeps the raw commits the first walk read. The
/// handle of the last repository walked is kept; `repo` is used when a second cannot open.
fn with_walker<T>(repo: &Repository, walk: impl FnOnce(&Repository) -> T) -> T {
    WALKER.with(|cell| {
        let mut kept = cell.borrow_mut();
        if kept.as_ref().is_none_or(|w| w.path() != repo.path()) {
            *kept = Repository::open(repo.path()).ok();
        }
        match kept.as_ref() {
            Some(walker) => walk(walker),
            None => walk(repo),
        }
    })
}

/// The iterations of a task, oldest first: the commits reachable from `tip` along first
/// parents and not reachable from `base` (the merge-base). Merges from the base branch into
/// the task count as one iteration each; the commits they bring in do not. Without a base,
/// the whole first-parent history up to the root.
pub fn first_parent_commits(repo: &Repository, tip: Oid, base: Option<Oid>) -> Result<Vec<Oid>> {
    with_walker(repo, |walker| first_parents(walker, tip, base))
}

fn first_parents(repo: &Repository, tip: Oid, base: Option<Oid>) -> Result<Vec<Oid>> {
    let mut walk = repo.revwalk().context("starting a history walk")?;
    walk.set_sorting(Sort::TOPOLOGICAL | Sort::REVERSE)
        .context("sorting the history walk")?;
    walk.simplify_first_parent()
        .context("restricting the walk to first parents")?;
    walk.push(tip)
        .with_context(|| format!("walking history from {tip}"))?;
    if let Some(base) = base {
        walk.hide(base)
            .with_context(|| format!("excluding the history of {base}"))?;
    }
    walk.collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("walking the first-parent history of {tip}"))
}

/// The branch the work left, as a ref name. In order: the configured `hook.base`; the
/// remote's default branch (`refs/remotes/<remote>/HEAD`, as set by `git clone` or `git
/// remote set-head`), taken as the local branch of the same name when that contains the
/// remote-tracking one (commits not yet pushed, such as a configuration committed on local
/// `main`, are the user's base), and otherwise as whichever of the two is the nearer
/// ancestor of `tip`; a local `main`; a local `master`.
pub fn default_base_branch(
    repo: &Repository,
    configured: Option<&str>,
    remote: &str,
    tip: Option<Oid>,
) -> Result<String> {
    if let Some(base) = configured.filter(|b| !b.trim().is_empty()) {
        return Ok(base.trim().to_owned());
    }
    let remote_head = format!("refs/remotes/{remote}/HEAD");
    if let Some(tracking) = repo
        .find_reference(&remote_head)
        .ok()
        .and_then(|r| r.symbolic_target().ok().flatten().map(str::to_owned))
    {
        let short = tracking
            .strip_prefix(&format!("refs/remotes/{remote}/"))
            .unwrap_or(&tracking);
        let local = format!("refs/heads/{short}");
        return Ok(
            match (
                resolve_commit(repo, &tracking),
                resolve_commit(repo, &local),
            ) {
                (Ok(remote_oid), Ok(local_oid)) => {
                    if nearer_base(repo, local_oid, remote_oid, tip) {
                        local
                    } else {
                        tracking
                    }
                }
                (Err(_), Ok(_)) => local,
                _ => tracking,
            },
        );
    }
    for name in ["main", "master"] {
        if repo.find_branch(name, BranchType::Local).is_ok() {
            return Ok(format!("refs/heads/{name}"));
        }
    }
    bail!(
        "cannot tell the base branch: `{remote_head}` is not set and there is no `main` or \
         `master` branch; set `hook.base` in .itergate.yml"
    )
}

/// Whether the local branch (`local`) rather than its remote-tracking one (`remote`) is
/// the base: it contains the remote one, or its merge-base with `tip` is the newer.
fn nearer_base(repo: &Repository, local: Oid, remote: Oid, tip: Option<Oid>) -> bool {
    if local == remote
        || with_walker(repo, |w| w.graph_descendant_of(local, remote)).unwrap_or(false)
    {
        return true;
    }
    let Some(tip) = tip else {
        return false;
    };
    match (
        merge_base(repo, tip, local).ok().flatten(),
        merge_base(repo, tip, remote).ok().flatten(),
    ) {
        (Some(l), Some(r)) => {
            l != r && with_walker(repo, |w| w.graph_descendant_of(l, r)).unwrap_or(false)
        }
        (Some(_), None) => true,
        _ => false,
    }
}

/// Where a task that ends at `tip` started: its merge-base with the base branch, or `None`
/// when `tip` is on the base branch (or there is no base to branch from). With the ref
/// name of the base branch when one was found.
pub fn task_start(
    repo: &Repository,
    configured: Option<&str>,
    tip: Oid,
) -> (Option<String>, Option<Oid>) {
    let Ok(branch) = default_base_branch(repo, configured, "origin", Some(tip)) else {
        return (None, None);
    };
    let start = resolve_commit(repo, &branch)
        .ok()
        .and_then(|b| merge_base(repo, tip, b).ok().flatten())
        .filter(|start| *start != tip);
    (Some(branch), start)
}

/// The trailers (`Key: value` lines of the last paragraph) of a commit message, in order.
/// A message without trailers gives an empty list.
pub fn message_trailers(message: &str) -> Result<Vec<(String, String)>> {
    let trailers = git2::message_trailers_strs(message).context("parsing commit trailers")?;
    Ok(trailers
        .iter()
        .map(|(key, value)| (key.to_owned(), value.to_owned()))
        .collect())
}

/// The trailers of a commit's message.
pub fn commit_trailers(repo: &Repository, commit: Oid) -> Result<Vec<(String, String)>> {
    let commit = repo
        .find_commit(commit)
        .with_context(|| format!("reading commit {commit}"))?;
    let message = String::from_utf8_lossy(commit.message_bytes());
    message_trailers(&message)
}

pub use crate::model::{AddedLine, ChangedLines, RemovedLine};

/// The lines `commit` adds (and removes) relative to `base` (usually the merge-base or the
/// parent); with no base, relative to an empty tree. Renames are followed so that moving a file does not
/// count all its lines as new.
pub fn added_lines(repo: &Repository, base: Option<Oid>, commit: Oid) -> Result<ChangedLines> {
    let new_tree = repo
        .find_commit(commit)
        .and_then(|c| c.tree())
        .with_context(|| format!("reading the tree of {commit}"))?;
    let old_tree = match base {
        Some(base) => Some(
            repo.find_commit(base)
                .and_then(|c| c.tree())
                .with_context(|| format!("reading the tree of {base}"))?,
        ),
        None => None,
    };
    let mut options = DiffOptions::new();
    options.context_lines(0).ignore_submodules(true);
    let mut diff = repo
        .diff_tree_to_tree(old_tree.as_ref(), Some(&new_tree), Some(&mut options))
        .with_context(|| format!("diffing {commit} against its base"))?;
    diff.find_similar(Some(DiffFindOptions::new().renames(true)))
        .context("detecting renames")?;
    collect_added_lines(&diff)
}

fn collect_added_lines(diff: &Diff<'_>) -> Result<ChangedLines> {
    let mut changed = ChangedLines::default();
    diff.foreach(
        &mut |_, _| true,
        None,
        None,
        Some(&mut |delta, _hunk, line| {
            let text = || {
                let text = String::from_utf8_lossy(line.content());
                text.trim_end_matches(['\n', '\r']).to_owned()
            };
            match line.origin() {
                '+' => {
                    if let (Some(path), Some(number)) = (delta.new_file().path(), line.new_lineno())
                    {
                        changed
                            .files
                            .entry(tree_path(path))
                            .or_default()
                            .push(AddedLine {
                                line: number,
                                text: text(),
                            });
                    }
                }
                '-' => {
                    let path = delta.new_file().path().or(delta.old_file().path());
                    if let (Some(path), Some(number)) = (path, line.old_lineno()) {
                        changed
                            .removed
                            .entry(tree_path(path))
                            .or_default()
                            .push(RemovedLine {
                                line: number,
                                text: text(),
                            });
                    }
                }
                _ => {}
            }
            true
        }),
    )
    .context("reading the diff")?;
    Ok(changed)
}

fn tree_path(path: &Path) -> String {
    let text = path.to_string_lossy();
    if std::path::MAIN_SEPARATOR == '/' {
        text.into_owned()
    } else {
        text.replace(std::path::MAIN_SEPARATOR, "/")
    }
}

/// The files `new` changed relative to `old` (or its first parent), with added and deleted
/// lines: the first `max_files`, and how many there are. `None` when nothing changed or a
/// commit is not in this repository.
pub fn change_stat(
    repo: &Repository,
    old: Option<Oid>,
    new: Oid,
    max_files: usize,
) -> Option<crate::model::Changes> {
    let commit = repo.find_commit(new).ok()?;
    let old_tree = match old {
        Some(old) => Some(repo.find_commit(old).ok()?.tree().ok()?),
        None => commit.parent(0).ok().and_then(|p| p.tree().ok()),
    };
    let diff = repo
        .diff_tree_to_tree(old_tree.as_ref(), Some(&commit.tree().ok()?), None)
        .ok()?;
    let files_changed = diff.stats().ok()?.files_changed();
    let mut files = Vec::new();
    for index in 0..diff.deltas().len().min(max_files) {
        let delta = diff.get_delta(index)?;
        let path = delta
            .new_file()
            .path()
            .or_else(|| delta.old_file().path())?;
        let (added, deleted) = match git2::Patch::from_diff(&diff, index) {
            Ok(Some(patch)) => patch
                .line_stats()
                .map(|(_, added, deleted)| (added, deleted))
                .unwrap_or((0, 0)),
            _ => (0, 0), // binary
        };
        files.push(crate::model::FileChange {
            path: tree_path(path),
            added,
            deleted,
        });
    }
    (!files.is_empty()).then_some(crate::model::Changes {
        files,
        files_changed,
    })
}

/// The paths the commits between `from` and `to` touched (both sides of a rename), sorted,
/// each once.
pub fn changed_paths(repo: &Repository, from: Oid, to: Oid) -> Result<Vec<String>> {
    let tree = |oid: Oid| repo.find_commit(oid).and_then(|c| c.tree());
    let diff = repo.diff_tree_to_tree(Some(&tree(from)?), Some(&tree(to)?), None)?;
    let mut paths: Vec<String> = diff
        .deltas()
        .flat_map(|d| [d.old_file().path(), d.new_file().path()])
        .flatten()
        .filter_map(|p| p.to_str().map(str::to_string))
        .collect();
    paths.sort();
    paths.dedup();
    Ok(paths)
}

/// A `git` command for the repository at `dir`, with the repository-locating environment
/// of a surrounding hook removed so that it acts on `dir` and nothing else, and hooks off:
/// whatever holds the work tree can arm a hook (a `reference-transaction` hook that refuses
/// itergate's own updates), and no command itergate runs gives it a turn.
pub fn git_command(dir: &Path) -> Command {
    let mut command = Command::new("git");
    command.arg("-C").arg(dir);
    command.args(["-c", "core.hooksPath=/dev/null"]);
    for var in REPOSITORY_ENV_VARS {
        command.env_remove(var);
    }
    command
}

/// Runs a git command to completion; a non-zero exit is an error carrying git's stderr.
pub fn run_git(command: &mut Command) -> Result<String> {
    let output = command
        .output()
        .with_context(|| format!("running {command:?} (is git installed and on PATH?)"))?;
    if !output.status.success() {
        return Err(anyhow!(
            "{command:?} failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// The configuration a judged checkout is made with, as `-c` arguments: no hooks, no
/// global attributes file, no file-system monitor, and every filter driver the
/// configuration defines turned off but Git LFS's own, so the files are the blobs as
/// committed (a `filter.x.smudge` added to `.git/config` would rewrite a test on checkout).
pub fn clean_checkout_config(repo: &Repository) -> Vec<String> {
    let mut args: Vec<String> = [
        "core.hooksPath=/dev/null",
        "core.attributesFile=/dev/null",
        "core.fsmonitor=false",
    ]
    .iter()
    .flat_map(|setting| ["-c".to_string(), (*setting).to_string()])
    .collect();
    for name in foreign_filters(repo) {
        for key in ["smudge", "clean", "process"] {
            args.push("-c".into());
            args.push(format!("filter.{name}.{key}="));
        }
        args.push("-c".into());
        args.push(format!("filter.{name}.required=false"));
    }
    args
}

/// The filter drivers the repository's configuration defines, except Git LFS's own
/// (`git-lfs smudge -- %f`, `git-lfs filter-process`, as `git lfs install` writes them).
pub fn foreign_filters(repo: &Repository) -> Vec<String> {
    let Ok(config) = repo.config().and_then(|mut c| c.snapshot()) else {
        return Vec::new();
    };
    let mut drivers: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    if let Ok(mut entries) = config.entries(Some(r"^filter\..*")) {
        while let Some(Ok(entry)) = entries.next() {
            let (Ok(name), Ok(value)) = (entry.name(), entry.value()) else {
                continue;
            };
            let Some(rest) = name.strip_prefix("filter.") else {
                continue;
            };
            let Some((driver, key)) = rest.rsplit_once('.') else {
                continue;
            };
            drivers
                .entry(driver.to_string())
                .or_default()
                .push((key.to_string(), value.to_string()));
        }
    }
    let lfs = |settings: &[(String, String)]| {
        settings.iter().all(|(key, value)| match key.as_str() {
            "smudge" => value == "git-lfs smudge -- %f",
            "clean" => value == "git-lfs clean -- %f",
            "process" => value == "git-lfs filter-process",
            "required" => true,
            _ => false,
        })
    };
    drivers
        .into_iter()
        .filter(|(name, settings)| !(name == "lfs" && lfs(settings)))
        .map(|(name, _)| name)
        .collect()
}

/// How long adding or pruning a scratch worktree waits for another itergate process's.
const WORKTREE_LOCK_WAIT: Duration = Duration::from_secs(60);

/// A linked worktree with one commit checked out (detached), in the system temporary
/// directory. Dropping it removes the directory and prunes its administrative entry; the
/// user's work tree, index, branches and HEAD are never touched.
#[derive(Debug)]
pub struct TempWorktree {
    path: PathBuf,
    common_dir: PathBuf,
    name: String,
}

impl TempWorktree {
    /// Checks `commit` out into a new temporary worktree of `repo`.
    pub fn create(repo: &Repository, commit: Oid) -> Result<TempWorktree> {
        repo.find_commit(commit)
            .with_context(|| format!("{commit} is not a commit of this repository"))?;
        let path = unique_temp_path();
        let mut add = match repo.workdir() {
            Some(workdir) => git_command(workdir),
            None => git_command(repo.path()),
        };
        // The user's hooks must not see our scratch checkouts.
        add.args(clean_checkout_config(repo))
            .args(["worktree", "add"])
            .args(["--detach", "--no-checkout", "--quiet"])
            .arg(&path)
            .arg(commit.to_string());
        // `git worktree add` reads every other worktree's metadata, and fails on one that
        // another process is half-way through adding or pruning: take turns, for the
        // metadata only; the checkout below can take a while and runs unlocked.
        lock::with_lock(repo.commondir(), "worktrees", WORKTREE_LOCK_WAIT, || {
            prune_abandoned(repo);
            run_git(&mut add)
        })
        .with_context(|| format!("adding a worktree for {commit}"))?;
        let worktree = TempWorktree {
            name: worktree_name(&path)?,
            path,
            common_dir: repo.commondir().to_path_buf(),
        };
        let mut checkout = git_command(&worktree.path);
        checkout
            .args(clean_checkout_config(repo))
            .args(["reset", "--hard", "--quiet"]);
        run_git(&mut checkout).with_context(|| format!("checking out {commit} in a worktree"))?;
        Ok(worktree)
    }

    /// The root of the checkout.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Deletes the checkout, then prunes its administrative entry (in turn with other
    /// itergate processes, like adding one).
    fn remove(&self) -> Result<()> {
        let deleted = match std::fs::remove_dir_all(&self.path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(e).with_context(|| format!("deleting {}", self.path.display()))
            }
            _ => Ok(()),
        };
        let repo = Repository::open(&self.common_dir)
            .with_context(|| format!("opening {}", self.common_dir.display()))?;
        let worktree = repo
            .find_worktree(&self.name)
            .with_context(|| format!("finding worktree `{}`", self.name))?;
        let mut prune = git2::WorktreePruneOptions::new();
        prune.valid(true).locked(true).working_tree(false);
        lock::with_lock(&self.common_dir, "worktrees", WORKTREE_LOCK_WAIT, || {
            worktree.prune(Some(&mut prune))
        })
        .with_context(|| format!("pruning worktree `{}`", self.name))?;
        deleted
    }
}

impl Drop for TempWorktree {
    fn drop(&mut self) {
        if let Err(error) = self.remove() {
            tracing::warn!(path = %self.path.display(), error = %format!("{error:#}"), "could not remove a temporary worktree");
        }
    }
}

/// Removes scratch worktrees that a killed itergate left behind: ours by name
/// (`itergate-wt-<pid>-...`), and their process gone. Best effort: a worktree that cannot
/// be removed is left for the next run.
fn prune_abandoned(repo: &Repository) {
    let Ok(names) = repo.worktrees() else { return };
    for name in names.iter().flatten().flatten() {
        let Ok(worktree) = repo.find_worktree(name) else {
            continue;
        };
        let path = worktree.path().to_path_buf();
        let Some(pid) = scratch_owner(&path) else {
            continue;
        };
        if pid == std::process::id() || process_alive(pid) {
            continue;
        }
        let _ = std::fs::remove_dir_all(&path);
        let mut prune = git2::WorktreePruneOptions::new();
        prune.valid(true).locked(true).working_tree(false);
        match worktree.prune(Some(&mut prune)) {
            Ok(()) => {
                tracing::info!(path = %path.display(), pid, "pruned an abandoned scratch worktree")
            }
            Err(error) => {
                tracing::warn!(path = %path.display(), %error, "could not prune an abandoned scratch worktree")
            }
        }
    }
}

/// The process that created a scratch worktree, from its name.
fn scratch_owner(path: &Path) -> Option<u32> {
    let name = path.file_name()?.to_str()?;
    name.strip_prefix("itergate-wt-")?
        .split('-')
        .next()?
        .parse()
        .ok()
}

fn process_alive(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    // Signal 0 checks for existence; EPERM means it exists under another user.
    let result = unsafe { libc::kill(pid, 0) };
    result == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

fn worktree_name(path: &Path) -> Result<String> {
    let repo = Repository::open(path)
        .with_context(|| format!("opening the new worktree at {}", path.display()))?;
    let worktree = git2::Worktree::open_from_repository(&repo)
        .with_context(|| format!("reading the worktree at {}", path.display()))?;
    worktree
        .name()
        .ok()
        .flatten()
        .map(str::to_owned)
        .ok_or_else(|| anyhow!("the worktree at {} has no name", path.display()))
}

fn unique_temp_path() -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    std::env::temp_dir().join(format!(
        "itergate-wt-{}-{count}-{nanos:08x}",
        std::process::id()
    ))
}

/// Whether `ancestor` is `commit` or one of its ancestors.
pub fn is_ancestor(repo: &Repository, ancestor: Oid, commit: Oid) -> Result<bool> {
    if ancestor == commit {
        return Ok(true);
    }
    let key = (repo.path().to_path_buf(), ancestor, commit);
    if let Some(known) = WALKED.with(|w| w.borrow().ancestry.get(&key).copied()) {
        return Ok(known);
    }
    // Usually a few first parents away (a push of new commits on the last one pushed):
    // found there without libgit2's walk, which reads the whole history down to a common
    // commit.
    let found = first_parent_within(repo, commit, ancestor, FIRST_PARENT_STEPS)
        || with_walker(repo, |walker| walker.graph_descendant_of(commit, ancestor))
            .context("walking the history")?;
    if found {
        WALKED.with(|w| w.borrow_mut().ancestry.insert(key, found));
    }
    Ok(found)
}

/// How many first parents [`is_ancestor`] looks through before it walks the history.
const FIRST_PARENT_STEPS: usize = 64;

/// Whether `ancestor` is among the first `steps` first parents of `commit`.
fn first_parent_within(repo: &Repository, commit: Oid, ancestor: Oid, steps: usize) -> bool {
    with_walker(repo, |walker| {
        let Ok(odb) = walker.odb() else {
            return false;
        };
        let mut at = commit;
        for _ in 0..steps {
            let Ok(Some(parent)) = commit_header(&odb, at, b"parent ") else {
                return false;
            };
            if parent == ancestor {
                return true;
            }
            at = parent;
        }
        false
    })
}
