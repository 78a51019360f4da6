#!/usr/bin/env bash
# Installs cargo-deny into target/tools with `cargo install --locked --debug` (about a minute,
# once; a release build takes twice that to save two seconds of its check),
# downloads every crate of the graph (`cargo fetch`), and makes ready the RustSec advisory
# database deny.toml names: the live one when GitHub answers, else the snapshot committed in
# .ci/advisories/ (scripts/advisory-snapshot.py wrote it; SOURCE says from which commit).
# The snapshot covers the crates listed in .ci/advisories/COVERED: a crate of a lockfile it
# does not list fails here, so a new dependency is never checked against nothing.
# Prints the directory of the binary; then run `cargo-deny --offline --locked check`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$root/target/tools
version=0.20.2
if [ ! -x "$dir/bin/cargo-deny" ] || ! "$dir/bin/cargo-deny" --version 2>/dev/null | grep -q "$version"; then
  cargo install --locked --quiet --debug --root "$dir" --version "$version" cargo-deny >&2
fi
cd "$root"
cargo fetch --locked --quiet >&2
# cargo-deny keeps the database of a URL in <db-path>/advisory-db-<hash of the URL>.
db=target/advisory-dbs/advisory-db-3157b0e258782691
if timeout 60 "$dir/bin/cargo-deny" --locked fetch db >/dev/null 2>&1; then
  echo "cargo-deny: the live RustSec advisory database" >&2
else
  snapshot=.ci/advisories
  missing=$(python3 - "$snapshot/COVERED" <<'PY'
import sys, tomllib
covered = set(open(sys.argv[1]).read().split())
names = set()
for lock in ("Cargo.lock", "fuzz/Cargo.lock"):
    with open(lock, "rb") as f:
        names.update(p["name"] for p in tomllib.load(f).get("package", []))
print(" ".join(sorted(names - covered)))
PY
)
  if [ -n "$missing" ]; then
    echo "cargo-deny: the advisory snapshot in $snapshot does not cover: $missing" >&2
    echo "  refresh it from a clone of https://github.com/rustsec/advisory-db:" >&2
    echo "  python3 scripts/advisory-snapshot.py PATH-TO-CLONE" >&2
    exit 1
  fi
  read -r _ commit date <"$snapshot/SOURCE"
  rm -rf "$db"
  mkdir -p "$db"
  cp -r "$snapshot/crates" "$db/"
  git -C "$db" init --quiet
  git -C "$db" add crates
  GIT_AUTHOR_DATE=$date GIT_COMMITTER_DATE=$date git -C "$db" \
    -c user.name=advisory-snapshot -c user.email=advisory-snapshot@invalid \
    commit --quiet -m "rustsec/advisory-db $commit (the crates of Cargo.lock)"
  echo "cargo-deny: GitHub unreachable; the advisory snapshot of $date (rustsec/advisory-db $commit)" >&2
fi
printf '%s\n' "$dir/bin"
