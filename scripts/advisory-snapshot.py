#!/usr/bin/env python3
"""Writes .ci/advisories/: the RustSec advisories of every crate named in Cargo.lock and
fuzz/Cargo.lock, copied from a clone of https://github.com/rustsec/advisory-db, for the
cargo-deny check of a CI that cannot reach GitHub (scripts/ensure-cargo-deny.sh).

    python3 scripts/advisory-snapshot.py PATH-TO-ADVISORY-DB-CLONE

COVERED lists the crates the snapshot was taken for, and SOURCE the database's commit and
date: a crate added to a lockfile later is not covered, and the check says so.
"""
import pathlib
import shutil
import subprocess
import sys
import tomllib

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / ".ci" / "advisories"


def locked_crates():
    names = set()
    for lock in ("Cargo.lock", "fuzz/Cargo.lock"):
        with open(ROOT / lock, "rb") as f:
            names.update(p["name"] for p in tomllib.load(f).get("package", []))
    return sorted(names)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip())
    db = pathlib.Path(sys.argv[1])
    if not (db / "crates").is_dir():
        sys.exit(f"{db}: not a clone of rustsec/advisory-db (no crates/ directory)")
    source = subprocess.run(
        ["git", "-C", str(db), "log", "-1", "--format=%H %cI"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()
    shutil.rmtree(OUT, ignore_errors=True)
    crates = locked_crates()
    copied = 0
    for name in crates:
        for advisory in sorted((db / "crates" / name).glob("*.md")):
            target = OUT / "crates" / name / advisory.name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(advisory, target)
            copied += 1
    (OUT / "COVERED").write_text("".join(f"{n}\n" for n in crates))
    (OUT / "SOURCE").write_text(f"https://github.com/rustsec/advisory-db {source}\n")
    shutil.copyfile(db / "LICENSE.txt", OUT / "LICENSE.txt")
    print(f"{copied} advisories of {len(crates)} crates, from {source}")


if __name__ == "__main__":
    main()
