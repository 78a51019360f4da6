//! `itergate serve`: the GitHub App. Intake ([`intake`]) verifies each webhook and commits
//! it to the inbox ([`store`]) before answering; workers ([`worker`]) apply the stored
//! deliveries to their pull requests through the same handler core as the Actions mode,
//! with the App's installation tokens ([`crate::github::app_auth`]) and paced writes
//! ([`paced`]). No pull-request code runs in this process.
//!
//! Connections are held to the front door's limits ([`listener`], [`limits`]) before any
//! signature is checked.
//!
//! Shutdown (SIGTERM, Ctrl-C): intake stops accepting, closes idle connections and finishes
//! the requests in flight for at most 10 s;
//! workers finish the job they run, up to `--drain-seconds`; what is left stays queued, and
//! a job cut short lets its lease go, so it runs again from the start at once elsewhere or
//! on the next start.

pub mod fair;
pub mod intake;
pub mod late_writes;
pub mod limits;
pub mod listener;
pub mod metrics;
pub mod paced;
pub mod reconcile;
pub mod signature;
pub mod store;
pub mod sweep;
pub mod worker;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::routing::{get, post};
use tokio::sync::{watch, Notify};

use crate::app::{user, Failure};
use crate::github::app_auth::{AppCredentials, Installations};
use crate::github::sticky::StateKey;
use crate::github::ForgeSettings;
use crate::render::Renderer;

/// What `itergate serve` runs with: its own settings, which the CLI's flags turn into.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The address to listen on.
    pub listen: String,
    /// The inbox: a SQLite file or a PostgreSQL URL (else `DATABASE_URL`, else `itergate.db`).
    pub database: Option<String>,
    /// Connections to the database at most (a default per backend when `None`).
    pub database_connections: Option<u32>,
    /// The path GitHub posts webhooks to.
    pub webhook_path: String,
    /// The App's id.
    pub app_id: u64,
    /// The App's private key (PEM).
    pub private_key_path: PathBuf,
    /// The sticky state's MAC secret, instead of one derived from the private key.
    pub state_secret: Option<String>,
    /// The App's previous private key while rotating it.
    pub previous_private_key: Option<PathBuf>,
    /// The webhook secrets, comma-separated.
    pub webhook_secret: String,
    /// Jobs run at once.
    pub workers: usize,
    /// How long running jobs may finish after SIGTERM.
    pub drain_seconds: u64,
    /// How long a claimed job is a worker's before another may take it over.
    pub lease_seconds: u64,
    /// How long a lease that ran out settles before its job is taken over.
    pub takeover_settle_seconds: u64,
    /// The redelivery sweep's interval.
    pub sweep_minutes: f64,
    /// Days a finished delivery is kept.
    pub keep_days: u32,
    /// Content writes per installation and minute.
    pub writes_per_minute: u32,
    /// Connections open at once.
    pub max_connections: usize,
    /// Connections open at once from one peer address.
    pub max_connections_per_peer: usize,
    /// Where `/metrics` and `/readyz` are served instead of `listen`.
    pub metrics_listen: Option<String>,
}

/// The longest a request of the App waits for a rate limit inside a worker.
const APP_MAX_RATE_LIMIT_WAIT_MS: u64 = 5_000;

pub fn serve(args: &Settings) -> Result<(), Failure> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(anyhow::Error::from)?;
    runtime.block_on(run(args))
}

async fn run(args: &Settings) -> Result<(), Failure> {
    let secrets = signature::Secrets::parse(&args.webhook_secret)
        .ok_or_else(|| user("ITERGATE_WEBHOOK_SECRET (--webhook-secret) is empty"))?;
    let pem = std::fs::read(&args.private_key_path).map_err(|e| {
        user(format!(
            "ITERGATE_PRIVATE_KEY_PATH {}: {e}",
            args.private_key_path.display()
        ))
    })?;
    let credentials = AppCredentials::new(args.app_id, &pem)
        .map_err(|e| user(format!("{}: {e}", args.private_key_path.display())))?;
    if !args.webhook_path.starts_with('/') {
        return Err(user(format!(
            "--webhook-path `{}` must start with /",
            args.webhook_path
        )));
    }
    let location = database_location(args.database.as_deref());
    let open = store::OpenOptions {
        max_connections: args
            .database_connections
            .unwrap_or_else(|| default_connections(&location, args.workers)),
        takeover_settle: Duration::from_secs(args.takeover_settle_seconds),
    };
    let store = store::Store::connect(&location, &open)
        .await
        .map_err(|e| user(format!("--database {location}: {e}")))?;
    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .map_err(|e| user(format!("--listen {}: {e}", args.listen)))?;
    let address = listener.local_addr().map_err(anyhow::Error::from)?;

    let me = replica();
    store.register(me, store::now_ms()).await.map_err(|e| {
        user(format!(
            "--database {location}: registering this replica: {e}"
        ))
    })?;
    // A previous incarnation on this machine that was killed left its jobs leased: free them
    // now rather than when their leases run out.
    let alive = process_alive;
    match store.release_dead_leases(me, &alive).await {
        Ok(0) => {}
        Ok(n) => tracing::info!("{n} jobs of a process that is gone run again now"),
        Err(e) => tracing::warn!("freeing the leases of processes that are gone: {e}"),
    }
    let metrics = Arc::new(metrics::Metrics::new());
    metrics.identify(&me.id, store.backend());
    let wake = Arc::new(Notify::new());
    let intake = Arc::new(intake::Intake {
        store: store.clone(),
        secrets,
        metrics: metrics.clone(),
        wake: wake.clone(),
        budget: intake::BodyBudget::default(),
    });
    let webhook = axum::Router::new()
        .route(&args.webhook_path, post(intake::webhook))
        .route("/healthz", get(intake::healthz))
        .with_state(intake.clone());
    // `/metrics` tells anyone who can reach it what the App is doing (installations, queue,
    // errors): it is served only on an address of its own, never beside the webhook.
    let (router, health) = match &args.metrics_listen {
        Some(addr) => {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|e| user(format!("--metrics-listen {addr}: {e}")))?;
            let bound = listener
                .local_addr()
                .map_or_else(|_| addr.clone(), |a| a.to_string());
            eprintln!("itergate serve: /metrics and /readyz on http://{bound}");
            let health = axum::Router::new()
                .route("/readyz", get(intake::readyz))
                .route("/metrics", get(intake::metrics))
                .route("/healthz", get(intake::healthz))
                .with_state(intake);
            (webhook, Some((listener, health)))
        }
        None => {
            let ready = axum::Router::new()
                .route("/readyz", get(intake::readyz))
                .with_state(intake);
            (webhook.merge(ready), None)
        }
    };
    if args.max_connections == 0 {
        return Err(user("--max-connections must be at least 1"));
    }
    if args.max_connections_per_peer == 0 {
        return Err(user("--max-connections-per-peer must be at least 1"));
    }
    let limits = listener::Limits {
        max_connections: args.max_connections,
        max_per_peer: args.max_connections_per_peer,
        ..listener::Limits::default()
    };

    let (stop_tx, stop) = watch::channel(false);
    let mut settings = ForgeSettings {
        observer: Some(metrics.clone()),
        app_id: Some(args.app_id),
        ..ForgeSettings::from_env()
    };
    // A worker waits seconds at most for a rate limit; a longer one reschedules its job
    // for the reset (no attempt counted) and frees the worker.
    settings.retry.max_wait_ms = settings.retry.max_wait_ms.min(APP_MAX_RATE_LIMIT_WAIT_MS);
    let installations = Arc::new(Installations::new(settings, credentials));
    let renderer = Arc::new(Renderer::new(None, false).map_err(Failure::Internal)?);
    let every = Duration::from_secs_f64(args.sweep_minutes * 60.0).max(Duration::from_secs(1));
    let schedule = sweep::Schedule {
        every,
        keep: Duration::from_secs(u64::from(args.keep_days) * 24 * 3600),
    };
    tokio::spawn(sweep::run(
        installations.clone(),
        store.clone(),
        metrics.clone(),
        schedule,
        stop.clone(),
    ));
    let pacer = Arc::new(paced::Pacer::new(args.writes_per_minute));
    let beat = Duration::from_secs(args.lease_seconds.max(3) / 3);
    tokio::spawn(heartbeat(store.clone(), beat, pacer.clone()));
    tokio::spawn(watch_the_dead(store.clone(), wake.clone()));
    let workers = tokio::spawn(start_workers(
        args.workers.max(1),
        WorkerParts {
            store: store.clone(),
            installations,
            pacer: pacer.clone(),
            metrics,
            renderer,
            wake,
            lease: Duration::from_secs(args.lease_seconds.max(1)),
            state_key: state_key(args, &pem)?,
            reconcile_every: every,
        },
        stop.clone(),
    ));

    eprintln!(
        "itergate serve: listening on http://{address} (webhook at {})",
        args.webhook_path
    );
    tracing::info!(%address, database = %location, "serving");
    let shutdown = {
        let stop_tx = stop_tx.clone();
        async move {
            shutdown_signal().await;
            tracing::info!("shutting down: no new deliveries; finishing running jobs");
            let _ = stop_tx.send(true);
        }
    };
    if let Some((listener, health)) = health {
        let mut stop = stop.clone();
        let limits = limits.clone();
        tokio::spawn(listener::serve(listener, health, limits, async move {
            let _ = stop.wait_for(|stop| *stop).await;
        }));
    }
    listener::serve(listener, router, limits, shutdown).await;
    let _ = stop_tx.send(true);
    let drain = Duration::from_secs(args.drain_seconds);
    match tokio::time::timeout(drain, workers).await {
        Ok(_) => tracing::info!("every running job finished"),
        Err(_) => match store.release_leases_of(&me.id).await {
            Ok(n) => tracing::warn!(
                "{n} jobs still running after {} s are let go: they run again from the start elsewhere or on the next start",
                drain.as_secs()
            ),
            Err(e) => tracing::warn!(
                "jobs still running after {} s keep their leases ({e}) and run again when those end",
                drain.as_secs()
            ),
        },
    }
    if let Err(e) = store.leave(&me.id).await {
        tracing::warn!("removing this replica from the database: {e}");
    }
    store.close().await;
    Ok(())
}

struct WorkerParts {
    store: store::Store,
    installations: Arc<Installations>,
    pacer: Arc<paced::Pacer>,
    metrics: Arc<metrics::Metrics>,
    renderer: Arc<Renderer>,
    wake: Arc<Notify>,
    lease: Duration,
    state_key: crate::github::sticky::StateKey,
    reconcile_every: Duration,
}

/// Learns the App's bot login (its comments are the only trusted state), then runs `n`
/// workers until `stop`.
async fn start_workers(n: usize, parts: WorkerParts, mut stop: watch::Receiver<bool>) {
    let bot_login = loop {
        if let Ok(login) = std::env::var("ITERGATE_BOT_LOGIN") {
            if !login.trim().is_empty() {
                break login;
            }
        }
        match parts.installations.bot_login().await {
            Ok(login) => break login,
            Err(e) => {
                tracing::error!(
                    "cannot read the App from GitHub ({e}); deliveries are stored and wait"
                );
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_secs(10)) => {}
                    _ = stop.changed() => return,
                }
            }
        }
    };
    tracing::info!(bot = %bot_login, workers = n, "workers started");
    let owner = &replica().id;
    let running = Arc::new(fair::Running::default());
    let mut handles = Vec::with_capacity(n);
    for i in 0..n {
        let worker = Arc::new(worker::Worker {
            store: parts.store.clone(),
            installations: parts.installations.clone(),
            pacer: parts.pacer.clone(),
            metrics: parts.metrics.clone(),
            renderer: parts.renderer.clone(),
            bot_login: bot_login.clone(),
            owner: format!("{owner}-{i}"),
            wake: parts.wake.clone(),
            lease: parts.lease,
            state_key: parts.state_key.clone(),
            reconcile_every: parts.reconcile_every,
            running: running.clone(),
        });
        handles.push(tokio::spawn(worker.run(stop.clone())));
    }
    for handle in handles {
        let _ = handle.await;
    }
}

/// Where the inbox is: `--database` (or `ITERGATE_DATABASE`), else `DATABASE_URL`, else
/// `itergate.db`.
fn database_location(flag: Option<&str>) -> store::Location {
    let url = std::env::var("DATABASE_URL").ok();
    let chosen = flag
        .filter(|v| !v.trim().is_empty())
        .or(url.as_deref().filter(|v| !v.trim().is_empty()))
        .unwrap_or("itergate.db");
    store::Location::parse(chosen)
}

/// The pool's size unless `--database-connections` says: on PostgreSQL each worker uses
/// one connection at a time (two while it renews its lease), plus intake's writer,
/// `/readyz` and `/metrics`, and the sweep.
fn default_connections(location: &store::Location, workers: usize) -> u32 {
    match location {
        store::Location::Sqlite(_) => 4,
        store::Location::Postgres(_) => u32::try_from(workers.max(1)).unwrap_or(64) + 4,
    }
}

/// The key of the sticky comment's state: from `--state-secret`, else from the private key.
/// It also verifies the previous key's states (`--previous-private-key`), the private key's
/// when a secret replaces it, and those of versions that keyed the MAC by the key file's
/// bytes, so neither an upgrade nor a rotation resets a pull request's history.
fn state_key(args: &Settings, pem: &[u8]) -> Result<StateKey, Failure> {
    let from_key = StateKey::from_private_key(pem);
    let mut key = match args.state_secret.as_deref().filter(|s| !s.is_empty()) {
        Some(secret) => StateKey::derive(secret.as_bytes()).accepting(from_key),
        None => from_key,
    };
    key = key.accepting(StateKey::derive(pem));
    if let Some(path) = &args.previous_private_key {
        let previous = std::fs::read(path).map_err(|e| {
            user(format!(
                "ITERGATE_PREVIOUS_PRIVATE_KEY_PATH {}: {e}",
                path.display()
            ))
        })?;
        key = key
            .accepting(StateKey::from_private_key(&previous))
            .accepting(StateKey::derive(&previous));
    }
    Ok(key)
}

/// This process among the replicas, in leases, logs and `/metrics`: a random instance id
/// (readable: host, pid, then the random part), never the hostname and pid alone, which
/// containers can share.
fn replica() -> &'static store::Replica {
    static ME: std::sync::OnceLock<store::Replica> = std::sync::OnceLock::new();
    ME.get_or_init(|| {
        use std::hash::{BuildHasher, Hasher};
        let mut random = std::collections::hash_map::RandomState::new().build_hasher();
        random.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        let pid = std::process::id();
        store::Replica {
            id: format!("{}-{pid}-{:016x}", hostname(), random.finish()),
            machine: machine(),
            pid,
        }
    })
}

/// Where pids mean the same thing: on Linux this boot of this kernel and this pid
/// namespace (two containers with one hostname differ); elsewhere the host's name.
fn machine() -> String {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id");
    let namespace = std::fs::read_link("/proc/self/ns/pid");
    match (boot, namespace) {
        (Ok(boot), Ok(namespace)) => format!("{} {}", boot.trim(), namespace.display()),
        _ => hostname(),
    }
}

/// Beats this replica's heart every `every` until the process ends, and gives the pacer
/// this replica's share among the live ones (a heartbeat within three beats).
async fn heartbeat(store: store::Store, every: Duration, pacer: Arc<paced::Pacer>) {
    loop {
        tokio::time::sleep(every).await;
        let now = store::now_ms();
        if let Err(e) = store.heartbeat(&replica().id, now).await {
            tracing::warn!("the replica's heartbeat: {e}");
        }
        let recent = now - 3 * i64::try_from(every.as_millis()).unwrap_or(i64::MAX / 4);
        if let Ok(replicas) = store.replicas().await {
            let live = replicas.iter().filter(|r| r.3 >= recent).count();
            pacer.share_with(u32::try_from(live).unwrap_or(u32::MAX));
        }
    }
}

/// How often a replica looks for replicas on its machine that were killed.
const DEATH_WATCH: Duration = Duration::from_secs(1);

/// Frees, every [`DEATH_WATCH`], the jobs of the replicas on this machine whose process is
/// gone (`kill -9`, a crash) and wakes the workers: such a job runs again within about a
/// second, not when its lease runs out — after the settle if a write was in flight.
async fn watch_the_dead(store: store::Store, wake: Arc<Notify>) {
    loop {
        tokio::time::sleep(DEATH_WATCH).await;
        match store.release_dead_leases(replica(), &process_alive).await {
            Ok(0) => {}
            Ok(n) => {
                tracing::info!("{n} jobs of a replica that is gone run again");
                wake.notify_waiters();
            }
            Err(e) => tracing::debug!("looking for replicas that are gone: {e}"),
        }
    }
}

/// The host's name (`gethostname`, on every Unix: not `/proc`, which macOS lacks).
fn hostname() -> String {
    let mut buffer = [0u8; 256];
    // SAFETY: the buffer is valid for its length; the name is NUL-terminated within it.
    let ok = unsafe { libc::gethostname(buffer.as_mut_ptr().cast(), buffer.len()) } == 0;
    let end = buffer.iter().position(|b| *b == 0).unwrap_or(buffer.len());
    match std::str::from_utf8(&buffer[..end]) {
        Ok(name) if ok && !name.is_empty() => name.to_string(),
        _ => "itergate".into(),
    }
}

/// Whether a process with this id exists on this host (signal 0: checked, never sent). One
/// owned by another user exists too (`EPERM`).
fn process_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 performs only the existence and permission checks.
    let sent = unsafe { libc::kill(pid, 0) } == 0;
    let exists = sent || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
    exists && !zombie(pid)
}

/// A process that ended and was not reaped yet (its parent, a supervisor that has not
/// waited for it) answers signal 0 but runs nothing. Linux says so in `/proc`; elsewhere
/// such a replica's jobs wait for their leases.
fn zombie(pid: libc::pid_t) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        // The state follows the command's closing parenthesis.
        stat.rfind(')')
            .and_then(|end| {
                stat[end + 1..]
                    .split_whitespace()
                    .next()
                    .map(str::to_string)
            })
            .is_some_and(|state| state == "Z")
    })
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => {
                    let _ = ctrl_c.await;
                    return;
                }
            };
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}

#[cfg(test)]
mod host_tests {
    use super::{hostname, process_alive};

    #[test]
    fn a_live_process_is_alive_and_a_reaped_one_is_not() {
        assert!(process_alive(std::process::id()));
        let mut child = std::process::Command::new("true")
            .spawn()
            .expect("true runs");
        let pid = child.id();
        child.wait().expect("reaped");
        assert!(!process_alive(pid));
    }

    /// Killed and not yet reaped (a zombie): dead on Linux, where `/proc` says so.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_killed_process_not_yet_reaped_is_dead() {
        let mut child = std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .expect("sleep runs");
        let pid = child.id();
        assert!(process_alive(pid));
        // SAFETY: a signal to our own child.
        unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while process_alive(pid) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(!process_alive(pid), "a zombie is not alive");
        child.wait().expect("reaped");
    }

    #[test]
    fn the_hostname_is_the_kernels() {
        let kernel = std::process::Command::new("uname")
            .arg("-n")
            .output()
            .expect("uname runs");
        assert_eq!(hostname(), String::from_utf8_lossy(&kernel.stdout).trim());
    }
}
