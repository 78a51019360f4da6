//! A scratch worktree tests its own code. Checks of a commit (HEAD, the base, the start, a
//! trusted tree) run in a temporary checkout of exactly that commit, and everything
//! that could lead them back to the user's work tree is pointed at the checkout instead:
//!
//! - Cargo builds into a target directory of its own (`CARGO_TARGET_DIR` is common), the
//!   base's and the start's tests' apart from other commits', as they may build at once;
//! - Python: an editable install (`pip install -e .`: a `.pth` path entry, or an import
//!   finder) maps the package to the work tree's sources; the checkout's import roots
//!   (`src/` and its root) go first on `PYTHONPATH`, ahead of both; mypy keeps its
//!   incremental cache in the state directory (`mypy-cache/<repository>-<head|base>`), which
//!   it validates by each file's hash, so a checkout made afresh is checked warm;
//! - Node: the work tree's `node_modules` is shared when the dependencies are the same, but
//!   a workspace package linked there (`node_modules/b -> ../packages/b`) is linked to the
//!   checkout's copy of it;
//! - Go's `replace` directives and Cargo's path dependencies are relative: they resolve
//!   inside the checkout already.
//!
//! Then the self-check ([`Scratch::verify`]): a Python check records which of the work
//! tree's files it imported (a `sitecustomize` on `PYTHONPATH`, chained to the
//! environment's own), and a Node one which it loaded through Node's own loader (an
//! `--import` added to `NODE_OPTIONS`: `require` and `import` resolutions; vitest and jest
//! resolve their sources themselves); a file the checkout has too means the check ran the
//! work tree's code, and the observation is refused with both paths, never recorded as the
//! commit's.

use std::path::{Path, PathBuf};
use std::time::Instant;

use git2::Repository;

use crate::signals::checks::Progress;
use crate::signals::detect;

use super::Failure;

/// A scratch checkout made ready for its checks.
pub struct Scratch {
    root: PathBuf,
    workdir: PathBuf,
    label: String,
    /// What the checks get on top of their environment.
    pub env: Vec<(String, String)>,
    /// Where Python checks write the work tree's files they imported.
    import_log: Option<PathBuf>,
}

/// Gives the scratch checkout at `root` of `repo` what its checks need, pointed at itself.
pub fn prepare(
    repo: &Repository,
    root: &Path,
    label: Option<&str>,
    progress: Progress,
    install_node: bool,
) -> Result<Scratch, Failure> {
    let label = label.unwrap_or("the commit").to_string();
    // The base's checkout, and the start's tests on the commit's code, may build while
    // HEAD's does (`local::observe_with_base`, `local::beside_the_starts_tests`): each has
    // a target directory of its own, kept from one run to the next so that it is warm,
    // since cargo would take one checkout's fresh artifacts (its dep-info naming files that
    // still exist) for the other's.
    let target_dir = if label.starts_with("base ") {
        "scratch-target-base"
    } else if label == super::trusted::LABEL {
        "scratch-target-trusted"
    } else {
        "scratch-target"
    };
    let target = repo.path().join("itergate").join(target_dir);
    let mut env = vec![(
        "CARGO_TARGET_DIR".to_string(),
        target.to_string_lossy().into_owned(),
    )];
    let Some(workdir) = repo.workdir().map(Path::to_path_buf) else {
        return Ok(Scratch {
            root: root.to_path_buf(),
            workdir: root.to_path_buf(),
            label,
            env,
            import_log: None,
        });
    };
    node::prepare(root, &workdir, &label, progress, install_node)?;
    let guards = repo.commondir().join("itergate").join("python-guard");
    std::fs::create_dir_all(&guards)
        .map_err(|e| anyhow::anyhow!("creating {}: {e}", guards.display()))?;
    let name = root
        .file_name()
        .map_or_else(|| "scratch".into(), |n| n.to_string_lossy().into_owned());
    let log = guards.join(format!("{name}.imports"));
    let _ = std::fs::remove_file(&log);
    let python = python::is_project(root);
    if python {
        python::prepare(root, &guards, &mut env)?;
        let chosen = std::env::var_os("MYPY_CACHE_DIR").is_some();
        if let Some(dir) = (!chosen)
            .then(|| crate::state_dir::create("mypy-cache").ok())
            .flatten()
        {
            let name = crate::state_dir::repository_name(repo.commondir());
            let side = if label.starts_with("base ") {
                "base"
            } else {
                "head"
            };
            let cache = dir.join(format!("{name}-{side}"));
            env.push((
                "MYPY_CACHE_DIR".into(),
                cache.to_string_lossy().into_owned(),
            ));
        }
    }
    let node = node::guard(root, &guards, &mut env)?;
    let import_log = (python || node).then(|| {
        env.push((
            "ITERGATE_IMPORT_LOG".to_string(),
            log.to_string_lossy().into_owned(),
        ));
        env.push((
            "ITERGATE_WORK_TREE".to_string(),
            workdir.to_string_lossy().into_owned(),
        ));
        log
    });
    Ok(Scratch {
        root: root.to_path_buf(),
        workdir,
        label,
        env,
        import_log,
    })
}

impl Scratch {
    /// The self-check, after the checks ran: refuses an observation made with the work
    /// tree's code.
    pub fn verify(&self) -> Result<(), Failure> {
        let Some(log) = &self.import_log else {
            return Ok(());
        };
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let _ = std::fs::remove_file(log);
        let mut foreign: Vec<&str> = text
            .lines()
            .filter(|rel| !rel.is_empty() && self.root.join(rel).is_file())
            .collect();
        foreign.sort_unstable();
        foreign.dedup();
        let Some(first) = foreign.first() else {
            return Ok(());
        };
        let cause = if first.ends_with(".py") {
            "Something outside the checkout put the work tree first on Python's path (a `PYTHONPATH`, a `.pth` file, a `sys.path` edit in a conftest)"
        } else {
            "Something outside the checkout resolved a module to the work tree (an absolute path, `NODE_PATH`, a link in `node_modules` to the work tree's copy)"
        };
        let in_all = match foreign.len() {
            1 => String::new(),
            n => format!(" ({} in all)", crate::model::counted(n, "file")),
        };
        Err(Failure::Check(format!(
            "the checks of {} ran the work tree's code, not that commit's: `{first}` was imported from {} instead of {}{in_all}. Its results would describe your work tree, so nothing was recorded. {cause}; remove it, or have the check run from the checkout's own root.",
            self.label,
            self.workdir.join(first).display(),
            self.root.join(first).display(),
        )))
    }
}

mod python {
    use super::*;

    /// The files that make a directory a Python project.
    const MARKERS: [&str; 5] = [
        "pyproject.toml",
        "setup.py",
        "setup.cfg",
        "pytest.ini",
        "tox.ini",
    ];

    /// Records, at exit, the imported modules' files that lie under the work tree, then
    /// hands over to the environment's own `sitecustomize`, if it has one.
    const GUARD: &str = r#"# Written by itergate: a check in a scratch worktree must import that worktree's code.
import atexit, os, sys

def _itergate_record_imports():
    log, workdir = os.environ.get("ITERGATE_IMPORT_LOG"), os.environ.get("ITERGATE_WORK_TREE")
    if not log or not workdir:
        return
    prefix = os.path.realpath(workdir) + os.sep
    seen = set()
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if not isinstance(path, str):
            continue
        real = os.path.realpath(path)
        if real.startswith(prefix):
            seen.add(real[len(prefix):])
    if seen:
        with open(log, "a", encoding="utf-8") as out:
            out.write("\n".join(sorted(seen)) + "\n")

atexit.register(_itergate_record_imports)

_itergate_here = os.path.dirname(os.path.abspath(__file__))
_itergate_self = sys.modules.pop("sitecustomize", None)
_itergate_path = list(sys.path)
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _itergate_here]
try:
    import sitecustomize  # the environment's own, if any
except ImportError:
    pass
finally:
    sys.path[:] = _itergate_path
    if _itergate_self is not None:
        sys.modules.setdefault("sitecustomize", _itergate_self)
"#;

    pub fn is_project(root: &Path) -> bool {
        MARKERS.iter().any(|m| root.join(m).is_file())
    }

    /// Puts the checkout's import roots and the guard (written to `guards`) first on
    /// `PYTHONPATH`.
    pub fn prepare(
        root: &Path,
        guards: &Path,
        env: &mut Vec<(String, String)>,
    ) -> Result<(), Failure> {
        write_guard(&guards.join("sitecustomize.py"), GUARD)?;
        let mut paths: Vec<PathBuf> = import_roots(root);
        paths.push(guards.to_path_buf());
        if let Some(inherited) = std::env::var_os("PYTHONPATH") {
            paths.extend(std::env::split_paths(&inherited));
        }
        let joined = std::env::join_paths(paths)
            .map_err(|e| anyhow::anyhow!("a path cannot go on PYTHONPATH: {e}"))?;
        env.push((
            "PYTHONPATH".to_string(),
            joined.to_string_lossy().into_owned(),
        ));
        Ok(())
    }

    /// Where the checkout's packages are imported from: `src/` when it holds Python code
    /// (the src layout), and the root.
    pub fn import_roots(root: &Path) -> Vec<PathBuf> {
        let src = root.join("src");
        let holds_python = std::fs::read_dir(&src).is_ok_and(|entries| {
            entries.flatten().any(|e| {
                let path = e.path();
                path.extension().is_some_and(|x| x == "py")
                    || path.join("__init__.py").is_file()
                    || (path.is_dir()
                        && std::fs::read_dir(&path).is_ok_and(|inner| {
                            inner
                                .flatten()
                                .any(|f| f.path().extension().is_some_and(|x| x == "py"))
                        }))
            })
        });
        let mut roots = Vec::new();
        if holds_python {
            roots.push(src);
        }
        roots.push(root.to_path_buf());
        roots
    }
}

/// Writes a guard script unless it is there already, as written.
fn write_guard(path: &Path, text: &str) -> Result<(), Failure> {
    if std::fs::read_to_string(path).ok().as_deref() != Some(text) {
        std::fs::write(path, text)
            .map_err(|e| anyhow::anyhow!("writing {}: {e}", path.display()))?;
    }
    Ok(())
}

mod node {
    use super::*;

    /// Loaded first by every Node process of a check (`NODE_OPTIONS=--import=…`): records
    /// the work tree's files that `require` resolves to, and registers [`HOOKS`] for
    /// `import`. Dependencies (under `node_modules`, shared on purpose) are not recorded.
    const GUARD: &str = r#"// Written by itergate: a check in a scratch worktree must load that worktree's code.
import Module, { register } from 'node:module';
import { appendFileSync, realpathSync } from 'node:fs';
import { sep } from 'node:path';

const log = process.env.ITERGATE_IMPORT_LOG;
const work = process.env.ITERGATE_WORK_TREE;
if (log && work) {
  const prefix = realpathSync(work) + sep;
  const skip = [prefix + '.git' + sep];
  const note = (file) => {
    let real;
    try { real = realpathSync(file); } catch { return; }
    if (real.startsWith(prefix) && !skip.some((s) => real.startsWith(s))
        && !real.includes(sep + 'node_modules' + sep)) {
      appendFileSync(log, real.slice(prefix.length) + '\n');
    }
  };
  const resolve = Module._resolveFilename;
  Module._resolveFilename = function (...args) {
    const file = resolve.apply(this, args);
    if (typeof file === 'string' && file.includes(sep)) note(file);
    return file;
  };
  register(new URL('./node-hooks.mjs', import.meta.url), { data: { log, prefix, skip } });
}
"#;

    /// Node's `import` resolution hooks (they run on a thread of their own).
    const HOOKS: &str = r#"// Written by itergate: see node-guard.mjs.
import { appendFileSync } from 'node:fs';
import { sep } from 'node:path';
import { fileURLToPath } from 'node:url';

let seen;
export function initialize(data) { seen = data; }
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  if (seen && typeof result.url === 'string' && result.url.startsWith('file:')) {
    const file = fileURLToPath(result.url);
    if (file.startsWith(seen.prefix) && !seen.skip.some((s) => file.startsWith(s))
        && !file.includes(sep + 'node_modules' + sep)) {
      appendFileSync(seen.log, file.slice(seen.prefix.length) + '\n');
    }
  }
  return result;
}
"#;

    /// Adds the guard to `NODE_OPTIONS` for a Node project, when the machine's `node` can
    /// register resolution hooks (20.6 or later); says whether it did.
    pub fn guard(
        scratch: &Path,
        guards: &Path,
        env: &mut Vec<(String, String)>,
    ) -> Result<bool, Failure> {
        if !scratch.join("package.json").is_file() || !hooks_supported() {
            return Ok(false);
        }
        let guard = guards.join("node-guard.mjs");
        write_guard(&guard, GUARD)?;
        write_guard(&guards.join("node-hooks.mjs"), HOOKS)?;
        let url = file_url(&guard);
        let inherited = std::env::var("NODE_OPTIONS").unwrap_or_default();
        let options = format!("{inherited} --import={url}").trim().to_string();
        env.push(("NODE_OPTIONS".to_string(), options));
        Ok(true)
    }

    /// `file://` and the path, percent-encoded but for the characters URLs allow as they are.
    fn file_url(path: &Path) -> String {
        use std::os::unix::ffi::OsStrExt;
        let mut url = String::from("file://");
        for &byte in path.as_os_str().as_bytes() {
            match byte {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'_' | b'.' | b'~' => {
                    url.push(char::from(byte));
                }
                _ => url.push_str(&format!("%{byte:02X}")),
            }
        }
        url
    }

    /// `node --version` is 20.6 or later (`module.register`).
    fn hooks_supported() -> bool {
        static SUPPORTED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *SUPPORTED.get_or_init(|| {
            let Ok(out) = std::process::Command::new("node").arg("--version").output() else {
                return false;
            };
            let text = String::from_utf8_lossy(&out.stdout);
            let mut parts = text.trim().trim_start_matches('v').split('.');
            let major: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
            let minor: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
            (major, minor) >= (20, 6)
        })
    }
    /// The package.json keys that declare dependencies.
    const NODE_DEPENDENCY_KEYS: [&str; 4] = [
        "dependencies",
        "devDependencies",
        "optionalDependencies",
        "peerDependencies",
    ];

    /// The lockfiles that pin a Node project's dependencies.
    const NODE_LOCKFILES: [&str; 5] = [
        "package-lock.json",
        "pnpm-lock.yaml",
        "yarn.lock",
        "bun.lock",
        "bun.lockb",
    ];

    /// Gives a scratch worktree the dependencies its checks need, as the work tree has them:
    /// a Node project whose lockfile equals the work tree's (or, with no lockfile on either
    /// side, whose package.json declares the same dependencies) shares its `node_modules` (a
    /// link); otherwise its dependencies are installed the way its users do (`npm ci`,
    /// `pnpm install --frozen-lockfile`, …). Cargo shares a target directory of its own
    /// already, and Go's module cache is per user.
    pub fn prepare(
        scratch: &Path,
        workdir: &Path,
        label: &str,
        progress: Progress,
        install: bool,
    ) -> Result<(), Failure> {
        if !scratch.join("package.json").is_file() || scratch.join("node_modules").exists() {
            return Ok(());
        }
        let installed = workdir.join("node_modules");
        if !installed.is_dir() {
            return Ok(()); // the work tree has none either: the checks run as they do there
        }
        let lockfile = |root: &Path| {
            NODE_LOCKFILES
                .iter()
                .find(|name| root.join(name).is_file())
                .map(|name| (*name, std::fs::read(root.join(name)).ok()))
        };
        let manifest = |root: &Path| {
            std::fs::read_to_string(root.join("package.json"))
                .ok()
                .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        };
        let scratch_manifest = manifest(scratch);
        let (locked, why) = match (lockfile(scratch), lockfile(workdir)) {
            (Some(a), Some(b)) if a == b => (true, None),
            (Some(_), _) => (true, Some("its lockfile differs from the work tree's")),
            // No lockfile in the commit (none, or the work tree's is not committed): the
            // same declared dependencies are the same install.
            (None, _) => {
                let declared = |m: Option<&serde_json::Value>| {
                    NODE_DEPENDENCY_KEYS
                        .map(|k| m.and_then(|m| m.get(k)).cloned())
                        .to_vec()
                };
                if declared(scratch_manifest.as_ref()) == declared(manifest(workdir).as_ref()) {
                    (false, None)
                } else {
                    (
                        false,
                        Some("it has no lockfile and its package.json declares other dependencies"),
                    )
                }
            }
        };
        // The judge's own environment (`app::clean_env`): the work tree's changed since
        // the task started, so the lockfile's packages are installed here.
        let why = match why {
            None if install && locked => {
                Some("the work tree's node_modules changed since the task started")
            }
            why => why,
        };
        let Some(why) = why else {
            return share(scratch, workdir).map_err(|e| {
            Failure::Check(format!(
                "the scratch worktree of {label} ({}): cannot link the work tree's node_modules: {e}",
                scratch.display()
            ))
        });
        };
        let manager = detect::node_package_manager(scratch, scratch_manifest.as_ref());
        let workspaces = scratch_manifest
            .as_ref()
            .is_some_and(|m| m.get("workspaces").is_some());
        if install && locked && !workspaces {
            // The judge's own, kept by lockfile in the state directory.
            let installed = crate::app::clean_env::node_modules(
                scratch,
                detect::node_install_command(manager),
                progress,
            )
            .map_err(|why| {
                Failure::Check(format!(
                    "the scratch worktree of {label} ({}): {why}",
                    scratch.display()
                ))
            })?;
            return std::os::unix::fs::symlink(&installed, scratch.join("node_modules")).map_err(
                |e| {
                    Failure::Check(format!(
                        "the scratch worktree of {label}: cannot link {}: {e}",
                        installed.display()
                    ))
                },
            );
        }
        let command = if locked {
            detect::node_install_command(manager)
        } else {
            detect::node_unlocked_install_command(manager)
        };
        if progress != Progress::Quiet {
            eprintln!(
            "itergate: {label}: {why}; installing its dependencies in the scratch worktree (`{command}`)"
        );
        }
        let started = Instant::now();
        let output = std::process::Command::new("sh")
            .arg("-c")
            .arg(command)
            .current_dir(scratch)
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| {
                Failure::Check(format!(
                    "the scratch worktree of {label}: cannot start `{command}`: {e}"
                ))
            })?;
        if !output.status.success() {
            let text = String::from_utf8_lossy(&output.stderr);
            let tail: Vec<&str> = text.lines().rev().take(15).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            return Err(Failure::Check(format!(
            "the scratch worktree of {label} ({}): `{command}` failed ({}), so its checks cannot run:\n    {}\nNothing was recorded: fix the lockfile or install the package manager, then run again.",
            scratch.display(),
            output.status,
            tail.join("\n    ")
        )));
        }
        if progress != Progress::Quiet {
            eprintln!(
                "itergate: {label}: dependencies installed in {:.1}s",
                started.elapsed().as_secs_f64()
            );
        }
        Ok(())
    }

    /// Shares the work tree's installed dependencies with the checkout: each `node_modules`
    /// the work tree has next to a `package.json` of the checkout becomes a directory of
    /// links to the work tree's entries, except that a link to a workspace package (one
    /// that resolves into the work tree outside any `node_modules`) points at the
    /// checkout's copy. Without workspace links, the root's `node_modules` is one link.
    fn share(scratch: &Path, workdir: &Path) -> std::io::Result<()> {
        let manifests = package_dirs(scratch);
        let workspace = manifests
            .iter()
            .any(|dir| has_workspace_link(&workdir.join(dir).join("node_modules"), workdir));
        if !workspace {
            return std::os::unix::fs::symlink(
                workdir.join("node_modules"),
                scratch.join("node_modules"),
            );
        }
        for dir in manifests {
            let installed = workdir.join(&dir).join("node_modules");
            let target = scratch.join(&dir).join("node_modules");
            if installed.is_dir() && !target.exists() {
                mirror(&installed, &target, workdir, scratch)?;
            }
        }
        Ok(())
    }

    /// The directories of the checkout (relative) that hold a `package.json`, outside
    /// `node_modules`, at most four levels down.
    fn package_dirs(scratch: &Path) -> Vec<PathBuf> {
        let mut found = Vec::new();
        let mut stack = vec![(PathBuf::new(), 0)];
        while let Some((rel, depth)) = stack.pop() {
            let dir = scratch.join(&rel);
            if dir.join("package.json").is_file() {
                found.push(rel.clone());
            }
            if depth == 4 {
                continue;
            }
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let name = entry.file_name();
                let skip = name == "node_modules" || name.to_string_lossy().starts_with('.');
                if !skip && entry.file_type().is_ok_and(|t| t.is_dir()) {
                    stack.push((rel.join(name), depth + 1));
                }
            }
        }
        found.sort();
        found
    }

    /// Where a workspace link in the work tree points: the package's directory relative to
    /// the work tree, when the link resolves inside it and outside any `node_modules`.
    fn workspace_target(link: &Path, workdir: &Path) -> Option<PathBuf> {
        if !std::fs::symlink_metadata(link).is_ok_and(|m| m.file_type().is_symlink()) {
            return None;
        }
        let real = std::fs::canonicalize(link).ok()?;
        let root = std::fs::canonicalize(workdir).ok()?;
        let rel = real.strip_prefix(&root).ok()?;
        let inside_modules = rel.components().any(|c| c.as_os_str() == "node_modules");
        (!inside_modules).then(|| rel.to_path_buf())
    }

    /// The entries of a `node_modules`, with the entries of its `@scope` directories.
    fn entries(modules: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let Ok(list) = std::fs::read_dir(modules) else {
            return out;
        };
        for entry in list.flatten() {
            let path = entry.path();
            let scoped = entry.file_name().to_string_lossy().starts_with('@')
                && entry.file_type().is_ok_and(|t| t.is_dir());
            if scoped {
                if let Ok(inner) = std::fs::read_dir(&path) {
                    out.extend(inner.flatten().map(|e| e.path()));
                }
            } else {
                out.push(path);
            }
        }
        out
    }

    fn has_workspace_link(modules: &Path, workdir: &Path) -> bool {
        entries(modules)
            .iter()
            .any(|e| workspace_target(e, workdir).is_some())
    }

    fn mirror(
        installed: &Path,
        target: &Path,
        workdir: &Path,
        scratch: &Path,
    ) -> std::io::Result<()> {
        for entry in entries(installed) {
            let Ok(rel) = entry.strip_prefix(installed) else {
                continue;
            };
            let link = target.join(rel);
            if let Some(parent) = link.parent() {
                std::fs::create_dir_all(parent)?;
            }
            let points_to = match workspace_target(&entry, workdir) {
                Some(package) => scratch.join(package),
                None => entry.clone(),
            };
            std::os::unix::fs::symlink(points_to, link)?;
        }
        Ok(())
    }
}
