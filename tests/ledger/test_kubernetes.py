"""Pods and Nodes (kubectl JSON) into intervals, waits and capacity."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from make_cluster import cluster, pod

from gpupact.cluster.snapshot import load_objects
from gpupact.errors import InputError
from gpupact.kube.objects import parse_pod
from gpupact.ledger import Ledger, observe
from gpupact.ledger.kubernetes import Observation


def at(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC).timestamp()


NOW = at("2026-11-02T13:00:00Z")


def snapshot(tmp_path, objects=None) -> Observation:
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects or cluster()}))
    objs = load_objects([path])
    return observe(objs.nodes, objs.pods, NOW)


def test_gpu_pods_become_intervals_with_their_attribution(tmp_path) -> None:
    seen = snapshot(tmp_path)
    by_pod = {i.pod: i for i in seen.intervals}
    assert sorted(by_pod) == ["chat-0", "eval-mmlu-x7", "notebook-3"]  # not web-1, not pending
    chat = by_pod["chat-0"]
    assert (chat.tenant, chat.owner, chat.cost_centre, chat.service, chat.model) == (
        "search",
        "ops@acme.example",
        "cc-42",
        "chat",
        "qwen-72b",
    )
    assert (chat.pool, chat.gpu_model, chat.gpus, chat.restarts) == (
        "gpu-inference",
        "h100-80g",
        2.0,
        4,
    )
    assert chat.start == at("2026-11-02T10:00:00Z") and chat.end is None
    assert chat.key == "kubernetes:uid-chat-0"


def test_shares_time_slice_replicas_and_mig_slices(tmp_path) -> None:
    by_pod = {i.pod: i for i in snapshot(tmp_path).intervals}
    assert by_pod["eval-mmlu-x7"].gpus == pytest.approx(1 / 4)  # one of 4 replicas
    assert by_pod["notebook-3"].gpus == pytest.approx(3 / 7)  # 3g of a 7-slice device
    assert by_pod["eval-mmlu-x7"].end == at("2026-11-02T12:00:00Z")
    assert by_pod["eval-mmlu-x7"].job == "eval-mmlu" and by_pod["eval-mmlu-x7"].service is None


def test_waits_of_pending_and_started_pods(tmp_path) -> None:
    waits = {w.name: w for w in snapshot(tmp_path).waits}
    assert waits["eval-gsm8k"].seconds == 5 * 3600 and not waits["eval-gsm8k"].started
    assert waits["chat"].seconds == 3600 and waits["chat"].started
    assert waits["eval-gsm8k"].workload_class == "batch"


def test_capacity_is_each_gpu_node(tmp_path) -> None:
    nodes = {c.node: c for c in snapshot(tmp_path).capacity}
    assert sorted(nodes) == ["h100-1", "mig-1", "ts-1"]
    assert (nodes["h100-1"].gpus, nodes["ts-1"].gpus, nodes["mig-1"].gpus) == (8.0, 4.0, 1.0)
    assert nodes["ts-1"].pool == "gpu-batch"


def test_polling_snapshots_closes_intervals_as_pods_finish(tmp_path) -> None:
    objects = cluster()
    with Ledger.open(str(tmp_path / "l.db")) as ledger:
        first = snapshot(tmp_path, objects)
        assert ledger.ingest(first.intervals).inserted == 3
        done = pod(
            "chat-0",
            node_name="h100-1",
            phase="Failed",
            limits={"nvidia.com/gpu": "2"},
            finished="2026-11-02T12:30:00Z",
            restarts=5,
        )
        later = snapshot(
            tmp_path, [o for o in objects if o["metadata"]["name"] != "chat-0"] + [done]
        )
        result = ledger.ingest(later.intervals)
        assert (result.inserted, result.updated) == (0, 1)
        chat = next(i for i in ledger.intervals() if i.pod == "chat-0")
        assert chat.end == at("2026-11-02T12:30:00Z") and chat.restarts == 5
        assert chat.tenant == "search"  # attribution from the first observation stays


def test_bad_pod_field_is_one_line(tmp_path) -> None:
    bad = pod("x", node_name="h100-1", limits={"nvidia.com/gpu": "1"})
    bad["status"]["startTime"] = "yesterday"
    with pytest.raises(InputError, match=r"Pod search/x: status.startTime: not an RFC 3339"):
        observe([], [parse_pod(bad)], NOW)
