//! Workers shared fairly across installations. A process counts the jobs it runs per
//! installation, and a worker claims first from the installations running the fewest: it
//! asks for a job of none of those already running one, then of none running two or more,
//! and so on, and last for any job. One installation's flood therefore takes the workers
//! only while no other installation has a job to run, and a single installation still gets
//! every worker.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// The jobs this process runs, per installation.
#[derive(Debug, Default)]
pub struct Running {
    counts: Mutex<HashMap<i64, usize>>,
}

impl Running {
    /// The installations to avoid, claim after claim, until one finds a job.
    pub fn avoid_levels(&self) -> Vec<Vec<i64>> {
        levels(&self.counts.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Counts a job of `installation` until the guard is dropped.
    pub fn start(self: &Arc<Self>, installation: Option<i64>) -> RunningJob {
        if let Some(id) = installation {
            *self
                .counts
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .entry(id)
                .or_default() += 1;
        }
        RunningJob {
            running: Arc::clone(self),
            installation,
        }
    }
}

/// A job counted in [`Running`].
#[derive(Debug)]
pub struct RunningJob {
    running: Arc<Running>,
    installation: Option<i64>,
}

impl Drop for RunningJob {
    fn drop(&mut self) {
        let Some(id) = self.installation else { return };
        let mut counts = self
            .running
            .counts
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(n) = counts.get_mut(&id) {
            *n -= 1;
            if *n == 0 {
                counts.remove(&id);
            }
        }
    }
}

/// For each distinct count of running jobs, lowest first, the installations running at
/// least that many; then none.
fn levels(counts: &HashMap<i64, usize>) -> Vec<Vec<i64>> {
    let mut thresholds: Vec<usize> = counts.values().copied().filter(|&n| n > 0).collect();
    thresholds.sort_unstable();
    thresholds.dedup();
    let mut levels: Vec<Vec<i64>> = thresholds
        .into_iter()
        .map(|k| {
            let mut ids: Vec<i64> = counts
                .iter()
                .filter(|&(_, &n)| n >= k)
                .map(|(&id, _)| id)
                .collect();
            ids.sort_unstable();
            ids
        })
        .collect();
    levels.push(Vec::new());
    levels
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_busiest_installations_are_avoided_first_and_nothing_last() {
        let running = Arc::new(Running::default());
        assert_eq!(running.avoid_levels(), vec![Vec::<i64>::new()]);
        let a1 = running.start(Some(1));
        let _a2 = running.start(Some(1));
        let b = running.start(Some(2));
        let _unattributed = running.start(None);
        assert_eq!(running.avoid_levels(), vec![vec![1, 2], vec![1], vec![]]);
        drop(b);
        assert_eq!(running.avoid_levels(), vec![vec![1], vec![]]);
        drop(a1);
        assert_eq!(running.avoid_levels(), vec![vec![1], vec![]]);
    }
}
