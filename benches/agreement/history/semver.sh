# dtolnay/semver (Rust): the 18 first-parent commits after 4d1b6ec (Release 1.0.0-rc.2,
# 25 May 2021) up to f39ca7e (30 Jul 2021): the 1.0.0 release, tests for issue 217, the
# FromIterator impl, the `x`-wildcard and padding fixes, cargo features, clippy allowances,
# releases 1.0.0-1.0.4. All are counted, none skipped. The repository's history has no
# range where most commits touch code and tests (five of these do; most of the others touch
# src/ only, e.g. version bumps in src/lib.rs's html_root_url); this one is the densest
# after the 1.0 redesign. Checks: lib.sh's Rust checks (cargo test, cargo clippy
# --all-targets).
MIRROR=dtolnay+semver
CONFIG=rust
BASE_REV=4d1b6ec
PREFIX=HS
COMMITS=(f55448e ac8e718 a2ce577 9ace7a3 cd33b80 4b80b80 c632004 108a378 a03d376 3566655
    97fa1aa de43012 c6fe382 b4fa625 8fc2cfb f7fb120 9e3d648 f39ca7e)
