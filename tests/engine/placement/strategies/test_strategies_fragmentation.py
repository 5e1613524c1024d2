"""The fragmentation measure FGD descends: typical pods, per-node fragment, CPU reach."""

from __future__ import annotations

import numpy as np
import pytest

from gpupact.engine.placement.strategies.base import Request
from gpupact.engine.placement.strategies.fragmentation import (
    TargetWorkload,
    cluster_frag_milli,
    cpu_stranded_frag,
    frag_delta_score,
    node_frag,
    node_frag_with_cpu_reach,
    view_frag,
)

A = Request(cpu_milli=4000, gpu_count=1, gpu_milli=500)  # a GPU share
B = Request(cpu_milli=8000, gpu_count=1, gpu_milli=1000)  # one whole GPU
C = Request(cpu_milli=2000)  # CPU only
D = Request(cpu_milli=1000, gpu_count=1, gpu_milli=250)


def workload(*pairs: tuple[Request, int], pct: int = 100) -> TargetWorkload:
    return TargetWorkload.from_requests([r for r, n in pairs for _ in range(n)], pct)


def test_typical_pods_cover_the_popularity_threshold_in_decreasing_count():
    wl = workload((A, 5), (B, 3), (C, 1), (D, 1), pct=95)
    # 9 of 10 pods is below 95%: both singletons are needed; the larger CPU (C) ranks first
    assert wl.cpu_milli.tolist() == [4000, 8000, 2000, 1000]
    assert wl.weight.tolist() == [5, 3, 1, 1]
    assert wl.total_weight == 10
    small = workload((A, 5), (B, 3), (C, 1), (D, 1), pct=80)
    assert small.cpu_milli.tolist() == [4000, 8000] and small.weight.tolist() == [5, 3]


def test_typical_pods_ignore_memory_and_keep_models():
    t4 = Request(cpu_milli=4000, memory=1, gpu_count=1, gpu_milli=500, gpu_models=frozenset({"T4"}))
    wl = TargetWorkload.from_requests([A, Request(4000, 99, 1, 500), t4])
    assert wl.weight.tolist() == [2, 1]
    assert wl.models == (None, frozenset({"T4"}))


def test_bad_workload_inputs():
    with pytest.raises(ValueError, match="at least one"):
        TargetWorkload.from_requests([])
    with pytest.raises(ValueError, match="popularity"):
        TargetWorkload.from_requests([A], 0)


def test_node_frag_by_hand(view_of):
    wl = workload((A, 5), (B, 3), (C, 1))
    view = view_of([[1000, 300], [1000, 300], [400, 400]], [16000, 6000, 16000], ["V100"] * 3)
    got = view_frag(wl, view)
    # node 0: A and B run, only the 300 device is too small: 5*300 + 3*300, C: all 1300 idle
    # node 1: B lacks CPU (all idle counts): 5*300 + 3*1300 + 1300
    # node 2: no device holds A or B: everything is fragment, 800 * (5 + 3 + 1)
    assert got.tolist() == [3700, 6700, 7200]
    assert cluster_frag_milli(wl, view) == pytest.approx((3700 + 6700 + 7200) / 9)


def test_node_frag_counts_everything_for_a_model_the_pod_cannot_use(view_of):
    t4_only = Request(4000, 0, 1, 500, frozenset({"T4"}))
    wl = workload((t4_only, 1))
    view = view_of([[1000, 1000], [1000, 1000], []], [16000] * 3, ["T4", "V100", ""])
    assert view_frag(wl, view).tolist() == [0, 2000, 0]


def test_multi_gpu_typical_pod_needs_enough_idle_devices():
    two = Request(8000, 0, 2, 1000)
    wl = workload((two, 1))
    access = np.ones((2, 1), dtype=bool)
    dev = np.array([[1000, 1000, 500, 0], [1000, 600, 600, 0]])
    got = node_frag(wl, np.array([32000, 32000]), dev, access)
    assert got.tolist() == [500, 2200]


def test_cpu_stranded_frag_by_hand():
    wl = workload((A, 2), (C, 5))
    access = np.ones((3, 2), dtype=bool)
    dev = np.array([[1000, 1000], [1000, 1000], [1000, 0]])
    cpu = np.array([8000, 40000, 0])
    # A feeds 500 milli per 4000 milli-CPU: 8000 reaches 1000 of the 2000 idle
    got = cpu_stranded_frag(wl, cpu, dev, access)
    assert got.tolist() == [2 * 1000, 0, 2 * 1000]
    blocked = cpu_stranded_frag(wl, cpu, dev, np.zeros((3, 2), dtype=bool))
    assert blocked.tolist() == [0, 0, 0]


def test_frag_delta_score_is_the_truncated_sigmoid():
    scores = frag_delta_score(np.array([0, 10_000, -10_000, 10**9, -(10**9)]), total_weight=10)
    # 10_000 / (10 * 1000) = one GPU: floor(100 / (1 + e^-1)) = 73
    assert scores.tolist() == [50, 73, 26, 100, 0]


def test_fgd_reach_measure_is_the_sum_of_both_terms():
    rng = np.random.default_rng(3)
    wl = workload((A, 5), (B, 3), (C, 2), (D, 1), (Request(16000, 0, 2, 1000), 1))
    dev = rng.integers(0, 11, size=(50, 8)) * 100
    cpu = rng.integers(0, 96_001, size=50)
    access = rng.random((50, wl.size)) < 0.8
    both = node_frag_with_cpu_reach(wl, cpu, dev, access)
    assert (
        both.tolist()
        == (node_frag(wl, cpu, dev, access) + cpu_stranded_frag(wl, cpu, dev, access)).tolist()
    )
