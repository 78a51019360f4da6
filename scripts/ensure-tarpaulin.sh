#!/usr/bin/env bash
# Installs cargo-tarpaulin (the Rust coverage tool itergate uses when cargo-llvm-cov cannot
# run: it needs no llvm-tools) into $1 (default: target/tools under the repository root)
# with `cargo install --locked`, unless it is there. Prints the directory of the binary.
# Its build takes several minutes on two cores, so only the opt-in test uses it:
#   ITERGATE_TARPAULIN=1 cargo test --test local tarpaulin
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$root/target/tools}
version=0.37.5
if [ ! -x "$dir/bin/cargo-tarpaulin" ] || ! "$dir/bin/cargo-tarpaulin" --version 2>/dev/null | grep -q "$version"; then
  cargo install --locked --quiet --root "$dir" --version "$version" cargo-tarpaulin >&2
fi
printf '%s\n' "$dir/bin"
