//! The fake GitHub's state and the operations that read and change it. Handlers answer with
//! the fields GitHub answers with (those itergate reads and a few more), and change the
//! model the way GitHub would: a created comment is listed afterwards, an added label is on
//! the issue, annotations accumulate on their check run.

use std::collections::{BTreeMap, VecDeque};

use serde_json::{json, Value};

use super::Fault;

#[derive(Debug, Clone, PartialEq)]
pub struct FakeComment {
    pub id: u64,
    pub issue: u64,
    pub author: String,
    pub author_type: String,
    pub body: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct FakeLabel {
    pub name: String,
    pub color: String,
    pub description: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct FakeReaction {
    pub comment_id: u64,
    pub content: String,
    pub user: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct FakeCheckRun {
    pub id: u64,
    pub name: String,
    pub head_sha: String,
    pub status: String,
    pub conclusion: Option<String>,
    pub suite_id: u64,
    pub external_id: Option<String>,
    pub output: Value,
    pub annotations: Vec<Value>,
    /// Annotations per request that carried some: GitHub's limit is 50.
    pub annotation_batches: Vec<usize>,
    /// The app that made it: the fake's App when it has one, else GitHub Actions.
    pub app_id: u64,
}

/// The repository's id: the webhook fixtures' (`repository.id`), which a rename keeps.
pub const REPO_ID: u64 = 186_853_002;

/// GitHub Actions' app id: what a `GITHUB_TOKEN`'s check runs carry.
pub const ACTIONS_APP_ID: u64 = 15368;

#[derive(Debug, Clone, PartialEq)]
pub struct FakePull {
    pub number: u64,
    pub title: String,
    pub author: String,
    pub head_sha: String,
    pub head_ref: String,
    pub head_repo: String,
    pub base_sha: String,
    pub base_ref: String,
    /// `(sha, message)`, oldest first.
    pub commits: Vec<(String, String)>,
    pub closed: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct FakeArtifact {
    pub id: u64,
    pub run_id: u64,
    pub name: String,
    pub zip: Vec<u8>,
    pub expired: bool,
}

/// A workflow run of the repository, listed as GitHub lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct FakeRun {
    pub id: u64,
    pub head_sha: String,
    /// What started it: `pull_request`, `push`, ...
    pub event: String,
    /// `queued`, `in_progress`, `completed`.
    pub status: String,
    pub head_branch: String,
    pub head_repo: String,
    pub pull_requests: Vec<u64>,
}

impl FakeRun {
    /// A run of the `feature` branch of the repository itself.
    pub fn new(id: u64, head_sha: &str, event: &str, status: &str) -> FakeRun {
        FakeRun {
            id,
            head_sha: head_sha.into(),
            event: event.into(),
            status: status.into(),
            head_branch: "feature".into(),
            head_repo: super::REPO.into(),
            pull_requests: Vec::new(),
        }
    }

    fn json(&self) -> Value {
        let conclusion = (self.status == "completed").then_some("success");
        json!({
            "id": self.id, "name": "CI", "node_id": "WFR_1", "head_branch": self.head_branch,
            "head_sha": self.head_sha, "path": ".github/workflows/ci.yml", "run_number": 1,
            "event": self.event, "status": self.status, "conclusion": conclusion,
            "workflow_id": 1, "url": "", "html_url": "", "created_at": "2026-01-01T00:00:00Z",
            "updated_at": "2026-01-01T00:00:00Z",
            "head_repository": { "id": 1, "full_name": self.head_repo },
            "pull_requests": self.pull_requests.iter().map(|n| json!({
                "id": n, "number": n, "url": "",
                "head": { "ref": self.head_branch, "sha": self.head_sha,
                          "repo": { "id": 1, "url": "", "name": "widgets" } },
                "base": { "ref": "main", "sha": "0000000000000000000000000000000000000000",
                          "repo": { "id": 1, "url": "", "name": "widgets" } } })).collect::<Vec<_>>(),
        })
    }
}

/// The GitHub App the fake knows: JWTs must verify against its public key.
#[derive(Debug, Clone)]
pub struct FakeApp {
    pub id: u64,
    pub slug: String,
    pub public_key_pem: Vec<u8>,
    /// How long a minted installation token lives (GitHub: an hour).
    pub token_lifetime_secs: i64,
    pub tokens: Vec<MintedToken>,
    /// What `GET /app/hook/deliveries` lists (GitHub's delivery objects).
    pub deliveries: Vec<Value>,
    /// Delivery ids asked to be redelivered.
    pub redelivered: Vec<u64>,
}

#[derive(Debug, Clone)]
pub struct MintedToken {
    pub token: String,
    pub installation: u64,
    pub expires_at: i64,
}

/// A request as the fake saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    pub operation_id: String,
    pub method: String,
    pub path: String,
    pub body: Option<Value>,
}

/// What a handler answers.
pub struct Answer {
    pub status: u16,
    pub body: Value,
    pub headers: Vec<(String, String)>,
}

impl Answer {
    pub fn json(status: u16, body: Value) -> Answer {
        Answer {
            status,
            body,
            headers: Vec::new(),
        }
    }

    pub fn empty(status: u16) -> Answer {
        Answer::json(status, Value::Null)
    }

    pub fn message(status: u16, message: &str) -> Answer {
        Answer::json(
            status,
            json!({ "message": message, "documentation_url": "https://docs.github.com/rest" }),
        )
    }
}

/// A label added to or removed from an issue, and by whom.
#[derive(Debug, Clone, PartialEq)]
pub struct FakeIssueEvent {
    pub issue: u64,
    /// `labeled` or `unlabeled`.
    pub event: String,
    pub label: String,
    pub actor: String,
}

pub struct Model {
    pub repo: String,
    /// The repository's default branch (`main`).
    pub default_branch: String,
    /// The login the token acts as.
    pub login: String,
    pub login_type: String,
    /// `GET /user` answers 403, as for a `GITHUB_TOKEN`.
    pub user_endpoint_forbidden: bool,
    pub base_url: String,
    next_id: u64,
    pub comments: Vec<FakeComment>,
    pub labels: BTreeMap<String, FakeLabel>,
    /// Labels added and removed, in order (`GET .../issues/{n}/events`).
    pub issue_events: Vec<FakeIssueEvent>,
    pub issue_labels: BTreeMap<u64, Vec<String>>,
    pub reactions: Vec<FakeReaction>,
    pub check_runs: Vec<FakeCheckRun>,
    /// login → (`permission`, `role_name`).
    pub permissions: BTreeMap<String, (String, String)>,
    pub pulls: BTreeMap<u64, FakePull>,
    pub artifacts: Vec<FakeArtifact>,
    /// `(ref, path)` → content, for `GET /repos/{owner}/{repo}/contents/{path}`.
    pub files: BTreeMap<(String, String), Vec<u8>>,
    /// `(ref, link)` → the file it points at: answered, as GitHub does, with the target's
    /// content and path.
    pub symlinks: BTreeMap<(String, String), String>,
    /// The repository's git history, for `GET /repos/{owner}/{repo}/compare/{basehead}`
    /// and, when set, for contents at a commit that `files` does not hold.
    pub git: Option<std::path::PathBuf>,
    pub app: Option<FakeApp>,
    /// Workflow runs re-run (`POST .../actions/runs/{run_id}/rerun`).
    pub reruns: Vec<u64>,
    /// The repository's workflow runs.
    pub workflow_runs: Vec<FakeRun>,
    pub dispatches: Vec<Value>,
    pub rerequested_suites: Vec<u64>,
    pub faults: BTreeMap<String, VecDeque<Fault>>,
    pub violations: Vec<String>,
    pub requests: Vec<Recorded>,
}

impl Model {
    pub fn new(repo: &str, login: &str, base_url: String) -> Model {
        Model {
            repo: repo.to_string(),
            default_branch: "main".into(),
            login: login.to_string(),
            login_type: if login.ends_with("[bot]") {
                "Bot"
            } else {
                "User"
            }
            .into(),
            user_endpoint_forbidden: false,
            base_url,
            next_id: 1000,
            comments: Vec::new(),
            labels: BTreeMap::new(),
            issue_events: Vec::new(),
            issue_labels: BTreeMap::new(),
            reactions: Vec::new(),
            check_runs: Vec::new(),
            permissions: BTreeMap::new(),
            pulls: BTreeMap::new(),
            artifacts: Vec::new(),
            files: BTreeMap::new(),
            symlinks: BTreeMap::new(),
            git: None,
            app: None,
            reruns: Vec::new(),
            workflow_runs: Vec::new(),
            dispatches: Vec::new(),
            rerequested_suites: Vec::new(),
            faults: BTreeMap::new(),
            violations: Vec::new(),
            requests: Vec::new(),
        }
    }

    pub fn next_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// A comment written by someone else (a person, another bot).
    pub fn add_comment(&mut self, issue: u64, author: &str, author_type: &str, body: &str) -> u64 {
        let id = self.next_id();
        self.comments.push(FakeComment {
            id,
            issue,
            author: author.into(),
            author_type: author_type.into(),
            body: body.into(),
        });
        id
    }

    pub fn comments_on(&self, issue: u64) -> Vec<&FakeComment> {
        self.comments.iter().filter(|c| c.issue == issue).collect()
    }

    pub fn labels_on(&self, issue: u64) -> Vec<String> {
        self.issue_labels.get(&issue).cloned().unwrap_or_default()
    }

    /// Runs operation `id` with path `params`, `query` and JSON `body`.
    pub fn handle(
        &mut self,
        id: &str,
        params: &BTreeMap<String, String>,
        query: &[(String, String)],
        body: &Value,
    ) -> Answer {
        let repo = format!("{}/{}", param(params, "owner"), param(params, "repo"));
        if params.contains_key("owner") && !repo.eq_ignore_ascii_case(&self.repo) {
            return Answer::message(404, "Not Found");
        }
        let number = |name: &str| param(params, name).parse::<u64>().unwrap_or(0);
        match id {
            "users/get-authenticated" => self.get_user(),
            "issues/list-comments" => self.list_comments(number("issue_number"), query),
            "issues/create-comment" => self.create_comment(number("issue_number"), body),
            "issues/update-comment" => self.update_comment(number("comment_id"), body),
            "issues/delete-comment" => self.delete_comment(number("comment_id")),
            "reactions/create-for-issue-comment" => self.react(number("comment_id"), body),
            "issues/create-label" => self.create_label(body),
            "issues/add-labels" => self.add_labels(number("issue_number"), body),
            "issues/list-events" => self.list_issue_events(number("issue_number"), query),
            "issues/remove-label" => {
                self.remove_label(number("issue_number"), param(params, "name"))
            }
            "repos/get-collaborator-permission-level" => self.permission(param(params, "username")),
            "pulls/get" => self.get_pull(number("pull_number")),
            "pulls/list-commits" => self.list_commits(number("pull_number"), query),
            "checks/create" => self.create_check_run(body),
            "checks/update" => self.update_check_run(number("check_run_id"), body),
            "checks/list-for-ref" => self.list_check_runs(param(params, "ref"), query),
            "checks/rerequest-suite" => {
                self.rerequested_suites.push(number("check_suite_id"));
                Answer::json(201, json!({}))
            }
            "actions/list-workflow-run-artifacts" => self.list_artifacts(number("run_id"), query),
            "actions/download-artifact" => self.download_artifact(number("artifact_id")),
            "actions/create-workflow-dispatch" | "repos/create-dispatch-event" => {
                let mut record = body.clone();
                if let Some(map) = record.as_object_mut() {
                    map.insert("operation".into(), json!(id));
                    map.insert("workflow_id".into(), json!(param(params, "workflow_id")));
                }
                self.dispatches.push(record);
                Answer::empty(204)
            }
            "repos/get-content" => {
                let git_ref = query
                    .iter()
                    .find(|(k, _)| k == "ref")
                    .map(|(_, v)| v.clone())
                    .unwrap_or_else(|| "main".into());
                self.get_content(&git_ref, param(params, "path"))
            }
            "repos/compare-commits-with-basehead" => self.compare(param(params, "basehead")),
            "actions/list-workflow-runs-for-repo" => {
                let wanted =
                    |key: &str| query.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
                let (sha, event, status) = (wanted("head_sha"), wanted("event"), wanted("status"));
                let runs: Vec<Value> = self
                    .workflow_runs
                    .iter()
                    .filter(|r| {
                        sha.as_ref().is_none_or(|w| *w == r.head_sha)
                            && event.as_ref().is_none_or(|w| *w == r.event)
                            && status.as_ref().is_none_or(|w| *w == r.status)
                    })
                    .map(FakeRun::json)
                    .collect();
                Answer::json(
                    200,
                    json!({ "total_count": runs.len(), "workflow_runs": runs }),
                )
            }
            "actions/re-run-workflow" => {
                self.reruns.push(number("run_id"));
                Answer::json(201, json!({}))
            }
            "apps/get-authenticated" => self.get_app(),
            "apps/create-installation-access-token" => self.mint_token(number("installation_id")),
            "apps/list-webhook-deliveries" => match &self.app {
                Some(app) => Answer::json(200, Value::Array(app.deliveries.clone())),
                None => Answer::message(404, "Not Found"),
            },
            "apps/redeliver-webhook-delivery" => match &mut self.app {
                Some(app) => {
                    app.redelivered.push(number("delivery_id"));
                    Answer::json(202, json!({}))
                }
                None => Answer::message(404, "Not Found"),
            },
            other => Answer::message(501, &format!("the fake does not implement {other}")),
        }
    }

    /// `base...head` as GitHub answers it: the status from the merge-base, and the files
    /// changed since the merge-base, each with its patch (hunks with 3 lines of context).
    fn compare(&self, basehead: &str) -> Answer {
        let Some(repo) = self
            .git
            .as_ref()
            .and_then(|p| git2::Repository::open(p).ok())
        else {
            return Answer::message(501, "the fake has no git repository to compare in");
        };
        let Some((base, head)) = basehead.split_once("...") else {
            return Answer::message(404, "Not Found");
        };
        let commit = |rev: &str| repo.revparse_single(rev).ok()?.peel_to_commit().ok();
        let (Some(base), Some(head)) = (commit(base), commit(head)) else {
            return Answer::message(404, "Not Found");
        };
        let Ok(merge_base) = repo.merge_base(base.id(), head.id()) else {
            return Answer::message(404, "Not Found");
        };
        let status = match (merge_base == base.id(), merge_base == head.id()) {
            (true, true) => "identical",
            (true, false) => "ahead",
            (false, true) => "behind",
            (false, false) => "diverged",
        };
        let old = repo.find_commit(merge_base).and_then(|c| c.tree()).ok();
        let new = head.tree().ok();
        let diff = repo
            .diff_tree_to_tree(old.as_ref(), new.as_ref(), None)
            .expect("diff");
        let mut files = Vec::new();
        for index in 0..diff.deltas().len() {
            let Ok(Some(mut patch)) = git2::Patch::from_diff(&diff, index) else {
                continue;
            };
            let delta = patch.delta();
            let sha = delta.new_file().id().to_string();
            let filename = delta
                .new_file()
                .path()
                .or(delta.old_file().path())
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default();
            let text = patch
                .to_buf()
                .expect("patch")
                .as_str()
                .unwrap_or("")
                .to_string();
            // GitHub's `patch` is the hunks, without the `diff --git` header lines.
            let hunks = text
                .find("\n@@ ")
                .map(|i| text[i + 1..].trim_end_matches('\n').to_string());
            files.push(json!({
                "sha": sha, "filename": filename,
                "status": "modified", "additions": 0, "deletions": 0, "changes": 0,
                "blob_url": "", "raw_url": "", "contents_url": "", "patch": hunks,
            }));
        }
        Answer::json(
            200,
            json!({
                "url": "", "html_url": "", "permalink_url": "", "diff_url": "", "patch_url": "",
                "status": status, "ahead_by": 1, "behind_by": 0, "total_commits": 1,
                "base_commit": {}, "merge_base_commit": {}, "commits": [], "files": files,
            }),
        )
    }

    fn get_content(&self, git_ref: &str, path: &str) -> Answer {
        use base64::Engine as _;
        let from_git = || {
            let repo = git2::Repository::open(self.git.as_ref()?).ok()?;
            let tree = repo.revparse_single(git_ref).ok()?.peel_to_tree().ok()?;
            let blob = tree
                .get_path(std::path::Path::new(path))
                .ok()?
                .to_object(&repo)
                .ok()?;
            Some(blob.as_blob()?.content().to_vec())
        };
        let path = self
            .symlinks
            .get(&(git_ref.to_string(), path.to_string()))
            .map_or(path, String::as_str);
        let stored = self
            .files
            .get(&(git_ref.to_string(), path.to_string()))
            .cloned();
        let Some(bytes) = stored.or_else(from_git) else {
            return Answer::message(404, "Not Found");
        };
        let bytes = &bytes;
        let name = path.rsplit('/').next().unwrap_or(path);
        Answer::json(
            200,
            json!({
                "type": "file", "encoding": "base64", "size": bytes.len(), "name": name,
                "path": path, "sha": "0000000000000000000000000000000000000000",
                "content": base64::engine::general_purpose::STANDARD.encode(bytes),
                "url": "", "git_url": null, "html_url": null, "download_url": null,
                "_links": { "self": "", "git": null, "html": null },
            }),
        )
    }

    fn get_app(&self) -> Answer {
        let Some(app) = &self.app else {
            return Answer::message(404, "Not Found");
        };
        Answer::json(
            200,
            json!({ "id": app.id, "slug": app.slug, "name": app.slug, "node_id": "A_1",
                    "owner": self.user_json("octo-org", "Organization"),
                    "permissions": { "issues": "write", "pull_requests": "write", "checks": "write" },
                    "events": ["pull_request", "issue_comment"] }),
        )
    }

    fn mint_token(&mut self, installation: u64) -> Answer {
        let Some(app) = &mut self.app else {
            return Answer::message(404, "Not Found");
        };
        let now = chrono::Utc::now().timestamp();
        let token = format!("ghs_fake{}_{}", installation, app.tokens.len() + 1);
        let expires_at = now + app.token_lifetime_secs;
        app.tokens.push(MintedToken {
            token: token.clone(),
            installation,
            expires_at,
        });
        let at = chrono::DateTime::from_timestamp(expires_at, 0).unwrap_or_default();
        Answer::json(
            201,
            json!({ "token": token, "expires_at": at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                    "permissions": { "issues": "write" }, "repository_selection": "all" }),
        )
    }

    /// Whether `authorization` carries the fake's token or an unexpired installation token.
    pub fn token_valid(&self, authorization: Option<&str>, fixed: &str) -> bool {
        let Some(token) = authorization.and_then(|a| a.strip_prefix("Bearer ")) else {
            return false;
        };
        if token == fixed {
            return true;
        }
        let now = chrono::Utc::now().timestamp();
        self.app.as_ref().is_some_and(|app| {
            app.tokens
                .iter()
                .any(|t| t.token == token && t.expires_at > now)
        })
    }

    /// Why `authorization` is not a valid App JWT (RS256 under the App's key, issued by
    /// the App's id, unexpired, at most 10 minutes long), if it is not.
    pub fn jwt_problem(&self, authorization: Option<&str>) -> Option<String> {
        let Some(app) = &self.app else {
            return Some("the fake has no App".into());
        };
        let Some(token) = authorization.and_then(|a| a.strip_prefix("Bearer ")) else {
            return Some("no bearer token".into());
        };
        let key = match jsonwebtoken::DecodingKey::from_rsa_pem(&app.public_key_pem) {
            Ok(k) => k,
            Err(e) => return Some(format!("the fake's public key: {e}")),
        };
        let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::RS256);
        validation.set_required_spec_claims(&["exp"]);
        // GitHub takes the App id as a number or a string.
        #[derive(serde::Deserialize)]
        struct Claims {
            iat: i64,
            exp: i64,
            iss: Value,
        }
        match jsonwebtoken::decode::<Claims>(token, &key, &validation) {
            Ok(data) if data.claims.exp - data.claims.iat > 600 => {
                Some("the JWT lives longer than 10 minutes".into())
            }
            Ok(data)
                if data.claims.iss != json!(app.id)
                    && data.claims.iss != json!(app.id.to_string()) =>
            {
                Some(format!(
                    "the JWT's issuer {} is not the App {}",
                    data.claims.iss, app.id
                ))
            }
            Ok(_) => None,
            Err(e) => Some(format!("the JWT does not verify: {e}")),
        }
    }

    fn user_json(&self, login: &str, kind: &str) -> Value {
        json!({ "login": login, "id": 1, "type": kind, "site_admin": false })
    }

    fn get_user(&self) -> Answer {
        if self.user_endpoint_forbidden {
            return Answer::message(403, "Resource not accessible by integration");
        }
        Answer::json(200, self.user_json(&self.login, &self.login_type))
    }

    fn comment_json(&self, c: &FakeComment) -> Value {
        json!({
            "id": c.id,
            "node_id": format!("IC_{}", c.id),
            "body": c.body,
            "user": self.user_json(&c.author, &c.author_type),
            "html_url": format!("https://github.com/{}/pull/{}#issuecomment-{}", self.repo, c.issue, c.id),
            "created_at": "2024-01-01T00:00:00Z",
            "updated_at": "2024-01-01T00:00:00Z",
            "author_association": "MEMBER",
        })
    }

    fn list_comments(&self, issue: u64, query: &[(String, String)]) -> Answer {
        let all: Vec<Value> = self
            .comments_on(issue)
            .into_iter()
            .map(|c| self.comment_json(c))
            .collect();
        self.page(
            all,
            query,
            &format!("repos/{}/issues/{issue}/comments", self.repo),
        )
    }

    fn create_comment(&mut self, issue: u64, body: &Value) -> Answer {
        let text = body["body"].as_str().unwrap_or_default().to_string();
        let (login, kind) = (self.login.clone(), self.login_type.clone());
        let id = self.add_comment(issue, &login, &kind, &text);
        let created = self
            .comments
            .iter()
            .find(|c| c.id == id)
            .map(|c| self.comment_json(c));
        Answer::json(201, created.unwrap_or(Value::Null))
    }

    fn update_comment(&mut self, id: u64, body: &Value) -> Answer {
        let login = self.login.clone();
        let Some(comment) = self.comments.iter_mut().find(|c| c.id == id) else {
            return Answer::message(404, "Not Found");
        };
        if comment.author != login {
            // GitHub lets maintainers edit others' comments; itergate must never do that.
            self.violations
                .push(format!("edited comment {id} of {}", comment.author));
        }
        comment.body = body["body"].as_str().unwrap_or_default().to_string();
        let comment = comment.clone();
        Answer::json(200, self.comment_json(&comment))
    }

    fn delete_comment(&mut self, id: u64) -> Answer {
        let Some(at) = self.comments.iter().position(|c| c.id == id) else {
            return Answer::message(404, "Not Found");
        };
        if self.comments[at].author != self.login {
            self.violations.push(format!(
                "deleted comment {id} of {}",
                self.comments[at].author
            ));
        }
        self.comments.remove(at);
        Answer::empty(204)
    }

    fn react(&mut self, comment_id: u64, body: &Value) -> Answer {
        if !self.comments.iter().any(|c| c.id == comment_id) {
            return Answer::message(404, "Not Found");
        }
        let content = body["content"].as_str().unwrap_or_default().to_string();
        let user = self.login.clone();
        let existed = self
            .reactions
            .iter()
            .any(|r| r.comment_id == comment_id && r.content == content && r.user == user);
        if !existed {
            self.reactions.push(FakeReaction {
                comment_id,
                content: content.clone(),
                user,
            });
        }
        let id = self.next_id();
        Answer::json(
            if existed { 200 } else { 201 },
            json!({ "id": id, "content": content }),
        )
    }

    fn label_json(label: &FakeLabel) -> Value {
        json!({ "name": label.name, "color": label.color, "description": label.description, "default": false })
    }

    fn create_label(&mut self, body: &Value) -> Answer {
        let name = body["name"].as_str().unwrap_or_default().to_string();
        if self.labels.contains_key(&name.to_lowercase()) {
            return Answer::json(
                422,
                json!({
                    "message": "Validation Failed",
                    "errors": [{ "resource": "Label", "code": "already_exists", "field": "name" }],
                }),
            );
        }
        let label = FakeLabel {
            name: name.clone(),
            color: body["color"].as_str().unwrap_or("ededed").to_string(),
            description: body["description"].as_str().map(String::from),
        };
        let answer = Self::label_json(&label);
        self.labels.insert(name.to_lowercase(), label);
        Answer::json(201, answer)
    }

    fn add_labels(&mut self, issue: u64, body: &Value) -> Answer {
        let names: Vec<String> = body["labels"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        for name in names {
            // Like GitHub: a missing label is created in the default colour.
            self.labels
                .entry(name.to_lowercase())
                .or_insert_with(|| FakeLabel {
                    name: name.clone(),
                    color: "ededed".into(),
                    description: None,
                });
            let on = self.issue_labels.entry(issue).or_default();
            if !on.iter().any(|l| l.eq_ignore_ascii_case(&name)) {
                on.push(name.clone());
                let actor = self.login.clone();
                self.issue_events.push(FakeIssueEvent {
                    issue,
                    event: "labeled".into(),
                    label: name,
                    actor,
                });
            }
        }
        let on: Vec<Value> = self
            .labels_on(issue)
            .iter()
            .filter_map(|n| self.labels.get(&n.to_lowercase()).map(Self::label_json))
            .collect();
        Answer::json(200, Value::Array(on))
    }

    fn remove_label(&mut self, issue: u64, name: &str) -> Answer {
        let on = self.issue_labels.entry(issue).or_default();
        let before = on.len();
        on.retain(|l| !l.eq_ignore_ascii_case(name));
        if on.len() == before {
            return Answer::message(404, "Label does not exist");
        }
        let actor = self.login.clone();
        self.issue_events.push(FakeIssueEvent {
            issue,
            event: "unlabeled".into(),
            label: name.to_string(),
            actor,
        });
        Answer::json(200, json!([]))
    }

    /// A person (not the token's login) adds `name` to `issue`, as from GitHub's web page.
    pub fn label_by(&mut self, issue: u64, name: &str, actor: &str) {
        let on = self.issue_labels.entry(issue).or_default();
        if !on.iter().any(|l| l.eq_ignore_ascii_case(name)) {
            on.push(name.to_string());
        }
        self.issue_events.push(FakeIssueEvent {
            issue,
            event: "labeled".into(),
            label: name.to_string(),
            actor: actor.to_string(),
        });
    }

    fn list_issue_events(&self, issue: u64, query: &[(String, String)]) -> Answer {
        let events: Vec<Value> = self
            .issue_events
            .iter()
            .enumerate()
            .filter(|(_, e)| e.issue == issue)
            .map(|(i, e)| {
                json!({
                    "id": i + 1, "event": e.event,
                    "actor": self.user_json(&e.actor, "User"),
                    "label": { "name": e.label, "color": "ededed" },
                })
            })
            .collect();
        self.page(
            events,
            query,
            &format!("repos/{}/issues/{issue}/events", self.repo),
        )
    }

    fn permission(&self, user: &str) -> Answer {
        let (permission, role) = self
            .permissions
            .get(&user.to_lowercase())
            .cloned()
            .unwrap_or_else(|| ("read".into(), "read".into()));
        Answer::json(
            200,
            json!({ "permission": permission, "role_name": role, "user": self.user_json(user, "User") }),
        )
    }

    fn get_pull(&self, number: u64) -> Answer {
        let Some(p) = self.pulls.get(&number) else {
            return Answer::message(404, "Not Found");
        };
        let branch = |sha: &str, r: &str, repo: &str| json!({ "sha": sha, "ref": r, "label": r, "repo": { "full_name": repo } });
        let base_branch = |sha: &str, r: &str, repo: &str, default: &str| json!({ "sha": sha, "ref": r, "label": r, "repo": { "id": REPO_ID, "full_name": repo, "default_branch": default } });
        Answer::json(
            200,
            json!({
                "number": p.number, "title": p.title, "body": null,
                "state": if p.closed { "closed" } else { "open" }, "draft": false,
                "user": self.user_json(&p.author, "User"),
                "head": branch(&p.head_sha, &p.head_ref, &p.head_repo),
                "base": base_branch(&p.base_sha, &p.base_ref, &self.repo, &self.default_branch),
            }),
        )
    }

    fn list_commits(&self, number: u64, query: &[(String, String)]) -> Answer {
        let Some(p) = self.pulls.get(&number) else {
            return Answer::message(404, "Not Found");
        };
        let mut parent = p.base_sha.clone();
        let mut all = Vec::new();
        for (sha, message) in &p.commits {
            all.push(json!({ "sha": sha, "commit": { "message": message }, "parents": [{ "sha": parent }] }));
            parent = sha.clone();
        }
        self.page(
            all,
            query,
            &format!("repos/{}/pulls/{number}/commits", self.repo),
        )
    }

    fn apply_output(run: &mut FakeCheckRun, body: &Value) {
        if let Some(output) = body.get("output") {
            let annotations = output["annotations"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            if !annotations.is_empty() {
                run.annotation_batches.push(annotations.len());
                run.annotations.extend(annotations);
            }
            for key in ["title", "summary", "text"] {
                if let Some(v) = output.get(key) {
                    run.output[key] = v.clone();
                }
            }
        }
        if let Some(status) = body["status"].as_str() {
            run.status = status.into();
        }
        if let Some(conclusion) = body["conclusion"].as_str() {
            run.conclusion = Some(conclusion.into());
            run.status = "completed".into();
        }
        if let Some(name) = body["name"].as_str() {
            run.name = name.into();
        }
        if let Some(external_id) = body["external_id"].as_str() {
            run.external_id = Some(external_id.into());
        }
    }

    fn check_run_json(run: &FakeCheckRun) -> Value {
        json!({
            "id": run.id, "name": run.name, "head_sha": run.head_sha, "status": run.status,
            "conclusion": run.conclusion, "check_suite": { "id": run.suite_id },
            "external_id": run.external_id,
            "app": { "id": run.app_id },
            "output": {
                "title": run.output["title"], "summary": run.output["summary"], "text": run.output["text"],
                "annotations_count": run.annotations.len(),
            },
        })
    }

    fn create_check_run(&mut self, body: &Value) -> Answer {
        let mut run = FakeCheckRun {
            id: self.next_id(),
            name: String::new(),
            head_sha: body["head_sha"].as_str().unwrap_or_default().into(),
            status: "queued".into(),
            conclusion: None,
            suite_id: 77,
            external_id: None,
            output: json!({}),
            annotations: Vec::new(),
            annotation_batches: Vec::new(),
            app_id: self.app.as_ref().map_or(ACTIONS_APP_ID, |app| app.id),
        };
        Self::apply_output(&mut run, body);
        let answer = Self::check_run_json(&run);
        self.check_runs.push(run);
        Answer::json(201, answer)
    }

    fn update_check_run(&mut self, id: u64, body: &Value) -> Answer {
        let Some(run) = self.check_runs.iter_mut().find(|r| r.id == id) else {
            return Answer::message(404, "Not Found");
        };
        Self::apply_output(run, body);
        Answer::json(200, Self::check_run_json(run))
    }

    fn list_check_runs(&self, git_ref: &str, query: &[(String, String)]) -> Answer {
        let runs: Vec<Value> = self
            .check_runs
            .iter()
            .filter(|r| r.head_sha == git_ref)
            .map(Self::check_run_json)
            .collect();
        let mut answer = self.page(
            runs,
            query,
            &format!("repos/{}/commits/{git_ref}/check-runs", self.repo),
        );
        answer.body = json!({ "total_count": self.check_runs.len(), "check_runs": answer.body });
        answer
    }

    fn list_artifacts(&self, run_id: u64, query: &[(String, String)]) -> Answer {
        let name = query
            .iter()
            .find(|(k, _)| k == "name")
            .map(|(_, v)| v.clone());
        let all: Vec<Value> = self
            .artifacts
            .iter()
            .filter(|a| a.run_id == run_id && name.as_ref().is_none_or(|n| *n == a.name))
            .map(|a| json!({ "id": a.id, "name": a.name, "expired": a.expired, "size_in_bytes": a.zip.len() }))
            .collect();
        let mut answer = self.page(
            all,
            query,
            &format!("repos/{}/actions/runs/{run_id}/artifacts", self.repo),
        );
        answer.body = json!({ "total_count": self.artifacts.len(), "artifacts": answer.body });
        answer
    }

    fn download_artifact(&self, id: u64) -> Answer {
        if !self.artifacts.iter().any(|a| a.id == id && !a.expired) {
            return Answer::message(410, "Gone");
        }
        let mut answer = Answer::empty(302);
        answer
            .headers
            .push(("location".into(), format!("{}/_blob/{id}", self.base_url)));
        answer
    }

    /// One page of `all`, with a `Link` header naming the next page as GitHub does.
    fn page(&self, all: Vec<Value>, query: &[(String, String)], path: &str) -> Answer {
        let get = |k: &str, d: usize| {
            query
                .iter()
                .find(|(n, _)| n == k)
                .and_then(|(_, v)| v.parse().ok())
                .unwrap_or(d)
        };
        let per_page = get("per_page", 30).clamp(1, 100);
        let page = get("page", 1).max(1);
        let items: Vec<Value> = all
            .iter()
            .skip((page - 1) * per_page)
            .take(per_page)
            .cloned()
            .collect();
        let mut answer = Answer::json(200, Value::Array(items));
        if page * per_page < all.len() {
            let next = format!(
                "<{}/{path}?per_page={per_page}&page={}>; rel=\"next\"",
                self.base_url,
                page + 1
            );
            answer.headers.push(("link".into(), next));
        }
        answer
    }
}

fn param<'p>(params: &'p BTreeMap<String, String>, name: &str) -> &'p str {
    params.get(name).map(String::as_str).unwrap_or_default()
}
