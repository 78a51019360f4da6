# rust-lang/log (Rust): an agent-like loop (L1-L7), then 7 real commits replayed (LR1-LR7).
# The base has pre-existing clippy warnings and `unimplemented!` in a test helper: base debt.
# What a careful reviewer says about each step is in ../reviewer.tsv.

clone log "$MIRRORS/rust-lang+log/repo"
base_config rust
branch agent

step L1 "Level::as_str returns *self as usize (type error E0308)"
edit src/lib.rs "    pub fn as_str(&self) -> &'static str {
        LOG_LEVEL_NAMES[*self as usize]" "    pub fn as_str(&self) -> &'static str {
        *self as usize"
commit
score

step L2 "fix the type error (tree equals the base again)"
edit src/lib.rs "    pub fn as_str(&self) -> &'static str {
        *self as usize" "    pub fn as_str(&self) -> &'static str {
        LOG_LEVEL_NAMES[*self as usize]"
git diff --quiet master -- src/lib.rs || { echo "L2 does not restore the base" >&2; exit 1; }
commit
score

step L3 "add pub fn Level::as_char, no test"
edit src/lib.rs '    /// Returns the string representation of the `Level`.' '    /// The first letter of the level'"'"'s name: `E`, `W`, `I`, `D` or `T`.
    pub fn as_char(&self) -> char {
        self.as_str().as_bytes()[0] as char
    }

    /// Returns the string representation of the `Level`.'
commit
score

step L4 "add a test for as_char"
edit src/lib.rs '    #[test]
    fn test_level_as_str() {' '    #[test]
    fn test_level_as_char() {
        assert_eq!(Level::Error.as_char(), '"'"'E'"'"');
        assert_eq!(Level::Trace.as_char(), '"'"'T'"'"');
    }

    #[test]
    fn test_level_as_str() {'
commit
score

step L5 "as_char calls level_name_lookup, which does not exist (E0425); trailers Tokens-Used: lots, Confidence: 0.4"
edit src/lib.rs '        self.as_str().as_bytes()[0] as char' '        level_name_lookup(*self).as_bytes()[0] as char'
commit -m "Tokens-Used: lots
Confidence: 0.4"
score

step L6 "git revert of L5"
git_id revert --no-edit HEAD >/dev/null
score

step L7 "empty commit"
commit --allow-empty
score

# Real history: the 7 first-parent merges after 9c55760 (May-June 2026), replayed onto it.
clone log-replay "$MIRRORS/rust-lang+log/repo" 9c55760
base_config rust
branch replay
n=0
for rev in 761461a c906cfb 5808392 ce6cd9f a5b5b21 87e0621 f405739; do
    n=$((n + 1))
    step LR$n "$rev $(git log -1 --format=%s "$rev")"
    pick "$rev"
    score
    merged
done
