//! The embedded backend: one SQLite file (WAL, `synchronous=FULL`) for one process. The
//! schema's version is `PRAGMA user_version`. One statement claims a job: SQLite runs one
//! writer at a time, so the rule "no earlier unfinished job of the key" is enough for one
//! job per pull request at a time, in order.

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::SqlitePool;

use super::{JobRow, OpenOptions, StoreError};

/// Schema steps; step `i` brings the database to version `i + 1`. Only ever append.
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
    // Version 2: the next job is found among the unfinished ones, not after every done one.
    "CREATE INDEX IF NOT EXISTS deliveries_unfinished ON deliveries (seq)
        WHERE done_at IS NULL;",
];

pub(super) async fn open(path: &Path, options: &OpenOptions) -> Result<SqlitePool, StoreError> {
    let connect = SqliteConnectOptions::from_str("sqlite:")?
        .filename(path)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Full)
        // A database locked for longer is unavailable: intake answers 503 well inside
        // GitHub's 10 seconds, and GitHub (or the sweep) delivers again.
        .busy_timeout(Duration::from_secs(3));
    let pool = SqlitePoolOptions::new()
        .max_connections(options.max_connections.max(1))
        .connect_with(connect)
        .await?;
    migrate(&pool).await?;
    Ok(pool)
}

async fn migrate(pool: &SqlitePool) -> Result<(), StoreError> {
    let mut conn = pool.acquire().await?;
    let version: i64 = sqlx::query_scalar("PRAGMA user_version")
        .fetch_one(&mut *conn)
        .await?;
    let known = i64::try_from(SCHEMA.len()).unwrap_or(i64::MAX);
    if version > known {
        tracing::warn!(
            version,
            known,
            "the database's schema is newer than this version knows; its steps only add, so \
             this version keeps working"
        );
    }
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
        tracing::info!(version = target, "database schema upgraded");
    }
    Ok(())
}

pub(super) async fn claim(
    pool: &SqlitePool,
    owner: &str,
    now: i64,
    lease_until: i64,
) -> Result<Option<JobRow>, StoreError> {
    let row = sqlx::query_as::<_, JobRow>(concat!(
        "UPDATE deliveries SET lease_owner = $1, lease_until = $2, attempts = attempts + 1
         WHERE seq = (
            SELECT d.seq FROM deliveries d
            WHERE d.done_at IS NULL AND d.run_at <= $3
              AND (d.lease_until IS NULL OR d.lease_until < $3)
              AND NOT EXISTS (
                SELECT 1 FROM deliveries e
                WHERE e.job_key = d.job_key AND e.done_at IS NULL AND e.seq < d.seq)
            ORDER BY d.seq LIMIT 1)
         RETURNING ",
        job_columns!()
    ))
    .bind(owner)
    .bind(lease_until)
    .bind(now)
    .fetch_optional(pool)
    .await?;
    Ok(row)
}
