//! Advisory locks between itergate processes working on one repository: files under
//! `<common git dir>/itergate/`, so every worktree of a repository shares them.
//!
//! They only queue up work that would otherwise race; they are polled rather than awaited
//! (a process stopped with ^Z must not hang every other push), and a lock that cannot be
//! opened or had in time is skipped with a warning rather than failing the command.

use std::fs::{self, File};
use std::path::Path;
use std::time::{Duration, Instant};

const POLL: Duration = Duration::from_millis(2);

/// Runs `body` holding the lock `<common_dir>/itergate/<name>.lock`, or without it once
/// `wait` has passed (or when the lock file cannot be opened). Not reentrant: `body` must
/// not take the same lock again (it would wait for itself).
pub fn with_lock<T>(common_dir: &Path, name: &str, wait: Duration, body: impl FnOnce() -> T) -> T {
    let mut lock = open(common_dir, name);
    let deadline = Instant::now() + wait;
    let _guard = loop {
        let Some(lock) = lock.as_mut() else {
            break None;
        };
        match lock.try_write() {
            Ok(guard) => break Some(guard),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock && Instant::now() < deadline => {
                std::thread::sleep(POLL);
            }
            Err(error) => {
                tracing::warn!(lock = name, %error, "cannot take the lock; going ahead without it");
                break None;
            }
        }
    };
    body()
}

fn open(common_dir: &Path, name: &str) -> Option<fd_lock::RwLock<File>> {
    let dir = common_dir.join("itergate");
    let path = dir.join(format!("{name}.lock"));
    let opened = fs::create_dir_all(&dir).and_then(|()| {
        fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
    });
    match opened {
        Ok(file) => Some(fd_lock::RwLock::new(file)),
        Err(error) => {
            tracing::warn!(path = %path.display(), %error, "cannot open the lock; going ahead without it");
            None
        }
    }
}
