from __future__ import annotations

from datetime import UTC, datetime

from gpupact.twin.cron import fire_times

T0 = datetime(2026, 11, 1, tzinfo=UTC)  # a Sunday


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


def test_sunday_is_0_and_7() -> None:
    end = datetime(2026, 11, 8, tzinfo=UTC)
    assert [t.day for t in fire_times("0 0 * * 7", T0, end)] == [1]
    assert [t.day for t in fire_times("0 0 * * 0", T0, end)] == [1]
