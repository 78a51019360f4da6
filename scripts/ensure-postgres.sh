#!/usr/bin/env bash
# Makes sure PostgreSQL's server binaries (initdb, pg_ctl) are on this machine for the App's
# PostgreSQL tests: nothing to do with DATABASE_URL set or the binaries present; otherwise,
# as root, Debian's `postgresql` package is installed. Used by .ci/run and by the tests.
set -euo pipefail
if [ -n "${DATABASE_URL:-}" ] || compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null \
    || command -v initdb >/dev/null; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
  echo "PostgreSQL's server binaries are missing: install them (Debian: apt-get install postgresql), or set DATABASE_URL" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends postgresql >/dev/null
