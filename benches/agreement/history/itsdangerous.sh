# pallets/itsdangerous (Python): the 15 first-parent merges after 64048c1 (4 Aug 2019) up to
# d2871e8 (18 May 2020), the start of 2.0: Python 2 dropped, timezone-aware datetimes,
# `loads` with a custom `max_age` fix, simplejson removed, JWS deprecated, `date_signed`
# datetimes, key rotation, fallback signers removed, then CI and requirement pinning.
# All are counted, none skipped; 7 of 15 touch code and tests, the densest range of the
# repository's history on Python 3. Checks: lib.sh's Python checks (pytest, pytest-cov with
# --cov=., ruff), from a venv of their own ($AGREEMENT_DIR/venv-history-itsdangerous).
MIRROR=pallets+itsdangerous
CONFIG=python
BASE_REV=64048c1
PREFIX=HP
COMMITS=(3703fbd 1a9b8d1 542fad1 981ade6 b11475a 1776c8f 2881d93 786f5de a361058 c6a3eff
    3ca36c1 b0545d7 473173b 39ce571 d2871e8)
