#!/usr/bin/env bash
# Installs lizard (cyclomatic complexity for every language itergate detects) into a
# virtual environment in $1 (default: target/tools/lizard under the repository root) with
# pip from PyPI, unless that version is there. Needs python3 with venv. Prints the
# directory of the `lizard` executable, for PATH:
#   PATH="$(scripts/ensure-lizard.sh | tail -n1):$PATH" itergate init
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$root/target/tools/lizard}
version=1.24.3
if ! command -v python3 >/dev/null; then
  echo "python3 is missing: install Python 3.8 or newer (Debian: apt-get install python3 python3-venv)" >&2
  exit 1
fi
mkdir -p "$(dirname "$dir")"
# Tests call this in parallel: one installs, the others wait.
exec 9>"$dir.lock"
flock 9
if [ ! -x "$dir/bin/lizard" ] || ! "$dir/bin/lizard" --version 2>/dev/null | grep -qx "$version"; then
  python3 -m venv --clear "$dir" >&2
  "$dir/bin/pip" install --quiet --disable-pip-version-check "lizard==$version" >&2
fi
printf '%s\n' "$dir/bin"
