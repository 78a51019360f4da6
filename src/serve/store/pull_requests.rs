//! What the App keeps per installation and pull request beside the queue: installations
//! removed, sticky-state revisions, and heads waiting for CI's record.

use super::sql::Statement;
use super::{Store, StoreError, Waiting};

impl Store {
    /// Records an installation's state (`installation` / `installation_repositories`).
    pub async fn set_installation(
        &self,
        id: i64,
        account: Option<&str>,
        removed: bool,
        now: i64,
    ) -> Result<(), StoreError> {
        self.backend
            .execute(
                Statement::new(
                    "INSERT INTO installations (id, account, removed, updated_at)
                     VALUES ($1, $2, $3, $4)
                     ON CONFLICT (id) DO UPDATE SET
                        account = COALESCE(excluded.account, installations.account),
                        removed = excluded.removed, updated_at = excluded.updated_at",
                )
                .bind(id)
                .bind(account)
                .bind(removed)
                .bind(now),
            )
            .await?;
        Ok(())
    }

    /// Whether the installation was removed (an event of an uninstalled App is ignored).
    pub async fn installation_removed(&self, id: i64) -> Result<bool, StoreError> {
        let removed: Option<bool> = self
            .backend
            .scalar_optional(
                Statement::new("SELECT removed FROM installations WHERE id = $1").bind(id),
            )
            .await?;
        Ok(removed.unwrap_or(false))
    }

    /// The highest sticky-state revision written to the pull request of `job_key`.
    pub async fn state_revision(&self, job_key: &str) -> Result<Option<u64>, StoreError> {
        let revision: Option<i64> = self
            .backend
            .scalar_optional(
                Statement::new("SELECT revision FROM state_revisions WHERE job_key = $1")
                    .bind(job_key),
            )
            .await?;
        Ok(revision.map(|r| u64::try_from(r).unwrap_or(0)))
    }

    /// Raises the recorded revision of `job_key`'s pull request to `revision`; a lower one
    /// (a job that ran late) changes nothing.
    pub async fn raise_state_revision(
        &self,
        job_key: &str,
        revision: u64,
        now: i64,
    ) -> Result<(), StoreError> {
        let revision = i64::try_from(revision).unwrap_or(i64::MAX);
        self.backend
            .execute(
                Statement::new(
                    "INSERT INTO state_revisions (job_key, revision, updated_at)
                     VALUES ($1, $2, $3)
                     ON CONFLICT (job_key) DO UPDATE SET
                        revision = excluded.revision, updated_at = excluded.updated_at
                     WHERE state_revisions.revision < excluded.revision",
                )
                .bind(job_key)
                .bind(revision)
                .bind(now),
            )
            .await?;
        Ok(())
    }

    /// Records that `waiting.head_sha` waits for CI, first checked at `first_check_at`. The
    /// same head again changes nothing (its checks keep their pace); a new head starts over.
    pub async fn set_waiting(
        &self,
        waiting: &Waiting,
        first_check_at: i64,
    ) -> Result<(), StoreError> {
        self.backend
            .execute(
                Statement::new(
                    "INSERT INTO waiting (job_key, installation_id, repository, pr, head_sha,
                        since, checks, next_check_at)
                     VALUES ($1, $2, $3, $4, $5, $6, 0, $7)
                     ON CONFLICT (job_key) DO UPDATE SET
                        installation_id = excluded.installation_id,
                        repository = excluded.repository, pr = excluded.pr,
                        head_sha = excluded.head_sha, since = excluded.since,
                        checks = 0, next_check_at = excluded.next_check_at
                     WHERE waiting.head_sha <> excluded.head_sha",
                )
                .bind(&waiting.job_key)
                .bind(waiting.installation_id)
                .bind(&waiting.repository)
                .bind(waiting.pr)
                .bind(&waiting.head_sha)
                .bind(waiting.since)
                .bind(first_check_at),
            )
            .await?;
        Ok(())
    }

    /// The pull request of `job_key` waits no more: for `head_sha` (a record decided it),
    /// or for any head (`None`: the PR was closed).
    pub async fn clear_waiting(
        &self,
        job_key: &str,
        head_sha: Option<&str>,
    ) -> Result<(), StoreError> {
        self.backend
            .execute(
                Statement::new(
                    "DELETE FROM waiting WHERE job_key = $1 AND ($2 IS NULL OR head_sha = $2)",
                )
                .bind(job_key)
                .bind(head_sha),
            )
            .await?;
        Ok(())
    }

    /// Up to `limit` waiting pull requests due for a check at `now` whose key has no
    /// unfinished job (an event in the queue will tell more than a check).
    pub async fn due_waiting(&self, now: i64, limit: i64) -> Result<Vec<Waiting>, StoreError> {
        type Row = (String, i64, String, i64, String, i64, i64);
        let rows: Vec<Row> = self
            .backend
            .fetch_all(
                Statement::new(
                    "SELECT w.job_key, w.installation_id, w.repository, w.pr, w.head_sha,
                        w.since, w.checks
                     FROM waiting w
                     WHERE w.next_check_at <= $1
                       AND NOT EXISTS (SELECT 1 FROM deliveries d
                                       WHERE d.job_key = w.job_key AND d.done_at IS NULL)
                     ORDER BY w.next_check_at LIMIT $2",
                )
                .bind(now)
                .bind(limit),
            )
            .await?;
        Ok(rows
            .into_iter()
            .map(
                |(job_key, installation_id, repository, pr, head_sha, since, checks)| Waiting {
                    job_key,
                    installation_id,
                    repository,
                    pr,
                    head_sha,
                    since,
                    checks,
                },
            )
            .collect())
    }

    /// One more check of `waiting` was asked for; the next is due at `next_check_at`.
    pub async fn checked_waiting(
        &self,
        waiting: &Waiting,
        next_check_at: i64,
    ) -> Result<(), StoreError> {
        self.backend
            .execute(
                Statement::new(
                    "UPDATE waiting SET checks = checks + 1, next_check_at = $3
                     WHERE job_key = $1 AND head_sha = $2",
                )
                .bind(&waiting.job_key)
                .bind(&waiting.head_sha)
                .bind(next_check_at),
            )
            .await?;
        Ok(())
    }
}
