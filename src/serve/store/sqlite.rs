//! The embedded backend: one SQLite file (WAL, `synchronous=FULL`) for one process. The
//! schema's version is `PRAGMA user_version`. One statement claims a job: SQLite runs one
//! writer at a time, so the rule "no earlier unfinished job of the key" is enough for one
//! job per pull request at a time, in order.

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::SqlitePool;

use super::{ClaimTimes, Inbox, JobRow, NewDelivery, OpenOptions, Received, Reply, StoreError};

/// The WAL's size in pages at which a commit checkpoints it itself (SQLite's default is
/// 1,000, about 170 deliveries of 14 KB): only if [`checkpoint_loop`] falls behind.
const WAL_AUTOCHECKPOINT_PAGES: u32 = 20_000;
/// How often the WAL is copied into the database, beside the commits.
const CHECKPOINT_EVERY: Duration = Duration::from_millis(200);

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
    // Version 3: pull requests waiting for CI's verdict, for the reconcile.
    "CREATE TABLE IF NOT EXISTS waiting (
        job_key TEXT PRIMARY KEY,
        installation_id INTEGER NOT NULL,
        repository TEXT NOT NULL,
        pr INTEGER NOT NULL,
        head_sha TEXT NOT NULL,
        since INTEGER NOT NULL,
        checks INTEGER NOT NULL DEFAULT 0,
        next_check_at INTEGER NOT NULL
    );
    CREATE INDEX IF NOT EXISTS waiting_due ON waiting (next_check_at);",
    // Version 4: how the payload is stored (NULL: as it came; see `payload.rs`).
    "ALTER TABLE deliveries ADD COLUMN payload_encoding TEXT;",
    // Version 5: finished deliveries are found by age, to be deleted (`prune_finished`).
    "CREATE INDEX IF NOT EXISTS deliveries_finished ON deliveries (done_at)
        WHERE done_at IS NOT NULL;",
    // Version 6: the highest sticky-state revision written per pull request (its job key),
    // so that an older comment put back, or a deleted one, is not believed.
    "CREATE TABLE IF NOT EXISTS state_revisions (
        job_key TEXT PRIMARY KEY,
        revision INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
    );",
    // Version 7: a webhook's event and body, hashed, so that a replay under a new delivery
    // id is stored once.
    "ALTER TABLE deliveries ADD COLUMN body_sha TEXT;
    CREATE UNIQUE INDEX IF NOT EXISTS deliveries_body ON deliveries (body_sha)
        WHERE body_sha IS NOT NULL;",
    // Version 8: one unique index, not two. `delivery_id` holds the delivery's key
    // ([`NewDelivery::key`]), `guid` GitHub's delivery id where the two differ; a second
    // unique index cost the writer about 30% of its rows per second.
    "ALTER TABLE deliveries ADD COLUMN guid TEXT;
    DROP INDEX IF EXISTS deliveries_body;",
];

pub(super) async fn open(path: &Path, options: &OpenOptions) -> Result<SqlitePool, StoreError> {
    let connect = SqliteConnectOptions::from_str("sqlite:")?
        .filename(path)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        // Deliveries are committed by the writer thread, with `synchronous=FULL` (its
        // commit syncs the WAL up to and including every earlier frame). This pool writes
        // the workers' bookkeeping (claims, leases, ends): with NORMAL those commits wait
        // for no fsync of their own. A power cut may undo the last ones (a job then runs
        // again; handlers are idempotent); checkpoints still sync the WAL and the database.
        .synchronous(SqliteSynchronous::Normal)
        // A database locked for longer is unavailable: intake answers 503 well inside
        // GitHub's 10 seconds, and GitHub (or the sweep) delivers again.
        .busy_timeout(Duration::from_secs(3))
        // Checkpoints run in their own task (`checkpoint_loop`), not in the commit that
        // crosses SQLite's threshold, whose deliveries would wait on copying the WAL into
        // the database. The threshold stays, far higher, in case that task falls behind.
        .pragma("wal_autocheckpoint", WAL_AUTOCHECKPOINT_PAGES.to_string());
    // No ping before handing out a connection: an embedded database's connection does not
    // drop, and the ping is one more trip to SQLite's thread on every group commit.
    let pool = SqlitePoolOptions::new()
        .max_connections(options.max_connections.max(1))
        .test_before_acquire(false)
        .connect_with(connect)
        .await?;
    migrate(&pool).await?;
    tokio::spawn(checkpoint_loop(pool.clone()));
    Ok(pool)
}

/// Starts the inbox's writer: a thread of its own with its own connection, committing
/// what intake hands over in groups (see [`super::intake::gather`]). A group is one transaction
/// of one cached statement per row: no async hop, no row sent back; `changes()` says
/// whether a delivery was new. The same id twice in a group is new once, then a duplicate.
pub(super) fn spawn_writer(path: &Path, inbox: Inbox) -> Result<(), StoreError> {
    let conn = rusqlite::Connection::open(path)?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    conn.pragma_update(None, "wal_autocheckpoint", WAL_AUTOCHECKPOINT_PAGES)?;
    // A database locked for longer than about 3 s is unavailable (intake answers 503).
    // SQLite's own handler sleeps 1, 2, 5 ... 100 ms between tries: a worker's write of
    // a millisecond would hold every delivery of the group up for that long.
    conn.busy_handler(Some(retry_soon))?;
    std::thread::Builder::new()
        .name("itergate-inbox".into())
        .spawn(move || write_thread(conn, inbox))
        .map_err(|e| StoreError::Schema(format!("starting the inbox's writer: {e}")))?;
    Ok(())
}

/// Runs until every [`super::Store`] is gone.
fn write_thread(mut conn: rusqlite::Connection, mut inbox: Inbox) {
    let mut batch = Vec::new();
    while let Some(first) = inbox.blocking_recv() {
        super::intake::gather(first, &mut inbox, &mut batch);
        if batch.is_empty() {
            continue;
        }
        let outcome = insert_group(&mut conn, &batch, super::now_ms()).map_err(|e| e.to_string());
        super::intake::answer(&mut batch, outcome);
    }
}

/// The writer's busy handler: tries again after 50 µs for the first 10 ms, then every
/// millisecond, and gives up after about 3 s.
fn retry_soon(tries: i32) -> bool {
    const QUICK: i32 = 200;
    match tries {
        0..QUICK => std::thread::sleep(Duration::from_micros(50)),
        QUICK..3_200 => std::thread::sleep(Duration::from_millis(1)),
        _ => return false,
    }
    true
}

fn insert_group(
    conn: &mut rusqlite::Connection,
    batch: &[(NewDelivery, Reply)],
    now: i64,
) -> rusqlite::Result<Vec<Received>> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let mut results = Vec::with_capacity(batch.len());
    {
        let mut insert = tx.prepare_cached(
            "INSERT OR IGNORE INTO deliveries (delivery_id, event, action, installation_id,
                repository, job_key, payload, payload_encoding, received_at, run_at, guid)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9, ?10)",
        )?;
        for (d, _) in batch {
            let changed = insert.execute(rusqlite::params![
                d.key(),
                d.event,
                d.action,
                d.installation_id,
                d.repository,
                d.job_key,
                d.payload,
                super::payload::LZ4,
                now,
                d.guid(),
            ])?;
            results.push(if changed == 1 {
                Received::New
            } else {
                Received::Duplicate
            });
        }
    }
    tx.commit()?;
    Ok(results)
}

/// Copies the WAL into the database every [`CHECKPOINT_EVERY`] until the pool closes. A
/// passive checkpoint waits for no reader or writer: commits go on meanwhile.
async fn checkpoint_loop(pool: SqlitePool) {
    let mut every = tokio::time::interval(CHECKPOINT_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    while !pool.is_closed() {
        every.tick().await;
        if let Err(e) = sqlx::query("PRAGMA wal_checkpoint(PASSIVE)")
            .execute(&pool)
            .await
        {
            if pool.is_closed() {
                break;
            }
            tracing::warn!("checkpoint: {e}");
        }
    }
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
    times: ClaimTimes,
    avoid: &[i64],
) -> Result<Option<JobRow>, StoreError> {
    // The runnable job is the first unfinished one of its key (one job at a time per pull
    // request, in order), due and not leased. The claim runs under the write lock, so
    // intake's commits wait for it: it looks first among the oldest unfinished jobs (one
    // is usually runnable there), and only when none is does it walk the keys with
    // unfinished jobs, one index seek each (a loose index scan), instead of reading every
    // delivery queued behind a running job. COALESCE runs the walk only when needed.
    // `avoid` is a JSON array of installations whose jobs are passed over. A lease that ran
    // out is taken over once it has settled ($6).
    let row = sqlx::query_as::<_, JobRow>(concat!(
        "WITH RECURSIVE keys (job_key) AS (
            SELECT MIN(job_key) FROM deliveries WHERE done_at IS NULL
            UNION ALL
            SELECT (SELECT MIN(e.job_key) FROM deliveries e
                    WHERE e.done_at IS NULL AND e.job_key > keys.job_key)
            FROM keys WHERE keys.job_key IS NOT NULL)
         UPDATE deliveries SET lease_owner = $1, lease_until = $2, attempts = attempts + 1
         WHERE seq = COALESCE(
            (SELECT d.seq FROM deliveries d
             WHERE d.seq IN (SELECT seq FROM deliveries WHERE done_at IS NULL
                             ORDER BY seq LIMIT $4)
               AND d.run_at <= $3 AND (d.lease_until IS NULL OR d.lease_until < $6)
               AND (d.installation_id IS NULL
                    OR d.installation_id NOT IN (SELECT value FROM json_each($5)))
               AND NOT EXISTS (
                 SELECT 1 FROM deliveries e
                 WHERE e.job_key = d.job_key AND e.done_at IS NULL AND e.seq < d.seq)
             ORDER BY d.seq LIMIT 1),
            (SELECT d.seq FROM keys
             JOIN deliveries d ON d.seq = (
                 SELECT MIN(h.seq) FROM deliveries h
                 WHERE h.done_at IS NULL AND h.job_key = keys.job_key)
             WHERE d.run_at <= $3 AND (d.lease_until IS NULL OR d.lease_until < $6)
               AND (d.installation_id IS NULL
                    OR d.installation_id NOT IN (SELECT value FROM json_each($5)))
             ORDER BY d.seq LIMIT 1))
         RETURNING ",
        job_columns!()
    ))
    .bind(owner)
    .bind(times.lease_until)
    .bind(times.now)
    .bind(super::CLAIM_NEAR)
    .bind(serde_json::to_string(avoid).unwrap_or_else(|_| "[]".into()))
    .bind(times.lapsed_before)
    .fetch_optional(pool)
    .await?;
    Ok(row)
}
