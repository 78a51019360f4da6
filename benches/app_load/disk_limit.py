"""This disk's own limit: SQLite in WAL with synchronous=FULL committing the benchmark's rows.

    python3 disk_limit.py DIRECTORY PAYLOAD SECONDS_PER_CASE BATCH [BATCH ...]

For each BATCH (rows per transaction) a fresh database in DIRECTORY gets the same table and
index as `itergate serve`'s inbox and the same payload per row (PAYLOAD as it came, or a file of as many bytes as itergate
stores), committed for
SECONDS_PER_CASE. Prints one JSON object: rows/s, commits/s and the p50/p99 time of one
transaction (inserts and commit) per batch size. One writer,
like itergate's group commit; SQLite's defaults otherwise (automatic checkpoints included).
"""

import json
import os
import sqlite3
import sys
import time
import uuid

SCHEMA = """
CREATE TABLE deliveries (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    delivery_id TEXT NOT NULL UNIQUE,
    event TEXT NOT NULL,
    action TEXT,
    installation_id INTEGER,
    repository TEXT,
    job_key TEXT NOT NULL,
    payload BLOB NOT NULL,
    payload_encoding TEXT,
    received_at INTEGER NOT NULL,
    run_at INTEGER NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    lease_owner TEXT,
    lease_until INTEGER,
    done_at INTEGER,
    outcome TEXT,
    last_error TEXT
);
CREATE INDEX deliveries_pending ON deliveries (job_key, seq) WHERE done_at IS NULL;
CREATE INDEX deliveries_unfinished ON deliveries (seq) WHERE done_at IS NULL;
"""

INSERT = """INSERT INTO deliveries (delivery_id, event, action, installation_id, repository,
    job_key, payload, received_at, run_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (delivery_id) DO NOTHING"""


def measure(path: str, payload: bytes, seconds: float, batch: int) -> dict:
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.executescript(SCHEMA)
    rows = commits = 0
    commit_ms = []
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        began = time.perf_counter()
        now = int(time.time() * 1000)
        db.execute("BEGIN")
        for _ in range(batch):
            db.execute(
                INSERT,
                (str(uuid.uuid4()), "issue_comment", "created", 1, "codertocat/hello-world",
                 "codertocat/hello-world#1", payload, now, now),
            )
        db.execute("COMMIT")
        commit_ms.append(1000 * (time.perf_counter() - began))
        rows += batch
        commits += 1
    elapsed = time.perf_counter() - start
    stored = db.execute("SELECT COUNT(*) FROM deliveries").fetchone()[0]
    db.close()
    assert stored == rows, (stored, rows)
    commit_ms.sort()
    return {
        "batch": batch,
        "rows": rows,
        "seconds": round(elapsed, 3),
        "rows_per_s": rows / elapsed,
        "commits_per_s": commits / elapsed,
        "transaction_p50_ms": commit_ms[len(commit_ms) // 2],
        "transaction_p99_ms": commit_ms[min(len(commit_ms) - 1, int(0.99 * len(commit_ms)))],
    }


def main() -> None:
    directory, payload_path, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
    batches = [int(b) for b in sys.argv[4:]] or [1, 64]
    with open(payload_path, "rb") as f:
        payload = f.read()
    path = os.path.join(directory, "disk_limit.db")
    results = [measure(path, payload, seconds, b) for b in batches]
    print(json.dumps({"sqlite": sqlite3.sqlite_version, "payload_bytes": len(payload),
                      "cases": results}))


if __name__ == "__main__":
    main()
