"""The peak window: where a service's time over SLO is judged, and how the report reads it."""

from __future__ import annotations

import re

import pytest

from gpupact.twin.peak import peak_window, series_of, status, union_window, window_stats
from gpupact.twin.report.svg import fmt_seconds, log_ticks


def _ramp() -> tuple[list[float], list[float]]:
    """A day at 10 req/s with a peak of 110 from t=1000 to t=2000 (10 s samples)."""
    times = [i * 10.0 for i in range(400)]
    return times, [110.0 if 1000 <= t < 2000 else 10.0 for t in times]


def test_the_window_is_where_the_rate_rose_above_a_tenth_of_the_way_to_the_peak() -> None:
    times, rps = _ramp()
    assert peak_window(times, rps) == (1000.0, 2000.0)
    rps[95] = 19.0  # below 10 + 0.1 x 100: outside
    rps[96] = 21.0  # above: the window starts here
    assert peak_window(times, rps) == (960.0, 2000.0)


def test_a_flat_profile_is_judged_over_the_whole_run_and_no_load_has_no_window() -> None:
    times = [0.0, 10.0, 20.0]
    assert peak_window(times, [5.0, 5.0, 5.0]) == (0.0, 30.0)
    assert peak_window(times, [0.0, 0.0, 0.0]) is None
    assert union_window([None, (5.0, 9.0), (2.0, 6.0)]) == (2.0, 9.0)
    assert union_window([None]) is None


def test_time_over_slo_counts_only_the_window_and_unbounded_samples_are_over() -> None:
    times, rps = _ramp()
    ttft = [0.5] * len(times)
    ttft[50] = 9.0  # over SLO, but in the quiet morning
    for i in range(100, 110):  # 10 samples in the 100-sample window
        ttft[i] = 4.0
    ttft[150] = None  # an unbounded wait
    samples = {"t": times, "rps": rps, "ttftP99": ttft}
    stats = window_stats(samples, peak_window(times, rps), slo=2.0)
    assert stats["sloBreachedShare"] == pytest.approx(11 / 100)
    assert stats["sloBreachedSeconds"] == 110.0
    assert stats["ttftP99Worst"] is None  # unbounded inside the window
    assert "tpotP99Worst" not in stats
    whole = window_stats(samples, None, slo=2.0)
    assert whole["sloBreachedShare"] == pytest.approx(12 / 400)


def test_tpot_is_read_under_its_name_or_its_alias() -> None:
    times, rps = _ramp()
    samples = {"t": times, "rps": rps, "ttftP99": [0.1] * 400, "tpot_p99_s": [0.03] * 400}
    samples["tpot_p99_s"][120] = 0.08
    samples["tpot_p99_s"][10] = 0.5  # outside the window
    assert series_of(samples, "tpotP99") is samples["tpot_p99_s"]
    assert window_stats(samples, peak_window(times, rps), 2.0)["tpotP99Worst"] == 0.08
    assert series_of({"t": times}, "tpotP99") is None


@pytest.mark.parametrize(
    ("share", "expected"), [(0.0, "good"), (0.004, "warn"), (0.01, "warn"), (0.2, "bad")]
)
def test_status_colours_follow_the_peak_share(share: float, expected: str) -> None:
    assert status(share) == expected


def test_log_ticks_are_powers_of_ten_and_two_and_five_times_them() -> None:
    assert log_ticks(-1, 1) == [0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0]
    wide = log_ticks(-3, 3)
    assert wide == [0.001, 0.01, 0.1, 1.0, 10.0, 100.0, 1000.0]
    for tick in wide:
        assert re.fullmatch(r"[0-9.]+ (ms|s|min)", fmt_seconds(tick)), fmt_seconds(tick)
    assert [fmt_seconds(v) for v in (0.001, 0.01, 0.1, 1.0, 10.0, 100.0)] == [
        "1 ms",
        "10 ms",
        "100 ms",
        "1 s",
        "10 s",
        "100 s",
    ]
