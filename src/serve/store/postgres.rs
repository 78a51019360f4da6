//! The shared backend: PostgreSQL, for several replicas behind one webhook URL. What one
//! process cannot assume here, and how it is made safe:
//!
//! - **A claim among replicas**: the candidate row is locked `FOR UPDATE SKIP LOCKED`, so
//!   replicas claiming at once take different jobs and never wait on each other.
//! - **One job per pull request at a time**: deliveries committed by different replicas
//!   need not become visible in `seq` order, so a claim also requires that no job of its
//!   key is leased, and re-checks that under a transaction-scoped advisory lock on the key
//!   (claims of one key are serialised; claims of different keys are not).
//! - **The same delivery at two replicas at once**: a group commit locks its delivery ids
//!   (advisory, in one order) before its `INSERT`, so two groups sharing ids wait for each
//!   other instead of deadlocking on the unique index; the second finds them stored.
//! - **Migrations**: each replica runs them at start under an advisory lock, in one
//!   transaction; the version is the largest row of `schema_version`.
//! - **The sweep's leader**: a session advisory lock held on a connection of its own; it
//!   is released when that connection ends, whatever ended it.

use std::collections::HashSet;
use std::str::FromStr;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{Connection as _, PgConnection, PgPool};
use tokio::sync::Mutex;

use super::schema::{self, Dialect};
use super::{ClaimTimes, JobRow, NewDelivery, OpenOptions, Received, StoreError};

/// The first key of every advisory lock this App takes ("itgt").
const LOCK_CLASS: i32 = 0x6974_6774;
/// The first key of the per-job-key locks ("itgk"); the second is `hashtext(job_key)`.
const KEY_LOCK_CLASS: i32 = 0x6974_676b;
/// The first key of the per-delivery-id locks ("itgd"); the second is `hashtext(id)`.
const DELIVERY_LOCK_CLASS: i32 = 0x6974_6764;
const MIGRATION_LOCK: i32 = 1;
const SWEEP_LOCK: i32 = 2;
/// How long a query waits for a connection before failing: intake answers 503 well inside
/// GitHub's 10 s when the database is unreachable.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(3);
/// Claims retried at once when another replica took the key meanwhile.
const CLAIM_TRIES: usize = 3;

/// A runnable job among the first [`super::CLAIM_NEAR`] unfinished ones in claim order (jobs
/// that yield last, then by arrival; `claim_order`): not done, due, not
/// leased (or its lease ran out before `$4`, with its settle if a write was in flight), no
/// earlier unfinished job of its key and no other job of its key leased, of none of the
/// installations in `$3`. One is usually there; [`CANDIDATE_BY_KEY`] looks further.
const CANDIDATE_NEAR: &str = concat!(
    "SELECT d.seq, d.job_key FROM deliveries d
    WHERE d.seq IN (",
    claim_window!(),
    " LIMIT $2)
      AND d.done_at IS NULL AND d.run_at <= $1
      AND (d.lease_until IS NULL OR d.lease_until + COALESCE(d.write_settle_ms, 0) < $4)
      AND (d.installation_id IS NULL OR d.installation_id <> ALL($3::int8[]))
      AND NOT EXISTS (
        SELECT 1 FROM deliveries e
        WHERE e.job_key = d.job_key AND e.done_at IS NULL AND e.seq <> d.seq
          AND (e.seq < d.seq OR e.lease_until + COALESCE(e.write_settle_ms, 0) >= $4))
    ORDER BY ",
    claim_order!(),
    " LIMIT 1
    FOR UPDATE OF d SKIP LOCKED"
);

/// The same rule over every key with unfinished jobs, walked one index seek at a time (a
/// loose index scan): when no job near the front is runnable, a claim does not read the
/// deliveries that wait behind a running job, however many.
const CANDIDATE_BY_KEY: &str = concat!(
    "WITH RECURSIVE keys (job_key) AS (
        (SELECT job_key FROM deliveries WHERE done_at IS NULL ORDER BY job_key LIMIT 1)
        UNION ALL
        SELECT (SELECT e.job_key FROM deliveries e
                WHERE e.done_at IS NULL AND e.job_key > keys.job_key
                ORDER BY e.job_key LIMIT 1)
        FROM keys WHERE keys.job_key IS NOT NULL)
    SELECT d.seq, d.job_key FROM keys
    JOIN deliveries d ON d.seq = (
        SELECT h.seq FROM deliveries h
        WHERE h.done_at IS NULL AND h.job_key = keys.job_key
        ORDER BY h.seq LIMIT 1)
    WHERE d.run_at <= $1 AND (d.lease_until IS NULL OR d.lease_until + COALESCE(d.write_settle_ms, 0) < $3)
      AND (d.installation_id IS NULL OR d.installation_id <> ALL($2::int8[]))
      AND NOT EXISTS (
        SELECT 1 FROM deliveries e
        WHERE e.job_key = d.job_key AND e.done_at IS NULL AND e.seq <> d.seq
          AND e.lease_until + COALESCE(e.write_settle_ms, 0) >= $3)
    ORDER BY ",
    claim_order!(),
    " LIMIT 1
    FOR UPDATE OF d SKIP LOCKED"
);

/// The candidate's key, checked again under the key's lock with a fresh snapshot: every
/// claim of the key committed before is visible now.
const KEY_IS_FREE: &str = "SELECT NOT EXISTS (
        SELECT 1 FROM deliveries e
        WHERE e.job_key = $1 AND e.done_at IS NULL AND e.seq <> $2
          AND (e.seq < $2 OR e.lease_until + COALESCE(e.write_settle_ms, 0) >= $3))";

/// The claim itself, on the row's newest version: the candidate's lock alone does not prove
/// that nobody leased or finished it since the candidate's snapshot (a locking read that
/// joins re-checks the locked row only in part), so the update checks again.
const TAKE: &str = concat!(
    "UPDATE deliveries SET lease_owner = $1, lease_until = $2, write_settle_ms = NULL,
         attempts = attempts + 1
     WHERE seq = $3 AND done_at IS NULL
       AND (lease_until IS NULL OR lease_until + COALESCE(write_settle_ms, 0) < $4)
     RETURNING ",
    job_columns!()
);

pub(super) struct Postgres {
    pub(super) pool: PgPool,
    connect: PgConnectOptions,
    /// The connection holding the sweep's lock, while this replica is the sweeper.
    sweeper: Mutex<Option<PgConnection>>,
}

impl Postgres {
    pub(super) async fn open(url: &str, options: &OpenOptions) -> Result<Postgres, StoreError> {
        let connect = PgConnectOptions::from_str(url)?.application_name("itergate serve");
        // One connection first: the pool would only say that it timed out, where this says
        // why (refused, unknown host, authentication, no such database).
        match tokio::time::timeout(ACQUIRE_TIMEOUT, PgConnection::connect_with(&connect)).await {
            Ok(Ok(first)) => first.close().await?,
            Ok(Err(e)) => return Err(e.into()),
            Err(_) => return Err(StoreError::NoConnection(ACQUIRE_TIMEOUT)),
        }
        let pool = PgPoolOptions::new()
            .max_connections(options.max_connections.max(2))
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .idle_timeout(Some(Duration::from_secs(300)))
            .connect_with(connect.clone())
            .await?;
        migrate(&pool).await?;
        Ok(Postgres {
            pool,
            connect,
            sweeper: Mutex::new(None),
        })
    }

    pub(super) async fn claim(
        &self,
        owner: &str,
        times: ClaimTimes,
        avoid: &[i64],
    ) -> Result<Option<JobRow>, StoreError> {
        let ClaimTimes {
            now,
            lapsed_before,
            lease_until,
        } = times;
        for _ in 0..CLAIM_TRIES {
            let mut tx = self.pool.begin().await?;
            let mut candidate: Option<(i64, String)> = sqlx::query_as(CANDIDATE_NEAR)
                .bind(now)
                .bind(super::CLAIM_NEAR)
                .bind(avoid)
                .bind(lapsed_before)
                .fetch_optional(&mut *tx)
                .await?;
            if candidate.is_none() {
                candidate = sqlx::query_as(CANDIDATE_BY_KEY)
                    .bind(now)
                    .bind(avoid)
                    .bind(lapsed_before)
                    .fetch_optional(&mut *tx)
                    .await?;
            }
            let Some((seq, key)) = candidate else {
                tx.commit().await?;
                return Ok(None);
            };
            sqlx::query("SELECT pg_advisory_xact_lock($1, hashtext($2))")
                .bind(KEY_LOCK_CLASS)
                .bind(&key)
                .execute(&mut *tx)
                .await?;
            let free: bool = sqlx::query_scalar(KEY_IS_FREE)
                .bind(&key)
                .bind(seq)
                .bind(lapsed_before)
                .fetch_one(&mut *tx)
                .await?;
            if !free {
                // Another replica claimed a job of this key since the candidate was read.
                tx.rollback().await?;
                continue;
            }
            let taken: Option<JobRow> = sqlx::query_as(TAKE)
                .bind(owner)
                .bind(lease_until)
                .bind(seq)
                .bind(lapsed_before)
                .fetch_optional(&mut *tx)
                .await?;
            let Some(row) = taken else {
                // Another replica took this very job since the candidate was read.
                tx.rollback().await?;
                continue;
            };
            tx.commit().await?;
            return Ok(Some(row));
        }
        Ok(None)
    }

    pub(super) async fn hold_sweep_lock(&self) -> Result<bool, StoreError> {
        let mut held = self.sweeper.lock().await;
        if let Some(conn) = held.as_mut() {
            if conn.ping().await.is_ok() {
                return Ok(true);
            }
            // The connection is gone, and the lock with it: try again like any replica.
            *held = None;
        }
        let mut conn = PgConnection::connect_with(&self.connect).await?;
        let taken: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1, $2)")
            .bind(LOCK_CLASS)
            .bind(SWEEP_LOCK)
            .fetch_one(&mut conn)
            .await?;
        if taken {
            *held = Some(conn);
        } else {
            let _ = conn.close().await;
        }
        Ok(taken)
    }

    pub(super) async fn close(&self) {
        if let Some(conn) = self.sweeper.lock().await.take() {
            let _ = conn.close().await;
        }
        self.pool.close().await;
    }
}

/// Commits a group of deliveries in one transaction and one `INSERT` (one round trip for
/// the rows), in arrival order, which is `seq` order; says which were new.
pub(super) async fn insert_batch(
    pool: &PgPool,
    batch: &[&NewDelivery],
    now: i64,
) -> Result<Vec<Received>, sqlx::Error> {
    let mut tx = pool.begin().await?;
    lock_delivery_ids(&mut tx, batch).await?;
    let column = |f: fn(&NewDelivery) -> Option<&str>| -> Vec<Option<&str>> {
        batch.iter().map(|d| f(d)).collect()
    };
    let inserted: Vec<String> = sqlx::query_scalar(
        "INSERT INTO deliveries (delivery_id, event, action, installation_id, repository,
            job_key, payload, received_at, run_at, guid, yields)
         SELECT id, event, action, installation_id, repository, job_key, payload, $8, $8,
                guid, yields
         FROM UNNEST($1::text[], $2::text[], $3::text[], $4::int8[], $5::text[], $6::text[],
                     $7::bytea[], $9::text[], $10::bool[])
              WITH ORDINALITY
              AS t(id, event, action, installation_id, repository, job_key, payload, guid,
                   yields, ord)
         ORDER BY ord
         ON CONFLICT DO NOTHING
         RETURNING delivery_id",
    )
    .bind(column(|d| Some(d.key())))
    .bind(column(|d| Some(&d.event)))
    .bind(column(|d| d.action.as_deref()))
    .bind(batch.iter().map(|d| d.installation_id).collect::<Vec<_>>())
    .bind(column(|d| d.repository.as_deref()))
    .bind(column(|d| Some(&d.job_key)))
    .bind(
        batch
            .iter()
            .map(|d| d.payload.as_slice())
            .collect::<Vec<_>>(),
    )
    .bind(now)
    .bind(column(NewDelivery::guid))
    .bind(batch.iter().map(|d| d.yields).collect::<Vec<_>>())
    .fetch_all(&mut *tx)
    .await?;
    let mut keys: Vec<&str> = batch
        .iter()
        .filter(|d| !d.yields)
        .map(|d| d.job_key.as_str())
        .collect();
    keys.sort_unstable();
    keys.dedup();
    // Their keys' earlier jobs no longer wait behind every other (`claim_order`).
    sqlx::query(
        "UPDATE deliveries SET yields = FALSE
         WHERE job_key = ANY($1) AND done_at IS NULL AND yields",
    )
    .bind(keys)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    // A delivery is new where its key was inserted, the first time it is in the batch.
    let mut new: HashSet<String> = inserted.into_iter().collect();
    Ok(batch
        .iter()
        .map(|d| {
            if new.remove(d.key()) {
                Received::New
            } else {
                Received::Duplicate
            }
        })
        .collect())
}

/// Locks the batch's delivery keys for the transaction, in one order for every replica.
/// Two replicas committing the same ids (GitHub's redelivery racing the first attempt)
/// would otherwise wait on each other's unique-index entries crosswise, a deadlock that
/// PostgreSQL breaks only after `deadlock_timeout` by failing one of the batches.
async fn lock_delivery_ids(
    tx: &mut PgConnection,
    batch: &[&NewDelivery],
) -> Result<(), sqlx::Error> {
    let ids: Vec<&str> = batch.iter().map(|d| d.key()).collect();
    sqlx::query(
        "SELECT pg_advisory_xact_lock($1, h)
         FROM (SELECT DISTINCT hashtext(id) AS h FROM unnest($2::text[]) AS id ORDER BY h) AS ids",
    )
    .bind(DELIVERY_LOCK_CLASS)
    .bind(ids)
    .execute(tx)
    .await?;
    Ok(())
}

async fn migrate(pool: &PgPool) -> Result<(), StoreError> {
    let mut tx = pool.begin().await?;
    // Replicas starting together: one migrates, the others then find nothing to do.
    sqlx::query("SELECT pg_advisory_xact_lock($1, $2)")
        .bind(LOCK_CLASS)
        .bind(MIGRATION_LOCK)
        .execute(&mut *tx)
        .await?;
    sqlx::raw_sql(
        "CREATE TABLE IF NOT EXISTS schema_version (
            version BIGINT PRIMARY KEY,
            applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
        )",
    )
    .execute(&mut *tx)
    .await?;
    let version: i64 = sqlx::query_scalar("SELECT COALESCE(MAX(version), 0) FROM schema_version")
        .fetch_one(&mut *tx)
        .await?;
    let steps = schema::steps(Dialect::Postgres);
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
        sqlx::raw_sql(step).execute(&mut *tx).await?;
        sqlx::query("INSERT INTO schema_version (version) VALUES ($1)")
            .bind(target)
            .execute(&mut *tx)
            .await?;
        tracing::info!(version = target, "database schema upgraded");
    }
    tx.commit().await?;
    Ok(())
}
