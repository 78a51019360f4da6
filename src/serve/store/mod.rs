//! The App's durable inbox and job queue: one table of deliveries, on SQLite (the embedded
//! default, one process) or on PostgreSQL (shared by several replicas). A delivery is
//! committed before its 2xx; then it is a job, claimed with a lease, done once.
//!
//! - **Group commit.** Intake hands rows to one writer per process that commits everything
//!   that arrived meanwhile in one transaction (one fsync for many deliveries) and then
//!   answers each: on SQLite a thread of its own with its own connection (rusqlite, no
//!   async hop per group), on PostgreSQL a task with one multi-row statement. A delivery id seen before is reported as a duplicate (`INSERT
//!   ... ON CONFLICT DO NOTHING` on a unique column), so GitHub's redelivery and a second
//!   replica's copy make no second job.
//! - **Order per pull request.** Every delivery has a job key (`owner/repo#12`, or the
//!   repository for events about no PR). A job is claimed only when no earlier job of its
//!   key is unfinished (and, on PostgreSQL, no job of its key is leased), so one PR's
//!   events run one at a time, in the order they were committed — across replicas too.
//! - **Leases.** A claim sets `lease_until`; a worker that dies leaves a lease that runs
//!   out, and the job is claimed again. Handlers are idempotent, so a job cut short and run
//!   again has its effects once.
//! - **Retries.** A failed job is rescheduled with backoff up to [`MAX_ATTEMPTS`]; a rate
//!   limit reschedules it at the reset time without counting an attempt (never dropped).
//! - **Schema versions.** Each backend has a list of steps, applied in order at start, in a
//!   transaction (`sqlite`, `postgres`). Steps only add (tables, nullable columns,
//!   indexes), so replicas of the previous version keep working on a database a newer one
//!   has upgraded: a rolling upgrade needs no downtime.
//!
//! The backends differ only where they must: how a claim is made safe against other
//! processes, how a group of rows is committed, how a payload is stored (compressed on
//! SQLite, `payload`), migrations, and the sweep's leader lock. Every other statement is the same SQL text on both (sqlx takes `$1`
//! placeholders on SQLite too).

/// A claimed job's columns, in the order of [`JobRow`] (a literal, to build constant SQL).
macro_rules! job_columns {
    () => {
        "seq, COALESCE(guid, delivery_id), event, installation_id, payload, attempts, received_at,
         payload_encoding"
    };
}

mod payload;
mod postgres;
mod sqlite;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

/// Attempts before a job is given up (its outcome says why; the log too). With the
/// backoff (2 s doubling to 512 s) they span about half an hour of a GitHub outage.
pub const MAX_ATTEMPTS: i64 = 12;

/// After this many failed attempts (about 30 s of retries) a job is parked: it keeps its
/// retries, but no longer holds up the later events of its pull request.
pub const PARK_AFTER_ATTEMPTS: i64 = 4;

/// What a parked job's key ends with.
const PARKED: &str = " (parked)";
/// Deliveries committed together at most.
const GROUP_COMMIT_MAX: usize = 512;
/// How many of the oldest unfinished jobs a claim looks among before it walks the keys
/// (both backends): enough that one is runnable in all but a storm on one pull request or a
/// queue where every key waits for a retry.
const CLAIM_NEAR: i64 = 64;
/// How long intake waits for its commit before answering 503: well inside GitHub's 10 s.
const RECEIVE_TIMEOUT: Duration = Duration::from_secs(8);
/// Times a group commit is tried when the database reports a deadlock (two replicas
/// inserting the same delivery ids in opposite orders).
const COMMIT_TRIES: usize = 3;

/// Where the inbox lives.
#[derive(Clone, PartialEq, Eq)]
pub enum Location {
    /// A SQLite file (created if missing): one process.
    Sqlite(PathBuf),
    /// A PostgreSQL URL (`postgres://user:password@host:5432/db?sslmode=verify-full`):
    /// any number of replicas.
    Postgres(String),
}

impl Location {
    /// `postgres://...` or `postgresql://...` is PostgreSQL; anything else a SQLite path
    /// (an optional `sqlite:` prefix is dropped).
    pub fn parse(text: &str) -> Location {
        let text = text.trim();
        if text.starts_with("postgres://") || text.starts_with("postgresql://") {
            return Location::Postgres(text.to_string());
        }
        let path = text
            .strip_prefix("sqlite://")
            .or_else(|| text.strip_prefix("sqlite:"))
            .unwrap_or(text);
        Location::Sqlite(PathBuf::from(path))
    }

    /// The backend's name, for logs and metrics.
    pub fn backend(&self) -> &'static str {
        match self {
            Location::Sqlite(_) => "sqlite",
            Location::Postgres(_) => "postgres",
        }
    }
}

/// Shown in logs and errors: a URL's password never is.
impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Sqlite(path) => write!(f, "{}", path.display()),
            Location::Postgres(url) => f.write_str(&redact(url)),
        }
    }
}

impl fmt::Debug for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Location({self})")
    }
}

/// `url` with the password of its user part and of a `password=` parameter replaced.
fn redact(url: &str) -> String {
    let mut out = url.to_string();
    if let Some(scheme_end) = out.find("://").map(|i| i + 3) {
        let authority_end = out[scheme_end..]
            .find(['/', '?'])
            .map_or(out.len(), |i| scheme_end + i);
        if let Some(at) = out[scheme_end..authority_end].rfind('@') {
            let user = &out[scheme_end..scheme_end + at];
            if let Some(colon) = user.find(':') {
                out.replace_range(scheme_end + colon + 1..scheme_end + at, "***");
            }
        }
    }
    if let Some(start) = out.find("password=").map(|i| i + "password=".len()) {
        let end = out[start..].find('&').map_or(out.len(), |i| start + i);
        out.replace_range(start..end, "***");
    }
    out
}

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
    /// For a webhook: its event and its verified signature, which is the body's HMAC under
    /// the secret, so it names the body without hashing it again. Neither the delivery id
    /// nor the event header is signed: the same signed body under a new id is a replay,
    /// stored once.
    pub body_sha: Option<String>,
}

impl NewDelivery {
    /// What makes a delivery the same as another, the inbox's one unique key: a webhook's
    /// [`NewDelivery::body_sha`] (GitHub's redelivery has the same, and so has a replay
    /// under a new id), otherwise the delivery id.
    pub fn key(&self) -> &str {
        self.body_sha.as_deref().unwrap_or(&self.delivery_id)
    }

    /// The delivery id, stored beside the key where the two differ.
    fn guid(&self) -> Option<&str> {
        self.body_sha.as_ref().map(|_| self.delivery_id.as_str())
    }

    /// The [`NewDelivery::body_sha`] of a webhook's `event` and its verified
    /// `X-Hub-Signature-256` digest.
    pub fn body_sha(event: &str, digest: &[u8; 32]) -> String {
        let mut key = String::with_capacity(event.len() + 65);
        key.push_str(event);
        key.push(':');
        for byte in digest {
            key.push_str(&format!("{byte:02x}"));
        }
        key
    }
}

/// A pull request whose head waits for CI's verdict: a `pull_request` event said "waiting
/// for checks" and no record has decided that head yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiting {
    pub job_key: String,
    pub installation_id: i64,
    pub repository: String,
    pub pr: i64,
    pub head_sha: String,
    /// When the head started waiting (ms since the epoch).
    pub since: i64,
    /// Reconciles asked for so far.
    pub checks: i64,
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
    /// Why the stored payload could not be read back (the payload is then empty).
    pub damaged: Option<String>,
    pub attempts: i64,
    pub received_at: i64,
}

/// A claimed job's columns, as the claims return them ([`job_columns`]).
type JobRow = (
    i64,
    String,
    String,
    Option<i64>,
    Vec<u8>,
    i64,
    i64,
    Option<String>,
);

impl From<JobRow> for Job {
    fn from(row: JobRow) -> Job {
        let (seq, delivery_id, event, installation_id, stored, attempts, received_at, encoding) =
            row;
        let (payload, damaged) = match payload::unpack(encoding.as_deref(), stored) {
            Ok(payload) => (payload, None),
            Err(why) => (Vec::new(), Some(why)),
        };
        Job {
            seq,
            delivery_id,
            event,
            installation_id,
            payload,
            damaged,
            attempts,
            received_at,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
    #[error("database: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("the database writer has stopped")]
    WriterGone,
    #[error("the database did not commit within {} s", RECEIVE_TIMEOUT.as_secs())]
    Timeout,
    #[error("database: no connection within {} s", .0.as_secs())]
    NoConnection(Duration),
    #[error("{0}")]
    Schema(String),
}

/// How a store is opened.
#[derive(Debug, Clone)]
pub struct OpenOptions {
    /// Connections in this process's pool at most.
    pub max_connections: u32,
    /// How long a lease that ran out stays untouched before another worker takes its job
    /// over ([`TAKEOVER_SETTLE`]).
    pub takeover_settle: Duration,
}

/// A job whose lease ran out (its worker died or stalled) is taken over only this long after
/// the lease's end: a write the old worker sent just before (a reply, a check run) has
/// landed by then, so the taker's look before each create finds it. GitHub ends a request
/// it takes over 10 s to serve. A job released on a failure (a retry) waits for nothing.
pub const TAKEOVER_SETTLE: Duration = Duration::from_secs(10);

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            max_connections: 4,
            takeover_settle: TAKEOVER_SETTLE,
        }
    }
}

/// The instants a claim compares with (milliseconds since the epoch).
#[derive(Debug, Clone, Copy)]
struct ClaimTimes {
    /// Jobs due by now are runnable.
    now: i64,
    /// A lease that ended before this has settled: its job may be taken over.
    lapsed_before: i64,
    /// The new lease's end.
    lease_until: i64,
}

type Reply = oneshot::Sender<Result<Received, String>>;
/// What intake hands the writer: deliveries, each with where its answer goes.
type Inbox = mpsc::Receiver<(NewDelivery, Reply)>;

#[derive(Clone)]
enum Backend {
    Sqlite(sqlx::SqlitePool),
    Postgres(Arc<postgres::Postgres>),
}

/// Runs `$body` with `$pool` bound to the backend's pool: the same SQL on either.
macro_rules! with_pool {
    ($backend:expr, $pool:ident => $body:expr) => {
        match $backend {
            Backend::Sqlite($pool) => $body,
            Backend::Postgres(pg) => {
                let $pool = &pg.pool;
                $body
            }
        }
    };
}

/// The pid of a worker named `{host}-{pid}-{n}` on `host`.
fn owner_pid(owner: &str, host: &str) -> Option<u32> {
    let rest = owner.strip_prefix(host)?.strip_prefix('-')?;
    let (pid, worker) = rest.split_once('-')?;
    worker.parse::<u32>().ok()?;
    pid.parse().ok()
}

/// The inbox and queue. Cheap to clone.
#[derive(Clone)]
pub struct Store {
    backend: Backend,
    writer: mpsc::Sender<(NewDelivery, Reply)>,
    /// [`OpenOptions::takeover_settle`], in milliseconds.
    settle_ms: i64,
}

impl Store {
    /// Opens (creating it if needed) the SQLite database at `path` and brings its schema up
    /// to date.
    pub async fn open(path: &Path) -> Result<Store, StoreError> {
        Store::connect(
            &Location::Sqlite(path.to_path_buf()),
            &OpenOptions::default(),
        )
        .await
    }

    /// Opens the database at `location` and brings its schema up to date (on PostgreSQL,
    /// one replica at a time: the others wait for it).
    pub async fn connect(location: &Location, options: &OpenOptions) -> Result<Store, StoreError> {
        let backend = match location {
            Location::Sqlite(path) => Backend::Sqlite(sqlite::open(path, options).await?),
            Location::Postgres(url) => {
                Backend::Postgres(Arc::new(postgres::Postgres::open(url, options).await?))
            }
        };
        let (writer, inbox) = mpsc::channel(4 * GROUP_COMMIT_MAX);
        match (&backend, location) {
            (Backend::Postgres(pg), _) => {
                tokio::spawn(write_loop(pg.clone(), inbox));
            }
            (Backend::Sqlite(_), Location::Sqlite(path)) => sqlite::spawn_writer(path, inbox)?,
            (Backend::Sqlite(_), Location::Postgres(_)) => unreachable!("backend of location"),
        }
        let settle_ms = i64::try_from(options.takeover_settle.as_millis()).unwrap_or(i64::MAX / 4);
        Ok(Store {
            backend,
            writer,
            settle_ms,
        })
    }

    /// The backend's name (`sqlite`, `postgres`).
    pub fn backend(&self) -> &'static str {
        match self.backend {
            Backend::Sqlite(_) => "sqlite",
            Backend::Postgres(_) => "postgres",
        }
    }

    /// Commits `delivery` (with whatever else arrived meanwhile) and says whether it was
    /// new. Returns only after the commit, or with an error after `RECEIVE_TIMEOUT` (the
    /// delivery may then be stored or not: GitHub's redelivery finds out, as a duplicate).
    pub async fn receive(&self, mut delivery: NewDelivery) -> Result<Received, StoreError> {
        if let Backend::Sqlite(_) = self.backend {
            // Here, on the request's own task, not in the one writer's.
            delivery.payload = payload::pack(&delivery.payload);
        }
        let (reply, answer) = oneshot::channel();
        let committed = async {
            self.writer
                .send((delivery, reply))
                .await
                .map_err(|_| StoreError::WriterGone)?;
            match answer.await {
                Ok(Ok(received)) => Ok(received),
                Ok(Err(message)) => Err(StoreError::Database(sqlx::Error::Protocol(message))),
                Err(_) => Err(StoreError::WriterGone),
            }
        };
        tokio::time::timeout(RECEIVE_TIMEOUT, committed)
            .await
            .unwrap_or(Err(StoreError::Timeout))
    }

    /// Whether the database answers.
    pub async fn ping(&self) -> Result<(), StoreError> {
        with_pool!(&self.backend, pool => {
            sqlx::query("SELECT 1").execute(pool).await?;
        });
        Ok(())
    }

    /// Frees the leases held by processes of `host` that are gone (`alive` says which pids
    /// still run): a previous incarnation killed with SIGKILL, whose jobs then run again at
    /// once instead of when their leases end. Returns how many jobs were freed.
    pub async fn release_dead_leases(
        &self,
        host: &str,
        alive: &dyn Fn(u32) -> bool,
    ) -> Result<u64, StoreError> {
        let owners: Vec<(String,)> = with_pool!(&self.backend, pool => sqlx::query_as(
            "SELECT DISTINCT lease_owner FROM deliveries
             WHERE done_at IS NULL AND lease_owner IS NOT NULL",
        )
        .fetch_all(pool)
        .await?);
        let mut freed = 0;
        for (owner,) in owners {
            let Some(pid) = owner_pid(&owner, host) else {
                continue;
            };
            if alive(pid) {
                continue;
            }
            freed += with_pool!(&self.backend, pool => sqlx::query(
                "UPDATE deliveries SET lease_owner = NULL, lease_until = NULL
                 WHERE done_at IS NULL AND lease_owner = $1",
            )
            .bind(&owner)
            .execute(pool)
            .await?
            .rows_affected());
        }
        Ok(freed)
    }

    /// Frees the leases that this process's workers (`replica`-N) still hold: on exit after
    /// the drain, so that another replica, or the next start, runs those jobs at once. A
    /// worker still running one finds its fence gone before its next write.
    pub async fn release_leases_of(&self, replica: &str) -> Result<u64, StoreError> {
        let prefix = format!("{replica}-");
        let length = i32::try_from(prefix.chars().count()).unwrap_or(i32::MAX);
        Ok(with_pool!(&self.backend, pool => sqlx::query(
            "UPDATE deliveries SET lease_owner = NULL, lease_until = NULL
             WHERE done_at IS NULL AND substr(lease_owner, 1, $2) = $1",
        )
        .bind(&prefix)
        .bind(length)
        .execute(pool)
        .await?
        .rows_affected()))
    }

    /// Claims the next runnable job for `owner` until `now + lease`. A job another worker
    /// leased is runnable again [`OpenOptions::takeover_settle`] after its lease ran out.
    pub async fn claim(
        &self,
        owner: &str,
        now: i64,
        lease: Duration,
    ) -> Result<Option<Job>, StoreError> {
        self.claim_avoiding(owner, now, lease, &[]).await
    }

    /// [`Store::claim`], of a job of none of the installations in `avoid` (a job of no
    /// installation is never avoided); see [`super::fair`].
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
            lapsed_before: now - self.settle_ms,
            lease_until,
        };
        let job = match &self.backend {
            Backend::Sqlite(pool) => sqlite::claim(pool, owner, times, avoid).await?,
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
        let done = with_pool!(&self.backend, pool => sqlx::query(
            "UPDATE deliveries SET done_at = $1, outcome = $2, lease_owner = NULL, lease_until = NULL
             WHERE seq = $3 AND lease_owner = $4 AND done_at IS NULL",
        )
        .bind(now)
        .bind(outcome)
        .bind(job.seq)
        .bind(owner)
        .execute(pool)
        .await?
        .rows_affected());
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
        with_pool!(&self.backend, pool => sqlx::query(
            "UPDATE deliveries SET run_at = $1, last_error = $2, lease_owner = NULL,
                lease_until = NULL, attempts = attempts - $3
             WHERE seq = $4 AND lease_owner = $5 AND done_at IS NULL",
        )
        .bind(run_at)
        .bind(error)
        .bind(if counted { 0_i64 } else { 1_i64 })
        .bind(job.seq)
        .bind(owner)
        .execute(pool)
        .await?
        .rows_affected());
        Ok(())
    }

    /// Parks `job`: its key changes, so the later jobs of its pull request run without
    /// waiting for it; it is retried on its own, in no order with them.
    pub async fn park(&self, job: &Job, owner: &str) -> Result<(), StoreError> {
        with_pool!(&self.backend, pool => sqlx::query(
            "UPDATE deliveries SET job_key = job_key || $1
             WHERE seq = $2 AND lease_owner = $3 AND done_at IS NULL
               AND job_key NOT LIKE '%' || $1",
        )
        .bind(PARKED)
        .bind(job.seq)
        .bind(owner)
        .execute(pool)
        .await?
        .rows_affected());
        Ok(())
    }

    /// Extends the lease of a job still being worked on.
    pub async fn extend(&self, job: &Job, owner: &str, until: i64) -> Result<(), StoreError> {
        with_pool!(&self.backend, pool => sqlx::query(
            "UPDATE deliveries SET lease_until = $1 WHERE seq = $2 AND lease_owner = $3",
        )
        .bind(until)
        .bind(job.seq)
        .bind(owner)
        .execute(pool)
        .await?
        .rows_affected());
        Ok(())
    }

    /// Whether `owner` still holds `job` as claimed (the same attempt, not done, the lease
    /// not run out at `now`): the fence a worker passes before each effect, so that one
    /// that lost its lease (paused, cut off from the database) stops instead of doing
    /// again what the worker that took the job over does.
    pub async fn holds(&self, job: &Job, owner: &str, now: i64) -> Result<bool, StoreError> {
        let held: i64 = with_pool!(&self.backend, pool => sqlx::query_scalar(
            "SELECT COUNT(*) FROM deliveries
             WHERE seq = $1 AND lease_owner = $2 AND attempts = $3 AND done_at IS NULL
               AND lease_until >= $4",
        )
        .bind(job.seq)
        .bind(owner)
        .bind(job.attempts)
        .bind(now)
        .fetch_one(pool)
        .await?);
        Ok(held > 0)
    }

    /// Jobs not done yet (the queue depth, all replicas together).
    pub async fn pending(&self) -> Result<i64, StoreError> {
        Ok(with_pool!(&self.backend, pool => sqlx::query_scalar(
            "SELECT COUNT(*) FROM deliveries WHERE done_at IS NULL",
        )
        .fetch_one(pool)
        .await?))
    }

    /// Pull requests waiting for CI's record (all replicas together).
    pub async fn waiting(&self) -> Result<i64, StoreError> {
        Ok(with_pool!(&self.backend, pool => sqlx::query_scalar(
            "SELECT COUNT(*) FROM waiting",
        )
        .fetch_one(pool)
        .await?))
    }

    /// Deletes up to `limit` deliveries finished before `before` (ms), oldest first, and
    /// says how many. Until then a delivery's key answers "seen before"; see
    /// [`super::sweep::prune`] for how long that must be.
    pub async fn prune_finished(&self, before: i64, limit: i64) -> Result<u64, StoreError> {
        Ok(with_pool!(&self.backend, pool => sqlx::query(
            "DELETE FROM deliveries WHERE seq IN (
                SELECT seq FROM deliveries WHERE done_at IS NOT NULL AND done_at < $1
                ORDER BY done_at LIMIT $2)",
        )
        .bind(before)
        .bind(limit)
        .execute(pool)
        .await?
        .rows_affected()))
    }

    /// Whether a delivery of this [`NewDelivery::key`] is in the inbox: a webhook is found
    /// by its body, any other delivery by its id.
    pub async fn has_delivery(&self, delivery_id: &str) -> Result<bool, StoreError> {
        let found: Option<i64> = with_pool!(&self.backend, pool => sqlx::query_scalar(
            "SELECT seq FROM deliveries WHERE delivery_id = $1",
        )
        .bind(delivery_id)
        .fetch_optional(pool)
        .await?);
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
        with_pool!(&self.backend, pool => sqlx::query(
            "INSERT INTO installations (id, account, removed, updated_at) VALUES ($1, $2, $3, $4)
             ON CONFLICT (id) DO UPDATE SET
                account = COALESCE(excluded.account, installations.account),
                removed = excluded.removed, updated_at = excluded.updated_at",
        )
        .bind(id)
        .bind(account)
        .bind(removed)
        .bind(now)
        .execute(pool)
        .await?
        .rows_affected());
        Ok(())
    }

    /// Whether the installation was removed (an event of an uninstalled App is ignored).
    pub async fn installation_removed(&self, id: i64) -> Result<bool, StoreError> {
        let removed: Option<bool> = with_pool!(&self.backend, pool => sqlx::query_scalar(
            "SELECT removed FROM installations WHERE id = $1",
        )
        .bind(id)
        .fetch_optional(pool)
        .await?);
        Ok(removed.unwrap_or(false))
    }

    /// The highest sticky-state revision written to the pull request of `job_key`.
    pub async fn state_revision(&self, job_key: &str) -> Result<Option<u64>, StoreError> {
        let revision: Option<i64> = with_pool!(&self.backend, pool => sqlx::query_scalar(
            "SELECT revision FROM state_revisions WHERE job_key = $1",
        )
        .bind(job_key)
        .fetch_optional(pool)
        .await?);
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
        with_pool!(&self.backend, pool => sqlx::query(
            "INSERT INTO state_revisions (job_key, revision, updated_at) VALUES ($1, $2, $3)
             ON CONFLICT (job_key) DO UPDATE SET
                revision = excluded.revision, updated_at = excluded.updated_at
             WHERE state_revisions.revision < excluded.revision",
        )
        .bind(job_key)
        .bind(revision)
        .bind(now)
        .execute(pool)
        .await?
        .rows_affected());
        Ok(())
    }

    /// Records that `waiting.head_sha` waits for CI, first checked at `first_check_at`. The
    /// same head again changes nothing (its checks keep their pace); a new head starts over.
    pub async fn set_waiting(
        &self,
        waiting: &Waiting,
        first_check_at: i64,
    ) -> Result<(), StoreError> {
        with_pool!(&self.backend, pool => sqlx::query(
            "INSERT INTO waiting (job_key, installation_id, repository, pr, head_sha, since,
                checks, next_check_at)
             VALUES ($1, $2, $3, $4, $5, $6, 0, $7)
             ON CONFLICT (job_key) DO UPDATE SET
                installation_id = excluded.installation_id, repository = excluded.repository,
                pr = excluded.pr, head_sha = excluded.head_sha, since = excluded.since,
                checks = 0, next_check_at = excluded.next_check_at
             WHERE waiting.head_sha <> excluded.head_sha",
        )
        .bind(&waiting.job_key)
        .bind(waiting.installation_id)
        .bind(&waiting.repository)
        .bind(waiting.pr)
        .bind(&waiting.head_sha)
        .bind(waiting.since)
        .bind(first_check_at)
        .execute(pool)
        .await?
        .rows_affected());
        Ok(())
    }

    /// The pull request of `job_key` waits no more: for `head_sha` (a record decided it),
    /// or for any head (`None`: the PR was closed).
    pub async fn clear_waiting(
        &self,
        job_key: &str,
        head_sha: Option<&str>,
    ) -> Result<(), StoreError> {
        with_pool!(&self.backend, pool => sqlx::query(
            "DELETE FROM waiting WHERE job_key = $1 AND ($2 IS NULL OR head_sha = $2)",
        )
        .bind(job_key)
        .bind(head_sha)
        .execute(pool)
        .await?
        .rows_affected());
        Ok(())
    }

    /// Up to `limit` waiting pull requests due for a check at `now` whose key has no
    /// unfinished job (an event in the queue will tell more than a check).
    pub async fn due_waiting(&self, now: i64, limit: i64) -> Result<Vec<Waiting>, StoreError> {
        type Row = (String, i64, String, i64, String, i64, i64);
        let rows: Vec<Row> = with_pool!(&self.backend, pool => sqlx::query_as(
            "SELECT w.job_key, w.installation_id, w.repository, w.pr, w.head_sha, w.since,
                w.checks
             FROM waiting w
             WHERE w.next_check_at <= $1
               AND NOT EXISTS (SELECT 1 FROM deliveries d
                               WHERE d.job_key = w.job_key AND d.done_at IS NULL)
             ORDER BY w.next_check_at LIMIT $2",
        )
        .bind(now)
        .bind(limit)
        .fetch_all(pool)
        .await?);
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
        with_pool!(&self.backend, pool => sqlx::query(
            "UPDATE waiting SET checks = checks + 1, next_check_at = $3
             WHERE job_key = $1 AND head_sha = $2",
        )
        .bind(&waiting.job_key)
        .bind(&waiting.head_sha)
        .bind(next_check_at)
        .execute(pool)
        .await?
        .rows_affected());
        Ok(())
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

    /// Lets pending writes finish and closes the connections (a held sweep lock with them).
    pub async fn close(&self) {
        match &self.backend {
            Backend::Sqlite(pool) => pool.close().await,
            Backend::Postgres(pg) => pg.close().await,
        }
    }
}

/// Fills `batch` with `first` and every delivery already waiting behind it (up to
/// [`GROUP_COMMIT_MAX`]): one group, one commit. Deliveries intake gave up on (it answered
/// 503) are left out, which keeps that answer true.
fn gather(first: (NewDelivery, Reply), inbox: &mut Inbox, batch: &mut Vec<(NewDelivery, Reply)>) {
    batch.clear();
    batch.push(first);
    while batch.len() < GROUP_COMMIT_MAX {
        match inbox.try_recv() {
            Ok(next) => batch.push(next),
            Err(_) => break,
        }
    }
    batch.retain(|(_, reply)| !reply.is_closed());
}

/// Answers every delivery of the group: its own result, or the group's error.
fn answer(batch: &mut Vec<(NewDelivery, Reply)>, outcome: Result<Vec<Received>, String>) {
    match outcome {
        Ok(results) => {
            for ((_, reply), result) in batch.drain(..).zip(results) {
                let _ = reply.send(Ok(result));
            }
        }
        Err(message) => {
            for (_, reply) in batch.drain(..) {
                let _ = reply.send(Err(message.clone()));
            }
        }
    }
}

/// PostgreSQL's writer: the same groups, committed by one task (SQLite's has a thread of
/// its own, [`sqlite::spawn_writer`]). A deadlock with another replica's group is retried.
async fn write_loop(pg: Arc<postgres::Postgres>, mut inbox: Inbox) {
    let mut batch = Vec::with_capacity(GROUP_COMMIT_MAX);
    while let Some(first) = inbox.recv().await {
        gather(first, &mut inbox, &mut batch);
        if batch.is_empty() {
            continue;
        }
        let deliveries: Vec<&NewDelivery> = batch.iter().map(|(d, _)| d).collect();
        let mut outcome = postgres::insert_batch(&pg.pool, &deliveries, now_ms()).await;
        for _ in 1..COMMIT_TRIES {
            match &outcome {
                Err(e) if is_deadlock(e) => {
                    outcome = postgres::insert_batch(&pg.pool, &deliveries, now_ms()).await
                }
                _ => break,
            }
        }
        drop(deliveries);
        answer(&mut batch, outcome.map_err(|e| e.to_string()));
    }
}

/// PostgreSQL's `deadlock_detected`.
fn is_deadlock(error: &sqlx::Error) -> bool {
    error
        .as_database_error()
        .and_then(|e| e.code())
        .is_some_and(|code| code == "40P01")
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_location_is_postgres_only_by_its_scheme_and_never_shows_a_password() {
        let pg = Location::parse("postgres://app:s3cret@db.internal:5432/itergate?sslmode=require");
        assert_eq!(pg.backend(), "postgres");
        assert_eq!(
            pg.to_string(),
            "postgres://app:***@db.internal:5432/itergate?sslmode=require"
        );
        let param = Location::parse("postgresql://db/itergate?user=app&password=s3cret&x=1");
        assert_eq!(
            param.to_string(),
            "postgresql://db/itergate?user=app&password=***&x=1"
        );
        assert_eq!(
            Location::parse("postgres://app@db/itergate").to_string(),
            "postgres://app@db/itergate"
        );
        assert_eq!(
            Location::parse("itergate.db"),
            Location::Sqlite("itergate.db".into())
        );
        assert_eq!(
            Location::parse("sqlite:/var/lib/itergate.db"),
            Location::Sqlite("/var/lib/itergate.db".into())
        );
    }
}
