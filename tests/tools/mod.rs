//! What detection sees in a test is the test's choice, not the machine's. Before any test
//! runs, the test process's `PATH` becomes the machine's with the optional tools itergate
//! looks for hidden (lizard, staticcheck, golangci-lint, ruff, mypy, pyright,
//! cargo-llvm-cov, cargo-tarpaulin): a directory holding one is replaced by a copy made of
//! links to everything else it holds. Every command a test starts inherits that `PATH`;
//! a test that wants one of these tools installs it with the project's script
//! (`scripts/ensure-lizard.sh`, `scripts/ensure-llvm-cov.sh`) and puts that directory on
//! the `PATH` it gives the command. Python's per-user site directory is left out too
//! (`PYTHONNOUSERSITE`), so a `pip install --user mypy` is not seen either.
//!
//! The Python modules detection imports (mypy, pytest-cov) are hidden the same way: the
//! first `python3` and `python` on `PATH` become a virtual environment of the machine's
//! interpreter whose site directories are copies, made of links, of the machine's without
//! those modules and their distributions (so pytest does not load pytest-cov's entry point
//! either). pytest and everything else the machine's Python holds stay importable.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The tools detection takes when they are on `PATH`.
pub const OPTIONAL: [&str; 8] = [
    "lizard",
    "staticcheck",
    "golangci-lint",
    "ruff",
    "mypy",
    "pyright",
    "cargo-llvm-cov",
    "cargo-tarpaulin",
];

/// The Python modules detection looks for, and the distributions that install them.
pub const OPTIONAL_MODULES: [&str; 3] = ["mypy", "mypyc", "pytest_cov"];

/// Makes this process's `PATH` hermetic. Runs before `main`, while the process has one
/// thread.
#[ctor::ctor(unsafe)]
fn hermetic_path() {
    let machine = std::env::var_os("PATH").unwrap_or_default();
    let mut path = without_optional_tools(&machine);
    if let Some(bin) = python_without_optional_modules(&path) {
        let mut dirs = vec![bin];
        dirs.extend(std::env::split_paths(&path));
        path = std::env::join_paths(dirs).expect("PATH joins");
    }
    // SAFETY: a constructor runs before `main`, before any other thread exists.
    unsafe {
        std::env::set_var("PATH", path);
        std::env::set_var("PYTHONNOUSERSITE", "1");
    }
}

/// `path` with every directory that holds an optional tool replaced by one that holds the
/// rest.
pub fn without_optional_tools(path: &std::ffi::OsStr) -> OsString {
    let dirs: Vec<PathBuf> = std::env::split_paths(path)
        .map(|dir| {
            if OPTIONAL.iter().any(|tool| dir.join(tool).exists()) {
                mirror(&dir)
                    .unwrap_or_else(|e| panic!("hiding the tools in {}: {e}", dir.display()))
            } else {
                dir
            }
        })
        .collect();
    std::env::join_paths(dirs).expect("PATH joins")
}

/// A directory of links to every entry of `dir` but the optional tools, under the target
/// directory, named by what it holds (so runs share it and a change makes a new one).
fn mirror(dir: &Path) -> std::io::Result<PathBuf> {
    let mut names: Vec<OsString> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .map(|e| e.file_name())
        .filter(|n| !OPTIONAL.iter().any(|tool| n == *tool))
        .collect();
    names.sort();
    let mut hasher = std::hash::DefaultHasher::new();
    std::hash::Hash::hash(&(dir, &names), &mut hasher);
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hermetic-path");
    let target = root.join(format!("{:016x}", std::hash::Hasher::finish(&hasher)));
    if target.is_dir() {
        return Ok(target);
    }
    // Built aside and renamed into place: concurrent test binaries never see half of it.
    let building = root.join(format!("building-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&building);
    std::fs::create_dir_all(&building)?;
    for name in &names {
        std::os::unix::fs::symlink(dir.join(name), building.join(name))?;
    }
    if std::fs::rename(&building, &target).is_err() {
        // Another process put the same one there first.
        let _ = std::fs::remove_dir_all(&building);
    }
    Ok(target)
}

/// The `bin` directory of a virtual environment of the first `python3` on `path`, whose
/// site directories hold everything the machine's do but the optional modules; `None`
/// when the machine has no `python3`.
fn python_without_optional_modules(path: &std::ffi::OsStr) -> Option<PathBuf> {
    let python = std::env::split_paths(path)
        .map(|dir| dir.join("python3"))
        .find(|p| p.is_file())?;
    let probe = "import site, sys; print(sys.executable); print('%d.%d.%d' % sys.version_info[:3]); print(*site.getsitepackages(), sep='\\n')";
    let out = std::process::Command::new(&python)
        .args(["-I", "-c", probe])
        .env("PATH", path)
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let text = String::from_utf8(out.stdout).expect("Python prints UTF-8 paths");
    let mut lines = text.lines();
    let executable = PathBuf::from(lines.next()?);
    let version = lines.next()?.to_string();
    let sites: Vec<PathBuf> = lines.map(PathBuf::from).filter(|p| p.is_dir()).collect();
    let short = version
        .rsplit_once('.')
        .map_or(&*version, |(short, _)| short);

    let mut hasher = std::hash::DefaultHasher::new();
    std::hash::Hash::hash(&(&executable, &version), &mut hasher);
    let mut mirrors = Vec::new();
    for site in &sites {
        let kept = site_entries(site).ok()?;
        std::hash::Hash::hash(&(site, &kept), &mut hasher);
        mirrors.push((site, kept));
    }
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hermetic-python");
    let target = root.join(format!("{:016x}", std::hash::Hasher::finish(&hasher)));
    if target.is_dir() {
        return Some(target.join("bin"));
    }
    let build = || -> std::io::Result<()> {
        let building = root.join(format!("building-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&building);
        let bin = building.join("bin");
        std::fs::create_dir_all(&bin)?;
        for name in ["python3", "python"] {
            std::os::unix::fs::symlink(&executable, bin.join(name))?;
        }
        let home = executable
            .parent()
            .expect("the interpreter is in a directory");
        std::fs::write(
            building.join("pyvenv.cfg"),
            format!(
                "home = {}\ninclude-system-site-packages = false\nversion = {version}\n",
                home.display()
            ),
        )?;
        let own = building.join(format!("lib/python{short}/site-packages"));
        std::fs::create_dir_all(&own)?;
        let mut pth = String::new();
        for (i, (site, kept)) in mirrors.iter().enumerate() {
            let mirror = building.join(format!("site-{i}"));
            std::fs::create_dir_all(&mirror)?;
            for name in kept {
                std::os::unix::fs::symlink(site.join(name), mirror.join(name))?;
            }
            // `addsitedir` reads the mirror's `.pth` files, as Python reads the machine's.
            pth.push_str(&format!(
                "import site; site.addsitedir({:?})\n",
                target.join(format!("site-{i}"))
            ));
        }
        std::fs::write(own.join("hermetic-sites.pth"), pth)?;
        if std::fs::rename(&building, &target).is_err() {
            let _ = std::fs::remove_dir_all(&building);
        }
        Ok(())
    };
    build().unwrap_or_else(|e| panic!("a Python without the optional modules: {e}"));
    Some(target.join("bin"))
}

/// The entries of a site directory but the optional modules and their distributions.
fn site_entries(site: &Path) -> std::io::Result<Vec<OsString>> {
    let mut names: Vec<OsString> = std::fs::read_dir(site)?
        .filter_map(Result::ok)
        .map(|e| e.file_name())
        .filter(|name| {
            // `mypy`, `mypy.py`, `mypy-1.18.2.dist-info`, `pytest-cov.pth`; not `mypy_extensions`.
            let name = name.to_string_lossy().replace('-', "_");
            !OPTIONAL_MODULES.iter().any(|module| {
                name.strip_prefix(module).is_some_and(|rest| {
                    rest.is_empty()
                        || rest.starts_with('.')
                        || rest
                            .strip_prefix('_')
                            .is_some_and(|v| v.starts_with(|c: char| c.is_ascii_digit()))
                })
            })
        })
        .collect();
    names.sort();
    Ok(names)
}

#[test]
fn no_optional_tool_is_on_the_path_a_test_runs_with() {
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        for tool in OPTIONAL {
            assert!(
                !dir.join(tool).exists(),
                "{tool} in {} is on PATH",
                dir.display()
            );
        }
    }
    assert_eq!(std::env::var("PYTHONNOUSERSITE").as_deref(), Ok("1"));
    for module in OPTIONAL_MODULES.iter().chain(&["pytest"]) {
        let imported = std::process::Command::new("python3")
            .args(["-c", &format!("import {module}")])
            .output()
            .expect("python3 runs");
        assert_eq!(
            imported.status.success(),
            *module == "pytest",
            "`import {module}`: {}",
            String::from_utf8_lossy(&imported.stderr)
        );
    }
}

#[test]
fn a_site_directory_is_mirrored_without_the_optional_modules() {
    let site = tempfile::tempdir().expect("tempdir");
    for name in [
        "mypy",
        "mypy-1.18.2.dist-info",
        "mypyc",
        "mypy_extensions.py",
        "pytest_cov",
        "pytest_cov-7.0.0.dist-info",
        "pytest-cov.pth",
        "pytest",
        "pytest-8.4.2.dist-info",
    ] {
        std::fs::create_dir_all(site.path().join(name)).expect("mkdir");
    }
    let kept = site_entries(site.path()).expect("reads");
    assert_eq!(
        kept,
        ["mypy_extensions.py", "pytest", "pytest-8.4.2.dist-info"].map(OsString::from)
    );
}

#[test]
fn a_directory_holding_optional_tools_is_replaced_by_one_without_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    for name in OPTIONAL.iter().chain(&["go", "node"]) {
        std::fs::write(dir.path().join(name), "#!/bin/sh\n").expect("write");
    }
    let plain = tempfile::tempdir().expect("tempdir");
    let path = std::env::join_paths([dir.path(), plain.path()]).expect("joins");
    let hidden: Vec<PathBuf> = std::env::split_paths(&without_optional_tools(&path)).collect();
    assert_eq!(hidden.len(), 2);
    assert_ne!(hidden[0], dir.path(), "replaced");
    assert_eq!(hidden[1], plain.path(), "kept as it is");
    for tool in OPTIONAL {
        assert!(!hidden[0].join(tool).exists(), "{tool} hidden");
    }
    for kept in ["go", "node"] {
        assert_eq!(
            std::fs::read_link(hidden[0].join(kept)).expect("a link"),
            dir.path().join(kept)
        );
    }
}
