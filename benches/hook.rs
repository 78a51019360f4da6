//! The hook's work on a push whose tree is already scored, without process start-up
//! (`cargo bench --bench hook`). `hook_cached_read`: open the repository and its notes
//! store, find the record by its tree, read the 20-commit history, decide, and render the
//! terminal summary. `hook_note_write`: write that record as the new commit's note. The
//! notes ref holds 100, 1,000 and 10,000 records, so the bench shows what a repository's
//! growing history costs each push. The whole `git push` is measured by
//! `benches/hook_overhead.py`.

use std::hint::black_box;
use std::path::Path;

use chrono::{Duration, TimeZone, Utc};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use git2::{Oid, Repository, Signature};
use itergate::config::Config;
use itergate::engine::{evaluate, DecideInput, Feedback};
use itergate::history::notes::{Note, NotesStore, DEFAULT_NOTES_REF};
use itergate::model::{CheckerIssue, CommitSha, IterationRecord, Scores, Severity, TreeId};
use itergate::render::Renderer;
use itergate::signals::observation::Observation;
use itergate::summary::decision_view;

const TASK_COMMITS: usize = 20;
const NOTES: [usize; 3] = [100, 1_000, 10_000];
const FINGERPRINT: &str = "bench-checks";

fn record(i: usize, commit: Oid, tree: Oid) -> IterationRecord {
    let start = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).single();
    let start = start.expect("a valid date");
    let mut r = IterationRecord::new(i as u32 + 1, start + Duration::minutes(i as i64));
    r.commit = CommitSha(commit.to_string());
    r.tree = TreeId(tree.to_string());
    let q = 0.5 + i as f64 / 50.0;
    r.scores = Scores {
        tests_passing: Some(q),
        code_quality: Some(0.8),
        coverage: Some(q * 0.9),
        complexity: Some(0.7),
    };
    r.issues = (0..5)
        .map(|k| CheckerIssue {
            dimension: "tests".into(),
            severity: Severity::Warning,
            finding: format!("test case_{k} failed: assertion `left == right` failed"),
            affected_field: Some(format!("src/lib.rs:{}", 10 * k + 1)),
            suggested_fix: None,
            kind: None,
            subject: None,
        })
        .collect();
    r
}

fn envelope(record: &IterationRecord) -> String {
    let record = serde_json::to_value(record).expect("a record serialises");
    serde_json::json!({ "version": 1, "fingerprint": FINGERPRINT, "record": record }).to_string()
}

/// A repository with a 20-commit task and a notes ref of `notes` records: the task's
/// commit and tree notes, and filler notes for other objects, in one flat notes tree.
fn repository(dir: &Path, notes: usize) -> (Vec<Oid>, Oid) {
    let repo = Repository::init(dir).expect("init");
    let sig = Signature::now("B", "b@example.com").expect("signature");
    let mut notes_tree = repo.treebuilder(None).expect("builder");
    let mut commits = Vec::new();
    let mut parent = None;
    let mut last_tree = Oid::ZERO_SHA1;
    for i in 0..TASK_COMMITS {
        let content = repo
            .blob(format!("version {i}\n").as_bytes())
            .expect("blob");
        let mut files = repo.treebuilder(None).expect("builder");
        files.insert("lib.rs", content, 0o100644).expect("insert");
        let tree = repo.find_tree(files.write().expect("tree")).expect("tree");
        let parents: Vec<git2::Commit<'_>> = parent
            .iter()
            .map(|p| repo.find_commit(*p).expect("parent"))
            .collect();
        let parents: Vec<&git2::Commit<'_>> = parents.iter().collect();
        let commit = repo
            .commit(None, &sig, &sig, &format!("iteration {i}"), &tree, &parents)
            .expect("commit");
        let note = repo
            .blob(envelope(&record(i, commit, tree.id())).as_bytes())
            .expect("blob");
        notes_tree
            .insert(commit.to_string(), note, 0o100644)
            .expect("insert");
        notes_tree
            .insert(tree.id().to_string(), note, 0o100644)
            .expect("insert");
        commits.push(commit);
        parent = Some(commit);
        last_tree = tree.id();
    }
    let filler = repo
        .blob(envelope(&record(0, Oid::ZERO_SHA1, Oid::ZERO_SHA1)).as_bytes())
        .expect("blob");
    for i in 0..notes.saturating_sub(2 * TASK_COMMITS) {
        let object = Oid::hash_object(git2::ObjectType::Blob, format!("other {i}").as_bytes());
        notes_tree
            .insert(object.expect("hash").to_string(), filler, 0o100644)
            .expect("insert");
    }
    let notes_tree = repo
        .find_tree(notes_tree.write().expect("tree"))
        .expect("tree");
    let notes_commit = repo
        .commit(None, &sig, &sig, "notes", &notes_tree, &[])
        .expect("commit");
    repo.reference(DEFAULT_NOTES_REF, notes_commit, true, "bench")
        .expect("ref");
    // One write through the store gives the notes tree the layout itergate keeps (fanned
    // out past 256 notes).
    let tip = *commits.last().expect("a task");
    let store = NotesStore::open(&repo, None).expect("store");
    let tip_record = record(TASK_COMMITS - 1, tip, last_tree);
    store
        .write(&[
            Note::Record {
                commit: tip,
                record: &tip_record,
                fingerprint: FINGERPRINT,
                base: None,
            },
            Note::Observation {
                tree: last_tree,
                observation: &Observation::default(),
                fingerprint: FINGERPRINT,
            },
        ])
        .expect("write");
    (commits, last_tree)
}

/// Everything but the note write: open, find by tree, history, decide, render.
fn cached_read(c: &mut Criterion) {
    let config = Config::default();
    let now = Utc
        .with_ymd_and_hms(2026, 2, 1, 0, 0, 0)
        .single()
        .expect("date");
    let mut group = c.benchmark_group("hook_cached_read");
    for notes in NOTES {
        let dir = tempfile::tempdir().expect("tempdir");
        let (commits, tree) = repository(dir.path(), notes);
        group.bench_with_input(BenchmarkId::from_parameter(notes), &notes, |b, _| {
            b.iter(|| {
                let repo = itergate::git::open(dir.path()).expect("open");
                let store = NotesStore::open(&repo, None).expect("store");
                let hit = store.find_observation(tree, FINGERPRINT).expect("lookup");
                assert!(hit.is_some(), "the tree is cached");
                let history = store.history(&commits).expect("history");
                let evaluation = evaluate(&DecideInput {
                    task_id: "bench",
                    config: &config,
                    history: &history,
                    feedback: &Feedback::default(),
                    baseline: None,
                    now,
                })
                .expect("decision");
                let view = decision_view(&history, &evaluation);
                let renderer = Renderer::new(None, false).expect("renderer");
                black_box(renderer.render("decision.txt.j2", &view).expect("summary"))
            })
        });
    }
    group.finish();
}

/// The note write of a cached push (a new blob, the notes trees it changes, a commit, the
/// ref update). Includes the file system's cost of creating objects, which dominates.
fn note_write(c: &mut Criterion) {
    let mut group = c.benchmark_group("hook_note_write");
    for notes in NOTES {
        let dir = tempfile::tempdir().expect("tempdir");
        let (commits, tree) = repository(dir.path(), notes);
        let tip = *commits.last().expect("a task");
        let repo = itergate::git::open(dir.path()).expect("open");
        let store = NotesStore::open(&repo, None).expect("store");
        let mut record = store
            .read(tip)
            .expect("lookup")
            .expect("the tip is recorded");
        let _ = tree;
        group.bench_with_input(BenchmarkId::from_parameter(notes), &notes, |b, _| {
            b.iter(|| {
                // Every push writes a note that differs from the last one.
                record.timestamp += Duration::seconds(1);
                store
                    .write(&[Note::Record {
                        commit: tip,
                        record: &record,
                        fingerprint: FINGERPRINT,
                        base: None,
                    }])
                    .expect("write");
            })
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(std::time::Duration::from_secs(3));
    targets = cached_read, note_write
}
criterion_main!(benches);
