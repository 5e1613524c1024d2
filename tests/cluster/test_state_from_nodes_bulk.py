"""ClusterState.from_nodes binds a snapshot's pods in one pass; the result must be exactly what
binding them one by one (`bind(..., lenient=True)` in order) gives."""

from __future__ import annotations

import numpy as np
import pytest

from gpupact.cluster.state import ClusterState
from gpupact.kube.objects import parse_node, parse_pod


def node(name, alloc, labels=None, annotations=None):
    allocatable = {"cpu": "16", "memory": "64Gi", "pods": "20", **alloc}
    return parse_node(
        {
            "metadata": {"name": name, "labels": labels or {}, "annotations": annotations or {}},
            "status": {"allocatable": allocatable},
        }
    )


def pod(name, requests, node_name, *, ns="default", annotations=None, phase=None, affinity=None):
    spec = {
        "nodeName": node_name,
        "containers": [{"name": "c", "resources": {"requests": requests}}],
    }
    if affinity:
        spec["affinity"] = affinity
    obj = {
        "metadata": {"name": name, "namespace": ns, "annotations": annotations or {}},
        "spec": spec,
    }
    if phase:
        obj["status"] = {"phase": phase}
    return parse_pod(obj)


ANTI = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "zone"}
        ]
    }
}


def nodes():
    return [
        node("whole", {"nvidia.com/gpu": "4"}),
        node(
            "share", {"nvidia.com/gpu": "2"}, annotations={"gpupact.io/gpu-sharing": "fractional"}
        ),
        node(
            "sliced",
            {"nvidia.com/gpu": "4"},
            labels={
                "nvidia.com/gpu.replicas": "2",
                "nvidia.com/gpu.sharing-strategy": "time-slicing",
            },
        ),
        node(
            "mig",
            {"nvidia.com/mig-1g.10gb": "7"},
            labels={"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB", "nvidia.com/gpu.count": "1"},
        ),
        node("cpu", {}),
        node("spare", {"nvidia.com/gpu": "2"}),
    ]


def pods():
    gpu = "nvidia.com/gpu"
    return [
        pod("w1", {"cpu": "1", gpu: "2"}, "whole"),
        pod("w2", {"cpu": "1", gpu: "2"}, "whole"),
        pod("w3", {"cpu": "1", gpu: "1"}, "whole"),  # does not fit: bound without devices
        pod("s1", {"cpu": "500m"}, "share", annotations={"gpupact.io/gpu-milli": "300"}),
        pod("s2", {"cpu": "500m"}, "share", annotations={"gpupact.io/gpu-milli": "600"}),
        pod("s3", {"cpu": "500m"}, "share", annotations={"gpupact.io/gpu-milli": "300"}),
        pod("t1", {gpu: "1"}, "sliced"),
        pod("t2", {gpu: "3"}, "sliced"),
        pod("m1", {"nvidia.com/mig-1g.10gb": "2"}, "mig"),
        pod("c1", {"cpu": "2", "memory": "1Gi", "example.com/fpga": "1"}, "cpu"),  # new column
        pod("c2", {}, "cpu", ns="other", affinity=ANTI),
        pod("c3", {"hugepages-2Mi": "4Mi"}, "cpu"),  # another new column, later
        pod("gone", {"cpu": "1"}, "cpu", phase="Succeeded"),
        pod("lost", {"cpu": "1"}, "no-such-node"),
        pod("given", {gpu: "1"}, "spare"),  # devices given: used as given
        pod("after-given", {gpu: "1"}, "spare"),  # default choice sees the given device taken
        pod("bad-given", {gpu: "1"}, "whole"),
    ]


def one_by_one(node_list, pod_list, devices):
    state = ClusterState.from_nodes(node_list)
    for p in pod_list:
        if not p.holds_resources or p.node_name not in state.node_index:
            continue
        given = devices.get(p.key)
        state.bind(
            p,
            state.node_index[p.node_name],
            tuple(given) if given is not None else None,
            lenient=True,
        )
    state._log.clear()
    state._log_base = state.version
    return state


def binding_view(state):
    return [
        [(b.pod.key, b.node, b.devices, b.usage, b.seq, b.pod_affinity) for b in state.pods_on(n)]
        for n in range(state.num_nodes)
    ]


def test_bulk_binds_equal_one_by_one():
    devices = {"default/given": [1], "default/bad-given": [9]}
    node_list, pod_list = nodes(), pods()
    bulk = ClusterState.from_nodes(node_list, pod_list, devices=devices)
    ref = one_by_one(node_list, pod_list, devices)
    assert bulk.resource_names == ref.resource_names
    for name, value in vars(ref).items():
        if isinstance(value, np.ndarray):
            assert np.array_equal(getattr(bulk, name), value), name
    assert binding_view(bulk) == binding_view(ref)
    spare = bulk.pods_on(bulk.node_index["spare"])
    assert [(b.pod.name, b.devices) for b in spare] == [("given", (1,)), ("after-given", (0,))]
    assert list(bulk._by_key) == list(ref._by_key)
    assert sorted(b.pod.key for b in bulk.affinity_bindings.values()) == ["other/c2"]
    assert (bulk.version, bulk.static_version, bulk._seq) == (
        ref.version,
        ref.static_version,
        ref._seq,
    )
    assert bulk.changes_since(bulk.version) == []
    # the columns are the bound pods' sums, and unbinding everything returns to zero
    for binding in list(bulk.bindings()):
        bulk.unbind(binding)
    assert not bulk.requested.any() and not bulk.nonzero_requested.any()
    assert not bulk.dev_used_milli.any() and not bulk.mig_used.any()


def test_bulk_duplicate_pod_raises_like_bind():
    twice = [pod("x", {"cpu": "1"}, "cpu"), pod("x", {"cpu": "2"}, "cpu")]
    with pytest.raises(ValueError, match="pod default/x is already bound"):
        ClusterState.from_nodes(nodes(), twice)


def test_bulk_without_pods_keeps_an_empty_state():
    state = ClusterState.from_nodes(nodes(), [pod("gone", {"cpu": "1"}, "cpu", phase="Failed")])
    assert state.num_pods == 0 and state.version == 0
    assert not state.requested.any()
