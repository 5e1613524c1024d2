"""Builders for preemption tests: real Kubernetes JSON through the project's parsers."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from gpupact.engine.preemption import (
    PodDisruptionBudget,
    PreemptionSnapshot,
    format_time_nanos,
    parse_pdb,
)
from gpupact.kube.objects import Node, Pod, parse_node, parse_pod
from gpupact.kube.status import Code, Status

NOW = 1_700_000_000 * 1_000_000_000

# upstream default_preemption_test.go priorities and request sizes
NEG, LOW, MID, HIGH, VERY_HIGH = -100, 0, 100, 1000, 10000
SMALL = {"cpu": "100m", "memory": "100"}
MEDIUM = {"cpu": "200m", "memory": "200"}
LARGE = {"cpu": "300m", "memory": "300"}
VERY_LARGE = {"cpu": "500m", "memory": "500"}


def node(
    name: str,
    capacity: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
    *,
    pods: str = "32",
) -> Node:
    allocatable = {"pods": pods, **(VERY_LARGE if capacity is None else capacity)}
    return parse_node(
        {
            "kind": "Node",
            "metadata": {"name": name, "labels": dict(labels or {})},
            "status": {"allocatable": allocatable},
        }
    )


def pod(
    name: str,
    *,
    priority: int | None = None,
    on: str = "",
    req: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    start: int | None = None,
    namespace: str = "default",
    policy: str | None = None,
    nominated: str = "",
    terminating: bool = False,
    conditions: Sequence[Mapping[str, str]] = (),
    spread: Sequence[Mapping[str, Any]] = (),
) -> Pod:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        meta["labels"] = dict(labels)
    if annotations:
        meta["annotations"] = dict(annotations)
    if terminating:
        meta["deletionTimestamp"] = "2023-01-01T00:00:00Z"
    spec: dict[str, Any] = {"containers": []}
    if req:
        spec["containers"] = [{"name": "c", "resources": {"requests": dict(req)}}]
    if priority is not None:
        spec["priority"] = priority
    if on:
        spec["nodeName"] = on
    if policy:
        spec["preemptionPolicy"] = policy
    if spread:
        spec["topologySpreadConstraints"] = [dict(c) for c in spread]
    status: dict[str, Any] = {"phase": "Running" if on else "Pending"}
    if start is not None:
        status["startTime"] = format_time_nanos(start)
    if nominated:
        status["nominatedNodeName"] = nominated
    if conditions:
        status["conditions"] = [dict(c) for c in conditions]
    return parse_pod({"kind": "Pod", "metadata": meta, "spec": spec, "status": status})


def pdb(
    match_labels: Mapping[str, str],
    allowed: int,
    disrupted: Iterable[str] = (),
    namespace: str = "default",
) -> PodDisruptionBudget:
    status: dict[str, Any] = {"disruptionsAllowed": allowed}
    if disrupted:
        status["disruptedPods"] = {n: "2023-01-01T00:00:00Z" for n in disrupted}
    return parse_pdb(
        {
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "budget", "namespace": namespace},
            "spec": {"selector": {"matchLabels": dict(match_labels)}},
            "status": status,
        }
    )


def snapshot(
    nodes: Sequence[Node], pods: Iterable[Pod], pdbs: Sequence[PodDisruptionBudget] = ()
) -> PreemptionSnapshot:
    return PreemptionSnapshot(nodes, pods, pdbs)


def statuses(code: Code = Code.UNSCHEDULABLE, *names: str) -> dict[str, Status]:
    return {name: Status(code) for name in names}


def names(pods: Iterable[Pod]) -> list[str]:
    return [p.name for p in pods]
