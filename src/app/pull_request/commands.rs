//! `/iterate` commands in a PR comment: who may give them, and how much the bot says back.
//! A comment without a command that holds a `CONTEXT_GAP_REPORT` is answered by
//! [`super::context`].
//!
//! - The commenter's permission is read once per comment. State-changing commands need
//!   `github.permission`; those that loosen the PR's rules (`accept`, `adjust`, `budget`)
//!   are also refused from the PR's own author unless `github.author_can_decide`.
//! - At most [`MAX_COMMANDS_PER_COMMENT`] commands of a comment are read, and a comment gets
//!   at most one reply: errors, refusals, `help` and `status` are collected into it
//!   ([`crate::comment::command_reply`]). Errors echo what was typed only escaped and cut.
//! - Replies to someone without the permission are rate-limited per pull request: at most one
//!   per [`UNPRIVILEGED_REPLY_INTERVAL_MINUTES`] for each such user, read from the replies
//!   already there, so that nobody can make the bot spam a pull request's watchers or use up
//!   the token's limits; their commands write nothing else (no state, no check run).

use chrono::Duration;

use super::{Handler, HandlerError, Outcome};
use crate::comment::{command_reply, CommandReply};
use crate::config::Permission;
use crate::github::commands::{self, Command, MAX_COMMANDS_PER_COMMENT};
use crate::github::events::CommentEvent;
use crate::github::forge::ForgeError;
use crate::github::sticky::{self, StickyState};
use crate::github::types::{Comment, Reaction};

/// The shortest time between two replies to the same user without the permission.
pub const UNPRIVILEGED_REPLY_INTERVAL_MINUTES: i64 = 30;

/// People without the permission answered per pull request and interval, at most: the
/// state keeps one entry per person answered.
pub const MAX_UNPRIVILEGED_REPLIES: usize = 20;

/// Why a rate-limited reply is not given now.
pub(super) enum NoReply {
    /// `login` was answered less than [`UNPRIVILEGED_REPLY_INTERVAL_MINUTES`] ago.
    Recently,
    /// [`MAX_UNPRIVILEGED_REPLIES`] people were answered in that time: hundreds of accounts
    /// would otherwise grow the state without bound.
    Full,
}

/// Takes a rate-limited reply to `login` at `now`: the line the reply carries to say whom it
/// answered and when, or why there is none. The replies already on the pull request are the
/// record (no state is written for a person without the permission): a bot comment's
/// `<!-- itergate:to LOGIN TIME -->` line, which nobody but the bot can write there.
pub(super) fn take_reply(
    comments: &[Comment],
    bot_login: &str,
    login: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<String, NoReply> {
    let key = login.to_ascii_lowercase();
    let interval = Duration::minutes(UNPRIVILEGED_REPLY_INTERVAL_MINUTES);
    let mut answered = std::collections::BTreeSet::new();
    for comment in comments.iter().filter(|c| c.author.is(bot_login)) {
        for line in comment.body.lines().take(3) {
            let Some(rest) = line
                .trim()
                .strip_prefix(ADDRESSED_OPEN)
                .and_then(|r| r.strip_suffix(" -->"))
            else {
                continue;
            };
            let Some((who, at)) = rest.split_once(' ') else {
                continue;
            };
            // A time in the future is no recent reply (a writer could date one in 2099 to
            // silence every reader); a minute of clock skew is allowed.
            let recent = chrono::DateTime::parse_from_rfc3339(at).is_ok_and(|at| {
                let elapsed = now.signed_duration_since(at);
                elapsed < interval && elapsed > -Duration::minutes(1)
            });
            if recent {
                answered.insert(who.to_ascii_lowercase());
            }
        }
    }
    if answered.contains(&key) {
        return Err(NoReply::Recently);
    }
    if answered.len() >= MAX_UNPRIVILEGED_REPLIES {
        return Err(NoReply::Full);
    }
    Ok(format!(
        "{ADDRESSED_OPEN}{key} {} -->",
        now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    ))
}

/// How a rate-limited reply says whom it answered.
const ADDRESSED_OPEN: &str = "<!-- itergate:to ";

/// Who wrote the comment, as far as the commands care.
struct Commenter<'e> {
    login: &'e str,
    permission: Permission,
    privileged: bool,
}

impl Handler<'_> {
    pub(super) async fn comment(&self, event: CommentEvent) -> Result<Outcome, HandlerError> {
        if event.author.is(&self.bot_login) {
            return Ok(Outcome::default());
        }
        let mut parsed = commands::parse_comment(&event.body);
        if parsed.is_empty() {
            // An agent's gap report: its author may be a bot that opened the PR.
            return match crate::context::parse_gap_report(&event.body) {
                Some(report) => self.context_gap(event, report).await,
                None => Ok(Outcome::default()),
            };
        }
        if event.author.is_bot() && !self.config.github.allow_bots {
            return Ok(Outcome::default());
        }
        let ignored = parsed.len().saturating_sub(MAX_COMMANDS_PER_COMMENT);
        parsed.truncate(MAX_COMMANDS_PER_COMMENT);
        let repo = &self.repo;
        // Read before any write: a comment by someone without the permission costs the
        // installation's write budget nothing unless it gets its (rate-limited) reply.
        let permission = self.forge.permission(repo, &event.author.login).await?;
        let commenter = Commenter {
            login: &event.author.login,
            permission,
            privileged: permission >= self.config.github.permission,
        };
        if commenter.privileged {
            self.forge
                .add_reaction(repo, event.comment_id, Reaction::Eyes)
                .await?;
        } else {
            self.forge.courtesy();
        }
        let comments = self.forge.list_comments(repo, event.pr).await?;
        let (mut state, mut actions) = self.load(event.pr, &comments).await?;
        if state
            .last_command_comment
            .is_some_and(|id| id >= event.comment_id)
        {
            // A re-run of the job: no command twice, no second reply; effects that failed
            // last time (a label, the escalation call) are completed.
            actions.push("commands of this comment were applied already".into());
            return self
                .publish(event.pr, &comments, state, None, actions)
                .await;
        }
        let mut reply = CommandReply {
            ignored_commands: ignored,
            commands_read: MAX_COMMANDS_PER_COMMENT,
            ..CommandReply::default()
        };
        let mut author: Option<bool> = None;
        for command in parsed {
            let command = match command {
                Err(error) => {
                    reply.errors.push(error.to_string());
                    continue;
                }
                Ok(command) => command,
            };
            match command {
                Command::Help => reply.help = Some(self.help()?),
                Command::Status => reply.status = Some(self.status(event.pr, &state)?),
                Command::Reevaluate if commenter.privileged => {
                    actions.push(self.rerun(event.pr).await?)
                }
                // Without the permission: nothing is re-run, and nothing is written for it.
                Command::Reevaluate => reply.refused_permission.push(command.name()),
                command if !commenter.privileged => {
                    reply.refused_permission.push(command.name());
                }
                command
                    if command.loosens_rules()
                        && !self.config.github.author_can_decide
                        && self.is_pr_author(&event, &mut author).await? =>
                {
                    reply.refused_author.push(command.name());
                }
                command => {
                    actions.push(apply(&mut state, &command, &commenter));
                    state.feedback.bound();
                }
            }
        }
        state.last_command_comment = Some(event.comment_id);
        let reaction = if reply.is_refusal_or_error() {
            Reaction::Confused
        } else {
            Reaction::PlusOne
        };
        let key = format!("comment-{}", event.comment_id);
        let answer = self.answer(&event, &commenter, &reply, &comments, &key, &mut actions);
        if let Some(text) = &answer {
            self.reply(event.pr, &comments, &key, text).await?;
        }
        // Someone without the permission changes nothing: a reply (rate-limited) is all
        // that is written. Anyone else's command re-renders the comment there is from its
        // verified state, so an edit of its visible text (the revision prompt an agent reads)
        // does not outlive it.
        let refresh = sticky::find_sticky(&comments, &self.bot_login).is_some();
        let outcome = if !commenter.privileged || (actions.is_empty() && !refresh) {
            Outcome {
                actions,
                ..Outcome::default()
            }
        } else {
            self.publish(event.pr, &comments, state, None, actions)
                .await?
        };
        if commenter.privileged || answer.is_some() {
            self.forge
                .add_reaction(repo, event.comment_id, reaction)
                .await?;
        }
        Ok(outcome)
    }

    /// The one reply to the comment, if any: rate-limited for users without the permission
    /// (the reply says whom it answered and when).
    fn answer(
        &self,
        event: &CommentEvent,
        commenter: &Commenter,
        reply: &CommandReply,
        comments: &[Comment],
        key: &str,
        actions: &mut Vec<String>,
    ) -> Option<String> {
        let permission_name = self.config.github.permission.as_str();
        let text = command_reply(reply, commenter.login, permission_name)?;
        // A job run again after its reply was posted: that reply stands (and is not
        // posted twice); the reaction that follows it is still owed.
        if commenter.privileged || crate::github::forge::has_reply(comments, &self.bot_login, key) {
            return Some(text);
        }
        match take_reply(comments, &self.bot_login, commenter.login, self.now) {
            Err(NoReply::Recently) => {
                actions.push(format!(
                    "no reply to {} (permission {}): replied to them less than {UNPRIVILEGED_REPLY_INTERVAL_MINUTES} minutes ago",
                    event.author.login,
                    commenter.permission.as_str()
                ));
                None
            }
            Err(NoReply::Full) => {
                actions.push(format!(
                    "no reply to {}: {MAX_UNPRIVILEGED_REPLIES} people without the permission were answered in the last {UNPRIVILEGED_REPLY_INTERVAL_MINUTES} minutes",
                    event.author.login
                ));
                None
            }
            Ok(addressed) => Some(format!("{addressed}\n{text}")),
        }
    }

    /// Whether the commenter opened the pull request (asked once per comment; the payload
    /// usually says, otherwise GitHub is asked).
    async fn is_pr_author(
        &self,
        event: &CommentEvent,
        known: &mut Option<bool>,
    ) -> Result<bool, ForgeError> {
        if let Some(is) = *known {
            return Ok(is);
        }
        let author = match &event.pr_author {
            Some(author) => author.clone(),
            None => self.forge.pull_request(&self.repo, event.pr).await?.author,
        };
        Ok(*known.insert(event.author.is(&author.login)))
    }
}

/// Applies a state-changing command; returns what was done. Feedback and guidance name their
/// author and permission, so the revision prompt says whose words they are.
fn apply(state: &mut StickyState, command: &Command, by: &Commenter) -> String {
    let signed = |text: &str| format!("{} ({}): {text}", by.login, by.permission.as_str());
    let feedback = &mut state.feedback;
    match command {
        Command::Accept => {
            feedback.accepted = true;
            feedback.accepted_by = Some(by.login.to_string());
            // Its integrity findings stay accepted in the later iterations.
            let keys = state
                .records
                .iter()
                .last()
                .into_iter()
                .flat_map(|r| &r.issues)
                .filter(|i| i.dimension == crate::signals::integrity::DIMENSION)
                .filter(|i| i.severity.counts_for_revision())
                .map(crate::signals::integrity::acceptance_key);
            for key in keys {
                if !feedback.accepted_findings.contains(&key) {
                    feedback.accepted_findings.push(key);
                }
            }
            feedback.escalation = None;
            state.accepted_with = Some(by.permission);
            // A maintainer vouches for a state that could not be verified.
            state.lost_state = None;
            "accepted by a maintainer".into()
        }
        Command::Adjust(guidance) => {
            feedback.accepted = false;
            state.accepted_with = None;
            feedback.escalation = None;
            feedback.restart_after = state.records.last().map(|r| r.iteration);
            feedback.messages.push(signed(guidance));
            state.escalation_notified_at = None;
            "approach adjusted; the revision count starts again".into()
        }
        Command::Escalate(reason) => {
            // The later decision wins, as locally: an escalation takes back an accept.
            feedback.escalation = Some(reason.clone().unwrap_or_default());
            feedback.escalated_by = Some(by.login.to_string());
            feedback.accepted = false;
            state.accepted_with = None;
            "escalated".into()
        }
        Command::Budget(n) => {
            feedback.max_iterations = Some(*n);
            format!("iteration budget set to {n}")
        }
        Command::Feedback(text) => {
            feedback.messages.push(signed(text));
            "feedback recorded".into()
        }
        Command::Reevaluate | Command::Status | Command::Help => String::new(),
    }
}
