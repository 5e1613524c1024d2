"""What the API serves between refreshes: one immutable snapshot of backends and usage.

A source (the twin on a scaled clock, or a live cluster) produces a `Snapshot` on each refresh;
request handlers only read the current one (swapped atomically), so a decision never waits
for the twin or the API server.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from gpupact.errors import FieldError, InputError
from gpupact.ledger import Interval, Wait, Window, month_window
from gpupact.ledger.records import SECONDS_PER_HOUR


@dataclass(frozen=True, slots=True)
class Backend:
    """One model backend (a service's replicas), as `/v1/backends` shows it."""

    service: str
    model: str
    tenant: str | None = None
    pool: str | None = None
    desired: int = 0
    ready: int = 0
    pending: int = 0
    pending_reason: str | None = None
    queue_length: float | None = None
    kv_cache_use: float | None = None
    healthy: bool = True
    cold_start_seconds: float | None = None
    ttft_p99_seconds: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "service": self.service,
            "model": self.model,
            "tenant": self.tenant,
            "pool": self.pool,
            "desired": self.desired,
            "ready": self.ready,
            "pending": self.pending,
            "pendingReason": self.pending_reason,
            "queueLength": self.queue_length,
            "kvCacheUse": self.kv_cache_use,
            "healthy": self.healthy,
            "coldStartSeconds": self.cold_start_seconds,
            "ttftP99Seconds": self.ttft_p99_seconds,
        }


_COUNTS = ("desired", "ready", "pending")
_NUMBERS = ("queueLength", "kvCacheUse", "coldStartSeconds", "ttftP99Seconds")


def backend_from_dict(data: Mapping[str, Any]) -> Backend:
    """The twin's `backends()` entry (FieldError naming the field if it is wrong)."""
    for name in ("service", "model"):
        if not isinstance(data.get(name), str) or not data[name]:
            raise FieldError((name,), f"expected a non-empty string, got {data.get(name)!r}")
    for name in _COUNTS:
        value = data.get(name, 0)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise FieldError((name,), f"expected an integer >= 0, got {value!r}")
    numbers: dict[str, float | None] = {}
    for name in _NUMBERS:
        value = data.get(name)
        if value is not None and (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
        ):
            raise FieldError((name,), f"expected a number or null, got {value!r}")
        numbers[name] = None if value is None else float(value)
    return Backend(
        service=data["service"],
        model=data["model"],
        tenant=data.get("tenant") or None,
        pool=data.get("pool") or None,
        desired=data.get("desired", 0),
        ready=data.get("ready", 0),
        pending=data.get("pending", 0),
        pending_reason=data.get("pendingReason") or None,
        queue_length=numbers["queueLength"],
        kv_cache_use=numbers["kvCacheUse"],
        healthy=bool(data.get("healthy", True)),
        cold_start_seconds=numbers["coldStartSeconds"],
        ttft_p99_seconds=numbers["ttftP99Seconds"],
    )


def backends_from(items: Iterable[Mapping[str, Any]], source: str) -> tuple[Backend, ...]:
    out = []
    for index, item in enumerate(items):
        try:
            out.append(backend_from_dict(item))
        except FieldError as err:
            raise InputError(f"{source}: backend {index}: {err}") from None
    return tuple(out)


@dataclass(frozen=True)
class Snapshot:
    at: float  # the source's clock, Unix seconds
    backends: tuple[Backend, ...] = ()
    intervals: tuple[Interval, ...] = ()
    waits: tuple[Wait, ...] = ()  # pods that waited for a node (or still wait)
    podgroups_blocked: int = 0
    kueue_blocked: int = 0
    nodes_lost_gpus: int = 0  # nodes advertising fewer GPUs than they have
    quota: Mapping[tuple[str, str], float] = field(default_factory=dict)  # (tenant, pool) -> GPUs
    # derived once per refresh, read by every request
    month: Window | None = None
    tenant_month_hours: Mapping[str, float] = field(default_factory=dict)
    tenant_gpus: Mapping[tuple[str, str], float] = field(default_factory=dict)
    hours_by_tenant_model: Mapping[tuple[str, str], float] = field(default_factory=dict)
    by_model: Mapping[str, tuple[Backend, ...]] = field(default_factory=dict)

    @property
    def pending(self) -> tuple[tuple[str, float], ...]:
        """(workload class, seconds Pending) of the pods that got a node."""
        return tuple((w.workload_class or "", w.seconds) for w in self.waits if w.started)

    @classmethod
    def build(cls, at: float, **parts: Any) -> Snapshot:
        snap = cls(at, **parts)
        window = month_window(_month_label(at))
        month_hours: dict[str, float] = defaultdict(float)
        held: dict[tuple[str, str], float] = defaultdict(float)
        total: dict[tuple[str, str], float] = defaultdict(float)
        for i in snap.intervals:
            tenant = i.tenant or ""
            month_hours[tenant] += i.gpu_hours(window.start, window.end, at)
            stop = i.end if i.end is not None else at
            if stop > i.start:
                total[(tenant, i.model or "")] += (
                    i.gpus * (min(stop, at) - i.start) / SECONDS_PER_HOUR
                )
            if i.end is None and i.start <= at:
                held[(tenant, i.pool or "")] += i.gpus
        models: dict[str, list[Backend]] = defaultdict(list)
        for b in snap.backends:
            models[b.model].append(b)
        object.__setattr__(snap, "month", window)
        object.__setattr__(snap, "tenant_month_hours", dict(month_hours))
        object.__setattr__(snap, "tenant_gpus", dict(held))
        object.__setattr__(snap, "hours_by_tenant_model", dict(total))
        object.__setattr__(snap, "by_model", {m: tuple(bs) for m, bs in models.items()})
        return snap


def _month_label(at: float) -> str:
    moment = datetime.fromtimestamp(at, UTC)
    return f"{moment.year:04d}-{moment.month:02d}"
