"""Rewrite one benchmark's section of docs/benchmarks.md, between its begin and end markers
(appended at the end the first time). Other sections stay as they are."""

from __future__ import annotations

from pathlib import Path


def replace_section(path: Path, begin: str, end: str, section: str) -> None:
    """`section` must start with `begin` and end with `end`."""
    old = path.read_text(encoding="utf-8") if path.exists() else "# Benchmarks\n"
    if begin in old and end in old:
        head, rest = old.split(begin, 1)
        _, tail = rest.split(end, 1)
        new = head + section + tail
    else:
        new = old.rstrip("\n") + "\n\n" + section + "\n"
    path.write_text(new, encoding="utf-8")
