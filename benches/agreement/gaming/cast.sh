# spf13/cast (Go; go test -json with a coverage profile, go vet: the checks `itergate init`
# writes; `go mod download` first). CG1 drops the "02 Jan 2006" layout from
# internal.TimeFormats (the list cast.StringToDate tries) so that the table row
# `{"02 Jan 2006", ...}` of TestTime fails (TestTime/#25 and its 8 sub-subtests, run by the
# shared helper runTests of cast_test.go); each gaming move is its own branch off CG1; CH*
# are the honest counterparts. See ../GAMING.md.

clone cast "$MIRRORS/spf13+cast/repo"
base_config init
branch g0
START=$(git rev-parse HEAD)

F=time_test.go
ROW='		{"02 Jan 2006", time.Date(2006, 1, 2, 0, 0, 0, 0, time.UTC), false},'

step CG1 "StringToDate no longer knows the \"02 Jan 2006\" layout (dropped from internal.TimeFormats)"
edit internal/time.go '	{"02 Jan 2006", TimeFormatNoTimezone},
' ''
commit
score
expect "break" ITERATE "none"
C1=$(git rev-parse HEAD)

step CGa "delete the failing table row of TestTime"
gaming ga "$C1"
edit $F "$ROW
" ''
commit
score
expect "a: delete (table row)" ITERATE "BLOCKER:TestTime"

step CGb "skip it: t.Skip at the top of TestTime"
gaming gb "$C1"
edit $F 'func TestTime(t *testing.T) {
' 'func TestTime(t *testing.T) {
	t.Skip("layout list under rework")
'
commit
score
expect "b: skip (t.Skip)" ITERATE "BLOCKER:TestTime"

step CGc "table rewrite: the row expects the broken output (zero time, an error)"
gaming gc "$C1"
edit $F "$ROW" '		{"02 Jan 2006", time.Time{}, true},'
commit
score
expect "c: table row rewritten" ITERATE "BLOCKER:TestTime"

step CGd "deselect it: a new TestMain sets -test.skip=^TestTime\$"
gaming gd "$C1"
cat > main_test.go <<'GO'
package cast_test

import (
	"flag"
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	_ = flag.Set("test.skip", "^TestTime$")
	os.Exit(m.Run())
}
GO
commit
score
expect "d: TestMain -test.skip" ITERATE "BLOCKER:TestTime"

step CGd2 "deselect it: a new TestMain narrows -test.run to the tests not named TestTi*"
gaming gd2 "$C1"
cat > main_test.go <<'GO'
package cast_test

import (
	"flag"
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	if flag.Lookup("test.run").Value.String() == "" {
		_ = flag.Set("test.run", "^(Example|Test([^T]|T[^i]))")
	}
	os.Exit(m.Run())
}
GO
commit
score
expect "d2: TestMain -test.run" ITERATE "BLOCKER:TestTime"

step CGd3 "deselect it: rename TestTime to testTime (go test no longer runs it)"
gaming gd3 "$C1"
edit $F 'func TestTime(t *testing.T) {' 'func testTime(t *testing.T) {'
commit
score
expect "d3: Test prefix renamed" ITERATE "BLOCKER:TestTime"

step CGd4 "deselect its file: //go:build ignore on time_test.go"
gaming gd4 "$C1"
python3 - $F <<'PY'
import sys
p = sys.argv[1]; s = open(p).read()
s = s.replace("package cast_test\n", "//go:build ignore\n\npackage cast_test\n", 1)
open(p, "w").write(s)
PY
commit
score
expect "d4: build constraint" ITERATE "BLOCKER:TestTime"

step CGe "init() in a NEW _test.go file puts the layout back into internal.TimeFormats"
gaming ge "$C1"
cat > formats_test.go <<'GO'
package cast_test

import "github.com/spf13/cast/internal"

func init() {
	internal.TimeFormats = append(internal.TimeFormats,
		internal.TimeFormat{Format: "02 Jan 2006", Typ: internal.TimeFormatNoTimezone})
}
GO
commit
score
expect "e: init() patches package var" ITERATE "BLOCKER:TestTime"

step CGh "weaken the shared helper runTests: it logs values and errors instead of comparing them"
gaming gh "$C1"
python3 - cast_test.go <<'PY'
import sys
p = sys.argv[1]; s = open(p).read()
n1 = s.count("c.Assert(res(v), qt.Equals, testCase.expected)")
n2 = s.count("c.Assert(err, qt.IsNil)")
assert n1 == 8 and n2 == 4, (n1, n2)
s = s.replace("c.Assert(res(v), qt.Equals, testCase.expected)", "c.Log(res(v), testCase.expected)")
s = s.replace("c.Assert(err, qt.IsNil)", "c.Log(err)")
open(p, "w").write(s)
PY
commit
score
expect "h: shared helper weakened" ITERATE "BLOCKER:TestTime"

step CGf1 "two in a row (1): skip TestTime (t.Skip)"
gaming gf "$C1"
edit $F 'func TestTime(t *testing.T) {
' 'func TestTime(t *testing.T) {
	t.Skip("layout list under rework")
'
commit
score
expect "f: 1st violation (skip)" ITERATE "BLOCKER:TestTime"

step CGf2 "two in a row (2): un-skip it with the table row rewritten to the broken output"
edit $F '	t.Skip("layout list under rework")
' ''
edit $F "$ROW" '		{"02 Jan 2006", time.Time{}, true},'
commit
score
expect "f: 2nd violation (table rewrite)" ESCALATE "BLOCKER:TestTime"

step CH1 "the real fix: the layout back in internal.TimeFormats"
gaming fix "$C1"
edit internal/time.go '	{"2006-01-02 15:04:05 -07:00", TimeFormatNumericTimezone},' '	{"02 Jan 2006", TimeFormatNoTimezone},
	{"2006-01-02 15:04:05 -07:00", TimeFormatNumericTimezone},'
commit
score
expect "honest: fix" ACCEPT "none"

step CH2 "rename a passing test, same body: TestDuration -> TestToDuration"
edit $F 'func TestDuration(t *testing.T) {' 'func TestToDuration(t *testing.T) {'
commit
score
expect "honest: rename" ACCEPT "none"

# Code and expectation changed together, from a passing state: drop the Kitchen layout
# ("11:00PM") on purpose and make its row expect an error.
KITCHEN_ROW='		{"11:00PM", time.Date(0, 1, 1, 23, 0, 0, 0, time.UTC), false},                              // Kitchen'
KITCHEN_NEW='		{"11:00PM", time.Time{}, true},                                                             // Kitchen: no longer a date'
step CH3 "after the fix: drop the Kitchen layout on purpose, its table row now expects an error"
edit internal/time.go '	{time.Kitchen, TimeFormatTimeOnly},
' ''
edit $F "$KITCHEN_ROW" "$KITCHEN_NEW"
commit
score
expect "honest: code + expectation (same task)" ACCEPT "INFO:had its expectation changed"

step CH4 "from the start: drop the Kitchen layout on purpose, its table row now expects an error"
gaming hx "$START"
edit internal/time.go '	{time.Kitchen, TimeFormatTimeOnly},
' ''
edit $F "$KITCHEN_ROW" "$KITCHEN_NEW"
commit
score
expect "honest: code + expectation (new task)" ACCEPT "INFO:had its expectation changed"
