#!/usr/bin/env bash
# Honest-history replay: real upstream commits, cherry-picked in order onto the commit before
# the first of them, each scored by `itergate run` against the commit before it, as a pull
# request of that one commit would be: after each step the base branch moves to it, so every
# commit is iteration 1 of its own task. 15-19 commits per repository. See README.md
# ("history.sh").
#
#   bash benches/agreement/history.sh              # all repositories in history/
#   bash benches/agreement/history.sh semver ufo   # some of them (history/<repo>.sh)
#
# Each history/<repo>.sh sets MIRROR (owner+name under $MIRRORS), CONFIG (rust, python or
# init: lib.sh's base_config), BASE_REV (the commit before the first replayed one), PREFIX
# (step ids are PREFIX1, PREFIX2, ...) and COMMITS (first-parent commits, oldest first).
# Output: $AGREEMENT_DIR/history-out/<repo>/ (steps.tsv, <step>.out, <step>.prompt,
# seconds.txt); then history_table.py rewrites the generated part of HISTORY.md.
#
# Environment: ITERGATE (binary, default /work/main/target/debug/itergate), AGREEMENT_DIR
# (scratch, default /tmp/agreement), MIRRORS (default /work/.mirror). Repositories run one
# after another (Rust builds are not run in parallel).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=${AGREEMENT_DIR:-/tmp/agreement}
WORK=$ROOT/history-work        # clones and Cargo target directories
MIRRORS=${MIRRORS:-/work/.mirror}
OUT=$ROOT/history-out
mkdir -p "$WORK/bin" "$OUT"
# Snapshot the binary so a rebuild during the replay cannot change it half-way.
cp "${ITERGATE:-/work/main/target/debug/itergate}" "$WORK/bin/itergate.$$"
mv -f "$WORK/bin/itergate.$$" "$WORK/bin/itergate"
ITERGATE=$WORK/bin/itergate
{ "$ITERGATE" --version; sha256sum "$ITERGATE" | cut -c1-16; date -u +%FT%TZ; } > "$OUT/binary.txt"
export ITERGATE WORK MIRRORS OUT
source "$HERE/lib.sh"

replay() {
    local repo=$1 MIRROR CONFIG BASE_REV PREFIX COMMITS
    source "$HERE/history/$repo.sh"
    local start=$SECONDS
    clone "$repo" "$MIRRORS/$MIRROR/repo" "$BASE_REV"
    if [ "$CONFIG" = python ]; then
        # The Python checks of lib.sh, from their own venv; the tests import the replayed
        # tree's src/ (PYTHONPATH), so the venv needs only the tools and test dependencies.
        local venv=$ROOT/venv-history-$repo
        [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
        "$venv/bin/pip" install -q pytest pytest-cov ruff freezegun >&2
        base_config python "$venv"
    else
        base_config "$CONFIG"
    fi
    branch history
    local n=0 rev
    for rev in "${COMMITS[@]}"; do
        n=$((n + 1))
        step "$PREFIX$n" "$rev $(git log -1 --format=%s "$rev")"
        pick "$rev" || { echo "history: $repo: stopped at $rev" >&2; break; }
        score
        # Merged: the next commit is judged against this one, as a pull request on top of
        # it would be (its base's observation is this step's, already cached).
        git branch -f "$BASE" HEAD
    done
    echo "$((SECONDS - start))" > "$OUT/$repo/seconds.txt"
}

repos=("$@")
if [ ${#repos[@]} -eq 0 ]; then
    for f in "$HERE"/history/*.sh; do repos+=("$(basename "$f" .sh)"); done
fi
for r in "${repos[@]}"; do
    ( replay "$r" )
done
python3 "$HERE/history_table.py" "$OUT" "$HERE"
