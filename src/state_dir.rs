//! The user's state directory: what itergate keeps outside every repository, where nothing
//! that holds a work tree reaches it through the repository (the notes key of each clone).
//! `$ITERGATE_STATE_DIR`, else `$XDG_STATE_HOME/itergate`, else `~/.local/state/itergate`;
//! created mode 0700.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context, Result};
use sha2::{Digest, Sha256};

/// The state directory (not created).
pub fn path() -> Result<PathBuf> {
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(dir) = var("ITERGATE_STATE_DIR") {
        return Ok(dir);
    }
    if let Some(dir) = var("XDG_STATE_HOME") {
        return Ok(dir.join("itergate"));
    }
    var("HOME")
        .map(|home| home.join(".local/state/itergate"))
        .ok_or_else(|| {
            anyhow!("no state directory: set ITERGATE_STATE_DIR (or HOME, or XDG_STATE_HOME)")
        })
}

/// `sub` under the state directory, created (mode 0700) when missing.
pub fn create(sub: &str) -> Result<PathBuf> {
    let dir = path()?.join(sub);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))
        .with_context(|| format!("restricting {}", dir.display()))?;
    Ok(dir)
}

/// A name for `repository` (its common git directory) in the state directory: a digest of
/// its canonical path, so each clone has its own entry.
pub fn repository_name(common_dir: &Path) -> String {
    let canonical = common_dir
        .canonicalize()
        .unwrap_or_else(|_| common_dir.to_path_buf());
    let digest = Sha256::digest(canonical.as_os_str().as_encoded_bytes());
    format!("{digest:x}")[..32].to_string()
}
