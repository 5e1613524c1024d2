"""Seeded random clusters and pods for the vectorised-vs-scalar agreement tests.

Nodes vary labels (zone, pool, rank for Gt/Lt, GPU model, topology), taints of all effects,
cordons, allocatable (incl. a node without ephemeral-storage and one with an extended
resource), and GPUs in every sharing mode (exclusive, fractional, time-sliced, MIG, NVLink).
Pods vary node selectors, required/preferred node affinity with every operator and
matchFields, tolerations, nodeName, requests (cpu, memory, ephemeral-storage, GPUs, GPU-milli,
MIG slices, an unknown extended resource), topology spread constraints, inter-pod
(anti-)affinity and host ports.
"""

from __future__ import annotations

import json
import random
from typing import Any

from gpupact.cluster.state import ClusterState
from gpupact.kube.objects import Node, Pod, parse_node, parse_pod

ZONES = ("z0", "z1", "z2")
POOLS = ("gpu-train", "gpu-batch", "gpu-inference")
MODELS = ("A100", "V100", "H100")
APPS = ("web", "db", "train")
TAINT_KEYS = ("workload", "dedicated", "gpu")
EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def random_node(rng: random.Random, i: int) -> Node:
    labels: dict[str, str] = {"kubernetes.io/hostname": f"node-{i}"}
    if rng.random() < 0.9:
        labels["topology.kubernetes.io/zone"] = rng.choice(ZONES)
    if rng.random() < 0.8:
        labels["nodepool"] = rng.choice(POOLS)
    if rng.random() < 0.7:
        labels["rank"] = str(rng.randint(-3, 12))
    taints = []
    for key in TAINT_KEYS:
        if rng.random() < 0.2:
            taint = {"key": key, "effect": rng.choice(EFFECTS)}
            if rng.random() < 0.7:
                taint["value"] = rng.choice(POOLS)
            taints.append(taint)
    alloc: dict[str, Any] = {
        "cpu": str(rng.choice((4, 8, 16, 32))),
        "memory": f"{rng.choice((8, 16, 64))}Gi",
        "pods": str(rng.choice((3, 5, 110))),
    }
    if rng.random() < 0.8:
        alloc["ephemeral-storage"] = f"{rng.choice((10, 100))}Gi"
    if rng.random() < 0.1:
        alloc["example.com/fpga"] = "2"
    annotations: dict[str, str] = {}
    kind = rng.random()
    devices = rng.choice((1, 2, 4, 8))
    if kind < 0.15:
        pass  # no GPUs
    elif kind < 0.75:
        alloc["nvidia.com/gpu"] = str(devices)
        if rng.random() < 0.5:
            annotations["gpupact.io/gpu-sharing"] = "fractional"
    elif kind < 0.87:
        replicas = rng.choice((2, 4))
        alloc["nvidia.com/gpu"] = str(devices * replicas)
        labels["nvidia.com/gpu.count"] = str(devices)
        labels["nvidia.com/gpu.replicas"] = str(replicas)
        labels["nvidia.com/gpu.sharing-strategy"] = "time-slicing"
    else:
        layout = [
            rng.choice(({"1g.10gb": 7}, {"3g.40gb": 2}, {"2g.20gb": 3, "1g.10gb": 1}, {}))
            for _ in range(devices)
        ]
        for device in layout:
            for profile, count in device.items():
                name = f"nvidia.com/mig-{profile}"
                alloc[name] = str(int(alloc.get(name, "0")) + count)
        whole = sum(1 for d in layout if not d)
        if whole:
            alloc["nvidia.com/gpu"] = str(whole)
        annotations["gpupact.io/mig-layout"] = json.dumps(layout)
        labels["nvidia.com/gpu.product"] = "NVIDIA-A100-SXM4-80GB"
    if "nvidia.com/gpu" in alloc or kind >= 0.87:
        if "nvidia.com/gpu.product" not in labels:
            labels["gpu.model"] = rng.choice(MODELS)
        if rng.random() < 0.4:
            labels["gpu.topology"] = rng.choice(("nvlink", "nvlink-2", "nvlink-4", "pcie"))
    obj = {
        "kind": "Node",
        "metadata": {"name": f"node-{i}", "labels": labels, "annotations": annotations},
        "spec": {"taints": taints, "unschedulable": rng.random() < 0.08},
        "status": {"allocatable": alloc},
    }
    return parse_node(obj)


def _requirement(rng: random.Random) -> dict[str, Any]:
    key = rng.choice(("topology.kubernetes.io/zone", "nodepool", "rank", "gpu.model", "missing"))
    op = rng.choice(("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"))
    if op in ("Exists", "DoesNotExist"):
        return {"key": key, "operator": op}
    if op in ("Gt", "Lt"):
        return {"key": key, "operator": op, "values": [str(rng.randint(-2, 10))]}
    pool = ZONES + POOLS + MODELS
    return {"key": key, "operator": op, "values": rng.sample(pool, rng.randint(1, 3))}


def _term(rng: random.Random, num_nodes: int) -> dict[str, Any]:
    term: dict[str, Any] = {
        "matchExpressions": [_requirement(rng) for _ in range(rng.randint(0, 2))]
    }
    if rng.random() < 0.15:
        op = rng.choice(("In", "NotIn"))
        term["matchFields"] = [
            {"key": "metadata.name", "operator": op, "values": [f"node-{rng.randrange(num_nodes)}"]}
        ]
    return term


def _pod_affinity_term(rng: random.Random) -> dict[str, Any]:
    term: dict[str, Any] = {
        "topologyKey": rng.choice(
            ("kubernetes.io/hostname", "topology.kubernetes.io/zone", "nodepool")
        ),
        "labelSelector": {"matchLabels": {"app": rng.choice(APPS)}},
    }
    if rng.random() < 0.2:
        term["namespaces"] = rng.sample(("default", "team-a"), 1)
    if rng.random() < 0.1:
        term["namespaceSelector"] = {}
    return term


def random_pod_obj(
    rng: random.Random, name: str, num_nodes: int, *, rich: bool = True
) -> dict[str, Any]:
    labels = {"app": rng.choice(APPS)}
    requests: dict[str, Any] = {}
    if rng.random() < 0.9:
        requests["cpu"] = rng.choice(("100m", "500m", "2", "6", "40"))
    if rng.random() < 0.8:
        requests["memory"] = rng.choice(("256Mi", "4Gi", "20Gi", "100Gi"))
    if rng.random() < 0.2:
        requests["ephemeral-storage"] = rng.choice(("1Gi", "50Gi"))
    if rng.random() < 0.05:
        requests["example.com/unknown"] = "1"
    annotations: dict[str, str] = {}
    g = rng.random()
    if g < 0.3:
        requests["nvidia.com/gpu"] = str(rng.choice((1, 1, 2, 4, 8)))
        if rng.random() < 0.15:
            annotations["gpupact.io/gpu-topology"] = "nvlink"
    elif g < 0.45:
        annotations["gpupact.io/gpu-milli"] = str(rng.choice((100, 300, 500, 700)))
    elif g < 0.52:
        profile = rng.choice(("1g.10gb", "3g.40gb", "2g.20gb"))
        requests[f"nvidia.com/mig-{profile}"] = str(rng.choice((1, 1, 2)))
    if g < 0.45 and rng.random() < 0.2:
        annotations["gpupact.io/gpu-models"] = ",".join(rng.sample(MODELS, rng.randint(1, 2)))
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": requests}}]}
    if rich:
        if rng.random() < 0.3:
            spec["nodeSelector"] = {"nodepool": rng.choice(POOLS)}
        affinity: dict[str, Any] = {}
        if rng.random() < 0.3:
            terms = [_term(rng, num_nodes) for _ in range(rng.randint(1, 2))]
            affinity["nodeAffinity"] = {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}
            }
        if rng.random() < 0.2:
            affinity.setdefault("nodeAffinity", {})[
                "preferredDuringSchedulingIgnoredDuringExecution"
            ] = [
                {"weight": rng.randint(1, 100), "preference": _term(rng, num_nodes)}
                for _ in range(rng.randint(1, 2))
            ]
        if rng.random() < 0.2:
            kind = rng.choice(("podAffinity", "podAntiAffinity"))
            block: dict[str, Any] = {
                "requiredDuringSchedulingIgnoredDuringExecution": [_pod_affinity_term(rng)]
            }
            if rng.random() < 0.5:
                block["preferredDuringSchedulingIgnoredDuringExecution"] = [
                    {"weight": rng.randint(1, 100), "podAffinityTerm": _pod_affinity_term(rng)}
                ]
            affinity[kind] = block
        if affinity:
            spec["affinity"] = affinity
        tolerations = []
        for key in TAINT_KEYS:
            if rng.random() < 0.3:
                tol: dict[str, Any] = {"key": key, "operator": rng.choice(("Exists", "Equal"))}
                if tol["operator"] == "Equal":
                    tol["value"] = rng.choice(POOLS)
                if rng.random() < 0.5:
                    tol["effect"] = rng.choice(EFFECTS)
                tolerations.append(tol)
        if rng.random() < 0.05:
            tolerations.append({"key": "node.kubernetes.io/unschedulable", "operator": "Exists"})
        if tolerations:
            spec["tolerations"] = tolerations
        if rng.random() < 0.05:
            spec["nodeName"] = f"node-{rng.randrange(num_nodes + 1)}"
        if rng.random() < 0.25:
            spec["topologySpreadConstraints"] = [
                {
                    "maxSkew": rng.randint(1, 2),
                    "topologyKey": rng.choice(
                        ("topology.kubernetes.io/zone", "kubernetes.io/hostname", "nodepool")
                    ),
                    "whenUnsatisfiable": rng.choice(("DoNotSchedule", "ScheduleAnyway")),
                    "labelSelector": {"matchLabels": {"app": labels["app"]}},
                }
            ]
            if rng.random() < 0.3:
                spec["topologySpreadConstraints"][0]["nodeTaintsPolicy"] = "Honor"
        if rng.random() < 0.15:
            port: dict[str, Any] = {"containerPort": 80, "hostPort": rng.choice((80, 8080))}
            if rng.random() < 0.4:
                port["hostIP"] = rng.choice(("10.0.0.1", "10.0.0.2", "0.0.0.0"))
            if rng.random() < 0.3:
                port["protocol"] = "UDP"
            spec["containers"][0]["ports"] = [port]
    namespace = "team-a" if rng.random() < 0.2 else "default"
    return {
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels,
            "annotations": annotations,
        },
        "spec": spec,
    }


def random_pod(rng: random.Random, name: str, num_nodes: int, *, rich: bool = True) -> Pod:
    return parse_pod(random_pod_obj(rng, name, num_nodes, rich=rich))


def random_cluster(seed: int, num_nodes: int = 30, num_pods: int = 40) -> ClusterState:
    """Nodes, then pods bound one by one where they fit (found by the scalar chain's device
    and resource rules via the engine), plus a few bound blindly (over-commit)."""
    from gpupact.engine.placement import Scheduler

    rng = random.Random(seed)
    state = ClusterState.from_nodes([random_node(rng, i) for i in range(num_nodes)])
    scheduler = Scheduler(state, seed=seed)
    for j in range(num_pods):
        pod = random_pod(rng, f"bound-{j}", num_nodes)
        if rng.random() < 0.1:
            node = rng.randrange(num_nodes)
            if state.active[node]:
                state.bind(pod, node, lenient=True)
            continue
        scheduler.schedule_one(pod)
    return state
