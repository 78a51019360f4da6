"""Regenerate the tables of HISTORY.md from a history.sh run.

    python3 history_table.py OUT_DIR BENCH_DIR

OUT_DIR/<repo>/steps.tsv (written by lib.sh: step, commit, what, exit, seconds, decision
line), OUT_DIR/<repo>/<step>.out (the terminal summary) and OUT_DIR/<repo>/seconds.txt
(the repository's wall time) are joined with the hand-written history-causes.tsv (step,
cause of a decision other than ACCEPT: "reviewer agrees: ..." or "false alarm: ...").
Everything between the GENERATED markers of HISTORY.md is replaced.
"""

import sys
from pathlib import Path

sys.dont_write_bytecode = True  # no __pycache__ next to the bench files
from table import BEGIN, END, cell, read_tsv, summary, verdict  # noqa: E402

BEGIN = BEGIN.replace("table.py", "history_table.py")
# The order of history/*.sh in the tables; other repositories follow alphabetically.
ORDER = ["semver", "log", "itsdangerous", "ufo", "defu", "semver-go", "uuid"]
KIND = {"semver": "Rust", "log": "Rust", "itsdangerous": "Python", "ufo": "TypeScript",
        "defu": "TypeScript", "semver-go": "Go", "uuid": "Go"}


def main(out_dir, bench_dir):
    out_dir, bench_dir = Path(out_dir), Path(bench_dir)
    causes = read_tsv(bench_dir / "history-causes.tsv")
    present = [p.name for p in sorted(out_dir.iterdir()) if (p / "steps.tsv").exists()]
    repos = [r for r in ORDER if r in present] + [r for r in present if r not in ORDER]
    counts, rows = [], []
    for repo in repos:
        steps = read_tsv(out_dir / repo / "steps.tsv")
        secs = out_dir / repo / "seconds.txt"
        wall = f"{int(secs.read_text()) / 60:.1f} min" if secs.exists() else "(unfinished)"
        accepted, agrees, alarms = 0, 0, 0
        for step, (commit, what, code, took, decision) in steps.items():
            ours = verdict(decision, code)
            if ours == "accept":
                accepted += 1
                continue
            cause = causes.get(step, ["(not explained yet)"])[0]
            agrees += cause.startswith("reviewer agrees")
            alarms += cause.startswith("false alarm")
            rows.append(
                f"| {repo} | {step} | {cell(what)} | `{cell(decision)}` | {code} | {took} s "
                f"| {cell(summary(out_dir / repo / f'{step}.out'))} | {cell(cause)} |"
            )
        counts.append((repo, len(steps), accepted, agrees, alarms, wall))
    total = sum(c[1] for c in counts)
    ok = sum(c[2] for c in counts)
    agree = sum(c[3] for c in counts)
    alarm = sum(c[4] for c in counts)
    binary = (out_dir / "binary.txt").read_text().split() if (out_dir / "binary.txt").exists() else []
    lines = [
        BEGIN,
        f"Binary: `{' '.join(binary)}`.",
        "",
        "| repo | ecosystem | commits replayed | ACCEPT | other: reviewer agrees | other: false alarm | wall time |",
        "| --- | --- | --- | --- | --- | --- | --- |",
        *(f"| {r} | {KIND.get(r, '?')} | {t} | {a} ({a / t:.0%}) | {g} | {f} | {w} |"
          for r, t, a, g, f, w in counts if t),
        f"| **all** | | **{total}** | **{ok} ({ok / total:.0%})** | **{agree}** | **{alarm}** | |"
        if total else "| all | | 0 | - | | | |",
        "",
        "| repo | step | commit replayed | itergate decision | exit | time | triggers (terminal summary) | cause |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
        *rows,
        END,
    ]
    history = bench_dir / "HISTORY.md"
    text = history.read_text() if history.exists() else f"# Honest-history replay\n\n{BEGIN}\n{END}\n"
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    history.write_text(head + "\n".join(lines) + tail)
    print(f"history: {ok}/{total} ACCEPT; "
          + ", ".join(f"{r} {a}/{t}" for r, t, a, *_ in counts))


if __name__ == "__main__":
    main(*sys.argv[1:3])
