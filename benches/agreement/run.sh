#!/usr/bin/env bash
# Replay agent-like and real commit sequences on real repositories through `itergate run`
# and compare its decisions with a careful reviewer's (reviewer.tsv). See README.md.
#
#   bash benches/agreement/run.sh                 # all repositories
#   bash benches/agreement/run.sh semver          # some of: semver itsdangerous log
#                                                 #   ufo webidl-conversions semver-go commons-cli
#
# Environment: ITERGATE (binary, default /work/main/target/debug/itergate),
# AGREEMENT_DIR (scratch, default /tmp/agreement), MIRRORS (default /work/.mirror).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=${AGREEMENT_DIR:-/tmp/agreement}
MIRRORS=${MIRRORS:-/work/.mirror}
OUT=$WORK/out
mkdir -p "$WORK/bin" "$OUT"
# Snapshot the binary so a rebuild during the replay cannot change it half-way.
cp "${ITERGATE:-/work/main/target/debug/itergate}" "$WORK/bin/itergate.$$"
mv -f "$WORK/bin/itergate.$$" "$WORK/bin/itergate"
ITERGATE=$WORK/bin/itergate
{ "$ITERGATE" --version; sha256sum "$ITERGATE" | cut -c1-16; date -u +%FT%TZ; } > "$OUT/binary.txt"
export ITERGATE WORK MIRRORS OUT
source "$HERE/lib.sh"

repos=("$@")
[ ${#repos[@]} -eq 0 ] && repos=(semver itsdangerous log ufo webidl-conversions semver-go commons-cli)
for r in "${repos[@]}"; do
    ( source "$HERE/steps/$r.sh" )
done
python3 "$HERE/table.py" "$OUT" "$HERE"
