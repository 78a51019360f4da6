# google/uuid (Go, no dependencies): the 19 first-parent commits after 47f5b39 (21 Sep 2023)
# up to 2d3c2a9 (14 Nov 2024), the newest: the UUIDs slice type, versions 6 and 7, Validate,
# the Max UUID, v7 monotonicity, Compare, error types, v6 from a custom time, releases
# 1.4.0-1.6.0, doc and CI commits. All are counted, none skipped; 9 of 19 touch code and
# tests. Checks: what `itergate init` writes (go test -json with a cover profile, go vet).
MIRROR=google+uuid
CONFIG=init
BASE_REV=47f5b39
PREFIX=HQ
COMMITS=(cd5fbbd 7c22e97 8de8764 b35aa6a 9ee7366 4d47f8e c58770e a2b2b32 1d8b6ea 016b199
    16939da 0f11ee6 b5b9aeb 6e10cd1 53dda83 e8d82d3 d55c313 0e97ed3 2d3c2a9)
