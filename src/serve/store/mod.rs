//! The App's durable inbox and job queue: one SQLite table of deliveries (sqlx, WAL,
//! `synchronous=FULL`). A delivery is committed before its 2xx; then it is a job, claimed
//! with a lease, done once.
//!
//! - **Group commit.** Intake hands rows to one writer task that commits everything that
//!   arrived meanwhile in one transaction (one fsync for many deliveries) and then answers
//!   each. A delivery id seen before is reported as a duplicate (`INSERT ... ON CONFLICT DO
//!   NOTHING`), so GitHub's redelivery and a second replica's copy make no second job.
//! - **Order per pull request.** Every delivery has a job key (`owner/repo#12`, or the
//!   repository for events about no PR). A job is claimed only when no earlier job of its
//!   key is unfinished, so one PR's events run one at a time, in the order they arrived.
//! - **Leases.** A claim sets `lease_until`; a worker that dies leaves a lease that runs
//!   out, and the job is claimed again. Handlers are idempotent, so a job cut short and run
//!   again has its effects once.
//! - **Retries.** A failed job is rescheduled with backoff up to [`MAX_ATTEMPTS`]; a rate
//!   limit reschedules it at the reset time without counting an attempt (never dropped).

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Row, SqlitePool};
use tokio::sync::{mpsc, oneshot};

/// Attempts before a job is given up (its outcome says why; the log too).
pub const MAX_ATTEMPTS: i64 = 8;
/// Deliveries committed together at most.
const GROUP_COMMIT_MAX: usize = 512;

const SCHEMA: &[&str] = &[
    // Version 1.
    "CREATE TABLE IF NOT EXISTS deliveries (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        delivery_id TEXT NOT NULL UNIQUE,
        event TEXT NOT NULL,
        action TEXT,
        installation_id INTEGER,
        repository TEXT,
        job_key TEXT NOT NULL,
        payload BLOB NOT NULL,
        received_at INTEGER NOT NULL,
        run_at INTEGER NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        lease_owner TEXT,
        lease_until INTEGER,
        done_at INTEGER,
        outcome TEXT,
        last_error TEXT
    );
    CREATE INDEX IF NOT EXISTS deliveries_pending ON deliveries (job_key, seq)
        WHERE done_at IS NULL;
    CREATE TABLE IF NOT EXISTS installations (
        id INTEGER PRIMARY KEY,
        account TEXT,
        removed INTEGER NOT NULL DEFAULT 0,
        updated_at INTEGER NOT NULL
    );",
];

/// A delivery as intake stores it.
#[derive(Debug, Clone)]
pub struct NewDelivery {
    pub delivery_id: String,
    pub event: String,
    pub action: Option<String>,
    pub installation_id: Option<i64>,
    pub repository: Option<String>,
    pub job_key: String,
    pub payload: Vec<u8>,
}

/// Whether intake stored a new delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Received {
    New,
    Duplicate,
}

/// A claimed job.
#[derive(Debug, Clone)]
pub struct Job {
    pub seq: i64,
    pub delivery_id: String,
    pub event: String,
    pub installation_id: Option<i64>,
    pub payload: Vec<u8>,
    pub attempts: i64,
    pub received_at: i64,
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
    #[error("the database writer has stopped")]
    WriterGone,
}

type Reply = oneshot::Sender<Result<Received, String>>;

/// The inbox and queue. Cheap to clone.
#[derive(Clone)]
pub struct Store {
    pool: SqlitePool,
    writer: mpsc::Sender<(NewDelivery, Reply)>,
}

impl Store {
    /// Opens (creating it if needed) the database at `path` and brings its schema up to
    /// date.
    pub async fn open(path: &Path) -> Result<Store, StoreError> {
        let options = SqliteConnectOptions::from_str("sqlite:")?
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full)
            .busy_timeout(Duration::from_secs(10));
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(options)
            .await?;
        migrate(&pool).await?;
        let (writer, inbox) = mpsc::channel(4 * GROUP_COMMIT_MAX);
        tokio::spawn(write_loop(pool.clone(), inbox));
        Ok(Store { pool, writer })
    }

    /// Commits `delivery` (with whatever else arrived meanwhile) and says whether it was
    /// new. Returns only after the commit.
    pub async fn receive(&self, delivery: NewDelivery) -> Result<Received, StoreError> {
        let (reply, answer) = oneshot::channel();
        self.writer
            .send((delivery, reply))
            .await
            .map_err(|_| StoreError::WriterGone)?;
        match answer.await {
            Ok(Ok(received)) => Ok(received),
            Ok(Err(message)) => Err(StoreError::Database(sqlx::Error::Protocol(message))),
            Err(_) => Err(StoreError::WriterGone),
        }
    }

    /// Whether the database answers.
    pub async fn ping(&self) -> Result<(), StoreError> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }

    /// Claims the next runnable job for `owner` until `now + lease`.
    pub async fn claim(
        &self,
        owner: &str,
        now: i64,
        lease: Duration,
    ) -> Result<Option<Job>, StoreError> {
        let lease_until = now + i64::try_from(lease.as_millis()).unwrap_or(i64::MAX / 2);
        let row = sqlx::query(
            "UPDATE deliveries SET lease_owner = $1, lease_until = $2, attempts = attempts + 1
             WHERE seq = (
                SELECT d.seq FROM deliveries d
                WHERE d.done_at IS NULL AND d.run_at <= $3
                  AND (d.lease_until IS NULL OR d.lease_until < $3)
                  AND NOT EXISTS (
                    SELECT 1 FROM deliveries e
                    WHERE e.job_key = d.job_key AND e.done_at IS NULL AND e.seq < d.seq)
                ORDER BY d.seq LIMIT 1)
             RETURNING seq, delivery_id, event, installation_id, payload, attempts, received_at",
        )
        .bind(owner)
        .bind(lease_until)
        .bind(now)
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.map(|r| Job {
            seq: r.get("seq"),
            delivery_id: r.get("delivery_id"),
            event: r.get("event"),
            installation_id: r.get("installation_id"),
            payload: r.get("payload"),
            attempts: r.get("attempts"),
            received_at: r.get("received_at"),
        }))
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
        let done = sqlx::query(
            "UPDATE deliveries SET done_at = $1, outcome = $2, lease_owner = NULL, lease_until = NULL
             WHERE seq = $3 AND lease_owner = $4 AND done_at IS NULL",
        )
        .bind(now)
        .bind(outcome)
        .bind(job.seq)
        .bind(owner)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
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
        sqlx::query(
            "UPDATE deliveries SET run_at = $1, last_error = $2, lease_owner = NULL,
                lease_until = NULL, attempts = attempts - $3
             WHERE seq = $4 AND lease_owner = $5 AND done_at IS NULL",
        )
        .bind(run_at)
        .bind(error)
        .bind(if counted { 0 } else { 1 })
        .bind(job.seq)
        .bind(owner)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Extends the lease of a job still being worked on.
    pub async fn extend(&self, job: &Job, owner: &str, until: i64) -> Result<(), StoreError> {
        sqlx::query("UPDATE deliveries SET lease_until = $1 WHERE seq = $2 AND lease_owner = $3")
            .bind(until)
            .bind(job.seq)
            .bind(owner)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Jobs not done yet (the queue depth).
    pub async fn pending(&self) -> Result<i64, StoreError> {
        Ok(
            sqlx::query_scalar("SELECT COUNT(*) FROM deliveries WHERE done_at IS NULL")
                .fetch_one(&self.pool)
                .await?,
        )
    }

    /// Whether the delivery id is in the inbox.
    pub async fn has_delivery(&self, delivery_id: &str) -> Result<bool, StoreError> {
        let found: Option<i64> =
            sqlx::query_scalar("SELECT seq FROM deliveries WHERE delivery_id = $1")
                .bind(delivery_id)
                .fetch_optional(&self.pool)
                .await?;
        Ok(found.is_some())
    }

    /// Records an installation's state (`installation` / `installation_repositories`).
    pub async fn set_installation(
        &self,
        id: i64,
        account: Option<&str>,
        removed: bool,
        now: i64,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO installations (id, account, removed, updated_at) VALUES ($1, $2, $3, $4)
             ON CONFLICT (id) DO UPDATE SET account = COALESCE(excluded.account, account),
                removed = excluded.removed, updated_at = excluded.updated_at",
        )
        .bind(id)
        .bind(account)
        .bind(removed)
        .bind(now)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Whether the installation was removed (an event of an uninstalled App is ignored).
    pub async fn installation_removed(&self, id: i64) -> Result<bool, StoreError> {
        let removed: Option<bool> =
            sqlx::query_scalar("SELECT removed FROM installations WHERE id = $1")
                .bind(id)
                .fetch_optional(&self.pool)
                .await?;
        Ok(removed.unwrap_or(false))
    }

    /// Lets pending writes finish and closes the connections.
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

async fn migrate(pool: &SqlitePool) -> Result<(), StoreError> {
    let mut conn = pool.acquire().await?;
    let version: i64 = sqlx::query_scalar("PRAGMA user_version")
        .fetch_one(&mut *conn)
        .await?;
    for (index, step) in SCHEMA.iter().enumerate() {
        let target = i64::try_from(index).unwrap_or(i64::MAX) + 1;
        if version >= target {
            continue;
        }
        let mut tx = sqlx::Connection::begin(&mut *conn).await?;
        sqlx::raw_sql(step).execute(&mut *tx).await?;
        sqlx::raw_sql(&format!("PRAGMA user_version = {target}"))
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
    }
    Ok(())
}

/// Commits what intake hands over, in groups: the first row, then every row already
/// waiting (up to [`GROUP_COMMIT_MAX`]), in one transaction.
async fn write_loop(pool: SqlitePool, mut inbox: mpsc::Receiver<(NewDelivery, Reply)>) {
    let mut batch = Vec::with_capacity(GROUP_COMMIT_MAX);
    while let Some(first) = inbox.recv().await {
        batch.push(first);
        while batch.len() < GROUP_COMMIT_MAX {
            match inbox.try_recv() {
                Ok(next) => batch.push(next),
                Err(_) => break,
            }
        }
        let results = commit_batch(&pool, &batch).await;
        for ((_, reply), result) in batch.drain(..).zip(results) {
            let _ = reply.send(result);
        }
    }
}

async fn commit_batch(
    pool: &SqlitePool,
    batch: &[(NewDelivery, Reply)],
) -> Vec<Result<Received, String>> {
    let fail = |e: sqlx::Error| vec![Err(e.to_string()); batch.len()];
    let now = now_ms();
    let mut tx = match pool.begin().await {
        Ok(tx) => tx,
        Err(e) => return fail(e),
    };
    let mut results = Vec::with_capacity(batch.len());
    for (d, _) in batch {
        let inserted = sqlx::query(
            "INSERT INTO deliveries (delivery_id, event, action, installation_id, repository,
                job_key, payload, received_at, run_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)
             ON CONFLICT (delivery_id) DO NOTHING",
        )
        .bind(&d.delivery_id)
        .bind(&d.event)
        .bind(&d.action)
        .bind(d.installation_id)
        .bind(&d.repository)
        .bind(&d.job_key)
        .bind(&d.payload)
        .bind(now)
        .execute(&mut *tx)
        .await;
        match inserted {
            Ok(done) if done.rows_affected() == 1 => results.push(Ok(Received::New)),
            Ok(_) => results.push(Ok(Received::Duplicate)),
            Err(e) => return fail(e),
        }
    }
    match tx.commit().await {
        Ok(()) => results,
        Err(e) => fail(e),
    }
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
}
