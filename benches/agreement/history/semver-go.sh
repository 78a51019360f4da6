# Masterminds/semver (Go): the 17 first-parent merges after 49c09bf (4 Mar 2021) up to
# e683c4b (7 Apr 2023): lint updates, caret and tilde fixes, TextMarshaler for versions and
# constraints, bug fixes 193 and 197, the fuzz tests moved, go.mod and CI updates, 3.2.0
# notes. All are counted, none skipped; 9 of 17 touch code and tests. (steps/semver-go.sh
# replays the later range 6fec737..71f2b39.) Checks: what `itergate init` writes.
MIRROR=Masterminds+semver
CONFIG=init
BASE_REV=49c09bf
PREFIX=HG
COMMITS=(1d45b76 9b07ecb bfa99d9 3248ef7 1959065 b8121eb b22e1a4 2084c82 00300c4 3efb84c
    4694ab0 8e6ddaa 249ee2d 2c5535b cc17577 4e0f582 e683c4b)
