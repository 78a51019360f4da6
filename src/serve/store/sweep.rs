//! What the sweep and the metrics read and clean up: the queue's depth, finished
//! deliveries pruned after their retention, and the sweep's leader lock.

use super::sql::Statement;
use super::{Backend, Store, StoreError};

impl Store {
    /// Jobs not done yet (the queue depth, all replicas together).
    pub async fn pending(&self) -> Result<i64, StoreError> {
        self.backend
            .scalar(Statement::new(
                "SELECT COUNT(*) FROM deliveries WHERE done_at IS NULL",
            ))
            .await
    }

    /// Pull requests waiting for CI's record (all replicas together).
    pub async fn waiting(&self) -> Result<i64, StoreError> {
        self.backend
            .scalar(Statement::new("SELECT COUNT(*) FROM waiting"))
            .await
    }

    /// Deletes up to `limit` deliveries finished before `before` (ms), oldest first, and
    /// says how many. Until then a delivery's key answers "seen before"; see
    /// [`crate::serve::sweep::prune`] for how long that must be.
    pub async fn prune_finished(&self, before: i64, limit: i64) -> Result<u64, StoreError> {
        self.backend
            .execute(
                Statement::new(
                    "DELETE FROM deliveries WHERE seq IN (
                        SELECT seq FROM deliveries WHERE done_at IS NOT NULL AND done_at < $1
                        ORDER BY done_at LIMIT $2)",
                )
                .bind(before)
                .bind(limit),
            )
            .await
    }

    /// Whether this process may run the redelivery sweep now. SQLite has one process; on
    /// PostgreSQL the replica holding a session advisory lock is the sweeper, until its
    /// connection ends (it stopped, died, or lost the database), when another takes over.
    pub async fn hold_sweep_lock(&self) -> Result<bool, StoreError> {
        match &self.backend {
            Backend::Sqlite(_) => Ok(true),
            Backend::Postgres(pg) => pg.hold_sweep_lock().await,
        }
    }
}
