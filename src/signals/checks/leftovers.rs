//! No process a check starts outlives the checks. Each check leads a process group, which
//! is killed whole when its command ends; a process that left the group (`setsid`, a
//! double fork) is still itergate's: on Linux itergate is the subreaper of everything it
//! starts (`PR_SET_CHILD_SUBREAPER`), so an orphan is re-parented to it instead of to
//! init. When the last observation running in this process ends, every child itergate
//! still has is such an orphan: it is killed and reaped, and so are the orphans it leaves,
//! before anything reads a report or writes a record. A daemon the code under test starts
//! cannot rewrite what itergate reads or writes afterwards.

use std::sync::Mutex;

/// How many observations run now in this process.
static RUNNING: Mutex<usize> = Mutex::new(0);

/// Held while checks (and `setup:` commands) may run; the last one dropped kills what they
/// left behind.
#[must_use = "the checks' leftovers are killed when the guard drops"]
pub struct Watch(());

impl Watch {
    pub fn start() -> Watch {
        #[cfg(target_os = "linux")]
        linux::become_subreaper();
        if let Ok(mut running) = RUNNING.lock() {
            *running += 1;
        }
        Watch(())
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        // The lock is held while the leftovers are killed: no observation starts meanwhile.
        let Ok(mut running) = RUNNING.lock() else {
            return;
        };
        *running = running.saturating_sub(1);
        if *running == 0 {
            let killed = kill_leftovers();
            if killed > 0 {
                tracing::info!(killed, "killed the processes the checks left running");
            }
        }
    }
}

/// Kills and reaps every child of this process; returns how many there were.
fn kill_leftovers() -> usize {
    #[cfg(target_os = "linux")]
    {
        linux::kill_children()
    }
    #[cfg(not(target_os = "linux"))]
    {
        0
    }
}

#[cfg(target_os = "linux")]
mod linux {
    pub(super) fn become_subreaper() {
        // SAFETY: prctl with an integer argument changes only this process's attribute.
        unsafe {
            libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        }
    }

    /// This process's children, from every thread's `children` list.
    fn children() -> Vec<i32> {
        let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
            return Vec::new();
        };
        let mut pids: Vec<i32> = tasks
            .filter_map(Result::ok)
            .filter_map(|task| std::fs::read_to_string(task.path().join("children")).ok())
            .flat_map(|list| {
                list.split_whitespace()
                    .filter_map(|pid| pid.parse().ok())
                    .collect::<Vec<i32>>()
            })
            .collect();
        pids.sort_unstable();
        pids.dedup();
        pids
    }

    pub(super) fn kill_children() -> usize {
        let mut killed = 0;
        // Killing an orphan may orphan its own children, which then come to this process.
        for _ in 0..64 {
            let pids = children();
            if pids.is_empty() {
                break;
            }
            for &pid in &pids {
                // SAFETY: signalling and reaping a child of this process.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                    libc::waitpid(pid, std::ptr::null_mut(), 0);
                }
            }
            killed += pids.len();
        }
        killed
    }
}
