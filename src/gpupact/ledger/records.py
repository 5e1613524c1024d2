"""Usage intervals: who held how many GPUs from when to when.

One interval is one pod run (or one Slurm job allocation): its owner, cost centre, tenant,
service or job, model, pool, GPU model and GPUs, start and end (Unix seconds; `end` None while
it runs). GPUs are device equivalents: a time-sliced replica counts 1/replicas, a MIG slice its
fraction of the device (ledger.share). Every interval has a stable `key`, so ingesting the same
interval again changes nothing (the store upserts by key).

`from_records` reads plain mappings with the field names of the twin's `usage_records()`; a
wrong field is an InputError naming the record's index and field.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from gpupact.errors import FieldError, InputError

SECONDS_PER_HOUR = 3600.0


@dataclass(frozen=True, slots=True)
class Interval:
    key: str  # stable identity, e.g. "twin:ns/pod@1700000000.0" or "slurm:cluster:1234"
    source: str  # twin | kubernetes | slurm | records
    pod: str
    namespace: str
    gpus: float
    start: float
    end: float | None = None
    tenant: str | None = None
    service: str | None = None
    job: str | None = None
    model: str | None = None
    workload_class: str | None = None
    owner: str | None = None
    cost_centre: str | None = None
    pool: str | None = None
    gpu_model: str | None = None
    restarts: int = 0
    created: float | None = None  # when it was submitted (pending time = start - created)

    def gpu_hours(self, window_start: float, window_end: float, now: float) -> float:
        """GPU-hours inside [window_start, window_end); a running interval counts up to now."""
        stop = self.end if self.end is not None else now
        seconds = min(stop, window_end) - max(self.start, window_start)
        return self.gpus * seconds / SECONDS_PER_HOUR if seconds > 0 else 0.0

    def merged(self, newer: Interval) -> Interval:
        """The same pod run seen again: a later observation may close it or count more
        restarts, never reopen it or count fewer (replaying an old snapshot changes nothing)."""
        end = self.end if self.end is not None else newer.end
        restarts = max(self.restarts, newer.restarts)
        if end == self.end and restarts == self.restarts:
            return self
        return replace(self, end=end, restarts=restarts)


@dataclass(frozen=True, slots=True)
class Wait:
    """A pod or job waiting for GPUs: created, started (None while it still waits)."""

    key: str
    source: str
    workload_class: str | None
    seconds: float  # how long it waited (or has waited so far, for one still pending)
    started: bool
    name: str | None = None  # pod or job name
    namespace: str | None = None
    tenant: str | None = None
    owner: str | None = None
    observed: float | None = None  # when `seconds` was measured


# the twin's record field -> Interval attribute
RECORD_FIELDS = {
    "pod": "pod",
    "namespace": "namespace",
    "tenant": "tenant",
    "service": "service",
    "job": "job",
    "model": "model",
    "workloadClass": "workload_class",
    "owner": "owner",
    "costCenter": "cost_centre",
    "pool": "pool",
    "gpuModel": "gpu_model",
}
_REQUIRED = ("pod", "namespace", "gpus", "start")


def _text(value: Any, path: tuple[str, ...], *, optional: bool = True) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str) or (not value and not optional):
        raise FieldError(path, f"expected a string, got {value!r}")
    return value or None


def _number(value: Any, path: tuple[str, ...], *, optional: bool = False) -> float | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise FieldError(path, f"expected a finite number, got {value!r}")
    return float(value)


_OPTIONAL = tuple(name for name in RECORD_FIELDS if name not in ("pod", "namespace"))
_NUMBER_TYPES = (int, float)  # exact types: a bool is no number here
_finite = math.isfinite


def interval_from_record(record: Mapping[str, Any], source: str = "twin") -> Interval:
    """One record (the twin's `usage_records()` shape) as an Interval (FieldError if wrong).

    A well-formed record takes the fast path (one pass of exact type checks, the shape a
    simulation or a store emits); anything else is read field by field for the error."""
    get = getattr(record, "get", None)
    if get is not None:
        pod, namespace, gpus, start = get("pod"), get("namespace"), get("gpus"), get("start")
        end, created, restarts, key = get("end"), get("created"), get("restarts", 0), get("key")
        optional = [get(name) for name in _OPTIONAL]
        if (
            type(pod) is str
            and pod
            and type(namespace) is str
            and namespace
            and type(gpus) in _NUMBER_TYPES
            and type(start) in _NUMBER_TYPES
            and _finite(gpus)
            and gpus >= 0
            and _finite(start)
            and (end is None or (type(end) in _NUMBER_TYPES and _finite(end) and end >= start))
            and (created is None or (type(created) in _NUMBER_TYPES and _finite(created)))
            and (restarts is None or (type(restarts) is int and restarts >= 0))
            and (key is None or (type(key) is str and key))
            and all(v is None or type(v) is str for v in optional)
        ):
            start = float(start)
            return Interval(
                key or f"{source}:{namespace}/{pod}@{start!r}",
                source,
                pod,
                namespace,
                float(gpus),
                start,
                None if end is None else float(end),
                *[v or None for v in optional],
                restarts or 0,
                None if created is None else float(created),
            )
    return _checked_interval(record, source)


def _checked_interval(record: Mapping[str, Any], source: str) -> Interval:
    if not isinstance(record, Mapping):
        raise FieldError((), f"expected a mapping, got {type(record).__name__}")
    for name in _REQUIRED:
        if record.get(name) is None:
            raise FieldError((name,), "required")
    texts = {
        attr: _text(record.get(name), (name,), optional=name not in ("pod", "namespace"))
        for name, attr in RECORD_FIELDS.items()
    }
    gpus = _number(record["gpus"], ("gpus",))
    start = _number(record["start"], ("start",))
    end = _number(record.get("end"), ("end",), optional=True)
    created = _number(record.get("created"), ("created",), optional=True)
    assert gpus is not None and start is not None
    if gpus < 0:
        raise FieldError(("gpus",), f"must be >= 0, got {gpus}")
    if end is not None and end < start:
        raise FieldError(("end",), f"ends ({end}) before it starts ({start})")
    restarts = record.get("restarts", 0) or 0
    if isinstance(restarts, bool) or not isinstance(restarts, int) or restarts < 0:
        raise FieldError(("restarts",), f"expected an integer >= 0, got {restarts!r}")
    key = record.get("key")
    if key is None:
        # a pod name is reused by a restarted Job's next pod: the start tells the runs apart
        key = f"{source}:{texts['namespace']}/{texts['pod']}@{start!r}"
    elif not isinstance(key, str) or not key:
        raise FieldError(("key",), f"expected a non-empty string, got {key!r}")
    return Interval(
        key=key,
        source=source,
        gpus=gpus,
        start=start,
        end=end,
        restarts=restarts,
        created=created,
        **texts,  # type: ignore[arg-type]
    )


def from_records(records: Iterable[Mapping[str, Any]], source: str = "twin") -> Iterator[Interval]:
    """Intervals from records, lazily (a store ingests them batch by batch); a bad record is
    an InputError naming its index and field."""
    for index, record in enumerate(records):
        try:
            yield interval_from_record(record, source)
        except FieldError as err:
            raise InputError(f"usage record {index}: {err}") from None


def interval_to_record(interval: Interval) -> dict[str, Any]:
    """The inverse of `interval_from_record` (JSON output, round trips)."""
    out: dict[str, Any] = {"key": interval.key, "source": interval.source}
    for name, attr in RECORD_FIELDS.items():
        out[name] = getattr(interval, attr)
    out.update(
        gpus=interval.gpus,
        start=interval.start,
        end=interval.end,
        restarts=interval.restarts,
        created=interval.created,
    )
    return out


def waits_from_pending_durations(
    durations: Iterable[tuple[str, float]], source: str = "twin"
) -> list[Wait]:
    """The twin's `pending_durations()`: (class, seconds) per pod that got a node, in the order
    pods got one (append-only as the simulation advances, so the position is a stable key)."""
    out = []
    for index, (workload_class, seconds) in enumerate(durations):
        if not isinstance(seconds, int | float) or seconds < 0:
            raise InputError(f"pending duration {index}: expected seconds >= 0, got {seconds!r}")
        out.append(Wait(f"{source}:wait:{index}", source, workload_class, float(seconds), True))
    return out
