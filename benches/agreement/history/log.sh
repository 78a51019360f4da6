# rust-lang/log (Rust): the 16 first-parent merges after bd861cc (7 Dec 2021) up to 6c3cd4a
# (20 Apr 2022): doc tests, the kv macros, releases 0.4.15 and 0.4.16, Value from NonZero
# integers, the STATIC_MAX_LEVEL fix, `set_boxed_logger` docs, 128-bit Value references,
# CI and typo merges. All are counted, none skipped; the densest range of code+test merges
# in the repository's history (6 of 16). Checks: lib.sh's Rust checks.
MIRROR=rust-lang+log
CONFIG=rust
BASE_REV=bd861cc
PREFIX=HL
COMMITS=(8a80388 d5f3c5b 2f7e96f 52f4e57 95b209d f9f459a 21e30fc 863c461 d672066 59fa5dc
    bc181df e719dbf 3cc17c1 4249b56 20a5321 6c3cd4a)
