"""FilterChainFit runs the whole filter chain with the removed pods taken out of every
plugin's state: GPU devices (fractional shares, time-slice replicas, NVLink groups) and
inter-pod (anti-)affinity, besides resources and topology spread."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from gpupact.cluster.devices import REASON_FREE_GPUS, REASON_FREE_NVLINK
from gpupact.cluster.state import ClusterState
from gpupact.engine.placement.framework import ClusterView, explain_fit, node_statuses
from gpupact.engine.placement.plugins import inter_pod_affinity as ipa
from gpupact.engine.preemption import (
    REASON_NO_VICTIMS,
    DefaultPreemption,
    FilterChainFit,
    PreemptionSnapshot,
)
from gpupact.kube.objects import Node, Pod, parse_node, parse_pod
from gpupact.kube.status import Code

NOW = 1_700_000_000 * 1_000_000_000
HOSTNAME = "kubernetes.io/hostname"


def node(
    name: str,
    *,
    gpus: int = 0,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> Node:
    allocatable = {"cpu": "32", "memory": "64Gi", "pods": "32"}
    if gpus:
        allocatable["nvidia.com/gpu"] = str(gpus)
    return parse_node(
        {
            "kind": "Node",
            "metadata": {
                "name": name,
                "labels": {HOSTNAME: name, **(labels or {})},
                "annotations": dict(annotations or {}),
            },
            "status": {"allocatable": allocatable},
        }
    )


def pod(
    name: str,
    *,
    priority: int = 0,
    on: str = "",
    gpus: int = 0,
    milli: int | None = None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    affinity: Mapping[str, Any] | None = None,
    start: str = "2024-01-01T00:00:00Z",
) -> Pod:
    requests: dict[str, str] = {"cpu": "1", "memory": "1Gi"}
    if gpus:
        requests["nvidia.com/gpu"] = str(gpus)
    notes = dict(annotations or {})
    if milli is not None:
        notes["gpupact.io/gpu-milli"] = str(milli)
    spec: dict[str, Any] = {
        "priority": priority,
        "containers": [{"name": "c", "resources": {"requests": requests}}],
    }
    if on:
        spec["nodeName"] = on
    if affinity:
        spec["affinity"] = dict(affinity)
    return parse_pod(
        {
            "kind": "Pod",
            "metadata": {"name": name, "labels": dict(labels or {}), "annotations": notes},
            "spec": spec,
            "status": {"phase": "Running" if on else "Pending", "startTime": start},
        }
    )


def anti_affinity(key: str, app: str) -> dict[str, Any]:
    term = {"topologyKey": key, "labelSelector": {"matchLabels": {"app": app}}}
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def preempt(
    preemptor: Pod,
    nodes: Sequence[Node],
    pods: Sequence[Pod],
    devices: Mapping[str, Sequence[int]] | None = None,
):
    """PostFilter with the statuses the scalar chain gives and the chain as the fit check."""
    statuses = node_statuses(explain_fit(preemptor, ClusterView(nodes, pods, devices)))
    fits = FilterChainFit(nodes, pods, devices=devices)
    outcome = DefaultPreemption().post_filter(
        preemptor, PreemptionSnapshot(nodes, pods), statuses, now=NOW, fits=fits
    )
    return statuses, outcome


def victim_names(outcome) -> list[str]:
    return sorted(p.name for p in outcome.victims)


# --- GPU devices -----------------------------------------------------------------------------


def fractional_cluster() -> tuple[list[Node], list[Pod], dict[str, tuple[int, ...]]]:
    """Two shared GPUs: GPU 0 holds a (300) and b (300), GPU 1 holds c (500) and d (200).
    Shares do not request nvidia.com/gpu, so only the devices say the node is full."""
    nodes = [node("n1", gpus=2, annotations={"gpupact.io/gpu-sharing": "fractional"})]
    pods = [
        pod("a", priority=10, on="n1", milli=300),
        pod("b", priority=5, on="n1", milli=300),
        pod("c", priority=9, on="n1", milli=500),
        pod("d", priority=4, on="n1", milli=200),
    ]
    devices = {"default/a": (0,), "default/b": (0,), "default/c": (1,), "default/d": (1,)}
    return nodes, pods, devices


def test_whole_gpu_preemptor_evicts_exactly_the_shares_of_one_gpu():
    nodes, pods, devices = fractional_cluster()
    whole = pod("whole", priority=100, gpus=1)
    statuses, outcome = preempt(whole, nodes, pods, devices)
    # resources fit (no share requests nvidia.com/gpu): the device check refuses
    assert statuses["n1"].code is Code.UNSCHEDULABLE
    assert statuses["n1"].reasons == (REASON_FREE_GPUS,)
    assert outcome.status.ok, outcome.status
    # reprieve most important first: a stays (GPU 1 frees), c cannot (no GPU would be free),
    # b stays beside a on GPU 0, d cannot: GPU 1's shares go, GPU 0's stay
    assert victim_names(outcome) == ["c", "d"]
    assert outcome.result is not None and outcome.result.nominated_node_name == "n1"


def test_fit_check_releases_the_victims_devices_only():
    nodes, pods, devices = fractional_cluster()
    whole = pod("whole", priority=100, gpus=1)
    fits = FilterChainFit(nodes, pods, devices=devices)
    n1 = nodes[0]
    by_name = {p.name: p for p in pods}
    assert fits(whole, n1, []).reasons == (REASON_FREE_GPUS,)
    assert fits(whole, n1, [by_name["a"], by_name["c"]]).reasons == (REASON_FREE_GPUS,)
    assert fits(whole, n1, [by_name["c"], by_name["d"]]).ok
    assert fits(whole, n1, [by_name["a"], by_name["b"]]).ok
    # the view is not changed by a check
    assert fits(whole, n1, []).reasons == (REASON_FREE_GPUS,)


def test_a_share_preemptor_evicts_one_small_share():
    nodes, pods, devices = fractional_cluster()
    share = pod("share", priority=100, milli=500)
    _, outcome = preempt(share, nodes, pods, devices)
    assert outcome.status.ok, outcome.status
    # GPU 0 has 400 free, GPU 1 300: one of b (GPU 0, +300) or d (GPU 1, +200) must go;
    # the least important pod that suffices alone is d
    assert victim_names(outcome) == ["d"]


def test_time_sliced_replicas_taken_by_shares_are_freed_by_eviction():
    # one GPU advertised as 2 replicas; each share takes a whole replica
    nodes = [
        node(
            "ts",
            gpus=2,
            labels={"nvidia.com/gpu.count": "1", "nvidia.com/gpu.replicas": "2"},
        )
    ]
    pods = [pod("x", priority=5, on="ts", milli=500), pod("y", priority=1, on="ts", milli=500)]
    statuses, outcome = preempt(pod("whole", priority=100, gpus=1), nodes, pods)
    assert statuses["ts"].reasons == (REASON_FREE_GPUS,)
    assert outcome.status.ok, outcome.status
    assert victim_names(outcome) == ["y"]


def test_nvlink_preemptor_evicts_the_pod_that_splits_a_group():
    # 4 GPUs in NVLink groups {0,1} and {2,3}; x holds GPU 1, y holds GPU 2
    nodes = [node("nv", gpus=4, labels={"gpu.topology": "nvlink-2"})]
    pods = [pod("x", priority=5, on="nv", gpus=1), pod("y", priority=1, on="nv", gpus=1)]
    devices = {"default/x": (1,), "default/y": (2,)}
    pair = pod("pair", priority=100, gpus=2, annotations={"gpupact.io/gpu-topology": "nvlink"})
    statuses, outcome = preempt(pair, nodes, pods, devices)
    assert statuses["nv"].reasons == (REASON_FREE_NVLINK,)
    assert outcome.status.ok, outcome.status
    assert victim_names(outcome) == ["y"]  # x stays: group {2,3} is free once y goes


def test_from_state_uses_the_states_devices():
    nodes, pods, devices = fractional_cluster()
    state = ClusterState.from_nodes(nodes, pods, devices=devices)
    whole = pod("whole", priority=100, gpus=1)
    by_name = {p.name: p for p in pods}
    fits = FilterChainFit.from_state(state)
    explicit = FilterChainFit(nodes, pods, devices=devices)
    for removed in ([], ["a"], ["c"], ["c", "d"], ["a", "b"], ["b", "d"]):
        gone = [by_name[n] for n in removed]
        assert fits(whole, nodes[0], gone) == explicit(whole, nodes[0], gone), removed


def test_removing_a_pod_the_view_does_not_hold_changes_nothing():
    nodes, pods, devices = fractional_cluster()
    fits = FilterChainFit(nodes, pods, devices=devices)
    stranger = pod("stranger", priority=1, on="n1", milli=900)
    assert fits(pod("whole", priority=100, gpus=1), nodes[0], [stranger]).reasons == (
        REASON_FREE_GPUS,
    )


# --- inter-pod affinity ------------------------------------------------------------------------


def test_preemptor_anti_affinity_evicts_the_matching_pod_only():
    nodes = [node("n1"), node("n2")]
    pods = [
        pod("db", priority=1, on="n1", labels={"app": "db"}),
        pod("other", priority=0, on="n1", labels={"app": "web"}),
        pod("db2", priority=500, on="n2", labels={"app": "db"}),
    ]
    web = pod("web", priority=100, affinity=anti_affinity(HOSTNAME, "db"))
    statuses, outcome = preempt(web, nodes, pods)
    assert statuses["n1"] == ipa.STATUS_ANTI_AFFINITY
    assert outcome.status.ok, outcome.status
    assert outcome.candidate is not None and outcome.candidate.node == "n1"
    assert victim_names(outcome) == ["db"]  # `other` stays
    # n2's db outranks the preemptor: nothing there may go
    assert outcome.node_statuses["n2"].reasons == (REASON_NO_VICTIMS,)


def test_existing_pods_anti_affinity_against_the_preemptor_makes_it_a_victim():
    nodes = [node("n1")]
    pods = [
        pod(
            "loner",
            priority=1,
            on="n1",
            labels={"app": "x"},
            affinity=anti_affinity(HOSTNAME, "web"),
        ),
        pod("quiet", priority=0, on="n1"),
    ]
    web = pod("web", priority=100, labels={"app": "web"})
    statuses, outcome = preempt(web, nodes, pods)
    assert statuses["n1"] == ipa.STATUS_EXISTING
    assert outcome.status.ok, outcome.status
    assert victim_names(outcome) == ["loner"]


def test_anti_affinity_against_a_higher_priority_pod_cannot_be_preempted():
    nodes = [node("n1")]
    pods = [pod("db", priority=500, on="n1", labels={"app": "db"}), pod("low", on="n1")]
    web = pod("web", priority=100, affinity=anti_affinity(HOSTNAME, "db"))
    _, outcome = preempt(web, nodes, pods)
    assert not outcome.status.ok
    assert outcome.candidate is None
    assert outcome.node_statuses["n1"] == ipa.STATUS_ANTI_AFFINITY


def test_removed_pods_elsewhere_leave_the_affinity_counts():
    # zone anti-affinity: a db pod on n2 blocks n1 (same zone); removing it (a gang member
    # evicted elsewhere) lifts the block, as RemovePod does upstream
    zone = {"zone": "z1"}
    nodes = [node("n1", labels=zone), node("n2", labels=zone)]
    db = pod("db", priority=1, on="n2", labels={"app": "db"})
    fits = FilterChainFit(nodes, [db])
    web = pod("web", priority=100, affinity=anti_affinity("zone", "db"))
    assert fits(web, nodes[0], []) == ipa.STATUS_ANTI_AFFINITY
    assert fits(web, nodes[0], [db]).ok
    assert fits(web, nodes[0], []) == ipa.STATUS_ANTI_AFFINITY  # state restored


def test_required_affinity_fails_when_its_only_match_is_removed():
    nodes = [node("n1", labels={"zone": "z1"})]
    cache = pod("cache", priority=1, on="n1", labels={"app": "cache"})
    term = {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "cache"}}}
    affine = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    web = pod("web", priority=100, affinity=affine)
    fits = FilterChainFit(nodes, [cache])
    assert fits(web, nodes[0], []).ok
    assert fits(web, nodes[0], [cache]) == ipa.STATUS_AFFINITY


@pytest.mark.parametrize("with_state", [False, True])
def test_checks_follow_a_new_preemptor(with_state):
    nodes = [node("n1")]
    db = pod("db", priority=1, on="n1", labels={"app": "db"})
    fits = (
        FilterChainFit.from_state(ClusterState.from_nodes(nodes, [db]))
        if with_state
        else FilterChainFit(nodes, [db])
    )
    first = pod("first", priority=100, affinity=anti_affinity(HOSTNAME, "db"))
    second = pod("second", priority=100)
    assert fits(first, nodes[0], []) == ipa.STATUS_ANTI_AFFINITY
    assert fits(second, nodes[0], []).ok
    assert fits(first, nodes[0], [db]).ok
