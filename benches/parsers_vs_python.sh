#!/usr/bin/env bash
# itergate's report parsers against Python peers, side by side in one run:
#   JUnit (100,000 testcases)  itergate vs junitparser
#   LCOV (about 100 MB)        itergate vs a plain Python line loop summing DA hits
# Each tool runs as its own process on the same file, interleaved, REPS times; the table
# shows medians, MB/s and the speed-up. Usage: benches/parsers_vs_python.sh [REPS]
set -euo pipefail

REPS="${1:-5}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/itergate-parsers-XXXXXX")"
VENV="${ITERGATE_BENCH_VENV:-${TMPDIR:-/tmp}/itergate-bench-venv}"
trap 'rm -rf "$WORK"' EXIT

cd "$ROOT"
echo "building release examples..." >&2
cargo build --release --quiet --example gen_reports --example parse_report
"$ROOT/target/release/examples/gen_reports" "$WORK" >&2

if [ ! -x "$VENV/bin/python" ]; then
    echo "creating $VENV with junitparser..." >&2
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet junitparser
fi
PY="$VENV/bin/python"
echo "python: $("$PY" --version 2>&1), junitparser $("$PY" -c 'import importlib.metadata as m; print(m.version("junitparser"))')" >&2

PARSE="$ROOT/target/release/examples/parse_report"
"$PY" "$ROOT/benches/compare_timings.py" "$REPS" \
    junit "$WORK/big-junit.xml" "$PARSE" junit -- "$PY" "$ROOT/benches/py_junitparser_count.py" \
    ++ lcov "$WORK/big.lcov" "$PARSE" lcov -- "$PY" "$ROOT/benches/py_lcov_count.py"
