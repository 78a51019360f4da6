# dtolnay/semver (Rust): an agent-like loop (S1-S11), then 8 real commits replayed (SR1-SR8).
# Checks: cargo test (libtest) and cargo clippy (cargo-json); no coverage check for Rust.
# What a careful reviewer says about each step is in ../reviewer.tsv.

clone semver "$MIRRORS/dtolnay+semver/repo"
base_config rust
branch agent

step S1 "VersionReq Display: separator ', ' becomes ',' (breaks test_version_req)"
edit src/display.rs 'formatter.write_str(", ")?;' 'formatter.write_str(",")?;'
commit
score

step S2 "git revert of S1 (tree equals the base again)"
git_id revert --no-edit HEAD >/dev/null
score

step S3 "add pub fn Version::is_prerelease, no test"
edit src/lib.rs '    /// Create `Version` by parsing from string representation.' '    /// Whether this version has a pre-release part.
    pub fn is_prerelease(&self) -> bool {
        !self.pre.is_empty()
    }

    /// Create `Version` by parsing from string representation.'
commit
score

step S4 "add a test for is_prerelease"
cat >> tests/test_version.rs <<'RS'

#[test]
fn test_is_prerelease() {
    assert!(version("1.0.0-alpha").is_prerelease());
    assert!(!version("1.0.0+build").is_prerelease());
}
RS
commit
score

step S5 "add Version::bump_patch with doc and test; its body has one clippy warning (let_and_return)"
edit src/lib.rs '    /// Create `Version` by parsing from string representation.' '    /// The next patch release: `1.2.3-rc.1+b5` becomes `1.2.4`. Pre-release and build
    /// metadata are dropped.
    pub fn bump_patch(&self) -> Version {
        let next = Version::new(self.major, self.minor, self.patch + 1);
        next
    }

    /// Create `Version` by parsing from string representation.'
cat >> tests/test_version.rs <<'RS'

#[test]
fn test_bump_patch() {
    assert_eq!(version("1.2.3").bump_patch(), version("1.2.4"));
    assert_eq!(version("1.2.3-rc.1+b5").bump_patch(), version("1.2.4"));
}
RS
commit
score

step S6 "fix the clippy warning (return the expression)"
edit src/lib.rs '        let next = Version::new(self.major, self.minor, self.patch + 1);
        next' '        Version::new(self.major, self.minor, self.patch + 1)'
commit
score

step S7 "is_prerelease calls is_build_only, which does not exist (E0425; cargo test says so only on stderr)"
edit src/lib.rs '        !self.pre.is_empty()' '        !self.pre.is_empty() && !is_build_only(self)'
commit
score

step S8 "git revert of S7"
git_id revert --no-edit HEAD >/dev/null
score

step S9 "empty commit"
commit --allow-empty
score

step S10 "doc-only change, scored where cargo is not on PATH (tool missing)"
edit src/lib.rs '    /// Whether this version has a pre-release part.' '    /// Whether this version has a pre-release part, like `1.0.0-alpha`.'
commit
score_env PATH=/usr/local/bin:/usr/bin:/bin --

step S11 "same commit; cargo back on PATH; itergate run --rescore"
score --rescore

# Real history: 8 consecutive first-parent commits of December 2025, replayed onto the
# commit before them. The base has a nightly-only bench (`#![feature(test)]`), so clippy
# --all-targets fails on the base already: base debt.
clone semver-replay "$MIRRORS/dtolnay+semver/repo" 9d44958
base_config rust
branch replay
n=0
for rev in 09426ba af7b483 d913bcd c06e910 f4bed91 a466ff6 38fd181 2ed4555; do
    n=$((n + 1))
    step SR$n "$rev $(git log -1 --format=%s "$rev")"
    pick "$rev"
    score
    merged
done
