//! Real git repositories in temporary directories, driven with the `git` CLI, for the
//! tests of the git, notes and hook modules.
#![allow(dead_code)] // each test binary uses a different subset

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use tempfile::TempDir;

/// Variables a surrounding git (e.g. when the suite runs inside a hook) could set to point
/// our git commands at another repository.
const REPOSITORY_ENV_VARS: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_COMMON_DIR",
    "GIT_PREFIX",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
];

/// A `git -C dir` command with a clean repository environment and a fixed identity.
pub fn git_cmd(dir: &Path) -> Command {
    let mut command = Command::new("git");
    command.arg("-C").arg(dir);
    for var in REPOSITORY_ENV_VARS {
        command.env_remove(var);
    }
    command
        .env("GIT_AUTHOR_NAME", "Test Author")
        .env("GIT_AUTHOR_EMAIL", "author@example.com")
        .env("GIT_COMMITTER_NAME", "Test Committer")
        .env("GIT_COMMITTER_EMAIL", "committer@example.com")
        .args(["-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false"]);
    command
}

/// Runs git in `dir`, panicking with its stderr on failure; returns trimmed stdout.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let output = git_output(dir, args);
    assert!(
        output.status.success(),
        "git {args:?} in {} failed: {}",
        dir.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

pub fn git_output(dir: &Path, args: &[&str]) -> Output {
    git_cmd(dir)
        .args(args)
        .output()
        .expect("git is installed and runs")
}

/// A non-bare repository on branch `main`, in a temporary directory that also has room
/// for siblings (a bare remote, linked worktrees, clones).
pub struct TestRepo {
    pub root: TempDir,
    pub path: PathBuf,
}

impl TestRepo {
    pub fn new() -> TestRepo {
        let root = tempfile::tempdir().expect("temporary directory");
        let path = root.path().join("repo");
        std::fs::create_dir(&path).expect("create repo dir");
        git(&path, &["init", "--quiet", "-b", "main"]);
        git(&path, &["config", "user.name", "Test User"]);
        git(&path, &["config", "user.email", "user@example.com"]);
        TestRepo { root, path }
    }

    /// A sibling path inside the same temporary directory.
    pub fn sibling(&self, name: &str) -> PathBuf {
        self.root.path().join(name)
    }

    pub fn git(&self, args: &[&str]) -> String {
        git(&self.path, args)
    }

    pub fn write(&self, file: &str, content: &str) {
        let path = self.path.join(file);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("create parent dirs");
        }
        std::fs::write(path, content).expect("write file");
    }

    /// Writes `file`, commits everything with `message`, returns the new commit id.
    pub fn commit_file(&self, file: &str, content: &str, message: &str) -> String {
        self.write(file, content);
        self.git(&["add", "--all"]);
        self.git(&["commit", "--quiet", "-m", message]);
        self.head()
    }

    pub fn head(&self) -> String {
        self.git(&["rev-parse", "HEAD"])
    }

    /// A bare repository next to this one, added as remote `origin`.
    pub fn add_bare_remote(&self) -> PathBuf {
        let remote = self.sibling("remote.git");
        git(
            self.root.path(),
            &["init", "--quiet", "--bare", "-b", "main", "remote.git"],
        );
        let url = remote.to_str().expect("temp paths are UTF-8");
        self.git(&["remote", "add", "origin", url]);
        remote
    }
}

/// Writes an executable shell script.
pub fn write_script(path: &Path, body: &str) {
    std::fs::write(path, body).expect("write script");
    set_mode(path, 0o755);
}

pub fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

pub fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .expect("metadata")
        .permissions()
        .mode()
        & 0o7777
}
