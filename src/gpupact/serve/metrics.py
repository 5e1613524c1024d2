"""`GET /metrics`: the chapter's monitoring families (43.6) in Prometheus text format.

Computed from the current snapshot at scrape time (a custom collector), so a metric never
disagrees with what `/v1/backends` shows:

| family | chapter signal |
|---|---|
| `gpupact_pod_pending_seconds{workload_class}` (histogram) | Pod Pending duration |
| `gpupact_podgroups_blocked`, `gpupact_kueue_workloads_blocked` | PodGroup / Kueue queues |
| `gpupact_quota_used_gpus{tenant,pool}`, `gpupact_quota_nominal_gpus{tenant,pool}` | quota |
| `gpupact_nodes_gpu_capacity_lost` | node Ready / device plugin |
| `gpupact_backend_ttft_p99_seconds`, `gpupact_backend_queue_length` | TTFT, queueing |
| `gpupact_gpu_hours_total{tenant,model}` (counter) | GPU-hours per tenant and model |
| `gpupact_backend_replicas{service,model,state}`, `gpupact_backend_kv_cache_use` | capacity |
| `gpupact_decisions_total{tenant,outcome}` (counter) | the gateway's decisions |
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, Counter
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from gpupact.serve.decisions import Policy
from gpupact.serve.snapshot import Snapshot

PENDING_BUCKETS = (1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 4 * 3600, 8 * 3600, 24 * 3600)


def pending_histogram(pending: tuple[tuple[str, float], ...]) -> HistogramMetricFamily:
    family = HistogramMetricFamily(
        "gpupact_pod_pending_seconds",
        "How long pods waited for a node, by workload class.",
        labels=["workload_class"],
    )
    by_class: dict[str, list[float]] = defaultdict(list)
    for workload_class, seconds in pending:
        by_class[workload_class or ""].append(seconds)
    for workload_class, values in sorted(by_class.items()):
        values.sort()
        buckets = [(str(float(b)), bisect.bisect_right(values, b)) for b in PENDING_BUCKETS]
        buckets.append(("+Inf", len(values)))
        family.add_metric([workload_class], buckets, sum(values))
    return family


class SnapshotCollector(Collector):
    def __init__(self, snapshot: Callable[[], Snapshot | None], policy: Callable[[], Policy]):
        self.snapshot, self.policy = snapshot, policy

    def collect(self) -> Iterator[Metric]:
        snap = self.snapshot()
        if snap is None:
            return
        yield pending_histogram(snap.pending)
        yield GaugeMetricFamily(
            "gpupact_podgroups_blocked", "PodGroups waiting for their gang.", snap.podgroups_blocked
        )
        yield GaugeMetricFamily(
            "gpupact_kueue_workloads_blocked", "Kueue Workloads without quota.", snap.kueue_blocked
        )
        yield GaugeMetricFamily(
            "gpupact_nodes_gpu_capacity_lost",
            "Nodes advertising fewer GPUs than they have (device plugin).",
            snap.nodes_lost_gpus,
        )
        used = GaugeMetricFamily(
            "gpupact_quota_used_gpus",
            "GPUs held now per tenant and pool.",
            labels=["tenant", "pool"],
        )
        for (tenant, pool), gpus in sorted(snap.tenant_gpus.items()):
            used.add_metric([tenant, pool], gpus)
        yield used
        nominal = GaugeMetricFamily(
            "gpupact_quota_nominal_gpus",
            "Quota per tenant and pool (contract, active raises included).",
            labels=["tenant", "pool"],
        )
        for (tenant, pool), gpus in sorted(self.policy().quotas.items()):
            nominal.add_metric([tenant, pool], gpus)
        yield nominal
        hours = CounterMetricFamily(
            "gpupact_gpu_hours",
            "GPU-hours allocated per tenant and model.",
            labels=["tenant", "model"],
        )
        for (tenant, model), h in sorted(snap.hours_by_tenant_model.items()):
            hours.add_metric([tenant, model], h)
        yield hours
        yield from self._backends(snap)

    def _backends(self, snap: Snapshot) -> Iterator[Metric]:
        labels = ["service", "model"]
        replicas = GaugeMetricFamily(
            "gpupact_backend_replicas", "Replicas per backend and state.", labels=[*labels, "state"]
        )
        ttft = GaugeMetricFamily("gpupact_backend_ttft_p99_seconds", "TTFT p99.", labels=labels)
        queue = GaugeMetricFamily("gpupact_backend_queue_length", "Queued requests.", labels=labels)
        kv = GaugeMetricFamily("gpupact_backend_kv_cache_use", "KV cache use (0-1).", labels=labels)
        healthy = GaugeMetricFamily("gpupact_backend_healthy", "1 if healthy.", labels=labels)
        for b in snap.backends:
            key = [b.service, b.model]
            for state, n in (("desired", b.desired), ("ready", b.ready), ("pending", b.pending)):
                replicas.add_metric([*key, state], n)
            if b.ttft_p99_seconds is not None:
                ttft.add_metric(key, b.ttft_p99_seconds)
            if b.queue_length is not None:
                queue.add_metric(key, b.queue_length)
            if b.kv_cache_use is not None:
                kv.add_metric(key, b.kv_cache_use)
            healthy.add_metric(key, 1.0 if b.healthy else 0.0)
        yield from (replicas, ttft, queue, kv, healthy)


def registry_for(
    snapshot: Callable[[], Snapshot | None], policy: Callable[[], Policy]
) -> tuple[CollectorRegistry, Counter]:
    """A registry of one app (tests run several apps in one process)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SnapshotCollector(snapshot, policy))
    decisions = Counter(
        "gpupact_decisions", "Gateway decisions.", ["tenant", "outcome"], registry=registry
    )
    return registry, decisions
