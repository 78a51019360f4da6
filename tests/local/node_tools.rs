//! The pinned Node dev tools of `scripts/ensure-node-tools.sh` (vitest, typescript, eslint,
//! jest, mocha), given to a throwaway project.

use std::path::Path;
use std::process::Command;

/// The pinned tools of `scripts/ensure-node-tools.sh` (installed by it when missing), given
/// to `project` as its `node_modules`.
pub fn node_tools_into(project: &Path) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/ensure-node-tools.sh");
    let out = Command::new("bash")
        .arg(&script)
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = String::from_utf8_lossy(&out.stdout);
    let modules = Path::new(dir.lines().last().expect("the directory")).join("node_modules");
    let copied = Command::new("cp")
        .arg("-al")
        .arg(&modules)
        .arg(project.join("node_modules"))
        .status()
        .is_ok_and(|s| s.success());
    if !copied {
        std::os::unix::fs::symlink(&modules, project.join("node_modules")).expect("link");
    }
}
