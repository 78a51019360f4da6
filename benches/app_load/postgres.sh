#!/usr/bin/env bash
# `itergate serve` on PostgreSQL with 1 and 3 replicas, and on the SQLite default, on this
# machine. See POSTGRES.md.
#
#   benches/app_load/postgres.sh
#
# Two measurements per setup:
# - intake: deliveries acknowledged per second (verified, committed, then 202), with this
#   directory's load generator (load.mjs, autocannon); with 3 replicas one load generator
#   per replica, CONNECTIONS split between them, run at the same time. Workers are idle
#   (GitHub is a closed port), so only intake is measured.
# - drain: jobs per second through the queue (claim, read the installation, complete),
#   JOBS deliveries stored beforehand, each on a pull request of its own, comments that
#   hold no command (the worker makes no GitHub call for them), --workers 4 per replica.
#
# Env (defaults): CONNECTIONS=12 DURATION_S=10 WARMUP_REQUESTS=1000 JOBS=3000
# PAYLOAD=tests/fixtures/github/webhooks/issue_comment.created.1.json
# ITERGATE_BIN=path/to/itergate (skip the release build). PostgreSQL: a temporary cluster
# with the server binaries (/usr/lib/postgresql/*/bin), default settings (fsync on,
# synchronous_commit on), as the postgres user when run as root.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"

connections="${CONNECTIONS:-12}"
duration_s="${DURATION_S:-10}"
warmup_requests="${WARMUP_REQUESTS:-1000}"
jobs="${JOBS:-3000}"
payload="$root/${PAYLOAD:-tests/fixtures/github/webhooks/issue_comment.created.1.json}"

work="$root/target/app_load"
tmp="$(mktemp -d /tmp/itergate-pg-bench.XXXXXX)"
out="$tmp/results"
mkdir -p "$work" "$out"
pgbin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)"
[[ -x "$pgbin/initdb" ]] || { echo "no PostgreSQL server binaries (apt-get install postgresql)" >&2; exit 1; }
as_pg=()
if [[ "$(id -u)" -eq 0 ]]; then
  chown postgres: "$tmp"
  as_pg=(runuser -u postgres --)
fi
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  "${as_pg[@]}" "$pgbin/pg_ctl" -D "$tmp/pgdata" -m immediate -w stop >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT
say() { printf '\n== %s\n' "$*" >&2; }
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

say "building (release) and installing the load generator"
itergate="${ITERGATE_BIN:-}"
if [[ -z "$itergate" ]]; then
  flock /tmp/cargo.lock cargo build --release --quiet
  itergate="$root/target/release/itergate"
fi
if [[ ! -d "$work/node_modules/autocannon" ]]; then
  cp "$here/package.json" "$here/package-lock.json" "$work/"
  (cd "$work" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi
cp "$here/load.mjs" "$work/"

say "PostgreSQL ($("$pgbin/postgres" --version)) in $tmp"
pgport="$(free_port)"
"${as_pg[@]}" "$pgbin/initdb" -D "$tmp/pgdata" -U postgres --auth=trust -E UTF8 >/dev/null
"${as_pg[@]}" "$pgbin/pg_ctl" -D "$tmp/pgdata" -l "$tmp/pg.log" -w \
  -o "-p $pgport -k $tmp -c listen_addresses=127.0.0.1 -c max_connections=200" start >/dev/null
admin="postgres://postgres@127.0.0.1:$pgport/postgres"
pg_url="postgres://postgres@127.0.0.1:$pgport/bench"
psql() { "$pgbin/psql" -qAtX -v ON_ERROR_STOP=1 "$@"; }

export WEBHOOK_SECRET="bench-secret-$(date +%s%N)"
closed_port="$(free_port)"

# serve NAME DATABASE [BOT_LOGIN]: starts one replica; its pid in $pids, its port in $ports.
ports=()
serve() {
  local name="$1" database="$2" bot="${3:-}" port
  port="$(free_port)"
  env -u ITERGATE_LOG -u GITHUB_TOKEN -u DATABASE_URL -u ITERGATE_DATABASE \
    ITERGATE_BOT_LOGIN="$bot" ITERGATE_APP_ID=1 \
    ITERGATE_PRIVATE_KEY_PATH="$root/tests/fixtures/app/test-app-key.pem" \
    ITERGATE_WEBHOOK_SECRET="$WEBHOOK_SECRET" GITHUB_API_URL="http://127.0.0.1:$closed_port" \
    "$itergate" serve --listen "127.0.0.1:$port" --database "$database" --workers 4 \
    --sweep-minutes 60 2>"$tmp/$name.log" &
  pids+=($!)
  for _ in $(seq 1 100); do
    grep -q "listening on" "$tmp/$name.log" && { ports+=("$port"); return 0; }
    sleep 0.1
  done
  cat "$tmp/$name.log" >&2
  return 1
}
stop_all() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  pids=()
  ports=()
}
fresh_pg() {
  psql "$admin" -c "DROP DATABASE IF EXISTS bench WITH (FORCE)" -c "CREATE DATABASE bench"
}
# rows SETUP: deliveries stored, and those done.
rows() {
  local sql="SELECT COUNT(*) || ' ' || COUNT(done_at) FROM deliveries"
  if [[ "$1" == sqlite ]]; then
    python3 -c 'import sqlite3, sys; print(*sqlite3.connect(sys.argv[1]).execute("SELECT COUNT(*), COUNT(done_at) FROM deliveries").fetchone())' "$tmp/inbox.db"
  else
    psql "$pg_url" -c "$sql"
  fi
}

# intake SETUP REPLICAS: the load, split over the replicas.
intake() {
  local setup="$1" n="$2" database i load_pids=()
  if [[ "$setup" == sqlite ]]; then rm -f "$tmp"/inbox.db*; database="$tmp/inbox.db"; else fresh_pg; database="$pg_url"; fi
  for i in $(seq 1 "$n"); do serve "intake_${setup}_${n}_$i" "$database"; done
  say "intake: $setup, $n replica(s), $connections connections"
  for i in $(seq 1 "$n"); do
    (cd "$work" && SERVER_PID="${pids[$((i - 1))]}" node load.mjs "http://127.0.0.1:${ports[$((i - 1))]}/webhook" \
      "$payload" issue_comment "$((connections / n))" "$((warmup_requests / n))" "$duration_s") \
      >"$out/intake_${setup}_${n}_$i.json" &
    load_pids+=($!)
  done
  for pid in "${load_pids[@]}"; do wait "$pid"; done
  stop_all
  rows "$setup" >"$out/intake_${setup}_${n}.rows"
}

# drain SETUP REPLICAS: JOBS stored deliveries, each on its own pull request, run through.
drain() {
  local setup="$1" n="$2" database i start
  if [[ "$setup" == sqlite ]]; then rm -f "$tmp"/inbox.db*; database="$tmp/inbox.db"; else fresh_pg; database="$pg_url"; fi
  serve "migrate_${setup}_${n}" "$database"
  stop_all
  python3 - "$setup" "$database" "$payload" "$jobs" "$pgbin/psql" <<'EOF'
import sqlite3, subprocess, sys, time
setup, database, payload, jobs, psql = sys.argv[1], sys.argv[2], open(sys.argv[3], "rb").read(), int(sys.argv[4]), sys.argv[5]
now = int(time.time() * 1000)
if setup == "sqlite":
    db = sqlite3.connect(database)
    db.executemany(
        "INSERT INTO deliveries (delivery_id, event, action, installation_id, repository, job_key, payload, received_at, run_at) "
        "VALUES (?, 'issue_comment', 'created', 1, 'octo/repo', ?, ?, ?, ?)",
        [(f"d{i}", f"octo/repo#{i}", payload, now, now) for i in range(jobs)])
    db.commit()
else:
    sql = ("INSERT INTO deliveries (delivery_id, event, action, installation_id, repository, job_key, payload, received_at, run_at) "
           f"SELECT 'd' || i, 'issue_comment', 'created', 1, 'octo/repo', 'octo/repo#' || i, decode('{payload.hex()}', 'hex'), {now}, {now} "
           f"FROM generate_series(1, {jobs}) AS i")
    subprocess.run([psql, "-qAtX", "-v", "ON_ERROR_STOP=1", database], input=sql.encode(), check=True)
EOF
  say "drain: $setup, $n replica(s), $jobs jobs"
  start="$(date +%s%N)"
  for i in $(seq 1 "$n"); do serve "drain_${setup}_${n}_$i" "$database" "bench[bot]"; done
  while true; do
    read -r total done_ < <(rows "$setup")
    [[ "$done_" -ge "$jobs" ]] && break
    sleep 0.05
  done
  echo "{\"jobs\": $jobs, \"ms\": $((($(date +%s%N) - start) / 1000000))}" >"$out/drain_${setup}_${n}.json"
  stop_all
}

echo "{\"cpus\": $(nproc), \"cpu_model\": \"$(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)\", \"load_before\": \"$(cut -d' ' -f1-3 /proc/loadavg)\", \"postgres\": \"$("$pgbin/postgres" --version)\", \"itergate\": \"$("$itergate" --version)\"}" >"$out/machine.json"
intake sqlite 1
intake postgres 1
intake postgres 3
drain sqlite 1
drain postgres 1
drain postgres 3

say "results"
rm -rf "$work/postgres_last"
cp -r "$out" "$work/postgres_last"
python3 - "$work/postgres_last" <<'EOF' | tee "$work/postgres_last/results.md"
import glob, json, os, sys
d = sys.argv[1]
machine = json.load(open(f"{d}/machine.json"))
print(f"{machine['cpus']} cores ({machine['cpu_model']}), load before {machine['load_before']}; {machine['postgres']}; {machine['itergate']}\n")
print("| setup | intake 2xx/s | p50 ms | p99 ms | non-2xx | rows = 2xx | drain jobs/s |")
print("| --- | ---: | ---: | ---: | ---: | :---: | ---: |")
for setup, n in (("sqlite", 1), ("postgres", 1), ("postgres", 3)):
    runs = [json.load(open(p)) for p in sorted(glob.glob(f"{d}/intake_{setup}_{n}_*.json"))]
    per_s = sum(r["measured"]["ok_per_s"] for r in runs)
    ok = sum(r["warmup"]["ok_2xx"] + r["measured"]["ok_2xx"] for r in runs)
    bad = sum(r["warmup"]["non_2xx"] + r["measured"]["non_2xx"] + r["measured"]["errors"] for r in runs)
    p50 = max(r["measured"]["p50_ms"] for r in runs)
    p99 = max(r["measured"]["p99_ms"] for r in runs)
    stored = int(open(f"{d}/intake_{setup}_{n}.rows").read().split()[0])
    drain = json.load(open(f"{d}/drain_{setup}_{n}.json"))
    print(f"| {setup}, {n} replica{'s' if n > 1 else ''} | {per_s:,.0f} | {p50:.1f} | {p99:.1f} | {bad} | "
          f"{'yes' if stored == ok else f'NO: {stored} rows, {ok} 2xx'} | {drain['jobs'] * 1000 / drain['ms']:,.0f} |")
EOF
