"""What the twin measures, and the summary the report and `-o json` print.

Series are sampled every scenario step; pod-level facts (time to GPU, usage intervals) are
exact at event times. Percentiles are nearest-rank on the recorded values.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpupact.twin.peak import peak_window, series_of, union_window, window_stats


def percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..100); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def finite(value: float | None) -> float | None:
    """JSON has no infinity: an unbounded wait is reported as None."""
    if value is None or math.isinf(value) or math.isnan(value):
        return None
    return round(value, 3)


@dataclass
class PendingSample:
    workload_class: str
    seconds: float
    owner: str
    censored: bool = False  # still Pending when the run ended


@dataclass
class Usage:
    pod: str
    namespace: str
    tenant: str
    service: str | None
    job: str | None
    model: str | None
    workload_class: str
    owner: str | None
    cost_center: str | None
    pool: str
    gpu_model: str
    gpus: float
    start: float  # epoch seconds
    end: float | None
    restarts: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "pod": self.pod,
            "namespace": self.namespace,
            "tenant": self.tenant,
            "service": self.service,
            "job": self.job,
            "model": self.model,
            "workloadClass": self.workload_class,
            "owner": self.owner,
            "costCenter": self.cost_center,
            "pool": self.pool,
            "gpuModel": self.gpu_model,
            "gpus": self.gpus,
            "start": self.start,
            "end": self.end,
            "restarts": self.restarts,
        }


@dataclass
class Recorder:
    times: list[float] = field(default_factory=list)
    services: dict[str, dict[str, list[Any]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(list))
    )
    pools: dict[str, dict[str, list[Any]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(list))
    )
    pending: list[PendingSample] = field(default_factory=list)  # time to GPU (bound)
    serving: list[PendingSample] = field(default_factory=list)  # time to serving (Ready)
    placeholders_preempted: int = 0  # pre-warm placeholders that made room for a pod
    events: list[dict[str, Any]] = field(default_factory=list)
    preemptions: Counter[str] = field(default_factory=Counter)  # by victim class
    preemptions_by_preemptor: Counter[str] = field(default_factory=Counter)
    incomplete_gang_gpu_s: float = 0.0
    quota_blocked: set[str] = field(default_factory=set)  # workloads Kueue held for quota
    usage: list[Usage] = field(default_factory=list)
    # GPU-seconds of work thrown away (pods evicted, preempted or lost before they finished),
    # by the class of the pod that lost it
    lost_gpu_s: Counter[str] = field(default_factory=Counter)

    def lose(self, rec: Any, now: float) -> None:
        """A bound pod's run so far is lost (it restarts from the beginning)."""
        if getattr(rec, "bound_at", None) is not None:
            self.lost_gpu_s[rec.workload_class] += rec.gpus * max(0.0, now - rec.bound_at)

    def event(self, t: float, kind: str, subject: str, text: str) -> None:
        self.events.append({"t": round(t, 3), "kind": kind, "subject": subject, "text": text})

    def sample_service(self, name: str, **values: Any) -> None:
        series = self.services[name]
        for key, value in values.items():
            series[key].append(value)

    def sample_pool(self, name: str, **values: Any) -> None:
        series = self.pools[name]
        for key, value in values.items():
            series[key].append(value)


def _class_pending(samples: Iterable[PendingSample]) -> dict[str, dict[str, Any]]:
    by_class: dict[str, list[PendingSample]] = defaultdict(list)
    for s in samples:
        by_class[s.workload_class].append(s)
    out = {}
    for klass, items in sorted(by_class.items()):
        values = [s.seconds for s in items]
        out[klass] = {
            "pods": len(items),
            "stillPending": sum(1 for s in items if s.censored),
            "p50": finite(percentile(values, 50)),
            "p99": finite(percentile(values, 99)),
            "max": finite(max(values)),
        }
    return out


def summarize(
    rec: Recorder,
    *,
    duration: float,
    slos: dict[str, float],
    promises: dict[str, tuple[float, str]],
) -> dict[str, Any]:
    """The run in numbers: per class, per service, per pool, per tenant. `promises`: per
    class, (maxQueueWait in seconds, the point it is measured to: `bound` or `ready`)."""
    services = {}
    windows = {
        name: peak_window(s.get("t", []), s.get("rps", [])) for name, s in rec.services.items()
    }
    for name, s in sorted(rec.services.items()):
        p99 = [v for v in s["ttftP99"] if v is not None]
        slo = slos.get(name)
        over = sum(1 for v in s["ttftP99"] if v is None or (slo is not None and v > slo))
        services[name] = {
            "ttftP50": finite(percentile([v for v in s["ttftP50"] if v is not None], 50)),
            "ttftP99Worst": finite(max(p99)) if len(p99) == len(s["ttftP99"]) and p99 else None,
            "ttftSlo": slo,
            "sloBreachedShare": round(over / len(s["ttftP99"]), 4) if s["ttftP99"] else 0.0,
            "peakDesired": max(s["desired"], default=0),
            "peakReady": max(s["ready"], default=0),
            "peakQueue": round(max(s["queue"], default=0.0), 1),
            "peakWindow": window_stats(s, windows[name], slo),
        }
        tpot = series_of(s, "tpotP99")
        if tpot is not None:
            services[name]["tpotP99Worst"] = finite(
                max(tpot) if tpot and all(v is not None for v in tpot) else None
            )
    pools = {}
    for name, p in sorted(rec.pools.items()):
        cap = p["gpus"]
        alloc = p["allocated"]
        busy = p["busy"]
        total_cap = sum(cap)
        pools[name] = {
            "peakNodes": max(p["nodes"], default=0),
            "meanAllocation": round(sum(alloc) / total_cap, 4) if total_cap else 0.0,
            "meanBusy": round(sum(busy) / total_cap, 4) if total_cap else 0.0,
        }
    cap_all = sum(sum(p["gpus"]) for p in rec.pools.values())
    alloc_all = sum(sum(p["allocated"]) for p in rec.pools.values())
    busy_all = sum(sum(p["busy"]) for p in rec.pools.values())
    tenants: dict[str, float] = defaultdict(float)
    end = None
    for u in rec.usage:
        stop = u.end if u.end is not None else u.start  # filled by the simulation at the end
        tenants[u.tenant] += u.gpus * (stop - u.start) / 3600
        end = stop if end is None else max(end, stop)
    time_to_gpu = _class_pending(rec.pending)
    time_to_serving = _class_pending(rec.serving)
    promises_kept = {}
    for klass, (limit, until) in sorted(promises.items()):
        samples = rec.serving if until == "ready" else rec.pending
        stats = (time_to_serving if until == "ready" else time_to_gpu).get(klass)
        if stats is None:
            continue
        p99 = stats["p99"]
        # a pod still waiting at the end breaks the promise only once it has waited too long
        overdue = sum(
            1 for s in samples if s.workload_class == klass and s.censored and s.seconds > limit
        )
        promises_kept[klass] = {
            "maxQueueWait": limit,
            "until": until,
            "p99": p99,
            "overdue": overdue,
            "kept": p99 is not None and p99 <= limit and overdue == 0,
        }
    window = union_window(list(windows.values()))
    return {
        "durationSeconds": duration,
        "peakWindow": {"start": window[0], "end": window[1]} if window else None,
        "batchCost": batch_cost(rec, time_to_gpu),
        "timeToGpu": time_to_gpu,
        "timeToServing": time_to_serving,
        "promises": promises_kept,
        "services": services,
        "pools": pools,
        "cluster": {
            "meanAllocation": round(alloc_all / cap_all, 4) if cap_all else 0.0,
            "meanBusy": round(busy_all / cap_all, 4) if cap_all else 0.0,
        },
        "preemptions": dict(sorted(rec.preemptions.items())),
        "placeholdersPreempted": rec.placeholders_preempted,
        "incompleteGangGpuHours": round(rec.incomplete_gang_gpu_s / 3600, 3),
        "quotaBlockedWorkloads": len(rec.quota_blocked),
        "gpuHoursByTenant": {k: round(v, 2) for k, v in sorted(tenants.items())},
    }


def batch_cost(rec: Recorder, time_to_gpu: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """What protecting the online classes cost the others, per class that runs jobs (not
    services): GPU-hours run and thrown away, evictions, waits for a GPU."""
    online = {u.workload_class for u in rec.usage if u.service is not None}
    used: dict[str, float] = defaultdict(float)
    for u in rec.usage:
        if u.service is None:
            stop = u.end if u.end is not None else u.start
            used[u.workload_class] += u.gpus * (stop - u.start) / 3600
    classes = (set(used) | set(rec.lost_gpu_s) | set(rec.preemptions) | set(time_to_gpu)) - online
    out = {}
    for klass in sorted(classes):
        waits = time_to_gpu.get(klass, {})
        out[klass] = {
            "gpuHours": round(used.get(klass, 0.0), 2),
            "gpuHoursLost": round(rec.lost_gpu_s.get(klass, 0.0) / 3600, 2),
            "evictions": rec.preemptions.get(klass, 0),
            "waitP50": waits.get("p50"),
            "waitP99": waits.get("p99"),
            "stillPending": waits.get("stillPending", 0),
        }
    return out
