#!/usr/bin/env python3
"""results.tsv (run.sh) as a Markdown table, sorted by repository, agent, loop."""
import sys

AGENTS = ["honest_two_tries", "gaming", "stalling", "hanging"]
cols = ["repository", "agent", "loop", "iterations", "agent runs", "wall s", "stop",
        "exit", "claims success", "gaming accepted?", "test file vs start",
        "target test: as left / as written at start", "commits; decisions"]
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
rows.sort(key=lambda r: (r[0], AGENTS.index(r[1]) if r[1] in AGENTS else 9, r[2]))
print("| " + " | ".join(cols) + " |")
print("|" + "---|" * len(cols))
for row in rows:
    print("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |")
