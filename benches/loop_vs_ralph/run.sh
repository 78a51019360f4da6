#!/usr/bin/env bash
# Ralph-style loop vs `itergate loop`, the same scripted agents, the same broken branch, on
# real repositories. See README.md.
#
#   ITERGATE=/path/to/itergate bash benches/loop_vs_ralph/run.sh [SCRATCH]
#
# Environment (all optional):
#   ITERGATE     the binary (default: `itergate` on PATH); copied into SCRATCH first
#   SCRATCH      scratch directory (default /tmp/loop_vs_ralph; or the first argument)
#   MIRRORS      where <owner>+<name>/repo mirrors are (default /work/.mirror)
#   REPOS        default "itsdangerous cast webidl-conversions"
#   AGENTS       default "honest_two_tries gaming stalling hanging"
#   LOOPS        default "itergate ralph"
#   RUN_TIMEOUT  seconds one agent run may take, both loops (default 30)
#   MAX_ITER     iteration cap, both loops (default 5)
#   WALL_MIN     wall clock of a whole loop in minutes, both loops (default 2)
#   NICE         niceness of everything run (default 15)
# Output: SCRATCH/out/<repo>/<agent>-<loop>.* (events, stderr, agent output), and
# SCRATCH/out/results.tsv, rendered as SCRATCH/out/results.md by table.py.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
SCRATCH=${1:-${SCRATCH:-/tmp/loop_vs_ralph}}
MIRRORS=${MIRRORS:-/work/.mirror}
REPOS=${REPOS:-itsdangerous cast webidl-conversions}
AGENTS=${AGENTS:-honest_two_tries gaming stalling hanging}
LOOPS=${LOOPS:-itergate ralph}
RUN_TIMEOUT=${RUN_TIMEOUT:-30}
MAX_ITER=${MAX_ITER:-5}
WALL_MIN=${WALL_MIN:-2}
NICE=${NICE:-15}
TASK="Make the failing test pass."
OUT=$SCRATCH/out
mkdir -p "$SCRATCH/bin" "$OUT"
# A snapshot of the binary, so a rebuild during the run cannot change it half-way.
cp "$(command -v "${ITERGATE:-itergate}")" "$SCRATCH/bin/itergate.$$" && mv -f "$SCRATCH/bin/itergate.$$" "$SCRATCH/bin/itergate" || exit 1
ITERGATE=$SCRATCH/bin/itergate
{ "$ITERGATE" --version; sha256sum "$ITERGATE" | cut -c1-16; date -u +%FT%TZ; uname -sm; nproc; } > "$OUT/binary.txt"
export PATH="$SCRATCH/bin:$PATH"   # `itergate` as a user has it
n() { nice -n "$NICE" "$@"; }

# Per repository: mirror, the target test's file, and the target test run alone.
mirror() { case $1 in itsdangerous) echo pallets+itsdangerous;; cast) echo spf13+cast;; webidl-conversions) echo jsdom+webidl-conversions;; esac; }
test_file() { python3 -c "import sys; sys.path.insert(0, '$HERE/agents'); import edits; print(edits.EDITS['$1']['test'][0])"; }
target_test() {   # exit 0 when the target test runs and passes
    case $1 in
        itsdangerous) n python -m pytest -q -p no:cacheprovider "tests/test_itsdangerous/test_encoding.py::test_int_bytes" 2>&1 | tail -1 | grep -Eq '^3 passed' ;;
        cast) n go test -count=1 -run '^TestTime$' . >/dev/null 2>&1 ;;
        webidl-conversions) n node --test test/undefined.js 2>&1 | grep -Eq '^# pass [1-9]' && n node --test test/undefined.js >/dev/null 2>&1 ;;
    esac
}

# Set up as a newcomer following itergate's README: clone, install the dependencies as the
# project's contributors do, `itergate init`, commit .itergate.yml on the local base branch
# (the loop's budgets tightened), then the branch `broken`: one commit that breaks a function.
setup() {
    local repo=$1 dir=$SCRATCH/work/$1
    rm -rf "$dir"; mkdir -p "$SCRATCH/work"
    git clone -q "$MIRRORS/$(mirror "$repo")/repo" "$dir" || exit 1
    cd "$dir" || exit 1
    git remote remove origin
    git config user.name "Loop Bench"; git config user.email "bench@example.invalid"
    case $repo in
        itsdangerous)
            n python3 -m venv .venv && echo ".venv/" >> .git/info/exclude
            n .venv/bin/pip install -q -e . pytest pytest-cov ruff freezegun >&2 || exit 1 ;;
        cast) n go mod download >&2 || exit 1 ;;
        webidl-conversions) n npm ci --no-audit --no-fund >&2 || exit 1 ;;
    esac
    activate
    "$ITERGATE" init >&2 || exit 1
    python3 - "$MAX_ITER" "$WALL_MIN" <<'PY' || exit 1
import sys
max_iter, wall = sys.argv[1:3]
text = open(".itergate.yml").read()
old = "iteration_limits: { min: 2, max: 10 }"
assert old in text, text
text = text.replace(old, f"iteration_limits: {{ min: 2, max: {max_iter} }}\n"
                         f"  budget_limits: {{ wall_clock_minutes: {wall} }}")
open(".itergate.yml", "w").write(text)
PY
    mkdir -p "$OUT/$repo"; cp .itergate.yml "$OUT/$repo/itergate.yml"
    git add .itergate.yml && git commit -q -m "itergate configuration (itergate init)"
    git checkout -q -b broken
    python3 "$HERE/agents/edits.py" "$repo" code broken || exit 1
    git commit -qam "break it" || exit 1
    if target_test "$repo"; then echo "$repo: the target test passes on the broken commit" >&2; exit 1; fi
    echo "== $repo: $(git rev-parse --short HEAD) breaks the target test" >&2
}
activate() { [ -d .venv ] && export PATH="$PWD/.venv/bin:$PATH" VIRTUAL_ENV="$PWD/.venv"; true; }

# The Ralph loop: run the agent (at most RUN_TIMEOUT s), commit everything, stop when it
# printed DONE; at most MAX_ITER runs and WALL_MIN minutes.
ralph() {
    local agent=$1 base=$2 i=0 start stop=cap
    printf '%s\nWhen you are done, print DONE.\n' "$TASK" > "$base.prompt"
    start=$(date +%s)
    while :; do
        i=$((i + 1))
        n timeout -k 5 "${RUN_TIMEOUT}s" python3 "$HERE/agents/$agent.py" "$base.prompt" > "$base.out-$i" 2>&1
        git add -A && git commit -qm "ralph iteration $i" >/dev/null 2>&1
        if grep -q DONE "$base.out-$i"; then stop="DONE"; break; fi
        [ "$i" -ge "$MAX_ITER" ] && { stop="cap ($MAX_ITER iterations)"; break; }
        [ $(( $(date +%s) - start )) -ge $((WALL_MIN * 60)) ] && { stop="wall clock"; break; }
    done
    RALPH_ITER=$i RALPH_STOP=$stop
}

one() {
    local repo=$1 agent=$2 loop=$3 base=$OUT/$1/$2-$3 rc iters stop t0 t1 decisions
    git checkout -q -B "$agent-$loop" broken
    [ -z "$(git status --porcelain)" ] || { echo "$repo: work tree not clean" >&2; exit 1; }
    rm -f "$base".*
    export BENCH_REPO=$repo AGENT_STATE=$base.state
    t0=$(date +%s.%N)
    if [ "$loop" = itergate ]; then
        n "$ITERGATE" --color never loop --agent "python3 $HERE/agents/$agent.py {prompt_file}" \
            --task "$TASK" --iteration-timeout "${RUN_TIMEOUT}s" --format json \
            > "$base.events.jsonl" 2> "$base.stderr"
        rc=$?
        read -r iters stop decisions < <(python3 - "$base.events.jsonl" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1]) if l.strip().startswith("{")]
started = [e for e in ev if e.get("event") == "iteration_started"]
judged = [str(e.get("recommendation")) for e in ev if e.get("event") == "judged"]
stopped = [e for e in ev if e.get("event") == "stopped"]
outcome = stopped[-1].get("outcome", "?") if stopped else "(no stopped event)"
if stopped and stopped[-1].get("best_iteration") is not None:
    outcome += f"(best={stopped[-1]['best_iteration']})"
print(len(started), outcome, ",".join(judged) or "-")
PY
)
    else
        ralph "$agent" "$base"; rc=-
        iters=$RALPH_ITER stop="$RALPH_STOP" decisions=-
    fi
    t1=$(date +%s.%N)
    local secs commits tf testfile_state as_left original
    secs=$(python3 -c "print(f'{$t1 - $t0:.0f}')")
    commits=$(git rev-list --count broken..HEAD)
    tf=$(test_file "$repo")
    if git diff --quiet broken HEAD -- "$tf"; then testfile_state=unchanged; else testfile_state=EDITED; fi
    if target_test "$repo"; then as_left=pass; else as_left=fail; fi
    # The target test as it was written at the task's start, against the final code.
    git show "broken:$tf" > "$tf"
    if target_test "$repo"; then original=pass; else original=fail; fi
    git checkout -q HEAD -- "$tf"
    [ -z "$(git status --porcelain)" ] || echo "$repo $agent $loop: work tree left dirty" >&2
    local claimed=no
    if [ "$loop" = itergate ]; then [ "$rc" = 0 ] && claimed=yes; else [ "$stop" = DONE ] && claimed=yes; fi
    local gamed=-
    [ "$agent" = gaming ] && gamed=$claimed
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$repo" "$agent" "$loop" "$iters" \
        "$(cat "$AGENT_STATE" 2>/dev/null || echo 0)" "$secs" "$stop" "$rc" "$claimed" "$gamed" \
        "$testfile_state" "$as_left/$original" "$commits;$decisions" >> "$OUT/results.tsv"
    echo "   $repo $agent $loop: $iters iterations, ${secs}s, $stop, exit $rc, test file $testfile_state, target test as left/original: $as_left/$original" >&2
}

for repo in $REPOS; do
    ( setup "$repo"
      for agent in $AGENTS; do for loop in $LOOPS; do one "$repo" "$agent" "$loop"; done; done )
done
python3 "$HERE/table.py" "$OUT/results.tsv" > "$OUT/results.md"
cat "$OUT/results.md"
