//! A real PostgreSQL for tests. With `DATABASE_URL` set, that server: each [`Postgres`]
//! is a database of its own on it, dropped at the end. Otherwise a temporary cluster of its
//! own, started with the server binaries on this machine (`initdb` and `pg_ctl`, on a free
//! port in a temporary directory) and stopped when dropped. The server refuses to run as
//! root, so as root it runs as the `postgres` user (`runuser`).
//!
//! Neither available → the test fails and says what to install; it never skips.
//!
//! Use from a test file with `mod pg_server;`.
#![allow(dead_code)] // each test binary uses part of it

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use sqlx::Connection as _;

pub struct Postgres {
    url: String,
    kind: Kind,
}

enum Kind {
    Cluster {
        /// Holds the data directory, the socket and the log.
        dir: tempfile::TempDir,
        bin: PathBuf,
        port: u16,
    },
    External {
        admin_url: String,
        database: String,
    },
}

static DATABASES: AtomicU32 = AtomicU32::new(0);

impl Postgres {
    /// A fresh, empty database.
    pub async fn start() -> Postgres {
        match std::env::var("DATABASE_URL") {
            Ok(url) if !url.trim().is_empty() => Postgres::external(url).await,
            _ => Postgres::cluster(),
        }
    }

    /// A temporary cluster of the test's own even when `DATABASE_URL` is set: for a test
    /// that takes the server away.
    pub fn start_own() -> Postgres {
        Postgres::cluster()
    }

    /// The URL `itergate serve --database` takes.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Whether [`Postgres::stop`] and [`Postgres::start_again`] can take the server away
    /// (only a cluster of the test's own).
    pub fn can_stop(&self) -> bool {
        matches!(self.kind, Kind::Cluster { .. })
    }

    /// The server goes away at once, as in a crash: no client is told, nothing is flushed
    /// beyond what was committed. On a shared server, every connection to this test's
    /// database is cut instead.
    pub fn stop(&self) {
        match &self.kind {
            Kind::Cluster { dir, bin, .. } => {
                let data = data_dir(dir.path());
                pg_ctl(bin, &["stop", "-m", "immediate", "-w", "-D"], &data);
            }
            Kind::External { .. } => self.cut_connections(),
        }
    }

    /// Starts the server again after [`Postgres::stop`] (crash recovery replays the WAL).
    pub fn start_again(&self) {
        if let Kind::Cluster { dir, bin, port } = &self.kind {
            start_server(bin, dir.path(), *port).unwrap_or_else(|e| panic!("{e}"));
        }
    }

    /// One number from `sql`.
    pub async fn scalar(&self, sql: &str) -> i64 {
        let mut conn = sqlx::PgConnection::connect(&self.url)
            .await
            .expect("connect to the test database");
        let value: i64 = sqlx::query_scalar(sql)
            .fetch_one(&mut conn)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        let _ = conn.close().await;
        value
    }

    /// Rows of two numbers from `sql`.
    pub async fn pairs(&self, sql: &str) -> Vec<(i64, i64)> {
        let mut conn = sqlx::PgConnection::connect(&self.url)
            .await
            .expect("connect to the test database");
        let rows = sqlx::query_as(sql)
            .fetch_all(&mut conn)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        let _ = conn.close().await;
        rows
    }

    async fn external(admin_url: String) -> Postgres {
        let database = format!(
            "itergate_test_{}_{}",
            std::process::id(),
            DATABASES.fetch_add(1, Ordering::Relaxed)
        );
        let mut admin = sqlx::PgConnection::connect(&admin_url)
            .await
            .unwrap_or_else(|e| panic!("DATABASE_URL: {e}"));
        sqlx::raw_sql(&format!("CREATE DATABASE {database}"))
            .execute(&mut admin)
            .await
            .unwrap_or_else(|e| panic!("creating the test database on DATABASE_URL: {e}"));
        let _ = admin.close().await;
        Postgres {
            url: with_database(&admin_url, &database),
            kind: Kind::External {
                admin_url,
                database,
            },
        }
    }

    fn cluster() -> Postgres {
        let bin = server_binaries()
            .or_else(install_server)
            .unwrap_or_else(|| {
                panic!(
                "these tests need a PostgreSQL server: set DATABASE_URL, or install the server \
                 binaries (Debian: apt-get install postgresql; initdb and pg_ctl are looked for \
                 in /usr/lib/postgresql/*/bin and on PATH)"
            )
            });
        let dir = tempfile::Builder::new()
            .prefix("itergate-pg-")
            .tempdir()
            .expect("a temporary directory");
        if as_root() {
            give_to_postgres(dir.path());
        }
        let data = data_dir(dir.path());
        let out = run_as_server_user(
            Command::new(bin.join("initdb"))
                .args(["-U", "postgres", "--auth=trust", "-N", "-E", "UTF8", "-D"])
                .arg(&data),
        );
        assert!(out.status.success(), "initdb: {}", text(&out));
        let mut last = String::new();
        for _ in 0..5 {
            let port = free_port();
            match start_server(&bin, dir.path(), port) {
                Ok(()) => {
                    return Postgres {
                        url: format!("postgres://postgres@127.0.0.1:{port}/postgres"),
                        kind: Kind::Cluster { dir, bin, port },
                    }
                }
                Err(e) => last = e,
            }
        }
        panic!("the temporary PostgreSQL did not start: {last}");
    }

    fn cut_connections(&self) {
        let Kind::External {
            admin_url,
            database,
        } = &self.kind
        else {
            return;
        };
        let admin_url = admin_url.clone();
        let database = database.clone();
        std::thread::spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
                .block_on(async {
                    let mut admin = sqlx::PgConnection::connect(&admin_url).await.unwrap();
                    sqlx::query(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                         WHERE datname = $1 AND pid <> pg_backend_pid()",
                    )
                    .bind(&database)
                    .execute(&mut admin)
                    .await
                    .unwrap();
                })
        })
        .join()
        .unwrap();
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        match &self.kind {
            Kind::Cluster { dir, bin, .. } => {
                let data = data_dir(dir.path());
                let _ = run_as_server_user(
                    Command::new(bin.join("pg_ctl"))
                        .args(["stop", "-m", "immediate", "-w", "-D"])
                        .arg(&data),
                );
            }
            Kind::External {
                admin_url,
                database,
            } => {
                let admin_url = admin_url.clone();
                let database = database.clone();
                let _ = std::thread::spawn(move || {
                    tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .unwrap()
                        .block_on(async {
                            if let Ok(mut admin) = sqlx::PgConnection::connect(&admin_url).await {
                                let _ = sqlx::raw_sql(&format!(
                                    "DROP DATABASE IF EXISTS {database} WITH (FORCE)"
                                ))
                                .execute(&mut admin)
                                .await;
                            }
                        })
                })
                .join();
            }
        }
    }
}

/// `url` naming `database` instead of its own.
fn with_database(url: &str, database: &str) -> String {
    let (base, query) = url
        .split_once('?')
        .map_or((url, None), |(b, q)| (b, Some(q)));
    let authority_start = base.find("://").map_or(0, |i| i + 3);
    let path_start = base[authority_start..]
        .find('/')
        .map_or(base.len(), |i| authority_start + i);
    let mut out = format!("{}/{database}", &base[..path_start]);
    if let Some(query) = query {
        out.push('?');
        out.push_str(query);
    }
    out
}

fn data_dir(dir: &Path) -> PathBuf {
    dir.join("data")
}

fn start_server(bin: &Path, dir: &Path, port: u16) -> Result<(), String> {
    let options = format!(
        "-p {port} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200",
        dir.display()
    );
    let out = run_as_server_user(
        Command::new(bin.join("pg_ctl"))
            .args(["start", "-w", "-t", "30", "-o", &options, "-l"])
            .arg(dir.join("server.log"))
            .arg("-D")
            .arg(data_dir(dir)),
    );
    if out.status.success() {
        Ok(())
    } else {
        let log = std::fs::read_to_string(dir.join("server.log")).unwrap_or_default();
        Err(format!("pg_ctl start: {}\n{log}", text(&out)))
    }
}

fn pg_ctl(bin: &Path, args: &[&str], data: &Path) {
    let out = run_as_server_user(Command::new(bin.join("pg_ctl")).args(args).arg(data));
    assert!(out.status.success(), "pg_ctl {args:?}: {}", text(&out));
}

/// The directory of `initdb` and `pg_ctl`: the newest /usr/lib/postgresql/N/bin, or PATH.
fn server_binaries() -> Option<PathBuf> {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = entry.path().join("bin");
            bin.join("initdb").is_file().then_some((version, bin))
        })
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return Some(bin);
    }
    std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .find(|dir| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file())
    })
}

/// Runs `scripts/ensure-postgres.sh` (Debian's package, as root) and looks again.
fn install_server() -> Option<PathBuf> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/ensure-postgres.sh");
    let out = Command::new("bash").arg(script).output().ok()?;
    if !out.status.success() {
        eprintln!("{}", text(&out));
    }
    server_binaries()
}

fn as_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

fn give_to_postgres(dir: &Path) {
    let out = Command::new("chown")
        .arg("postgres:")
        .arg(dir)
        .output()
        .expect("chown");
    assert!(
        out.status.success(),
        "running as root, the server runs as the `postgres` user, which must exist: chown: {}",
        text(&out)
    );
}

fn run_as_server_user(command: &mut Command) -> Output {
    let output = if as_root() {
        let mut wrapped = Command::new("runuser");
        wrapped
            .args(["-u", "postgres", "--"])
            .arg(command.get_program())
            .args(command.get_args());
        wrapped.output()
    } else {
        command.output()
    };
    output.unwrap_or_else(|e| panic!("{:?}: {e}", command.get_program()))
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("its address").port()
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Waits for `done` (polling) or fails after `limit`.
pub async fn wait_for(limit: Duration, what: &str, mut done: impl AsyncFnMut() -> bool) {
    let start = std::time::Instant::now();
    while !done().await {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
