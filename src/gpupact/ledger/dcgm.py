"""Utilised GPU-hours per pod from DCGM metrics in Prometheus.

dcgm-exporter publishes one series per GPU, labelled with the pod and namespace using it
(its Kubernetes pod mapping). `DCGM_FI_DEV_GPU_UTIL` is a percentage (0-100) of time the GPU
was busy; `DCGM_FI_PROF_GR_ENGINE_ACTIVE` a ratio (0-1) of time the graphics engine was
active, the finer one on data-centre GPUs. Busy GPU-hours of a pod over a window are the sum,
over its GPUs and over time, of activity x time: a PromQL subquery sampling every `step`
seconds, evaluated once at the window's end.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from gpupact.errors import InputError

METRICS = {"DCGM_FI_DEV_GPU_UTIL": 100.0, "DCGM_FI_PROF_GR_ENGINE_ACTIVE": 1.0}  # full scale


def busy_query(metric: str, seconds: int, step: int = 60) -> str:
    """PromQL: busy GPU-hours per (namespace, pod) over the `seconds` before evaluation."""
    if metric not in METRICS:
        raise InputError(f"--dcgm-metric: expected one of {', '.join(METRICS)}, got {metric!r}")
    scale = METRICS[metric]
    sample = f'{metric}{{pod!=""}}' + (f" / {scale:g}" if scale != 1 else "")
    return (
        f"sum by (namespace, pod) (sum_over_time(({sample})[{seconds}s:{step}s])) * {step} / 3600"
    )


def busy_rows(
    query: Callable[[str, float], Mapping[str, Any]],
    metric: str,
    start: float,
    end: float,
    step: int = 60,
) -> list[dict[str, Any]]:
    """Rows for `Ledger.add_utilisation`. `query(promql, time)` returns the decoded body of
    Prometheus' `/api/v1/query` (the CLI passes an HTTP client, tests a real Prometheus)."""
    seconds = max(step, int(end - start))
    body = query(busy_query(metric, seconds, step), end)
    if body.get("status") != "success":
        raise InputError(f"Prometheus: {body.get('errorType', 'error')}: {body.get('error', '')}")
    data = body.get("data") or {}
    rows = []
    for series in data.get("result") or []:
        labels = series.get("metric") or {}
        _, value = series.get("value") or (None, "nan")
        hours = float(value)
        if labels.get("pod") and hours == hours:  # NaN: no samples
            rows.append(
                {
                    "namespace": labels.get("namespace", ""),
                    "pod": labels["pod"],
                    "period_start": start,
                    "period_end": end,
                    "busy_gpu_hours": hours,
                    "metric": metric,
                }
            )
    return rows
