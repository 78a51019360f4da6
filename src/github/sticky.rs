//! The one sticky PR comment: what the bot shows on a pull request and where it keeps the
//! PR's history between runs.
//!
//! Layout: the hidden marker [`MARKER`] on the first line, the visible markdown, and last the
//! hidden state `<!-- itergate:state v1 BASE64(JSON) -->`. Trust rules:
//! - only a comment authored by the bot's own login and starting with the marker can be the
//!   sticky comment ([`find_sticky`]); state anywhere else is never read. Other workflows of
//!   the repository post as the same login, so among several such comments the one whose
//!   state parses and that itergate wrote most often (its `revision`) is the sticky one;
//! - a state of a newer version is never overwritten ([`StateError::NewerVersion`]); an
//!   unreadable one is replaced only after saying so ([`Loaded::problem`]);
//! - the state is the *last* state comment of that body and is base64, so nothing in the
//!   visible text — which may quote untrusted text — can end it early or replace it;
//! - the visible text cannot contain the marker keywords (they are broken on render), and
//!   untrusted text inside it goes through [`escape_markdown_inline`] or [`fence`].
//!
//! GitHub refuses comments of 65,536 characters or more; [`render_body`] compacts the state
//! to fit (`fit`: the oldest records' issues go first, then feedback is shortened, then
//! the oldest records go while the kept ones carry their budget figures) and cuts the
//! visible text without leaving a fence or a `<details>` open.
//!
//! A lost answer can leave two sticky comments; [`upsert`] heals that: it writes the one
//! [`find_sticky`] chooses and deletes the other candidates whose state it can read.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use super::forge::{Forge, ForgeError};
use super::types::{Comment, CommentId, PrNumber, RepoName};
use crate::config::Permission;
use crate::history::History;
use crate::model::Feedback;
use crate::model::IterationRecord;

pub use crate::markup::{escape_markdown_inline, fence, fence_with_info, neutralise_html_comments};

/// First line of the sticky comment.
pub const MARKER: &str = "<!-- itergate:sticky -->";
const STATE_OPEN: &str = "<!-- itergate:state ";
const STATE_CLOSE: &str = " -->";
const STATE_VERSION: &str = "v1";
/// The number in [`STATE_VERSION`].
const STATE_VERSION_NUMBER: u32 = 1;
/// The largest body written, in bytes (so in characters too): GitHub's limit is 65,536.
pub const MAX_BODY_BYTES: usize = 65_535;
/// Room always kept for the state, so a huge visible text is cut rather than the history.
const STATE_RESERVE_BYTES: usize = 16 * 1024;

mod fit;

pub use fit::Carried;
use fit::{compact_to_fit, fit_visible};

/// How much history was compacted away so far.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Compaction {
    /// Records whose issues and triggers were dropped.
    pub stripped_records: u32,
    /// Oldest records dropped entirely.
    pub dropped_records: u32,
    /// The dropped records' budget figures, now part of the oldest record kept.
    #[serde(skip_serializing_if = "Carried::is_empty")]
    pub carried: Carried,
}

/// The PR's state kept in the sticky comment between runs.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct StickyState {
    /// The PR's iterations, oldest first.
    pub records: History,
    /// What people said: acceptance, escalation, budget override, restart point after
    /// `/iterate adjust`, feedback not yet answered by an iteration.
    pub feedback: Feedback,
    /// The newest comment whose commands were applied: commands of comments up to this id are
    /// not applied again when a job re-runs.
    pub last_command_comment: Option<CommentId>,
    /// The iteration at which the escalation comment mentioning reviewers was posted.
    pub escalation_notified_at: Option<u32>,
    /// `CONTEXT_GAP_REPORT` rounds answered for the current iteration (at most
    /// `context.max_rounds`); a new iteration starts at 0.
    pub context_rounds: u32,
    /// Context rounds used per iteration, and whether the agent was ready at round 0
    /// (for analytics).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub context_log: Vec<crate::context::ContextUse>,
    pub compaction: Compaction,
    /// How many times itergate wrote this state: among several comments of the bot's login
    /// that carry the marker, the one written most often is the sticky one.
    pub revision: u64,
    /// The permission of whoever gave `/iterate accept`: a review by someone with less
    /// cannot take the acceptance back.
    pub accepted_with: Option<Permission>,
    /// Why an earlier state could not be read and was started afresh, shown in the comment.
    pub lost_state: Option<String>,
    /// Revisions handed to the repository's agent (`github.handoff`), and the last one.
    pub handoffs: u32,
    pub last_handoff: Option<LastHandoff>,
}

/// The head whose revision was last handed to the agent, and when.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LastHandoff {
    pub head: String,
    pub at: DateTime<Utc>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StateError {
    #[error("the comment does not start with the itergate marker")]
    NoMarker,
    #[error("the comment has no itergate state at its end")]
    NoState,
    #[error("state version `{0}` is not supported (this itergate reads v1)")]
    UnsupportedVersion(String),
    #[error("the state was written by a newer itergate (state `{0}`; this itergate reads v1)")]
    NewerVersion(String),
    /// The App signs a newer version with its version; this one names a version it was not
    /// signed with (an edit by hand).
    #[error("the state names version `{0}`, which its signature does not cover: it was edited")]
    ForgedVersion(String),
    #[error("the state is not valid base64: {0}")]
    Base64(String),
    #[error("the state is not valid: {0}")]
    Json(String),
    /// The App signs its state; this one carries no signature.
    #[error("the state carries no signature: it was not written by this App")]
    Unsigned,
    /// The App signs its state; the signature does not match (an edit by hand).
    #[error("the state's signature does not match: the comment was edited by someone other than itergate")]
    Forged,
}

/// The key of the state's MAC: only the App holds it (it is derived from the App's private
/// key, or from `ITERGATE_STATE_SECRET`), so an edit of the sticky comment by anyone with
/// write access is detected. The Actions mode has no such secret and writes no MAC. It
/// signs with its first key and verifies with any: during a rotation the previous key's
/// states still verify, and are signed with the new one when next written.
#[derive(Clone)]
pub struct StateKey(Vec<[u8; 32]>);

impl std::fmt::Debug for StateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StateKey([redacted])")
    }
}

const MAC_FIELD: &str = " mac=";
/// `" mac="` and 64 hex digits.
const MAC_LEN: usize = MAC_FIELD.len() + 64;

/// The PKCS#1 DER of an RSA private key in PEM, PKCS#1 (`RSA PRIVATE KEY`) or PKCS#8
/// (`PRIVATE KEY`), re-encoded from its fields; `None` when it is neither.
fn rsa_pkcs1_der(pem: &[u8]) -> Option<Vec<u8>> {
    use pkcs1::der::{Decode, Encode};
    let text = String::from_utf8_lossy(pem);
    let (label, der) = pkcs8::der::pem::decode_vec(text.trim().as_bytes()).ok()?;
    let inner = match label {
        "RSA PRIVATE KEY" => der,
        "PRIVATE KEY" => {
            let info = pkcs8::PrivateKeyInfo::from_der(&der).ok()?;
            (info.algorithm.oid == pkcs1::ALGORITHM_OID).then(|| info.private_key.to_vec())?
        }
        _ => return None,
    };
    pkcs1::RsaPrivateKey::from_der(&inner).ok()?.to_der().ok()
}

fn hmac(key: &[u8], data: &[u8]) -> [u8; 32] {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC takes any key");
    mac.update(data);
    mac.finalize().into_bytes().into()
}

impl StateKey {
    /// The key derived from `secret` as given.
    pub fn derive(secret: &[u8]) -> StateKey {
        StateKey(vec![hmac(secret, b"itergate sticky state mac v1")])
    }

    /// The key of an App private key (PEM): derived from the RSA key itself, not the
    /// file's bytes, so the same key re-encoded (PKCS#1 or PKCS#8, other line ends) keeps
    /// every state valid. A PEM that is not an RSA key is taken as it is.
    pub fn from_private_key(pem: &[u8]) -> StateKey {
        match rsa_pkcs1_der(pem) {
            Some(der) => StateKey::derive(&der),
            None => StateKey::derive(pem),
        }
    }

    /// This key, also verifying what `previous` signed (a rotation's old key).
    pub fn accepting(mut self, previous: StateKey) -> StateKey {
        for key in previous.0 {
            if !self.0.contains(&key) {
                self.0.push(key);
            }
        }
        self
    }

    /// The key of one pull request's state: a state copied from another pull request (or
    /// another repository) does not verify here. Bound to the repository's id when it is
    /// known (a rename or transfer keeps it); a state bound to its name still verifies.
    pub fn for_pull(&self, repo: &RepoName, repo_id: Option<u64>, pr: PrNumber) -> StateKey {
        let scoped =
            |scope: String| StateKey(self.0.iter().map(|k| hmac(k, scope.as_bytes())).collect());
        let by_name = scoped(format!("pull {}#{}", repo.to_string().to_lowercase(), pr.0));
        match repo_id {
            Some(id) => scoped(format!("pull repository {id}#{}", pr.0)).accepting(by_name),
            None => by_name,
        }
    }

    fn sign(&self, payload: &str) -> String {
        let key = self.0.first().expect("a state key has one key at least");
        hmac(key, payload.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    fn verify(&self, payload: &str, hex: &str) -> bool {
        let Some(expected) = decode_hex(hex) else {
            return false;
        };
        self.0.iter().any(|key| {
            let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC takes any key");
            mac.update(payload.as_bytes());
            mac.verify_slice(&expected).is_ok()
        })
    }
}

fn decode_hex(hex: &str) -> Option<Vec<u8>> {
    if hex.len() % 2 != 0 {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect()
}

/// The sticky comment among `comments`. Only comments authored by `bot_login` that start
/// with the marker and hold a state are candidates; comments by anyone else are never
/// trusted, whatever they contain. Every workflow of a repository that uses `GITHUB_TOKEN`
/// comments as the same bot, so a candidate may not be itergate's:
/// - a comment with the marker but no state at all is not one itergate wrote (it always
///   writes a state), so it is neither read nor overwritten;
/// - among candidates whose state parses, the one chosen is the one itergate wrote most often
///   (highest `revision`; on a tie the oldest, the one itergate created first);
/// - only when no state parses is the first candidate chosen, so that its problem (an edit,
///   a newer version) is reported, and a newer version's state is left alone.
///
/// In Actions mode any workflow with the token could still write a state that parses; only
/// the App's MAC can tell itergate's own state from such a copy.
pub fn find_sticky<'c>(comments: &'c [Comment], bot_login: &str) -> Option<&'c Comment> {
    let mut candidates = comments
        .iter()
        .filter(|c| {
            c.author.is(bot_login)
                && c.body.trim_start().starts_with(MARKER)
                && c.body.contains(STATE_OPEN)
        })
        .peekable();
    let first = *candidates.peek()?;
    let mut best: Option<(&Comment, u64)> = None;
    for comment in candidates {
        if let Ok(state) = parse_state(&comment.body) {
            if best.is_none_or(|(_, revision)| state.revision > revision) {
                best = Some((comment, state.revision));
            }
        }
    }
    Some(best.map_or(first, |(comment, _)| comment))
}

/// [`find_sticky`]; with a `key` (the App), only a comment whose state verifies can be the
/// sticky one (a decoy or an edited copy never is), unless none does, when the first
/// candidate is chosen so that its problem is reported.
pub fn find_sticky_keyed<'c>(
    comments: &'c [Comment],
    bot_login: &str,
    key: Option<&StateKey>,
) -> Option<&'c Comment> {
    let Some(key) = key else {
        return find_sticky(comments, bot_login);
    };
    let verified: Vec<Comment> = comments
        .iter()
        .filter(|c| c.author.is(bot_login) && verify_state(&c.body, key).is_ok())
        .cloned()
        .collect();
    match find_sticky(&verified, bot_login) {
        Some(chosen) => comments.iter().find(|c| c.id == chosen.id),
        None => find_sticky(comments, bot_login),
    }
}

/// Reads the state of a sticky comment's body.
pub fn parse_state(body: &str) -> Result<StickyState, StateError> {
    if !body.trim_start().starts_with(MARKER) {
        return Err(StateError::NoMarker);
    }
    let inner = body
        .trim_end()
        .strip_suffix(STATE_CLOSE)
        .ok_or(StateError::NoState)?;
    let start = inner.rfind(STATE_OPEN).ok_or(StateError::NoState)?;
    let rest = &inner[start + STATE_OPEN.len()..];
    let (version, payload) = rest.split_once(' ').ok_or(StateError::NoState)?;
    let payload = payload.split_once(MAC_FIELD).map_or(payload, |(p, _)| p);
    if version != STATE_VERSION {
        let shown: String = version.chars().take(20).collect();
        let newer = version
            .strip_prefix('v')
            .and_then(|n| n.parse::<u64>().ok())
            .is_some_and(|n| n > u64::from(STATE_VERSION_NUMBER));
        return Err(if newer {
            StateError::NewerVersion(shown)
        } else {
            StateError::UnsupportedVersion(shown)
        });
    }
    let json = STANDARD
        .decode(payload.trim())
        .map_err(|e| StateError::Base64(e.to_string()))?;
    serde_json::from_slice(&json).map_err(|e| StateError::Json(e.to_string()))
}

/// The state found in `comments`, with the sticky comment it came from.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Loaded {
    pub comment: Option<CommentId>,
    /// Why the sticky comment's state could not be read (a fresh state is used instead).
    pub problem: Option<StateError>,
    pub state: StickyState,
}

/// Finds the bot's sticky comment and reads its state; no comment means a fresh state, and
/// an unreadable state is reported in `problem` (and logged) and replaced by a fresh one
/// that remembers, in `lost_state`, why. Callers must not write over a
/// [`StateError::NewerVersion`].
pub fn load_state(comments: &[Comment], bot_login: &str) -> Loaded {
    load_state_keyed(comments, bot_login, None)
}

/// [`load_state`]; with a `key` (the App), a state whose MAC does not verify is not
/// believed: it is reported like an unreadable one and the history starts afresh.
pub fn load_state_keyed(comments: &[Comment], bot_login: &str, key: Option<&StateKey>) -> Loaded {
    let Some(comment) = find_sticky_keyed(comments, bot_login, key) else {
        return Loaded::default();
    };
    let parsed = parse_state(&comment.body)
        .map_err(|problem| match (problem, key) {
            // A state that names a newer version is believed only when its signature covers
            // that version: a hand edit of `v1` to `v2` must not freeze the pull request.
            (StateError::NewerVersion(version), Some(key))
                if verify_newer_state(&comment.body, key).is_err() =>
            {
                StateError::ForgedVersion(version)
            }
            (problem, _) => problem,
        })
        .and_then(|state| match key {
            Some(key) => verify_state(&comment.body, key).map(|()| state),
            None => Ok(state),
        });
    match parsed {
        Ok(state) => Loaded {
            comment: Some(comment.id),
            problem: None,
            state,
        },
        Err(problem) => {
            tracing::warn!(comment = comment.id.0, %problem, "unreadable itergate state");
            let state = StickyState {
                lost_state: Some(problem.to_string()),
                ..StickyState::default()
            };
            Loaded {
                comment: Some(comment.id),
                problem: Some(problem),
                state,
            }
        }
    }
}

/// The whole comment body: marker, `visible_markdown`, state. The body is at most
/// [`MAX_BODY_BYTES`]: the state is compacted to fit, and a visible text so long that it
/// leaves no room is cut.
pub fn render_body(visible_markdown: &str, state: &StickyState) -> String {
    render_body_keyed(visible_markdown, state, None)
}

/// [`render_body`], the state signed with `key` when there is one (the App).
pub fn render_body_keyed(
    visible_markdown: &str,
    state: &StickyState,
    key: Option<&StateKey>,
) -> String {
    let visible = fit_visible(&break_markers(visible_markdown));
    let head = format!("{MARKER}\n{visible}\n\n");
    let mac_room = if key.is_some() { MAC_LEN } else { 0 };
    let room = MAX_BODY_BYTES.saturating_sub(head.len() + 1 + mac_room);
    let mut state_line = compact_to_fit(state, room);
    if let Some(key) = key {
        if let Some(payload) = state_line
            .strip_suffix(STATE_CLOSE)
            .and_then(|l| l.rsplit_once(' '))
            .map(|(_, payload)| payload.to_string())
        {
            let at = state_line.len() - STATE_CLOSE.len();
            state_line.insert_str(at, &format!("{MAC_FIELD}{}", key.sign(&payload)));
        }
    }
    format!("{head}{state_line}\n")
}

/// Checks the MAC of the state at the end of `body` under `key`.
pub fn verify_state(body: &str, key: &StateKey) -> Result<(), StateError> {
    let inner = body
        .trim_end()
        .strip_suffix(STATE_CLOSE)
        .ok_or(StateError::NoState)?;
    let start = inner.rfind(STATE_OPEN).ok_or(StateError::NoState)?;
    let rest = &inner[start + STATE_OPEN.len()..];
    let (_, payload) = rest.split_once(' ').ok_or(StateError::NoState)?;
    let (payload, mac) = payload.split_once(MAC_FIELD).ok_or(StateError::Unsigned)?;
    if key.verify(payload, mac.trim()) {
        Ok(())
    } else {
        Err(StateError::Forged)
    }
}

/// Whether the App signed a state of a version this itergate does not read. From `v2` on,
/// a state's MAC covers its version with its payload (`v2 BASE64`); a `v1` state's covers
/// only the payload, so a `v1` state relabelled by hand never verifies here.
fn verify_newer_state(body: &str, key: &StateKey) -> Result<(), StateError> {
    let inner = body
        .trim_end()
        .strip_suffix(STATE_CLOSE)
        .ok_or(StateError::NoState)?;
    let start = inner.rfind(STATE_OPEN).ok_or(StateError::NoState)?;
    let rest = &inner[start + STATE_OPEN.len()..];
    let (signed, mac) = rest.split_once(MAC_FIELD).ok_or(StateError::Unsigned)?;
    if key.verify(signed.trim_end(), mac.trim()) {
        Ok(())
    } else {
        Err(StateError::Forged)
    }
}

/// Creates the sticky comment or edits it in place (no edit when the body is unchanged).
///
/// Heals duplicates: when several of the bot's comments carry the marker (a create whose
/// answer was lost and that was sent again, or two jobs at once), the one [`find_sticky`]
/// chooses is written and every other whose state parses is deleted, so readers never see
/// two contradicting comments. A candidate whose state cannot be read (a newer version, an
/// edit) is left alone. A failed delete is logged, not an error: the next run retries it.
pub async fn upsert(
    forge: &dyn Forge,
    repo: &RepoName,
    pr: PrNumber,
    comments: &[Comment],
    bot_login: &str,
    body: &str,
    key: Option<&StateKey>,
) -> Result<CommentId, ForgeError> {
    let Some(keeper) = find_sticky_keyed(comments, bot_login, key) else {
        return Ok(forge.create_comment(repo, pr, body).await?.id);
    };
    let id = if keeper.body == body {
        keeper.id
    } else {
        forge.update_comment(repo, keeper.id, body).await?.id
    };
    let duplicates = comments.iter().filter(|c| {
        c.id != keeper.id
            && c.author.is(bot_login)
            && c.body.trim_start().starts_with(MARKER)
            && parse_state(&c.body).is_ok()
            // With a key, only a state of ours is a duplicate: nothing else is deleted.
            && key.is_none_or(|key| verify_state(&c.body, key).is_ok())
    });
    for duplicate in duplicates {
        match forge.delete_comment(repo, duplicate.id).await {
            Ok(()) => tracing::info!(
                kept = keeper.id.0,
                deleted = duplicate.id.0,
                "deleted a duplicate sticky comment"
            ),
            Err(error) => tracing::warn!(
                duplicate = duplicate.id.0,
                %error,
                "could not delete a duplicate sticky comment"
            ),
        }
    }
    Ok(id)
}

/// Breaks the marker keywords so visible text can never carry a marker or a state.
fn break_markers(text: &str) -> String {
    text.replace("itergate:sticky", "itergate\u{200B}:sticky")
        .replace("itergate:state", "itergate\u{200B}:state")
}

fn encode(state: &StickyState) -> String {
    // Serializing plain data (strings, numbers, maps with string keys) cannot fail.
    let json = serde_json::to_vec(state).unwrap_or_default();
    format!(
        "{STATE_OPEN}{STATE_VERSION} {}{STATE_CLOSE}",
        STANDARD.encode(json)
    )
}

fn strip(record: &mut IterationRecord) {
    record.issues.clear();
    record.triggers.clear();
}
