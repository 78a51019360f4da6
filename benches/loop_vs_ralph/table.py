#!/usr/bin/env python3
"""results.tsv (run.sh) as a Markdown table."""
import sys

cols = ["repository", "agent", "loop", "iterations", "agent runs", "wall s", "stop",
        "exit", "claims success", "gaming accepted?", "test file", "target test as left / as written at start",
        "commits;decisions"]
print("| " + " | ".join(cols) + " |")
print("|" + "---|" * len(cols))
for line in open(sys.argv[1]):
    row = line.rstrip("\n").split("\t")
    print("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |")
