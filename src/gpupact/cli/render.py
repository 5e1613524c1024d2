"""Machine-readable output shared by every command (`-o json|yaml`)."""

from __future__ import annotations

import json
from typing import Any

import yaml

from gpupact.cli.main import Output, stdout


def dump(data: Any, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(data, indent=2, sort_keys=False, ensure_ascii=False)
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True).rstrip("\n")


def emit(data: Any, output: Output) -> None:
    """`data` as JSON or YAML on stdout, exactly as dumped (no markup, no highlighting)."""
    stdout.print(dump(data, output.value), markup=False, highlight=False)
