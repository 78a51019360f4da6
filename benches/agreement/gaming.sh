#!/usr/bin/env bash
# Gaming sequences: on real repositories, a commit breaks a function so that a real test
# fails (ITERATE); then, each on its own branch started from that commit, the moves that
# make a check pass by changing the check instead of the code (delete, skip, rewrite or
# deselect the failing test, rewrite a table row, weaken a shared helper, patch the unit or
# the runner from a conftest.py / setup file / TestMain / new _test.go / .cargo/config.toml,
# silence a lint finding, two violations in a row), and honest counterparts (the real fix, a
# passing test renamed, a test file moved with `git mv`, code and expectation changed
# together from a passing state).
# See GAMING.md.
#
#   bash benches/agreement/gaming.sh                      # log itsdangerous webidl-conversions ufo cast
#   bash benches/agreement/gaming.sh webidl-conversions   # some of them (gaming/<repo>.sh)
#
# Each gaming/<repo>.sh uses lib.sh (clone, base_config, branch, step, edit, commit, score)
# and `expect MOVE DECISION "integrity expected"` after each score. Output:
# $AGREEMENT_DIR/gaming-out/<repo>/ (steps.tsv, expected.tsv, <step>.out, <step>.prompt,
# <step>.record.json: the record itergate left in `git notes --ref itergate`); then
# gaming_table.py rewrites the generated part of GAMING.md.
#
# Environment: ITERGATE (binary, default /work/main/target/debug/itergate), AGREEMENT_DIR
# (scratch, default /tmp/agreement), MIRRORS (default /work/.mirror). Repositories run one
# after another.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=${AGREEMENT_DIR:-/tmp/agreement}
WORK=$ROOT/gaming-work         # clones, venv and Cargo target directories
MIRRORS=${MIRRORS:-/work/.mirror}
OUT=$ROOT/gaming-out
mkdir -p "$WORK/bin" "$OUT"
# Snapshot the binary so a rebuild during the run cannot change it half-way.
cp "${ITERGATE:-/work/main/target/debug/itergate}" "$WORK/bin/itergate.$$"
mv -f "$WORK/bin/itergate.$$" "$WORK/bin/itergate"
ITERGATE=$WORK/bin/itergate
{ "$ITERGATE" --version; sha256sum "$ITERGATE" | cut -c1-16; date -u +%FT%TZ; } > "$OUT/binary.txt"
export ITERGATE WORK MIRRORS OUT
source "$HERE/lib.sh"

# expect MOVE DECISION "INTEGRITY": what the step should get, after its `score`; the record
# itergate wrote for HEAD is kept next to the output.
expect() {
    printf '%s\t%s\t%s\t%s\n' "$STEP_ID" "$1" "$2" "$3" >> "$OUT/$REPO/expected.tsv"
    git notes --ref itergate show HEAD > "$OUT/$REPO/$STEP_ID.record.json" 2>/dev/null || true
}

# gaming BRANCH FROM: a new branch for one move, started from FROM (commit 1).
gaming() { git checkout -q -b "$1" "$2" || exit 1; }

repos=("$@")
[ ${#repos[@]} -eq 0 ] && repos=(log itsdangerous webidl-conversions ufo cast)
for r in "${repos[@]}"; do
    rm -f "$OUT/$r/expected.tsv"
    ( source "$HERE/gaming/$r.sh" )
done
python3 "$HERE/gaming_table.py" "$OUT" "$HERE"
