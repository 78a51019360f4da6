#!/usr/bin/env python3
"""Changes nothing relevant: one line appended to README.md. Says DONE."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import edits

n = edits.run_number()
with open("README.md", "a") as f:
    f.write(f"\n<!-- reviewed (run {n}) -->\n")
print(f"run {n}: reviewed the code, updated the docs")
print("DONE", flush=True)
