#!/usr/bin/env bash
# The App's load benchmark: `itergate serve` against a minimal Probot app, side by side in
# one run, on the same signed webhook. See README.md.
#
#   benches/app_load/run.sh
#
# Env (defaults): CONNECTIONS=10 DURATION_S=15 WARMUP_REQUESTS=3000 RATE=1000 DISK_S=5
# LOADGEN_REQUESTS=80000 (the saturated run of the second generator, loadgen/)
# PAYLOAD=tests/fixtures/github/webhooks/issue_comment.created.1.json
# ITERGATE_BIN=path/to/itergate (skip the release build and measure that binary)
# Installs Node packages under target/app_load; temporary files go to a directory in /tmp.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"

connections="${CONNECTIONS:-10}"
duration_s="${DURATION_S:-15}"
warmup_requests="${WARMUP_REQUESTS:-3000}"
rate="${RATE:-1000}"
disk_s="${DISK_S:-5}"
payload="$root/${PAYLOAD:-tests/fixtures/github/webhooks/issue_comment.created.1.json}"
event=issue_comment

work="$root/target/app_load"
tmp="$(mktemp -d /tmp/itergate-app-load.XXXXXX)"
out="$tmp/results"
mkdir -p "$work" "$out"
server_pid=""
cleanup() {
  if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

say() { printf '\n== %s\n' "$*" >&2; }

say "building (release) and installing the Node packages"
itergate="${ITERGATE_BIN:-}"
if [[ -z "$itergate" ]]; then
  if command -v flock >/dev/null; then
    flock /tmp/cargo.lock cargo build --release --quiet
  else
    cargo build --release --quiet
  fi
  itergate="$root/target/release/itergate"
fi
cp "$here/package.json" "$here/package-lock.json" "$here"/*.mjs "$work/"
(cd "$work" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
# The second load generator (see loadgen/src/main.rs): autocannon's own cost bounds what it
# can show on 2 cores.
loadgen_build=(cargo build --release --quiet --manifest-path "$here/loadgen/Cargo.toml"
  --target-dir "$root/target/loadgen")
if command -v flock >/dev/null; then flock /tmp/cargo.lock "${loadgen_build[@]}"; else "${loadgen_build[@]}"; fi
loadgen="$root/target/loadgen/release/itergate-loadgen"
closed_loop="$root/target/loadgen/release/closed_loop"
loadgen_requests="${LOADGEN_REQUESTS:-80000}"

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Waits for LOG to contain "listening on".
wait_listening() {
  local log="$1"
  for _ in $(seq 1 100); do
    grep -qs "listening on" "$log" && return 0
    kill -0 "$server_pid" 2>/dev/null || { cat "$log" >&2; return 1; }
    sleep 0.1
  done
  cat "$log" >&2
  return 1
}

peak_rss_kb() { awk '/^VmHWM/ { print $2 }' "/proc/$1/status"; }

# load NAME URL [RATE]: the saturated or rate-limited run, JSON into $out/NAME.json.
load() {
  local name="$1" url="$2" r="${3:-}"
  (cd "$work" && SERVER_PID="$server_pid" node load.mjs "$url" "$payload" "$event" \
    "$connections" "$warmup_requests" "$duration_s" $r) >"$out/$name.json"
}

export WEBHOOK_SECRET="bench-secret-$(date +%s%N)"

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# loadgen_run NAME URL: a warm-up and the measured saturated run of loadgen, with the
# server's CPU seconds over the measured run, into $out/NAME.json.
loadgen_run() {
  local name="$1" url="$2" before after
  "$loadgen" "$url" "$payload" "$event" "$WEBHOOK_SECRET" "$connections" "$warmup_requests" >"$out/$name.warmup.json"
  before="$(cpu_ticks "$server_pid")"
  "$loadgen" "$url" "$payload" "$event" "$WEBHOOK_SECRET" "$connections" "$loadgen_requests" >"$out/$name.measured.json"
  after="$(cpu_ticks "$server_pid")"
  python3 - "$out/$name" "$before" "$after" <<'PY'
import json, sys
base, before, after = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
warmup, measured = (json.load(open(f"{base}.{part}.json")) for part in ("warmup", "measured"))
measured["server_cpu_s"] = (after - before) / 100
json.dump({"warmup": warmup, "measured": measured}, open(f"{base}.json", "w"))
PY
}

{
  echo "{"
  echo "\"date\": \"$(date -u +%Y-%m-%dT%H:%M:%SZ)\","
  echo "\"itergate\": \"$("$itergate" --version)\","
  echo "\"cpus\": $(nproc),"
  echo "\"cpu_model\": \"$(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)\","
  echo "\"kernel\": \"$(uname -r)\","
  echo "\"node\": \"$(node --version)\","
  echo "\"filesystem\": \"$(df -T "$tmp" | awk 'NR == 2 { print $1 " " $2 }')\","
  echo "\"load_before\": \"$(cut -d' ' -f1-3 /proc/loadavg)\","
  echo "\"rustc_before\": $(pgrep -c rustc || true)"
  echo "}"
} >"$out/machine.json"

say "Probot $(node -p 'require(process.argv[1]).version' "$work/node_modules/probot/package.json")"
port="$(free_port)"
(cd "$work" && exec node probot_app.mjs "$port") 2>"$tmp/probot.log" &
server_pid=$!
wait_listening "$tmp/probot.log"
url="http://127.0.0.1:$port/api/github/webhooks"
load probot "$url"
loadgen_run probot_loadgen "$url"
load probot_rate "$url" "$rate"
probot_rss_kb="$(peak_rss_kb "$server_pid")"
probot_recorded="$(curl -fsS "http://127.0.0.1:$port/count")"
kill "$server_pid"
wait "$server_pid" 2>/dev/null || true
server_pid=""

# The disk's own limit, just before and just after itergate (other work on the machine
# changes it from minute to minute).
disk_limit() {
  say "this disk's limit ($1): SQLite WAL, synchronous=FULL, ${disk_s} s per batch size"
  python3 "$here/disk_limit.py" "$tmp" "${2:-$payload}" "$disk_s" 1 10 64 >"$out/disk_$1.json"
  rm -f "$tmp"/disk_limit.db*
}
disk_limit before

say "itergate serve"
port="$(free_port)"
closed_port="$(free_port)"
# Workers wait on GET /app (a closed port; no ITERGATE_BOT_LOGIN): what is measured is intake.
env -u ITERGATE_BOT_LOGIN -u ITERGATE_LOG -u GITHUB_TOKEN \
  ITERGATE_APP_ID=1 \
  ITERGATE_PRIVATE_KEY_PATH="$root/tests/fixtures/app/test-app-key.pem" \
  ITERGATE_WEBHOOK_SECRET="$WEBHOOK_SECRET" \
  GITHUB_API_URL="http://127.0.0.1:$closed_port" \
  "$itergate" serve --listen "127.0.0.1:$port" --database "$tmp/inbox.db" --workers 1 \
  2>"$tmp/itergate.log" &
server_pid=$!
wait_listening "$tmp/itergate.log"
url="http://127.0.0.1:$port/webhook"
load itergate "$url"
loadgen_run itergate_loadgen "$url"
load itergate_rate "$url" "$rate"
itergate_rss_kb="$(peak_rss_kb "$server_pid")"
kill -TERM "$server_pid"
wait "$server_pid" 2>/dev/null || true
server_pid=""
disk_limit after
itergate_rows="$(python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT COUNT(*) FROM deliveries").fetchone()[0])' "$tmp/inbox.db")"
# The same rows as itergate commits them: its payloads are stored compressed, so the disk
# is measured again with rows of the stored size (random bytes: they do not compress).
python3 -c 'import os, sqlite3, sys
size = sqlite3.connect(sys.argv[1]).execute("SELECT CAST(AVG(LENGTH(payload)) AS INTEGER) FROM deliveries").fetchone()[0]
open(sys.argv[2], "wb").write(os.urandom(size))' "$tmp/inbox.db" "$tmp/stored_payload"
disk_limit stored "$tmp/stored_payload"
# The same rows with as many in flight as there are connections, and no HTTP at all: the
# best an inbox that commits before answering could do here (loadgen/src/bin/closed_loop.rs).
say "this disk's limit at $connections deliveries in flight: closed_loop, ${disk_s} s"
"$closed_loop" "$tmp/inbox.db" "$tmp/closed_loop.db" "$tmp/stored_payload" "$connections" "$disk_s" >"$out/closed_loop.json"
rm -f "$tmp"/closed_loop.db*

# The paced run again with the workers at work: with a bot login they claim, apply (the
# comment holds no command: nothing to call GitHub for) and finish every delivery, writing
# to the same database while intake commits.
say "itergate serve, workers processing every delivery"
port="$(free_port)"
env -u ITERGATE_LOG -u GITHUB_TOKEN \
  ITERGATE_BOT_LOGIN="bench[bot]" \
  ITERGATE_APP_ID=1 \
  ITERGATE_PRIVATE_KEY_PATH="$root/tests/fixtures/app/test-app-key.pem" \
  ITERGATE_WEBHOOK_SECRET="$WEBHOOK_SECRET" \
  GITHUB_API_URL="http://127.0.0.1:$closed_port" \
  "$itergate" serve --listen "127.0.0.1:$port" --database "$tmp/working.db" \
  2>"$tmp/working.log" &
server_pid=$!
wait_listening "$tmp/working.log"
load itergate_rate_working "http://127.0.0.1:$port/webhook" "$rate"
kill -TERM "$server_pid"
wait "$server_pid" 2>/dev/null || true
server_pid=""
itergate_jobs_done="$(python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT COUNT(*) FROM deliveries WHERE done_at IS NOT NULL").fetchone()[0])' "$tmp/working.db")"

cat >"$out/servers.json" <<EOF
{"probot_peak_rss_kb": $probot_rss_kb, "probot_recorded": $probot_recorded,
 "itergate_peak_rss_kb": $itergate_rss_kb, "itergate_rows": $itergate_rows,
 "itergate_jobs_done_working": $itergate_jobs_done,
 "itergate_log_lines": $(wc -l <"$tmp/itergate.log"),
 "load_after": "$(cut -d' ' -f1-3 /proc/loadavg)", "rustc_after": $(pgrep -c rustc || true)}
EOF
cp "$tmp/itergate.log" "$out/itergate.log"

say "results"
rm -rf "$work/last"
cp -r "$out" "$work/last"
python3 "$here/report.py" "$work/last" | tee "$work/last/results.md"
