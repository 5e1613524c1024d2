"""Usage intervals from Kubernetes Pods and Nodes (`kubectl get pods,nodes -A -o json`, or the
same objects listed from a live cluster), observed at one moment.

Each snapshot is one observation of pod phase changes: a pod that has started (`status.startTime`)
opens an interval; once it is Succeeded or Failed the interval ends at its last container's
`finishedAt`. Polling snapshots into the store closes intervals as pods finish (the store merges
by pod UID); a pod that vanished between two snapshots is closed by `Ledger.close_missing`.
Pods still waiting for a node give a Wait (how long since creation), started ones the wait
they had. Attribution comes from the labels `gpupact compile` writes (contract.keys).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gpupact.cluster.devices import NodeGpuSpec, node_gpu_spec
from gpupact.cluster.state import pod_usage
from gpupact.contract.keys import (
    ANNOTATION_MODEL,
    ANNOTATION_OWNER,
    LABEL_APP,
    LABEL_CLASS,
    LABEL_COST_CENTRE,
    LABEL_OWNER,
    LABEL_POOL,
    LABEL_TENANT,
)
from gpupact.engine.preemption.importance import NANOS_PER_SECOND, parse_time_nanos
from gpupact.errors import FieldError, InputError
from gpupact.kube.objects import Node, Pod
from gpupact.ledger.records import Interval, Wait
from gpupact.ledger.share import gpu_share

SOURCE = "kubernetes"
NODE_POOL_LABELS = ("nodepool", "karpenter.sh/nodepool")  # DESIGN.md names, then Karpenter's
JOB_NAME_LABELS = ("batch.kubernetes.io/job-name", "job-name", "volcano.sh/job-name")
FINISHED = ("Succeeded", "Failed")


@dataclass(frozen=True, slots=True)
class Capacity:
    """A node's allocatable GPUs over time (idle = allocatable minus allocated)."""

    key: str
    node: str
    pool: str | None
    gpu_model: str | None
    gpus: float
    start: float
    end: float | None = None


@dataclass
class Observation:
    intervals: list[Interval]
    waits: list[Wait]
    capacity: list[Capacity]
    observed_at: float


def _seconds(text: Any, path: tuple[str | int, ...]) -> float | None:
    if not isinstance(text, str) or not text:
        return None
    return parse_time_nanos(text, path) / NANOS_PER_SECOND


def _pool(labels: Mapping[str, str]) -> str | None:
    return next((labels[k] for k in NODE_POOL_LABELS if labels.get(k)), None)


def _container_statuses(pod: Pod) -> list[Mapping[str, Any]]:
    status = pod.raw.get("status") or {}
    out = []
    for field in ("initContainerStatuses", "containerStatuses"):
        out += [s for s in status.get(field) or [] if isinstance(s, Mapping)]
    return out


def _finished_at(pod: Pod, observed_at: float) -> float:
    """The last container's finish, or the observation time when the kubelet left none."""
    ends = []
    for i, s in enumerate(_container_statuses(pod)):
        terminated = (s.get("state") or {}).get("terminated") or {}
        end = _seconds(terminated.get("finishedAt"), ("status", "containerStatuses", i))
        if end is not None:
            ends.append(end)
    return max(ends) if ends else observed_at


def _restarts(pod: Pod) -> int:
    return sum(
        int(s.get("restartCount") or 0)
        for s in _container_statuses(pod)
        if isinstance(s.get("restartCount") or 0, int)
    )


def _attribution(pod: Pod, node: Node | None) -> dict[str, str | None]:
    labels, annotations = pod.labels, pod.annotations
    job = next((labels[k] for k in JOB_NAME_LABELS if labels.get(k)), None)
    return {
        "tenant": labels.get(LABEL_TENANT) or None,
        "owner": annotations.get(ANNOTATION_OWNER) or labels.get(LABEL_OWNER) or None,
        "cost_centre": labels.get(LABEL_COST_CENTRE) or None,
        "workload_class": labels.get(LABEL_CLASS) or None,
        "pool": labels.get(LABEL_POOL) or (_pool(node.labels) if node else None),
        "job": job,
        "service": None if job else labels.get(LABEL_APP) or None,
        "model": annotations.get(ANNOTATION_MODEL) or None,
    }


def _key(pod: Pod, start: float) -> str:
    return f"{SOURCE}:{pod.uid}" if pod.uid else f"{SOURCE}:{pod.key}@{start!r}"


def observe(nodes: Iterable[Node], pods: Iterable[Pod], observed_at: float) -> Observation:
    """Intervals, waits and node capacity as the cluster stands at `observed_at`."""
    by_name = {n.name: n for n in nodes}
    specs: dict[str, NodeGpuSpec] = {}
    capacity = []
    for node in by_name.values():
        try:
            spec = specs[node.name] = node_gpu_spec(node)
        except FieldError as err:
            raise InputError(f"Node {node.name}: {err}") from None
        if spec.devices:
            meta = node.raw.get("metadata") or {}
            since = _seconds(meta.get("creationTimestamp"), ("metadata", "creationTimestamp"))
            uid = meta.get("uid") or node.name
            capacity.append(
                Capacity(
                    f"{SOURCE}:node:{uid}",
                    node.name,
                    _pool(node.labels),
                    spec.model,
                    float(spec.devices),
                    since if since is not None else observed_at,
                )
            )
    intervals, waits = [], []
    for pod in pods:
        try:
            intervals_and_waits = _pod(pod, by_name, specs, observed_at)
        except FieldError as err:
            raise InputError(f"Pod {pod.key}: {err}") from None
        interval, wait = intervals_and_waits
        if interval is not None:
            intervals.append(interval)
        if wait is not None:
            waits.append(wait)
    return Observation(intervals, waits, capacity, observed_at)


def _pod(
    pod: Pod, nodes: Mapping[str, Node], specs: Mapping[str, NodeGpuSpec], observed_at: float
) -> tuple[Interval | None, Wait | None]:
    gpu = pod_usage(pod).gpu
    if gpu is None:
        return None, None  # not a GPU pod: nothing to account
    node = nodes.get(pod.node_name)
    who = _attribution(pod, node)
    created = _seconds(pod.creation_timestamp, ("metadata", "creationTimestamp"))
    start = _seconds(pod.start_time, ("status", "startTime"))
    name = who["job"] or who["service"] or pod.name
    if start is None or not pod.node_name:
        if pod.phase in FINISHED or created is None:
            return None, None
        key = f"{SOURCE}:wait:{pod.uid or pod.key}"
        wait = Wait(
            key,
            SOURCE,
            who["workload_class"],
            max(0.0, observed_at - created),
            False,
            name,
            pod.namespace,
            who["tenant"],
            who["owner"],
            observed_at,
        )
        return None, wait
    end = _finished_at(pod, observed_at) if pod.phase in FINISHED else None
    interval = Interval(
        key=_key(pod, start),
        source=SOURCE,
        pod=pod.name,
        namespace=pod.namespace,
        gpus=gpu_share(gpu, specs.get(pod.node_name)),
        start=start,
        end=max(end, start) if end is not None else None,
        restarts=_restarts(pod),
        created=created,
        gpu_model=specs[pod.node_name].model if pod.node_name in specs else None,
        **who,
    )
    wait = None
    if created is not None:
        wait = Wait(
            f"{SOURCE}:wait:{pod.uid or pod.key}",
            SOURCE,
            who["workload_class"],
            max(0.0, start - created),
            True,
            name,
            pod.namespace,
            who["tenant"],
            who["owner"],
            observed_at,
        )
    return interval, wait
