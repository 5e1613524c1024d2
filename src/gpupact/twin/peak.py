"""The peak window of a run and what it cost: a promise is judged where it is at risk.

A day that is fine for 22 hours and lost for the two hours of the promotion is "0.4 % of the
day over SLO" and lost all the same. So each service's time over SLO is measured in its peak
window: from the first to the last sample whose offered rate (the scenario's load profile, as
sampled) has risen more than PEAK_SHARE of the way from the run's lowest rate to its highest,
so the ramp where a reactive autoscaler falls behind is inside. A flat profile makes the whole
run the window.

Series names read here (per service sample, seconds): `ttftP50`/`ttftP99`, and where the
serving model records them `tpotP50`/`tpotP99` (`tpot_p50_s`/`tpot_p99_s` accepted as aliases).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

PEAK_SHARE = 0.1  # of the rise from the lowest rate to the highest: ramps count, the quiet day not
TPOT_KEYS = {"tpotP50": ("tpotP50", "tpot_p50_s"), "tpotP99": ("tpotP99", "tpot_p99_s")}


def series_of(samples: Mapping[str, Sequence[Any]], name: str) -> Sequence[Any] | None:
    """A per-sample series by its canonical name, or its alias (TPOT), None when absent."""
    for key in TPOT_KEYS.get(name, (name,)):
        values = samples.get(key)
        if values:
            return values
    return None


def peak_window(times: Sequence[float], rps: Sequence[float]) -> tuple[float, float] | None:
    """(start, end) in run seconds of the samples at or above the peak threshold; end is the
    last such sample plus one step. None without samples or load."""
    if not times or not rps or max(rps) <= 0:
        return None
    low, high = min(rps), max(rps)
    limit = low + PEAK_SHARE * (high - low)
    inside = [i for i, r in enumerate(rps) if r >= limit]
    first, last = inside[0], inside[-1]
    step = times[1] - times[0] if len(times) > 1 else 0.0
    return times[first], times[last] + step


def union_window(windows: Sequence[tuple[float, float] | None]) -> tuple[float, float] | None:
    spans = [w for w in windows if w is not None]
    if not spans:
        return None
    return min(s for s, _ in spans), max(e for _, e in spans)


def over_slo(values: Sequence[float | None], slo: float | None) -> list[bool]:
    """Per sample: over the objective (an unbounded wait, None, always is)."""
    return [v is None or (slo is not None and v > slo) for v in values]


def window_stats(
    samples: Mapping[str, Sequence[Any]], window: tuple[float, float] | None, slo: float | None
) -> dict[str, Any]:
    """Time over SLO and the worst P99s inside the window (the whole run without one)."""
    times = samples.get("t", [])
    chosen = [i for i, t in enumerate(times) if window is None or window[0] <= t < window[1]]
    step = times[1] - times[0] if len(times) > 1 else 0.0
    ttft = [samples["ttftP99"][i] for i in chosen] if samples.get("ttftP99") else []
    over = over_slo(ttft, slo)
    out: dict[str, Any] = {
        "start": window[0] if window else (times[0] if times else 0.0),
        "end": window[1] if window else (times[-1] + step if times else 0.0),
        "sloBreachedShare": round(sum(over) / len(over), 4) if over else 0.0,
        "sloBreachedSeconds": round(sum(over) * step, 1),
        "ttftP99Worst": _worst(ttft),
    }
    tpot = series_of(samples, "tpotP99")
    if tpot is not None:
        out["tpotP99Worst"] = _worst([tpot[i] for i in chosen if i < len(tpot)])
    return out


def _worst(values: Sequence[float | None]) -> float | None:
    """The highest value; None (unbounded) when any sample is unbounded or none exist."""
    if not values or any(v is None for v in values):
        return None
    return round(max(values), 3)  # type: ignore[type-var]


def status(share: float) -> str:
    """How a window's time over SLO reads: good (never), warn (at most 1 %), bad (more)."""
    if share <= 0:
        return "good"
    return "warn" if share <= 0.01 else "bad"
