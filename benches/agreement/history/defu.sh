# unjs/defu (TypeScript: pnpm, vitest, eslint, tsc): the 18 first-parent commits after
# 63d0e8e (24 Oct 2023) up to 70cffe5 (3 Apr 2024): prettier 3, strict mode, "only merge
# plain objects", the cjs entry, isPlainObject moved and tested, Module objects, releases
# 6.1.3 and 6.1.4, dependency updates. All are counted, none skipped. The next commit
# (23cc432, April 2026, "chore: update repo") is left out: it replaces the tooling and its
# dependencies, which are installed at the base. Checks: what `itergate init` writes.
MIRROR=unjs+defu
CONFIG=init
BASE_REV=63d0e8e
PREFIX=HD
COMMITS=(32650f1 82d68c7 59d0f6a 4111333 3c8c880 3834ca1 fdf100e b9b9052 8634955 e922a16
    b24a213 e5a48d3 e458b63 7c7a9a4 1b9fcab 955204b b65f603 70cffe5)
