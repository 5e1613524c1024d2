"""A scenario's load curve (requests/s per service, linear between points, flat outside them)
and the mean rate over a tick: the serving model is stepped once a tick with the arrivals of
the whole tick, so it reads their mean rate, not the rate at the tick's start (which would see
a rise one tick late and a fall one tick early)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

Points = Sequence[tuple[float, float]]


def rate_at(points: Points, t: float) -> float:
    if not points:
        return 0.0
    if t <= points[0][0]:
        return points[0][1]
    for (t1, v1), (t2, v2) in itertools.pairwise(points):
        if t1 <= t <= t2:
            return v1 if t2 == t1 else v1 + (v2 - v1) * (t - t1) / (t2 - t1)
    return points[-1][1]


def mean_rate(points: Points, start: float, end: float) -> float:
    """The mean of the curve over [start, end): the exact integral of the piecewise-linear
    function, piece by piece (a step, two points at one instant, counts each side for its
    time), flat before the first point and after the last."""
    if end <= start or not points:
        return rate_at(points, start)
    first, last = points[0], points[-1]
    pieces = [(start - 1.0, first[1], first[0], first[1])]  # flat before the first point
    pieces += [(t1, v1, t2, v2) for (t1, v1), (t2, v2) in itertools.pairwise(points) if t2 > t1]
    pieces.append((last[0], last[1], end + 1.0, last[1]))  # flat after the last
    area = 0.0
    for t1, v1, t2, v2 in pieces:
        a, b = max(t1, start), min(t2, end)
        if b > a:
            slope = (v2 - v1) / (t2 - t1)
            area += (v1 + slope * (a - t1) + v1 + slope * (b - t1)) / 2 * (b - a)
    return area / (end - start)
