"""Strategies inside the one engine: Scheduler(state, strategy) on a ClusterState."""

from __future__ import annotations

import numpy as np

from conftest import build_view
from gpupact.cluster.state import ClusterState
from gpupact.engine.placement import Placement, Scheduler
from gpupact.engine.placement.scheduler import node_view
from gpupact.engine.placement.strategies import (
    FGD,
    GpuClustering,
    Request,
    TargetWorkload,
    make_strategy,
)
from gpupact.kube.objects import Pod
from gpupact.kube.requests import Container, PodResources

GIB = 1 << 30


def pod(name: str, cpu: int, gpus: int = 0, milli: int = 1000) -> Pod:
    requests = {"cpu": cpu, "memory": 4 * GIB}
    annotations = {}
    if gpus and milli < 1000:
        annotations["gpupact.io/gpu-milli"] = str(milli)
    elif gpus:
        requests["nvidia.com/gpu"] = gpus
    container = Container(name="main", requests=requests, limits=dict(requests))
    return Pod(name=name, annotations=annotations, resources=PodResources(containers=(container,)))


def cluster() -> ClusterState:
    return ClusterState.from_arrays(
        ["a", "b", "c"],
        cpu_milli=[96000, 96000, 104000],
        memory_bytes=[384 * GIB] * 3,
        gpu_count=[8, 8, 2],
        gpu_model=["G2", "G2", "T4"],
        gpu_sharing="fractional",
    )


WORKLOAD = TargetWorkload.from_requests(
    [Request(4000, 0, 1, 470)] * 4 + [Request(12000, 0, 1, 1000)] * 4 + [Request(32000)] * 2
)


def test_fgd_places_through_the_scheduler_with_its_own_device_choice():
    state = cluster()
    fgd = FGD(WORKLOAD)
    scheduler = Scheduler(state, fgd)
    for i in range(12):
        share = pod(f"s{i}", 4000, 1, 470)
        view = node_view(state)
        request = Request(4000, 4 * GIB, 1, 470)
        candidates = np.flatnonzero(scheduler.feasible_mask(share))
        scores = fgd.score(view, request, candidates)
        expected = int(candidates[int(np.argmax(scores))])
        placed = scheduler.schedule_one(share)
        assert isinstance(placed, Placement)
        assert placed.node_index == expected
        assert placed.devices == fgd.choose_devices(view, expected, request)
    used = state.dev_used_milli.sum()
    assert used == 12 * 470


def test_fgd_memo_follows_a_different_cluster():
    shared = FGD(WORKLOAD)
    first = build_view([[1000] * 8, [530, 1000]], [96000, 64000])
    shared.score(first, Request(4000, 0, 1, 470), np.arange(2))
    second = build_view([[1000, 470, 0, 0], [1000] * 4, [600]], [8000, 48000, 4000], slots=4)
    request = Request(4000, 0, 1, 470)
    fresh = FGD(WORKLOAD).score(second, request, np.arange(3))
    assert shared.score(second, request, np.arange(3)).tolist() == fresh.tolist()


def test_gpu_clustering_tracks_bound_shapes_through_the_change_log():
    state = cluster()
    clustering = GpuClustering()
    scheduler = Scheduler(state, clustering)
    first = scheduler.schedule_one(pod("s0", 4000, 1, 470))
    assert isinstance(first, Placement)
    # a second share joins the node holding only shares (band 75+)
    second = scheduler.schedule_one(pod("s1", 4000, 1, 470))
    assert isinstance(second, Placement) and second.node_index == first.node_index
    # a whole-GPU pod avoids it: an idle node (25+) beats a node of another shape (0+)
    whole = scheduler.schedule_one(pod("w0", 12000, 1))
    assert isinstance(whole, Placement) and whole.node_index != first.node_index
    state.unbind_pod(first.binding.key)
    state.unbind_pod(second.binding.key)
    scores = clustering.score(state, None, first.binding.usage.gpu, np.arange(3))
    assert scores[first.node_index] < 50  # no shapes left there: back to the idle band
    copy = state.copy()  # a new uid: the counts are rebuilt from the bindings
    assert clustering.score(copy, None, first.binding.usage.gpu, np.arange(3)).tolist() == (
        scores.tolist()
    )


def test_every_registered_policy_runs_in_the_engine():
    for name in ("Random", "DotProd", "GpuClustering", "GpuPacking", "BestFit", "FGD", "FGD-Reach"):
        state = cluster()
        strategy = make_strategy(name, workload=WORKLOAD, rng=1)
        scheduler = Scheduler(state, strategy)
        pods = [
            pod("cpu", 32000),
            pod("share", 4000, 1, 470),
            pod("one", 12000, 1),
            pod("eight", 48000, 8),
            pod("too-big", 200000),
        ]
        outcomes = [scheduler.schedule_one(p) for p in pods]
        assert [isinstance(o, Placement) for o in outcomes] == [True, True, True, True, False]
        assert state.dev_used_milli.sum() == 470 + 1000 + 8000, name
