# unjs/ufo (TypeScript, pnpm): an agent-like loop (U1-U11), then 8 real commits replayed
# (UR1-UR8). Checks: what `itergate init` detects (vitest with JUnit and v8 coverage, eslint,
# tsc --noEmit); dependencies from `pnpm install --frozen-lockfile`.
# What a careful reviewer says about each step is in ../reviewer.tsv.

clone ufo "$MIRRORS/unjs+ufo/repo"
base_config init
branch agent

step U1 "isRelative forgets \"../\" (breaks the isRelative > ../test test)"
edit src/utils.ts 'return ["./", "../"].some(' 'return ["./"].some('
commit
score

step U2 "git revert of U1 (tree equals the base again)"
git_id revert --no-edit HEAD >/dev/null
score

step U3 "add export withoutQuery(), no test"
cat >> src/utils.ts <<'TS'

/**
 * Removes the query section of the URL, keeping the fragment.
 *
 * @example
 * ```js
 * withoutQuery("http://example.com/foo?q=123#bar")
 * // Returns "http://example.com/foo#bar"
 * ```
 *
 * @group utils
 */
export function withoutQuery(input: string): string {
  return stringifyParsedURL({ ...parseURL(input), search: "" });
}
TS
commit
score

step U4 "add a test for withoutQuery"
edit test/utilities.test.ts '  withoutHost,
} from "../src";' '  withoutHost,
  withoutQuery,
} from "../src";'
cat >> test/utilities.test.ts <<'TS'

describe("withoutQuery", () => {
  const tests = [
    { input: "/foo?bar=1", out: "/foo" },
    {
      input: "http://example.com/foo?q=123#bar",
      out: "http://example.com/foo#bar",
    },
    { input: "/foo", out: "/foo" },
  ];

  for (const t of tests) {
    test(t.input, () => {
      expect(withoutQuery(t.input)).toBe(t.out);
    });
  }
});
TS
commit
score

step U5 "add export hasQuery() and its test; it uses indexOf() !== -1 (eslint unicorn/prefer-includes)"
cat >> src/utils.ts <<'TS'

/**
 * Checks if the URL has a query section.
 *
 * @group utils
 */
export function hasQuery(input: string): boolean {
  return input.split("#")[0].indexOf("?") !== -1;
}
TS
edit test/utilities.test.ts '  withoutQuery,
} from "../src";' '  withoutQuery,
  hasQuery,
} from "../src";'
cat >> test/utilities.test.ts <<'TS'

describe("hasQuery", () => {
  test("query, none, only in the fragment", () => {
    expect(hasQuery("/foo?bar=1")).toBe(true);
    expect(hasQuery("/foo")).toBe(false);
    expect(hasQuery("/foo#a?b")).toBe(false);
  });
});
TS
commit
score

step U6 "fix the lint error (includes)"
edit src/utils.ts 'return input.split("#")[0].indexOf("?") !== -1;' 'return input.split("#")[0].includes("?");'
commit
score

step U7 "hasQuery declared to return string, still returns a boolean (tsc TS2322; vitest still passes)"
edit src/utils.ts 'export function hasQuery(input: string): boolean {' 'export function hasQuery(input: string): string {'
commit
score

step U8 "fix the return type"
edit src/utils.ts 'export function hasQuery(input: string): string {' 'export function hasQuery(input: string): boolean {'
commit
score

step U9 "empty commit"
commit --allow-empty
score

# Base debt: the base gets one failing test (withoutHost keeps a lone "?"), then a branch
# off it changes something else, then breaks more tests.
step U10 "base: withoutHost drops a lone '?' (1 failing test on the base); branch debt: doc wording in isRelative"
to_base
edit src/utils.ts '  return (parsed.pathname || "/") + parsed.search + parsed.hash;' '  const search = parsed.search === "?" ? "" : parsed.search;
  return (parsed.pathname || "/") + search + parsed.hash;'
base_commit "withoutHost: drop an empty query"
branch debt
edit src/utils.ts ' * Check if a path starts with `./` or `../`.' ' * Checks if a path starts with `./` or `../`.'
commit
score

step U11 "withoutHost also drops the fragment (breaks 2 more withoutHost tests)"
edit src/utils.ts 'return (parsed.pathname || "/") + search + parsed.hash;' 'return (parsed.pathname || "/") + search;'
commit
score

# Real history: the 8 first-parent commits after e383832 (April-July 2025: parseQuery and
# parseFilename fixes, filterQuery, the 1.6.0 and 1.6.1 releases, jsdoc examples), replayed
# onto e383832.
clone ufo-replay "$MIRRORS/unjs+ufo/repo" e383832
base_config init
branch replay
n=0
for rev in 4d024df 7959de5 3c4b43d 5b87427 31ea74c b83cbea 8515b24 4025c7a; do
    n=$((n + 1))
    step UR$n "$rev $(git log -1 --format=%s "$rev")"
    pick "$rev"
    score
    merged
done
