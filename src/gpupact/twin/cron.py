"""When a cron schedule fires inside a time range (the contract's job schedules and recurring
pre-warm windows), with the CronJob controller's semantics: five fields read in UTC (compile
writes `timeZone: Etc/UTC`), and when both day-of-month and day-of-week are restricted a day
matches if either does (Vixie cron, robfig/cron)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

_RANGES = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 7))


def _field(text: str, low: int, high: int) -> frozenset[int]:
    values: set[int] = set()
    for item in text.split(","):
        base, _, step_text = item.partition("/")
        step = int(step_text) if step_text else 1
        if base == "*":
            first, last = low, high
        elif "-" in base:
            a, b = base.split("-", 1)
            first, last = int(a), int(b)
        else:
            first = int(base)
            last = high if step_text else first
        values.update(range(first, last + 1, step))
    return frozenset(values)


def fire_times(schedule: str, start: datetime, end: datetime) -> Iterator[datetime]:
    """Every minute in [start, end) at which `schedule` fires (parse_cron has validated it)."""
    fields = schedule.split()
    minute, hour, dom, month, dow = (
        _field(text, low, high) for text, (low, high) in zip(fields, _RANGES, strict=True)
    )
    dow = frozenset(d % 7 for d in dow)  # 7 is Sunday too
    dom_any, dow_any = fields[2] == "*", fields[4] == "*"
    t = start.astimezone(UTC).replace(second=0, microsecond=0)
    if t < start:
        t += timedelta(minutes=1)
    stop = end.astimezone(UTC)
    while t < stop:
        if t.month in month and t.hour in hour and t.minute in minute:
            weekday = (t.weekday() + 1) % 7  # cron: 0 = Sunday
            if dom_any or dow_any:
                day_ok = t.day in dom and weekday in dow
            else:
                day_ok = t.day in dom or weekday in dow
            if day_ok:
                yield t
        t += timedelta(minutes=1)
