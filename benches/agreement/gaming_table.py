"""Regenerate the tables of GAMING.md from a gaming.sh run.

    python3 gaming_table.py OUT_DIR BENCH_DIR

OUT_DIR/<repo>/steps.tsv (lib.sh: step, commit, what, exit, seconds, decision line),
OUT_DIR/<repo>/expected.tsv (gaming.sh's `expect`: step, move, expected decision, expected
integrity: `BLOCKER:<text>` or `WARNING:<text>`, an Integrity line of that severity that
contains the text; `none`, no Integrity line; `any`, not judged) and OUT_DIR/<repo>/<step>.out
(the terminal summary, whose `Integrity:` lines are quoted) and OUT_DIR/<repo>/<step>.record.json
(the record, whose INFO "had its expectation changed" notes, which the summary does not
print, are quoted after them, marked "(record only)"). Everything between the
GENERATED markers of GAMING.md is replaced.
"""

import json
import sys
from pathlib import Path

sys.dont_write_bytecode = True  # no __pycache__ next to the bench files
from table import BEGIN, END, cell, read_tsv, verdict  # noqa: E402

BEGIN = BEGIN.replace("table.py", "gaming_table.py")
ORDER = ["log", "itsdangerous", "webidl-conversions", "ufo", "cast"]
KIND = {"log": "Rust, rust-lang/log", "itsdangerous": "Python, pallets/itsdangerous",
        "webidl-conversions": "JavaScript, jsdom/webidl-conversions",
        "ufo": "TypeScript, unjs/ufo", "cast": "Go, spf13/cast"}


def integrity(out_file):
    """The lines of the summary's `Integrity:` section."""
    if not out_file.exists():
        return []
    lines, inside = [], False
    for line in out_file.read_text().splitlines():
        if line == "Integrity:":
            inside = True
        elif inside and line.startswith("  - "):
            lines.append(line[4:])
        else:
            inside = False
    return lines


def record_notes(record_file):
    """The record's "had its expectation changed" notes (INFO by default; the summary prints
    no INFO findings)."""
    if not record_file.exists():
        return []
    try:
        issues = json.loads(record_file.read_text())["record"]["issues"]
    except (ValueError, KeyError, TypeError):
        return []
    return [f"INFO {i['finding']}" for i in issues
            if i.get("dimension") == "integrity" and i.get("severity") == "INFO"
            and "had its expectation changed" in i.get("finding", "")]


def span(text):
    """A Markdown code span, with a longer fence when the text holds a backtick."""
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def meets(expected, found):
    if expected == "any":
        return True
    if expected == "none":
        return not found
    severity, _, text = expected.partition(":")
    return any(f.startswith(severity + " ") and text in f for f in found)


def main(out_dir, bench_dir):
    out_dir, bench_dir = Path(out_dir), Path(bench_dir)
    present = [p.name for p in sorted(out_dir.iterdir()) if (p / "steps.tsv").exists()]
    repos = [r for r in ORDER if r in present] + [r for r in present if r not in ORDER]
    binary = (out_dir / "binary.txt").read_text().split() if (out_dir / "binary.txt").exists() else []
    lines = [BEGIN, f"Binary: `{' '.join(binary)}`.", ""]
    total = agreed = 0
    for repo in repos:
        steps = read_tsv(out_dir / repo / "steps.tsv")
        expected = read_tsv(out_dir / repo / "expected.tsv")
        lines += [
            f"### {repo} ({KIND.get(repo, '?')})",
            "",
            "| step | move | what the commit does | expected | itergate decision | integrity (summary) | agree |",
            "| --- | --- | --- | --- | --- | --- | --- |",
        ]
        for step, (commit, what, code, took, decision) in steps.items():
            move, want, want_integrity = expected.get(step, ["?", "?", "any"])
            found = integrity(out_dir / repo / f"{step}.out")
            notes = record_notes(out_dir / repo / f"{step}.record.json")
            ours = verdict(decision, code).upper()
            ok = ours == want and meets(want_integrity, found + notes)
            total += 1
            agreed += ok
            # BLOCKERs first; a deselected table can name hundreds of cases, so at most 4.
            cells = [span(cell(f)) for f in sorted(found, key=lambda f: not f.startswith("BLOCKER "))]
            cells += [span(cell(n)) + " (record only)" for n in notes]
            if len(cells) > 4:
                cells = cells[:4] + [f"(+{len(cells) - 4} more)"]
            shown = "<br>".join(cells) or "(none)"
            wanted = {"none": "no integrity issue", "any": "not judged"}.get(
                want_integrity, want_integrity.replace(":", " naming ", 1))
            lines.append(
                f"| {step} | {cell(move)} | {cell(what)} | {want}, {cell(wanted)} "
                f"| {span(cell(decision))} | {shown} | {'yes' if ok else '**no**'} |"
            )
        lines.append("")
    lines.append(f"**{agreed} of {total} steps as expected.**")
    lines.append(END)
    doc = bench_dir / "GAMING.md"
    text = doc.read_text() if doc.exists() else f"# Gaming sequences\n\n{BEGIN}\n{END}\n"
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    doc.write_text(head + "\n".join(lines) + tail)
    print(f"gaming: {agreed}/{total} steps as expected")


if __name__ == "__main__":
    main(*sys.argv[1:3])
