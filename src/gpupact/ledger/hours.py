"""GPU-hours from intervals: allocated per group, idle per pool, utilised where DCGM data is.

- allocated: GPUs held x hours (a running interval counts up to `now`);
- idle: allocatable GPU-hours of a pool's nodes minus the allocated ones;
- utilised (busy): DCGM's GPU activity x hours, per pod, when Prometheus has it (ledger.dcgm).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from gpupact.errors import InputError
from gpupact.ledger.kubernetes import Capacity
from gpupact.ledger.records import SECONDS_PER_HOUR, Interval

GROUPS = (
    "tenant",
    "model",
    "owner",
    "cost_centre",
    "pool",
    "gpu_model",
    "workload_class",
    "service",
    "job",
    "namespace",
    "source",
)
_MONTH = re.compile(r"(\d{4})-(\d{2})")


@dataclass(frozen=True)
class Window:
    start: float
    end: float
    label: str

    def clip(self, now: float) -> float:
        """The window's end, or `now` if the window is still running."""
        return min(self.end, now)


def month_window(text: str) -> Window:
    """`YYYY-MM` -> the UTC month [first day 00:00, next month's first day 00:00)."""
    match = _MONTH.fullmatch(text.strip())
    if match is None or not 1 <= int(match.group(2)) <= 12:
        raise InputError(f"--month: expected YYYY-MM, got {text!r}")
    year, month = int(match.group(1)), int(match.group(2))
    start = datetime(year, month, 1, tzinfo=UTC)
    end = datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=UTC)
    return Window(start.timestamp(), end.timestamp(), f"{year:04d}-{month:02d}")


@dataclass
class Usage:
    group: dict[str, str | None]
    gpu_hours: float = 0.0
    busy_gpu_hours: float | None = None  # None: no DCGM data for any of its pods
    intervals: int = 0
    restarts: int = 0
    pods: set[tuple[str, str]] = field(default_factory=set, repr=False)

    @property
    def utilisation(self) -> float | None:
        if self.busy_gpu_hours is None or self.gpu_hours <= 0:
            return None
        return self.busy_gpu_hours / self.gpu_hours

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.group,
            "gpuHours": round(self.gpu_hours, 6),
            "busyGpuHours": None if self.busy_gpu_hours is None else round(self.busy_gpu_hours, 6),
            "utilisation": None if self.utilisation is None else round(self.utilisation, 4),
            "intervals": self.intervals,
            "restarts": self.restarts,
        }


def allocated(
    items: Iterable[Interval],
    window: Window,
    now: float,
    by: Sequence[str] = ("tenant", "model"),
    busy: Mapping[tuple[str, str], float] | None = None,
) -> list[Usage]:
    """GPU-hours per group inside the window, largest first; with `busy` (busy GPU-hours per
    (namespace, pod)) also the utilised hours of the pods that have it."""
    unknown = [g for g in by if g not in GROUPS]
    if unknown:
        raise InputError(f"--by: unknown group {unknown[0]!r} (one of {', '.join(GROUPS)})")
    rows: dict[tuple, Usage] = {}
    for interval in items:
        hours = interval.gpu_hours(window.start, window.end, now)
        if hours <= 0:
            continue
        key = tuple(getattr(interval, g) for g in by)
        row = rows.get(key)
        if row is None:
            row = rows[key] = Usage(dict(zip(by, key, strict=True)))
        row.gpu_hours += hours
        row.intervals += 1
        row.restarts += interval.restarts
        row.pods.add((interval.namespace, interval.pod))
    if busy:
        for row in rows.values():
            known = [busy[p] for p in row.pods if p in busy]
            if known:
                row.busy_gpu_hours = sum(known)
    return sorted(rows.values(), key=lambda r: (-r.gpu_hours, [str(v) for v in r.group.values()]))


def total_gpu_hours(items: Iterable[Interval], window: Window, now: float) -> float:
    return sum(i.gpu_hours(window.start, window.end, now) for i in items)


@dataclass
class PoolHours:
    pool: str | None
    allocatable: float
    allocated: float

    @property
    def idle(self) -> float:
        return max(0.0, self.allocatable - self.allocated)

    def to_dict(self) -> dict[str, Any]:
        return {
            "pool": self.pool,
            "allocatableGpuHours": round(self.allocatable, 6),
            "allocatedGpuHours": round(self.allocated, 6),
            "idleGpuHours": round(self.idle, 6),
        }


def idle_by_pool(
    nodes: Iterable[Capacity], items: Iterable[Interval], window: Window, now: float
) -> list[PoolHours]:
    """Allocatable, allocated and idle GPU-hours per pool (pools with known capacity)."""
    allocatable: dict[str | None, float] = defaultdict(float)
    for node in nodes:
        stop = node.end if node.end is not None else now
        seconds = min(stop, window.end) - max(node.start, window.start)
        if seconds > 0:
            allocatable[node.pool] += node.gpus * seconds / SECONDS_PER_HOUR
    used: dict[str | None, float] = defaultdict(float)
    for interval in items:
        if interval.pool in allocatable:
            used[interval.pool] += interval.gpu_hours(window.start, window.end, now)
    return [
        PoolHours(pool, hours, used[pool])
        for pool, hours in sorted(allocatable.items(), key=lambda kv: str(kv[0]))
    ]
