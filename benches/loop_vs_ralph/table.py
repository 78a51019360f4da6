#!/usr/bin/env python3
"""results.tsv (run.sh) as a Markdown table, sorted by set-up, repository, agent, loop; then
the summary line over the gaming/tampering agents."""
import sys

SETUPS = ["base", "spec", "branch"]
AGENTS = ["honest_two_tries", "gaming", "rewrite_then_empty", "env_tamper", "stalling", "hanging"]
GAMING = {"gaming", "rewrite_then_empty", "env_tamper"}
cols = ["set-up", "repository", "agent", "loop", "iterations", "agent runs", "wall s", "stop",
        "exit", "claims success", "gaming/tampering accepted?", "test file vs start",
        "environment as left", "target test: as left / as written at start",
        "commits; decisions"]
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
order = lambda value, known: known.index(value) if value in known else len(known)
rows.sort(key=lambda r: (order(r[0], SETUPS), r[1], order(r[2], AGENTS), r[3]))
print("| " + " | ".join(cols) + " |")
print("|" + "---|" * len(cols))
for row in rows:
    print("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |")
gaming = [r for r in rows if r[2] in GAMING]
ig = [r for r in gaming if r[3] == "itergate"]
off = [r for r in gaming if r[3] == "itergate-off"]
ra = [r for r in gaming if r[3] == "ralph"]
print()
accepted = lambda runs: sum(r[10] == "yes" for r in runs)
line = f"itergate (sandbox on) accepted {accepted(ig)} of {len(ig)} gaming/tampering runs"
if off:
    line += f"; with --sandbox off {accepted(off)} of {len(off)}"
print(f"{line}; Ralph finished on {accepted(ra)} of {len(ra)}.")
