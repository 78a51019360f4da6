//! A person at a terminal: `itergate run` under tmux, stopped with Ctrl-C while a check runs.

use std::process::Command;

use crate::gitrepo;
use gitrepo::git;
use std::time::{Duration, Instant};

/// A tmux server of its own, killed with the test.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn new() -> Tmux {
        let version = Command::new("tmux").arg("-V").output();
        assert!(
            version.is_ok_and(|o| o.status.success()),
            "tmux is needed for the terminal test (Debian's `tmux` package)"
        );
        Tmux {
            socket: format!("itergate-test-{}", std::process::id()),
        }
    }

    fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("tmux runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "itg"])
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        self.run(&["kill-server"]);
    }
}

#[test]
fn ctrl_c_in_a_terminal_stops_the_run_and_leaves_no_worktree() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = dir.path().join("repo");
    std::fs::create_dir(&repo).expect("mkdir");
    let started = dir.path().join("started");
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(
        repo.join(".itergate.yml"),
        format!(
            "checks:\n  slow:\n    run: touch {}; sleep 30\n",
            started.display()
        ),
    )
    .expect("write");
    std::fs::write(repo.join("a.txt"), "a\n").expect("write");
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "base"]);
    // Uncommitted changes: HEAD is checked in a scratch worktree.
    std::fs::write(repo.join("a.txt"), "changed\n").expect("write");
    let tmux = Tmux::new();
    // The shell keeps going after Ctrl-C (a trap, not an ignored signal, so itergate gets
    // the default disposition) and prints itergate's exit status.
    let script = format!(
        "trap 'true' INT; cd {} && NO_COLOR=1 {} run; echo EXIT=$?; sleep 60",
        repo.display(),
        env!("CARGO_BIN_EXE_itergate")
    );
    tmux.run(&[
        "new-session",
        "-d",
        "-s",
        "itg",
        "-x",
        "160",
        "-y",
        "40",
        "sh",
        "-c",
        &script,
    ]);
    let begun = Instant::now();
    while !started.exists() {
        assert!(
            begun.elapsed() < Duration::from_secs(30),
            "the check never started:\n{}",
            tmux.screen()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    tmux.run(&["send-keys", "-t", "itg", "C-c"]);
    let stopped = Instant::now();
    let screen = loop {
        let screen = tmux.screen();
        if screen.contains("EXIT=") {
            break screen;
        }
        assert!(
            stopped.elapsed() < Duration::from_secs(10),
            "still running after Ctrl-C:\n{screen}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(screen.contains("EXIT=130"), "{screen}");
    assert!(screen.contains("interrupted"), "{screen}");
    assert!(screen.contains("nothing was recorded"), "{screen}");
    let worktrees = Command::new("git")
        .args(["worktree", "list"])
        .current_dir(&repo)
        .output()
        .expect("git");
    let listed = String::from_utf8_lossy(&worktrees.stdout);
    assert!(!listed.contains("itergate-wt-"), "{listed}");
    assert_eq!(listed.lines().count(), 1, "{listed}");
    let notes = Command::new("git")
        .args(["notes", "--ref", "itergate", "list"])
        .current_dir(&repo)
        .output()
        .expect("git");
    assert!(
        String::from_utf8_lossy(&notes.stdout).trim().is_empty(),
        "nothing recorded"
    );
}
