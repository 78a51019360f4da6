# Masterminds/semver (Go, no dependencies): an agent-like loop (G1-G11), then 8 real
# commits replayed (GR1-GR8). Checks: what `itergate init` detects (go test -json with a
# coverage profile, go vet; staticcheck only if it is on PATH); `go mod download` first.
# What a careful reviewer says about each step is in ../reviewer.tsv.

clone semver-go "$MIRRORS/Masterminds+semver/repo"
base_config init
branch agent

step G1 "IncMinor keeps the patch number (breaks TestInc: expected \"1.3.0\" got \"1.3.3\")"
edit version.go '	vNext.pre = ""
	vNext.patch = 0
	if v.minor == math.MaxUint64 {' '	vNext.pre = ""
	if v.minor == math.MaxUint64 {'
commit
score

step G2 "git revert of G1 (tree equals the base again)"
git_id revert --no-edit HEAD >/dev/null
score

step G3 "add method Version.IsPrerelease, no test"
edit version.go '// Metadata returns the metadata on the version.' '// IsPrerelease reports whether the version has a pre-release part.
func (v Version) IsPrerelease() bool {
	return v.pre != ""
}

// Metadata returns the metadata on the version.'
commit
score

step G4 "add a test for IsPrerelease"
cat >> version_test.go <<'GO'

func TestIsPrerelease(t *testing.T) {
	if !MustParse("1.2.3-beta.1").IsPrerelease() {
		t.Error("1.2.3-beta.1 should be a pre-release")
	}
	if MustParse("1.2.3+build").IsPrerelease() {
		t.Error("1.2.3+build should not be a pre-release")
	}
}
GO
commit
score

step G5 "add method Version.Core and its test; a leftover statement after its return (go vet unreachable)"
edit version.go '// Metadata returns the metadata on the version.' '// Core returns the version without its pre-release and metadata parts.
func (v Version) Core() Version {
	return *New(v.major, v.minor, v.patch, "", "")
	return v
}

// Metadata returns the metadata on the version.'
cat >> version_test.go <<'GO'

func TestCore(t *testing.T) {
	if got := MustParse("v1.2.3-beta.1+build").Core().String(); got != "1.2.3" {
		t.Errorf("Core() = %q, want %q", got, "1.2.3")
	}
}
GO
commit
score

step G6 "remove the unreachable statement"
edit version.go '	return *New(v.major, v.minor, v.patch, "", "")
	return v
' '	return *New(v.major, v.minor, v.patch, "", "")
'
commit
score

step G7 "IsPrerelease calls hasPrerelease, which does not exist (compile error: undefined)"
edit version.go '	return v.pre != ""
}' '	return hasPrerelease(v)
}'
commit
score

step G8 "git revert of G7"
git_id revert --no-edit HEAD >/dev/null
score

step G9 "empty commit"
commit --allow-empty
score

# Base debt: the base gets one failing test (Value() prefixes a "v"), then a branch off it
# changes something else, then breaks more tests.
step G10 "base: Value() returns \"v1.1.1\" (TestDriverValuer fails on the base); branch debt: doc wording in Major"
to_base
edit version.go '	return v.String(), nil
}' '	return "v" + v.String(), nil
}'
base_commit "Value: keep the v prefix"
branch debt
edit version.go '// Major returns the major version.' '// Major returns the major version number.'
commit
score

step G11 "String() drops the metadata (breaks TestNew, TestCoerceString and TestSetMetadata too)"
edit version.go '	if v.metadata != "" {
		fmt.Fprintf(&buf, "+%s", v.metadata)
	}
' ''
commit
score

# Real history: the 8 first-parent merges after 6fec737 (June 2025 - April 2026: CalVer-like
# versions restored, constraint fixes, pre-release handling, lowercase errors, 3.4.0 notes,
# constraint error messages, Inc edge cases), replayed onto 6fec737 against their first parent.
clone semver-go-replay "$MIRRORS/Masterminds+semver/repo" 6fec737
base_config init
branch replay
n=0
for rev in ebda872 057c901 9760c47 dc05094 61fc460 bf01c61 c4a2d7e 71f2b39; do
    n=$((n + 1))
    step GR$n "$rev $(git log -1 --format=%s "$rev")"
    pick "$rev"
    score
    merged
done
