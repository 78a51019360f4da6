# unjs/ufo (TypeScript: pnpm, vitest, eslint, tsc): the 17 first-parent commits after
# b9b3b6c (28 Jul 2023, "chore: update dependencies", the first with @vitest/coverage-v8)
# up to 94347b0 (8 Aug 2023): query types, getQuery generics, parseFilename, stringifyQuery
# and joinURL fixes, data:/blob: protocols, autofix commits, the 1.2.0 release, dependency
# updates. All are counted, none skipped. Earlier ranges of 2023 are denser in code+test
# commits but name pnpm 7 (packageManager), which fails on Node 20 (ERR_INVALID_THIS).
# Checks: what `itergate init` writes (base_config init); dependencies installed at the base.
MIRROR=unjs+ufo
CONFIG=init
BASE_REV=b9b3b6c
PREFIX=HU
COMMITS=(17c0ad6 5bb737f afaa7a8 716cf8d 4cbab46 f1b3d5c a6fcce3 6e1ea34 b35d93d 0e060c7
    d115bad eee29ee 2caeb30 3bfbf5a b835c9d f3e5666 94347b0)
