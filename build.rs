//! Records the commit a release is built from, for `itergate --version`: the release
//! workflow sets `ITERGATE_BUILD_COMMIT`. A build from a checkout or a published crate
//! says its version alone: reading the checkout's commit here would rebuild the whole
//! crate on every commit.

fn main() {
    println!("cargo:rerun-if-env-changed=ITERGATE_BUILD_COMMIT");
    let version = env!("CARGO_PKG_VERSION");
    let long = match std::env::var("ITERGATE_BUILD_COMMIT")
        .ok()
        .filter(|c| !c.is_empty())
    {
        Some(commit) => format!("{version} ({commit})"),
        None => version.to_string(),
    };
    println!("cargo:rustc-env=ITERGATE_LONG_VERSION={long}");
}
