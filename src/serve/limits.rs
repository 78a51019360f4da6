//! What the front door holds to before a delivery is authenticated: anyone who reaches the
//! port can send, so memory, connections and time are bounded here, not by the sender.
//!
//! | limit | value | beyond it |
//! | --- | --- | --- |
//! | a body | 25 MB, GitHub's own cap | 413, unread |
//! | a request's headers | 5 s from the connection's first byte or idle moment | closed |
//! | a body's bytes | 10 s from its headers (GitHub sends in well under its own 10 s), and no more than 2 s between two chunks | 408 |
//! | bodies buffered at once | 32 MiB of bodies up to 1 MiB, 50 MiB of larger ones, charged as bytes arrive (not as declared) | 503 (GitHub redelivers) |
//! | connections | `--max-connections`, 512 by default | the longest-idle one is closed, or the one whose request has been in flight longest (1 s at least) |
//! | connections from one address | `--max-connections-per-peer`, 128 by default | the new one is closed |

use std::time::Duration;

/// GitHub caps webhook payloads at 25 MB.
pub const MAX_BODY_BYTES: usize = 25 * 1024 * 1024;

/// Bodies up to this size come from the small pool; GitHub's deliveries nearly all do.
pub const SMALL_BODY_BYTES: usize = 1024 * 1024;

/// Bytes of small bodies buffered at once.
pub const SMALL_BODIES_BYTES: usize = 32 * 1024 * 1024;

/// Bytes of larger bodies buffered at once: two of the largest.
pub const LARGE_BODIES_BYTES: usize = 2 * MAX_BODY_BYTES;

/// How long a small body may wait for room in its pool (a large one does not wait).
pub const BUDGET_WAIT: Duration = Duration::from_secs(2);

pub const HEADER_TIMEOUT: Duration = Duration::from_secs(5);

pub const BODY_TIMEOUT: Duration = Duration::from_secs(10);

/// The longest pause between two chunks of a body: a sender trickling bytes to hold a
/// connection open is closed.
pub const CHUNK_TIMEOUT: Duration = Duration::from_secs(2);

/// A connection idle or with a request in flight this long gives its place, at the
/// connection cap, to a new one: GitHub's deliveries are sent and answered in milliseconds.
pub const SLOW_REQUEST: Duration = Duration::from_secs(1);

/// Well under the 1,024 open files a service gets by default.
pub const MAX_CONNECTIONS: usize = 512;

/// A quarter of the connections at most from one address.
pub const MAX_CONNECTIONS_PER_PEER: usize = MAX_CONNECTIONS / 4;
