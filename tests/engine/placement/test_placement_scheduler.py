"""Scheduler behaviour: selection, tie-breaks, profiles, strategies, GPUs, spread, affinity,
refusals and bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest

from gpupact.cluster.devices import GpuRequest
from gpupact.cluster.state import ClusterState
from gpupact.engine.placement import (
    FitResult,
    Placement,
    Profile,
    Scheduler,
    Unschedulable,
    choose_devices,
    explain,
    feasible_mask,
)
from gpupact.engine.placement.scheduler import num_feasible_nodes_to_find
from gpupact.errors import FieldError
from gpupact.kube.objects import parse_node, parse_pod
from gpupact.kube.resources_fit import MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO, ShapePoint
from gpupact.kube.taints import Taint

GI = 1 << 30


def node(name, labels=None, taints=(), alloc=None, annotations=None):
    allocatable = {"cpu": "16", "memory": "64Gi", "pods": "110"}
    allocatable.update(alloc or {})
    return parse_node(
        {
            "metadata": {
                "name": name,
                "labels": {"kubernetes.io/hostname": name, **(labels or {})},
                "annotations": annotations or {},
            },
            "spec": {"taints": list(taints)},
            "status": {"allocatable": allocatable},
        }
    )


def pod(name, requests=None, *, labels=None, annotations=None, namespace="default", **spec):
    body = {"containers": [{"name": "c", "resources": {"requests": requests or {}}}], **spec}
    return parse_pod(
        {
            "metadata": {
                "name": name,
                "namespace": namespace,
                "labels": labels or {},
                "annotations": annotations or {},
            },
            "spec": body,
        }
    )


def uniform(n, **kwargs):
    return ClusterState.from_arrays(
        [f"n{i}" for i in range(n)],
        cpu_milli=np.full(n, 16000),
        memory_bytes=np.full(n, 64 * GI),
        **kwargs,
    )


# --- selection ----------------------------------------------------------------------------


def test_least_allocated_spreads_and_binds():
    state = uniform(3)
    scheduler = Scheduler(state, seed=3)
    placed = [scheduler.schedule_one(pod(f"p{i}", {"cpu": "4", "memory": "8Gi"})) for i in range(3)]
    assert all(isinstance(p, Placement) for p in placed)
    assert sorted(p.node for p in placed) == ["n0", "n1", "n2"]
    assert state.num_pods == 3
    first = placed[0]
    # LeastAllocated ((12/16 + 56/64) / 2 -> 81) + BalancedAllocation (93) + TaintToleration 300
    assert first.score == 81 + 93 + 300
    assert first.binding is not None and first.feasible_nodes == 3


def test_seeded_tie_break_is_reproducible_and_first_picks_lowest():
    def run(seed, tie_break="random"):
        state = uniform(20)
        scheduler = Scheduler(state, Profile(tie_break=tie_break), seed=seed)
        return [scheduler.schedule_one(pod(f"p{i}", {"cpu": "1"})).node for i in range(5)]

    assert run(1) == run(1)
    assert run(1) != run(2)
    assert run(1, "first")[0] == "n0"


def test_most_allocated_profile_packs():
    state = uniform(3)
    scheduler = Scheduler(state, Profile.scoring(MOST_ALLOCATED), seed=0)
    nodes = {
        scheduler.schedule_one(pod(f"p{i}", {"cpu": "2", "memory": "1Gi"})).node for i in range(4)
    }
    assert len(nodes) == 1


def test_requested_to_capacity_ratio_profile():
    shape = (ShapePoint(0, 10), ShapePoint(100, 0))  # like LeastAllocated
    state = uniform(2)
    state.bind(pod("busy", {"cpu": "8"}), 0)
    scheduler = Scheduler(state, Profile.scoring(REQUESTED_TO_CAPACITY_RATIO, shape=shape))
    assert scheduler.schedule_one(pod("p", {"cpu": "1"})).node == "n1"


def test_bind_false_leaves_state_alone():
    state = uniform(2, gpu_count=[2, 2])
    placement = Scheduler(state).schedule_one(pod("p", {"nvidia.com/gpu": "1"}), bind=False)
    assert isinstance(placement, Placement) and placement.binding is None
    assert placement.devices == (0,)
    assert state.num_pods == 0


def test_departures_free_room():
    state = uniform(1)
    scheduler = Scheduler(state)
    big = scheduler.schedule_one(pod("big", {"cpu": "12"}))
    assert isinstance(scheduler.schedule_one(pod("next", {"cpu": "8"})), FitResult)
    state.unbind(big.binding)
    assert isinstance(scheduler.schedule_one(pod("next", {"cpu": "8"})), Placement)


# --- refusals -----------------------------------------------------------------------------


def test_fit_error_in_kube_scheduler_format():
    state = ClusterState.from_nodes(
        [
            node("a", taints=[{"key": "t", "value": "x", "effect": "NoSchedule"}]),
            node("b"),
            node("c", {"pool": "other"}),
        ]
    )
    result = Scheduler(state).schedule_one(
        pod("p", {"cpu": "20"}, nodeSelector={"kubernetes.io/hostname": "b"})
    )
    assert isinstance(result, FitResult)
    assert result.message == (
        "0/3 nodes are available: 1 Insufficient cpu, "
        "1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had untolerated taint(s)."
    )
    by_plugin = {r.plugin: r for r in result.reasons}
    assert by_plugin["NodeResourcesFit"].code == "UnschedulableAndUnresolvable"
    assert by_plugin["NodeResourcesFit"].detail == "1 node(s)"
    assert by_plugin["TaintToleration"].subject == "default/p"
    assert result.verdicts[0].detail == "untolerated taint t=x:NoSchedule"
    assert result.feasible == ()


def test_cheap_refusal_mode_decides_the_same_and_skips_reasons():
    """explain=False (per call or per scheduler) refuses with an Unschedulable marker; the
    placements of every pod are those of the explaining scheduler."""
    pods = [pod(f"p{i}", {"cpu": str(3 + i % 5)}) for i in range(12)]
    outcomes = []
    for scheduler in (Scheduler(uniform(3), seed=5), Scheduler(uniform(3), seed=5, explain=False)):
        outcomes.append([scheduler.schedule_one(p) for p in pods])
    explained, cheap = outcomes
    assert any(isinstance(r, FitResult) for r in explained)
    for a, b in zip(explained, cheap, strict=True):
        if isinstance(a, Placement):
            assert isinstance(b, Placement) and (a.node, a.score) == (b.node, b.score)
        else:
            assert isinstance(b, Unschedulable) and b.pod == a.pod and b.message == ""
    state = uniform(1)
    scheduler = Scheduler(state)
    scheduler.schedule_one(pod("big", {"cpu": "12"}))
    assert isinstance(scheduler.schedule_one(pod("x", {"cpu": "8"}), explain=False), Unschedulable)
    assert isinstance(scheduler.schedule_one(pod("x", {"cpu": "8"})), FitResult)
    assert isinstance(scheduler.with_state(state.copy()), Scheduler)


def test_module_helpers():
    state = uniform(2, gpu_count=[0, 4])
    gpu_pod = pod("g", {"nvidia.com/gpu": "2"})
    assert feasible_mask(state, gpu_pod).tolist() == [False, True]
    assert explain(state, gpu_pod).feasible == ("n1",)
    assert choose_devices(state, 1, GpuRequest(2)) == (0, 1)

    class Last:
        def choose_devices(self, state, node, gpu):
            return tuple(range(4))[-gpu.count :]

    assert choose_devices(state, 1, GpuRequest(2), Last()) == (2, 3)


# --- GPUs ---------------------------------------------------------------------------------


def test_shares_pack_onto_one_device():
    state = uniform(1, gpu_count=[2], gpu_sharing="fractional")
    scheduler = Scheduler(state)
    devices = [
        scheduler.schedule_one(pod(f"s{i}", annotations={"gpupact.io/gpu-milli": "400"})).devices
        for i in range(4)
    ]
    assert devices == [(0,), (0,), (1,), (1,)]
    whole = scheduler.schedule_one(pod("w", {"nvidia.com/gpu": "1"}))
    assert isinstance(whole, FitResult)
    assert whole.message == "0/1 nodes are available: 1 node(s) didn't have enough free GPUs."


def test_gpu_model_and_nvlink():
    state = uniform(
        3,
        gpu_count=[8, 8, 8],
        gpu_model=["V100", "A100", "A100"],
        gpu_sharing="exclusive",
        gpu_topology=[None, "nvlink-4", "nvlink-8"],
    )
    scheduler = Scheduler(state, Profile(tie_break="first"))
    want = {"gpupact.io/gpu-models": "A100", "gpupact.io/gpu-topology": "nvlink"}
    five = scheduler.schedule_one(pod("five", {"nvidia.com/gpu": "5"}, annotations=want))
    assert five.node == "n2"  # the nvlink-4 node has no group of 5
    # n1 keeps 4 free GPUs, two in each NVLink group of four
    state.bind(pod("blocker", {"nvidia.com/gpu": "4"}), 1, (0, 1, 4, 5))
    four = pod("x", {"nvidia.com/gpu": "4"}, annotations=want)
    verdicts = {v.node: v for v in scheduler.explain(four).verdicts}
    assert verdicts["n0"].status.reasons == ("node(s) didn't have the requested GPU model",)
    assert verdicts["n0"].detail == "4 whole GPU(s), model in {A100}, in one NVLink group"
    assert verdicts["n1"].status.reasons == (
        "node(s) didn't have enough free GPUs in one NVLink group",
    )
    assert verdicts["n1"].status.code == "Unschedulable"
    assert verdicts["n2"].status.reasons == ("Insufficient nvidia.com/gpu",)


def test_mig_slices():
    layout = json.dumps([{"3g.40gb": 2}, {"1g.10gb": 7}])
    state = ClusterState.from_nodes(
        [
            node(
                "mig",
                {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"},
                alloc={"nvidia.com/mig-3g.40gb": "2", "nvidia.com/mig-1g.10gb": "7"},
                annotations={"gpupact.io/mig-layout": layout},
            )
        ]
    )
    scheduler = Scheduler(state)
    first = scheduler.schedule_one(pod("a", {"nvidia.com/mig-3g.40gb": "1"}))
    assert first.devices == (0,)
    scheduler.schedule_one(pod("b", {"nvidia.com/mig-3g.40gb": "1"}))
    refused = scheduler.schedule_one(pod("c", {"nvidia.com/mig-3g.40gb": "1"}))
    assert "Insufficient nvidia.com/mig-3g.40gb" in refused.message
    assert scheduler.schedule_one(pod("d", {"nvidia.com/mig-1g.10gb": "3"})).devices == (1, 1, 1)


def test_time_sliced_node_is_recorded():
    labels = {
        "nvidia.com/gpu.count": "1",
        "nvidia.com/gpu.replicas": "4",
        "nvidia.com/gpu.sharing-strategy": "time-slicing",
    }
    state = ClusterState.from_nodes([node("ts", labels, alloc={"nvidia.com/gpu": "4"})])
    scheduler = Scheduler(state)
    for i in range(4):
        assert scheduler.schedule_one(pod(f"p{i}", {"nvidia.com/gpu": "1"})).devices == (0,)
    assert state.sharing_mode(0).name == "TIME_SLICED"
    assert isinstance(scheduler.schedule_one(pod("p5", {"nvidia.com/gpu": "1"})), FitResult)


# --- spread and inter-pod affinity --------------------------------------------------------


def zones():
    return ClusterState.from_nodes([node(f"n{i}", {"zone": f"z{i % 3}"}) for i in range(6)])


def test_topology_spread_do_not_schedule():
    state = zones()
    scheduler = Scheduler(state, seed=5)
    constraint = [
        {
            "maxSkew": 1,
            "topologyKey": "zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}},
        }
    ]
    placed = [
        scheduler.schedule_one(
            pod(f"w{i}", {"cpu": "1"}, labels={"app": "web"}, topologySpreadConstraints=constraint)
        )
        for i in range(6)
    ]
    per_zone = {}
    for p in placed:
        zone = state.nodes[p.node_index].labels["zone"]
        per_zone[zone] = per_zone.get(zone, 0) + 1
    assert per_zone == {"z0": 2, "z1": 2, "z2": 2}


def test_schedule_anyway_prefers_emptier_zones():
    state = zones()
    scheduler = Scheduler(state, seed=2)
    for i in range(2):
        state.bind(pod(f"old{i}", {"cpu": "1"}, labels={"app": "web"}), 0)  # zone z0
    soft = [
        {
            "maxSkew": 1,
            "topologyKey": "zone",
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": {"app": "web"}},
        }
    ]
    placed = scheduler.schedule_one(
        pod("new", {"cpu": "1"}, labels={"app": "web"}, topologySpreadConstraints=soft)
    )
    assert state.nodes[placed.node_index].labels["zone"] != "z0"


def test_required_anti_affinity_on_hostname():
    state = zones()
    scheduler = Scheduler(state)
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "topologyKey": "kubernetes.io/hostname",
                    "labelSelector": {"matchLabels": {"app": "db"}},
                }
            ]
        }
    }
    nodes = [
        scheduler.schedule_one(pod(f"db{i}", labels={"app": "db"}, affinity=anti)).node
        for i in range(6)
    ]
    assert len(set(nodes)) == 6
    refused = scheduler.schedule_one(pod("db6", labels={"app": "db"}, affinity=anti))
    assert isinstance(refused, FitResult)
    assert refused.message == (
        "0/6 nodes are available: 6 node(s) didn't match pod anti-affinity rules."
    )
    # a pod without terms is refused by the existing pods' anti-affinity when it matches them
    plain = scheduler.schedule_one(pod("plain", labels={"app": "db"}))
    assert "6 node(s) didn't satisfy existing pods anti-affinity rules" in plain.message


def test_required_affinity_to_a_zone_and_the_first_pod():
    state = zones()
    scheduler = Scheduler(state, seed=1)
    affinity = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "cache"}}}
            ]
        }
    }
    first = scheduler.schedule_one(pod("c0", labels={"app": "cache"}, affinity=affinity))
    assert isinstance(first, Placement)  # nothing matches yet: the self-affine pod may start
    zone = state.nodes[first.node_index].labels["zone"]
    for i in range(1, 4):
        nxt = scheduler.schedule_one(pod(f"c{i}", labels={"app": "cache"}, affinity=affinity))
        assert state.nodes[nxt.node_index].labels["zone"] == zone
    stranger = scheduler.schedule_one(pod("s", labels={"app": "other"}, affinity=affinity))
    assert state.nodes[stranger.node_index].labels["zone"] == zone


def test_preferred_affinity_scores():
    state = zones()
    state.bind(pod("anchor", labels={"app": "api"}), 4)
    preferred = {
        "podAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 100,
                    "podAffinityTerm": {
                        "topologyKey": "kubernetes.io/hostname",
                        "labelSelector": {"matchLabels": {"app": "api"}},
                    },
                }
            ]
        }
    }
    placed = Scheduler(state).schedule_one(pod("near", {"cpu": "1"}, affinity=preferred))
    assert placed.node == "n4"


# --- strategies -----------------------------------------------------------------------------


def test_interface_strategy_replaces_scoring():
    class MostGpusFree:
        name = "MostGpusFree"

        def __init__(self):
            self.calls = []

        def score(self, state, pod, gpu_request, candidates):
            self.calls.append(gpu_request)
            return state.gpu_free_units[candidates]

        def choose_devices(self, state, node, gpu_request):
            free = np.flatnonzero(state.dev_free_milli[node] >= 1000)
            return tuple(int(d) for d in free[-gpu_request.count :])

    state = uniform(3, gpu_count=[2, 8, 4], gpu_sharing="exclusive")
    strategy = MostGpusFree()
    placed = Scheduler(state, strategy).schedule_one(pod("p", {"nvidia.com/gpu": "2"}))
    assert placed.node == "n1" and placed.devices == (6, 7)
    assert strategy.calls == [GpuRequest(2)]


def test_node_view_strategies_from_the_strategies_package():
    strategies = pytest.importorskip("gpupact.engine.placement.strategies.best_fit")
    state = uniform(3, gpu_count=[8, 8, 8], gpu_sharing="fractional")
    state.bind(pod("busy", annotations={"gpupact.io/gpu-milli": "500"}), 2)
    scheduler = Scheduler(state, strategies.BestFit())
    placed = scheduler.schedule_one(
        pod("p", {"cpu": "1"}, annotations={"gpupact.io/gpu-milli": "500"})
    )
    assert placed.node == "n2" and placed.devices == (0,)


# --- percentageOfNodesToScore -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("nodes", "percentage", "expected"),
    [(50, 0, 50), (1000, 0, 420), (6000, 0, 300), (10000, 0, 500), (5000, 10, 500), (500, 1, 100)],
)
def test_num_feasible_nodes_to_find(nodes, percentage, expected):
    assert num_feasible_nodes_to_find(nodes, percentage) == expected


def test_sampling_rotates_the_start_node():
    state = uniform(400)
    scheduler = Scheduler(state, Profile(percentage_of_nodes_to_score=0, tie_break="first"))
    first = scheduler.schedule_one(pod("a", {"cpu": "1"}))
    # 400 nodes: 50% - 400/125 = 47% -> the first 188 feasible nodes from the start node
    assert first.feasible_nodes == 188 and first.node == "n0"
    assert scheduler.next_start_node == 188
    second = scheduler.schedule_one(pod("b", {"cpu": "1"}))
    assert second.node == "n188"


# --- bad input ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        lambda s: Scheduler(s, "fast"),
        lambda s: Scheduler(s, object()),
        lambda s: Scheduler(s, Profile(tie_break="coin")),
        lambda s: Scheduler(s, Profile(percentage_of_nodes_to_score=101)),
        lambda s: Scheduler(s, Profile(hard_pod_affinity_weight=-1)),
        lambda s: Scheduler(s, Profile.scoring(MOST_ALLOCATED, resources=())),
    ],
)
def test_bad_profiles(make):
    with pytest.raises(FieldError):
        make(uniform(1))


def test_bad_pod_fields_are_field_errors():
    state = uniform(1)
    with pytest.raises(FieldError) as err:
        Scheduler(state).schedule_one(pod("p", annotations={"gpupact.io/gpu-milli": "abc"}))
    assert err.value.path == ("metadata", "annotations", "gpupact.io/gpu-milli")
    bad_affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{}]}}
    with pytest.raises(FieldError) as err:
        Scheduler(state).schedule_one(pod("q", affinity=bad_affinity))
    assert err.value.path[-1] == "topologyKey"


def test_taints_on_every_node_and_tolerations():
    state = uniform(
        4,
        labels={"nodepool": ["a", "b", "a", "b"]},
        taints=[(Taint("workload", p, "NoSchedule"),) for p in "abab"],
    )
    tolerate = [{"key": "workload", "operator": "Equal", "value": "b", "effect": "NoSchedule"}]
    scheduler = Scheduler(state)
    for i in range(4):
        placed = scheduler.schedule_one(
            pod(f"p{i}", {"cpu": "1"}, nodeSelector={"nodepool": "b"}, tolerations=tolerate)
        )
        assert placed.node in ("n1", "n3")


def test_empty_cluster_and_removed_nodes():
    empty = ClusterState.from_nodes([])
    result = Scheduler(empty).schedule_one(pod("p"))
    assert result.message == "no nodes available to schedule pods"
    state = uniform(3)
    state.remove_node(1)
    scheduler = Scheduler(state)
    refused = scheduler.schedule_one(pod("big", {"cpu": "100"}))
    assert refused.message == "0/2 nodes are available: 2 Insufficient cpu."
    assert [v.node for v in refused.verdicts] == ["n0", "n2"]


def test_shape_caches_stay_bounded(monkeypatch):
    import gpupact.engine.placement.scheduler as scheduler_module

    monkeypatch.setattr(scheduler_module, "_SHAPE_CACHE_BYTES", 20 * 4 * 10)
    state = uniform(4)
    scheduler = Scheduler(state)
    for i in range(30):
        scheduler.schedule_one(pod(f"p{i}", {"cpu": f"{i + 1}m"}))
    assert len(scheduler._entries) <= 10 and len(scheduler._static) <= 10
