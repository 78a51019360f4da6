//! This disk's limit at the benchmark's concurrency: CLIENTS threads each hand one row to a
//! writer thread and wait until it is committed, as intake's requests do, with no HTTP,
//! signature or JSON in between. The writer commits whatever is waiting as one transaction
//! (WAL, `synchronous=FULL`), on the inbox's table and indexes, so the rate is the best an
//! inbox that commits before answering could reach on this disk with that many deliveries
//! in flight.
//!
//!     closed_loop INBOX DATABASE PAYLOAD CLIENTS SECONDS
//!
//! INBOX is a database `itergate serve` made: its schema is copied into the new DATABASE,
//! so the rows meet the very indexes the server maintains. PAYLOAD is the row's payload as
//! stored. Prints one JSON object.
//!
//! `WRITERS=N` (default 1) asks whether more files would raise that limit: N writers, each
//! with a file of its own (DATABASE, DATABASE.1, ...), take turns at the one queue, so a
//! group can commit while another is being synced.

use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

type Row = (String, mpsc::SyncSender<()>);

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [inbox, database, payload, clients, seconds] = args.as_slice() else {
        eprintln!("usage: [WRITERS=N] closed_loop INBOX DATABASE PAYLOAD CLIENTS SECONDS");
        std::process::exit(2);
    };
    let payload = Arc::new(std::fs::read(payload).expect("read the payload"));
    let clients: usize = clients.parse().expect("CLIENTS: a number");
    let seconds: f64 = seconds.parse().expect("SECONDS: a number");
    let writers: usize =
        std::env::var("WRITERS").map_or(1, |w| w.parse().expect("WRITERS: a number"));
    let schema = schema_of(inbox);

    let (hand, queue) = mpsc::channel::<Row>();
    let queue = Arc::new(Mutex::new(queue));
    let writer_threads: Vec<_> = (0..writers)
        .map(|k| {
            let path = if k == 0 {
                database.clone()
            } else {
                format!("{database}.{k}")
            };
            let db = open(&path, &schema);
            let (queue, payload) = (queue.clone(), payload.clone());
            std::thread::spawn(move || write(db, &queue, &payload))
        })
        .collect();

    let start = Instant::now();
    let end = start + Duration::from_secs_f64(seconds);
    let threads: Vec<_> = (0..clients)
        .map(|client| {
            let hand = hand.clone();
            std::thread::spawn(move || {
                let mut answered = 0_u64;
                while Instant::now() < end {
                    let (done, committed) = mpsc::sync_channel(1);
                    // Unique and spread like GitHub's GUIDs over the UNIQUE index.
                    let id = format!(
                        "{:016x}-{client}-{answered}",
                        (answered ^ (client as u64) << 40).wrapping_mul(0x9E37_79B9_7F4A_7C15)
                    );
                    hand.send((id, done)).expect("the writer");
                    committed.recv().expect("committed");
                    answered += 1;
                }
                answered
            })
        })
        .collect();
    drop(hand);
    let answered: u64 = threads.into_iter().map(|t| t.join().expect("client")).sum();
    let elapsed = start.elapsed().as_secs_f64();
    let (mut commits, mut rows) = (0, 0);
    for writer in writer_threads {
        let (c, r) = writer.join().expect("writer");
        commits += c;
        rows += r;
    }
    assert_eq!(answered, rows);
    println!(
        "{{\"clients\": {clients}, \"writers\": {writers}, \"payload_bytes\": {}, \"rows\": {rows}, \
         \"seconds\": {elapsed:.3}, \"rows_per_s\": {:.1}, \"rows_per_commit\": {:.2}, \
         \"commit_us\": {:.1}}}",
        payload.len(),
        rows as f64 / elapsed,
        rows as f64 / commits as f64,
        elapsed * 1e6 * writers as f64 / commits as f64
    );
}

/// A fresh database at `path` (WAL, `synchronous=FULL`) with `schema`.
fn open(path: &str, schema: &str) -> rusqlite::Connection {
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{path}{suffix}"));
    }
    let db = rusqlite::Connection::open(path).expect("open the database");
    db.pragma_update(None, "journal_mode", "WAL").expect("WAL");
    db.pragma_update(None, "synchronous", "FULL").expect("FULL");
    db.execute_batch(schema).expect("schema");
    db
}

/// One writer: whenever it is free, it commits everything waiting in `queue` as one
/// transaction, then answers each row. Returns its commits and rows.
fn write(
    mut db: rusqlite::Connection,
    queue: &Mutex<mpsc::Receiver<Row>>,
    payload: &[u8],
) -> (u64, u64) {
    let (mut commits, mut rows) = (0_u64, 0_u64);
    loop {
        let group: Vec<Row> = {
            let queue = queue.lock().expect("the queue");
            let Ok(first) = queue.recv() else { break };
            std::iter::once(first).chain(queue.try_iter()).collect()
        };
        let tx = db
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .expect("begin");
        {
            let mut insert = tx
                .prepare_cached(
                    "INSERT INTO deliveries (delivery_id, event, action, installation_id,
                        repository, job_key, payload, payload_encoding, received_at, run_at)
                     VALUES (?1, 'issue_comment', 'created', 1, 'codertocat/hello-world',
                        'codertocat/hello-world#1', ?2, 'lz4', 0, 0)
                     ON CONFLICT (delivery_id) DO NOTHING",
                )
                .expect("prepare");
            for (id, _) in &group {
                insert
                    .execute(rusqlite::params![id, payload])
                    .expect("insert");
            }
        }
        tx.commit().expect("commit");
        commits += 1;
        rows += group.len() as u64;
        for (_, done) in group {
            let _ = done.send(());
        }
    }
    let stored: u64 = db
        .query_row("SELECT COUNT(*) FROM deliveries", [], |r| r.get(0))
        .expect("count");
    assert_eq!(stored, rows, "every committed row is stored");
    (commits, rows)
}

/// The statements that make `inbox`'s tables and indexes (SQLite's own tables left out).
fn schema_of(inbox: &str) -> String {
    let inbox =
        rusqlite::Connection::open_with_flags(inbox, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .expect("open the inbox");
    let mut statements = inbox
        .prepare(
            "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%'
             ORDER BY type = 'index', rowid",
        )
        .expect("read the schema");
    let schema: Vec<String> = statements
        .query_map([], |row| row.get(0))
        .expect("read the schema")
        .collect::<Result<_, _>>()
        .expect("read the schema");
    assert!(
        schema.iter().any(|sql| sql.contains("TABLE deliveries")),
        "{inbox:?} has no deliveries table"
    );
    schema.join(";\n")
}
