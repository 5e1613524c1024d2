"""Each policy of the FGD paper and ours on hand-built node views."""

from __future__ import annotations

import math

import numpy as np
import pytest

from conftest import build_view
from gpupact.engine.placement.strategies import (
    FGD,
    POLICIES,
    BestFit,
    DotProd,
    FGDReach,
    GpuPacking,
    RandomStrategy,
    TargetWorkload,
    make_strategy,
    policy_name,
)
from gpupact.engine.placement.strategies.base import (
    Request,
    best_fit_devices,
    feasible,
    first_free_devices,
    select_node,
    tightest_device,
)
from gpupact.engine.placement.strategies.fragmentation import frag_delta_score, view_frag
from gpupact.engine.placement.strategies.gpu_clustering import gpu_clustering_scores, shape_tag

SHARE = Request(cpu_milli=4000, gpu_count=1, gpu_milli=470)
WHOLE = Request(cpu_milli=12000, gpu_count=1, gpu_milli=1000)
TWO = Request(cpu_milli=16000, gpu_count=2, gpu_milli=1000)
CPU_ONLY = Request(cpu_milli=32000)


def all_nodes(view) -> np.ndarray:
    return np.arange(view.n_nodes)


# --- requests and shared helpers ----------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"cpu_milli": -1}, "negative"),
        ({"cpu_milli": 1, "gpu_milli": 5}, "without GPUs"),
        ({"cpu_milli": 1, "gpu_count": 1, "gpu_milli": 0}, "gpu_milli"),
        ({"cpu_milli": 1, "gpu_count": 1, "gpu_milli": 1001}, "gpu_milli"),
        ({"cpu_milli": 1, "gpu_count": 2, "gpu_milli": 500}, "one device"),
    ],
)
def test_bad_requests(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Request(**kwargs)


def test_feasible_checks_cpu_memory_model_and_devices(view_of):
    view = view_of(
        [[1000, 1000], [400, 1000], [470], [1000, 1000]],
        [64000] * 3 + [8000],
        ["T4", "T4", "V100", "V100"],
    )
    assert feasible(view, TWO).tolist() == [True, False, False, False]
    assert feasible(view, SHARE).tolist() == [True, True, True, True]
    t4 = Request(4000, 0, 1, 470, frozenset({"T4"}))
    assert feasible(view, t4).tolist() == [True, True, False, False]
    assert feasible(view, WHOLE).tolist() == [True, True, False, False]


def test_device_helpers():
    row = np.array([1000, 300, 500, 500, 1000, 0])
    assert first_free_devices(row, 2) == (0, 4)
    assert tightest_device(row, 450) == 2  # the tightest fit; lowest index among equals
    with pytest.raises(ValueError):
        first_free_devices(row, 3)
    with pytest.raises(ValueError):
        tightest_device(row, 1001)
    assert select_node(np.array([3, 7, 7]), np.array([4, 9, 11])) == 9


# --- the paper's baselines ----------------------------------------------------------------


def test_random_is_seeded_and_stays_among_candidates(view_of):
    view = view_of([[1000, 200, 800, 470]] * 6, [64000] * 6)
    picks = []
    for _ in range(2):
        strategy = RandomStrategy(7)
        candidates = np.array([1, 3, 5])
        picks.append(
            [select_node(strategy.score(view, SHARE, candidates), candidates) for _ in range(20)]
        )
    assert picks[0] == picks[1]
    assert set(picks[0]) == {1, 3, 5}
    devices = {RandomStrategy(s).choose_devices(view, 0, SHARE)[0] for s in range(40)}
    assert devices == {0, 2, 3}  # only devices holding 470 milli
    assert RandomStrategy(1).choose_devices(view, 0, WHOLE) == (0,)


def _go_dot_prod(cpu_free, gpu_free, req):
    dot = (cpu_free / 128000) * (req.cpu_milli / 128000) + (gpu_free / 8000) * (
        req.total_gpu_milli / 8000
    )
    return int(100 * (1 - dot / 2))


def _go_best_fit(cpu_free, gpu_free, req):
    left = (cpu_free - req.cpu_milli) / 128000 * 0.5 + (gpu_free - req.total_gpu_milli) / 8000 * 0.5
    return int((1 - left) * 100)


@pytest.mark.parametrize("req", [SHARE, WHOLE, TWO, CPU_ONLY])
def test_dot_prod_and_best_fit_match_the_artefacts_float_formulas(req):
    rng = np.random.default_rng(5)
    n = 200
    devices = [list(rng.integers(0, 11, size=8) * 100) for _ in range(n)]
    for row in devices:  # every node can host the request
        row[:2] = [1000, 1000]
    cpu = rng.integers(32000, 128001, size=n)
    view = build_view(devices, cpu)
    gpu_free = view.dev_free.sum(axis=1)
    cands = all_nodes(view)
    dot = DotProd().score(view, req, cands)
    assert dot.tolist() == [_go_dot_prod(c, g, req) for c, g in zip(cpu, gpu_free, strict=True)]
    fit = BestFit().score(view, req, cands)
    assert fit.tolist() == [_go_best_fit(c, g, req) for c, g in zip(cpu, gpu_free, strict=True)]


def test_best_fit_prefers_the_fullest_node(view_of):
    view = view_of([[1000] * 8, [1000, 1000, 0, 0, 0, 0, 0, 0]], [96000, 20000])
    assert select_node(BestFit().score(view, WHOLE, all_nodes(view)), all_nodes(view)) == 1


def test_gpu_packing_bands(view_of):
    view = view_of(
        [
            [1000, 600],  # shares a used GPU: 100 - (60% free) // 10 = 94
            [1000, 1000],  # idle node, 2 idle GPUs: 33 - 2 = 31
            [1000, 1000, 0],  # used node, takes one idle GPU: 50 - 1 = 49
            [1000] * 8,  # idle node with 8 GPUs: max(33 - 8, 8) = 25
        ],
        [64000] * 4,
    )
    cands = all_nodes(view)
    assert GpuPacking().score(view, SHARE, cands).tolist() == [94, 31, 49, 25]
    assert GpuPacking().score(view, WHOLE, cands).tolist() == [49, 31, 49, 25]
    assert GpuPacking().score(view, CPU_ONLY, cands).tolist() == [0, 0, 0, 0]


def test_gpu_clustering_bands():
    tags = np.array([0b1, 0b11, 0, 0b10])  # share only; share + 1-gpu; none; 1-gpu only
    dev = np.array([[500, 1000], [0, 1000], [1000, 1000], [0, 1000]])
    cands = np.arange(4)
    # fullness: 25 * (8000 - free) // 8000 -> 20, 21, 18, 21
    assert gpu_clustering_scores(tags, dev, shape_tag(1, 470), cands).tolist() == [
        95,
        71,
        43,
        21,
    ]
    assert gpu_clustering_scores(tags, dev, shape_tag(1, 1000), cands).tolist() == [
        20,
        71,
        43,
        96,
    ]
    assert gpu_clustering_scores(tags, dev, shape_tag(0, 0), cands).tolist() == [0, 0, 0, 0]


def test_best_fit_device_choice(view_of):
    view = view_of([[1000, 600, 500, 1000]], [64000])
    assert best_fit_devices(view, 0, SHARE) == (2,)
    assert best_fit_devices(view, 0, TWO) == (0, 3)
    assert best_fit_devices(view, 0, CPU_ONLY) == ()


# --- FGD and FGD-Reach --------------------------------------------------------------------

WORKLOAD = TargetWorkload.from_requests(
    [SHARE] * 5 + [WHOLE] * 4 + [TWO] * 1 + [CPU_ONLY] * 2 + [Request(8000, 0, 1, 810)] * 3
)


def brute_force_fgd(strategy: FGD, view, req: Request) -> tuple[dict, dict]:
    """Scores and devices recomputed from the measure for every feasible node, no memo."""
    access = strategy.workload.access(view.gpu_models)[view.gpu_model]
    if isinstance(strategy, FGDReach) and req.gpu_count and not req.is_share:
        strategy = FGD(strategy.workload)  # FGD-Reach places whole-device pods by FGD
    weight = strategy.workload.total_weight
    scores: dict[int, int] = {}
    devices: dict[int, tuple] = {}
    for i in np.flatnonzero(feasible(view, req)):
        cpu, row = view.cpu_free[i : i + 1], view.dev_free[i : i + 1]
        before = strategy.measure(cpu, row, access[i : i + 1])[0]
        if req.is_share:
            options = [d for d in range(row.shape[1]) if row[0, d] >= req.gpu_milli]
        else:
            options = [None]
        best, best_device = -1, ()
        for d in options:
            after_row = row.copy()
            if d is not None:
                after_row[0, d] -= req.gpu_milli
            elif req.gpu_count:
                for slot in first_free_devices(row[0], req.gpu_count):
                    after_row[0, slot] -= req.gpu_milli
            after = strategy.measure(cpu - req.cpu_milli, after_row, access[i : i + 1])[0]
            score = int(frag_delta_score(np.array([before - after]), weight)[0])
            if score > best:
                best, best_device = score, (() if d is None else (d,))
        scores[i], devices[i] = best, best_device
    return scores, devices


@pytest.mark.parametrize("cls", [FGD, FGDReach])
def test_fgd_memo_agrees_with_recomputation_while_nodes_change(cls):
    rng = np.random.default_rng(11)
    strategy = cls(WORKLOAD)
    view = build_view(
        [[1000] * 8] * 6 + [[1000] * 2] * 6, [96000] * 6 + [104000] * 6, ["G2"] * 6 + ["T4"] * 6
    )
    requests = [SHARE, WHOLE, TWO, CPU_ONLY, Request(8000, 0, 1, 810)]
    for step in range(60):
        req = requests[int(rng.integers(len(requests)))]
        cands = np.flatnonzero(feasible(view, req))
        if cands.shape[0] == 0:
            break
        expected, devices = brute_force_fgd(strategy, view, req)
        got = strategy.score(view, req, cands)
        assert got.tolist() == [expected[c] for c in cands], f"step {step}"
        node = select_node(got, cands)
        chosen = strategy.choose_devices(view, node, req)
        if req.is_share:
            assert chosen == devices[node], f"step {step}"
        for d in chosen:
            view.dev_free[node, d] -= req.gpu_milli
        view.cpu_free[node] -= req.cpu_milli


def test_fgd_scores_reflect_the_fragment_change(view_of):
    view = view_of([[1000, 1000], [1000, 530]], [64000, 64000])
    fgd = FGD(WORKLOAD)
    cands = all_nodes(view)
    scores = fgd.score(view, SHARE, cands)
    frag = view_frag(WORKLOAD, view)
    assert scores[1] != scores[0] and frag[1] > frag[0]
    # the 530 device takes the 470 share whole: the node's fragment shrinks, FGD goes there
    assert select_node(scores, cands) == 1
    assert fgd.choose_devices(view, 1, SHARE) == (1,)
    assert fgd.choose_devices(view, 0, WHOLE) == (0,)
    assert fgd.choose_devices(view, 0, CPU_ONLY) == ()


def test_fgd_is_order_independent_within_a_node(view_of):
    fgd = FGD(WORKLOAD)
    view = view_of([[1000, 530, 200], [200, 1000, 530]], [64000, 64000])
    a, b = fgd.score(view, SHARE, all_nodes(view))
    assert a == b  # a node's state is its multiset of free devices


def test_fgd_reach_sends_cpu_jobs_where_cpu_is_plentiful(view_of):
    # a CPU-rich node (few GPUs, many cores) and a GPU-dense one with 12 cores per GPU
    view = view_of([[1000] * 2, [1000] * 8], [104000, 96000], ["T4", "G2"])
    cands = all_nodes(view)
    reach = FGDReach(WORKLOAD).score(view, CPU_ONLY, cands)
    plain = FGD(WORKLOAD).score(view, CPU_ONLY, cands)
    assert select_node(reach, cands) == 0
    assert plain[0] == plain[1]  # FGD alone sees no difference and takes the first node


def test_fgd_reach_places_whole_device_pods_like_fgd(view_of):
    view = view_of([[1000] * 2, [1000] * 8, [1000, 0, 0, 0]], [104000, 30000, 96000])
    cands = all_nodes(view)
    for req in (WHOLE, TWO):
        ok = np.flatnonzero(feasible(view, req))
        reach = FGDReach(WORKLOAD).score(view, req, ok)
        assert reach.tolist() == FGD(WORKLOAD).score(view, req, ok).tolist()
    assert FGDReach(WORKLOAD).score(view, SHARE, cands).tolist() != (
        FGD(WORKLOAD).score(view, SHARE, cands).tolist()
    )


# --- registry -----------------------------------------------------------------------------


def test_registry():
    assert POLICIES == (
        "Random",
        "DotProd",
        "GpuClustering",
        "GpuPacking",
        "BestFit",
        "FGD",
        "FGD-Reach",
    )
    assert policy_name("fgd-reach") == "FGD-Reach"
    assert isinstance(make_strategy("fgd", workload=WORKLOAD), FGD)
    assert make_strategy("Random", rng=3).name == "Random"
    for name in POLICIES:
        if name not in ("FGD", "FGD-Reach"):
            assert make_strategy(name).name == name
    with pytest.raises(ValueError, match="unknown policy"):
        make_strategy("Tetris")
    with pytest.raises(ValueError, match="target workload"):
        make_strategy("FGD")


def test_sigmoid_reference():
    # the artefact's int64(sigmoid(x) * 100) for x = 0.3 GPUs
    weight = 7
    delta = np.array([int(0.3 * weight * 1000)])
    assert frag_delta_score(delta, weight)[0] == int(100 / (1 + math.exp(-0.3)))
