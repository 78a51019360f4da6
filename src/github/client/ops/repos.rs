//! Repository contents and access: a file at a commit, two commits compared, and a
//! person's permission.

use http::Method;
use serde::Deserialize;
use serde_json::Value;

use crate::github::client::{segment, OctocrabForge};
use crate::github::commands::Permission;
use crate::github::forge::ForgeError;
use crate::github::types::RepoName;

use super::{call, repo_path};

/// `GET /repos/{owner}/{repo}/contents/{path}`: a file (a directory answers with a list).
#[derive(Deserialize)]
pub(super) struct ContentJson {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    encoding: Option<String>,
    #[serde(default)]
    content: Option<String>,
    /// The path answered: a symlink's target's, when the link points at a file.
    #[serde(default)]
    path: Option<String>,
}

/// `GET /repos/{owner}/{repo}/compare/{basehead}`: what itergate reads of it.
#[derive(Deserialize)]
pub(super) struct CompareJson {
    status: String,
    #[serde(default)]
    files: Vec<ComparedFileJson>,
}

#[derive(Deserialize)]
pub(super) struct ComparedFileJson {
    filename: String,
    #[serde(default)]
    patch: Option<String>,
}

#[derive(Deserialize)]
pub(super) struct PermissionJson {
    #[serde(default)]
    permission: Option<String>,
    #[serde(default)]
    role_name: Option<String>,
}

pub(super) async fn permission(
    forge: &OctocrabForge,
    repo: &RepoName,
    user: &str,
) -> Result<Permission, ForgeError> {
    let path = format!(
        "{}/collaborators/{}/permission",
        repo_path(repo),
        segment(user)
    );
    let operation = "get collaborator permission";
    match forge
        .send_json::<PermissionJson>(call(operation, Method::GET, path, None))
        .await
    {
        Ok(p) => Ok(Permission::from_github(
            p.role_name.as_deref(),
            p.permission.as_deref(),
        )),
        Err(e) if e.is_not_found() => Ok(Permission::None),
        Err(e) => Err(e),
    }
}

pub(super) async fn file_content(
    forge: &OctocrabForge,
    repo: &RepoName,
    git_ref: &str,
    path: &str,
) -> Result<Option<Vec<u8>>, ForgeError> {
    let operation = "get repository content";
    let encoded: Vec<String> = path.split('/').map(segment).collect();
    let url = format!(
        "{}/contents/{}?ref={}",
        repo_path(repo),
        encoded.join("/"),
        segment(git_ref)
    );
    let answer: Value = match forge
        .send_json(call(operation, Method::GET, url, None))
        .await
    {
        Ok(answer) => answer,
        Err(e) if e.is_not_found() => return Ok(None),
        Err(e) => return Err(e),
    };
    // A directory is answered with the list of its entries.
    if answer.is_array() {
        return Ok(None);
    }
    let content: ContentJson = serde_json::from_value(answer).map_err(|e| ForgeError::Decode {
        operation,
        message: e.to_string(),
    })?;
    if content.kind != "file" {
        return Ok(None);
    }
    // A symlink to a file is answered with the target's content and path: what the
    // caller's rules were applied to is the link's name, so the target is not read.
    if content.path.as_deref().is_some_and(|p| p != path) {
        tracing::warn!(
            requested = path,
            answered = content.path.as_deref().unwrap_or_default(),
            "the contents API answered another path (a symlink): not read"
        );
        return Ok(None);
    }
    match (content.encoding.as_deref(), content.content) {
        (Some("base64"), Some(text)) => {
            use base64::Engine as _;
            let compact: String = text.split_whitespace().collect();
            base64::engine::general_purpose::STANDARD
                .decode(compact)
                .map(Some)
                .map_err(|e| ForgeError::Decode {
                    operation,
                    message: format!("{path}: the content is not base64: {e}"),
                })
        }
        // GitHub leaves `content` empty and says `encoding: none` above 1 MB.
        _ => Err(ForgeError::TooLarge {
            operation,
            limit_bytes: 1024 * 1024,
        }),
    }
}

pub(super) async fn compare(
    forge: &OctocrabForge,
    repo: &RepoName,
    base: &str,
    head: &str,
) -> Result<crate::github::compare::Comparison, ForgeError> {
    let url = format!(
        "{}/compare/{}...{}",
        repo_path(repo),
        segment(base),
        segment(head)
    );
    let answer: CompareJson = forge
        .send_json(call("compare two commits", Method::GET, url, None))
        .await?;
    Ok(crate::github::compare::Comparison {
        status: answer.status,
        files: answer
            .files
            .into_iter()
            .map(|f| crate::github::compare::ComparedFile {
                filename: f.filename,
                patch: f.patch,
            })
            .collect(),
    })
}
