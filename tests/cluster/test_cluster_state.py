"""ClusterState: columns from Node objects and plain arrays, bind/unbind, copies, change log."""

from __future__ import annotations

import numpy as np
import pytest

import gpupact.cluster.state as state_module
from gpupact.cluster.devices import SharingMode
from gpupact.cluster.state import ClusterState, pod_usage
from gpupact.errors import FieldError
from gpupact.kube.objects import parse_node, parse_pod
from gpupact.kube.taints import Taint

GI = 1 << 30


def make_node(name, labels=None, taints=(), alloc=None, annotations=None, unschedulable=False):
    allocatable = {"cpu": "8", "memory": "32Gi", "pods": "10"}
    allocatable.update(alloc or {})
    return parse_node(
        {
            "metadata": {"name": name, "labels": labels or {}, "annotations": annotations or {}},
            "spec": {"taints": list(taints), "unschedulable": unschedulable},
            "status": {"allocatable": allocatable},
        }
    )


def make_pod(name, requests=None, node_name="", annotations=None, phase=None, labels=None):
    obj = {
        "metadata": {"name": name, "annotations": annotations or {}, "labels": labels or {}},
        "spec": {"containers": [{"name": "c", "resources": {"requests": requests or {}}}]},
    }
    if node_name:
        obj["spec"]["nodeName"] = node_name
    if phase:
        obj["status"] = {"phase": phase}
    return parse_pod(obj)


@pytest.fixture
def cluster():
    nodes = [
        make_node("a", {"zone": "z1", "pool": "x"}, alloc={"nvidia.com/gpu": "2"}),
        make_node(
            "b",
            {"zone": "z2"},
            taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}],
            alloc={"nvidia.com/gpu": "4", "example.com/fpga": "1"},
            annotations={"gpupact.io/gpu-sharing": "fractional"},
        ),
        make_node("c", {"zone": "z1"}, taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]),
    ]
    pods = [
        make_pod("p1", {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"}, "a"),
        make_pod("p2", {"cpu": "500m"}, "b", {"gpupact.io/gpu-milli": "250"}),
        make_pod("done", {"cpu": "4"}, "a", phase="Succeeded"),
        make_pod("elsewhere", {"cpu": "4"}, "zzz"),
    ]
    return ClusterState.from_nodes(nodes, pods)


def col(state, name):
    return state.requested[:, state.resource_index[name]].tolist()


def test_columns_from_nodes(cluster):
    s = cluster
    assert s.node_names == ["a", "b", "c"]
    assert s.resource_names[:4] == ["cpu", "memory", "ephemeral-storage", "pods"]
    assert {"nvidia.com/gpu", "example.com/fpga"} <= set(s.resource_names)
    assert s.allocatable[:, s.resource_index["cpu"]].tolist() == [8000, 8000, 8000]
    assert col(s, "cpu") == [1000, 500, 0]
    assert col(s, "pods") == [1, 1, 0]
    assert col(s, "nvidia.com/gpu") == [1, 0, 0]
    # scheduler non-zero defaults: p2 has no memory request -> 200Mi
    assert s.nonzero_requested[:, 1].tolist() == [GI, 200 * 1024 * 1024, 0]
    assert s.num_pods == 2  # finished pods and pods on unknown nodes are skipped
    assert s.gpu_count.tolist() == [2, 4, 0]
    assert [SharingMode(m) for m in s.gpu_mode] == [
        SharingMode.EXCLUSIVE,
        SharingMode.FRACTIONAL,
        SharingMode.NONE,
    ]
    assert s.dev_used_milli[0, :2].tolist() == [1000, 0]
    assert s.dev_used_milli[1, :4].tolist() == [250, 0, 0, 0]
    assert s.gpu_free_units.tolist() == [1, 3, 0]
    assert s.gpu_share_free.tolist() == [1000, 1000, -1]  # largest free milli of one device


def test_label_and_taint_index(cluster):
    s = cluster
    zone = s.labels.column("zone")
    assert [s.labels.values["zone"][v] for v in zone] == ["z1", "z2", "z1"]
    assert s.labels.column("pool").tolist() == [0, -1, -1]
    assert s.labels.column("no-such-key").tolist() == [-1, -1, -1]
    assert s.taint_set[1] == s.taint_set[2] != s.taint_set[0]
    assert s.taint_sets[s.taint_set[1]] == (Taint("k", "v", "NoSchedule"),)


def test_bind_unbind_restores_every_column(cluster):
    s = cluster
    before = {k: v.copy() for k, v in vars(s).items() if isinstance(v, np.ndarray)}
    pod = make_pod(
        "new", {"cpu": "2", "memory": "2Gi"}, annotations={"gpupact.io/gpu-milli": "700"}
    )
    binding = s.bind(pod, 1)
    assert binding.devices == (0,)  # best fit: device 0 has 750 free
    assert s.dev_used_milli[1, :2].tolist() == [950, 0]
    assert s.pods_on(1)[-1] is binding and s.binding_of(pod.key) is binding
    s.unbind(binding)
    for name, value in before.items():
        assert np.array_equal(getattr(s, name), value), name
    assert s.binding_of(pod.key) is None


def test_share_goes_to_the_tightest_device(cluster):
    pod = make_pod("new", {"cpu": "1"}, annotations={"gpupact.io/gpu-milli": "700"})
    assert cluster.bind(pod, 1).devices == (0,)  # 750 free on device 0 is the tightest fit
    assert cluster.gpu_share_free[1] == 1000


def test_bind_errors(cluster):
    s = cluster
    pod = make_pod("x", {"nvidia.com/gpu": "1"})
    with pytest.raises(ValueError, match="already bound"):
        s.bind(s.binding_of("default/p1").pod, 0)
    with pytest.raises(ValueError, match="no active node"):
        s.bind(pod, 7)
    with pytest.raises(ValueError, match="over-committed"):
        s.bind(pod, 0, (0,))  # device 0 of node a is taken
    with pytest.raises(ValueError, match="out of range"):
        s.bind(pod, 0, (5,))
    with pytest.raises(ValueError, match="requested"):
        s.bind(pod, 0, (0, 1))
    two = make_pod("two", {"nvidia.com/gpu": "2"})
    with pytest.raises(ValueError):
        s.bind(two, 0)  # one device free
    assert s.bind(two, 0, lenient=True).devices == ()  # snapshot import: devices unknown
    other = s.binding_of("default/p1")
    s.unbind(other)
    with pytest.raises(ValueError, match="not bound"):
        s.unbind(other)
    with pytest.raises(KeyError):
        s.unbind_pod("default/nope")


def test_copy_is_independent(cluster):
    s = cluster
    c = s.copy()
    assert c.uid != s.uid
    c.unbind_pod("default/p1")
    c.bind(make_pod("y", {"cpu": "1"}), 2)
    assert col(s, "cpu") == [1000, 500, 0]
    assert col(c, "cpu") == [0, 500, 1000]
    assert s.binding_of("default/p1") is not None and c.binding_of("default/p1") is None
    c.set_unschedulable(0)
    assert c.unschedulable[0] and not s.unschedulable[0]
    assert not s.nodes[0].unschedulable
    c.add_node(make_node("d"))
    assert c.num_nodes == 4 and s.num_nodes == 3 and "d" not in s.node_index


def test_snapshot_restore(cluster):
    s = cluster
    snap = s.snapshot()
    s.bind(make_pod("z", {"cpu": "3"}), 2)
    s.unbind_pod("default/p1")
    s.restore(snap)
    assert col(s, "cpu") == [1000, 500, 0]
    assert s.binding_of("default/p1") is not None and s.binding_of("default/z") is None
    assert s.changes_since(s.version) == []


def test_change_log(cluster, monkeypatch):
    s = cluster
    v = s.version
    b = s.bind(make_pod("q", {"cpu": "1"}), 2)
    s.unbind(b)
    changes = s.changes_since(v)
    assert [(n, d) for n, d, _ in changes] == [(2, 1), (2, -1)]
    assert changes[0][2] is b
    monkeypatch.setattr(state_module, "_LOG_LIMIT", 4)
    for i in range(6):
        s.bind(make_pod(f"r{i}", {"cpu": "1m"}), 2)
    assert s.changes_since(v) is None  # trimmed: callers rebuild


def test_node_changes_bump_static_version(cluster):
    s = cluster
    v = s.static_version
    s.set_taints(0, [Taint("gpu", "", "NoSchedule")])
    assert s.static_version > v and s.taint_sets[s.taint_set[0]] == (
        Taint("gpu", "", "NoSchedule"),
    )
    row = s.add_node(make_node("d", {"zone": "z3"}, alloc={"nvidia.com/gpu": "8"}))
    assert row == 3 and s.node_index["d"] == 3
    assert s.labels.column("zone")[3] == s.labels.value_id("zone", "z3")
    assert s.dev_capacity_milli.shape[1] == 8 and s.gpu_free_units[3] == 8
    with pytest.raises(ValueError, match="still has"):
        s.remove_node(0)
    s.remove_node(2)
    assert not s.active[2]
    with pytest.raises(ValueError):
        s.bind(make_pod("w", {}), 2)
    with pytest.raises(FieldError):
        s.add_node(make_node("a"))
    with pytest.raises(FieldError):
        s.replace_node(0, make_node("renamed"))


def test_from_arrays():
    s = ClusterState.from_arrays(
        ["n0", "n1", "n2"],
        cpu_milli=[32000, 64000, 8000],
        memory_bytes=[64 * GI, 128 * GI, 8 * GI],
        gpu_count=[8, 2, 0],
        gpu_model=["V100M16", "G2", None],
        gpu_sharing="fractional",
        labels={"nodepool": ["gpu-batch", None, "cpu"]},
        taints=[(), (Taint("t", "", "NoSchedule"),), ()],
        gpu_topology=["nvlink-8", None, None],
    )
    assert s.gpu_models == ["V100M16", "G2"]
    assert s.gpu_model.tolist() == [0, 1, -1]
    assert s.nvlink_group.tolist() == [8, 1, 1]
    assert s.gpu_group_capacity_units.tolist() == [8, 1, 0]
    assert s.nodes[0].labels["kubernetes.io/hostname"] == "n0"
    assert s.labels.column("nodepool").tolist() == [0, -1, 1]
    assert s.allocatable[:, s.resource_index["pods"]].tolist() == [110, 110, 110]
    assert s.dev_capacity_milli.tolist()[1] == [1000, 1000, 0, 0, 0, 0, 0, 0]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"cpu_milli": [1, 2]}, "cpu_milli"),
        ({"memory_bytes": [-1, 1, 1]}, "memory_bytes"),
        ({"gpu_model": ["a"]}, "gpu_model"),
        ({"labels": {"k": ["v"]}}, "labels.k"),
    ],
)
def test_from_arrays_bad_input(kwargs, field):
    args = {"cpu_milli": [1, 2, 3], "memory_bytes": [1, 2, 3]}
    args.update(kwargs)
    with pytest.raises(FieldError) as err:
        ClusterState.from_arrays(["a", "b", "c"], **args)
    assert err.value.path == (field,)


def test_duplicate_node_names():
    with pytest.raises(FieldError):
        ClusterState.from_arrays(["a", "a"], cpu_milli=[1, 1], memory_bytes=[1, 1])
    with pytest.raises(FieldError):
        ClusterState.from_nodes([make_node("a"), make_node("a")])


def test_pod_usage_is_shared_by_shape():
    a = make_pod("a", {"cpu": "1", "nvidia.com/gpu": "2"})
    b = make_pod("b", {"cpu": "1", "nvidia.com/gpu": "2"})
    assert pod_usage(a) is pod_usage(b)
    assert pod_usage(a).gpu.count == 2
    assert dict(pod_usage(a).requests) == {"cpu": 1000, "nvidia.com/gpu": 2}


def test_mig_node_columns():
    node = make_node(
        "m",
        {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB", "nvidia.com/gpu.count": "2"},
        alloc={"nvidia.com/mig-1g.10gb": "7", "nvidia.com/mig-3g.40gb": "2"},
    )
    s = ClusterState.from_nodes([node])
    p1g = s.mig_profiles.index("1g.10gb")
    assert s.mig_free[0, p1g] == 7
    pod = make_pod("x", {"nvidia.com/mig-1g.10gb": "2"})
    binding = s.bind(pod, 0)
    assert binding.devices == (1, 1)
    assert s.mig_free[0, p1g] == 5
    s.unbind(binding)
    assert s.mig_free[0, p1g] == 7
    assert s.dev_capacity_milli[0].tolist() == [0, 0]


def test_namespace_labels():
    s = ClusterState.from_nodes([make_node("a")], namespace_labels={"team": {"tier": "gold"}})
    assert s.namespace_labels_of("team") == {
        "tier": "gold",
        "kubernetes.io/metadata.name": "team",
    }
    assert s.namespace_labels_of("other") == {"kubernetes.io/metadata.name": "other"}


def test_nbytes_counts_columns():
    s = ClusterState.from_arrays(["a"], cpu_milli=[1], memory_bytes=[1], gpu_count=[8])
    assert s.nbytes() >= s.allocatable.nbytes + s.dev_capacity_milli.nbytes
