//! The replicas sharing the database. Each registers under a random instance id (its
//! workers lease jobs as `<id>-<n>`), beats its heart while it runs and leaves on exit. One
//! killed without leaving is dead for certain only when it ran on this machine — the same
//! boot and pid namespace ([`super::super::machine`]) — and its process is gone: its jobs
//! run again at once. Anywhere else its leases run out, as leases do. Two containers that
//! share a hostname but not a pid namespace never take each other for dead.

use super::sql::Statement;
use super::{Store, StoreError};

/// A replica's row is kept this long after its last heartbeat, then pruned.
const FORGOTTEN_AFTER_MS: i64 = 24 * 3600 * 1000;

/// This process among the replicas.
#[derive(Debug, Clone)]
pub struct Replica {
    /// Random, unique among the replicas; its workers are `<id>-<n>`.
    pub id: String,
    /// Where its process runs: processes with the same `machine` see each other's pids.
    pub machine: String,
    pub pid: u32,
}

impl Store {
    /// Registers `replica`, and forgets replicas silent for a day.
    pub async fn register(&self, replica: &Replica, now: i64) -> Result<(), StoreError> {
        self.backend
            .execute(
                Statement::new("DELETE FROM replicas WHERE heartbeat_at < $1")
                    .bind(now - FORGOTTEN_AFTER_MS),
            )
            .await?;
        self.backend
            .execute(
                Statement::new(
                    "INSERT INTO replicas (id, machine, pid, started_at, heartbeat_at)
                     VALUES ($1, $2, $3, $4, $4)",
                )
                .bind(&replica.id)
                .bind(&replica.machine)
                .bind(i64::from(replica.pid))
                .bind(now),
            )
            .await?;
        Ok(())
    }

    /// `id` still runs at `now`.
    pub async fn heartbeat(&self, id: &str, now: i64) -> Result<(), StoreError> {
        self.backend
            .execute(
                Statement::new("UPDATE replicas SET heartbeat_at = $2 WHERE id = $1")
                    .bind(id)
                    .bind(now),
            )
            .await?;
        Ok(())
    }

    /// `id` stops: its row goes.
    pub async fn leave(&self, id: &str) -> Result<(), StoreError> {
        self.backend
            .execute(Statement::new("DELETE FROM replicas WHERE id = $1").bind(id))
            .await?;
        Ok(())
    }

    /// The replicas registered now: (id, machine, pid, heartbeat_at).
    pub async fn replicas(&self) -> Result<Vec<(String, String, i64, i64)>, StoreError> {
        self.backend
            .fetch_all(Statement::new(
                "SELECT id, machine, pid, heartbeat_at FROM replicas ORDER BY started_at, id",
            ))
            .await
    }

    /// Frees the leases of the replicas on `me`'s machine whose process is gone (`alive`
    /// says which pids run there): a previous incarnation killed with SIGKILL, whose jobs
    /// then run again at once instead of when their leases end. Returns how many jobs were
    /// freed.
    pub async fn release_dead_leases(
        &self,
        me: &Replica,
        alive: &(dyn Fn(u32) -> bool + Sync),
    ) -> Result<u64, StoreError> {
        let here: Vec<(String, i64)> = self
            .backend
            .fetch_all(
                Statement::new("SELECT id, pid FROM replicas WHERE machine = $1 AND id <> $2")
                    .bind(&me.machine)
                    .bind(&me.id),
            )
            .await?;
        let mut freed = 0;
        for (id, pid) in here {
            if u32::try_from(pid).is_ok_and(alive) {
                continue;
            }
            freed += self.release_leases_of(&id).await?;
            self.leave(&id).await?;
        }
        Ok(freed)
    }
}
