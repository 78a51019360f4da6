#!/usr/bin/env bash
# Installs the pinned Node dev tools that wrote the JavaScript/TypeScript report fixtures
# (tests/fixtures/reports/VERSIONS.md): vitest with its v8 coverage provider, typescript,
# eslint 9 (flat config) with @eslint/js, jest and jest-junit; and mocha, which scenario tests
# in tests/local run. They go into a cache directory, $1 (default: target/node-tools under
# the repository root), with `npm install --prefix DIR` from a package.json this script
# writes there. Nothing is done when the tools are present and the stamp file records the
# same pins. Needs node (20.19 or newer) and npm; prints the directory at the end.
#
# A throwaway project uses the tools through a hard-linked copy of DIR/node_modules (a
# symlink works too, but Node then reports the tools' frames under DIR, not the project):
#   cp -al "$(scripts/ensure-node-tools.sh | tail -n1)/node_modules" node_modules
#   npx vitest run
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$root/target/node-tools}

# Exact versions, checked to install and run on Node 20.20: vitest 5 needs Node 22, 4.1
# still runs on 20; eslint is held at 9 (flat config), 9.39 being its last minor; mocha at
# 11.8, its last 11.x (Node 18.18 or 20.9 and newer; 12 needs 20.19).
pins='{
  "name": "itergate-node-tools",
  "private": true,
  "description": "Pinned tools for itergate report fixtures; written by scripts/ensure-node-tools.sh",
  "devDependencies": {
    "vitest": "4.1.12",
    "@vitest/coverage-v8": "4.1.12",
    "typescript": "5.9.3",
    "eslint": "9.39.5",
    "@eslint/js": "9.39.5",
    "jest": "30.5.2",
    "jest-junit": "17.0.0",
    "mocha": "11.8.0"
  }
}'

for tool in node npm; do
  if ! command -v "$tool" >/dev/null; then
    echo "$tool is missing: install Node.js 20.19 or newer (Debian: apt-get install nodejs npm)" >&2
    exit 1
  fi
done

mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
# Tests call this concurrently: one installs, the others wait for it.
if command -v flock >/dev/null; then
  exec 9>"$dir/.itergate-node-tools.lock"
  flock 9
fi
stamp=$dir/.itergate-node-tools.stamp
bins=(vitest tsc eslint jest mocha)

present=1
for bin in "${bins[@]}"; do
  [ -x "$dir/node_modules/.bin/$bin" ] || present=0
done
[ -d "$dir/node_modules/@vitest/coverage-v8" ] && [ -d "$dir/node_modules/jest-junit" ] || present=0

if [ "$present" -eq 1 ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$pins" ]; then
  printf '%s\n' "$dir"
  exit 0
fi

printf '%s\n' "$pins" > "$dir/package.json"
rm -f "$stamp"
npm install --no-audit --no-fund --prefix "$dir" >&2
for bin in "${bins[@]}"; do
  if [ ! -x "$dir/node_modules/.bin/$bin" ]; then
    echo "npm install finished but $dir/node_modules/.bin/$bin is missing" >&2
    exit 1
  fi
done
printf '%s\n' "$pins" > "$stamp"
printf '%s\n' "$dir"
