//! A closed-loop HTTP/1.1 load generator for the App benchmark: CONNECTIONS keep-alive
//! connections each POST the webhook with a fresh random `X-GitHub-Delivery` (a UUID, as
//! GitHub sends), the same id as the body's last field and the body signed afresh (the App
//! stores a replayed body once), one request at a time, until REQUESTS have been answered.
//! Neither autocannon (one Node thread, a rebuilt request per fresh header) nor oha (no
//! per-request header) can drive a server past what they cost themselves on 2 cores; this
//! one writes a prebuilt head and body and reads only the status line and
//! `Content-Length`, on one thread.
//!
//!   itergate-loadgen URL PAYLOAD EVENT SECRET CONNECTIONS REQUESTS
//!
//! Prints one JSON object: requests, 2xx and other answers, errors, seconds, 2xx per
//! second, p50/p90/p99/max latency in ms, and this process's CPU seconds.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

struct Tally {
    left: Cell<u64>,
    ok: Cell<u64>,
    other: Cell<u64>,
    errors: Cell<u64>,
    latencies_us: RefCell<Vec<u32>>,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [url, payload, event, secret, connections, requests] = args.as_slice() else {
        eprintln!("usage: itergate-loadgen URL PAYLOAD EVENT SECRET CONNECTIONS REQUESTS");
        std::process::exit(2);
    };
    let rest = url.strip_prefix("http://").expect("an http:// URL");
    let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let path = if path.is_empty() { "/" } else { path };
    let payload = std::fs::read_to_string(payload).expect("the payload");
    let open = payload.trim_end();
    let body = open[..open.rfind('}').expect("a JSON object")].to_string();
    // `,"bench_delivery":"<36-character uuid>"}` is 57 bytes.
    let head = format!(
        "POST {path} HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\n\
         user-agent: GitHub-Hookshot/bench\r\nx-github-event: {event}\r\n\
         content-length: {}\r\n",
        body.len() + 57
    );
    let secret = secret.clone();
    let connections: usize = connections.parse().expect("CONNECTIONS");
    let requests: u64 = requests.parse().expect("REQUESTS");
    let tally = Rc::new(Tally {
        left: Cell::new(requests),
        ok: Cell::new(0),
        other: Cell::new(0),
        errors: Cell::new(0),
        latencies_us: RefCell::new(Vec::with_capacity(requests as usize)),
    });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let started = Instant::now();
    runtime.block_on(async {
        let local = tokio::task::LocalSet::new();
        for n in 0..connections {
            let (tally, host, head, body, secret) = (
                tally.clone(),
                host.to_string(),
                head.clone(),
                body.clone(),
                secret.clone(),
            );
            local.spawn_local(async move {
                let mut seed = seed(n);
                while let Some(stream) = connect(&host, &tally).await {
                    if run(stream, &head, &body, &secret, &tally, &mut seed).await {
                        break;
                    }
                }
            });
        }
        local.await;
    });
    let seconds = started.elapsed().as_secs_f64();
    let mut latencies = tally.latencies_us.take();
    latencies.sort_unstable();
    let at = |q: f64| {
        latencies
            .get(((latencies.len() as f64 * q) as usize).min(latencies.len().saturating_sub(1)))
            .map_or(0.0, |us| f64::from(*us) / 1000.0)
    };
    println!(
        "{{\"requests\": {}, \"ok_2xx\": {}, \"non_2xx\": {}, \"errors\": {}, \"seconds\": {seconds:.3}, \
         \"ok_per_s\": {:.1}, \"p50_ms\": {:.3}, \"p90_ms\": {:.3}, \"p99_ms\": {:.3}, \"max_ms\": {:.3}, \
         \"client_cpu_s\": {:.3}}}",
        requests,
        tally.ok.get(),
        tally.other.get(),
        tally.errors.get(),
        tally.ok.get() as f64 / seconds,
        at(0.5),
        at(0.9),
        at(0.99),
        latencies.last().map_or(0.0, |us| f64::from(*us) / 1000.0),
        cpu_seconds()
    );
}

async fn connect(host: &str, tally: &Tally) -> Option<TcpStream> {
    while tally.left.get() > 0 {
        match TcpStream::connect(host).await {
            Ok(stream) => {
                stream.set_nodelay(true).ok();
                return Some(stream);
            }
            Err(_) => {
                tally.errors.set(tally.errors.get() + 1);
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
    None
}

/// Sends requests on `stream` until none are left (true) or the connection fails (false).
async fn run(
    mut stream: TcpStream,
    head: &str,
    body: &str,
    secret: &str,
    tally: &Tally,
    seed: &mut u64,
) -> bool {
    use hmac::Mac;
    let mut request = Vec::with_capacity(head.len() + 200 + body.len());
    let mut answer = vec![0u8; 64 * 1024];
    loop {
        let left = tally.left.get();
        if left == 0 {
            return true;
        }
        tally.left.set(left - 1);
        let id = uuid(seed);
        let tail = format!(",\"bench_delivery\":\"{id}\"}}");
        let mut mac =
            hmac::Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).expect("any key");
        mac.update(body.as_bytes());
        mac.update(tail.as_bytes());
        let signature: String = mac
            .finalize()
            .into_bytes()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        request.clear();
        request.extend_from_slice(head.as_bytes());
        request.extend_from_slice(
            format!("x-hub-signature-256: sha256={signature}\r\nx-github-delivery: {id}\r\n\r\n")
                .as_bytes(),
        );
        request.extend_from_slice(body.as_bytes());
        request.extend_from_slice(tail.as_bytes());
        let sent = Instant::now();
        let status = match exchange(&mut stream, &request, &mut answer).await {
            Some(status) => status,
            None => {
                tally.errors.set(tally.errors.get() + 1);
                return false;
            }
        };
        let us = u32::try_from(sent.elapsed().as_micros()).unwrap_or(u32::MAX);
        if (200..300).contains(&status) {
            tally.ok.set(tally.ok.get() + 1);
            tally.latencies_us.borrow_mut().push(us);
        } else {
            tally.other.set(tally.other.get() + 1);
        }
    }
}

/// Writes one request and reads its answer; the status, or `None` if the exchange failed.
async fn exchange(stream: &mut TcpStream, request: &[u8], buf: &mut [u8]) -> Option<u16> {
    stream.write_all(request).await.ok()?;
    let mut filled = 0;
    loop {
        let n = stream.read(&mut buf[filled..]).await.ok()?;
        if n == 0 {
            return None;
        }
        filled += n;
        let Some(end) = buf[..filled].windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = std::str::from_utf8(&buf[..end]).ok()?;
        let status = head.get(9..12)?.parse().ok()?;
        let length: usize = head
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case("content-length")
                    .then(|| v.trim().parse().ok())?
            })
            .unwrap_or(0);
        while filled < end + 4 + length {
            let n = stream.read(&mut buf[filled..]).await.ok()?;
            if n == 0 {
                return None;
            }
            filled += n;
        }
        return Some(status);
    }
}

/// A different xorshift state for every connection of every run.
fn seed(connection: usize) -> u64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mixed = now
        ^ (u64::from(std::process::id()) << 32)
        ^ (connection as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    mixed | 1
}

/// A random version-4 UUID (xorshift64*: unique enough for delivery ids, and cheap).
fn uuid(state: &mut u64) -> String {
    let mut next = || {
        *state ^= *state >> 12;
        *state ^= *state << 25;
        *state ^= *state >> 27;
        state.wrapping_mul(0x2545_f491_4f6c_dd1d)
    };
    let (a, b) = (next(), next());
    format!(
        "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xfff,
        0x8000 | (b >> 48) & 0x3fff,
        b & 0xffff_ffff_ffff
    )
}

/// This process's CPU seconds (user + system) from /proc/self/stat.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / 100.0
}
