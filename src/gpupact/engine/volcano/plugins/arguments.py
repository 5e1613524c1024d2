"""A plugin's `arguments` read as upstream `framework.Arguments` does: a value of the wrong
type is ignored (upstream logs a warning and keeps the default)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpupact.engine.gang import parse_go_bool


def get_int(arguments: Mapping[str, Any], key: str, default: int) -> int:
    """`GetInt`: only an integer value counts (a YAML int; not a bool, not a string)."""
    value = arguments.get(key)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return default


def get_bool(arguments: Mapping[str, Any], key: str, default: bool) -> bool:
    """`GetBool`: a boolean, or a string Go's strconv.ParseBool accepts."""
    value = arguments.get(key)
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        parsed = parse_go_bool(value)
        if parsed is not None:
            return parsed
    return default
