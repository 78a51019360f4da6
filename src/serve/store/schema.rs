//! The database's schema, written once for both backends: step `i` brings a database to
//! version `i + 1`. Only ever append, and only steps that older versions can run beside
//! (new tables, columns that are nullable or have a default, indexes). Where the two dialects differ a step says so
//! with a word in braces, which [`steps`] writes out for each.

/// Where the two dialects differ.
const WORDS: &[(&str, &str, &str)] = &[
    // (word, SQLite, PostgreSQL)
    (
        "{id}",
        "INTEGER PRIMARY KEY AUTOINCREMENT",
        "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
    ),
    ("{int}", "INTEGER", "BIGINT"),
    ("{bytes}", "BLOB", "BYTEA"),
    ("{bool}", "INTEGER", "BOOLEAN"),
    ("{false}", "0", "FALSE"),
    // SQLite's ALTER TABLE has no IF NOT EXISTS: its steps run in a transaction with
    // their version, so a step never runs twice.
    ("{add column}", "ADD COLUMN", "ADD COLUMN IF NOT EXISTS"),
];

const STEPS: &[&str] = &[
    // Version 1.
    "CREATE TABLE IF NOT EXISTS deliveries (
        seq {id},
        delivery_id TEXT NOT NULL UNIQUE,
        event TEXT NOT NULL,
        action TEXT,
        installation_id {int},
        repository TEXT,
        job_key TEXT NOT NULL,
        payload {bytes} NOT NULL,
        received_at {int} NOT NULL,
        run_at {int} NOT NULL,
        attempts {int} NOT NULL DEFAULT 0,
        lease_owner TEXT,
        lease_until {int},
        done_at {int},
        outcome TEXT,
        last_error TEXT
    );
    CREATE INDEX IF NOT EXISTS deliveries_pending ON deliveries (job_key, seq)
        WHERE done_at IS NULL;
    CREATE TABLE IF NOT EXISTS installations (
        id {int} PRIMARY KEY,
        account TEXT,
        removed {bool} NOT NULL DEFAULT {false},
        updated_at {int} NOT NULL
    );",
    // Version 2: the next job is found among the unfinished ones, not after every done one.
    "CREATE INDEX IF NOT EXISTS deliveries_unfinished ON deliveries (seq)
        WHERE done_at IS NULL;",
    // Version 3: pull requests waiting for CI's verdict, for the reconcile.
    "CREATE TABLE IF NOT EXISTS waiting (
        job_key TEXT PRIMARY KEY,
        installation_id {int} NOT NULL,
        repository TEXT NOT NULL,
        pr {int} NOT NULL,
        head_sha TEXT NOT NULL,
        since {int} NOT NULL,
        checks {int} NOT NULL DEFAULT 0,
        next_check_at {int} NOT NULL
    );
    CREATE INDEX IF NOT EXISTS waiting_due ON waiting (next_check_at);",
    // Version 4: how the payload is stored (NULL: as it came; see `payload.rs`).
    "ALTER TABLE deliveries {add column} payload_encoding TEXT;",
    // Version 5: finished deliveries are found by age, to be deleted (`prune_finished`).
    "CREATE INDEX IF NOT EXISTS deliveries_finished ON deliveries (done_at)
        WHERE done_at IS NOT NULL;",
    // Version 6: the highest sticky-state revision written per pull request (its job key),
    // so that an older comment put back, or a deleted one, is not believed.
    "CREATE TABLE IF NOT EXISTS state_revisions (
        job_key TEXT PRIMARY KEY,
        revision {int} NOT NULL,
        updated_at {int} NOT NULL
    );",
    // Version 7: a webhook's event and body, hashed, so that a replay under a new delivery
    // id is stored once.
    "ALTER TABLE deliveries {add column} body_sha TEXT;
    CREATE UNIQUE INDEX IF NOT EXISTS deliveries_body ON deliveries (body_sha)
        WHERE body_sha IS NOT NULL;",
    // Version 8: one unique index, not two. `delivery_id` holds the delivery's key
    // ([`NewDelivery::key`](super::NewDelivery::key)), `guid` GitHub's delivery id where
    // the two differ; a second unique index cost SQLite's writer about 30% of its rows per
    // second.
    "ALTER TABLE deliveries {add column} guid TEXT;
    DROP INDEX IF EXISTS deliveries_body;",
    // Version 9: the replicas, by a random instance id, with a heartbeat (`replicas.rs`).
    "CREATE TABLE IF NOT EXISTS replicas (
        id TEXT PRIMARY KEY,
        machine TEXT NOT NULL,
        pid {int} NOT NULL,
        started_at {int} NOT NULL,
        heartbeat_at {int} NOT NULL
    );",
    // Version 10: a write to GitHub in flight, as the settle its job's lease waits after
    // it ends (NULL: none in flight; the job is taken over as soon as its lease ends).
    "ALTER TABLE deliveries {add column} write_settle_ms {int};",
    // Version 11: a job that yields to every other (a command from someone who is not a
    // member or collaborator, `NewDelivery::yields`), and the unfinished jobs in claim order.
    "ALTER TABLE deliveries {add column} yields {bool} NOT NULL DEFAULT {false};
    CREATE INDEX IF NOT EXISTS deliveries_claim_order ON deliveries (yields, seq)
        WHERE done_at IS NULL;",
    // Version 12: a key's jobs that yield, found without reading the key's others (intake
    // clears their flag when a job of the key that does not yield arrives).
    "CREATE INDEX IF NOT EXISTS deliveries_yielding ON deliveries (job_key)
        WHERE done_at IS NULL AND yields;",
];

/// The two dialects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Dialect {
    Sqlite,
    Postgres,
}

/// The schema's steps in `dialect`, in order.
pub(super) fn steps(dialect: Dialect) -> Vec<String> {
    STEPS
        .iter()
        .map(|step| {
            WORDS
                .iter()
                .fold(step.to_string(), |sql, (word, sqlite, postgres)| {
                    sql.replace(
                        word,
                        match dialect {
                            Dialect::Sqlite => sqlite,
                            Dialect::Postgres => postgres,
                        },
                    )
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_word_in_braces_is_written_out_in_both_dialects() {
        for dialect in [Dialect::Sqlite, Dialect::Postgres] {
            for step in steps(dialect) {
                assert!(!step.contains('{'), "{dialect:?}: {step}");
            }
        }
        assert_eq!(steps(Dialect::Sqlite).len(), STEPS.len());
    }
}
