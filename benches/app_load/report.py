"""Turns one run's JSON files (run.sh) into the Markdown tables of RESULTS.md.

    python3 report.py DIRECTORY
"""

import json
import os
import sys


def load(directory: str, name: str) -> dict:
    with open(os.path.join(directory, name + ".json")) as f:
        return json.load(f)


def ms(value) -> str:
    return "-" if value is None else f"{value:.2f} ms"


def count(value: float) -> str:
    return f"{value:,.0f}"


def rows_answered(run: dict) -> int:
    """New deliveries answered 202 (stored) over the warm-up and the measured run."""
    return sum(int(part["by_status"].get("202", 0)) for part in (run["warmup"], run["measured"]))


def twoxx(run: dict) -> int:
    return sum(part["ok_2xx"] for part in (run["warmup"], run["measured"]))


def main() -> None:
    d = sys.argv[1]
    machine, servers = load(d, "machine"), load(d, "servers")
    disks = {"before": load(d, "disk_before"), "after": load(d, "disk_after")}
    stored = load(d, "disk_stored") if os.path.exists(os.path.join(d, "disk_stored.json")) else None
    disk = disks["before"]
    p, i = load(d, "probot")["measured"], load(d, "itergate")["measured"]
    pr, ir = load(d, "probot_rate")["measured"], load(d, "itergate_rate")["measured"]
    prss, irss = servers["probot_peak_rss_kb"] / 1024, servers["itergate_peak_rss_kb"] / 1024
    pg, ig = load(d, "probot_loadgen")["measured"], load(d, "itergate_loadgen")["measured"]
    conns = load(d, "probot")["connections"]
    rate = load(d, "probot_rate")["rate"]

    def cpu_per_delivery(run: dict) -> str:
        if run.get("server_cpu_s") is None or not run["ok_2xx"]:
            return "-"
        return f"{1000 * run['server_cpu_s'] / run['ok_2xx']:.3f} ms"

    def failures(run: dict) -> str:
        return f"{run['non_2xx']} / {run['errors']} / {run['timeouts']}"

    lines = [
        f"Run {machine['date']} of `{machine['itergate']}`; {machine['cpus']} cores "
        f"({machine['cpu_model']}), Linux {machine['kernel']}, Node {machine['node']}, "
        f"SQLite {disk['sqlite']} (Python's), {machine['filesystem']}; payload "
        f"{disk['payload_bytes']:,} bytes. Load average {machine['load_before']} before, "
        f"{servers['load_after']} after; rustc processes {machine['rustc_before']} before, "
        f"{servers['rustc_after']} after.",
        "",
        f"| {conns} connections, saturated | Probot | itergate serve | itergate / Probot |",
        "| --- | --- | --- | --- |",
        f"| throughput (2xx/s) | {count(p['ok_per_s'])} | {count(i['ok_per_s'])} | "
        f"{i['ok_per_s'] / p['ok_per_s']:.2f}x |",
        f"| p50 acknowledgement | {ms(p['p50_ms'])} | {ms(i['p50_ms'])} | |",
        f"| p99 acknowledgement | {ms(p['p99_ms'])} | {ms(i['p99_ms'])} | |",
        f"| peak RSS (VmHWM) | {prss:.1f} MiB | {irss:.1f} MiB | "
        f"{irss / prss:.2f} (1/{prss / irss:.1f}) |",
        f"| non-2xx / errors / timeouts | {failures(p)} | {failures(i)} | |",
        f"| server CPU per delivery | {cpu_per_delivery(p)} | {cpu_per_delivery(i)} | |",
        f"| load generator CPU / server CPU | {p['client_cpu_s']:.1f} s / {p['server_cpu_s']:.1f} s "
        f"| {i['client_cpu_s']:.1f} s / {i['server_cpu_s']:.1f} s | |",
        f"| requests, elapsed | {p['requests']:,} in {p['seconds']:.1f} s "
        f"| {i['requests']:,} in {i['seconds']:.1f} s | |",
        "",
        f"| {conns} connections, saturated, loadgen (Rust, one thread) | Probot | itergate serve "
        "| itergate / Probot |",
        "| --- | --- | --- | --- |",
        f"| throughput (2xx/s) | {count(pg['ok_per_s'])} | {count(ig['ok_per_s'])} | "
        f"{ig['ok_per_s'] / pg['ok_per_s']:.2f}x |",
        f"| p50 / p99 acknowledgement | {ms(pg['p50_ms'])} / {ms(pg['p99_ms'])} "
        f"| {ms(ig['p50_ms'])} / {ms(ig['p99_ms'])} | |",
        f"| non-2xx / errors | {pg['non_2xx']} / {pg['errors']} | {ig['non_2xx']} / {ig['errors']} | |",
        f"| server CPU per delivery | {cpu_per_delivery(pg)} | {cpu_per_delivery(ig)} | |",
        f"| load generator CPU / server CPU | {pg['client_cpu_s']:.1f} s / {pg['server_cpu_s']:.1f} s "
        f"| {ig['client_cpu_s']:.1f} s / {ig['server_cpu_s']:.1f} s | |",
        f"| requests, elapsed | {pg['requests']:,} in {pg['seconds']:.1f} s "
        f"| {ig['requests']:,} in {ig['seconds']:.1f} s | |",
        "",
        f"| {rate:,} deliveries/s, {conns} connections | Probot | itergate serve | |",
        "| --- | --- | --- | --- |",
        f"| achieved (2xx/s) | {count(pr['ok_per_s'])} | {count(ir['ok_per_s'])} | |",
        f"| p50 acknowledgement | {ms(pr['p50_ms'])} | {ms(ir['p50_ms'])} | |",
        f"| p99 acknowledgement | {ms(pr['p99_ms'])} | {ms(ir['p99_ms'])} | |",
        f"| p99, corrected for coordinated omission (autocannon, whole ms) | "
        f"{pr['autocannon_p99_ms']} ms | {ir['autocannon_p99_ms']} ms | |",
        f"| max | {ms(pr['max_ms'])} | {ms(ir['max_ms'])} | |",
        f"| non-2xx / errors / timeouts | {failures(pr)} | {failures(ir)} | |",
        "",
    ]
    working = os.path.join(d, "itergate_rate_working.json")
    if os.path.exists(working):
        w = load(d, "itergate_rate_working")["measured"]
        done = servers.get("itergate_jobs_done_working", 0)
        lines += [
            f"| {rate:,} deliveries/s, {conns} connections, workers applying every delivery "
            "(itergate's default 4) | itergate serve |",
            "| --- | --- |",
            f"| achieved (2xx/s) | {count(w['ok_per_s'])} |",
            f"| p50 / p99 acknowledgement | {ms(w['p50_ms'])} / {ms(w['p99_ms'])} |",
            f"| p99, corrected for coordinated omission | {w['autocannon_p99_ms']} ms |",
            f"| max | {ms(w['max_ms'])} |",
            f"| jobs finished by the end of the run | {done:,} |",
            "",
        ]
    answered = sum(rows_answered(load(d, n)) for n in ("itergate", "itergate_rate")) + twoxx(
        load(d, "itergate_loadgen")
    )
    recorded_2xx = sum(twoxx(load(d, n)) for n in ("probot", "probot_loadgen", "probot_rate"))
    lines += [
        f"Every answer accounted for: itergate answered 202 {answered:,} times (warm-ups "
        f"included) and its inbox holds {servers['itergate_rows']:,} rows "
        f"({'equal' if answered == servers['itergate_rows'] else 'NOT EQUAL'}); Probot "
        f"answered 2xx {recorded_2xx:,} times and its handler recorded "
        f"{servers['probot_recorded']:,} events. itergate wrote {servers['itergate_log_lines']} "
        "log lines over the run.",
        "",
        "| this disk: SQLite WAL, synchronous=FULL, one writer | rows/s | commits/s "
        "| transaction p50 | p99 |",
        "| --- | --- | --- | --- | --- |",
    ]
    for when, measured in disks.items():
        for case in measured["cases"]:
            rows = f"{case['batch']} row{'s' if case['batch'] > 1 else ''}"
            lines.append(
                f"| {rows} per transaction, {when} itergate | {count(case['rows_per_s'])} "
                f"| {count(case['commits_per_s'])} | {ms(case['transaction_p50_ms'])} "
                f"| {ms(case['transaction_p99_ms'])} |"
            )
    best = max(c["rows_per_s"] for m in disks.values() for c in m["cases"])
    tens = [c["rows_per_s"] for m in disks.values() for c in m["cases"] if c["batch"] == 10]
    fastest = max(i["ok_per_s"], ig["ok_per_s"])
    lines += [
        "",
        f"itergate's best saturated throughput here ({count(fastest)}/s) is "
        f"{100 * fastest / best:.0f}% of the best row rate measured for the disk alone with "
        f"the payload as it came, and {100 * fastest / max(tens):.0f}% of the best at 10 rows "
        f"per transaction (a group holds at most one delivery per connection: {conns} here).",
    ]
    if stored:
        lines += [
            "",
            f"itergate stores the payload LZ4-compressed ({stored['payload_bytes']:,} bytes on "
            "average in this run). The disk with rows of that size, after itergate:",
            "",
            "| rows per transaction | rows/s | commits/s | transaction p50 | p99 |",
            "| --- | --- | --- | --- | --- |",
        ]
        for case in stored["cases"]:
            lines.append(
                f"| {case['batch']} | {count(case['rows_per_s'])} | {count(case['commits_per_s'])} "
                f"| {ms(case['transaction_p50_ms'])} | {ms(case['transaction_p99_ms'])} |"
            )
        stored_tens = [c["rows_per_s"] for c in stored["cases"] if c["batch"] == 10]
        lines += [
            "",
            f"So itergate commits {100 * fastest / max(stored_tens):.0f}% of the rows this disk "
            "commits of the same size at 10 rows per transaction.",
        ]
    if os.path.exists(os.path.join(d, "closed_loop.json")):
        cl = load(d, "closed_loop")
        lines += [
            "",
            f"With {cl['clients']} deliveries in flight and no HTTP at all (`closed_loop`: "
            f"{cl['clients']} threads each waiting for its row's commit, one writer, rows of "
            f"{cl['payload_bytes']:,} bytes), this disk commits {count(cl['rows_per_s'])} rows/s "
            f"in groups of {cl['rows_per_commit']:.1f} ({cl['commit_us'] / 1000:.2f} ms each). "
            f"itergate under loadgen reaches {100 * ig['ok_per_s'] / cl['rows_per_s']:.0f}% of "
            f"that; 2x Probot's loadgen throughput would be "
            f"{100 * 2 * pg['ok_per_s'] / cl['rows_per_s']:.0f}% of it.",
        ]
    lines += [
        "",
        "| target | result | |",
        "| --- | --- | --- |",
        f"| throughput >= 2x Probot's (autocannon) | {i['ok_per_s'] / p['ok_per_s']:.2f}x | "
        f"{'met' if i['ok_per_s'] >= 2 * p['ok_per_s'] else 'missed'} |",
        f"| throughput >= 2x Probot's (loadgen) | {ig['ok_per_s'] / pg['ok_per_s']:.2f}x | "
        f"{'met' if ig['ok_per_s'] >= 2 * pg['ok_per_s'] else 'missed'} |",
        f"| peak RSS <= 1/5 of Probot's | 1/{prss / irss:.1f} | "
        f"{'met' if irss * 5 <= prss else 'missed'} |",
        f"| p99 < 10 ms at {rate:,}/s | {ms(ir['p99_ms'])} (corrected: {ir['autocannon_p99_ms']} ms) | "
        f"{'met' if ir['p99_ms'] < 10 and ir['autocannon_p99_ms'] < 10 else 'missed'} |",
    ]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
