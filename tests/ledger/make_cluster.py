"""Build `kubectl get nodes,pods -A -o json`-shaped objects for the ledger tests."""

from __future__ import annotations

from typing import Any


def node(name: str, pool: str, gpus: dict[str, str], labels: dict[str, str] | None = None) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": f"uid-{name}",
            "creationTimestamp": "2026-10-01T00:00:00Z",
            "labels": {"nodepool": pool, "kubernetes.io/hostname": name, **(labels or {})},
        },
        "status": {
            "capacity": {"cpu": "96", "memory": "1000Gi", "pods": "110", **gpus},
            "allocatable": {"cpu": "96", "memory": "1000Gi", "pods": "110", **gpus},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod(
    name: str,
    *,
    node_name: str = "",
    phase: str = "Running",
    limits: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    created: str = "2026-11-02T09:00:00Z",
    started: str | None = "2026-11-02T10:00:00Z",
    finished: str | None = None,
    restarts: int = 0,
    namespace: str = "search",
) -> dict[str, Any]:
    state: dict[str, Any] = {"running": {"startedAt": started}} if started else {"waiting": {}}
    if finished:
        state = {"terminated": {"exitCode": 0, "startedAt": started, "finishedAt": finished}}
    status: dict[str, Any] = {"phase": phase}
    if started and node_name:
        status["startTime"] = started
        status["containerStatuses"] = [
            {"name": "main", "ready": phase == "Running", "restartCount": restarts, "state": state}
        ]
    else:
        status["conditions"] = [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
        ]
    spec: dict[str, Any] = {
        "containers": [{"name": "main", "image": "vllm:0.6", "resources": {"limits": limits or {}}}]
    }
    if node_name:
        spec["nodeName"] = node_name
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{name}",
            "creationTimestamp": created,
            "labels": labels or {},
            "annotations": annotations or {},
        },
        "spec": spec,
        "status": status,
    }


OWNED = {
    "gpupact.io/tenant": "search",
    "gpupact.io/owner": "search-ops",
    "gpupact.io/cost-centre": "cc-42",
    "gpupact.io/class": "online-infer",
    "app.kubernetes.io/name": "chat",
}


def cluster() -> list[dict[str, Any]]:
    return [
        node("h100-1", "gpu-inference", {"nvidia.com/gpu": "8"}, {"gpu.model": "h100-80g"}),
        node(
            "ts-1",
            "gpu-batch",
            {"nvidia.com/gpu": "16"},
            {"gpu.model": "l4", "nvidia.com/gpu.replicas": "4", "nvidia.com/gpu.count": "4"},
        ),
        node(
            "mig-1",
            "gpu-batch",
            {"nvidia.com/gpu": "0", "nvidia.com/mig-3g.40gb": "2"},
            {"gpu.model": "a100-80g", "nvidia.com/gpu.count": "1"},
        ),
        node("cpu-1", "cpu", {}),
        pod(
            "chat-0",
            node_name="h100-1",
            limits={"nvidia.com/gpu": "2"},
            labels=OWNED,
            annotations={"gpupact.io/model": "qwen-72b", "gpupact.io/owner": "ops@acme.example"},
            restarts=4,
        ),
        pod(
            "eval-mmlu-x7",
            node_name="ts-1",
            phase="Succeeded",
            limits={"nvidia.com/gpu": "1"},
            labels={"gpupact.io/class": "batch", "batch.kubernetes.io/job-name": "eval-mmlu"},
            finished="2026-11-02T12:00:00Z",
            namespace="research",
        ),
        pod(
            "notebook-3",
            node_name="mig-1",
            limits={"nvidia.com/mig-3g.40gb": "1"},
            labels={"gpupact.io/tenant": "research"},
            namespace="research",
        ),
        pod(
            "eval-gsm8k-q2",
            limits={"nvidia.com/gpu": "1"},
            labels={"gpupact.io/class": "batch", "batch.kubernetes.io/job-name": "eval-gsm8k"},
            created="2026-11-02T08:00:00Z",
            started=None,
            phase="Pending",
            namespace="research",
        ),
        pod("web-1", node_name="cpu-1", limits={"cpu": "1"}),
    ]
