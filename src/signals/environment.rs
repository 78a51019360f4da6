//! The sealed environment: what the checks execute besides the commit's files — the
//! interpreter's `site-packages` (each `.pth`, `sitecustomize`/`usercustomize`, the
//! entry points such as `pytest11`), `node_modules` (each package, `.bin`), the runners on
//! `PATH`, the runners' configuration chain above the repository and in the home directory,
//! and the variables they read — fingerprinted where a task starts and compared at each
//! iteration. The judged can write all of it; what changed and no committed manifest or
//! lockfile explains makes an observation untrusted ([`unexplained`]).
//!
//! Cheap where it must be: large trees (a package's files) are summarised by each file's
//! size, mode, modification time and inode (not the change time: a hard link made from
//! another project — pnpm's store — changes it); small files that decide what runs (entry
//! points, `.pth`, configuration, `.bin` links) are hashed whole, so the finding can name
//! them. An edit that restores a file's size and modification time in place is not seen in
//! a package's files; the loop's sandbox keeps the agent from making it.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// What the checks execute besides the commit, as `kind: place` → digest.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    pub entries: BTreeMap<String, String>,
}

/// The variables the runners read: a change in one changes what runs.
const VARIABLES: &[&str] = &[
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONSTARTUP",
    "PYTHONUSERBASE",
    "PYTHONSAFEPATH",
    "PYTHONNOUSERSITE",
    "PYTEST_ADDOPTS",
    "PYTEST_PLUGINS",
    "VIRTUAL_ENV",
    "NODE_OPTIONS",
    "NODE_PATH",
    "GOFLAGS",
    "GOENV",
    "GOWORK",
    "GOROOT",
    "GOPATH",
    "GOTOOLCHAIN",
    "CGO_ENABLED",
    "RUSTFLAGS",
    "RUSTC_WRAPPER",
    "RUSTC",
    "CARGO_HOME",
    "CARGO_BUILD_RUSTFLAGS",
    "MAVEN_OPTS",
    "MAVEN_ARGS",
    "JAVA_TOOL_OPTIONS",
    "JDK_JAVA_OPTIONS",
    "_JAVA_OPTIONS",
    "GRADLE_OPTS",
];

/// Variable-name prefixes whose every variable the runners read.
const VARIABLE_PREFIXES: &[&str] = &["CARGO_TARGET_", "npm_config_", "NPM_CONFIG_", "PYTEST_"];

/// The runners whose programs on `PATH` are fingerprinted.
const PROGRAMS: &[&str] = &[
    "python", "python3", "pytest", "node", "npm", "npx", "pnpm", "yarn", "go", "cargo", "rustc",
    "mvn", "java", "gradle",
];

/// Configuration files the runners look for in every directory above the repository, and
/// in the repository itself when it does not track them.
const CHAIN_FILES: &[&str] = &[
    ".cargo/config.toml",
    ".cargo/config",
    ".mvn/maven.config",
    ".mvn/jvm.config",
    ".mvn/extensions.xml",
    "go.work",
    ".npmrc",
    "pytest.ini",
    ".pytest.ini",
    "conftest.py",
];

/// Configuration in the home directory (relative to it).
const HOME_FILES: &[&str] = &[
    ".cargo/config.toml",
    ".cargo/config",
    ".m2/settings.xml",
    ".mavenrc",
    ".npmrc",
    ".config/go/env",
    ".config/pip/pip.conf",
    ".pydistutils.cfg",
];

/// Where to look.
pub struct Scope<'a> {
    pub root: &'a Path,
    pub home: Option<&'a Path>,
    /// The process environment the checks inherit.
    pub vars: &'a dyn Fn(&str) -> Option<String>,
    /// The variables present (for the prefixed ones).
    pub names: &'a [String],
    /// Whether the repository tracks `path` (a tracked file is the commit's, judged there).
    pub tracked: &'a dyn Fn(&str) -> bool,
    /// The checks' commands: a program they name by its path inside a virtual environment
    /// (`/opt/venvs/app/bin/pytest`) brings that environment into the fingerprint.
    pub commands: &'a [String],
}

/// The fingerprint of what the checks at `scope.root` would execute.
pub fn scan(scope: &Scope) -> Fingerprint {
    let mut entries = BTreeMap::new();
    let vars = scope.vars;
    for name in VARIABLES {
        if let Some(value) = vars(name) {
            entries.insert(format!("variable: {name}"), digest_text(&value));
        }
    }
    for name in scope.names {
        if VARIABLE_PREFIXES.iter().any(|p| name.starts_with(p)) {
            if let Some(value) = vars(name) {
                entries.insert(format!("variable: {name}"), digest_text(&value));
            }
        }
    }
    let path = vars("PATH").unwrap_or_default();
    for program in PROGRAMS {
        if let Some(found) = on_path(&path, program) {
            entries.insert(format!("program: {program}"), program_digest(&found));
        }
    }
    chain(scope, &mut entries);
    let mut venvs = venvs(scope);
    venvs.sort();
    venvs.dedup();
    for venv in venvs {
        python_env(&venv, &display(scope, &venv), &mut entries);
    }
    if let Some(home) = scope.home {
        for site in glob_dirs(&home.join(".local/lib"), "python", "site-packages") {
            site_packages(&site, &display(scope, &site), &mut entries);
        }
    }
    let modules = scope.root.join("node_modules");
    if modules.is_dir() {
        node_modules(&modules, "node_modules", &mut entries);
    }
    Fingerprint { entries }
}

/// The configuration chain: each directory above the root up to `/`, the root's own files
/// that it does not track, and the home directory's.
fn chain(scope: &Scope, entries: &mut BTreeMap<String, String>) {
    for file in CHAIN_FILES {
        if !(scope.tracked)(file) {
            add_file(entries, "configuration", &scope.root.join(file), file);
        }
    }
    for dir in scope.root.ancestors().skip(1) {
        for file in CHAIN_FILES {
            let path = dir.join(file);
            add_file(entries, "configuration", &path, &path.display().to_string());
        }
    }
    if let Some(home) = scope.home {
        for file in HOME_FILES {
            add_file(
                entries,
                "configuration",
                &home.join(file),
                &format!("~/{file}"),
            );
        }
    }
}

fn add_file(entries: &mut BTreeMap<String, String>, kind: &str, path: &Path, shown: &str) {
    if let Ok(bytes) = std::fs::read(path) {
        entries.insert(format!("{kind}: {shown}"), digest_bytes(&bytes));
    }
}

/// The virtual environments the checks may run: the root's (a child directory with a
/// `pyvenv.cfg`), `$VIRTUAL_ENV`, and the one `python` on `PATH` belongs to.
fn venvs(scope: &Scope) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(children) = std::fs::read_dir(scope.root) {
        for child in children.flatten() {
            let path = child.path();
            if path.join("pyvenv.cfg").is_file() {
                out.push(path);
            }
        }
    }
    if let Some(venv) = (scope.vars)("VIRTUAL_ENV").map(PathBuf::from) {
        if venv.join("pyvenv.cfg").is_file() {
            out.push(venv);
        }
    }
    // A program a check names by its path, inside a virtual environment's `bin/`.
    for word in scope.commands.iter().flat_map(|c| c.split_whitespace()) {
        let word = word.trim_matches(['"', '\'']);
        if !word.contains("/bin/") {
            continue;
        }
        let program = scope.root.join(word); // an absolute path stays as it is
        if let Some(venv) = program.parent().and_then(Path::parent) {
            if venv.join("pyvenv.cfg").is_file() && !out.iter().any(|v| v == venv) {
                out.push(venv.to_path_buf());
            }
        }
    }
    let path = (scope.vars)("PATH").unwrap_or_default();
    for program in ["python", "python3"] {
        if let Some(python) = on_path(&path, program) {
            if let Some(venv) = python.parent().and_then(Path::parent) {
                if venv.join("pyvenv.cfg").is_file() {
                    out.push(venv.to_path_buf());
                }
            }
        }
    }
    out
}

/// A path as the finding shows it: relative to the root when inside it.
fn display(scope: &Scope, path: &Path) -> String {
    match path.strip_prefix(scope.root) {
        Ok(inside) => inside.display().to_string(),
        Err(_) => path.display().to_string(),
    }
}

/// A virtual environment: its `pyvenv.cfg`, its scripts, and its `site-packages`.
fn python_env(venv: &Path, shown: &str, entries: &mut BTreeMap<String, String>) {
    add_file(
        entries,
        "python",
        &venv.join("pyvenv.cfg"),
        &format!("{shown}/pyvenv.cfg"),
    );
    for bin in ["bin", "Scripts"] {
        if let Ok(children) = std::fs::read_dir(venv.join(bin)) {
            for child in children.flatten() {
                let path = child.path();
                let name = child.file_name().to_string_lossy().into_owned();
                entries.insert(
                    format!("python: {shown}/{bin}/{name}"),
                    program_digest(&path),
                );
            }
        }
    }
    for lib in ["lib", "lib64"] {
        // `lib64` is often a link to `lib`: one scan of each directory.
        if lib == "lib64" && std::fs::read_link(venv.join(lib)).is_ok() {
            continue;
        }
        for site in glob_dirs(&venv.join(lib), "python", "site-packages") {
            let rel = site.strip_prefix(venv).unwrap_or(&site);
            site_packages(&site, &format!("{shown}/{}", rel.display()), entries);
        }
    }
    let windows = venv.join("Lib/site-packages");
    if windows.is_dir() {
        site_packages(&windows, &format!("{shown}/Lib/site-packages"), entries);
    }
}

/// `dir/<prefix>*/<leaf>` directories.
fn glob_dirs(dir: &Path, prefix: &str, leaf: &str) -> Vec<PathBuf> {
    let Ok(children) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = children
        .flatten()
        .filter(|c| c.file_name().to_string_lossy().starts_with(prefix))
        .map(|c| c.path().join(leaf))
        .filter(|p| p.is_dir())
        .collect();
    out.sort();
    out
}

/// A `site-packages`: every top-level file hashed (`.pth`, `sitecustomize.py`, single-file
/// modules), every package summarised, every distribution's entry points named.
fn site_packages(site: &Path, shown: &str, entries: &mut BTreeMap<String, String>) {
    let Ok(children) = std::fs::read_dir(site) else {
        return;
    };
    for child in children.flatten() {
        let name = child.file_name().to_string_lossy().into_owned();
        if name == "__pycache__" {
            continue;
        }
        let path = child.path();
        let key = format!("python: {shown}/{name}");
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            if name.ends_with(".dist-info") || name.ends_with(".egg-info") {
                entry_points(&path.join("entry_points.txt"), &name, entries);
            }
            if let Ok(record) = std::fs::read(path.join("RECORD")) {
                entries.insert(
                    format!("{}: {shown}/{name}", super::installed::RECORD_KIND),
                    digest_bytes(&record),
                );
            }
            entries.insert(key, tree_digest(&path));
        } else {
            entries.insert(key, file_digest(&path, &meta));
        }
    }
}

/// A distribution's entry points, one entry each (`pytest11` names a pytest plugin).
fn entry_points(file: &Path, dist: &str, entries: &mut BTreeMap<String, String>) {
    let Ok(text) = std::fs::read_to_string(file) else {
        return;
    };
    let mut group = String::new();
    for line in text.lines().map(str::trim) {
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            group = name.to_string();
        } else if let Some((name, target)) = line.split_once('=') {
            if group == "pytest11" || group == "console_scripts" {
                entries.insert(
                    format!("python: `{group}` entry point `{}`", name.trim()),
                    digest_text(&format!("{dist} {}", target.trim())),
                );
            }
        }
    }
}

/// `node_modules`: each package (a scope's packages one by one), `.bin`'s links, pnpm's
/// store, and npm's hidden lockfile. Caches that runners write there are left out.
fn node_modules(modules: &Path, shown: &str, entries: &mut BTreeMap<String, String>) {
    let Ok(children) = std::fs::read_dir(modules) else {
        return;
    };
    let mut packages = Vec::new();
    for child in children.flatten() {
        let name = child.file_name().to_string_lossy().into_owned();
        let path = child.path();
        match name.as_str() {
            // Caches runners write, and package managers' state files that carry the time of
            // the last install (a no-op `pnpm install` rewrites them).
            ".cache" | ".vite" | ".vitest" | ".vite-temp" | ".yarn-state.yml" | ".modules.yaml" => {
            }
            _ if name.starts_with(".pnpm-workspace-state") => {}
            ".bin" => {
                if let Ok(bins) = std::fs::read_dir(&path) {
                    for bin in bins.flatten() {
                        let bin_name = bin.file_name().to_string_lossy().into_owned();
                        if let Some(digest) = shim_digest(&bin.path()) {
                            entries.insert(format!("node: {shown}/.bin/{bin_name}"), digest);
                        }
                    }
                }
            }
            ".pnpm" => {
                if let Ok(store) = std::fs::read_dir(&path) {
                    packages.extend(store.flatten().map(|e| {
                        (
                            format!("{shown}/.pnpm/{}", e.file_name().to_string_lossy()),
                            e.path(),
                        )
                    }));
                }
            }
            _ if name.starts_with('@') => {
                if let Ok(scoped) = std::fs::read_dir(&path) {
                    packages.extend(scoped.flatten().map(|e| {
                        (
                            format!("{shown}/{name}/{}", e.file_name().to_string_lossy()),
                            e.path(),
                        )
                    }));
                }
            }
            _ => packages.push((format!("{shown}/{name}"), path)),
        }
    }
    // Two threads share the walk: most of a large `node_modules` is a few packages.
    let digests: Vec<(String, String)> = std::thread::scope(|s| {
        let half = packages.len() / 2;
        let (a, b) = packages.split_at(half);
        let left = s.spawn(move || digest_all(a));
        let mut right = digest_all(b);
        let mut out = left.join().unwrap_or_default();
        out.append(&mut right);
        out
    });
    for (key, digest) in digests {
        entries.insert(format!("node: {key}"), digest);
    }
}

fn digest_all(packages: &[(String, PathBuf)]) -> Vec<(String, String)> {
    packages
        .iter()
        .map(|(key, path)| {
            let digest = match std::fs::symlink_metadata(path) {
                Ok(meta) if meta.is_dir() => tree_digest(path),
                Ok(meta) => file_digest(path, &meta),
                Err(_) => String::new(),
            };
            (key.clone(), digest)
        })
        .collect()
}

/// A program: where a link points, and the file it reaches (hashed when small, a script;
/// summarised when large, a binary).
fn program_digest(path: &Path) -> String {
    let mut hasher = Sha256::new();
    if let Ok(target) = std::fs::read_link(path) {
        hasher.update(target.to_string_lossy().as_bytes());
    }
    if let Ok(meta) = std::fs::metadata(path) {
        hasher.update(file_digest(path, &meta).as_bytes());
    }
    format!("{:x}", hasher.finalize())
}

/// A `.bin` entry as what it runs: a link by where it resolves and that file's digest; a
/// package manager's shell shim by its text with each `$basedir/…` path replaced by the
/// file it resolves to and its `NODE_PATH` lines left out (pnpm writes the same shim with
/// other relative paths and search paths from one install to the next). The Windows shims
/// beside them (`.cmd`, `.ps1`) are not run here and are left out.
fn shim_digest(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_string_lossy().to_lowercase();
    if name.ends_with(".cmd") || name.ends_with(".ps1") {
        return None;
    }
    let meta = std::fs::symlink_metadata(path).ok()?;
    if meta.file_type().is_symlink() {
        let target = std::fs::canonicalize(path).ok();
        let reached = target
            .as_deref()
            .and_then(|t| Some(file_digest(t, &std::fs::metadata(t).ok()?)));
        return Some(digest_text(&format!("{target:?} {reached:?}")));
    }
    if meta.len() > HASHED_BYTES {
        return Some(file_digest(path, &meta));
    }
    let text = std::fs::read_to_string(path).ok()?;
    let dir = path.parent()?;
    let mut normal = String::new();
    for line in text.lines().filter(|l| !l.contains("NODE_PATH")) {
        let mut rest = line;
        while let Some(at) = rest.find("$basedir/") {
            normal.push_str(&rest[..at]);
            let tail = &rest[at + "$basedir/".len()..];
            let end = tail.find(['"', '\'', ' ']).unwrap_or(tail.len());
            let resolved = std::fs::canonicalize(dir.join(&tail[..end])).map_or_else(
                |_| format!("<missing {}>", &tail[..end]),
                |p| p.display().to_string(),
            );
            normal.push_str(&resolved);
            rest = &tail[end..];
        }
        normal.push_str(rest);
        normal.push('\n');
    }
    Some(digest_text(&normal))
}

/// Files up to this size are hashed whole; larger ones by their metadata.
const HASHED_BYTES: u64 = 256 * 1024;

fn file_digest(path: &Path, meta: &std::fs::Metadata) -> String {
    if meta.file_type().is_symlink() {
        return match std::fs::read_link(path) {
            Ok(target) => digest_text(&format!("link {}", target.display())),
            Err(_) => String::new(),
        };
    }
    if meta.len() <= HASHED_BYTES {
        if let Ok(bytes) = std::fs::read(path) {
            return digest_bytes(&bytes);
        }
    }
    digest_text(&stat_line("", meta))
}

/// Every file under `dir` by its metadata (bytecode caches left out: the interpreter writes
/// them as it imports).
fn tree_digest(root: &Path) -> String {
    let mut hasher = Sha256::new();
    let mut stack = vec![root.to_path_buf()];
    let mut lines = Vec::new();
    while let Some(dir) = stack.pop() {
        let Ok(children) = std::fs::read_dir(&dir) else {
            continue;
        };
        for child in children.flatten() {
            let name = child.file_name();
            if name == "__pycache__" {
                continue;
            }
            let path = child.path();
            let Ok(meta) = child.metadata() else {
                continue;
            };
            if meta.is_dir() {
                stack.push(path);
                continue;
            }
            let rel = path.strip_prefix(root).unwrap_or(&path);
            // Package managers regenerate `.bin` shims on every install (same text, a new
            // file): those are known by their content.
            if dir.file_name().is_some_and(|n| n == ".bin") {
                if let Some(digest) = shim_digest(&path) {
                    lines.push(format!("{} {digest}\n", rel.to_string_lossy()));
                }
                continue;
            }
            lines.push(stat_line(&rel.to_string_lossy(), &meta));
        }
    }
    lines.sort();
    for line in lines {
        hasher.update(line.as_bytes());
    }
    format!("{:x}", hasher.finalize())
}

fn stat_line(name: &str, meta: &std::fs::Metadata) -> String {
    // Not the change time: a hard link made elsewhere (pnpm's store, `cp -al`) changes it.
    format!(
        "{name} {} {} {}.{} {}\n",
        meta.len(),
        meta.mode(),
        meta.mtime(),
        meta.mtime_nsec(),
        meta.ino()
    )
}

fn digest_bytes(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
}

fn digest_text(text: &str) -> String {
    digest_bytes(text.as_bytes())
}

/// Where `program` is on `path` (a `PATH` value), if anywhere.
pub(crate) fn on_path(path: &str, program: &str) -> Option<PathBuf> {
    std::env::split_paths(path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

/// The fingerprint of one virtual environment alone (the judge's own, to know it untouched
/// before it is used again).
pub fn venv_fingerprint(venv: &Path) -> Fingerprint {
    let mut entries = BTreeMap::new();
    python_env(venv, &venv.display().to_string(), &mut entries);
    Fingerprint { entries }
}

/// The fingerprint of one `node_modules` alone (the judge's own).
pub fn node_modules_fingerprint(modules: &Path) -> Fingerprint {
    let mut entries = BTreeMap::new();
    node_modules(modules, &modules.display().to_string(), &mut entries);
    Fingerprint { entries }
}

/// An iteration judged in an environment that changed since the task's start, unexplained:
/// what changed, and where the iteration was measured instead.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Unsealed {
    pub changes: Vec<Change>,
    /// Where the iteration was measured; `None`: not asked (a record judged from cached
    /// observations).
    pub measured: Option<Measured>,
}

/// Where an iteration in a changed environment was measured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Measured {
    /// Nothing ran: its tree's results were kept from a run before the change.
    Before,
    /// Again, in an environment itergate built for it (what it is).
    Rebuilt(String),
    /// In the changed environment: itergate could not build one of its own (why).
    Unmeasured(String),
}

impl Unsealed {
    /// Nothing changed.
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }
}

/// One difference between the start's environment and now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    Added(String),
    Removed(String),
    Changed(String),
}

impl Change {
    pub fn key(&self) -> &str {
        match self {
            Change::Added(k) | Change::Removed(k) | Change::Changed(k) => k,
        }
    }
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (key, verb) = match self {
            Change::Added(k) => (k, "added"),
            Change::Removed(k) => (k, "removed"),
            Change::Changed(k) => (k, "changed"),
        };
        match key.split_once(": ") {
            Some((kind, place)) if place.starts_with('`') => write!(f, "{kind} {place} {verb}"),
            Some((kind, place)) => write!(f, "{kind} `{place}` {verb}"),
            None => write!(f, "`{key}` {verb}"),
        }
    }
}

/// What differs between `start` and `now` (a distribution's `RECORD` only vouches for its
/// files, [`reinstalled`]: it is no change itself).
pub fn changes(start: &Fingerprint, now: &Fingerprint) -> Vec<Change> {
    let record = format!("{}: ", super::installed::RECORD_KIND);
    let mut out = Vec::new();
    for (key, digest) in now.entries.iter().filter(|(k, _)| !k.starts_with(&record)) {
        match start.entries.get(key) {
            None => out.push(Change::Added(key.clone())),
            Some(was) if was != digest => out.push(Change::Changed(key.clone())),
            Some(_) => {}
        }
    }
    for key in start.entries.keys().filter(|k| !k.starts_with(&record)) {
        if !now.entries.contains_key(key) {
            out.push(Change::Removed(key.clone()));
        }
    }
    out
}

/// `changes` without the Python packages that were reinstalled as they were: each changed
/// file or directory exactly what a distribution's `RECORD` lists, that `RECORD` the same
/// as at the start ([`super::installed`]). Places are shown as scanned: absolute, or
/// relative to `root`.
pub fn reinstalled(
    changes: Vec<Change>,
    start: &Fingerprint,
    now: &Fingerprint,
    root: &Path,
) -> Vec<Change> {
    let prefix = format!("{}: ", super::installed::RECORD_KIND);
    let resolve = |shown: &str| {
        let path = Path::new(shown);
        if path.is_absolute() {
            path.to_path_buf()
        } else {
            root.join(path)
        }
    };
    let unchanged: Vec<PathBuf> = now
        .entries
        .iter()
        .filter_map(|(key, digest)| {
            let shown = key.strip_prefix(&prefix)?;
            (start.entries.get(key) == Some(digest)).then(|| resolve(shown))
        })
        .collect();
    if unchanged.is_empty() {
        return changes;
    }
    changes
        .into_iter()
        .filter(|change| match change {
            Change::Changed(key) => !key
                .strip_prefix("python: ")
                .filter(|shown| !shown.starts_with('`'))
                .is_some_and(|shown| super::installed::as_recorded(&resolve(shown), &unchanged)),
            _ => true,
        })
        .collect()
}

/// The manifests and lockfiles that install a kind of entry: a change to one of them,
/// committed since the start, explains that kind's changes.
fn explains(kind: &str, file: &str) -> bool {
    let name = file.rsplit('/').next().unwrap_or(file);
    match kind {
        "python" => {
            matches!(
                name,
                "pyproject.toml"
                    | "setup.py"
                    | "setup.cfg"
                    | "Pipfile"
                    | "Pipfile.lock"
                    | "poetry.lock"
                    | "uv.lock"
                    | "pdm.lock"
            ) || (name.starts_with("requirements") && name.ends_with(".txt"))
        }
        "node" => matches!(
            name,
            "package.json"
                | "package-lock.json"
                | "npm-shrinkwrap.json"
                | "yarn.lock"
                | "pnpm-lock.yaml"
                | "bun.lock"
                | "bun.lockb"
        ),
        "program" => matches!(
            name,
            "rust-toolchain"
                | "rust-toolchain.toml"
                | ".nvmrc"
                | ".node-version"
                | ".python-version"
                | ".tool-versions"
                | "go.mod"
        ),
        _ => false,
    }
}

/// The changes that no file committed since the start explains (`edited`: the paths the
/// change between the start and the iteration touched).
pub fn unexplained(changes: Vec<Change>, edited: &[String]) -> Vec<Change> {
    changes
        .into_iter()
        .filter(|change| {
            let kind = change.key().split(':').next().unwrap_or("");
            !edited.iter().any(|file| explains(kind, file))
        })
        .collect()
}

/// The finding's words for a list of changes: the first few, then a count. What decides
/// what runs comes first: entry points, then `.pth` and `*customize` files, variables and
/// configuration, then packages.
pub fn describe(changes: &[Change]) -> String {
    const SHOWN: usize = 4;
    let rank = |change: &Change| {
        let key = change.key();
        if key.contains("entry point") {
            0
        } else if key.ends_with(".pth") || key.ends_with("customize.py") {
            1
        } else if key.starts_with("variable") || key.starts_with("configuration") {
            2
        } else {
            3
        }
    };
    let mut ordered: Vec<&Change> = changes.iter().collect();
    ordered.sort_by_key(|c| rank(c));
    let mut words: Vec<String> = ordered
        .iter()
        .take(SHOWN)
        .map(ToString::to_string)
        .collect();
    if changes.len() > SHOWN {
        words.push(format!("and {} more", changes.len() - SHOWN));
    }
    words.join(", ")
}

#[cfg(test)]
#[path = "environment_tests.rs"]
mod tests;
