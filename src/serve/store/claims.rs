//! Claims and leases: a job claimed in order per pull request, completed, rescheduled or
//! parked, its lease extended or checked, and dead workers' leases freed.

use std::time::Duration;

use super::sql::Statement;
use super::{sqlite, Backend, ClaimTimes, Job, Store, StoreError, PARKED};

impl Store {
    /// Frees the leases that this process's workers (`replica`-N) still hold: on exit after
    /// the drain, so that another replica, or the next start, runs those jobs at once. A
    /// worker still running one finds its fence gone before its next write.
    pub async fn release_leases_of(&self, replica: &str) -> Result<u64, StoreError> {
        let prefix = format!("{replica}-");
        let length = i32::try_from(prefix.chars().count()).unwrap_or(i32::MAX);
        // A job with a write in flight keeps its owner and its lease ends now: its settle
        // still runs, for the write may yet land.
        self.backend
            .execute(
                Statement::new(
                    "UPDATE deliveries
                     SET lease_owner = CASE WHEN write_settle_ms IS NULL THEN NULL
                                            ELSE lease_owner END,
                         lease_until = CASE WHEN write_settle_ms IS NULL THEN NULL
                                            WHEN lease_until > $3 THEN $3
                                            ELSE lease_until END
                     WHERE done_at IS NULL AND substr(lease_owner, 1, $2) = $1",
                )
                .bind(&prefix)
                .bind(length)
                .bind(super::now_ms()),
            )
            .await
    }

    /// Claims the next runnable job for `owner` until `now + lease`. A job another worker
    /// leased is runnable again when its lease runs out, or
    /// [`OpenOptions::takeover_settle`](super::OpenOptions::takeover_settle) after that if
    /// the worker had a write to GitHub in flight ([`Store::begin_write`]).
    pub async fn claim(
        &self,
        owner: &str,
        now: i64,
        lease: Duration,
    ) -> Result<Option<Job>, StoreError> {
        self.claim_avoiding(owner, now, lease, &[]).await
    }

    /// [`Store::claim`], of a job of none of the installations in `avoid` (a job of no
    /// installation is never avoided); see [`crate::serve::fair`].
    pub async fn claim_avoiding(
        &self,
        owner: &str,
        now: i64,
        lease: Duration,
        avoid: &[i64],
    ) -> Result<Option<Job>, StoreError> {
        let lease_until = now + i64::try_from(lease.as_millis()).unwrap_or(i64::MAX / 2);
        let times = ClaimTimes {
            now,
            lapsed_before: now,
            lease_until,
        };
        let job = match &self.backend {
            Backend::Sqlite(db) => sqlite::claim(db, owner, times, avoid).await?,
            Backend::Postgres(pg) => pg.claim(owner, times, avoid).await?,
        };
        Ok(job.map(Job::from))
    }

    /// Marks a claimed job done with `outcome`. False if the lease was lost meanwhile (another
    /// worker took the job over; its result stands).
    pub async fn complete(
        &self,
        job: &Job,
        owner: &str,
        now: i64,
        outcome: &str,
    ) -> Result<bool, StoreError> {
        let done = self
            .backend
            .execute(
                Statement::new(
                    "UPDATE deliveries SET done_at = $1, outcome = $2, lease_owner = NULL,
                        lease_until = NULL, write_settle_ms = NULL
                     WHERE seq = $3 AND lease_owner = $4 AND done_at IS NULL",
                )
                .bind(now)
                .bind(outcome)
                .bind(job.seq)
                .bind(owner),
            )
            .await?;
        Ok(done == 1)
    }

    /// Puts a claimed job back to run at `run_at`. `counted: false` (a rate limit) gives the
    /// attempt back.
    pub async fn reschedule(
        &self,
        job: &Job,
        owner: &str,
        run_at: i64,
        error: &str,
        counted: bool,
    ) -> Result<(), StoreError> {
        self.backend
            .execute(
                Statement::new(
                    "UPDATE deliveries SET run_at = $1, last_error = $2, lease_owner = NULL,
                        lease_until = NULL, write_settle_ms = NULL, attempts = attempts - $3
                     WHERE seq = $4 AND lease_owner = $5 AND done_at IS NULL",
                )
                .bind(run_at)
                .bind(error)
                .bind(if counted { 0_i64 } else { 1_i64 })
                .bind(job.seq)
                .bind(owner),
            )
            .await?;
        Ok(())
    }

    /// Parks `job`: its key changes, so the later jobs of its pull request run without
    /// waiting for it; it is retried on its own, in no order with them.
    pub async fn park(&self, job: &Job, owner: &str) -> Result<(), StoreError> {
        self.backend
            .execute(
                Statement::new(
                    "UPDATE deliveries SET job_key = job_key || $1
                     WHERE seq = $2 AND lease_owner = $3 AND done_at IS NULL
                       AND job_key NOT LIKE '%' || $1",
                )
                .bind(PARKED)
                .bind(job.seq)
                .bind(owner),
            )
            .await?;
        Ok(())
    }

    /// Extends the lease of a job still being worked on.
    pub async fn extend(&self, job: &Job, owner: &str, until: i64) -> Result<(), StoreError> {
        self.backend
            .execute(
                Statement::new(
                    "UPDATE deliveries SET lease_until = $1 WHERE seq = $2 AND lease_owner = $3",
                )
                .bind(until)
                .bind(job.seq)
                .bind(owner),
            )
            .await?;
        Ok(())
    }

    /// Passes the fence ([`Store::holds`]) before a write to GitHub and marks the write in
    /// flight: until [`Store::end_write`], a lease that runs out (the worker died mid-call)
    /// is taken over only after the settle, for the write may land late. False when the
    /// job is no longer `owner`'s.
    pub async fn begin_write(&self, job: &Job, owner: &str, now: i64) -> Result<bool, StoreError> {
        let marked = self
            .backend
            .execute(
                Statement::new(
                    "UPDATE deliveries SET write_settle_ms = $5
                     WHERE seq = $1 AND lease_owner = $2 AND attempts = $3 AND done_at IS NULL
                       AND lease_until >= $4",
                )
                .bind(job.seq)
                .bind(owner)
                .bind(job.attempts)
                .bind(now)
                .bind(self.settle_ms),
            )
            .await?;
        Ok(marked == 1)
    }

    /// The write [`Store::begin_write`] marked has ended (answered or failed): a lease
    /// that runs out from now on is taken over at once.
    pub async fn end_write(&self, job: &Job, owner: &str) -> Result<(), StoreError> {
        self.backend
            .execute(
                Statement::new(
                    "UPDATE deliveries SET write_settle_ms = NULL
                     WHERE seq = $1 AND lease_owner = $2 AND done_at IS NULL",
                )
                .bind(job.seq)
                .bind(owner),
            )
            .await?;
        Ok(())
    }

    /// Whether `owner` still holds `job` as claimed (the same attempt, not done, the lease
    /// not run out at `now`): the fence a worker passes before each effect, so that one
    /// that lost its lease (paused, cut off from the database) stops instead of doing
    /// again what the worker that took the job over does.
    pub async fn holds(&self, job: &Job, owner: &str, now: i64) -> Result<bool, StoreError> {
        let held: i64 = self
            .backend
            .scalar(
                Statement::new(
                    "SELECT COUNT(*) FROM deliveries
                     WHERE seq = $1 AND lease_owner = $2 AND attempts = $3 AND done_at IS NULL
                       AND lease_until >= $4",
                )
                .bind(job.seq)
                .bind(owner)
                .bind(job.attempts)
                .bind(now),
            )
            .await?;
        Ok(held > 0)
    }
}
