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

use std::sync::mpsc;
use std::time::{Duration, Instant};

type Row = (String, mpsc::SyncSender<()>);

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [inbox, database, payload, clients, seconds] = args.as_slice() else {
        eprintln!("usage: closed_loop INBOX DATABASE PAYLOAD CLIENTS SECONDS");
        std::process::exit(2);
    };
    let payload = std::fs::read(payload).expect("read the payload");
    let clients: usize = clients.parse().expect("CLIENTS: a number");
    let seconds: f64 = seconds.parse().expect("SECONDS: a number");
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{database}{suffix}"));
    }
    let mut db = rusqlite::Connection::open(database).expect("open the database");
    db.pragma_update(None, "journal_mode", "WAL").expect("WAL");
    db.pragma_update(None, "synchronous", "FULL").expect("FULL");
    db.execute_batch(&schema_of(inbox)).expect("schema");

    let payload_bytes = payload.len();
    let (hand, inbox) = mpsc::channel::<Row>();
    let writer = std::thread::spawn(move || {
        let (mut commits, mut rows) = (0_u64, 0_u64);
        while let Ok(first) = inbox.recv() {
            let mut group = vec![first];
            group.extend(inbox.try_iter());
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
    });

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
    let (commits, rows) = writer.join().expect("writer");
    assert_eq!(answered, rows);
    println!(
        "{{\"clients\": {clients}, \"payload_bytes\": {}, \"rows\": {rows}, \"seconds\": {elapsed:.3}, \
         \"rows_per_s\": {:.1}, \"rows_per_commit\": {:.2}, \"commit_us\": {:.1}}}",
        payload_bytes,
        rows as f64 / elapsed,
        rows as f64 / commits as f64,
        elapsed * 1e6 / commits as f64
    );
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
