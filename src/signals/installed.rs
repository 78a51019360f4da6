//! A Python distribution as pip installed it: its `RECORD` lists every file it put in place
//! with the file's SHA-256. A package whose files changed on disk since the task started
//! (new modification times, new inodes) is still the same install when its `RECORD` is the
//! one fingerprinted at the start and every file under it is listed there with the hash it
//! has now: `pip uninstall` and `pip install` of the same version, not an edit. A file the
//! `RECORD` does not list, or one whose hash differs, is a change.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use base64::Engine as _;
use sha2::{Digest, Sha256};

/// The fingerprint's key of a distribution's `RECORD` text (not compared itself: it only
/// vouches for the files it lists).
pub const RECORD_KIND: &str = "python-record";

/// Whether the installed file or directory `path` is exactly what a distribution's
/// `RECORD` lists, that `RECORD` being unchanged since the start (`records_now`: each
/// `.dist-info` directory whose `RECORD` digest is the same in both fingerprints).
pub fn as_recorded(path: &Path, unchanged_records: &[PathBuf]) -> bool {
    for dist_info in unchanged_records {
        let Some(site) = dist_info.parent() else {
            continue;
        };
        let Ok(record) = std::fs::read_to_string(dist_info.join("RECORD")) else {
            continue;
        };
        let listed = listed(&record, site);
        let under = |file: &Path| file == path || file.starts_with(path);
        if !listed.keys().any(|f| under(f)) {
            continue;
        }
        return files_under(path).into_iter().all(|file| {
            listed
                .get(&file)
                .is_some_and(|hash| matches(&file, hash.as_deref()))
        });
    }
    false
}

/// `RECORD`'s files, by their path resolved from `site`, with their `sha256=` digest
/// (none for the `RECORD` itself and bytecode).
fn listed(record: &str, site: &Path) -> BTreeMap<PathBuf, Option<String>> {
    let mut out = BTreeMap::new();
    for line in record.lines() {
        let mut fields = line.rsplitn(3, ',');
        let (_size, hash, name) = (fields.next(), fields.next(), fields.next());
        let Some(name) = name.map(|n| n.trim_matches('"')) else {
            continue;
        };
        let hash = hash
            .and_then(|h| h.strip_prefix("sha256="))
            .filter(|h| !h.is_empty())
            .map(str::to_string);
        out.insert(normalise(&site.join(name)), hash);
    }
    out
}

/// `..` and `.` resolved without touching the file system.
fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The files at or under `path` (bytecode caches left out: the interpreter writes them).
fn files_under(path: &Path) -> Vec<PathBuf> {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return vec![path.to_path_buf()];
    };
    if !meta.is_dir() {
        return vec![path.to_path_buf()];
    }
    let mut out = Vec::new();
    let mut stack = vec![path.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for child in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let child_path = child.path();
            if child.file_name() == "__pycache__" {
                continue;
            }
            if child.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(child_path);
            } else {
                out.push(child_path);
            }
        }
    }
    out
}

/// Whether `file` hashes to the `RECORD`'s digest; a file listed without one (`RECORD`
/// itself, `INSTALLER`-era entries) only has to exist.
fn matches(file: &Path, hash: Option<&str>) -> bool {
    let Some(expected) = hash else {
        return file.exists();
    };
    let Ok(bytes) = std::fs::read(file) else {
        return false;
    };
    let digest = Sha256::digest(&bytes);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest) == expected
}
