#!/usr/bin/env python3
"""First run: a wrong fix (the target test still fails). Later runs: the right fix.
Says DONE every time."""
import os, sys
sys.path.insert(0, os.path.dirname(__file__))
import edits

n = edits.run_number()
changed = edits.put(os.environ["BENCH_REPO"], "code", "wrong" if n == 1 else "right")
print(f"run {n}: {'a first attempt at the fix' if n == 1 else 'the real fix'} (changed: {changed})")
print("DONE", flush=True)
