//! Reading one file out of a workflow run's artifact (a zip archive), the fork-safe path:
//! the untrusted run uploads its `IterationRecord`, a trusted run reads it. The archive is
//! untrusted input, so the file's size is bounded while it is inflated.

use std::io::{Cursor, Read};

/// The largest file read out of an artifact (an `IterationRecord` is a few KiB).
pub const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArtifactError {
    #[error("not a readable zip archive: {0}")]
    NotZip(String),
    #[error("the archive has no file `{0}`")]
    Missing(String),
    #[error("`{name}` is larger than {limit} bytes")]
    TooLarge { name: String, limit: u64 },
    #[error("reading `{name}`: {message}")]
    Read { name: String, message: String },
}

/// The content of `name` inside the zip archive `zip_bytes`, at most `max_bytes` long.
pub fn extract_file(
    zip_bytes: &[u8],
    name: &str,
    max_bytes: u64,
) -> Result<Vec<u8>, ArtifactError> {
    let mut archive = zip::ZipArchive::new(Cursor::new(zip_bytes))
        .map_err(|e| ArtifactError::NotZip(e.to_string()))?;
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
