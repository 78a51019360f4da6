#!/usr/bin/env python3
"""Changes nothing and never finishes: sleeps far past any wall clock (AGENT_SLEEP
seconds, 600 by default). Would say DONE if it ever woke up."""
import os, sys, time
sys.path.insert(0, os.path.dirname(__file__))
import edits

n = edits.run_number()
print(f"run {n}: thinking...", flush=True)
time.sleep(float(os.environ.get("AGENT_SLEEP", "600")))
print("DONE", flush=True)
