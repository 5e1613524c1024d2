"""The live-cluster source on listed objects (the lister stands in for the API server)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ledger"))
from make_cluster import cluster, node, pod

from gpupact.serve import LiveSource

NOW = 1_793_624_400.0  # 2026-11-02T13:00:00Z


def deployment(name: str, model: str, replicas: int, ready: int) -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "search"},
        "spec": {
            "replicas": replicas,
            "template": {
                "metadata": {
                    "labels": {"app.kubernetes.io/name": name, "gpupact.io/tenant": "search"},
                    "annotations": {"gpupact.io/model": model},
                }
            },
        },
        "status": {"readyReplicas": ready},
    }


def objects() -> dict[str, list[dict]]:
    items = cluster()
    lost = node("h100-2", "gpu-inference", {"nvidia.com/gpu": "8"})
    lost["status"]["allocatable"]["nvidia.com/gpu"] = "6"  # two GPUs gone (device plugin)
    pending = pod(
        "chat-1",
        limits={"nvidia.com/gpu": "2"},
        labels={"app.kubernetes.io/name": "chat", "gpupact.io/class": "online-infer"},
        started=None,
        phase="Pending",
    )
    pending["status"]["conditions"][0]["message"] = (
        "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."
    )
    out: dict[str, list[dict]] = {"Node": [lost], "Pod": [pending]}
    for obj in items:
        out.setdefault(obj["kind"], []).append(obj)
    out["Deployment"] = [deployment("chat", "qwen-72b", 2, 1), deployment("web", "", 1, 1)]
    out["PodGroup"] = [
        {"kind": "PodGroup", "metadata": {"name": "g1"}, "status": {"phase": "Pending"}},
        {"kind": "PodGroup", "metadata": {"name": "g2"}, "status": {"phase": "Running"}},
    ]
    out["Workload"] = [
        {
            "kind": "Workload",
            "metadata": {"name": "w1"},
            "status": {
                "conditions": [{"type": "QuotaReserved", "status": "False", "reason": "Pending"}]
            },
        },
        {
            "kind": "Workload",
            "metadata": {"name": "w2"},
            "status": {"conditions": [{"type": "QuotaReserved", "status": "True"}]},
        },
    ]
    return out


def test_live_snapshot_backends_usage_and_signals() -> None:
    snap = LiveSource(lambda: objects(), cold_starts={"chat": 360.0}).refresh(NOW)
    (chat,) = snap.backends  # `web` has no model annotation: not a model backend
    assert (chat.service, chat.model, chat.tenant, chat.desired, chat.ready, chat.pending) == (
        "chat",
        "qwen-72b",
        "search",
        2,
        1,
        1,
    )
    assert chat.pending_reason == "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."
    assert chat.cold_start_seconds == 360.0 and chat.healthy
    assert (snap.podgroups_blocked, snap.kueue_blocked, snap.nodes_lost_gpus) == (1, 1, 1)
    assert {i.pod for i in snap.intervals} == {"chat-0", "eval-mmlu-x7", "notebook-3"}
    assert snap.tenant_gpus[("search", "gpu-inference")] == 2.0
    assert ("online-infer", 3600.0) in snap.pending  # chat-0 waited an hour for its node
