//! Rust: cargo's tests, clippy, and coverage with cargo-llvm-cov (else cargo-tarpaulin).

use std::collections::BTreeMap;
use std::path::Path;

use crate::config::Check;
use crate::signals::report::ReportFormat;

use super::{check, on_path, source};

/// Where cargo-llvm-cov writes its LCOV report: beside the manifest, not under `target/`
/// (`CARGO_TARGET_DIR` may put that elsewhere, and a scratch worktree has none);
/// `.itergate-*` is ignored by git once `init` ran.
pub(super) const CARGO_LCOV_PATH: &str = ".itergate-lcov.info";

/// cargo-llvm-cov is installed and can run: the toolchain has llvm-tools (its
/// `llvm-profdata` in the sysroot), or `LLVM_PROFDATA` names one.
pub(super) fn llvm_cov_runs() -> bool {
    if !on_path("cargo-llvm-cov") {
        return false;
    }
    if std::env::var_os("LLVM_PROFDATA").is_some() {
        return true;
    }
    let sysroot = std::process::Command::new("rustc")
        .args(["--print", "sysroot"])
        .stdin(std::process::Stdio::null())
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    sysroot.is_some_and(|root| {
        std::fs::read_dir(Path::new(&root).join("lib/rustlib"))
            .into_iter()
            .flatten()
            .flatten()
            .any(|target| target.path().join("bin/llvm-profdata").is_file())
    })
}

/// Whether the project (or a member of its workspace, up to two levels down) has a library
/// target: doctests live only there.
pub(super) fn has_library(root: &Path) -> bool {
    let declared = std::fs::read_to_string(root.join("Cargo.toml"))
        .is_ok_and(|manifest| manifest.contains("[lib]"));
    let lib_rs = |dir: &Path| dir.join("src/lib.rs").is_file();
    let children = |dir: &Path| -> Vec<std::path::PathBuf> {
        std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir() && !p.ends_with("target") && !p.ends_with(".git"))
            .collect()
    };
    declared
        || lib_rs(root)
        || children(root)
            .iter()
            .any(|child| lib_rs(child) || children(child).iter().any(|c| lib_rs(c)))
}

pub(super) fn cargo(root: &Path, checks: &mut BTreeMap<String, Check>, notes: &mut Vec<String>) {
    let llvm_cov = llvm_cov_runs();
    let tests = if llvm_cov {
        // One run: libtest's output on stdout, coverage in the LCOV file.
        Check {
            report: vec![
                source(ReportFormat::Libtest, None),
                source(ReportFormat::Lcov, Some(CARGO_LCOV_PATH)),
            ],
            ..check(
                // `--ignore-run-fail`: every test runs, and a failing one still leaves the coverage
                // report (it may not be given with `--no-fail-fast`).
                &format!("cargo llvm-cov --ignore-run-fail --color never --lcov --output-path {CARGO_LCOV_PATH}"),
                ReportFormat::Libtest,
                None,
            )
        }
    } else {
        check(
            "cargo test --no-fail-fast --color never",
            ReportFormat::Libtest,
            None,
        )
    };
    checks.insert("tests".into(), tests);
    // cargo-llvm-cov runs no doctests on a stable toolchain: they run on their own, so a
    // crate's examples stay among its tests whatever measures coverage.
    if llvm_cov && has_library(root) {
        let workspace = std::fs::read_to_string(root.join("Cargo.toml"))
            .is_ok_and(|manifest| manifest.contains("[workspace]"));
        let every = if workspace { " --workspace" } else { "" };
        checks.insert(
            "doctests".into(),
            check(
                &format!("cargo test --doc{every} --no-fail-fast --color never"),
                ReportFormat::Libtest,
                None,
            ),
        );
    }
    if !llvm_cov {
        if on_path("cargo-tarpaulin") {
            checks.insert(
                "coverage".into(),
                check(
                    "cargo tarpaulin --skip-clean --no-fail-fast --out Lcov --output-dir target/itergate-tarpaulin",
                    ReportFormat::Lcov,
                    Some("target/itergate-tarpaulin/lcov.info"),
                ),
            );
        } else {
            notes.push(
                "coverage: neither cargo-llvm-cov with llvm-tools nor cargo-tarpaulin is installed; \
                 `cargo install cargo-llvm-cov` and `rustup component add llvm-tools-preview`, \
                 or `cargo install cargo-tarpaulin` (no llvm-tools needed), then run `itergate init --force`"
                    .into(),
            );
        }
    }
    checks.insert(
        "lint".into(),
        check(
            "cargo clippy --all-targets --message-format=json --color never",
            ReportFormat::CargoJson,
            None,
        ),
    );
}
