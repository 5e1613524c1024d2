"""When a cron schedule fires inside a time range (the contract's job schedules and recurring
windows), with the CronJob controller's semantics (robfig/cron v3's `Next`):

- the five fields are read on the wall clock of the CronJob's `timeZone` (compile writes the
  contract's `timeZone`, default Etc/UTC);
- when day-of-month and day-of-week are both restricted a day matches if either does; when
  either is `*` (or `?`, or a `*` item with step 1) both must match;
- across a daylight-saving change, a wall minute the clock skips never fires and a wall minute
  it repeats fires twice: `Next` advances real time and re-reads the wall clock, as the minute
  walk here does.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo

_RANGES = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 6))


def _field(text: str, low: int, high: int) -> frozenset[int]:
    values: set[int] = set()
    for item in text.split(","):
        base, _, step_text = item.partition("/")
        step = int(step_text) if step_text else 1
        if base in ("*", "?"):
            first, last = low, high
        elif "-" in base:
            a, b = base.split("-", 1)
            first, last = int(a), int(b)
        else:
            first = int(base)
            last = high if step_text else first
        values.update(range(first, last + 1, step))
    return frozenset(values)


def _starred(text: str) -> bool:
    """robfig/cron marks a field "star" when an item is `*`/`?` without a step above 1."""
    for item in text.split(","):
        base, _, step = item.partition("/")
        if base in ("*", "?") and (not step or int(step) <= 1):
            return True
    return False


def zone_of(name: str) -> tzinfo:
    """The tzinfo of an IANA name the contract validated."""
    return UTC if name in ("UTC", "Etc/UTC") else ZoneInfo(name)


def fire_times(
    schedule: str, start: datetime, end: datetime, zone: tzinfo = UTC
) -> Iterator[datetime]:
    """Every minute in [start, end) at which `schedule` fires, read in `zone` (parse_cron has
    validated the schedule). The instants are yielded in `zone`."""
    fields = schedule.split()
    minute, hour, dom, month, dow = (
        _field(text, low, high) for text, (low, high) in zip(fields, _RANGES, strict=True)
    )
    either_day = not (_starred(fields[2]) or _starred(fields[4]))
    t = start.astimezone(UTC).replace(second=0, microsecond=0)
    if t < start:
        t += timedelta(minutes=1)
    stop = end.astimezone(UTC)
    while t < stop:
        wall = t.astimezone(zone)
        if wall.month in month and wall.hour in hour and wall.minute in minute:
            weekday = (wall.weekday() + 1) % 7  # cron: 0 = Sunday
            if either_day:
                day_ok = wall.day in dom or weekday in dow
            else:
                day_ok = wall.day in dom and weekday in dow
            if day_ok:
                yield wall
        t += timedelta(minutes=1)
