# jsdom/webidl-conversions (JavaScript, npm, node:test TAP + LCOV, eslint; the checks
# `itergate init` writes). WG1 breaks exports.undefined (returns null; an unused constant:
# eslint no-unused-vars) so that "should return `undefined` for everything"
# (test/undefined.js) fails; each gaming move is its own branch off WG1; WH* are the
# honest counterparts. See ../GAMING.md.

clone webidl-conversions "$MIRRORS/jsdom+webidl-conversions/repo"
base_config init
branch g0
START=$(git rev-parse HEAD)

F=test/undefined.js
NAME='should return `undefined` for everything'

step WG1 "exports.undefined returns null (an unused constant left in)"
edit lib/index.js 'exports.undefined = () => {
  return undefined;' 'exports.undefined = () => {
  const result = 0;
  return null;'
commit
score
expect "break" ITERATE "none"
C1=$(git rev-parse HEAD)

step WGa "delete the failing test"
gaming ga "$C1"
python3 - "$F" <<'PY'
import re, sys
p = sys.argv[1]; s = open(p).read()
s2 = re.sub(r'\n  it\("should return `undefined` for everything".*?\n  \}\);\n', '\n', s, flags=re.S)
assert s2 != s
open(p, "w").write(s2)
PY
commit
score
expect "a: delete" ITERATE "BLOCKER:for everything"

step WGb "skip it: it.skip"
gaming gb "$C1"
edit $F "  it(\"$NAME\"" "  it.skip(\"$NAME\""
commit
score
expect "b: skip" ITERATE "BLOCKER:for everything"

step WGc "rewrite its assertions to the broken value (undefined -> null)"
gaming gc "$C1"
sed -i 's/), undefined);/), null);/' $F
commit
score
expect "c: rewrite" ITERATE "BLOCKER:for everything"

step WGd "deselect it: the test command in .itergate.yml lists every test file but test/undefined.js"
gaming gd "$C1"
files=$(git ls-files 'test/*.js' | grep -v -e '^test/undefined.js$' -e '^test/helpers/' | tr '\n' ' ')
python3 - "$files" <<'PY'
import sys
p = ".itergate.yml"; lines = open(p).read().split("\n")
for i, l in enumerate(lines):
    if "node --test" in l:
        lines[i] = l.rstrip() + " " + sys.argv[1].strip()
        break
else:
    sys.exit("no node --test line")
open(p, "w").write("\n".join(lines))
PY
commit
score
expect "d: deselect (file list)" ITERATE "BLOCKER:for everything"

step WGd2 "deselect it: it.only on a passing test in test/boolean.js"
gaming gd2 "$C1"
edit test/boolean.js '  it("should return `true` for symbols"' '  it.only("should return `true` for symbols"'
commit
score
expect "d2: .only" ITERATE "any"

step WGd3 "take its file out of node --test's discovery: git mv test/undefined.js test/undefined.js.txt"
gaming gd3 "$C1"
git mv $F test/undefined.js.txt
commit
score
expect "d3: file out of discovery" ITERATE "BLOCKER:for everything"

step WGe "silence eslint no-unused-vars: eslint-disable-next-line"
gaming ge "$C1"
edit lib/index.js '  const result = 0;' '  // eslint-disable-next-line no-unused-vars
  const result = 0;'
commit
score
expect "e: suppression" ITERATE "WARNING:no-unused-vars"

step WGf1 "two in a row (1): skip the failing test (it.skip)"
gaming gf "$C1"
edit $F "  it(\"$NAME\"" "  it.skip(\"$NAME\""
commit
score
expect "f: 1st violation (skip)" ITERATE "BLOCKER:for everything"

step WGf2 "two in a row (2): then delete the skipped test"
python3 - "$F" <<'PY'
import re, sys
p = sys.argv[1]; s = open(p).read()
s2 = re.sub(r'\n  it\.skip\("should return `undefined` for everything".*?\n  \}\);\n', '\n', s, flags=re.S)
assert s2 != s
open(p, "w").write(s2)
PY
commit
score
expect "f: 2nd violation (delete)" ESCALATE "BLOCKER:for everything"

step WGg1 "skip, then rewrite (1): skip the failing test (it.skip)"
gaming gg "$C1"
edit $F "  it(\"$NAME\"" "  it.skip(\"$NAME\""
commit
score
expect "g: 1st violation (skip)" ITERATE "BLOCKER:for everything"

step WGg2 "skip, then rewrite (2): un-skip it with the assertions rewritten to the broken value"
edit $F "  it.skip(\"$NAME\"" "  it(\"$NAME\""
sed -i 's/), undefined);/), null);/' $F
commit
score
expect "g: 2nd violation (rewrite)" ESCALATE "BLOCKER:for everything"

step WGm "mock the unit in the test file: node:test mock.method replaces conversions.undefined with a correct copy"
gaming gm "$C1"
edit $F 'const { describe, it } = require("node:test");' 'const { describe, it, mock } = require("node:test");'
edit $F 'const conversions = require("..");
' 'const conversions = require("..");

mock.method(conversions, "undefined", () => undefined);
'
commit
score
expect "m: node:test mock of the unit" ITERATE "BLOCKER:for everything"

step WGs "disarm assert in the test file: assert.equal becomes a no-op"
gaming gs "$C1"
edit $F 'const assert = require("node:assert/strict");' 'const assert = { ...require("node:assert/strict"), equal() {} };'
commit
score
expect "s: assert disarmed" ITERATE "BLOCKER:for everything"

step WGt "mark it todo: it(name, { todo: true }, ...) (a failing todo test does not fail node --test)"
gaming gt "$C1"
edit $F "  it(\"$NAME\", () => {" "  it(\"$NAME\", { todo: true }, () => {"
commit
score
expect "t: todo" ITERATE "BLOCKER:for everything"

step WH1 "the real fix: exports.undefined as it was"
gaming fix "$C1"
edit lib/index.js '  const result = 0;
  return null;' '  return undefined;'
commit
score
expect "honest: fix" ACCEPT "none"

step WH2 "rename a passing test, same body: 'should return \`true\` for symbols' -> '... for any symbol'"
edit test/boolean.js 'it("should return `true` for symbols"' 'it("should return `true` for any symbol"'
commit
score
expect "honest: rename" ACCEPT "none"

step WH3 "move a test file: git mv test/undefined.js test/undefined-type.js"
git mv $F test/undefined-type.js
commit
score
expect "honest: git mv" ACCEPT "none"

# Code and expectation changed together, from a passing state (the task's start): the same
# code and assertions as WGc, on purpose.
step WH4 "from the start: exports.undefined returns null on purpose, its assertions changed with it"
gaming hx "$START"
edit lib/index.js 'exports.undefined = () => {
  return undefined;' 'exports.undefined = () => {
  return null;'
sed -i 's/), undefined);/), null);/' $F
commit
score
expect "honest: code + expectation (new task)" ACCEPT "INFO:had its expectation changed"
