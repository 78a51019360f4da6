//! Reading one file out of a workflow run's artifact (a zip archive), the fork-safe path:
//! the untrusted run uploads its `IterationRecord`, a trusted run reads it. The archive is
//! untrusted input, so the file's size is bounded while it is inflated, and the record in it
//! is published only for the head GitHub says the run built ([`check_run_head`]).

use std::io::{Cursor, Read};

/// The SHA-256 of a record as `itergate ci --score-only` wrote it, in lowercase hex: the
/// step's `record-digest` output and the suffix of the artifact's name
/// (`itergate-record-<digest>`), so a record rewritten after itergate wrote it (by a process
/// an earlier step started) is refused where it is published.
pub fn record_digest(bytes: &[u8]) -> String {
    use sha2::Digest;
    format!("{:x}", sha2::Sha256::digest(bytes))
}

/// Whether an artifact's `name` is the one configured (`base`), bare or bound to its
/// record's digest (`<base>-<64 hex digits>`): `None` when it is neither, else the digest
/// the name carries.
pub fn bound_name<'n>(name: &'n str, base: &str) -> Option<Option<&'n str>> {
    if name == base {
        return Some(None);
    }
    let digest = name.strip_prefix(base)?.strip_prefix('-')?;
    let hex = digest.len() == 64
        && digest
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    hex.then_some(Some(digest))
}

/// Refuses `bytes` unless they are the record the digest names (when a digest is given).
pub fn check_digest(bytes: &[u8], digest: Option<&str>) -> Result<(), String> {
    match digest {
        Some(expected) if record_digest(bytes) != expected.to_ascii_lowercase() => Err(format!(
            "its {} bytes are not the record itergate wrote in the scoring step (sha256 {}, \
             expected {expected}): it was changed after it was written",
            bytes.len(),
            record_digest(bytes)
        )),
        _ => Ok(()),
    }
}

/// The largest file read out of an artifact (an `IterationRecord` is a few KiB).
pub const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// The most entries an archive may list: its whole directory is read before any file, so
/// an archive of a million empty entries would cost hundreds of MB.
pub const MAX_ENTRIES: u64 = 10_000;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArtifactError {
    #[error("not a readable zip archive: {0}")]
    NotZip(String),
    #[error("the archive lists {0} entries, more than the {MAX_ENTRIES} itergate reads")]
    TooManyEntries(u64),
    #[error("the archive has no file `{0}`")]
    Missing(String),
    #[error("`{name}` is larger than {limit} bytes")]
    TooLarge { name: String, limit: u64 },
    #[error("reading `{name}`: {message}")]
    Read { name: String, message: String },
}

/// The archive, once its end record says it lists at most [`MAX_ENTRIES`] entries (ZIP64's
/// "see the other record" count of 0xFFFF is more than that too).
fn open(zip_bytes: &[u8]) -> Result<zip::ZipArchive<Cursor<&[u8]>>, ArtifactError> {
    const END: &[u8] = b"PK\x05\x06";
    // The end record is 22 bytes and a comment of at most 65,535.
    let from = zip_bytes.len().saturating_sub(22 + 65_535);
    let at = zip_bytes[from..]
        .windows(END.len())
        .rposition(|w| w == END)
        .map(|i| from + i);
    if let Some(entries) = at.and_then(|at| zip_bytes.get(at + 10..at + 12)) {
        let entries = u64::from(u16::from_le_bytes([entries[0], entries[1]]));
        if entries > MAX_ENTRIES {
            return Err(ArtifactError::TooManyEntries(entries));
        }
    }
    zip::ZipArchive::new(Cursor::new(zip_bytes)).map_err(|e| ArtifactError::NotZip(e.to_string()))
}

/// The content of `name` inside the zip archive `zip_bytes`, at most `max_bytes` long.
pub fn extract_file(
    zip_bytes: &[u8],
    name: &str,
    max_bytes: u64,
) -> Result<Vec<u8>, ArtifactError> {
    let mut archive = open(zip_bytes)?;
    let file = archive.by_name(name).map_err(|e| match e {
        zip::result::ZipError::FileNotFound => ArtifactError::Missing(name.to_string()),
        other => ArtifactError::NotZip(other.to_string()),
    })?;
    let mut content = Vec::new();
    file.take(max_bytes.saturating_add(1))
        .read_to_end(&mut content)
        .map_err(|e| ArtifactError::Read {
            name: name.to_string(),
            message: e.to_string(),
        })?;
    if content.len() as u64 > max_bytes {
        return Err(ArtifactError::TooLarge {
            name: name.to_string(),
            limit: max_bytes,
        });
    }
    Ok(content)
}

/// Files of the zip archive whose names `matches` accepts (directories skipped), each at
/// most `max_file` bytes and together at most `max_total`: reading stops with an error at
/// the first that is larger, never after holding it whole.
pub fn extract_matching(
    zip_bytes: &[u8],
    matches: &dyn Fn(&str) -> bool,
    max_file: u64,
    max_total: u64,
) -> Result<Vec<(String, Vec<u8>)>, ArtifactError> {
    let mut archive = open(zip_bytes)?;
    let mut files = Vec::new();
    let mut total = 0u64;
    for index in 0..archive.len() {
        let file = archive
            .by_index(index)
            .map_err(|e| ArtifactError::NotZip(e.to_string()))?;
        let name = file.name().to_string();
        if file.is_dir() || !matches(&name) {
            continue;
        }
        let room = max_file.min(max_total.saturating_sub(total));
        let mut content = Vec::new();
        file.take(room.saturating_add(1))
            .read_to_end(&mut content)
            .map_err(|e| ArtifactError::Read {
                name: name.clone(),
                message: e.to_string(),
            })?;
        if content.len() as u64 > room {
            return Err(ArtifactError::TooLarge { name, limit: room });
        }
        total += content.len() as u64;
        files.push((name, content));
    }
    Ok(files)
}

/// A head as one party names it: commit, repository (`owner/name`) and branch.
#[derive(Debug, Clone, Copy)]
pub struct RunHead<'a> {
    pub sha: &'a str,
    pub repo: Option<&'a str>,
    pub branch: Option<&'a str>,
}

/// A fork's artifact may be published to a pull request only when the workflow run (as
/// GitHub reports it), the pull request (as the API has it now) and the artifact all name
/// the same head commit, head repository and head branch. A shared commit alone is not
/// enough: a fork's run must never publish to another pull request that happens to have
/// the same head. What is wrong is returned as a sentence.
pub fn check_run_head(run: &RunHead, pull: &RunHead, artifact: &RunHead) -> Result<(), String> {
    let named = |r: Option<&str>| r.unwrap_or("(unknown)").to_string();
    if pull.sha != run.sha {
        return Err(format!(
            "its head is {}, not the run's {}",
            pull.sha, run.sha
        ));
    }
    if run.repo.is_none() || pull.repo.is_none() || !eq_ci(run.repo, pull.repo) {
        return Err(format!(
            "its head repository is {}, but the run built {}",
            named(pull.repo),
            named(run.repo)
        ));
    }
    if run.branch.is_none() || run.branch != pull.branch {
        return Err(format!(
            "its head branch is {}, but the run built {}",
            named(pull.branch),
            named(run.branch)
        ));
    }
    if artifact.sha != run.sha || !eq_ci(artifact.repo, run.repo) || artifact.branch != run.branch {
        return Err(format!(
            "the artifact's record names {} of {} ({}), not what the run built",
            artifact.sha,
            named(artifact.repo),
            named(artifact.branch)
        ));
    }
    Ok(())
}

/// Repository names compare without case, as GitHub's do.
fn eq_ci(a: Option<&str>, b: Option<&str>) -> bool {
    matches!((a, b), (Some(a), Some(b)) if a.eq_ignore_ascii_case(b))
}
