"""Small inline SVG charts for the self-contained report (no script, no CDN, no fonts)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#17becf", "#7f7f7f")
WIDTH, HEIGHT = 560, 220
LEFT, RIGHT, TOP, BOTTOM = 56, 12, 16, 34


@dataclass(frozen=True)
class Series:
    label: str
    x: Sequence[float]
    y: Sequence[float | None]  # None: a gap (e.g. an unbounded wait)
    dashed: bool = False
    step: bool = False


MAX_POINTS = 600  # per line: enough for the eye, keeps the report small


def downsample(
    x: Sequence[float], y: Sequence[float | None]
) -> tuple[list[float], list[float | None]]:
    """At most MAX_POINTS points, each bucket keeping its highest value (peaks stay visible;
    a gap anywhere in a bucket stays a gap)."""
    n = len(x)
    if n <= MAX_POINTS:
        return list(x), list(y)
    size = math.ceil(n / MAX_POINTS)
    xs, ys = [], []
    for start in range(0, n, size):
        chunk = y[start : start + size]
        xs.append(x[start])
        ys.append(None if any(v is None for v in chunk) else max(chunk))  # type: ignore[type-var]
    return xs, ys


def _ticks(low: float, high: float, count: int = 5) -> list[float]:
    if high <= low:
        return [low]
    raw = (high - low) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    first = math.ceil(low / step) * step
    out = []
    value = first
    while value <= high + 1e-9:
        out.append(round(value, 10))
        value += step
    return out


def _fmt(value: float) -> str:
    if abs(value) >= 1000:
        return f"{value / 1000:g}k"
    return f"{value:g}"


def log_ticks(low_exp: float, high_exp: float) -> list[float]:
    """Ticks of a log axis spanning 10**low_exp..10**high_exp: the powers of ten inside, and
    2 and 5 times them when fewer than three decades are shown (never 10**0.4 = 2.51189)."""
    first, last = math.floor(low_exp + 1e-9), math.ceil(high_exp - 1e-9)
    multiples = (1, 2, 5) if high_exp - low_exp < 3 else (1,)
    out = []
    for exp in range(first, last + 1):
        for m in multiples:
            value = m * 10.0**exp
            if 10**low_exp * (1 - 1e-9) <= value <= 10**high_exp * (1 + 1e-9):
                out.append(value)
    return out or [10**low_exp]


def fmt_seconds(value: float) -> str:
    """A time axis label: 1 ms, 10 ms, 100 ms, 1 s, 10 s, 2 min, 1 h."""
    if value < 1:
        return f"{value * 1000:.3g} ms"
    if value < 120:
        return f"{value:.3g} s"
    if value < 7200:
        return f"{value / 60:.3g} min"
    return f"{value / 3600:.3g} h"


def line_chart(
    title: str,
    series: Sequence[Series],
    *,
    x_label: str,
    y_label: str,
    x_scale: float = 1.0,
    log_y: bool = False,
    y_max: float | None = None,
    y_seconds: bool = False,
    band: tuple[float, float] | None = None,
    x_range: tuple[float, float] | None = None,
) -> str:
    """An SVG line chart; x values are divided by `x_scale` for the axis (e.g. 3600: hours).
    `y_seconds` labels the y axis as durations; `band` shades an x span (the peak window);
    `x_range` keeps only the points inside it (a zoom). Both are in unscaled x units."""
    if x_range is not None:
        series = [_clip(s, x_range) for s in series]
    xs = [x / x_scale for s in series for x in s.x]
    ys = [y for s in series for y in s.y if y is not None]
    if not xs or not ys:
        return (
            f'<figure><figcaption>{escape(title)}</figcaption><p class="empty">no data</p></figure>'
        )
    x0, x1 = min(xs), max(xs)
    y0 = 0.0
    y1 = y_max if y_max is not None else max(ys)
    if log_y:
        positive = [y for y in ys if y > 0]
        # whole decades: the axis ends on labelled powers of ten (100 ms, 1 s, 10 s)
        y0 = math.floor(math.log10(min(positive)) + 1e-9) if positive else 0.0
        y1 = math.ceil(math.log10(max(positive)) - 1e-9) if positive else 1.0
    if y1 <= y0:
        y1 = y0 + 1
    if x1 <= x0:
        x1 = x0 + 1
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def px(x: float) -> float:
        return LEFT + (x - x0) / (x1 - x0) * plot_w

    def py(y: float) -> float:
        value = math.log10(y) if log_y else y
        value = min(max(value, y0), y1)
        return TOP + plot_h - (value - y0) / (y1 - y0) * plot_h

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'role="img" aria-label="{escape(title)}">',
        f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" class="plot"/>',
    ]
    for tick in _ticks(x0, x1):
        x = px(tick)
        parts.append(
            f'<line x1="{x:.1f}" y1="{TOP + plot_h}" x2="{x:.1f}" y2="{TOP + plot_h + 4}" class="axis"/>'
        )
        parts.append(
            f'<text x="{x:.1f}" y="{TOP + plot_h + 16}" class="tick" text-anchor="middle">{_fmt(tick)}</text>'
        )
    if band is not None:
        b0 = min(max(band[0] / x_scale, x0), x1)
        b1 = min(max(band[1] / x_scale, x0), x1)
        if b1 > b0:
            parts.append(
                f'<rect x="{px(b0):.1f}" y="{TOP}" width="{px(b1) - px(b0):.1f}" '
                f'height="{plot_h}" class="band"><title>peak window</title></rect>'
            )
    y_ticks = log_ticks(y0, y1) if log_y else _ticks(y0, y1)
    label = fmt_seconds if y_seconds else _fmt
    for tick in y_ticks:
        y = py(tick)
        parts.append(
            f'<line x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + plot_w}" y2="{y:.1f}" class="grid"/>'
        )
        parts.append(
            f'<text x="{LEFT - 6}" y="{y + 4:.1f}" class="tick" text-anchor="end">{label(tick)}</text>'
        )
    parts.append(
        f'<text x="{LEFT + plot_w / 2}" y="{HEIGHT - 4}" class="label" text-anchor="middle">{escape(x_label)}</text>'
    )
    parts.append(
        f'<text x="12" y="{TOP + plot_h / 2}" class="label" text-anchor="middle" '
        f'transform="rotate(-90 12 {TOP + plot_h / 2})">{escape(y_label)}</text>'
    )
    for i, s in enumerate(series):
        color = PALETTE[i % len(PALETTE)]
        segments: list[list[tuple[float, float]]] = [[]]
        previous: float | None = None
        for x, y in zip(*downsample(s.x, s.y), strict=True):
            if y is None or (log_y and y <= 0):
                if segments[-1]:
                    segments.append([])
                previous = None
                continue
            if s.step and previous is not None:
                segments[-1].append((px(x / x_scale), py(previous)))
            segments[-1].append((px(x / x_scale), py(y)))
            previous = y
        dash = ' stroke-dasharray="5 4"' if s.dashed else ""
        for seg in segments:
            if not seg:
                continue
            points = " ".join(f"{x:.1f},{y:.1f}" for x, y in seg)
            parts.append(
                f'<polyline points="{points}" fill="none" stroke="{color}" stroke-width="1.6"{dash}/>'
            )
    legend_x = LEFT + 8
    for i, s in enumerate(series):
        color = PALETTE[i % len(PALETTE)]
        y = TOP + 12 + i * 14
        parts.append(f'<rect x="{legend_x}" y="{y - 8}" width="10" height="3" fill="{color}"/>')
        parts.append(
            f'<text x="{legend_x + 14}" y="{y - 4}" class="legend">{escape(s.label)}</text>'
        )
    parts.append("</svg>")
    return f"<figure><figcaption>{escape(title)}</figcaption>{''.join(parts)}</figure>"


def cdf(values: Sequence[float]) -> tuple[list[float], list[float]]:
    """Empirical CDF points (x sorted, y in 0..1)."""
    ordered = sorted(values)
    n = len(ordered)
    return ordered, [(i + 1) / n for i in range(n)]


def _clip(series: Series, x_range: tuple[float, float]) -> Series:
    keep = [i for i, x in enumerate(series.x) if x_range[0] <= x <= x_range[1]]
    return Series(
        series.label,
        [series.x[i] for i in keep],
        [series.y[i] for i in keep],
        series.dashed,
        series.step,
    )


def bar_chart(
    title: str, rows: Sequence[tuple[str, Sequence[float]]], legend: Sequence[str]
) -> str:
    """Horizontal grouped bars: one group per row label, one bar per legend entry."""
    values = [v for _, vs in rows for v in vs]
    if not rows or not values:
        return (
            f'<figure><figcaption>{escape(title)}</figcaption><p class="empty">no data</p></figure>'
        )
    high = max(max(values), 1e-9)
    bar, gap, label_w = 12, 10, 110
    height = TOP + len(rows) * (len(legend) * bar + gap) + 24
    plot_w = WIDTH - label_w - 70
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" '
        f'role="img" aria-label="{escape(title)}">'
    ]
    y = TOP
    for name, vs in rows:
        parts.append(
            f'<text x="{label_w - 6}" y="{y + bar * len(legend) / 2 + 4:.1f}" class="label" '
            f'text-anchor="end">{escape(name)}</text>'
        )
        for i, v in enumerate(vs):
            w = v / high * plot_w
            color = PALETTE[i % len(PALETTE)]
            parts.append(
                f'<rect x="{label_w}" y="{y}" width="{max(w, 0.5):.1f}" height="{bar - 2}" fill="{color}"/>'
            )
            parts.append(
                f'<text x="{label_w + w + 4:.1f}" y="{y + bar - 3}" class="tick">{v:,.1f}</text>'
            )
            y += bar
        y += gap
    for i, entry in enumerate(legend):
        x = label_w + i * 150
        parts.append(
            f'<rect x="{x}" y="{height - 14}" width="10" height="3" fill="{PALETTE[i % len(PALETTE)]}"/>'
        )
        parts.append(f'<text x="{x + 14}" y="{height - 10}" class="legend">{escape(entry)}</text>')
    parts.append("</svg>")
    return f"<figure><figcaption>{escape(title)}</figcaption>{''.join(parts)}</figure>"
