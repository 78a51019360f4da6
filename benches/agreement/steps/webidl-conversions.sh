# jsdom/webidl-conversions (JavaScript, npm, node:test): an agent-like loop (W1-W11), then
# 8 real commits replayed (WR1-WR8). Checks: what `itergate init` detects (node --test with
# TAP and its built-in LCOV coverage, eslint); dependencies from `npm ci`.
# What a careful reviewer says about each step is in ../reviewer.tsv.

clone webidl-conversions "$MIRRORS/jsdom+webidl-conversions/repo"
base_config init
branch agent

step W1 "undefined() returns null (breaks 'should return \`undefined\` for everything')"
edit lib/index.js 'exports.undefined = () => {
  return undefined;' 'exports.undefined = () => {
  return null;'
commit
score

step W2 "git revert of W1 (tree equals the base again)"
git_id revert --no-edit HEAD >/dev/null
score

step W3 "add exports.isByteString, no test"
edit lib/index.js 'exports.USVString = (value, options = {}) => {' 'exports.isByteString = value => {
  if (typeof value !== "string") {
    return false;
  }
  for (let i = 0; i < value.length; ++i) {
    if (value.charCodeAt(i) > 0xFF) {
      return false;
    }
  }
  return true;
};

exports.USVString = (value, options = {}) => {'
commit
score

step W4 "add a test for isByteString"
cat >> test/string-types.js <<'JS'

describe("isByteString", () => {
  const sut = conversions.isByteString;

  it("should accept strings of bytes only", () => {
    assert.equal(sut("abc\xFF"), true);
    assert.equal(sut("\u0100"), false);
    assert.equal(sut(42), false);
  });
});
JS
commit
score

step W5 "add exports.isUSVString and its test; one unused variable (eslint no-unused-vars)"
edit lib/index.js 'exports.USVString = (value, options = {}) => {' 'exports.isUSVString = value => {
  const length = typeof value === "string" ? value.length : 0;
  return typeof value === "string" && value.isWellFormed();
};

exports.USVString = (value, options = {}) => {'
cat >> test/string-types.js <<'JS'

describe("isUSVString", () => {
  const sut = conversions.isUSVString;

  it("should reject lone surrogates and non-strings", () => {
    assert.equal(sut("a\uD83D\uDE00"), true);
    assert.equal(sut("a\uD83D"), false);
    assert.equal(sut(null), false);
  });
});
JS
commit
score

step W6 "remove the unused variable"
edit lib/index.js '  const length = typeof value === "string" ? value.length : 0;
' ''
commit
score

step W7 "isByteString loses a closing parenthesis (SyntaxError: every test file fails to load)"
edit lib/index.js 'if (value.charCodeAt(i) > 0xFF) {' 'if (value.charCodeAt(i) > 0xFF {'
commit
score

step W8 "git revert of W7"
git_id revert --no-edit HEAD >/dev/null
score

step W9 "empty commit"
commit --allow-empty
score

# Base debt: the base gets one failing test (USVString stops replacing lone surrogates),
# then a branch off it changes something else, then breaks more tests.
step W10 "base: USVString without toWellFormed() (1 failing test on the base); branch debt: comment wording"
to_base
edit lib/index.js 'return exports.DOMString(value, options).toWellFormed();' 'return exports.DOMString(value, options);'
base_commit "USVString: return the DOMString as it is"
branch debt
edit lib/index.js '// Round x to the nearest integer, choosing the even integer if it lies halfway between two.' '// Rounds x to the nearest integer, choosing the even integer if it lies halfway between two.'
commit
score

step W11 "DOMString ignores treatNullAsEmptyString (breaks 3 more tests)"
edit lib/index.js 'if (options.treatNullAsEmptyString && value === null) {' 'if (options.treatNullAsEmptyString && value === undefined) {'
commit
score

# Real history: the 8 first-parent commits after 3f59834 (September 2025 - January 2026:
# allowResizable, the 8.0.0 release, faster ByteString/USVString, a dev-dependency update
# that changes package-lock.json, publishing, README, 8.0.1), replayed onto 3f59834, the
# commit after the move to node:test (51bfc79; before it the tests ran on mocha). The
# repository has little more history on node:test, so half of these touch no code.
clone webidl-conversions-replay "$MIRRORS/jsdom+webidl-conversions/repo" 3f59834
base_config init
branch replay
n=0
for rev in 612790f 7d0cfd3 aacfad6 98b8109 891548e 287da0b be2787c 1c40227; do
    n=$((n + 1))
    step WR$n "$rev $(git log -1 --format=%s "$rev")"
    pick "$rev"
    score
    merged
done
