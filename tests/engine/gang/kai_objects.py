"""KAI objects for the GPU-sharing tests: a pod of a PodGroup with its sharing annotations,
a queue with a GPU quota and limit, a PodGroup of a priority class."""

from __future__ import annotations


def kai_pod(name: str, job: str, node_name: str = "", groups=(), **annotations: str) -> dict:
    meta = {
        "name": name,
        "namespace": "ns",
        "uid": name,
        "annotations": {"pod-group-name": job, **annotations},
    }
    if groups:
        meta["labels"] = {"runai-gpu-group": groups[0]}
    spec = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}
    phase = "Pending"
    if node_name:
        spec["nodeName"] = node_name
        phase = "Running"
    return {"metadata": meta, "spec": spec, "status": {"phase": phase}}


def queue(name: str, quota: float, limit: float = -1, parent: str = "dept") -> dict:
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    gpu = {"quota": quota, "limit": limit, "overQuotaWeight": 1}
    spec = {"resources": {"gpu": gpu, "cpu": unlimited, "memory": unlimited}}
    if parent:
        spec["parentQueue"] = parent
    return {"metadata": {"name": name}, "spec": spec}


def kai_group(name: str, cls: str, min_member: int = 1) -> dict:
    return {
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"minMember": min_member, "queue": "q", "priorityClassName": cls},
    }
