"""Which pod matters more: kube-scheduler's `MoreImportantPod` and `GetPodStartTime`.

A pod is more important than another when its priority is higher; at equal priority the pod
that started earlier is more important. A pod without `status.startTime` (assumed or bound but
not started) counts as starting *now* — upstream reads the wall clock there; here `now` is a
parameter (unix nanoseconds), so results are reproducible.

Start times are kept as integer unix nanoseconds: the fixtures upstream compares differ by
single nanoseconds, so a float or a whole-second parse would tie them.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterable
from datetime import datetime, timedelta
from functools import lru_cache

from gpupact.errors import FieldError, PathPart
from gpupact.kube.objects import Pod

NANOS_PER_SECOND = 1_000_000_000
_EPOCH = datetime(1970, 1, 1)

_RFC3339 = re.compile(
    r"(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2}:\d{2})(?:\.(\d+))?(Z|z|[+-]\d{2}:\d{2})"
)


@lru_cache(maxsize=65536)
def parse_time_nanos(text: str, path: tuple[PathPart, ...] = ("status", "startTime")) -> int:
    """RFC 3339 timestamp (as `metav1.Time` prints it, fractions up to nanoseconds) ->
    unix nanoseconds, exactly. Digits past the ninth fractional one are dropped. The one
    reader of API-server times: a time without a zone is refused, as the API server does."""
    match = _RFC3339.fullmatch(text)
    if match is None:
        raise FieldError(path, f"not an RFC 3339 timestamp: {text!r}")
    date, clock, fraction, zone = match.groups()
    offset = "+00:00" if zone in ("Z", "z") else zone
    try:
        moment = datetime.fromisoformat(f"{date}T{clock}{offset}")
    except ValueError as exc:
        raise FieldError(path, f"invalid timestamp {text!r}: {exc}") from None
    seconds = calendar.timegm(moment.utctimetuple())
    nanos = int((fraction or "0")[:9].ljust(9, "0"))
    return seconds * NANOS_PER_SECOND + nanos


def format_time_nanos(nanos: int) -> str:
    """Unix nanoseconds -> RFC 3339 in UTC with a nanosecond fraction (the inverse of
    `parse_time_nanos`), for building pods with exact start times."""
    seconds, fraction = divmod(nanos, NANOS_PER_SECOND)
    text = (_EPOCH + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S")
    if fraction:
        text += "." + f"{fraction:09d}".rstrip("0")
    return text + "Z"


def pod_start_time(pod: Pod, now: int) -> int:
    """GetPodStartTime: `status.startTime`, or `now` for a pod that has not started."""
    return parse_time_nanos(pod.start_time) if pod.start_time else now


def importance_key(pod: Pod, now: int) -> tuple[int, int]:
    """Sort key putting the most important pod first (higher priority, then earlier start)."""
    return (-pod.priority, pod_start_time(pod, now))


def more_important_pod(first: Pod, second: Pod, now: int) -> bool:
    """MoreImportantPod: strictly more important (equal priority and start time: False)."""
    return importance_key(first, now) < importance_key(second, now)


def sort_by_importance(pods: Iterable[Pod], now: int) -> list[Pod]:
    """Most important first; ties keep their given order (upstream's sort is not stable, so
    any order of tied pods is an upstream order too)."""
    return sorted(pods, key=lambda p: importance_key(p, now))


def earliest_start_of_highest_priority(victims: Iterable[Pod], now: int) -> int | None:
    """GetEarliestPodStartTime: the earliest start among the victims that share the highest
    priority; None for no victims."""
    best: tuple[int, int] | None = None
    for pod in victims:
        key = importance_key(pod, now)
        if best is None or key < best:
            best = key
    return None if best is None else best[1]
