//! The git helpers and the git-notes history store, against real repositories: ranges,
//! trailers, added lines, temporary worktrees, note round trips, the tree cache, concurrent
//! writers (threads and OS processes) and notes exchange through a bare remote.

use crate::gitrepo;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use chrono::{TimeZone, Utc};
use git2::{Oid, Repository, Signature};
use gitrepo::{git, TestRepo};
use itergate::git::{self as g, TempWorktree};
use itergate::history::notes::{self, Note, NotesStore, DEFAULT_NOTES_REF};
use itergate::model::{CommitSha, IterationRecord, Scores, TreeId};
use itergate::signals::observation::{CheckOutcome, CheckResult, Observation};
use itergate::signals::report::{Report, TestSummary};

fn oid(text: &str) -> Oid {
    Oid::from_str(text).expect("git printed an object id")
}

fn record(iteration: u32, commit: &str, tree: &str, tests_passing: f64) -> IterationRecord {
    let timestamp = Utc
        .with_ymd_and_hms(2026, 1, 1, 12, 0, iteration)
        .single()
        .expect("valid time");
    let mut r = IterationRecord::new(iteration, timestamp);
    r.commit = CommitSha(commit.to_owned());
    r.tree = TreeId(tree.to_owned());
    r.scores = Scores {
        tests_passing: Some(tests_passing),
        ..Scores::default()
    };
    r
}

// ---- git helpers ----------------------------------------------------------------------

#[test]
fn opens_from_a_subdirectory_and_a_linked_worktree() {
    let repo = TestRepo::new();
    repo.commit_file("src/a.txt", "a\n", "first");
    let from_sub = g::open(&repo.path.join("src")).expect("discovers upwards");
    assert_eq!(
        g::head_branch(&from_sub).expect("head"),
        Some("main".into())
    );

    let wt = repo.sibling("wt");
    repo.git(&[
        "worktree",
        "add",
        "--quiet",
        "-b",
        "topic",
        wt.to_str().expect("utf-8"),
    ]);
    let linked = g::open(&wt).expect("opens a linked worktree");
    assert_eq!(g::head_branch(&linked).expect("head"), Some("topic".into()));
    assert_eq!(
        linked.commondir().canonicalize().expect("canonical"),
        repo.path.join(".git").canonicalize().expect("canonical")
    );

    repo.git(&["checkout", "--quiet", "--detach"]);
    let detached = g::open(&repo.path).expect("open");
    assert_eq!(g::head_branch(&detached).expect("head"), None);
    assert!(
        g::open(repo.root.path()).is_err(),
        "no repository above the temp dir"
    );
}

/// Ancestry found along first parents, through a merge's second parent (the full walk), and
/// refused for a commit on another line, each as `git merge-base --is-ancestor` says.
#[test]
fn ancestry_is_found_along_first_parents_and_through_merges() {
    let repo = TestRepo::new();
    let c0 = oid(&repo.commit_file("a.txt", "0\n", "c0"));
    repo.git(&["checkout", "--quiet", "-b", "side"]);
    let side = oid(&repo.commit_file("side.txt", "s\n", "side"));
    repo.git(&["checkout", "--quiet", "main"]);
    let mut line = vec![c0];
    for i in 1..70 {
        line.push(oid(&repo.commit_file("a.txt", &format!("{i}\n"), "step")));
    }
    let tip = *line.last().expect("commits");
    let r = g::open(&repo.path).expect("open");
    // One first parent away, and further than the first-parent look goes (the full walk).
    assert!(g::is_ancestor(&r, line[68], tip).expect("walks"));
    assert!(g::is_ancestor(&r, c0, tip).expect("walks"));
    assert!(
        !g::is_ancestor(&r, side, tip).expect("walks"),
        "another line"
    );
    assert!(!g::is_ancestor(&r, tip, c0).expect("walks"), "a descendant");
    repo.git(&["merge", "--quiet", "--no-ff", "-m", "merge side", "side"]);
    let merged = oid(&repo.head());
    assert!(
        g::is_ancestor(&r, side, merged).expect("walks"),
        "a second parent"
    );
}

/// Trees and first parents are read from the raw commit (its headers): a message that
/// looks like a header is never one.
#[test]
fn a_commits_tree_and_first_parent_come_from_its_headers_only() {
    let repo = TestRepo::new();
    let c0 = oid(&repo.commit_file("a.txt", "0\n", "c0"));
    repo.git(&["checkout", "--quiet", "--orphan", "other"]);
    repo.git(&["rm", "--quiet", "-rf", "."]);
    let fake_parent = format!("root\n\nparent {c0}\ntree {c0}\n");
    let orphan = oid(&repo.commit_file("b.txt", "b\n", &fake_parent));
    repo.git(&["checkout", "--quiet", "main"]);
    let c1 = oid(&repo.commit_file("a.txt", "1\n", "c1"));
    repo.git(&[
        "merge",
        "--quiet",
        "--no-ff",
        "--allow-unrelated-histories",
        "-m",
        "merge",
        "other",
    ]);
    let merged = oid(&repo.head());
    let r = g::open(&repo.path).expect("open");
    for commit in [c0, orphan, c1, merged] {
        let tree = oid(&repo.git(&["rev-parse", &format!("{commit}^{{tree}}")]));
        assert_eq!(g::commit_tree(&r, commit).expect("a commit"), tree);
    }
    assert!(
        g::is_ancestor(&r, c1, merged).expect("walks"),
        "the first parent"
    );
    assert!(
        g::is_ancestor(&r, orphan, merged).expect("walks"),
        "the second parent"
    );
    assert!(
        !g::is_ancestor(&r, c0, orphan).expect("walks"),
        "a `parent` line in a message is no parent"
    );
    let blob = oid(&repo.git(&["rev-parse", "HEAD:a.txt"]));
    let error = g::commit_tree(&r, blob).expect_err("a blob");
    assert!(error.to_string().contains("not a commit"), "{error}");
}

#[test]
fn iterations_follow_first_parents_since_the_merge_base() {
    let repo = TestRepo::new();
    let c0 = repo.commit_file("base.txt", "0\n", "c0");
    repo.git(&["checkout", "--quiet", "-b", "feature"]);
    let f1 = repo.commit_file("f.txt", "1\n", "f1");
    repo.git(&["checkout", "--quiet", "main"]);
    let m1 = repo.commit_file("base.txt", "1\n", "m1");
    repo.git(&["checkout", "--quiet", "feature"]);
    repo.git(&["merge", "--quiet", "--no-edit", "main"]);
    let f2 = repo.head();
    let f3 = repo.commit_file("f.txt", "3\n", "f3");

    let r = g::open(&repo.path).expect("open");
    let tip = g::resolve_commit(&r, "feature").expect("resolves");
    assert_eq!(tip, oid(&f3));
    let main = g::resolve_commit(&r, "main").expect("resolves");
    let base = g::merge_base(&r, tip, main).expect("merge-base");
    assert_eq!(base, Some(oid(&m1)));
    let iterations = g::first_parent_commits(&r, tip, base).expect("walk");
    assert_eq!(iterations, vec![oid(&f1), oid(&f2), oid(&f3)]);
    let all = g::first_parent_commits(&r, tip, None).expect("walk");
    assert_eq!(all, vec![oid(&c0), oid(&f1), oid(&f2), oid(&f3)]);
    assert!(g::resolve_commit(&r, "no-such-branch").is_err());
}

#[test]
fn default_base_branch_prefers_config_then_remote_head_then_main_then_master() {
    let repo = TestRepo::new();
    let c = repo.commit_file("a.txt", "a\n", "first");
    let r = g::open(&repo.path).expect("open");
    assert_eq!(
        g::default_base_branch(&r, Some("develop"), "origin", None).expect("base"),
        "develop"
    );
    assert_eq!(
        g::default_base_branch(&r, None, "origin", None).expect("base"),
        "refs/heads/main"
    );

    repo.git(&["update-ref", "refs/remotes/origin/trunk", &c]);
    repo.git(&[
        "symbolic-ref",
        "refs/remotes/origin/HEAD",
        "refs/remotes/origin/trunk",
    ]);
    let base = g::default_base_branch(&r, None, "origin", None).expect("base");
    assert_eq!(base, "refs/remotes/origin/trunk");
    assert_eq!(g::resolve_commit(&r, &base).expect("resolves"), oid(&c));

    repo.git(&["symbolic-ref", "--delete", "refs/remotes/origin/HEAD"]);
    repo.git(&["branch", "-m", "main", "master"]);
    assert_eq!(
        g::default_base_branch(&r, None, "origin", None).expect("base"),
        "refs/heads/master"
    );
    repo.git(&["branch", "-m", "master", "work"]);
    let error = g::default_base_branch(&r, None, "origin", None).expect_err("nothing to use");
    assert!(error.to_string().contains("hook.base"), "{error}");
}

#[test]
fn the_base_is_the_local_branch_when_it_holds_the_remote_one_else_the_nearer_ancestor() {
    let repo = TestRepo::new();
    let pushed = repo.commit_file("a.txt", "a\n", "first");
    repo.git(&["update-ref", "refs/remotes/origin/main", &pushed]);
    repo.git(&[
        "symbolic-ref",
        "refs/remotes/origin/HEAD",
        "refs/remotes/origin/main",
    ]);
    // A configuration committed on local `main`, not pushed, then a branch.
    let config = repo.commit_file(".itergate.yml", "checks: {}\n", "adopt itergate");
    repo.git(&["checkout", "-q", "-b", "work"]);
    let work = repo.commit_file("b.txt", "b\n", "agent");
    let r = g::open(&repo.path).expect("open");
    assert_eq!(
        g::default_base_branch(&r, None, "origin", Some(oid(&work))).expect("base"),
        "refs/heads/main",
        "local main holds origin/main and the unpushed configuration"
    );
    assert_eq!(
        g::task_start(&r, None, oid(&work)),
        (Some("refs/heads/main".to_string()), Some(oid(&config)))
    );
    assert_eq!(
        g::first_parent_commits(&r, oid(&work), Some(oid(&config))).expect("walk"),
        vec![oid(&work)],
        "the configuration commit is the base's, not iteration 1"
    );

    // origin/main moved on and local main did not: a branch made from origin/main starts
    // there, one made from the stale local main starts at local main.
    repo.git(&["checkout", "-q", "--detach", &pushed]);
    let upstream = repo.commit_file("c.txt", "c\n", "upstream");
    repo.git(&["update-ref", "refs/remotes/origin/main", &upstream]);
    repo.git(&["checkout", "-q", "-b", "from-remote"]);
    let fresh = repo.commit_file("d.txt", "d\n", "agent");
    assert_eq!(
        g::task_start(&r, None, oid(&fresh)),
        (
            Some("refs/remotes/origin/main".to_string()),
            Some(oid(&upstream))
        )
    );
    assert_eq!(
        g::task_start(&r, None, oid(&work)),
        (Some("refs/heads/main".to_string()), Some(oid(&config)))
    );
    // On the base branch itself there is no start: the last change is judged.
    assert_eq!(
        g::task_start(&r, None, oid(&config)),
        (Some("refs/heads/main".to_string()), None)
    );
}

#[test]
fn trailers_come_from_the_last_paragraph() {
    let repo = TestRepo::new();
    let message = "Add parser\n\nBody text: not a trailer here.\n\nConfidence: 0.7\nTokens-Used: 1200\nCost-USD: 0.03\n";
    repo.write("a.txt", "a\n");
    repo.git(&["add", "a.txt"]);
    repo.git(&["commit", "--quiet", "-m", message]);
    let r = g::open(&repo.path).expect("open");
    let trailers = g::commit_trailers(&r, oid(&repo.head())).expect("trailers");
    let expected = [
        ("Confidence", "0.7"),
        ("Tokens-Used", "1200"),
        ("Cost-USD", "0.03"),
    ];
    let expected: Vec<(String, String)> = expected
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    assert_eq!(trailers, expected);
    assert!(g::message_trailers("Just a subject\n")
        .expect("parses")
        .is_empty());
}

#[test]
fn added_lines_are_numbered_in_the_new_file() {
    let repo = TestRepo::new();
    let old = repo.commit_file("src/lib.rs", "fn a() {}\nfn b() {}\nfn c() {}\n", "first");
    repo.write(
        "src/lib.rs",
        "fn a() {}\nfn b2() { todo!() }\nfn c() {}\n// TODO: d\n",
    );
    repo.git(&["mv", "src/lib.rs", "src/core.rs"]);
    repo.write("src/other.rs", "x\n");
    repo.git(&["add", "--all"]);
    repo.git(&["commit", "--quiet", "-m", "second"]);
    let new = repo.head();

    let r = g::open(&repo.path).expect("open");
    let changed = g::added_lines(&r, Some(oid(&old)), oid(&new)).expect("diff");
    assert_eq!(
        changed.line_numbers("src/core.rs"),
        vec![2, 4],
        "rename followed"
    );
    assert_eq!(changed.line_numbers("src/other.rs"), vec![1]);
    assert!(changed.line_numbers("src/lib.rs").is_empty());
    let texts: Vec<_> = changed
        .iter()
        .map(|(p, l)| format!("{p}:{}:{}", l.line, l.text))
        .collect();
    assert_eq!(
        texts,
        [
            "src/core.rs:2:fn b2() { todo!() }",
            "src/core.rs:4:// TODO: d",
            "src/other.rs:1:x"
        ]
    );
    // Removed lines are kept under the renamed file's new path.
    let removed: Vec<_> = changed.removed["src/core.rs"]
        .iter()
        .map(|l| format!("{}:{}", l.line, l.text))
        .collect();
    assert_eq!(removed, ["2:fn b() {}"]);
    assert!(!changed.removed.contains_key("src/lib.rs"));
    let from_root = g::added_lines(&r, None, oid(&old)).expect("diff");
    assert_eq!(from_root.line_numbers("src/lib.rs"), vec![1, 2, 3]);
}

#[test]
fn temp_worktree_checks_out_a_commit_and_leaves_the_user_alone() {
    let repo = TestRepo::new();
    let first = repo.commit_file("a.txt", "one\n", "first");
    repo.commit_file("a.txt", "two\n", "second");
    repo.write("a.txt", "uncommitted\n");
    repo.write("staged.txt", "staged\n");
    repo.git(&["add", "staged.txt"]);
    let marker = repo.sibling("post-checkout-ran");
    let hook = repo.path.join(".git/hooks/post-checkout");
    gitrepo::write_script(&hook, &format!("#!/bin/sh\ntouch '{}'\n", marker.display()));
    let status_before = repo.git(&["status", "--porcelain"]);
    let head_before = repo.head();

    let r = g::open(&repo.path).expect("open");
    let wt = TempWorktree::create(&r, oid(&first)).expect("worktree");
    let path = wt.path().to_path_buf();
    let content = std::fs::read_to_string(path.join("a.txt")).expect("checked out");
    assert_eq!(content, "one\n");
    assert_eq!(git(&path, &["rev-parse", "HEAD"]), first);
    assert!(
        !marker.exists(),
        "the user's post-checkout hook must not run"
    );
    drop(wt);

    assert!(!path.exists(), "removed on drop");
    assert_eq!(
        repo.git(&["worktree", "list", "--porcelain"])
            .matches("worktree ")
            .count(),
        1
    );
    assert_eq!(repo.git(&["status", "--porcelain"]), status_before);
    assert_eq!(repo.head(), head_before);
    assert_eq!(
        repo.git(&["branch", "--list"]),
        "* main",
        "no branch created"
    );
}

// ---- notes store ----------------------------------------------------------------------

#[test]
fn notes_round_trip_without_touching_work_tree_or_index() {
    let repo = TestRepo::new();
    let c1 = repo.commit_file("a.txt", "1\n", "one");
    let c2 = repo.commit_file("a.txt", "2\n", "two");
    repo.write("dirty.txt", "dirty\n");
    repo.git(&["add", "dirty.txt"]);
    let status_before = repo.git(&["status", "--porcelain"]);

    let store_repo = Repository::open(&repo.path).expect("open");
    let store = NotesStore::open(&store_repo, None).expect("store");
    assert_eq!(store.notes_ref(), DEFAULT_NOTES_REF);
    assert_eq!(store.read(oid(&c1)).expect("read"), None);
    let r1 = record(1, &c1, "t1", 0.5);
    write_record(&store, oid(&c1), &r1, "fp");
    let r2 = record(2, &c2, "t2", 0.9);
    write_record(&store, oid(&c2), &r2, "fp");
    assert_eq!(store.read(oid(&c1)).expect("read"), Some(r1.clone()));

    let replaced = record(1, &c1, "t1", 0.75);
    write_record(&store, oid(&c1), &replaced, "fp");
    assert_eq!(store.read(oid(&c1)).expect("read"), Some(replaced.clone()));
    let history = store.history(&[oid(&c1), oid(&c2)]).expect("history");
    assert_eq!(history, vec![replaced, r2]);

    assert_eq!(repo.git(&["status", "--porcelain"]), status_before);
    let shown = repo.git(&["notes", "--ref", "itergate", "show", &c2]);
    assert!(
        shown.starts_with("{\"version\":2,\"fingerprint\":\"fp\",\"record\":{"),
        "{shown}"
    );
}

#[test]
fn fanned_out_notes_trees_stay_fanned_out() {
    let repo = TestRepo::new();
    let c1 = repo.commit_file("a.txt", "1\n", "one");
    let c2 = repo.commit_file("a.txt", "2\n", "two");
    // A notes tree as git writes it once it is large: c1's note under `xx/`, its first two
    // hex digits.
    let r = Repository::open(&repo.path).expect("open");
    let old = r.blob(b"an older note\n").expect("blob");
    let mut directory = r.treebuilder(None).expect("builder");
    directory.insert(&c1[2..], old, 0o100644).expect("insert");
    let directory = directory.write().expect("write");
    let mut root = r.treebuilder(None).expect("builder");
    root.insert(&c1[..2], directory, 0o040000).expect("insert");
    let root = r.find_tree(root.write().expect("write")).expect("tree");
    let sig = Signature::now("T", "t@example.com").expect("signature");
    let notes_commit = r
        .commit(None, &sig, &sig, "fanned out", &root, &[])
        .expect("commit");
    r.reference(DEFAULT_NOTES_REF, notes_commit, false, "test")
        .expect("ref");

    let store_repo = Repository::open(&repo.path).expect("open");
    let store = NotesStore::open(&store_repo, None).expect("store");
    let r1 = record(1, &c1, "", 0.5);
    let r2 = record(2, &c2, "", 0.7);
    write_record(&store, oid(&c1), &r1, "fp");
    write_record(&store, oid(&c2), &r2, "fp");

    assert_eq!(store.read(oid(&c1)).expect("read"), Some(r1.clone()));
    let fresh_repo = Repository::open(&repo.path).expect("open");
    let fresh = NotesStore::open(&fresh_repo, None).expect("store");
    assert_eq!(fresh.read(oid(&c2)).expect("read"), Some(r2));
    assert_eq!(
        fresh
            .read(oid(&c1))
            .expect("read from the fanout directory"),
        Some(r1)
    );
    let shown = repo.git(&["notes", "--ref", "itergate", "show", &c1]);
    assert!(
        shown.contains("\"fingerprint\":\"fp\""),
        "git reads the replaced note: {shown}"
    );
    let paths = repo.git(&["ls-tree", "-r", "--name-only", DEFAULT_NOTES_REF]);
    let c1_paths: Vec<&str> = paths.lines().filter(|p| p.replace('/', "") == c1).collect();
    assert_eq!(
        c1_paths,
        vec![format!("{}/{}", &c1[..2], &c1[2..]).as_str()],
        "one note for c1, inside the fanout directory: {paths}"
    );
    let parents = repo.git(&["rev-list", "--count", DEFAULT_NOTES_REF]);
    assert_eq!(parents, "3", "each write is a commit on the notes history");
}

#[test]
fn a_large_notes_tree_is_fanned_out() {
    let repo = TestRepo::new();
    let commits = make_commits(&repo.path, 300);
    let r = Repository::open(&repo.path).expect("open");
    let store = NotesStore::open(&r, None).expect("store");
    for (i, commit) in commits.iter().enumerate() {
        store
            .write(&[Note::Record {
                commit: oid(commit),
                record: &record(1, commit, "", i as f64 / 1000.0),
                fingerprint: "fp",
                base: None,
            }])
            .expect("write");
    }
    // Past 256 notes the root holds only `ab/` directories, so a write rewrites two small
    // trees instead of one tree of every note.
    let root = repo.git(&["ls-tree", DEFAULT_NOTES_REF]);
    assert!(
        root.lines()
            .all(|l| l.contains(" tree ") && l.split('\t').nth(1).is_some_and(|n| n.len() == 2)),
        "{root}"
    );
    let listed = repo.git(&["notes", "--ref", "itergate", "list"]);
    assert_eq!(
        listed.lines().count(),
        300,
        "300 commit notes (no observation was written)"
    );
    let fresh_repo = Repository::open(&repo.path).expect("open");
    let fresh = NotesStore::open(&fresh_repo, None).expect("store");
    for (i, commit) in commits.iter().enumerate().step_by(37) {
        let read = fresh.read(oid(commit)).expect("read").expect("present");
        assert_eq!(read.scores.tests_passing, Some(i as f64 / 1000.0));
        let shown = repo.git(&["notes", "--ref", "itergate", "show", commit]);
        assert!(shown.contains(commit), "git reads it too");
    }
}

#[test]
fn bare_records_are_read_and_newer_envelopes_refused() {
    let repo = TestRepo::new();
    let c1 = repo.commit_file("a.txt", "1\n", "one");
    let c2 = repo.commit_file("a.txt", "2\n", "two");
    let bare = serde_json::to_string(&record(1, &c1, "", 0.5)).expect("json");
    repo.git(&["notes", "--ref", "itergate", "add", "-m", &bare, &c1]);
    let future = r#"{"version":3,"fingerprint":"x","record":{"iteration":1,"timestamp":"2026-01-01T00:00:00Z"}}"#;
    repo.git(&["notes", "--ref", "itergate", "add", "-m", future, &c2]);

    let store_repo = Repository::open(&repo.path).expect("open");
    let store = NotesStore::open(&store_repo, Some("itergate")).expect("store");
    let stored = store.read_stored(oid(&c1)).expect("read").expect("present");
    assert_eq!(stored.fingerprint, None);
    assert_eq!(stored.record.scores.tests_passing, Some(0.5));
    let error = store.read(oid(&c2)).expect_err("newer version");
    assert!(format!("{error:#}").contains("newer itergate"), "{error:#}");
    assert!(notes::parse_note(b"not json").is_err());
    let reshaped = br#"{"version":4,"fingerprint":"x","record":{"iteration":"first"}}"#;
    let error = notes::parse_note(reshaped).expect_err("a newer shape");
    assert!(
        format!("{error:#}").contains("envelope version 4"),
        "{error:#}"
    );
    let broken = br#"{"version":1,"fingerprint":"x","record":{"iteration":"first"}}"#;
    let error = notes::parse_note(broken).expect_err("a broken record");
    assert!(
        format!("{error:#}").contains("not a record envelope"),
        "{error:#}"
    );
}

fn write_record(store: &NotesStore, commit: Oid, record: &IterationRecord, fingerprint: &str) {
    store
        .write(&[Note::Record {
            commit,
            record,
            fingerprint,
            base: None,
        }])
        .expect("write");
}

fn observed(passed: u64) -> Observation {
    Observation {
        checks: vec![CheckOutcome {
            name: "tests".into(),
            visibility: Default::default(),
            void_on_violation: false,
            result: CheckResult::Report {
                report: Report::Tests(TestSummary {
                    passed,
                    ..Default::default()
                }),
                exit_code: Some(0),
            },
        }],
        execution_time_ms: Some(5),
        flaky: Vec::new(),
    }
}

#[test]
fn a_tree_observation_needs_the_same_tree_and_fingerprint() {
    let repo = TestRepo::new();
    let c1 = repo.commit_file("a.txt", "same\n", "one");
    repo.commit_file("a.txt", "other\n", "two");
    repo.commit_file("a.txt", "same\n", "three: back to the first tree");
    let tree = repo.git(&["rev-parse", &format!("{c1}^{{tree}}")]);
    let store_repo = Repository::open(&repo.path).expect("open");
    let store = NotesStore::open(&store_repo, None).expect("store");
    let record_one = record(1, &c1, &tree, 0.8);
    store
        .write(&[
            Note::Record {
                commit: oid(&c1),
                record: &record_one,
                fingerprint: "judged-v1",
                base: None,
            },
            Note::Observation {
                tree: oid(&tree),
                observation: &observed(3),
                fingerprint: "checks-v1",
            },
        ])
        .expect("write");
    assert_eq!(
        store
            .find_observation(oid(&tree), "checks-v1")
            .expect("lookup"),
        Some(observed(3))
    );
    assert_eq!(
        store
            .find_observation(oid(&tree), "checks-v2")
            .expect("lookup"),
        None
    );
    let other_tree = repo.git(&["rev-parse", "HEAD~1^{tree}"]);
    assert_eq!(
        store
            .find_observation(oid(&other_tree), "checks-v1")
            .expect("lookup"),
        None
    );
    // The commit's note is its record, with the base it was judged against.
    let stored = store.read_stored(oid(&c1)).expect("read").expect("a note");
    assert_eq!(stored.record, record_one);
    assert_eq!(stored.fingerprint.as_deref(), Some("judged-v1"));
    assert_eq!(stored.base, None);

    // The cache is the tree's own note, so a fresh store (another process) finds it too;
    // and it holds what the checks saw, nothing relative to a base.
    let shown = repo.git(&["notes", "--ref", "itergate", "show", &tree]);
    assert!(shown.contains("\"observation\""), "{shown}");
    assert!(!shown.contains("\"record\""), "{shown}");
    let fresh_repo = Repository::open(&repo.path).expect("open");
    let fresh = NotesStore::open(&fresh_repo, None).expect("store");
    assert_eq!(
        fresh
            .find_observation(oid(&tree), "checks-v1")
            .expect("lookup"),
        Some(observed(3))
    );
    // Observing the tree with other checks replaces the entry: the newest wins.
    fresh
        .write(&[Note::Observation {
            tree: oid(&tree),
            observation: &observed(4),
            fingerprint: "checks-v2",
        }])
        .expect("write");
    assert_eq!(
        fresh
            .find_observation(oid(&tree), "checks-v2")
            .expect("lookup"),
        Some(observed(4))
    );
    assert_eq!(
        fresh
            .find_observation(oid(&tree), "checks-v1")
            .expect("lookup"),
        None
    );

    // A tree note that is not an observation (free text, or an older version's record) is
    // a cache miss, not an error.
    let c5 = repo.commit_file("b.txt", "new\n", "five");
    let tree5 = repo.git(&["rev-parse", &format!("{c5}^{{tree}}")]);
    repo.git(&[
        "notes",
        "--ref",
        "itergate",
        "add",
        "-m",
        "free text",
        &tree5,
    ]);
    let old = format!(
        "{{\"version\":1,\"fingerprint\":\"checks-v2\",\"record\":{}}}",
        serde_json::to_string(&record(1, &c5, &tree5, 0.5)).expect("json")
    );
    let c6 = repo.commit_file("c.txt", "new\n", "six");
    let tree6 = repo.git(&["rev-parse", &format!("{c6}^{{tree}}")]);
    repo.git(&["notes", "--ref", "itergate", "add", "-m", &old, &tree6]);
    let reread_repo = Repository::open(&repo.path).expect("open");
    let reread = NotesStore::open(&reread_repo, None).expect("store");
    assert_eq!(
        reread
            .find_observation(oid(&tree5), "checks-v2")
            .expect("lookup"),
        None
    );
    assert_eq!(
        reread
            .find_observation(oid(&tree6), "checks-v2")
            .expect("lookup"),
        None
    );

    let empty = TestRepo::new();
    empty.commit_file("x", "x\n", "x");
    let none_repo = Repository::open(&empty.path).expect("open");
    let none = NotesStore::open(&none_repo, None).expect("store");
    assert_eq!(
        none.find_observation(oid(&tree), "f").expect("no ref yet"),
        None
    );
}

// ---- concurrency ----------------------------------------------------------------------

const CHILD_ENV: &str = "ITERGATE_TEST_NOTES_WRITER";

/// Not a test of its own: the body of the child processes that
/// `concurrent_writers_lose_no_note` starts (this test binary, run with `CHILD_ENV` set to
/// `<repo path>\n<commit>\n<commit>...`). Without the variable it does nothing.
#[test]
fn notes_writer_child_process() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let mut lines = spec.lines();
    let repo = lines.next().expect("repo path in the spec");
    let commits: Vec<String> = lines.map(str::to_owned).collect();
    write_all(Path::new(repo), &commits);
}

fn write_all(repo: &Path, commits: &[String]) {
    let store_repo = Repository::open(repo).expect("open");
    let store = NotesStore::open(&store_repo, None).expect("store");
    for (i, commit) in commits.iter().enumerate() {
        let r = record(1, commit, "", i as f64 / 100.0);
        store
            .write(&[Note::Record {
                commit: oid(commit),
                record: &r,
                fingerprint: commit,
                base: None,
            }])
            .expect("write under contention");
    }
}

/// Commits made directly through git2 (fast), each with an empty tree.
fn make_commits(repo: &Path, count: usize) -> Vec<String> {
    let r = Repository::open(repo).expect("open");
    let sig = Signature::now("T", "t@example.com").expect("signature");
    let tree = r
        .find_tree(r.treebuilder(None).and_then(|b| b.write()).expect("tree"))
        .expect("tree");
    let mut parent: Option<git2::Commit<'_>> = None;
    let mut ids = Vec::new();
    for i in 0..count {
        let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
        let id = r
            .commit(None, &sig, &sig, &format!("c{i}"), &tree, &parents)
            .expect("commit");
        ids.push(id.to_string());
        parent = Some(r.find_commit(id).expect("find"));
    }
    ids
}

#[test]
fn concurrent_writers_lose_no_note() {
    const PROCESSES: usize = 3;
    const THREADS: usize = 8;
    const PER_WRITER: usize = 3;
    let repo = TestRepo::new();
    let commits = make_commits(&repo.path, (PROCESSES + THREADS) * PER_WRITER);
    let mut chunks = commits.chunks(PER_WRITER);
    let exe = std::env::current_exe().expect("test binary path");

    let mut children = Vec::new();
    for chunk in chunks.by_ref().take(PROCESSES) {
        let spec = format!("{}\n{}", repo.path.display(), chunk.join("\n"));
        let child = Command::new(&exe)
            .args([
                "--exact",
                "git_notes::notes_writer_child_process",
                "--test-threads=1",
                "--quiet",
            ])
            .env(CHILD_ENV, spec)
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("spawn a writer process");
        children.push(child);
    }
    std::thread::scope(|scope| {
        for chunk in chunks {
            let path = repo.path.clone();
            scope.spawn(move || write_all(&path, chunk));
        }
    });
    for mut child in children {
        assert!(
            child.wait().expect("wait").success(),
            "a writer process failed"
        );
    }

    assert_all_notes_present(&repo, &commits);
    let store_repo = Repository::open(&repo.path).expect("open");
    let store = NotesStore::open(&store_repo, None).expect("store");
    for commit in &commits {
        let stored = store
            .read_stored(oid(commit))
            .expect("read")
            .expect("note present");
        assert_eq!(stored.record.commit.0, *commit);
        assert_eq!(stored.fingerprint.as_deref(), Some(commit.as_str()));
    }
}

/// When the lock cannot be taken (here its path is a directory), writers fall back to the
/// bare compare-and-swap, which alone must keep every note. (Plain `git_note_create`, and
/// `git notes add` too, move the ref unconditionally and lose notes in this race.)
#[test]
fn writers_without_the_lock_lose_no_note() {
    const THREADS: usize = 6;
    const PER_WRITER: usize = 3;
    let repo = TestRepo::new();
    std::fs::create_dir_all(repo.path.join(".git/itergate/notes.lock")).expect("block the lock");
    let commits = make_commits(&repo.path, THREADS * PER_WRITER);
    std::thread::scope(|scope| {
        for chunk in commits.chunks(PER_WRITER) {
            let path = repo.path.clone();
            scope.spawn(move || write_all(&path, chunk));
        }
    });
    assert_all_notes_present(&repo, &commits);
}

fn assert_all_notes_present(repo: &TestRepo, commits: &[String]) {
    let listed: BTreeSet<String> = repo
        .git(&["notes", "--ref", "itergate", "list"])
        .lines()
        .filter_map(|l| l.split_whitespace().nth(1).map(str::to_owned))
        .collect();
    let expected: BTreeSet<String> = commits.iter().cloned().collect();
    let missing: Vec<_> = expected.difference(&listed).collect();
    assert!(
        missing.is_empty(),
        "{} of {} notes lost: {missing:?}",
        missing.len(),
        expected.len()
    );
    let stray = repo.git(&["for-each-ref", "refs/itergate/"]);
    assert_eq!(stray, "", "writing notes creates no other ref");
}

// ---- exchange through a remote --------------------------------------------------------

#[test]
fn notes_sync_through_a_remote_unions_both_sides() {
    let alice = TestRepo::new();
    let c1 = alice.commit_file("a.txt", "1\n", "one");
    let c2 = alice.commit_file("a.txt", "2\n", "two");
    let remote = alice.add_bare_remote();
    alice.git(&["push", "--quiet", "origin", "main"]);
    let bob_path = alice.sibling("bob");
    let url = remote.to_str().expect("utf-8");
    git(
        alice.root.path(),
        &["clone", "--quiet", url, bob_path.to_str().expect("utf-8")],
    );

    let a_repo = Repository::open(&alice.path).expect("open");
    let a = NotesStore::open(&a_repo, None).expect("store");
    write_record(&a, oid(&c1), &record(1, &c1, "", 0.1), "fp");
    notes::push_notes(&alice.path, "origin", DEFAULT_NOTES_REF).expect("first push");

    let b_repo = Repository::open(&bob_path).expect("open");
    let b = NotesStore::open(&b_repo, None).expect("store");
    write_record(&b, oid(&c2), &record(2, &c2, "", 0.2), "fp");
    write_record(&b, oid(&c1), &record(1, &c1, "", 0.9), "fp");
    assert!(
        notes::push_notes(&bob_path, "origin", DEFAULT_NOTES_REF).is_err(),
        "non-fast-forward"
    );
    notes::sync_notes(&bob_path, "origin", DEFAULT_NOTES_REF).expect("fetch, merge, push");
    let b_repo = Repository::open(&bob_path).expect("open");
    let b = NotesStore::open(&b_repo, None).expect("reopen");
    assert_eq!(
        b.read(oid(&c1))
            .expect("read")
            .map(|r| r.scores.tests_passing),
        Some(Some(0.9))
    );
    assert!(b.read(oid(&c2)).expect("read").is_some());

    assert!(notes::fetch_notes(&alice.path, "origin", "itergate").expect("fetch"));
    let a_repo = Repository::open(&alice.path).expect("open");
    let a = NotesStore::open(&a_repo, None).expect("reopen");
    assert_eq!(a.history(&[oid(&c1), oid(&c2)]).expect("history").len(), 2);

    let carol_path = alice.sibling("carol");
    git(
        alice.root.path(),
        &["init", "--quiet", carol_path.to_str().expect("utf-8")],
    );
    assert!(notes::fetch_notes(&carol_path, url, "itergate").expect("first fetch"));
    let c_repo = Repository::open(&carol_path).expect("open");
    let c = NotesStore::open(&c_repo, None).expect("store");
    assert_eq!(c.history(&[oid(&c1), oid(&c2)]).expect("history").len(), 2);

    let empty_remote = alice.sibling("empty.git");
    git(
        alice.root.path(),
        &["init", "--quiet", "--bare", "empty.git"],
    );
    let empty_url = empty_remote.to_str().expect("utf-8");
    assert!(!notes::fetch_notes(&alice.path, empty_url, "itergate").expect("nothing to fetch"));
}

// ---- decisions ------------------------------------------------------------------------

fn decision(action: notes::HumanAction, by: &str, second: u32) -> notes::HumanDecision {
    notes::HumanDecision {
        action,
        by: by.to_owned(),
        email: None,
        at: Utc
            .with_ymd_and_hms(2026, 1, 2, 12, 0, second)
            .single()
            .expect("valid time"),
    }
}

#[test]
fn decisions_are_a_note_beside_the_record_that_rewriting_the_record_keeps() {
    let repo = TestRepo::new();
    let c1 = repo.commit_file("a.txt", "1\n", "one");
    let r = Repository::open(&repo.path).expect("open");
    let store = NotesStore::open(&r, None).expect("store");
    write_record(&store, oid(&c1), &record(1, &c1, "", 0.5), "fp");
    let accept = decision(notes::HumanAction::Accept { reason: None }, "Ada", 1);
    store.append_decision(oid(&c1), &accept).expect("append");
    // Judged again (another base or configuration): the record note is replaced.
    write_record(&store, oid(&c1), &record(1, &c1, "", 0.7), "fp2");

    let r = Repository::open(&repo.path).expect("open");
    let store = NotesStore::open(&r, None).expect("reopen");
    assert_eq!(store.read_decisions(oid(&c1)).expect("read"), vec![accept]);
    let stored = store.read_record(oid(&c1)).expect("read").expect("record");
    assert_eq!(stored.record.scores.tests_passing, Some(0.7));
    // Filed under the documented key, with the commit it is about.
    let key = notes::decisions_key(oid(&c1));
    let text = repo.git(&["notes", "--ref", "itergate", "show", &key.to_string()]);
    let (commit, log) = notes::parse_decisions(text.as_bytes()).expect("a decisions note");
    assert_eq!((commit, log.len()), (oid(&c1), 1));
    assert!(text.contains("\"kind\":\"decisions\""), "{text}");
}

#[test]
fn concurrent_decisions_on_one_commit_are_all_kept() {
    const THREADS: u32 = 8;
    let repo = TestRepo::new();
    let c1 = repo.commit_file("a.txt", "1\n", "one");
    std::thread::scope(|scope| {
        for i in 0..THREADS {
            let path = repo.path.clone();
            let commit = oid(&c1);
            scope.spawn(move || {
                let r = Repository::open(&path).expect("open");
                let store = NotesStore::open(&r, None).expect("store");
                let text = format!("note {i}");
                let d = decision(notes::HumanAction::Feedback { text }, "Ada", i);
                store.append_decision(commit, &d).expect("append");
            });
        }
    });
    let r = Repository::open(&repo.path).expect("open");
    let store = NotesStore::open(&r, None).expect("store");
    let log = store.read_decisions(oid(&c1)).expect("read");
    assert_eq!(log.len(), THREADS as usize, "{log:?}");
}

#[test]
fn a_union_of_decision_logs_keeps_each_decision_once_oldest_first() {
    let accept = decision(notes::HumanAction::Accept { reason: None }, "Ada", 3);
    let budget = decision(notes::HumanAction::Budget { iterations: 20 }, "Grace", 2);
    let escalate = decision(
        notes::HumanAction::Escalate {
            reason: Some("wait".into()),
        },
        "Ada",
        1,
    );
    let ours = vec![escalate.clone(), accept.clone()];
    let theirs = vec![escalate.clone(), budget.clone()];
    let union = notes::union_decisions(&ours, &theirs);
    assert_eq!(union, vec![escalate, budget, accept]);
    assert_eq!(
        notes::union_decisions(&theirs, &ours),
        union,
        "both clones agree"
    );
}
