"""Builders for Kueue-upstream-style cases in the kueue.json vector shape, so they run through the
same conformance runners (facts transcribed from Kueue's own unit tests, not code)."""

from __future__ import annotations

from typing import Any

FUNGIBILITY = {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"}


def cq(
    name: str,
    cohort: str | None,
    quotas: dict[str, Any] | None = None,
    *,
    weight: Any = None,
    within: str = "Never(unset)",
    reclaim: str = "Never(unset)",
    bwc: dict[str, Any] | None = None,
    strategy: str = "BestEffortFIFO",
    fungibility: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """quotas: {flavor: nominal cpu} or {flavor: {resource: {nominal, borrowingLimit, ...}}}."""
    flavors = []
    for flavor, quota in (quotas or {}).items():
        resources = quota if isinstance(quota, dict) else {"cpu": {"nominal": quota}}
        flavors.append({"flavor": flavor, "resource_group": 0, "resources": resources})
    obj: dict[str, Any] = {
        "name": name,
        "cohort": cohort,
        "queueingStrategy": strategy,
        "flavors": flavors,
        "preemption": {"withinClusterQueue": within, "reclaimWithinCohort": reclaim},
        "flavorFungibility": fungibility or FUNGIBILITY,
    }
    if bwc is not None:
        obj["preemption"]["borrowWithinCohort"] = bwc
    if weight is not None:
        obj["fairSharing"] = {"weight": weight}
    return obj


def cohort(
    name: str,
    parent: str | None = None,
    cpu: Any = None,
    weight: Any = None,
    resources: dict[str, Any] | None = None,
) -> dict[str, Any]:
    obj: dict[str, Any] = {"name": name, "parent": parent, "flavors": []}
    if cpu is not None:
        resources = {"cpu": {"nominal": cpu}}
    if resources is not None:
        obj["flavors"] = [{"flavor": "default", "resource_group": 0, "resources": resources}]
    if weight is not None:
        obj["fairSharing"] = {"weight": weight}
    return obj


def admitted(
    name: str,
    queue: str,
    cpu: Any = 1,
    priority: int = 0,
    flavor: str = "default",
    requests: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "name": name,
        "queue": queue,
        "priority": priority,
        "uid": name,
        "pod_sets": [{"name": "main", "count": 1, "requests": requests or {"cpu": cpu}}],
        "flavor_assignment": flavor,
    }


def flavors(*names: str) -> list[dict[str, Any]]:
    return [{"name": n, "nodeLabels": {}, "nodeTaints": [], "tolerations": []} for n in names]


def preemption_case(
    cluster_queues: list[dict[str, Any]],
    admitted_workloads: list[dict[str, Any]],
    target: str,
    cpu: Any,
    want: set[tuple[str, str]],
    *,
    priority: int = 0,
    cohorts: list[dict[str, Any]] | None = None,
    flavor: str = "default",
    resource_flavors: list[str] | None = None,
    fair: bool = True,
    strategies: list[str] | None = None,
    requests: dict[str, Any] | None = None,
) -> dict[str, Any]:
    requests = requests or {"cpu": cpu}
    case: dict[str, Any] = {
        "cluster_queues": cluster_queues,
        "cohorts": cohorts or [],
        "resource_flavors": flavors(*(resource_flavors or ["default"])),
        "admitted_workloads": admitted_workloads,
        "pending_workloads": [
            {
                "name": "incoming",
                "queue": target,
                "priority": priority,
                "creation_order": 0,
                "pod_sets": [{"name": "main", "count": 1, "requests": requests}],
                "given_flavor_assignment": {"main": {r: f"{flavor} (Preempt)" for r in requests}},
            }
        ],
        "expected": {
            "admitted": {},
            "preempted": [{"name": n, "reason": r} for n, r in sorted(want)],
            "left_pending": [
                {
                    "name": "incoming",
                    "cluster_queue": target,
                    "state": "active (pending the preemption)" if want else "not admitted",
                }
            ],
        },
    }
    if fair:
        case["config"] = {"fairSharing": {"preemptionStrategies": strategies or []}}
    return case
