//! The front door's connections. Anyone who reaches the port can open one, so each is held
//! to what a webhook needs:
//!
//! - a request's headers must arrive within [`limits::HEADER_TIMEOUT`], an idle keep-alive
//!   connection's next request included (hyper's header-read timer);
//! - at most `max_connections` are open: a connection over the cap closes the one that has
//!   waited longest without a request in flight (a sender that opens and stalls), or the
//!   one whose request has been in flight longest once that is [`limits::SLOW_REQUEST`]
//!   (bodies trickled from many addresses, each under its per-address cap), never a young
//!   request; when every connection has one, the new one is closed;
//! - at most `max_per_peer` of them come from one address, so one sender holding its
//!   connections busy (bodies trickled to the last allowed moment) cannot take the slots
//!   GitHub's deliveries need (behind a reverse proxy every connection is the proxy's:
//!   raise it, or let the proxy hold the line);
//! - on shutdown no connection is accepted, idle ones close at once and the rest are cut at
//!   the deadline, whatever the clients do.
//!
//! Bodies have their own limits in [`super::intake`].

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::Request;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::{watch, Notify};
use tokio::task::JoinSet;
use tower::ServiceExt;

use super::limits;

/// How the front door holds its connections.
#[derive(Debug, Clone)]
pub struct Limits {
    pub max_connections: usize,
    /// Connections open at once from one peer address.
    pub max_per_peer: usize,
    pub header_timeout: Duration,
    /// On shutdown, how long requests in flight may take before they are cut.
    pub shutdown_deadline: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_connections: limits::MAX_CONNECTIONS,
            max_per_peer: limits::MAX_CONNECTIONS_PER_PEER,
            header_timeout: limits::HEADER_TIMEOUT,
            shutdown_deadline: limits::BODY_TIMEOUT,
        }
    }
}

/// One open connection, as the cap sees it.
struct Connection {
    /// Requests in flight, and since when none was (or, with some, since when one was).
    state: Mutex<(usize, Instant)>,
    close: Notify,
}

impl Connection {
    fn idle_since(&self) -> Option<Instant> {
        let (busy, since) = *self.state.lock().expect("connection state");
        (busy == 0).then_some(since)
    }

    fn busy_since(&self) -> Option<Instant> {
        let (busy, since) = *self.state.lock().expect("connection state");
        (busy > 0).then_some(since)
    }

    fn begin(self: &Arc<Self>) -> InFlight {
        let mut state = self.state.lock().expect("connection state");
        if state.0 == 0 {
            state.1 = Instant::now();
        }
        state.0 += 1;
        InFlight(self.clone())
    }
}

/// A request being answered; the connection is idle again when the last one is dropped.
struct InFlight(Arc<Connection>);

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut state = self.0.state.lock().expect("connection state");
        state.0 -= 1;
        if state.0 == 0 {
            state.1 = Instant::now();
        }
    }
}

#[derive(Default)]
struct Open {
    next: AtomicU64,
    connections: Mutex<HashMap<u64, Arc<Connection>>>,
    /// Connections open per peer address.
    peers: Mutex<HashMap<std::net::IpAddr, usize>>,
}

impl Open {
    fn add(&self) -> (u64, Arc<Connection>) {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let connection = Arc::new(Connection {
            state: Mutex::new((0, Instant::now())),
            close: Notify::new(),
        });
        self.lock().insert(id, connection.clone());
        (id, connection)
    }

    /// Counts one more connection from `peer`, unless it has `cap` open already.
    fn admit(&self, peer: std::net::IpAddr, cap: usize) -> bool {
        let mut peers = self.peers.lock().expect("peers");
        let open = peers.entry(peer).or_insert(0);
        if *open >= cap {
            return false;
        }
        *open += 1;
        true
    }

    fn leave(&self, peer: std::net::IpAddr) {
        let mut peers = self.peers.lock().expect("peers");
        if let Some(open) = peers.get_mut(&peer) {
            *open -= 1;
            if *open == 0 {
                peers.remove(&peer);
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<Connection>>> {
        self.connections.lock().expect("open connections")
    }

    /// Makes room for one more under `cap`, closing the first there is of: the connection
    /// idle longest, once that is [`limits::SLOW_REQUEST`] (a sender that opens and
    /// stalls); the one whose request has been in flight longest, once that is as long (a
    /// delivery is sent and answered in milliseconds; bodies trickled from many addresses
    /// are not); the one idle longest, however young. False when every connection has a
    /// younger request in flight.
    fn make_room(&self, cap: usize) -> bool {
        let open = self.lock();
        if open.len() < cap {
            return true;
        }
        let oldest = |since: fn(&Connection) -> Option<Instant>| {
            open.values()
                .filter_map(|c| since(c).map(|since| (since, c)))
                .min_by_key(|(since, _)| *since)
        };
        let slow =
            |(since, _): &(Instant, &Arc<Connection>)| since.elapsed() >= limits::SLOW_REQUEST;
        let idle = oldest(Connection::idle_since);
        let chosen = idle
            .filter(slow)
            .or_else(|| oldest(Connection::busy_since).filter(slow))
            .or(idle);
        match chosen {
            Some((_, connection)) => {
                connection.close.notify_one();
                true
            }
            None => false,
        }
    }
}

/// Serves `router` on `listener` until `shutdown` completes, then closes every connection
/// within `limits.shutdown_deadline`.
pub async fn serve(
    listener: TcpListener,
    router: axum::Router,
    limits: Limits,
    shutdown: impl Future<Output = ()>,
) {
    let open = Arc::new(Open::default());
    let (stop, stopping) = watch::channel(false);
    let mut tasks = JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors and the like: the cap keeps well under them,
                    // but never spin on the error.
                    tracing::warn!("accepting a connection: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            Some(_) = tasks.join_next(), if !tasks.is_empty() => continue,
        };
        let peer = peer.ip();
        if !open.admit(peer, limits.max_per_peer) {
            tracing::warn!(
                "{} connections from {peer} already: a new one from it is closed",
                limits.max_per_peer
            );
            drop(stream);
            continue;
        }
        if !open.make_room(limits.max_connections) {
            open.leave(peer);
            tracing::warn!(
                "{} connections, each with a request in flight for less than a second: a new one is closed",
                limits.max_connections
            );
            drop(stream);
            continue;
        }
        let (id, connection) = open.add();
        let router = router.clone();
        let open = open.clone();
        let stopping = stopping.clone();
        let limits = limits.clone();
        tasks.spawn(async move {
            serve_connection(stream, router, &connection, &limits, stopping).await;
            open.lock().remove(&id);
            open.leave(peer);
        });
    }
    drop(listener);
    let _ = stop.send(true);
    if tokio::time::timeout(limits.shutdown_deadline, async {
        while tasks.join_next().await.is_some() {}
    })
    .await
    .is_err()
    {
        tracing::warn!(
            "{} connections still open after {} s are closed",
            tasks.len(),
            limits.shutdown_deadline.as_secs()
        );
        tasks.shutdown().await;
    }
}

async fn serve_connection(
    stream: tokio::net::TcpStream,
    router: axum::Router,
    connection: &Arc<Connection>,
    limits: &Limits,
    mut stopping: watch::Receiver<bool>,
) {
    let _ = stream.set_nodelay(true);
    let counted = connection.clone();
    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
        let router = router.clone();
        let in_flight = counted.begin();
        async move {
            let response = router.oneshot(request.map(Body::new)).await;
            drop(in_flight);
            Ok::<_, Infallible>(response.unwrap_or_else(|never| match never {}))
        }
    });
    let served = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .serve_connection(TokioIo::new(stream), service);
    tokio::pin!(served);
    tokio::select! {
        _ = served.as_mut() => {}
        // Closed to make room: it had no request in flight.
        () = connection.close.notified() => {}
        () = async { let _ = stopping.wait_for(|stop| *stop).await; } => {
            served.as_mut().graceful_shutdown();
            let _ = served.await;
        }
    }
}
