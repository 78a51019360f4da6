#!/usr/bin/env bash
# Installs itergate for the GitHub Action (action.yml): the release archive for the runner's
# OS and architecture, at the action's own version, verified against the release's
# SHA256SUMS and kept in the runner's tool cache; built from the action's source only when
# no release asset exists (a branch, a commit, `uses: ./`). Tested by tests/local/action_install.rs.
#
# Environment (set by the runner unless noted):
#   RUNNER_OS, RUNNER_ARCH          Linux|macOS, X64|ARM64: pick the archive (Windows is refused)
#   GITHUB_ACTION_REF               the ref the action was used at (v0.2.0): the version
#   GITHUB_ACTION_REPOSITORY        owner/name of the action: where its releases are
#   GITHUB_ACTION_PATH              the action's source, for the fallback build
#   RUNNER_TOOL_CACHE, RUNNER_TEMP  the tool cache and a scratch directory
#   GITHUB_PATH                     the binary's directory is appended to it
#   ITERGATE_VERSION                (the input `version`) pins another version than the ref
#   ITERGATE_RELEASE_BASE_URL       (optional) releases' base URL, default
#                                   https://github.com/$GITHUB_ACTION_REPOSITORY/releases/download
#   ITERGATE_FALLBACK_INSTALL       (optional) a command replacing the fallback build; it must
#                                   put the binary in "$ITERGATE_INSTALL_ROOT/bin"
set -euo pipefail

say() { printf 'itergate install: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

scratch=$(mktemp -d "${RUNNER_TEMP:-${TMPDIR:-/tmp}}/itergate-install.XXXXXX")
trap 'rm -rf "$scratch"' EXIT

add_to_path() {
  [ -n "${GITHUB_PATH:-}" ] || die "GITHUB_PATH is not set: not running in GitHub Actions?"
  printf '%s\n' "$1" >> "$GITHUB_PATH"
}

# Builds from the action's own source (minutes), saying why. A pinned version that has no
# release is an error instead: the action's source is another version.
fallback() {
  if [ -n "${ITERGATE_VERSION:-}" ]; then
    die "$1; the input version pins it, so building the action's own source would install another version"
  fi
  say "$1"
  local root="${RUNNER_TEMP:-$scratch}/itergate"
  mkdir -p "$root"
  if [ -n "${ITERGATE_FALLBACK_INSTALL:-}" ]; then
    say "building with ITERGATE_FALLBACK_INSTALL instead"
    ITERGATE_INSTALL_ROOT="$root" bash -c "$ITERGATE_FALLBACK_INSTALL"
  else
    [ -n "${GITHUB_ACTION_PATH:-}" ] || die "GITHUB_ACTION_PATH is not set: nothing to build from"
    command -v cargo >/dev/null 2>&1 \
      || die "no prebuilt binary, and cargo is not installed to build one (add dtolnay/rust-toolchain before this step)"
    say "building from source: cargo install --locked --path $GITHUB_ACTION_PATH (this takes minutes)"
    cargo install --locked --quiet --path "$GITHUB_ACTION_PATH" --root "$root"
  fi
  add_to_path "$root/bin"
  exit 0
}

# The release target triple for RUNNER_OS/RUNNER_ARCH (see .github/workflows/release.yml).
target_for() {
  case "$1/$2" in
    Linux/X64) echo x86_64-unknown-linux-musl ;;
    Linux/ARM64) echo aarch64-unknown-linux-musl ;;
    macOS/X64) echo x86_64-apple-darwin ;;
    macOS/ARM64) echo aarch64-apple-darwin ;;
    *) return 1 ;;
  esac
}

sha256_of() {
  if command -v sha256sum >/dev/null 2>&1; then
    sha256sum "$1" | cut -d' ' -f1
  else
    shasum -a 256 "$1" | cut -d' ' -f1
  fi
}

# Downloads $1 to $2; prints the HTTP status (000 when there was no answer).
download() {
  curl --silent --show-error --location --retry 3 --connect-timeout 20 \
    --output "$2" --write-out '%{http_code}' "$1" || true
}

# --- which version ---------------------------------------------------------------------
version="${ITERGATE_VERSION:-}"
source_of_version="the input version"
if [ -z "$version" ]; then
  version="${GITHUB_ACTION_REF:-}"
  source_of_version="the action's ref"
fi
[ -n "$version" ] || fallback "the action was not used at a release (no ref, e.g. uses: ./): no prebuilt binary to download"
version="${version#refs/tags/}"
case "$version" in
  v[0-9]*) tag="$version" ;;
  [0-9]*) tag="v$version" ;;
  *) fallback "$source_of_version '$version' is not a release version (a branch or a commit): no prebuilt binary to download" ;;
esac
# A full version (v1.2.3) never changes; a moving tag (v1, v1.2) is checked against the
# release's SHA256SUMS before a cached binary is reused.
exact=false
[[ "$tag" =~ ^v[0-9]+\.[0-9]+\.[0-9]+([-+].*)?$ ]] && exact=true

# --- which asset -----------------------------------------------------------------------
os="${RUNNER_OS:-}"
arch="${RUNNER_ARCH:-}"
[ "$os" != Windows ] \
  || die "itergate does not run on Windows (its checks' process groups, scratch worktrees and notes use Unix APIs): use a Linux or macOS runner"
target=$(target_for "$os" "$arch") \
  || fallback "no prebuilt itergate for $os/$arch (prebuilt: Linux X64/ARM64, macOS X64/ARM64)"
exe=itergate
ext=tar.gz
asset="itergate-$tag-$target.$ext"
arch_dir=$(printf '%s' "$arch" | tr '[:upper:]' '[:lower:]')
[ -n "${RUNNER_TOOL_CACHE:-}" ] || die "RUNNER_TOOL_CACHE is not set: not running in GitHub Actions?"
cache_dir="$RUNNER_TOOL_CACHE/itergate/${tag#v}/$arch_dir"

if [ -z "${ITERGATE_RELEASE_BASE_URL:-}" ] && [ -z "${GITHUB_ACTION_REPOSITORY:-}" ]; then
  fallback "GITHUB_ACTION_REPOSITORY is not set: no release to download from"
fi
base_url="${ITERGATE_RELEASE_BASE_URL:-https://github.com/${GITHUB_ACTION_REPOSITORY:-}/releases/download}"
base_url="${base_url%/}/$tag"

cached() { [ -x "$cache_dir/$exe" ] && [ -f "$cache_dir.complete" ] && [ -f "$cache_dir/.sha256" ]; }

if $exact && cached; then
  say "itergate $tag ($target) found in the tool cache at $cache_dir: reusing it, no download"
  add_to_path "$cache_dir"
  exit 0
fi

# --- download and verify ---------------------------------------------------------------
status=$(download "$base_url/SHA256SUMS" "$scratch/SHA256SUMS")
case "$status" in
  200) ;;
  404) fallback "no release $tag at $base_url (SHA256SUMS: HTTP 404)" ;;
  *) die "could not download $base_url/SHA256SUMS (HTTP $status)" ;;
esac
expected=$(awk -v name="$asset" '{ file = $2; sub(/^\*/, "", file) } file == name { print $1; exit }' "$scratch/SHA256SUMS")
[ -n "$expected" ] || fallback "release $tag has no $asset in its SHA256SUMS"

if cached && [ "$(cat "$cache_dir/.sha256")" = "$expected" ]; then
  say "itergate $tag ($target) found in the tool cache at $cache_dir, same checksum as the release: reusing it"
  add_to_path "$cache_dir"
  exit 0
fi

say "downloading $base_url/$asset"
status=$(download "$base_url/$asset" "$scratch/$asset")
case "$status" in
  200) ;;
  404) fallback "release $tag lists $asset but it cannot be downloaded (HTTP 404)" ;;
  *) die "could not download $base_url/$asset (HTTP $status)" ;;
esac
actual=$(sha256_of "$scratch/$asset")
if [ "$actual" != "$expected" ]; then
  die "checksum mismatch for $asset: SHA256SUMS says $expected, the download is $actual. Nothing was installed."
fi
say "checksum verified: $actual"

mkdir "$scratch/x"
tar -xzf "$scratch/$asset" -C "$scratch/x"
binary="$scratch/x/itergate-$tag-$target/$exe"
[ -f "$binary" ] || die "$asset does not contain itergate-$tag-$target/$exe"
chmod +x "$binary"

# --- into the tool cache (the layout of actions/tool-cache: <tool>/<version>/<arch>) ------
staging="$cache_dir.partial.$$"
rm -rf "$staging"
mkdir -p "$staging"
cp "$binary" "$staging/$exe"
printf '%s\n' "$expected" > "$staging/.sha256"
rm -rf "$cache_dir" "$cache_dir.complete"
mv "$staging" "$cache_dir"
touch "$cache_dir.complete"
say "installed itergate $tag ($target) in $cache_dir"
add_to_path "$cache_dir"
