#!/usr/bin/env bash
# Reads itergate's hand-off (a repository_dispatch `itergate-revision`, or a
# workflow_dispatch with the same inputs) and writes the revision prompt to
# $RUNNER_TEMP/revision-prompt.md. Refuses what it cannot trust: a comment not written by
# itergate, a fork's pull request, a head that moved since the hand-off.
# Needs GH_TOKEN, PR, HEAD_SHA, COMMENT_ID, and ITERGATE_LOGIN (the login itergate
# comments as: github-actions[bot] in Actions, your App's `<slug>[bot]`).
set -euo pipefail
repo="$GITHUB_REPOSITORY"
case "$PR$COMMENT_ID" in *[!0-9]*|"") echo "pr and comment_id must be numbers" >&2; exit 1;; esac
pull="$(gh api "repos/$repo/pulls/$PR")"
if [ "$(jq -r .head.repo.full_name <<<"$pull")" != "$repo" ]; then
  echo "a fork's pull request: no agent runs on it with this repository's token" >&2; exit 1
fi
if [ "$(jq -r .head.sha <<<"$pull")" != "$HEAD_SHA" ]; then
  echo "the head moved since the hand-off: itergate judges the new one first" >&2; exit 0
fi
comment="$(gh api "repos/$repo/issues/comments/$COMMENT_ID")"
if [ "$(jq -r .user.login <<<"$comment")" != "$ITERGATE_LOGIN" ]; then
  echo "comment $COMMENT_ID was not written by $ITERGATE_LOGIN" >&2; exit 1
fi
# The prompt is the comment's "Revision prompt for agents" block.
jq -r .body <<<"$comment" \
  | awk '/<summary>Revision prompt for agents<\/summary>/{on=1; next} on && /^<\/details>/{exit} on' \
  > "$RUNNER_TEMP/revision-prompt.md"
[ -s "$RUNNER_TEMP/revision-prompt.md" ] || { echo "the comment holds no revision prompt" >&2; exit 1; }
echo "branch=$(jq -r .head.ref <<<"$pull")" >> "$GITHUB_OUTPUT"
