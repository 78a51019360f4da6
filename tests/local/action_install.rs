//! The Action's install step (`scripts/install-action.sh`) against a fake release served on
//! 127.0.0.1: one archive per target plus `SHA256SUMS`, laid out as
//! `.github/workflows/release.yml` publishes them. Every request is logged, so a test sees
//! which asset was chosen and whether anything was downloaded at all. The fallback build is
//! replaced by a command that writes a stub (`ITERGATE_FALLBACK_INSTALL`), so no test
//! compiles itergate; nothing reaches beyond 127.0.0.1.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use sha2::{Digest, Sha256};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/install-action.sh");

/// (RUNNER_OS, RUNNER_ARCH, target triple, binary name): the release's four targets.
const TARGETS: [(&str, &str, &str, &str); 4] = [
    ("Linux", "X64", "x86_64-unknown-linux-musl", "itergate"),
    ("Linux", "ARM64", "aarch64-unknown-linux-musl", "itergate"),
    ("macOS", "X64", "x86_64-apple-darwin", "itergate"),
    ("macOS", "ARM64", "aarch64-apple-darwin", "itergate"),
];

type Files = Arc<Mutex<HashMap<String, Vec<u8>>>>;

/// A static file server on 127.0.0.1 that logs each request path; stopped on drop.
struct FakeRelease {
    port: u16,
    files: Files,
    log: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl FakeRelease {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let port = listener.local_addr().expect("address").port();
        let files: Files = Arc::default();
        let log = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (files, log, stop) = (files.clone(), log.clone(), stop.clone());
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    if let Ok(stream) = stream {
                        serve(stream, &files, &log);
                    }
                }
            })
        };
        FakeRelease {
            port,
            files,
            log,
            stop,
            thread: Some(thread),
        }
    }

    fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/releases/download", self.port)
    }

    fn put(&self, path: &str, body: Vec<u8>) {
        self.files.lock().unwrap().insert(path.to_string(), body);
    }

    /// Publishes release `tag` with an archive per target, each binary a script naming it.
    fn publish(&self, tag: &str, marker: &str) {
        let mut sums = String::new();
        for (_, _, target, exe) in TARGETS {
            let binary = format!("#!/bin/sh\necho \"fake itergate {marker} {target}\"\n");
            let dir = format!("itergate-{tag}-{target}");
            let (name, archive) = (format!("{dir}.tar.gz"), tar_archive(&dir, exe, &binary));
            sums.push_str(&format!("{}  {name}\n", sha256_hex(&archive)));
            self.put(&format!("/releases/download/{tag}/{name}"), archive);
        }
        self.put(
            &format!("/releases/download/{tag}/SHA256SUMS"),
            sums.into_bytes(),
        );
    }

    /// The request paths since the last call.
    fn take_log(&self) -> Vec<String> {
        std::mem::take(&mut *self.log.lock().unwrap())
    }
}

impl Drop for FakeRelease {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port)); // wakes the accept loop
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn serve(stream: TcpStream, files: &Files, log: &Mutex<Vec<String>>) {
    let mut reader = BufReader::new(&stream);
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    loop {
        let mut header = String::new();
        match reader.read_line(&mut header) {
            Ok(0) | Err(_) => break,
            Ok(_) if header == "\r\n" || header == "\n" => break,
            Ok(_) => {}
        }
    }
    let path = request_line
        .split_whitespace()
        .nth(1)
        .unwrap_or("")
        .to_string();
    log.lock().unwrap().push(path.clone());
    let body = files.lock().unwrap().get(&path).cloned();
    let (status, body) = match body {
        Some(body) => ("200 OK", body),
        None => ("404 Not Found", b"Not Found".to_vec()),
    };
    let mut stream = &stream;
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(&body);
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn tar_archive(dir: &str, exe: &str, binary: &str) -> Vec<u8> {
    let scratch = tempfile::tempdir().expect("tempdir");
    let folder = scratch.path().join(dir);
    std::fs::create_dir(&folder).expect("mkdir");
    std::fs::write(folder.join(exe), binary).expect("write binary");
    std::fs::write(folder.join("README.md"), "readme").expect("write readme");
    let archive = scratch.path().join("a.tar.gz");
    let status = Command::new("tar")
        .arg("-czf")
        .arg(&archive)
        .arg("-C")
        .arg(scratch.path())
        .arg(dir)
        .status()
        .expect("tar must be installed");
    assert!(status.success(), "tar failed");
    std::fs::read(archive).expect("read archive")
}

/// One runner: its tool cache, temp directory and GITHUB_PATH file, kept across runs.
struct Runner {
    dir: tempfile::TempDir,
}

impl Runner {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        for sub in ["toolcache", "temp"] {
            std::fs::create_dir(dir.path().join(sub)).expect("mkdir");
        }
        std::fs::write(dir.path().join("github_path"), "").expect("GITHUB_PATH file");
        Runner { dir }
    }

    fn tool_cache(&self) -> PathBuf {
        self.dir.path().join("toolcache")
    }

    fn fallback_root(&self) -> PathBuf {
        self.dir.path().join("temp/itergate")
    }

    /// The lines the script appended to GITHUB_PATH since the last call.
    fn take_github_path(&self) -> Vec<String> {
        let file = self.dir.path().join("github_path");
        let text = std::fs::read_to_string(&file).expect("read GITHUB_PATH");
        std::fs::write(&file, "").expect("truncate GITHUB_PATH");
        text.lines().map(str::to_string).collect()
    }

    /// Runs the script in a clean environment (nothing of the test's own CI leaks in).
    fn install(&self, server: &FakeRelease, os: &str, arch: &str, vars: &[(&str, &str)]) -> Run {
        let mut command = Command::new("bash");
        command
            .arg(SCRIPT)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.dir.path())
            .env("RUNNER_OS", os)
            .env("RUNNER_ARCH", arch)
            .env("RUNNER_TOOL_CACHE", self.tool_cache())
            .env("RUNNER_TEMP", self.dir.path().join("temp"))
            .env("GITHUB_PATH", self.dir.path().join("github_path"))
            .env("GITHUB_ACTION_PATH", env!("CARGO_MANIFEST_DIR"))
            .env("GITHUB_ACTION_REPOSITORY", "owner/itergate")
            .env("GITHUB_ACTION_REF", "v0.2.0")
            .env("ITERGATE_RELEASE_BASE_URL", server.base_url())
            .env(
                "ITERGATE_FALLBACK_INSTALL",
                r#"mkdir -p "$ITERGATE_INSTALL_ROOT/bin" && echo built > "$ITERGATE_INSTALL_ROOT/bin/itergate""#,
            );
        for (key, value) in vars {
            command.env(key, value);
        }
        Run(command.output().expect("bash must be installed"))
    }
}

struct Run(Output);

impl Run {
    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.0.stderr).into_owned()
    }

    fn assert_ok(self) -> Self {
        assert!(
            self.0.status.success(),
            "install failed:\n{}",
            self.stderr()
        );
        self
    }
}

fn file_text(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Names in the tool cache, recursively, relative to it.
fn cache_entries(runner: &Runner) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).expect("read dir").flatten() {
            let path = entry.path();
            out.push(path.strip_prefix(root).unwrap().display().to_string());
            if path.is_dir() {
                walk(root, &path, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(&runner.tool_cache(), &runner.tool_cache(), &mut out);
    out.sort();
    out
}

#[test]
fn each_runner_gets_its_targets_archive_verified_and_cached() {
    let server = FakeRelease::start();
    server.publish("v0.2.0", "v0.2.0");
    for (os, arch, target, exe) in TARGETS {
        let runner = Runner::new();
        let run = runner.install(&server, os, arch, &[]).assert_ok();
        let ext = "tar.gz";
        assert_eq!(
            server.take_log(),
            [
                "/releases/download/v0.2.0/SHA256SUMS".to_string(),
                format!("/releases/download/v0.2.0/itergate-v0.2.0-{target}.{ext}"),
            ],
            "{os}/{arch}"
        );
        let dir = runner
            .tool_cache()
            .join("itergate/0.2.0")
            .join(arch.to_lowercase());
        assert_eq!(
            runner.take_github_path(),
            [dir.display().to_string()],
            "{os}/{arch}"
        );
        assert!(
            file_text(&dir.join(exe)).contains(&format!("fake itergate v0.2.0 {target}")),
            "{os}/{arch}"
        );
        assert!(
            runner
                .tool_cache()
                .join(format!("itergate/0.2.0/{}.complete", arch.to_lowercase()))
                .is_file(),
            "{os}/{arch}: the tool-cache marker"
        );
        assert!(
            run.stderr().contains("checksum verified"),
            "{}",
            run.stderr()
        );
    }
}

#[test]
fn the_installed_binary_runs_from_github_path() {
    let server = FakeRelease::start();
    server.publish("v0.2.0", "v0.2.0");
    let runner = Runner::new();
    runner.install(&server, "Linux", "X64", &[]).assert_ok();
    let dir = runner.take_github_path().remove(0);
    let out = Command::new(Path::new(&dir).join("itergate"))
        .output()
        .expect("the installed binary is executable");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "fake itergate v0.2.0 x86_64-unknown-linux-musl"
    );
}

#[test]
fn a_checksum_mismatch_is_refused_and_nothing_is_installed() {
    let server = FakeRelease::start();
    server.publish("v0.2.0", "v0.2.0");
    let asset = "/releases/download/v0.2.0/itergate-v0.2.0-x86_64-unknown-linux-musl.tar.gz";
    server.put(
        asset,
        tar_archive("x", "itergate", "#!/bin/sh\necho tampered\n"),
    );
    let runner = Runner::new();
    let run = runner.install(&server, "Linux", "X64", &[]);
    assert!(!run.0.status.success(), "a tampered archive was accepted");
    let stderr = run.stderr();
    assert!(
        stderr.contains("checksum mismatch for itergate-v0.2.0-x86_64-unknown-linux-musl.tar.gz")
            && stderr.contains("Nothing was installed"),
        "{stderr}"
    );
    assert_eq!(cache_entries(&runner), Vec::<String>::new());
    assert_eq!(runner.take_github_path(), Vec::<String>::new());
    assert!(
        !runner.fallback_root().exists(),
        "no fallback after a mismatch"
    );
    let leftovers: Vec<_> = std::fs::read_dir(runner.dir.path().join("temp"))
        .expect("temp")
        .collect();
    assert!(leftovers.is_empty(), "the download was not removed");
}

#[test]
fn a_ref_without_a_release_falls_back_to_building_and_says_why() {
    let server = FakeRelease::start();
    server.publish("v0.2.0", "v0.2.0");
    let runner = Runner::new();
    let bin = runner.fallback_root().join("bin");

    // A version tag with no release: the server answers 404.
    let run = runner
        .install(&server, "Linux", "X64", &[("GITHUB_ACTION_REF", "v0.3.0")])
        .assert_ok();
    assert!(
        run.stderr()
            .contains("no release v0.3.0 at http://127.0.0.1")
            && run.stderr().contains("HTTP 404")
            && run.stderr().contains("ITERGATE_FALLBACK_INSTALL"),
        "{}",
        run.stderr()
    );
    assert_eq!(server.take_log(), ["/releases/download/v0.3.0/SHA256SUMS"]);
    assert_eq!(runner.take_github_path(), [bin.display().to_string()]);
    assert_eq!(file_text(&bin.join("itergate")).trim(), "built");
    assert_eq!(cache_entries(&runner), Vec::<String>::new());

    // A branch: nothing to download, no request made.
    let run = runner
        .install(&server, "Linux", "X64", &[("GITHUB_ACTION_REF", "main")])
        .assert_ok();
    assert!(
        run.stderr().contains("'main' is not a release version"),
        "{}",
        run.stderr()
    );
    assert_eq!(server.take_log(), Vec::<String>::new());
    assert_eq!(runner.take_github_path(), [bin.display().to_string()]);

    // `uses: ./`: no ref at all.
    let run = runner
        .install(&server, "Linux", "X64", &[("GITHUB_ACTION_REF", "")])
        .assert_ok();
    assert!(run.stderr().contains("uses: ./"), "{}", run.stderr());
}

#[test]
fn a_release_without_this_target_or_an_unsupported_runner_falls_back() {
    let server = FakeRelease::start();
    server.publish("v0.2.0", "v0.2.0");
    let runner = Runner::new();
    let run = runner.install(&server, "Linux", "RISCV64", &[]).assert_ok();
    assert!(
        run.stderr()
            .contains("no prebuilt itergate for Linux/RISCV64"),
        "{}",
        run.stderr()
    );
    assert_eq!(server.take_log(), Vec::<String>::new());
    // Windows is no target at all: said at once, nothing built or downloaded.
    let run = runner.install(&server, "Windows", "X64", &[]);
    assert!(!run.0.status.success());
    assert!(
        run.stderr().contains("does not run on Windows"),
        "{}",
        run.stderr()
    );
    assert_eq!(server.take_log(), Vec::<String>::new());

    server.put(
        "/releases/download/v0.2.0/SHA256SUMS",
        b"00  other\n".to_vec(),
    );
    let run = runner.install(&server, "Linux", "X64", &[]).assert_ok();
    assert!(
        run.stderr().contains(
            "release v0.2.0 has no itergate-v0.2.0-x86_64-unknown-linux-musl.tar.gz in its SHA256SUMS"
        ),
        "{}",
        run.stderr()
    );
    let bin = runner.fallback_root().join("bin").display().to_string();
    assert_eq!(runner.take_github_path(), [bin.clone(), bin]);
}

#[test]
fn a_cached_binary_is_reused_without_a_download() {
    let server = FakeRelease::start();
    server.publish("v0.2.0", "v0.2.0");
    let runner = Runner::new();
    runner.install(&server, "macOS", "ARM64", &[]).assert_ok();
    let first_path = runner.take_github_path();
    assert_eq!(server.take_log().len(), 2);

    let run = runner.install(&server, "macOS", "ARM64", &[]).assert_ok();
    assert_eq!(server.take_log(), Vec::<String>::new(), "downloaded again");
    assert!(
        run.stderr().contains("found in the tool cache") && run.stderr().contains("no download"),
        "{}",
        run.stderr()
    );
    assert_eq!(runner.take_github_path(), first_path);

    // Another architecture on the same runner is a cache miss.
    runner.install(&server, "macOS", "X64", &[]).assert_ok();
    assert_eq!(server.take_log().len(), 2);
}

#[test]
fn a_moving_tag_reuses_the_cache_only_while_the_release_is_unchanged() {
    let server = FakeRelease::start();
    server.publish("v0", "first");
    let runner = Runner::new();
    let with_v0 = [("GITHUB_ACTION_REF", "v0")];
    runner
        .install(&server, "Linux", "X64", &with_v0)
        .assert_ok();
    server.take_log();

    let run = runner
        .install(&server, "Linux", "X64", &with_v0)
        .assert_ok();
    assert_eq!(server.take_log(), ["/releases/download/v0/SHA256SUMS"]);
    assert!(
        run.stderr().contains("same checksum as the release"),
        "{}",
        run.stderr()
    );

    server.publish("v0", "second");
    runner
        .install(&server, "Linux", "X64", &with_v0)
        .assert_ok();
    assert_eq!(server.take_log().len(), 2, "the moved tag was downloaded");
    let binary = runner.tool_cache().join("itergate/0/x64/itergate");
    assert!(file_text(&binary).contains("fake itergate second"));
}

#[test]
fn the_version_input_pins_a_release_and_never_builds_another() {
    let server = FakeRelease::start();
    server.publish("v0.2.0", "v0.2.0");
    let runner = Runner::new();
    let pinned = [("GITHUB_ACTION_REF", "main"), ("ITERGATE_VERSION", "0.2.0")];
    runner
        .install(&server, "Linux", "ARM64", &pinned)
        .assert_ok();
    assert_eq!(
        server.take_log()[1],
        "/releases/download/v0.2.0/itergate-v0.2.0-aarch64-unknown-linux-musl.tar.gz"
    );

    let missing = [("ITERGATE_VERSION", "v0.9.0")];
    let run = runner.install(&server, "Linux", "X64", &missing);
    assert!(!run.0.status.success(), "a missing pinned version built");
    assert!(
        run.stderr().contains("no release v0.9.0")
            && run.stderr().contains("the input version pins it"),
        "{}",
        run.stderr()
    );
    assert!(!runner.fallback_root().exists());
}
