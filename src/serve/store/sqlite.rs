//! The embedded backend: one SQLite file (WAL, `synchronous=FULL`) for one process. The
//! schema's version is `PRAGMA user_version`. One statement claims a job: SQLite runs one
//! writer at a time, so the rule "no earlier unfinished job of the key" is enough for one
//! job per pull request at a time, in order.

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use r2d2_sqlite::SqliteConnectionManager;

use super::schema::{self, Dialect};
use super::sql::{Record, Statement};
use super::{ClaimTimes, Inbox, JobRow, NewDelivery, OpenOptions, Received, Reply, StoreError};

/// The WAL's size in pages at which a commit checkpoints it itself (SQLite's default is
/// 1,000, about 170 deliveries of 14 KB): only if [`checkpoint_loop`] falls behind.
const WAL_AUTOCHECKPOINT_PAGES: u32 = 20_000;
/// How often the WAL is copied into the database, beside the commits.
const CHECKPOINT_EVERY: Duration = Duration::from_millis(200);

/// A database locked for longer is unavailable: intake answers 503 well inside GitHub's 10
/// seconds, and GitHub (or the sweep) delivers again.
const BUSY_TIMEOUT: Duration = Duration::from_secs(3);

/// How long `/readyz` waits for the write lock.
const PING_BUSY_TIMEOUT: Duration = Duration::from_secs(1);
/// How long [`Sqlite::close`] waits for the statements under way.
const CLOSE_WAIT: Duration = Duration::from_secs(30);

/// The connections everything but the inbox's writer uses: an r2d2 pool, its connections
/// handed out on tokio's blocking threads ([`Sqlite::run`]), since every SQLite call blocks.
pub(super) struct Sqlite {
    /// `None` once closed.
    pool: Mutex<Option<r2d2::Pool<SqliteConnectionManager>>>,
}

/// Opens the database at `path` (created if missing), brings its schema up to date and
/// starts the [`checkpoint_loop`].
pub(super) async fn open(path: &Path, options: &OpenOptions) -> Result<Arc<Sqlite>, StoreError> {
    let path = path.to_path_buf();
    let max = options.max_connections.max(1);
    let pool = tokio::task::spawn_blocking(move || -> Result<_, StoreError> {
        // One connection first: its error is the database's own (not the pool's time-out),
        // and it migrates before the pool opens any other.
        let mut first = connect(&path)?;
        configure(&mut first)?;
        migrate(&mut first)?;
        drop(first);
        let manager = SqliteConnectionManager::file(&path).with_init(configure);
        // No check before handing out a connection: an embedded database's connection does
        // not drop. Nor does it go stale: kept for the pool's life.
        let pool = r2d2::Pool::builder()
            .max_size(max)
            .test_on_check_out(false)
            .idle_timeout(None)
            .max_lifetime(None)
            .error_handler(Box::new(LogError))
            .build(manager)?;
        Ok(pool)
    })
    .await
    .map_err(|e| StoreError::Schema(format!("opening the database: {e}")))??;
    let sqlite = Arc::new(Sqlite {
        pool: Mutex::new(Some(pool)),
    });
    tokio::spawn(checkpoint_loop(Arc::downgrade(&sqlite)));
    Ok(sqlite)
}

/// A connection to the database at `path`. Its error is SQLite's own, without the path
/// rusqlite appends to it: whoever reports it names the database already.
fn connect(path: &Path) -> rusqlite::Result<rusqlite::Connection> {
    rusqlite::Connection::open(path).map_err(|error| match error {
        rusqlite::Error::SqliteFailure(code, Some(message)) => {
            let suffix = format!(": {}", path.to_string_lossy());
            let message = match message.strip_suffix(&suffix) {
                Some(own) => own.to_string(),
                None => message,
            };
            rusqlite::Error::SqliteFailure(code, Some(message))
        }
        other => other,
    })
}

/// Every pooled connection's settings.
fn configure(conn: &mut rusqlite::Connection) -> rusqlite::Result<()> {
    conn.pragma_update_and_check(None, "journal_mode", "WAL", |_| Ok(()))?;
    // Deliveries are committed by the writer thread, with `synchronous=FULL` (its commit
    // syncs the WAL up to and including every earlier frame). This pool writes the workers'
    // bookkeeping (claims, leases, ends): with NORMAL those commits wait for no fsync of
    // their own. A power cut may undo the last ones (a job then runs again; handlers are
    // idempotent); checkpoints still sync the WAL and the database.
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    // Checkpoints run in their own task (`checkpoint_loop`), not in the commit that crosses
    // SQLite's threshold, whose deliveries would wait on copying the WAL into the database.
    // The threshold stays, far higher, in case that task falls behind.
    conn.pragma_update(None, "wal_autocheckpoint", WAL_AUTOCHECKPOINT_PAGES)?;
    // Every statement of the store stays prepared.
    conn.set_prepared_statement_cache_capacity(64);
    Ok(())
}

/// The pool's failures to connect, in the log (r2d2's own would go to the `log` crate).
#[derive(Debug)]
struct LogError;

impl r2d2::HandleError<rusqlite::Error> for LogError {
    fn handle_error(&self, error: rusqlite::Error) {
        tracing::warn!("database connection: {error}");
    }
}

impl Sqlite {
    /// Runs `f` on a pooled connection, on a blocking thread.
    pub(super) async fn run<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut rusqlite::Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        let pool = self
            .pool
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .ok_or(StoreError::Closed)?;
        let ran = tokio::task::spawn_blocking(move || -> Result<T, StoreError> {
            let mut conn = pool.get()?;
            Ok(f(&mut conn)?)
        })
        .await;
        match ran {
            Ok(result) => result,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            // The runtime is shutting down.
            Err(_) => Err(StoreError::Closed),
        }
    }

    /// Takes the write lock and lets it go, waiting a second at most: whether a write
    /// could be committed now.
    pub(super) async fn ping_write(&self) -> Result<(), StoreError> {
        self.run(|conn| {
            conn.busy_timeout(PING_BUSY_TIMEOUT)?;
            let probe = conn
                .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
                .and_then(|tx| tx.rollback());
            conn.busy_timeout(BUSY_TIMEOUT)?;
            probe
        })
        .await
    }

    /// The first row of `statement`, if any.
    pub(super) async fn fetch_optional<R: Record>(
        &self,
        statement: Statement,
    ) -> Result<Option<R>, StoreError> {
        self.run(move |conn| Ok(statement.rows_sqlite(conn, 1)?.pop()))
            .await
    }

    pub(super) fn is_closed(&self) -> bool {
        self.pool
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_none()
    }

    /// Refuses new statements, lets those under way finish, and closes the connections.
    pub(super) async fn close(&self) {
        let pool = self
            .pool
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let Some(pool) = pool else {
            return;
        };
        let started = Instant::now();
        loop {
            let state = pool.state();
            if state.connections == state.idle_connections || started.elapsed() > CLOSE_WAIT {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        // Closing a connection may checkpoint the WAL: not on the runtime's threads.
        let _ = tokio::task::spawn_blocking(move || drop(pool)).await;
    }
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

/// A key's unfinished jobs no longer yield. It reads the key's yielding jobs only
/// (`deliveries_yielding`): a PR with thousands of jobs waiting costs intake nothing.
const PROMOTE: &str =
    "UPDATE deliveries SET yields = 0 WHERE job_key = ?1 AND done_at IS NULL AND yields";

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
                repository, job_key, payload, payload_encoding, received_at, run_at, guid,
                yields)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9, ?10, ?11)",
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
                d.yields,
            ])?;
            results.push(if changed == 1 {
                Received::New
            } else {
                Received::Duplicate
            });
        }
        // The keys of jobs that do not yield: their unfinished jobs no longer wait behind
        // every other (`claim_order`); once per key and group.
        let mut keys: Vec<&str> = batch
            .iter()
            .filter(|(d, _)| !d.yields)
            .map(|(d, _)| d.job_key.as_str())
            .collect();
        keys.sort_unstable();
        keys.dedup();
        let mut promote = tx.prepare_cached(PROMOTE)?;
        for key in keys {
            promote.execute([key])?;
        }
    }
    tx.commit()?;
    Ok(results)
}

/// Copies the WAL into the database every [`CHECKPOINT_EVERY`] until the store closes (or
/// is gone). A passive checkpoint waits for no reader or writer: commits go on meanwhile.
async fn checkpoint_loop(sqlite: Weak<Sqlite>) {
    let mut every = tokio::time::interval(CHECKPOINT_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        let Some(sqlite) = sqlite.upgrade() else {
            break;
        };
        if sqlite.is_closed() {
            break;
        }
        let checkpoint = sqlite
            .run(|conn| conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())))
            .await;
        if let Err(e) = checkpoint {
            if sqlite.is_closed() {
                break;
            }
            tracing::warn!("checkpoint: {e}");
        }
    }
}

/// Applies the [schema](super::schema) steps the database lacks, each in a transaction with its version
/// (`PRAGMA user_version`).
fn migrate(conn: &mut rusqlite::Connection) -> Result<(), StoreError> {
    let version: i64 = conn.query_row("PRAGMA user_version", [], |row| row.get(0))?;
    let steps = schema::steps(Dialect::Sqlite);
    let known = i64::try_from(steps.len()).unwrap_or(i64::MAX);
    if version > known {
        tracing::warn!(
            version,
            known,
            "the database's schema is newer than this version knows; its steps only add, so \
             this version keeps working"
        );
    }
    for (index, step) in steps.iter().enumerate() {
        let target = i64::try_from(index).unwrap_or(i64::MAX) + 1;
        if version >= target {
            continue;
        }
        let tx = conn.transaction()?;
        tx.execute_batch(step)?;
        tx.execute_batch(&format!("PRAGMA user_version = {target}"))?;
        tx.commit()?;
        tracing::info!(version = target, "database schema upgraded");
    }
    Ok(())
}

pub(super) async fn claim(
    sqlite: &Sqlite,
    owner: &str,
    times: ClaimTimes,
    avoid: &[i64],
) -> Result<Option<JobRow>, StoreError> {
    // The runnable job is the first unfinished one of its key (one job at a time per pull
    // request, in order), due and not leased. The claim runs under the write lock, so
    // intake's commits wait for it: it looks first among the first unfinished jobs in
    // claim order (`claim_order`: jobs that yield last; one is usually runnable there), and
    // only when none is does it walk the keys with
    // unfinished jobs, one index seek each (a loose index scan), instead of reading every
    // delivery queued behind a running job. COALESCE runs the walk only when needed.
    // `avoid` is a JSON array of installations whose jobs are passed over. A lease that ran
    // out is taken over at once ($6), or once it has settled if a write was in flight.
    let statement = Statement::new(concat!(
        "WITH RECURSIVE keys (job_key) AS (
            SELECT MIN(job_key) FROM deliveries WHERE done_at IS NULL
            UNION ALL
            SELECT (SELECT MIN(e.job_key) FROM deliveries e
                    WHERE e.done_at IS NULL AND e.job_key > keys.job_key)
            FROM keys WHERE keys.job_key IS NOT NULL)
         UPDATE deliveries SET lease_owner = $1, lease_until = $2, write_settle_ms = NULL,
             attempts = attempts + 1
         WHERE seq = COALESCE(
            (SELECT d.seq FROM deliveries d
             WHERE d.seq IN (",
        claim_window!(),
        " LIMIT $4)
               AND d.run_at <= $3 AND (d.lease_until IS NULL
                    OR d.lease_until + COALESCE(d.write_settle_ms, 0) < $6)
               AND (d.installation_id IS NULL
                    OR d.installation_id NOT IN (SELECT value FROM json_each($5)))
               AND NOT EXISTS (
                 SELECT 1 FROM deliveries e
                 WHERE e.job_key = d.job_key AND e.done_at IS NULL AND e.seq < d.seq)
             ORDER BY ",
        claim_order!(),
        " LIMIT 1),
            (SELECT d.seq FROM keys
             JOIN deliveries d ON d.seq = (
                 SELECT MIN(h.seq) FROM deliveries h
                 WHERE h.done_at IS NULL AND h.job_key = keys.job_key)
             WHERE d.run_at <= $3 AND (d.lease_until IS NULL
                    OR d.lease_until + COALESCE(d.write_settle_ms, 0) < $6)
               AND (d.installation_id IS NULL
                    OR d.installation_id NOT IN (SELECT value FROM json_each($5)))
             ORDER BY ",
        claim_order!(),
        " LIMIT 1))
         RETURNING ",
        job_columns!()
    ))
    .bind(owner)
    .bind(times.lease_until)
    .bind(times.now)
    .bind(super::CLAIM_NEAR)
    .bind(
        serde_json::to_string(avoid)
            .unwrap_or_else(|_| "[]".into())
            .as_str(),
    )
    .bind(times.lapsed_before);
    sqlite.fetch_optional::<JobRow>(statement).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn promoting_a_keys_jobs_reads_only_those_that_yield() {
        let mut conn = rusqlite::Connection::open_in_memory().unwrap();
        migrate(&mut conn).unwrap();
        let plan: String = conn
            .query_row(&format!("EXPLAIN QUERY PLAN {PROMOTE}"), ["k"], |row| {
                row.get(3)
            })
            .unwrap();
        assert!(plan.contains("deliveries_yielding"), "{plan}");
    }
}
