"""Times itergate against a Python peer, interleaved, and prints medians, MB/s and ratios.

usage: compare_timings.py REPS LABEL FILE ITERGATE_CMD... -- PEER_CMD... [++ LABEL FILE ...]
Each command gets FILE appended. Outputs of the two commands must agree (same counts).
"""
import os
import statistics
import subprocess
import sys
import time


def run(cmd):
    start = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip()
    return time.perf_counter() - start, out


def compare(reps, label, path, ours, peer):
    size_mb = os.path.getsize(path) / 1e6
    times = {"itergate": [], "peer": []}
    outputs = {}
    for _ in range(reps):  # interleaved: drift in machine load hits both alike
        for name, cmd in (("itergate", ours + [path]), ("peer", peer + [path])):
            elapsed, out = run(cmd)
            times[name].append(elapsed)
            outputs[name] = out
    if outputs["itergate"] != outputs["peer"]:
        sys.exit(f"{label}: outputs differ:\n  itergate: {outputs['itergate']}\n  peer:     {outputs['peer']}")
    ours_s = statistics.median(times["itergate"])
    peer_s = statistics.median(times["peer"])
    print(
        f"| {label} | {size_mb:.1f} MB | {ours_s * 1000:.0f} ms ({size_mb / ours_s:.0f} MB/s) "
        f"| {peer_s * 1000:.0f} ms ({size_mb / peer_s:.1f} MB/s) | {peer_s / ours_s:.1f}x | {outputs['peer']} |"
    )


def main(argv):
    reps = int(argv[0])
    specs = " ".join(argv[1:]).split(" ++ ")
    print(f"median of {reps} interleaved runs, wall clock per process")
    print("| input | size | itergate | Python peer | speed-up | counts (agree) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for spec in specs:
        words = spec.split(" ")
        label, path, rest = words[0], words[1], words[2:]
        split = rest.index("--")
        compare(reps, label, path, rest[:split], rest[split + 1 :])


if __name__ == "__main__":
    main(sys.argv[1:])
