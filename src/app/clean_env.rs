//! The judge's own environment. When what the checks execute changed since the task's start
//! and nothing committed explains it ([`super::sealed`]), the iteration is VOID, and its
//! checks run again in an environment itergate builds for them, out of the work tree:
//!
//! - Python: a virtual environment in the user's state directory, made by the interpreter
//!   the start's environment was made from, holding the distributions the start's held
//!   (`name==version`, installed from the index with `pip --isolated --no-deps`; the
//!   project's own editable install is the checkout's sources, on `PYTHONPATH` already).
//!   It is fingerprinted when built and used again only while it is unchanged;
//! - Node: the scratch checkout installs `node_modules` from the committed lockfile (`npm
//!   ci`, whose packages are checked against the lockfile's integrity hashes) instead of
//!   sharing the work tree's;
//! - a variable added since the start is unset; a configuration file added above the
//!   repository is out of the scratch checkout's reach already.
//!
//! What it cannot rebuild (a program on `PATH`, the home directory's configuration, a
//! variable whose value at the start is not kept, a distribution installed from a local
//! path) is said, and the iteration goes to a person.

use std::path::{Path, PathBuf};
use std::process::Command;

use git2::{Oid, Repository};
use sha2::{Digest, Sha256};

use crate::signals::checks::Progress;
use crate::signals::environment::{self, Change, Fingerprint};

/// What the checks of an iteration get to run in the judge's environment instead.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CleanEnv {
    /// Variables set on top of the inherited ones (`PATH`, `VIRTUAL_ENV`).
    pub set: Vec<(String, String)>,
    /// Variables removed from the inherited ones.
    pub unset: Vec<String>,
    /// A scratch checkout installs its `node_modules` from its lockfile, never links the
    /// work tree's.
    pub install_node: bool,
    /// What was built, for the finding.
    pub what: String,
}

/// How long a process waits for another building the same environment.
const BUILD_WAIT: std::time::Duration = std::time::Duration::from_secs(600);

/// Distributions that come with a virtual environment, never the project's to install.
const BUNDLED: [&str; 4] = ["pip", "setuptools", "wheel", "distribute"];

/// The node lockfiles an install can be checked against.
const NODE_LOCKFILES: [&str; 6] = [
    "package-lock.json",
    "npm-shrinkwrap.json",
    "pnpm-lock.yaml",
    "yarn.lock",
    "bun.lock",
    "bun.lockb",
];

/// Builds the judge's environment for `changes` (the unexplained ones, against the start's
/// fingerprint `start`) to judge `commit` in; `Err` says why it cannot.
pub fn build(
    root: &Path,
    repo: &Repository,
    commit: Oid,
    start: &Fingerprint,
    changes: &[Change],
    progress: Progress,
) -> Result<CleanEnv, String> {
    let mut clean = CleanEnv::default();
    let mut what = Vec::new();
    let mut python = false;
    let mut programs = Vec::new();
    for change in changes {
        let (kind, place) = change.key().split_once(": ").unwrap_or(("", change.key()));
        match (kind, change) {
            ("variable", Change::Added(_)) => {
                if !clean.unset.iter().any(|v| v == place) {
                    clean.unset.push(place.to_string());
                }
            }
            ("variable", _) => {
                return Err(format!(
                    "the variable `{place}` changed, and its value at the start is not kept"
                ))
            }
            ("python", _) => python = true,
            ("node", _) => clean.install_node = true,
            ("configuration", _) if place.starts_with('~') => {
                return Err(format!(
                    "`{place}` in the home directory changed, and every run reads it"
                ))
            }
            ("configuration", _) => {
                // Above the repository (absolute), or untracked in it: the scratch checkout,
                // in the temporary directory, sees neither unless that is below it.
                let mut dir = Path::new(place).parent();
                if dir
                    .and_then(Path::file_name)
                    .is_some_and(|n| n == ".cargo" || n == ".mvn")
                {
                    dir = dir.and_then(Path::parent);
                }
                let temp = std::env::temp_dir();
                if dir.is_some_and(|d| d.is_absolute() && temp.starts_with(d)) {
                    return Err(format!(
                        "`{place}` changed, and the scratch checkout is below it"
                    ));
                }
                what.push(format!("`{place}` out of the scratch checkout's reach"));
            }
            // Put back only by a virtual environment of its own that has it (below).
            ("program", _) => programs.push(place.to_string()),
            _ => return Err(format!("{change}")),
        }
    }
    if !clean.unset.is_empty() {
        what.push(format!("`{}` unset", clean.unset.join("`, `")));
    }
    if clean.install_node {
        let tree = repo
            .find_commit(commit)
            .and_then(|c| c.tree())
            .map_err(|e| format!("reading the commit: {e}"))?;
        let lockfile = NODE_LOCKFILES
            .into_iter()
            .find(|name| tree.get_path(Path::new(name)).is_ok())
            .ok_or("`node_modules` changed, and the commit has no lockfile to install from")?;
        what.push(format!("`node_modules` installed from {lockfile}"));
    }
    // A program on `PATH` that changed: the judge's virtual environment comes first on
    // `PATH`, and puts back those it has.
    let python = python
        || programs
            .iter()
            .any(|p| p.starts_with("python") || p == "pytest");
    let venv = if python {
        let venv = python_venv(root, start, changes, progress)?;
        what.push(venv.what.clone());
        clean.set = venv.set.clone();
        Some(venv)
    } else {
        None
    };
    if let Some(program) = programs.iter().find(|p| {
        !venv
            .as_ref()
            .is_some_and(|v| v.bin.join(p.as_str()).is_file())
    }) {
        return Err(format!(
            "`{program}` on `PATH` is not the program the task started with, and itergate cannot put it back"
        ));
    }
    clean.what = what.join("; ");
    Ok(clean)
}

/// The judge's own `node_modules` for the scratch checkout at `scratch`: installed with
/// `command` from a copy of its manifest and lockfile in the state directory, kept by their
/// digest, fingerprinted when installed and used again only while unchanged.
pub fn node_modules(scratch: &Path, command: &str, progress: Progress) -> Result<PathBuf, String> {
    let files: Vec<&str> = ["package.json", ".npmrc"]
        .into_iter()
        .chain(NODE_LOCKFILES)
        .filter(|name| scratch.join(name).is_file())
        .collect();
    let mut h = Sha256::new();
    h.update(command.as_bytes());
    for name in &files {
        h.update(name.as_bytes());
        h.update(std::fs::read(scratch.join(name)).map_err(|e| format!("reading {name}: {e}"))?);
    }
    let digest = format!("{:x}", h.finalize());
    let parent = crate::state_dir::create("clean-environments").map_err(|e| format!("{e:#}"))?;
    let name = format!("node-{}", &digest[..16]);
    let dir = parent.join(&name);
    let modules = dir.join("node_modules");
    kept_or_built(
        &parent,
        &name,
        || environment::node_modules_fingerprint(&modules),
        || {
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir)
                .map_err(|e| format!("creating {}: {e}", dir.display()))?;
            for name in &files {
                std::fs::copy(scratch.join(name), dir.join(name))
                    .map_err(|e| format!("copying {name}: {e}"))?;
            }
            if progress != Progress::Quiet {
                eprintln!(
                    "itergate: building node_modules of its own to measure in ({}: `{command}`)",
                    dir.display()
                );
            }
            run(
                Command::new("sh").arg("-c").arg(command).current_dir(&dir),
                &format!("`{command}`"),
            )
            .inspect_err(|_| {
                let _ = std::fs::remove_dir_all(&dir);
            })
        },
    )?;
    Ok(modules)
}

/// How long a judge's environment nobody used is kept: building another removes it.
const UNUSED_FOR: std::time::Duration = std::time::Duration::from_secs(7 * 24 * 3600);

/// The judge's environment `name` in `parent`: used again while its fingerprint is the one
/// kept when it was built (its stamp, `name.json`, touched on each use), else built anew by
/// `build`, one process at a time (the others wait, then find it built). Building one
/// removes the others nobody used for [`UNUSED_FOR`].
fn kept_or_built(
    parent: &Path,
    name: &str,
    fingerprint: impl Fn() -> Fingerprint,
    build: impl FnOnce() -> Result<(), String>,
) -> Result<(), String> {
    crate::lock::with_lock(parent, name, BUILD_WAIT, || {
        let stamp = parent.join(format!("{name}.json"));
        let kept = std::fs::read(&stamp)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<Fingerprint>(&bytes).ok());
        if kept.is_some_and(|kept| kept == fingerprint()) {
            let _ = std::fs::File::options()
                .write(true)
                .open(&stamp)
                .and_then(|f| f.set_modified(std::time::SystemTime::now()));
            return Ok(());
        }
        prune(parent, name, UNUSED_FOR);
        build()?;
        let bytes = serde_json::to_vec(&fingerprint()).map_err(|e| e.to_string())?;
        std::fs::write(&stamp, bytes).map_err(|e| format!("writing {}: {e}", stamp.display()))
    })
}

/// Removes the environments in `parent` other than `keep` whose stamp is older than `age`.
fn prune(parent: &Path, keep: &str, age: std::time::Duration) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(name) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".json"))
        else {
            continue;
        };
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|elapsed| elapsed > age);
        if name != keep && old {
            let _ = std::fs::remove_dir_all(parent.join(name));
            let _ = std::fs::remove_file(&path);
        }
    }
}

/// The Python part of a clean environment.
struct Venv {
    set: Vec<(String, String)>,
    what: String,
    /// Its programs, first on `PATH`.
    bin: PathBuf,
}

/// The start's virtual environment as its fingerprint keeps it: where it is (as shown), the
/// interpreter it was made from, whether it sees the system's packages, and its
/// distributions.
#[derive(Debug, PartialEq, Eq)]
struct StartVenv {
    shown: String,
    distributions: Vec<(String, String)>,
}

/// The virtual environments of a fingerprint, with their distributions.
fn start_venvs(start: &Fingerprint) -> Vec<StartVenv> {
    let mut venvs: Vec<StartVenv> = start
        .entries
        .keys()
        .filter_map(|key| key.strip_prefix("python: "))
        .filter_map(|place| place.strip_suffix("/pyvenv.cfg"))
        .map(|shown| StartVenv {
            shown: shown.to_string(),
            distributions: Vec::new(),
        })
        .collect();
    for key in start.entries.keys() {
        let Some(place) = key.strip_prefix("python: ") else {
            continue;
        };
        let Some(venv) = venvs
            .iter_mut()
            .find(|v| place.starts_with(&format!("{}/", v.shown)))
        else {
            continue;
        };
        let name = place.rsplit('/').next().unwrap_or(place);
        if !place.contains("/site-packages/") {
            continue;
        }
        if let Some(dist) = distribution(name) {
            venv.distributions.push(dist);
        }
    }
    venvs
}

/// `name-version.dist-info` (or `.egg-info`) → (name, version).
fn distribution(entry: &str) -> Option<(String, String)> {
    let stem = entry
        .strip_suffix(".dist-info")
        .or_else(|| entry.strip_suffix(".egg-info"))?;
    let (name, version) = stem.split_once('-')?;
    // An egg-info's version may carry `-py3.11`.
    let version = version.split("-py").next().unwrap_or(version);
    (!name.is_empty() && !version.is_empty()).then(|| (name.to_string(), version.to_string()))
}

/// Builds (or finds, unchanged) the judge's virtual environment for the one the changes
/// touched.
fn python_venv(
    root: &Path,
    start: &Fingerprint,
    changes: &[Change],
    progress: Progress,
) -> Result<Venv, String> {
    let venvs = start_venvs(start);
    let touched: Vec<&StartVenv> = venvs
        .iter()
        .filter(|v| {
            changes.iter().any(|c| {
                c.key()
                    .strip_prefix("python: ")
                    .is_some_and(|p| p.starts_with(&format!("{}/", v.shown)))
            })
        })
        .collect();
    let start_venv = match (touched.as_slice(), venvs.as_slice()) {
        ([one], _) => *one,
        // Only an entry point named (its distribution's directory changed too, unless the
        // fingerprint saw only its entry points): the one environment there is.
        ([], [one]) => one,
        ([], []) => return Err("no virtual environment was there at the start to make anew".into()),
        ([], _) => {
            return Err("a Python entry point changed in an environment it cannot tell".into())
        }
        _ => return Err("more than one virtual environment changed".into()),
    };
    let shown = &start_venv.shown;
    if changes
        .iter()
        .any(|c| c.key() == format!("python: {shown}/pyvenv.cfg"))
    {
        return Err(format!("`{shown}/pyvenv.cfg` changed"));
    }
    let venv = root.join(shown); // an absolute `shown` stays as it is
    let config = std::fs::read_to_string(venv.join("pyvenv.cfg"))
        .map_err(|e| format!("reading {}/pyvenv.cfg: {e}", venv.display()))?;
    let value = |key: &str| {
        config.lines().find_map(|line| {
            let (k, v) = line.split_once('=')?;
            (k.trim() == key).then(|| v.trim().to_string())
        })
    };
    let home = value("home").ok_or_else(|| format!("{shown}/pyvenv.cfg names no `home`"))?;
    let system = value("include-system-site-packages").is_some_and(|v| v == "true");
    let base = ["python3", "python"]
        .iter()
        .map(|p| Path::new(&home).join(p))
        .find(|p| p.is_file())
        .ok_or_else(|| format!("the interpreter `{shown}` was made from ({home}) is gone"))?;
    let mut wanted: Vec<(String, String)> = start_venv
        .distributions
        .iter()
        .filter(|(name, _)| !BUNDLED.contains(&name.to_lowercase().as_str()))
        .cloned()
        .collect();
    // The project itself, installed editable from the work tree: its code is the
    // checkout's, which goes first on `PYTHONPATH` in the scratch checkout.
    wanted.retain(|(name, version)| !is_local(&venv, name, version, root));
    wanted.sort();
    let digest = {
        let mut h = Sha256::new();
        h.update(base.to_string_lossy().as_bytes());
        h.update([u8::from(system)]);
        for (name, version) in &wanted {
            h.update(format!("{name}=={version}\n").as_bytes());
        }
        format!("{:x}", h.finalize())
    };
    let parent = crate::state_dir::create("clean-environments").map_err(|e| format!("{e:#}"))?;
    let name = format!("python-{}", &digest[..16]);
    let dir = parent.join(&name);
    kept_or_built(
        &parent,
        &name,
        || environment::venv_fingerprint(&dir),
        || make_venv(&base, system, &wanted, &dir, progress),
    )?;
    let path = std::env::var("PATH").unwrap_or_default();
    let own_bin = venv.join("bin");
    let kept_path: Vec<PathBuf> = std::env::split_paths(&path)
        .filter(|p| *p != own_bin)
        .collect();
    let path = std::env::join_paths(std::iter::once(dir.join("bin")).chain(kept_path))
        .map_err(|e| e.to_string())?;
    let mut set = vec![
        ("PATH".to_string(), path.to_string_lossy().into_owned()),
        (
            "VIRTUAL_ENV".to_string(),
            dir.to_string_lossy().into_owned(),
        ),
    ];
    // The user site: left out when the start had none in it, else it must be unchanged.
    let user_site = |key: &str| key.contains("/.local/lib/python");
    if !start.entries.keys().any(|k| user_site(k)) {
        set.push(("PYTHONNOUSERSITE".to_string(), "1".to_string()));
    } else if changes.iter().any(|c| user_site(c.key())) {
        return Err("the user site (`~/.local/lib/python…`) changed".into());
    }
    let what = format!(
        "a virtual environment made by {} with the {} of `{shown}` at the start{}",
        base.display(),
        crate::model::counted(wanted.len(), "distribution"),
        if system {
            " and the system's packages"
        } else {
            ""
        }
    );
    Ok(Venv {
        set,
        what,
        bin: dir.join("bin"),
    })
}

/// Whether the distribution was installed from a path in the work tree (the project's own
/// editable install), as its `direct_url.json` says.
fn is_local(venv: &Path, name: &str, version: &str, root: &Path) -> bool {
    let Some(site) = site_packages(venv) else {
        return false;
    };
    let Ok(text) = std::fs::read_to_string(
        site.join(format!("{name}-{version}.dist-info"))
            .join("direct_url.json"),
    ) else {
        return false;
    };
    let url: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    let path = url
        .get("url")
        .and_then(|u| u.as_str())
        .and_then(|u| u.strip_prefix("file://"))
        .map(PathBuf::from);
    path.is_some_and(|p| p.starts_with(root))
}

fn site_packages(venv: &Path) -> Option<PathBuf> {
    std::fs::read_dir(venv.join("lib"))
        .ok()?
        .flatten()
        .map(|e| e.path().join("site-packages"))
        .find(|p| p.is_dir())
}

/// Makes the virtual environment at `dir` anew.
fn make_venv(
    base: &Path,
    system: bool,
    wanted: &[(String, String)],
    dir: &Path,
    progress: Progress,
) -> Result<(), String> {
    let _ = std::fs::remove_dir_all(dir);
    if progress != Progress::Quiet {
        eprintln!(
            "itergate: building an environment of its own to measure in ({}, {})",
            dir.display(),
            crate::model::counted(wanted.len(), "distribution")
        );
    }
    let mut venv = Command::new(base);
    venv.args(["-m", "venv"]);
    if system {
        venv.arg("--system-site-packages");
    }
    if wanted.is_empty() {
        venv.arg("--without-pip");
    }
    run(venv.arg(dir), "making a virtual environment")?;
    if wanted.is_empty() {
        return Ok(());
    }
    let mut install = Command::new(dir.join("bin/python"));
    install
        .args(["-m", "pip", "install", "--isolated", "--no-deps", "--quiet"])
        .arg("--disable-pip-version-check")
        .args(
            wanted
                .iter()
                .map(|(name, version)| format!("{name}=={version}")),
        );
    run(&mut install, "installing the start's distributions").inspect_err(|_| {
        let _ = std::fs::remove_dir_all(dir);
    })
}

fn run(command: &mut Command, doing: &str) -> Result<(), String> {
    let output = command
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("{doing}: {e}"))?;
    if output.status.success() {
        return Ok(());
    }
    let text = String::from_utf8_lossy(&output.stderr);
    let last = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    Err(format!(
        "{doing} failed ({}): {}",
        output.status,
        last.trim()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fingerprint(keys: &[&str]) -> Fingerprint {
        Fingerprint {
            entries: keys
                .iter()
                .map(|k| (k.to_string(), "d".to_string()))
                .collect(),
        }
    }

    #[test]
    fn environments_unused_for_long_are_removed_when_another_is_built() {
        let parent = tempfile::tempdir().unwrap();
        let p = parent.path();
        for name in ["node-old", "node-recent", "python-now"] {
            std::fs::create_dir_all(p.join(name).join("node_modules")).unwrap();
            std::fs::write(p.join(format!("{name}.json")), "{}").unwrap();
        }
        let week = std::time::Duration::from_secs(8 * 24 * 3600);
        let old = std::time::SystemTime::now() - week;
        for name in ["node-old", "python-now"] {
            std::fs::File::options()
                .write(true)
                .open(p.join(format!("{name}.json")))
                .unwrap()
                .set_modified(old)
                .unwrap();
        }
        prune(p, "python-now", UNUSED_FOR);
        assert!(!p.join("node-old").exists() && !p.join("node-old.json").exists());
        assert!(p.join("node-recent").exists(), "used recently");
        assert!(p.join("python-now").exists(), "the one being built is kept");
    }

    #[test]
    fn a_fingerprint_names_each_venv_and_its_distributions() {
        let start = fingerprint(&[
            "python: .venv/pyvenv.cfg",
            "python: .venv/lib/python3.12/site-packages/pytest-8.3.4.dist-info",
            "python: .venv/lib/python3.12/site-packages/pytest",
            "python: .venv/lib/python3.12/site-packages/six-1.16.0-py3.12.egg-info",
            "python: .venv/bin/python",
            "python: `pytest11` entry point `cov`",
            "python: /home/me/.local/lib/python3.12/site-packages/x-1.0.dist-info",
        ]);
        assert_eq!(
            start_venvs(&start),
            vec![StartVenv {
                shown: ".venv".into(),
                distributions: vec![
                    ("pytest".into(), "8.3.4".into()),
                    ("six".into(), "1.16.0".into())
                ],
            }]
        );
    }

    #[test]
    fn what_it_cannot_rebuild_is_said() {
        let dir = tempfile::tempdir().unwrap();
        let repo = git2::Repository::init(dir.path()).unwrap();
        let start = fingerprint(&[]);
        let oid = Oid::ZERO_SHA1;
        let cases = [
            (
                Change::Changed("variable: PYTHONPATH".into()),
                "`PYTHONPATH` changed",
            ),
            (
                Change::Added("program: node".into()),
                "`node` on `PATH` is not",
            ),
            (
                Change::Added("configuration: ~/.npmrc".into()),
                "`~/.npmrc` in the home directory",
            ),
        ];
        for (change, said) in cases {
            let why = build(dir.path(), &repo, oid, &start, &[change], Progress::Quiet)
                .expect_err("cannot rebuild");
            assert!(why.contains(said), "{why}");
        }
        let added = build(
            dir.path(),
            &repo,
            oid,
            &start,
            &[Change::Added("variable: PYTEST_ADDOPTS".into())],
            Progress::Quiet,
        )
        .expect("an added variable is unset");
        assert_eq!(added.unset, vec!["PYTEST_ADDOPTS".to_string()]);
        assert!(
            added.what.contains("`PYTEST_ADDOPTS` unset"),
            "{}",
            added.what
        );
    }
}
