#!/usr/bin/env bash
# Makes sure the Go toolchain is on this machine, for regenerating the go test/cover/vet
# report fixtures (tests/fixtures/reports/VERSIONS.md): with `go` on PATH its version is
# printed and nothing else is done; otherwise, as root, Debian's `golang-go` package is
# installed. The fixtures were written by Go 1.26; Debian 12's golang-go is 1.19, which runs
# the same commands but writes no `build-output`/`build-fail` events (added in Go 1.24).
set -euo pipefail
if command -v go >/dev/null; then
  go version
  exit 0
fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
  echo "The Go toolchain is missing: install it (Debian: apt-get install golang-go, or https://go.dev/dl/)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends golang-go >/dev/null
go version
