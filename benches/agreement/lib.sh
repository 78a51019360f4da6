# Helpers for the step files in steps/. Sourced by run.sh; see README.md.
#
#   clone NAME MIRROR [BASE_REV]   fresh scratch clone in $WORK/NAME; the default branch
#                                  (main/master) is the base, reset to BASE_REV if given;
#                                  the origin remote is removed so the local branch is the base;
#                                  a Node or Go project's dependencies are installed as its
#                                  users do (install_deps)
#   base_config rust|python VENV   write .itergate.yml and commit it on the base branch
#   base_config init               `itergate init` writes .itergate.yml (the checks it detects
#                                  on this machine); commit it on the base branch
#   to_base                        check the base branch out, to give it debt (edits follow)
#   base_commit "MESSAGE"          commit those edits on the base branch; `branch` then starts
#                                  a new iteration branch off the indebted base
#   branch NAME                    start the iteration branch
#   step ID "what the commit does" start a step (edits follow as plain shell commands)
#   commit [GIT COMMIT ARGS]       commit the edits, message = the step's description (+ -m trailers)
#   score [ITERGATE RUN ARGS...]   run `itergate run`, record decision, exit status and time
#   score_env VAR=VALUE... -- [ARGS...]   the same, with a changed environment

set -u

git_id() { git -c user.name="Agreement Bench" -c user.email="bench@example.invalid" "$@"; }

clone() {
    local name=$1 mirror=$2 base_rev=${3:-}
    REPO=$name
    rm -rf "$WORK/$name"
    git clone -q "$mirror" "$WORK/$name"
    cd "$WORK/$name" || exit 1
    git remote remove origin
    BASE=$(git symbolic-ref --short HEAD)
    if [ -n "$base_rev" ]; then git reset -q --hard "$base_rev"; fi
    echo ".itergate/" >> .git/info/exclude     # where the checks write their reports
    # Where the checks `itergate init` writes put theirs (.itergate-junit.xml,
    # .itergate-coverage/, .itergate-cover.out), and installed dependencies: never committed.
    printf '%s\n' "/.itergate-*" "node_modules/" >> .git/info/exclude
    install_deps
    mkdir -p "$OUT/$name"
    : > "$OUT/$name/steps.tsv"
    echo "== $name: base $BASE at $(git rev-parse --short HEAD)" >&2
}

# The locked dependencies of a Node project (pnpm-lock.yaml, package-lock.json) or a Go
# module, installed into the clone the way its users do, so the work tree has node_modules.
# pnpm is installed with npm, at the version package.json's packageManager names, when it
# is not on PATH.
install_deps() {
    if [ -f pnpm-lock.yaml ]; then
        local want
        want=$(python3 -c 'import json; print(json.load(open("package.json")).get("packageManager", "pnpm@latest").split("+")[0])')
        if ! command -v pnpm >/dev/null; then
            npm install -g --no-audit --no-fund "$want" >&2 || exit 1
        fi
        # A pnpm on PATH of another major version than packageManager's cannot read the
        # lockfile: that version through npx, leaving the global one alone.
        local have=${want#pnpm@}
        if [ "${have%%.*}" != "$(pnpm --version | cut -d. -f1)" ] && [ "$have" != latest ]; then
            npx -y "$want" install --frozen-lockfile >&2 || exit 1
        else
            pnpm install --frozen-lockfile >&2 || exit 1
        fi
    elif [ -f package-lock.json ]; then
        npm ci --no-audit --no-fund >&2 || exit 1
    elif [ -f go.mod ]; then
        go mod download >&2 || exit 1
    fi
}

# Rust coverage: cargo-tarpaulin (no llvm-tools needed), built once by the project's script.
TARPAULIN="$(bash "${ENSURE_TARPAULIN:-$HERE/../../scripts/ensure-tarpaulin.sh}" | tail -n1)/cargo-tarpaulin tarpaulin"

base_config() {
    local kind=$1 venv=${2:-}
    if [ "$kind" = init ]; then
        # The checks a user of `itergate init` gets on this machine, unedited; kept with the
        # outputs, since what it detects depends on what is installed (see its notes).
        "$ITERGATE" init >&2 || exit 1
        cp .itergate.yml "$OUT/$REPO/itergate.yml"
        git add .itergate.yml
        git_id commit -q -m "itergate configuration (itergate init)"
        return
    fi
    if [ "$kind" = rust ]; then
        cat > .itergate.yml <<YML
checks:
  tests:
    run: nice -n 10 cargo test --no-fail-fast --color never
    report: { format: libtest, from: stdout }
    timeout: 900
    env: { CARGO_TARGET_DIR: "$WORK/target-${REPO%-replay}" }
  lint:
    run: nice -n 10 cargo clippy --all-targets --message-format=json --color never
    report: { format: cargo-json, from: stdout }
    timeout: 900
    env: { CARGO_TARGET_DIR: "$WORK/target-${REPO%-replay}" }
  coverage:
    run: nice -n 10 $TARPAULIN --skip-clean --no-fail-fast --out Lcov --output-dir .itergate-tarpaulin
    report: { format: lcov, path: .itergate-tarpaulin/lcov.info }
    timeout: 900
    env: { CARGO_TARGET_DIR: "$WORK/target-tarpaulin-${REPO%-replay}" }
YML
    else
        # PYTHONPATH: the tests import this tree's src/, also in a temporary worktree
        # (the editable install points at the clone's own src/).
        # --cov=. : itergate matches cobertura filenames to the diff as they are written
        # (relative to <source>); with --cov=src they read itsdangerous/x.py, match no
        # changed file, and coverage silently goes unmeasured (see RESULTS.md).
        # ruff: what `itergate init` writes for a project with no ruff configuration: its
        # error rules, and the oldest Python from setup.cfg when pyproject.toml does not
        # declare one (ruff reads requires-python itself; itsdangerous before 2.0 declares
        # python_requires >= 3.6 in setup.cfg, and ruff's oldest target is py37).
        local target=""
        grep -qs "^requires-python" pyproject.toml || target=" --target-version py37"
        cat > .itergate.yml <<YML
checks:
  tests:
    run: PYTHONPATH="\$PWD/src" $venv/bin/python -m pytest -q -p no:cacheprovider --junitxml=.itergate/pytest.xml
    report: { format: junit, path: .itergate/pytest.xml }
    timeout: 300
  coverage:
    run: PYTHONPATH="\$PWD/src" $venv/bin/python -m pytest -q -p no:cacheprovider --cov=. --cov-report=xml:.itergate/coverage.xml
    report: { format: cobertura, path: .itergate/coverage.xml }
    timeout: 300
  lint:
    run: $venv/bin/ruff check --no-fix --output-format=json --exit-zero --select E4,E7,E9,F$target src tests
    report: { format: ruff-json, from: stdout }
    timeout: 120
YML
    fi
    git add .itergate.yml
    git_id commit -q -m "itergate configuration"
}

branch() { git checkout -q -b "$1"; }

# Base debt: a test that already fails on the base, say. `to_base`, the edits, then
# `base_commit MESSAGE` commits them on the base branch, and `branch NAME` starts a new
# iteration branch off it (the earlier branch keeps its history).
to_base() { git checkout -q "$BASE" || exit 1; }

base_commit() {
    [ "$(git symbolic-ref --short HEAD)" = "$BASE" ] || { echo "base_commit: not on $BASE" >&2; exit 1; }
    git add -A . && git_id commit -q -m "$1" || exit 1
}

# A real commit replayed and judged is merged: the next one is judged against it, as a pull
# request on top of it would be (its base's observation is this step's, already cached).
merged() { git branch -f "$BASE" HEAD; }

step() { STEP_ID=$1; STEP_WHAT=$2; echo "-- $REPO $STEP_ID: $STEP_WHAT" >&2; }

commit() { git add -A . && git_id commit -q -m "$STEP_WHAT" "$@"; }

# Replay one real commit: cherry-pick it (first parent for merges), keep its author and message.
pick() {
    local rev=$1 mainline=()
    [ "$(git rev-list --no-walk --parents "$rev" | wc -w)" -gt 2 ] && mainline=(-m 1)
    git_id cherry-pick --allow-empty --keep-redundant-commits "${mainline[@]}" "$rev" >/dev/null || {
        echo "cherry-pick of $rev failed" >&2; git cherry-pick --abort; return 1; }
}

score() { score_env -- "$@"; }

score_env() {
    local envs=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    local f="$OUT/$REPO/$STEP_ID" start end rc
    start=$(date +%s.%N)
    env "${envs[@]}" "$ITERGATE" --color never run "$@" > "$f.out" 2>&1
    rc=$?
    end=$(date +%s.%N)
    "$ITERGATE" --color never prompt > "$f.prompt" 2>&1
    local secs decision
    secs=$(python3 -c "print(f'{$end - $start:.1f}')")
    decision=$(grep -m1 '^Decision:' "$f.out" || echo "(no decision; exit $rc) $(grep -m1 'error' "$f.out")")
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$STEP_ID" "$(git rev-parse --short HEAD)" "$STEP_WHAT" "$rc" "$secs" "$decision" >> "$OUT/$REPO/steps.tsv"
    echo "   exit $rc in ${secs}s: $decision" >&2
}

# edit FILE OLD NEW: replace the first occurrence of the literal text OLD with NEW.
edit() {
    python3 - "$@" <<'PY'
import sys
path, old, new = sys.argv[1:4]
text = open(path).read()
if old not in text:
    sys.exit(f"edit: {path}: {old!r} not found")
open(path, "w").write(text.replace(old, new, 1))
PY
}
