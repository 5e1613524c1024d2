"""Output shared by every command: `-o json|yaml`, tables, `-l` selectors."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import yaml
from rich.markup import escape

from gpupact.cli.main import Output, stdout
from gpupact.errors import InputError

if TYPE_CHECKING:
    from gpupact.kube.selectors import Selector


# JSON leaves DEL and C1 controls raw; as \u escapes they stay valid JSON and inert on a terminal
_RAW_CONTROLS = re.compile("[\x7f-\x9f]")


def dump(data: Any, fmt: str) -> str:
    if fmt == "json":
        text = json.dumps(data, indent=2, sort_keys=False, ensure_ascii=False)
        return _RAW_CONTROLS.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True).rstrip("\n")


def emit(data: Any, output: Output) -> None:
    """`data` as JSON or YAML on stdout, exactly as dumped (no markup, no highlighting)."""
    if output not in (Output.json, Output.yaml):
        # a command that has no wide or name form of its own
        raise InputError(f"-o {output.value}: this command prints text, json or yaml")
    stdout.print(dump(data, output.value), markup=False, highlight=False)


def columns(headers: Sequence[str], rows: Iterable[Sequence[str]], title: str = "") -> None:
    """A table: Rich's on a terminal; kubectl's plain columns when stdout is a pipe or a file
    (no box characters, no markup, three spaces between columns), so `grep`/`awk` work."""
    rows = [list(row) for row in rows]
    if stdout.is_terminal:
        from rich.table import Table

        table = Table(title=title or None, title_justify="left", show_edge=False)
        for header in headers:
            table.add_column(header, overflow="fold")
        for row in rows:
            table.add_row(*(escape(cell) for cell in row))
        stdout.print(table)
        return
    widths = [max(len(str(c)) for c in col) for col in zip(headers, *rows, strict=False)]
    for row in [list(headers), *rows]:
        cells = [str(c).ljust(w) for c, w in zip(row, widths, strict=False)]
        stdout.print("   ".join(cells).rstrip(), markup=False, highlight=False)


def label_selector(text: str | None) -> Selector | None:
    """`-l` as kubectl reads it; None when not given."""
    if text is None:
        return None
    from gpupact.kube.selectors import parse_selector

    try:
        return parse_selector(text)
    except ValueError as err:
        raise InputError(f"-l {text!r}: {err}") from None
