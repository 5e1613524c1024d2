"""A node pool's cold start, read from its `gpupact.io/cold-start` annotation: one Go duration,
or a JSON object of phase durations. A leaf module, so the snapshot model can check the
annotation as it loads and `autoscale` can explain it, neither importing the other."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from gpupact.errors import FieldError
from gpupact.kube.fields import MAX_DURATION_MS, MAX_DURATION_TEXT

COLD_START_ANNOTATION = "gpupact.io/cold-start"
PHASES = ("provision", "driver", "devicePlugin", "imagePull", "modelLoad")
_DURATION_RE = re.compile(r"(\d+)(h|m|s)")
_UNIT = {"h": 3600, "m": 60, "s": 1}


def parse_duration(text: str, path: tuple = ()) -> int:
    """A Go duration of hours, minutes and seconds ("1h30m", "45s") -> seconds."""
    text = text.strip()
    if not text:
        raise FieldError(path, "empty duration")
    pos, total = 0, 0
    for match in _DURATION_RE.finditer(text):
        if match.start() != pos:
            break
        total += int(match.group(1)) * _UNIT[match.group(2)]
        pos = match.end()
    if pos != len(text):
        raise FieldError(path, f'expected a duration such as "13m30s", got {text!r}')
    if total * 1000 > MAX_DURATION_MS:
        raise FieldError(
            path, f"{text!r} is longer than a Go duration can be ({MAX_DURATION_TEXT})"
        )
    return total


@dataclass(frozen=True)
class ColdStart:
    total: int  # seconds
    phases: tuple[tuple[str, int], ...]
    source: str

    def describe(self) -> str:
        from gpupact.ops.findings import format_duration

        parts = ", ".join(f"{name} {format_duration(s)}" for name, s in self.phases if s)
        return f"{format_duration(self.total)}" + (f" ({parts})" if parts else "")


def parse_cold_start(text: str, source: str) -> ColdStart:
    path = ("metadata", "annotations", COLD_START_ANNOTATION)
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            raw = json.loads(stripped)
        except json.JSONDecodeError as err:
            raise FieldError(path, f"not JSON: {err.msg}") from None
        except RecursionError:
            raise FieldError(path, "JSON nested too deeply") from None
        phases = []
        for name, value in raw.items():
            if name not in PHASES:
                raise FieldError((*path, name), f"unknown phase (one of {', '.join(PHASES)})")
            if not isinstance(value, str):
                raise FieldError((*path, name), "expected a duration string")
            phases.append((name, parse_duration(value, (*path, name))))
        return ColdStart(sum(s for _, s in phases), tuple(phases), source)
    return ColdStart(parse_duration(stripped, path), (), source)
