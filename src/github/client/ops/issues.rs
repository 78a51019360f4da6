//! Issues and comments: a pull request's comments listed, created (found again after a lost
//! answer), edited and deleted, reactions, labels.

use http::Method;
use serde::Deserialize;
use serde_json::json;

use crate::github::client::{decode, segment, Created, OctocrabForge};
use crate::github::forge::{reply_marker_of, Forge, ForgeError};
use crate::github::types::{Comment, CommentId, LabelSpec, PrNumber, Reaction, RepoName};

use super::{call, repo_path, UserJson};

#[derive(Deserialize)]
pub(super) struct CommentJson {
    id: u64,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    user: Option<UserJson>,
}

impl From<CommentJson> for Comment {
    fn from(c: CommentJson) -> Self {
        Comment {
            id: CommentId(c.id),
            author: UserJson::actor(c.user),
            body: c.body.unwrap_or_default(),
        }
    }
}

/// The newest comment by `bot_login` that a create of `body` made: the same reply marker
/// when `body` starts with one, else the same body.
pub(super) fn created_comment(
    comments: Vec<Comment>,
    bot_login: &str,
    body: &str,
) -> Option<Comment> {
    let marker = reply_marker_of(body);
    comments.into_iter().rev().find(|c| {
        c.author.is(bot_login)
            && match marker {
                Some(marker) => reply_marker_of(&c.body) == Some(marker),
                None => c.body == body,
            }
    })
}

pub(super) async fn list_comments(
    forge: &OctocrabForge,
    repo: &RepoName,
    pr: PrNumber,
) -> Result<Vec<Comment>, ForgeError> {
    let path = format!("{}/issues/{pr}/comments", repo_path(repo));
    let comments: Vec<CommentJson> = forge.paginate("list issue comments", &path, None).await?;
    Ok(comments.into_iter().map(Comment::from).collect())
}

pub(super) async fn create_comment(
    forge: &OctocrabForge,
    repo: &RepoName,
    pr: PrNumber,
    body: &str,
) -> Result<Comment, ForgeError> {
    let operation = "create issue comment";
    let path = format!("{}/issues/{pr}/comments", repo_path(repo));
    let json = json!({ "body": body });
    let look = || async {
        let me = forge.identity().await?.login;
        let comments = forge.list_comments(repo, pr).await?;
        Ok(created_comment(comments, &me, body))
    };
    match forge
        .create(call(operation, Method::POST, path, Some(&json)), look)
        .await?
    {
        Created::Sent(reply) => Ok(decode::<CommentJson>(operation, &reply.body)?.into()),
        Created::Found(comment) => Ok(comment),
    }
}

pub(super) async fn delete_comment(
    forge: &OctocrabForge,
    repo: &RepoName,
    id: CommentId,
) -> Result<(), ForgeError> {
    let path = format!("{}/issues/comments/{id}", repo_path(repo));
    match forge
        .send(call("delete issue comment", Method::DELETE, path, None))
        .await
    {
        Err(e) if e.is_not_found() => Ok(()),
        other => other.map(|_| ()),
    }
}

pub(super) async fn update_comment(
    forge: &OctocrabForge,
    repo: &RepoName,
    id: CommentId,
    body: &str,
) -> Result<Comment, ForgeError> {
    let path = format!("{}/issues/comments/{id}", repo_path(repo));
    let body = json!({ "body": body });
    let updated: CommentJson = forge
        .send_json(call(
            "update issue comment",
            Method::PATCH,
            path,
            Some(&body),
        ))
        .await?;
    Ok(updated.into())
}

pub(super) async fn add_reaction(
    forge: &OctocrabForge,
    repo: &RepoName,
    comment: CommentId,
    reaction: Reaction,
) -> Result<(), ForgeError> {
    let path = format!("{}/issues/comments/{comment}/reactions", repo_path(repo));
    let body = json!({ "content": reaction.as_str() });
    forge
        .send(call("add reaction", Method::POST, path, Some(&body)))
        .await?;
    Ok(())
}

pub(super) async fn add_label(
    forge: &OctocrabForge,
    repo: &RepoName,
    pr: PrNumber,
    label: &LabelSpec,
) -> Result<(), ForgeError> {
    let path = format!("{}/labels", repo_path(repo));
    let spec =
        json!({ "name": label.name, "color": label.color, "description": label.description });
    match forge
        .send(call("create label", Method::POST, path, Some(&spec)))
        .await
    {
        Ok(_) => {}
        // Already there (422), or the token may not create labels (403): adding it
        // still works, GitHub then creates it in its default colour.
        Err(e) if matches!(e.status(), Some(403 | 422)) => {
            tracing::debug!(label = %label.name, error = %e, "label not created");
        }
        Err(e) => return Err(e),
    }
    let path = format!("{}/issues/{pr}/labels", repo_path(repo));
    let body = json!({ "labels": [label.name] });
    forge
        .send(call("add label", Method::POST, path, Some(&body)))
        .await?;
    Ok(())
}

/// One issue event, as `GET .../issues/{n}/events` lists it.
#[derive(serde::Deserialize)]
struct IssueEventJson {
    event: String,
    #[serde(default)]
    actor: Option<UserJson>,
    #[serde(default)]
    label: Option<LabelNameJson>,
}

#[derive(serde::Deserialize)]
struct LabelNameJson {
    name: String,
}

pub(super) async fn label_added_by(
    forge: &OctocrabForge,
    repo: &RepoName,
    pr: PrNumber,
    name: &str,
) -> Result<Option<String>, ForgeError> {
    let path = format!("{}/issues/{pr}/events", repo_path(repo));
    let events: Vec<IssueEventJson> = forge.paginate("list issue events", &path, None).await?;
    Ok(events.into_iter().fold(None, |added_by, e| {
        let this = e
            .label
            .as_ref()
            .is_some_and(|l| l.name.eq_ignore_ascii_case(name));
        match e.event.as_str() {
            "labeled" if this => Some(e.actor.map(|a| a.login).unwrap_or_default()),
            "unlabeled" if this => None,
            _ => added_by,
        }
    }))
}

pub(super) async fn remove_label(
    forge: &OctocrabForge,
    repo: &RepoName,
    pr: PrNumber,
    name: &str,
) -> Result<(), ForgeError> {
    let path = format!("{}/issues/{pr}/labels/{}", repo_path(repo), segment(name));
    match forge
        .send(call("remove label", Method::DELETE, path, None))
        .await
    {
        Err(e) if e.is_not_found() => Ok(()),
        other => other.map(|_| ()),
    }
}
