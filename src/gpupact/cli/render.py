"""Machine-readable output shared by every command (`-o json|yaml`)."""

from __future__ import annotations

import json
from typing import Any

import yaml


def dump(data: Any, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(data, indent=2, sort_keys=False, ensure_ascii=False)
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True).rstrip("\n")
