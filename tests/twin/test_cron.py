"""Cron firing as robfig/cron v3 (the CronJob controller's parser) does, in the contract's
time zone."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from twin_helpers import contract, scenario, write

from gpupact.twin.cron import fire_times
from gpupact.twin.scenario import load_scenario
from gpupact.twin.simulation import Simulation

T0 = datetime(2026, 11, 1, tzinfo=UTC)  # a Sunday
NEW_YORK = ZoneInfo("America/New_York")


def test_daily_schedule_fires_once_a_day() -> None:
    end = datetime(2026, 11, 4, tzinfo=UTC)
    assert [t.hour for t in fire_times("0 2 * * *", T0, end)] == [2, 2, 2]


def test_steps_and_ranges() -> None:
    end = datetime(2026, 11, 1, 1, tzinfo=UTC)
    assert [t.minute for t in fire_times("*/20 0 * * *", T0, end)] == [0, 20, 40]
    assert len(list(fire_times("10-12 0 * * *", T0, end))) == 3


def test_day_of_month_or_day_of_week_when_both_restricted() -> None:
    end = datetime(2026, 11, 15, tzinfo=UTC)
    days = [t.day for t in fire_times("0 0 10 * 1", T0, end)]  # the 10th, or Mondays
    assert days == [2, 9, 10]


def test_a_stepped_star_is_a_restriction_as_in_robfig() -> None:
    # `*/2` in day-of-month is not "star": with Mondays also given, either matching day fires
    end = datetime(2026, 11, 6, tzinfo=UTC)
    days = [t.day for t in fire_times("0 0 */2 * 1", T0, end)]
    assert days == [1, 2, 3, 5]
    # a plain `*` day of month leaves the day to the day of week: Mondays only
    assert [t.day for t in fire_times("0 0 * * 1", T0, end)] == [2]


def test_sunday_is_0() -> None:
    end = datetime(2026, 11, 8, tzinfo=UTC)
    assert [t.day for t in fire_times("0 0 * * 0", T0, end)] == [1]


def test_fields_are_read_on_the_zones_wall_clock() -> None:
    shanghai = ZoneInfo("Asia/Shanghai")
    end = T0 + timedelta(days=2)
    fired = list(fire_times("0 2 * * *", T0, end, shanghai))
    # 02:00 in Shanghai is 18:00 UTC the day before
    assert [t.astimezone(UTC) for t in fired] == [
        datetime(2026, 11, 1, 18, tzinfo=UTC),
        datetime(2026, 11, 2, 18, tzinfo=UTC),
    ]
    assert all(t.hour == 2 for t in fired)


def test_a_minute_daylight_saving_skips_never_fires() -> None:
    # 2027-03-14: New York jumps from 02:00 EST to 03:00 EDT; 02:30 does not exist that day
    start = datetime(2027, 3, 13, tzinfo=NEW_YORK)
    end = datetime(2027, 3, 16, tzinfo=NEW_YORK)
    assert [t.day for t in fire_times("30 2 * * *", start, end, NEW_YORK)] == [13, 15]


def test_a_minute_daylight_saving_repeats_fires_twice() -> None:
    # 2026-11-01: New York falls back from 02:00 EDT to 01:00 EST; 01:30 happens twice, and
    # robfig's Next (real time forward, wall clock re-read) finds both
    start = datetime(2026, 10, 31, tzinfo=NEW_YORK)
    end = datetime(2026, 11, 3, tzinfo=NEW_YORK)
    fired = [t.astimezone(UTC) for t in fire_times("30 1 * * *", start, end, NEW_YORK)]
    assert fired == [
        datetime(2026, 10, 31, 5, 30, tzinfo=UTC),
        datetime(2026, 11, 1, 5, 30, tzinfo=UTC),  # 01:30 EDT
        datetime(2026, 11, 1, 6, 30, tzinfo=UTC),  # 01:30 EST
        datetime(2026, 11, 2, 6, 30, tzinfo=UTC),
    ]


def _job_times(tmp_path: Path, **contract_fields) -> list[float]:
    c = contract(
        jobs=[{"name": "nightly", "tenant": "lab", "class": "batch", "schedule": "0 2 * * *"}],
        **contract_fields,
    )
    s = scenario(start="2026-11-11T00:00:00Z", duration="24h", jobs=[{"contract": True}])
    sim = Simulation(load_scenario(write(tmp_path, c, s)))
    return sorted(t for t, _seq, kind, _data in sim._events if kind == "job")


def test_the_twin_fires_contract_jobs_in_the_contracts_time_zone(tmp_path: Path) -> None:
    # the compiled CronJob carries the contract's timeZone; the twin fires where it would
    assert _job_times(tmp_path / "utc") == [2 * 3600.0]
    shanghai = _job_times(tmp_path / "sh", timeZone="Asia/Shanghai")
    assert shanghai == [18 * 3600.0]
