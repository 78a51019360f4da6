//! The App's durable inbox and job queue: one table of deliveries, on SQLite (the embedded
//! default, one process) or on PostgreSQL (shared by several replicas). A delivery is
//! committed before its 2xx; then it is a job, claimed with a lease, done once.
//!
//! - **Group commit.** Intake hands rows to one writer per process that commits everything
//!   that arrived meanwhile in one transaction (one fsync for many deliveries) and then
//!   answers each: on SQLite a thread of its own with its own connection (no async hop
//!   per group), on PostgreSQL a task with one multi-row statement. A delivery id seen
//!   before is reported as a duplicate (`INSERT ... ON CONFLICT DO NOTHING` on a unique
//!   column), so GitHub's redelivery and a second replica's copy make no second job.
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
//! SQLite, `payload`), migrations, and the sweep's leader lock. Every other statement is the
//! same SQL text on both, with `$1` placeholders (`sql`): SQLite is driven by rusqlite, and
//! sqlx serves PostgreSQL only.

/// A claimed job's columns, in the order of [`JobRow`] (a literal, to build constant SQL).
macro_rules! job_columns {
    () => {
        "seq, COALESCE(guid, delivery_id), event, installation_id, payload, attempts, received_at,
         payload_encoding"
    };
}

/// The order of runnable jobs a claim takes: those that do not yield first, then by
/// arrival. A job that does not yield clears the flag of its key's unfinished jobs when it
/// is stored: it would otherwise wait behind them.
macro_rules! claim_order {
    () => {
        "d.yields, d.seq"
    };
}

/// The unfinished jobs a claim looks at first, in [`claim_order`].
macro_rules! claim_window {
    () => {
        "SELECT seq FROM deliveries WHERE done_at IS NULL ORDER BY yields, seq"
    };
}

mod payload;
mod postgres;
mod schema;
mod sql;
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
    /// Claimed after every job that does not yield, until a job of its key that does not is
    /// stored: a command from someone who is not a member or collaborator of the repository.
    /// Only the order changes; the job is run all the same.
    pub yields: bool,
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
    #[error("database: {}", said_by_database(.0))]
    Database(#[from] sqlx::Error),
    #[error("database: {}", said_by_sqlite(.0))]
    Sqlite(#[from] rusqlite::Error),
    #[error("database: {0}")]
    Pool(#[from] r2d2::Error),
    #[error("the database is closed")]
    Closed,
    #[error("the database writer has stopped")]
    WriterGone,
    #[error("the database did not commit within {} s", RECEIVE_TIMEOUT.as_secs())]
    Timeout,
    #[error("database: no connection within {} s", .0.as_secs())]
    NoConnection(Duration),
    #[error("{0}")]
    Schema(String),
}

/// sqlx's error without its "error returned from database" preamble: the database's own
/// message, with its code.
fn said_by_database(error: &sqlx::Error) -> String {
    match error.as_database_error() {
        Some(e) => match e.code() {
            Some(code) => format!("{} (code {code})", e.message()),
            None => e.message().to_string(),
        },
        None => error.to_string(),
    }
}

/// SQLite's message with its (extended) code, as [`said_by_database`] words PostgreSQL's.
fn said_by_sqlite(error: &rusqlite::Error) -> String {
    match error {
        rusqlite::Error::SqliteFailure(code, Some(message)) => {
            format!("{message} (code {})", code.extended_code)
        }
        other => other.to_string(),
    }
}

/// How a store is opened.
#[derive(Debug, Clone)]
pub struct OpenOptions {
    /// Connections in this process's pool at most.
    pub max_connections: u32,
    /// How long a lease that ran out while its worker had a write to GitHub in flight
    /// stays untouched before another worker takes its job over ([`TAKEOVER_SETTLE`]).
    pub takeover_settle: Duration,
}

/// A job whose lease ran out (its worker died or stalled) while a write to GitHub was in
/// flight is taken over only this long after the lease's end: the write (a reply, a check
/// run) has landed by then, so the taker's look before each create finds it. GitHub ends a
/// request it takes over 10 s to serve. With no write in flight, or released on a failure
/// (a retry), a job waits for nothing.
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
    /// A lease that ended before this (after its settle, when a write was in flight) has
    /// lapsed: its job may be taken over.
    lapsed_before: i64,
    /// The new lease's end.
    lease_until: i64,
}

type Reply = oneshot::Sender<Result<Received, String>>;
/// What intake hands the writer: deliveries, each with where its answer goes.
type Inbox = mpsc::Receiver<(NewDelivery, Reply)>;

/// The database: a shared statement ([`sql::Statement`]) runs on either.
#[derive(Clone)]
enum Backend {
    Sqlite(Arc<sqlite::Sqlite>),
    Postgres(Arc<postgres::Postgres>),
}

mod claims;
mod intake;
mod pull_requests;
mod replicas;
mod sweep;

pub use replicas::Replica;

use intake::write_loop;

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

    /// Whether a delivery can be committed now: SQLite's write lock is taken (and let go)
    /// within a second, so a database another process holds locked is not ready;
    /// PostgreSQL answers.
    pub async fn ping(&self) -> Result<(), StoreError> {
        match &self.backend {
            Backend::Sqlite(sqlite) => sqlite.ping_write().await,
            Backend::Postgres(_) => {
                self.backend
                    .execute(sql::Statement::new("SELECT 1"))
                    .await?;
                Ok(())
            }
        }
    }

    /// Lets pending writes finish and closes the connections (a held sweep lock with them).
    pub async fn close(&self) {
        match &self.backend {
            Backend::Sqlite(sqlite) => sqlite.close().await,
            Backend::Postgres(pg) => pg.close().await,
        }
    }
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
