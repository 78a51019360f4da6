#!/usr/bin/env python3
"""Cached-push overhead of several itergate builds side by side, in one interleaved run.

Uses benches/hook_overhead.py's repositories and timing (CPU of a whole `git push` to a local
bare remote, every push a new commit whose tree was scored before), with only the variants
that compare builds: a plain `exit 0` hook; the floor of any hook that reads the history, a
hook that reads the pushed commit's note with git itself (`git notes show`, one process); and,
per binary given, itergate with a cached tree.

Usage: scripts/hook_overhead_compare.py ROUNDS LABEL=BINARY [LABEL=BINARY ...]
"""
import importlib.util
import os
import shutil
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "hook_overhead", os.path.join(HERE, "..", "benches", "hook_overhead.py"))
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)


# Reads the note of each pushed commit (none there: the read is what is measured).
NOTE_HOOK = """#!/bin/sh
while read -r local_ref local_oid remote_ref remote_oid; do
  git notes --ref=itergate show "$local_oid" >/dev/null 2>&1
done
exit 0
"""


def itergate_repo(root, name, binary):
    repo = bench.make_repo(root, name)
    with open(os.path.join(repo, ".itergate.yml"), "w") as f:
        f.write("checks:\n  noop:\n    run: 'true'\nhook:\n  base: main\n")
    bench.sh(["git", "add", "."], cwd=repo)
    bench.sh(["git", "commit", "-q", "-m", "itergate"], cwd=repo)
    bench.sh([binary, "hook", "install"], cwd=repo)
    return repo


def main():
    rounds = int(sys.argv[1])
    builds = [arg.split("=", 1) for arg in sys.argv[2:]]
    root = tempfile.mkdtemp(prefix="hook-compare-")
    try:
        variants = {}
        repo = bench.make_repo(root, "exit0")
        bench.write_hook(repo, "#!/bin/sh\nexit 0\n")
        variants["exit 0 hook"] = (repo, False)
        repo = bench.make_repo(root, "note")
        bench.write_hook(repo, NOTE_HOOK)
        variants["git: read one note"] = (repo, False)
        for i, (label, binary) in enumerate(builds):
            variants[f"itergate {label}"] = (itergate_repo(root, f"b{i}", os.path.abspath(binary)), True)
        samples = {name: [] for name in variants}
        for i in range(2):  # warm-up: every tree cached, page cache primed
            for repo, cached in variants.values():
                bench.push_once(repo, i, cached)
        for i in range(2, rounds + 2):
            for name, (repo, cached) in variants.items():
                samples[name].append(bench.push_once(repo, i, cached))
        base = statistics.median(samples["exit 0 hook"])
        print(f"git push CPU (user+sys), median of {rounds} interleaved rounds")
        print(f"{'variant':32} {'median ms':>10} {'over exit-0 ms':>15}")
        for name, values in samples.items():
            m = statistics.median(values)
            print(f"{name:32} {m:10.1f} {m - base:15.1f}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
