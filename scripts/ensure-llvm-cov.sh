#!/usr/bin/env bash
# Installs cargo-llvm-cov into $1 (default: target/tools under the repository root) with
# `cargo install --locked`, unless it is there, and the toolchain's llvm-tools with rustup.
# Prints the directory of the binary. Its build takes minutes on two cores, so only the
# ignored test uses it:
#   cargo test --test local llvm_cov -- --ignored
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$root/target/tools}
version=0.9.1
if [ ! -x "$dir/bin/cargo-llvm-cov" ] || ! "$dir/bin/cargo-llvm-cov" llvm-cov --version 2>/dev/null | grep -q "$version"; then
  cargo install --locked --quiet --force --root "$dir" --version "$version" cargo-llvm-cov >&2
fi
rustup component add llvm-tools-preview >&2
printf '%s\n' "$dir/bin"
