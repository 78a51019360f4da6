#!/usr/bin/env python3
"""Checks the relative links of the book (docs/src/**/*.md) and of the Markdown files that
link into it (README.md and every other tracked-looking *.md outside target/ and docs/book/).

A link fails when the file it names does not exist, or when its `#anchor` is not produced by
any heading of the target Markdown file (mdBook's and GitHub's rule: lowercase, spaces become
'-', punctuation other than '-' and '_' is dropped; a repeated heading gets '-1', '-2', ...).
External links (a scheme such as https:) and links inside code are not checked. An anchor
into a file that is not Markdown (a source file's #L10) is not checked either.

In the book it also fails on an mdBook `{{#include FILE}}` (or `#rustdoc_include`,
`#playground`) whose file does not exist: mdBook logs that as an error and still exits 0.

Usage: python3 scripts/check-doc-links.py   (from anywhere; exits 1 and lists every broken link)
"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# [text](target) and [text](target "title"); images ![alt](target) too.
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
# [label]: target
REFERENCE_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s{0,3}(```+|~~~+)")
INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
INCLUDE = re.compile(r"\{\{#(?:include|rustdoc_include|playground)\s+([^}\s]+)[^}]*\}\}")
HTML_ID = re.compile(r"""<a\s+[^>]*(?:id|name)\s*=\s*["']([^"']+)["']""", re.IGNORECASE)


def markdown_files():
    files = sorted((ROOT / "docs" / "src").rglob("*.md"))
    for path in sorted(ROOT.rglob("*.md")):
        rel = path.relative_to(ROOT).parts
        if rel[0] in ("target", "fuzz") or rel[:2] == ("docs", "book") or rel[:2] == ("docs", "src"):
            continue
        if any(part.startswith(".") or part == "node_modules" for part in rel):
            continue
        files.append(path)
    return files


def prose_lines(text):
    """Yields (line number, line) outside fenced code blocks, inline code blanked out."""
    fence = None
    for number, line in enumerate(text.splitlines(), 1):
        match = FENCE.match(line)
        if fence is None and match:
            fence = match.group(1)[0] * 3
            continue
        if fence is not None:
            if match and match.group(1).startswith(fence):
                fence = None
            continue
        yield number, INLINE_CODE.sub(lambda m: " " * len(m.group(0)), line)


def slug(heading):
    """The anchor mdBook and GitHub give a heading."""
    text = re.sub(r"<[^>]+>", "", heading)  # inline HTML
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link keeps its text
    text = text.strip().lower()
    out = []
    for char in text:
        if char.isalnum() or char in "-_":
            out.append(char)
        elif char.isspace():
            out.append("-")
    return "".join(out)


_anchor_cache = {}


def anchors(path):
    if path not in _anchor_cache:
        found, seen = set(), {}
        text = path.read_text(encoding="utf-8")
        fence = None
        for line in text.splitlines():
            match = FENCE.match(line)
            if fence is None and match:
                fence = match.group(1)[0] * 3
                continue
            if fence is not None:
                if match and match.group(1).startswith(fence):
                    fence = None
                continue
            heading = HEADING.match(line)
            if heading:
                base = slug(heading.group(2))
                count = seen.get(base, 0)
                seen[base] = count + 1
                found.add(base if count == 0 else f"{base}-{count}")
            found.update(HTML_ID.findall(line))
        _anchor_cache[path] = found
    return _anchor_cache[path]


def links(path):
    for number, line in prose_lines(path.read_text(encoding="utf-8")):
        for match in INLINE_LINK.finditer(line):
            yield number, match.group(1)
        ref = REFERENCE_DEF.match(line)
        if ref:
            yield number, ref.group(1)


def check(path):
    problems = []
    if ROOT / "docs" / "src" in path.parents:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for match in INCLUDE.finditer(line):
                included = match.group(1).split(":", 1)[0]
                if not (path.parent / included).is_file():
                    problems.append(f"{number}: {{{{#include {included}}}}}: no such file")
    for number, target in links(path):
        if SCHEME.match(target) or target.startswith("//"):
            continue
        file_part, _, anchor = target.partition("#")
        file_part = file_part.split("?", 1)[0]
        if file_part:
            resolved = (ROOT / file_part.lstrip("/")) if file_part.startswith("/") else (path.parent / file_part)
            resolved = resolved.resolve()
            if not resolved.exists():
                problems.append(f"{number}: {target}: no such file")
                continue
        else:
            resolved = path
        if anchor and resolved.is_file() and resolved.suffix == ".md" and anchor not in anchors(resolved):
            problems.append(f"{number}: {target}: no heading makes #{anchor}")
    return problems


def main():
    failed = 0
    checked = 0
    for path in markdown_files():
        checked += 1
        for problem in check(path):
            print(f"{path.relative_to(ROOT)}:{problem}", file=sys.stderr)
            failed += 1
    if failed:
        print(f"{failed} broken link(s) in {checked} Markdown files", file=sys.stderr)
        return 1
    print(f"links checked in {checked} Markdown files: none broken")
    return 0


if __name__ == "__main__":
    sys.exit(main())
