//! What detection sees in a test is the test's choice, not the machine's. Before any test
//! runs, the test process's `PATH` becomes the machine's with the optional tools itergate
//! looks for hidden (lizard, staticcheck, golangci-lint, ruff, mypy, pyright,
//! cargo-llvm-cov, cargo-tarpaulin): a directory holding one is replaced by a copy made of
//! links to everything else it holds. Every command a test starts inherits that `PATH`;
//! a test that wants one of these tools installs it with the project's script
//! (`scripts/ensure-lizard.sh`, `scripts/ensure-llvm-cov.sh`) and puts that directory on
//! the `PATH` it gives the command. Python's per-user site directory is left out too
//! (`PYTHONNOUSERSITE`), so a `pip install --user mypy` is not seen either.

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

/// Makes this process's `PATH` hermetic. Runs before `main`, while the process has one
/// thread.
#[ctor::ctor(unsafe)]
fn hermetic_path() {
    let machine = std::env::var_os("PATH").unwrap_or_default();
    let path = without_optional_tools(&machine);
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
