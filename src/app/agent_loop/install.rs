//! A dependency the agent's work needs, installed by the loop: under the sandbox the agent
//! cannot write `node_modules` or the virtualenv, so it edits the manifest or lockfile and
//! the loop installs from them into the project's environment before the checks run — and
//! the sealed environment's fingerprint finds that change explained by the committed
//! manifest. Packages' install scripts never run (`npm ci --ignore-scripts`); Python
//! requirements are installed from wheels only (`--only-binary :all:`), so no package
//! builds itself here. Go, Cargo and Maven resolve what a manifest names when the checks
//! build, and need nothing.

use std::path::Path;
use std::process::Command;

use git2::{Oid, Repository};

use crate::app::Failure;
use crate::git;

/// Installs what the manifests the iteration `tip` changed since `before` name; says what
/// it ran. A failing install is said and left to the checks (a missing module fails them).
pub(super) fn install_dependencies(
    root: &Path,
    repo: &Repository,
    (before, tip): (Oid, Oid),
) -> Result<Vec<String>, Failure> {
    let changed = git::changed_paths(repo, before, tip)?;
    let mut said = Vec::new();
    for command in commands(root, &changed) {
        let shown = format!("{} {}", command.0, command.1.join(" "));
        let out = Command::new(&command.0)
            .args(&command.1)
            .current_dir(root)
            .env("npm_config_audit", "false")
            .env("npm_config_fund", "false")
            .output();
        said.push(match out {
            Ok(o) if o.status.success() => format!("installed: {shown}"),
            Ok(o) => format!(
                "`{shown}` failed ({}): {}",
                o.status,
                String::from_utf8_lossy(&o.stderr)
                    .lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("")
                    .trim()
            ),
            Err(e) => format!("`{shown}` could not start: {e}"),
        });
    }
    Ok(said)
}

/// The install commands the changed manifests call for, in `root`.
fn commands(root: &Path, changed: &[String]) -> Vec<(String, Vec<String>)> {
    let at_root = |name: &str| changed.iter().any(|p| p == name);
    let mut out = Vec::new();
    let node = ["package.json", "package-lock.json", "npm-shrinkwrap.json"];
    if root.join("node_modules").is_dir() && node.iter().any(|n| at_root(n)) {
        // The lockfile as committed, or (none) what package.json names, never rewritten.
        let locked = ["package-lock.json", "npm-shrinkwrap.json"]
            .iter()
            .any(|l| root.join(l).is_file());
        let words: &[&str] = if locked {
            &["ci", "--ignore-scripts"]
        } else {
            &["install", "--ignore-scripts", "--no-package-lock"]
        };
        out.push(("npm".to_string(), args(words)));
    }
    let requirements: Vec<&String> = changed
        .iter()
        .filter(|p| !p.contains('/') && p.starts_with("requirements") && p.ends_with(".txt"))
        .filter(|p| root.join(p).is_file())
        .collect();
    if let Some(python) = venv_python(root) {
        for file in requirements {
            out.push((
                python.clone(),
                args(&["-m", "pip", "install", "--only-binary", ":all:", "-r", file]),
            ));
        }
    }
    out
}

fn args(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

/// The Python of the virtualenv at the top of `root`, if there is one.
fn venv_python(root: &Path) -> Option<String> {
    let children = std::fs::read_dir(root).ok()?;
    children
        .flatten()
        .map(|c| c.path())
        .filter(|p| p.join("pyvenv.cfg").is_file())
        .map(|p| p.join("bin").join("python"))
        .find(|p| p.is_file())
        .map(|p| p.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::commands;

    #[test]
    fn only_the_manifests_at_the_root_with_an_environment_there_call_for_an_install() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let changed = |paths: &[&str]| paths.iter().map(|p| p.to_string()).collect::<Vec<_>>();
        assert!(
            commands(root, &changed(&["package.json"])).is_empty(),
            "no node_modules"
        );
        std::fs::create_dir(root.join("node_modules")).unwrap();
        let npm = commands(root, &changed(&["package.json", "src/a.js"]));
        assert_eq!(npm.len(), 1);
        assert_eq!(
            npm[0].1,
            ["install", "--ignore-scripts", "--no-package-lock"]
        );
        std::fs::write(root.join("package-lock.json"), "{}").unwrap();
        let npm = commands(root, &changed(&["package-lock.json"]));
        assert_eq!(npm[0].1, ["ci", "--ignore-scripts"]);
        assert!(commands(root, &changed(&["src/a.js", "docs/package.json"])).is_empty());
        std::fs::write(root.join("requirements.txt"), "six\n").unwrap();
        assert!(
            commands(root, &changed(&["requirements.txt"])).is_empty(),
            "no venv"
        );
        std::fs::create_dir_all(root.join(".venv/bin")).unwrap();
        std::fs::write(root.join(".venv/pyvenv.cfg"), "").unwrap();
        std::fs::write(root.join(".venv/bin/python"), "").unwrap();
        let pip = commands(root, &changed(&["requirements.txt"]));
        assert_eq!(pip.len(), 1);
        assert!(pip[0].1.contains(&":all:".to_string()), "{pip:?}");
    }
}
