//! Records the commit itergate is built from, for `itergate --version`: the git commit of a
//! checkout, else `ITERGATE_BUILD_COMMIT` (set by the release workflow), else nothing (a
//! build from a published crate).

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=ITERGATE_BUILD_COMMIT");
    println!("cargo:rerun-if-changed=.git/HEAD");
    println!("cargo:rerun-if-changed=.git/refs/heads");
    let commit = std::env::var("ITERGATE_BUILD_COMMIT")
        .ok()
        .filter(|c| !c.is_empty())
        .or_else(|| {
            let out = Command::new("git")
                .args(["rev-parse", "--short=12", "HEAD"])
                .output()
                .ok()?;
            out.status
                .success()
                .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
                .filter(|c| !c.is_empty())
        });
    let version = env!("CARGO_PKG_VERSION");
    let long = match commit {
        Some(commit) => format!("{version} ({commit})"),
        None => version.to_string(),
    };
    println!("cargo:rustc-env=ITERGATE_LONG_VERSION={long}");
}
