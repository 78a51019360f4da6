//! The front door before any signature is checked: idle, slow, oversized and numerous
//! senders are bounded in memory, connections and time, and a signed delivery is still
//! answered at once.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use super::app_server::{fake, Serve, SECRET};
use itergate::serve::signature::sign;

/// A connection that has sent `head` (and perhaps part of a body) and waits.
fn open(addr: &str, head: &str) -> TcpStream {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.write_all(head.as_bytes()).expect("send");
    stream
}

/// The head of a webhook POST whose signature is well formed but signs nothing.
fn unsigned_head(length: usize) -> String {
    format!(
        "POST /webhook HTTP/1.1\r\nHost: x\r\nX-GitHub-Event: ping\r\nX-GitHub-Delivery: d\r\n\
         X-Hub-Signature-256: sha256={}\r\nContent-Length: {length}\r\n\r\n",
        "0".repeat(64)
    )
}

/// The status line's code, read within `within`; `None` when the connection closed or
/// nothing came.
fn status(stream: &mut TcpStream, within: Duration) -> Option<u16> {
    stream.set_read_timeout(Some(within)).unwrap();
    let mut answer = [0u8; 64];
    let n = stream.read(&mut answer).ok()?;
    std::str::from_utf8(&answer[..n])
        .ok()?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Seconds until the server closes `stream` (reads nothing but the end), at most `limit`.
fn closed_after(stream: &mut TcpStream, limit: Duration) -> Option<f64> {
    let start = Instant::now();
    stream
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut byte = [0u8; 1];
    while start.elapsed() < limit {
        match stream.read(&mut byte) {
            Ok(0) => return Some(start.elapsed().as_secs_f64()),
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return Some(start.elapsed().as_secs_f64()),
        }
    }
    None
}

fn rss_mb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        .expect("VmRSS")
        / 1024
}

fn signed_ping(serve: &Serve) -> (u16, Duration) {
    let body = br#"{"zen":"x"}"#;
    let started = Instant::now();
    let code = serve.post("ping", "d-ping", body, Some(&sign(SECRET.as_bytes(), body)));
    (code, started.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_slow_and_oversized_senders_are_bounded_and_a_signed_delivery_is_answered() {
    let server = fake().await;
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start(
        &server.api_url(),
        dir.path().join("itergate.db"),
        &["--max-connections", "32"],
    );
    let before = rss_mb(serve.child.id());

    // Three times the cap of connections that send half a request line and stall: the
    // longest idle make room for the newest, so the port never fills.
    let idle: Vec<TcpStream> = (0..96)
        .map(|_| open(&serve.addr, "POST /webhook HTTP/1.1\r\nHost: x\r\n"))
        .collect();
    // Two of the largest bodies, each held one byte short: all the room large bodies get.
    let size = 25 * 1024 * 1024 - 16;
    let held: Vec<_> = (0..2)
        .map(|_| {
            let addr = serve.addr.clone();
            std::thread::spawn(move || {
                let mut s = open(&addr, &unsigned_head(size));
                let chunk = vec![b'x'; 1 << 20];
                let mut left = size - 1;
                while left > 0 {
                    let n = left.min(chunk.len());
                    s.write_all(&chunk[..n]).expect("the body is read");
                    left -= n;
                }
                s
            })
        })
        .collect();
    let held: Vec<TcpStream> = held.into_iter().map(|t| t.join().unwrap()).collect();
    std::thread::sleep(Duration::from_millis(500));
    // The room is charged as bytes arrive: a third large body is refused as soon as its
    // bytes have none (a declared length alone holds nothing).
    let mut third = open(&serve.addr, &unsigned_head(size));
    let chunk = vec![b'x'; 1 << 16];
    for _ in 0..16 {
        if third.write_all(&chunk).is_err() {
            break;
        }
    }
    assert_eq!(
        status(&mut third, Duration::from_secs(5)),
        Some(503),
        "no room for a third"
    );

    let (code, took) = signed_ping(&serve);
    assert_eq!(code, 200, "{}", serve.log());
    assert!(took < Duration::from_secs(2), "answered in {took:?}");
    let during = rss_mb(serve.child.id());
    assert!(
        during < before + 160,
        "RSS {before} MB -> {during} MB with 2 large bodies buffered"
    );

    // Refused before a byte of the body is read.
    let mut unsigned = open(
        &serve.addr,
        "POST /webhook HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n",
    );
    assert_eq!(status(&mut unsigned, Duration::from_secs(5)), Some(401));
    let mut oversized = open(&serve.addr, &unsigned_head(26 * 1024 * 1024));
    assert_eq!(status(&mut oversized, Duration::from_secs(5)), Some(413));
    let mut chunked = open(
        &serve.addr,
        &unsigned_head(0).replace("Content-Length: 0", "Transfer-Encoding: chunked"),
    );
    assert_eq!(status(&mut chunked, Duration::from_secs(5)), Some(411));

    // A half-sent request is closed once the header timeout runs out.
    let mut stalled = open(&serve.addr, "POST /webhook HTTP/1.1\r\nHost: x\r\n");
    let after = closed_after(&mut stalled, Duration::from_secs(15)).expect("closed");
    assert!(
        (3.0..9.0).contains(&after),
        "closed {after:.1} s after its first bytes"
    );
    // A body that stalls is answered 408 once 2 s pass without a byte of it.
    let mut slow = open(&serve.addr, &(unsigned_head(1000) + "0123456789"));
    let started = Instant::now();
    assert_eq!(status(&mut slow, Duration::from_secs(20)), Some(408));
    let took = started.elapsed();
    assert!(
        took > Duration::from_millis(1500) && took < Duration::from_secs(8),
        "{took:?}"
    );

    let metric = |reason: &str| {
        serve
            .metric(&format!(
                "itergate_deliveries_total{{result=\"refused\",reason=\"{reason}\"}}"
            ))
            .unwrap_or(0.0)
    };
    assert_eq!(metric("busy"), 1.0);
    assert_eq!(metric("length"), 2.0);
    // The slow body, and the two large ones held short: they stalled before it.
    assert_eq!(metric("slow"), 3.0);
    drop((idle, held));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_finishes_within_its_deadline_whatever_the_clients_hold_open() {
    let server = fake().await;
    let dir = tempfile::tempdir().unwrap();
    let mut serve = Serve::start(&server.api_url(), dir.path().join("itergate.db"), &[]);
    let _half = open(&serve.addr, "POST /webhook HTTP/1.1\r\nHost: x\r\n");
    let _slow = open(&serve.addr, &(unsigned_head(1000) + "01234"));
    let _idle = open(&serve.addr, "");
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    unsafe { libc::kill(serve.child.id() as i32, libc::SIGTERM) };
    let status = serve.child.wait().unwrap();
    assert!(status.success(), "{status:?}\n{}", serve.log());
    assert!(
        started.elapsed() < Duration::from_secs(13),
        "exited {:?} after SIGTERM",
        started.elapsed()
    );
}

/// What the App is doing is nobody's business on the port the internet reaches: without
/// `--metrics-listen`, `/metrics` is not served; readiness is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_are_not_served_beside_the_webhook_by_default() {
    let server = fake().await;
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start_with(
        &server.api_url(),
        dir.path().join("itergate.db"),
        &[],
        false,
    );
    assert_eq!(serve.get("/metrics").0, 404);
    assert_eq!(serve.get("/readyz").0, 200);
    assert_eq!(serve.get("/healthz").0, 200);
    assert_eq!(serve.metrics_addr, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_and_readiness_can_live_on_their_own_address() {
    let server = fake().await;
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let private = format!("127.0.0.1:{port}");
    let serve = Serve::start(
        &server.api_url(),
        dir.path().join("itergate.db"),
        &["--metrics-listen", &private],
    );
    assert_eq!(serve.get("/metrics").0, 404);
    assert_eq!(serve.get("/readyz").0, 404);
    assert_eq!(serve.get("/healthz").0, 200);
    let get = |path: &str| super::app_server::try_request(&private, "GET", path, &[], b"");
    let (code, text) = get("/metrics").expect("an answer");
    assert_eq!(code, 200);
    assert!(text.contains("itergate_deliveries_total"), "{text}");
    assert_eq!(get("/readyz").map(|a| a.0), Some(200));
    assert_eq!(get("/webhook").map(|a| a.0), Some(404));
}
