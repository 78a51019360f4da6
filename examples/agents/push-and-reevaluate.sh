#!/usr/bin/env bash
# Commits what the agent changed, pushes it to the pull request's branch and asks itergate
# to judge the new head: a push with GITHUB_TOKEN starts no workflow, a repository_dispatch
# does. Needs GH_TOKEN, PR, BRANCH.
set -euo pipefail
git config user.name "itergate agent"
git config user.email "itergate-agent@users.noreply.github.com"
git add --all
if git diff --cached --quiet; then
  echo "the agent changed nothing"; exit 0
fi
git commit --quiet -m "Revise after itergate's review (PR #$PR)"
git push --quiet origin "HEAD:$BRANCH"
gh api "repos/$GITHUB_REPOSITORY/dispatches" -f event_type=itergate-reevaluate \
  -F "client_payload[pr]=$PR" -f "client_payload[head_sha]=$(git rev-parse HEAD)"
