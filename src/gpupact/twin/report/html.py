"""The simulation report: one self-contained HTML file (inline CSS and SVG, no script, no
network), the variants of a scenario side by side."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Any

from gpupact.twin.peak import series_of, status
from gpupact.twin.report.svg import Series, bar_chart, cdf, line_chart

HOUR = 3600.0
MAX_EVENTS = 400  # per variant in the timeline table; the JSON output has them all

CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#222}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ddd}
h3{font-size:15px;margin:16px 0 6px}.sub{color:#666;margin:0 0 16px}
.grid2{display:grid;grid-template-columns:repeat(auto-fit,minmax(520px,1fr));gap:16px}
table{border-collapse:collapse;margin:6px 0}td,th{padding:3px 10px;border-bottom:1px solid #eee;text-align:right}
th:first-child,td:first-child{text-align:left}.bad{color:#b00020;font-weight:600}.good{color:#137333;font-weight:600}
figure{margin:8px 0}figcaption{font-weight:600;margin-bottom:2px}svg{width:100%;max-width:640px;height:auto}
.plot{fill:#fafafa;stroke:#ccc}.grid{stroke:#e6e6e6}.axis{stroke:#888}
.tick,.legend{font-size:10px;fill:#555}.label{font-size:11px;fill:#333}
.events{max-height:320px;overflow:auto;border:1px solid #eee}.events td{font-size:12px}
.empty{color:#888}.warn{color:#b26a00;font-weight:600}.band{fill:#ffd866;opacity:.35}
.cost{background:#fbfbfb;border:1px solid #eee;padding:4px 10px;margin:10px 0}
"""


def _fmt(value: Any, unit: str = "") -> str:
    if value is None:
        return "∞"
    if isinstance(value, float):
        return f"{value:,.2f}{unit}"
    return f"{value}{unit}"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "∞"
    if seconds < 120:
        return f"{seconds:.0f}s"
    if seconds < 2 * HOUR:
        return f"{seconds / 60:.1f}m"
    return f"{seconds / HOUR:.1f}h"


def _clock(seconds: float) -> str:
    minutes = round(seconds / 60)
    return f"{minutes // 60}h{minutes % 60:02d}"


def _ms(seconds: float | None) -> str:
    return "∞" if seconds is None else f"{seconds * 1000:,.0f} ms"


def _batch_cost(result: dict[str, Any]) -> str:
    """What the others paid: per job class, GPU-hours run and lost, evictions, waits."""
    cost = result["summary"].get("batchCost") or {}
    if not cost:
        return "<div class='cost'><h3>Cost to batch</h3><p class='empty'>no job classes</p></div>"
    rows = [
        "<tr><th>class</th><th>GPU-h run</th><th>GPU-h lost</th><th>evictions</th>"
        "<th>wait P50</th><th>wait P99</th><th>still waiting</th></tr>"
    ]
    for klass, c in cost.items():
        rows.append(
            f"<tr><td>{escape(klass)}</td><td>{c['gpuHours']:,.1f}</td>"
            f"<td class='{'bad' if c['gpuHoursLost'] > 0 else ''}'>{c['gpuHoursLost']:,.1f}</td>"
            f"<td>{c['evictions']}</td><td>{_duration(c['waitP50'])}</td>"
            f"<td>{_duration(c['waitP99'])}</td><td>{c['stillPending']}</td></tr>"
        )
    chart = bar_chart(
        "GPU-hours by job class: run and lost to evictions",
        [(k, [c["gpuHours"], c["gpuHoursLost"]]) for k, c in cost.items()],
        ["GPU-hours run", "GPU-hours lost (work evicted)"],
    )
    gangs = result["summary"].get("incompleteGangGpuHours", 0.0)
    return (
        "<div class='cost'><h3>Cost to batch</h3><table class='batch-cost'>"
        + "".join(rows)
        + f"</table><p class='sub'>GPU-hours held by incomplete gangs: {gangs:,.1f}</p>{chart}</div>"
    )


def _summary_table(result: dict[str, Any]) -> str:
    s = result["summary"]
    rows = []
    serving = s.get("timeToServing", {})
    for klass, gpu in s["timeToGpu"].items():
        # both measured points per class; the promise sits on the one the class names
        p = s["promises"].get(klass)
        until = p.get("until", "bound") if p else None
        ready = serving.get(klass, {})
        for label, stats, point in (
            ("time to GPU (bound)", gpu, "bound"),
            ("time to serving (Ready)", ready, "ready"),
        ):
            promise = verdict = ""
            if p is not None and until == point:
                ok = "good" if p["kept"] else "bad"
                promise = f"promise {_duration(p['maxQueueWait'])}"
                verdict = f"<span class='{ok}'>{'kept' if p['kept'] else 'broken'}</span>"
            rows.append(
                f"<tr><td>{label} · {escape(klass)}</td>"
                f"<td>P50 {_duration(stats.get('p50'))} · P99 {_duration(stats.get('p99'))}</td>"
                f"<td>{promise}</td><td>{verdict}</td></tr>"
            )
    for name, svc in s["services"].items():
        peak = svc.get("peakWindow")
        if peak is not None:  # judged where the promise is at risk: the peak window
            share = peak["sloBreachedShare"]
            rows.append(
                f"<tr><td>TTFT P99 in peak {_clock(peak['start'])}–{_clock(peak['end'])} · "
                f"{escape(name)}</td><td>worst {_duration(peak['ttftP99Worst'])}</td>"
                f"<td>SLO {_duration(svc['ttftSlo'])}</td><td class='{status(share)} peak-slo'>"
                f"{share * 100:.1f}% of the peak over ({_duration(peak['sloBreachedSeconds'])})</td></tr>"
            )
        rows.append(
            f"<tr><td>TTFT P99 whole run · {escape(name)}</td><td>worst {_duration(svc['ttftP99Worst'])}</td>"
            f"<td></td><td>{svc['sloBreachedShare'] * 100:.1f}% of the run over</td></tr>"
        )
        if "tpotP99Worst" in svc:
            rows.append(
                f"<tr><td>TPOT P99 · {escape(name)}</td><td>worst {_ms(svc['tpotP99Worst'])}</td>"
                f"<td>in peak {_ms((peak or {}).get('tpotP99Worst'))}</td><td></td></tr>"
            )
    c = s["cluster"]
    rows.append(
        f"<tr><td>GPU allocation (mean)</td><td>{c['meanAllocation'] * 100:.1f}%</td>"
        f"<td>busy {c['meanBusy'] * 100:.1f}%</td><td></td></tr>"
    )
    rows.append(
        f"<tr><td>preemptions</td><td>{sum(s['preemptions'].values())}</td>"
        f"<td>{escape(', '.join(f'{k} {v}' for k, v in s['preemptions'].items()) or '-')}</td><td></td></tr>"
    )
    rows.append(
        f"<tr><td>GPU-hours held by incomplete gangs</td><td>{s['incompleteGangGpuHours']:.1f}</td><td></td><td></td></tr>"
    )
    rows.append(
        f"<tr><td>workloads blocked by quota</td><td>{s['quotaBlockedWorkloads']}</td><td></td><td></td></tr>"
    )
    tenants = ", ".join(f"{k} {v:,.1f}" for k, v in s["gpuHoursByTenant"].items())
    rows.append(f"<tr><td>GPU-hours by tenant</td><td colspan='3'>{escape(tenants)}</td></tr>")
    return "<table>" + "".join(rows) + "</table>"


def _charts(result: dict[str, Any]) -> str:
    series = result["series"]
    t = series["t"]
    out = []
    by_class: dict[str, list[float]] = {}
    for sample in result["timeToGpu"]:
        by_class.setdefault(sample["class"], []).append(max(sample["seconds"], 0.1))
    cdfs = []
    for klass, values in sorted(by_class.items()):
        xs, ys = cdf(values)
        cdfs.append(Series(f"{klass} bound", ys, xs))
    ready_by_class: dict[str, list[float]] = {}
    for sample in result.get("timeToServing", []):
        ready_by_class.setdefault(sample["class"], []).append(max(sample["seconds"], 0.1))
    for klass, values in sorted(ready_by_class.items()):
        if sorted(values) != sorted(by_class.get(klass, [])):  # job classes: Ready == bound
            xs, ys = cdf(values)
            cdfs.append(Series(f"{klass} Ready", ys, xs, dashed=True))
    # CDF: y = seconds (log), x = share of pods
    out.append(
        line_chart(
            "Time to GPU (bound) and to serving (Ready, dashed) by class — CDF",
            cdfs,
            x_label="share of pods",
            y_label="seconds (log)",
            log_y=True,
        )
    )
    pools = []
    for name, p in series["pools"].items():
        pools.append(Series(f"{name} allocated", p["t"], p["allocated"], step=True))
        pools.append(Series(f"{name} capacity", p["t"], p["gpus"], dashed=True, step=True))
    out.append(
        line_chart("GPU allocation by pool", pools, x_label="hours", y_label="GPUs", x_scale=HOUR)
    )
    for name, svc in series["services"].items():
        summary = result["summary"]["services"].get(name, {})
        slo = summary.get("ttftSlo")
        peak = summary.get("peakWindow")
        band = (peak["start"], peak["end"]) if peak else None
        lines = [Series(f"{name} TTFT P99", svc["t"], svc["ttftP99"])]
        if slo is not None:
            lines.append(Series("SLO", [svc["t"][0], svc["t"][-1]], [slo, slo], dashed=True))
        out.append(
            line_chart(
                f"TTFT P99 over time — {name} (peak window shaded)",
                lines,
                x_label="hours",
                y_label="TTFT (log)",
                x_scale=HOUR,
                log_y=True,
                y_seconds=True,
                band=band,
            )
        )
        run = (svc["t"][-1] - svc["t"][0]) if len(svc["t"]) > 1 else 0.0
        if band is not None and band[1] - band[0] < 0.9 * run:  # a flat day needs no zoom
            out.append(_zoom(name, svc, band, slo))
        tpot = [
            Series(f"TPOT {q}", svc["t"], values)
            for q, values in (
                ("P50", series_of(svc, "tpotP50")),
                ("P99", series_of(svc, "tpotP99")),
            )
            if values is not None
        ]
        if tpot:
            out.append(
                line_chart(
                    f"TPOT over time — {name}",
                    tpot,
                    x_label="hours",
                    y_label="TPOT (log)",
                    x_scale=HOUR,
                    log_y=True,
                    y_seconds=True,
                    band=band,
                )
            )
        out.append(
            line_chart(
                f"Replicas desired vs ready — {name}",
                [
                    Series("desired", svc["t"], svc["desired"], step=True),
                    Series("ready", svc["t"], svc["ready"], step=True),
                    Series("requests/s ÷ 10", svc["t"], [r / 10 for r in svc["rps"]], dashed=True),
                ],
                x_label="hours",
                y_label="replicas",
                x_scale=HOUR,
            )
        )
    del t
    return "".join(out)


def _zoom(name: str, svc: dict[str, Any], band: tuple[float, float], slo: float | None) -> str:
    """The peak window with a margin either side: TTFT (and TPOT) and the replicas."""
    margin = max(0.2 * (band[1] - band[0]), 600.0)
    view = (band[0] - margin, band[1] + margin)
    lines = [
        Series("TTFT P50", svc["t"], svc["ttftP50"]),
        Series("TTFT P99", svc["t"], svc["ttftP99"]),
    ]
    tpot = series_of(svc, "tpotP99")
    if tpot is not None:
        lines.append(Series("TPOT P99", svc["t"], tpot))
    if slo is not None:
        lines.append(Series("TTFT SLO", [view[0], view[1]], [slo, slo], dashed=True))
    latency = line_chart(
        f"Peak zoom — latency, {name}",
        lines,
        x_label="hours",
        y_label="latency (log)",
        x_scale=HOUR,
        log_y=True,
        y_seconds=True,
        band=band,
        x_range=view,
    )
    replicas = line_chart(
        f"Peak zoom — replicas and load, {name}",
        [
            Series("desired", svc["t"], svc["desired"], step=True),
            Series("ready", svc["t"], svc["ready"], step=True),
            Series("requests/s", svc["t"], svc["rps"], dashed=True),
        ],
        x_label="hours",
        y_label="replicas · requests/s",
        x_scale=HOUR,
        band=band,
        x_range=view,
    )
    return f"<div class='zoom'>{latency}{replicas}</div>"


def _events(result: dict[str, Any]) -> str:
    rows = []
    for e in result["events"][:MAX_EVENTS]:
        rows.append(
            f"<tr><td>{e['t'] / HOUR:.2f}h</td><td>{escape(e['kind'])}</td>"
            f"<td>{escape(e['subject'])}</td><td style='text-align:left'>{escape(e['text'])}</td></tr>"
        )
    more = len(result["events"]) - MAX_EVENTS
    tail = f"<p class='sub'>… {more} more in the JSON output</p>" if more > 0 else ""
    return "<div class='events'><table>" + "".join(rows) + "</table></div>" + tail


def render(results: Sequence[dict[str, Any]], title: str) -> str:
    columns = []
    for result in results:
        columns.append(
            "<section>"
            f"<h2>{escape(result['scenario'])} <span class='sub'>(contract {escape(result['contract'])}, seed {result['seed']})</span></h2>"
            f"{_summary_table(result)}{_batch_cost(result)}{_charts(result)}"
            f"<h3>Timeline</h3>{_events(result)}"
            "</section>"
        )
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<meta name='viewport' content='width=device-width,initial-scale=1'><title>{escape(title)}</title>"
        f"<style>{CSS}</style></head><body>"
        f"<h1>{escape(title)}</h1><p class='sub'>gpupact twin — which work gets which GPUs within how long, "
        "and what breaks at the peak. Times are since the scenario's start.</p>"
        f"<div class='grid2'>{''.join(columns)}</div></body></html>"
    )
