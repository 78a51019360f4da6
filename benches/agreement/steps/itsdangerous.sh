# pallets/itsdangerous (Python): an agent-like loop (P1-P11), then 8 real commits replayed
# (PR1-PR8). Checks: pytest (junit), pytest-cov (cobertura), ruff (ruff-json).
# What a careful reviewer says about each step is in ../reviewer.tsv.

VENV=$WORK/venv-itsdangerous
clone itsdangerous "$MIRRORS/pallets+itsdangerous/repo"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/pip" install -q pytest pytest-cov ruff freezegun -e . >&2
base_config python "$VENV"
branch agent

step P1 "base64_encode keeps the '=' padding (drops .rstrip; breaks signatures)"
edit src/itsdangerous/encoding.py 'return base64.urlsafe_b64encode(string).rstrip(b"=")' 'return base64.urlsafe_b64encode(string)'
commit
score

step P2 "git revert of P1 (tree equals the base again)"
git_id revert --no-edit HEAD >/dev/null
score

step P3 "add base64_equal() to encoding.py, no test"
cat >> src/itsdangerous/encoding.py <<'PY'


def base64_equal(a: str | bytes, b: str | bytes) -> bool:
    """Whether two URL-safe base64 strings encode the same bytes,
    with or without padding.
    """
    return base64_decode(a) == base64_decode(b)
PY
commit
score

step P4 "add a test for base64_equal"
edit tests/test_itsdangerous/test_encoding.py 'from itsdangerous.encoding import base64_encode' 'from itsdangerous.encoding import base64_encode
from itsdangerous.encoding import base64_equal'
cat >> tests/test_itsdangerous/test_encoding.py <<'PY'


def test_base64_equal():
    assert base64_equal(b"YQ", "YQ==")
    assert not base64_equal(b"YQ", b"Yg")
PY
commit
score

step P5 "add base64_encode_text() and its test; one unused local variable (ruff F841)"
cat >> src/itsdangerous/encoding.py <<'PY'


def base64_encode_text(string: str | bytes) -> str:
    """Like :func:`base64_encode`, but return ASCII text."""
    encoded = base64_encode(string)
    length = len(encoded)
    return encoded.decode("ascii")
PY
edit tests/test_itsdangerous/test_encoding.py 'from itsdangerous.encoding import base64_equal' 'from itsdangerous.encoding import base64_encode_text
from itsdangerous.encoding import base64_equal'
cat >> tests/test_itsdangerous/test_encoding.py <<'PY'


@pytest.mark.parametrize(("value", "expect"), (("a", "YQ"), (b"\xff\xfe", "__4")))
def test_base64_encode_text(value, expect):
    assert base64_encode_text(value) == expect
PY
commit
score

step P6 "remove the unused variable"
edit src/itsdangerous/encoding.py '    length = len(encoded)
' ''
commit
score

step P7 "serializer.py imports want_byte, which does not exist (ImportError at collection)"
edit src/itsdangerous/serializer.py 'from .encoding import want_bytes' 'from .encoding import want_byte'
commit
score

step P8 "git revert of P7"
git_id revert --no-edit HEAD >/dev/null
score

step P9 "empty commit"
commit --allow-empty
score

step P10 "docstring wording; ruff uninstalled from the venv (tool missing)"
edit src/itsdangerous/encoding.py 'with or without padding.' 'with or without the trailing padding.'
commit
"$VENV/bin/pip" uninstall -q -y ruff >&2
score

step P11 "same commit; ruff installed again; itergate run --rescore"
"$VENV/bin/pip" install -q ruff >&2
score --rescore

# Real history: the 8 first-parent commits after 1e9550e (April 2024, typing work and the
# 2.2.0 release), replayed onto 1e9550e. Merges are cherry-picked against their first parent.
clone itsdangerous-replay "$MIRRORS/pallets+itsdangerous/repo" 1e9550e
base_config python "$VENV"
branch replay
n=0
for rev in 53efacd 0f15cf1 bc88e94 385c0eb 135eb23 93ae366 2f69e84 060bb1c; do
    n=$((n + 1))
    step PR$n "$rev $(git log -1 --format=%s "$rev")"
    pick "$rev"
    score
    merged
done
