"""The vectorised score formulas give the scalar gpupact.kube integers on random inputs."""

from __future__ import annotations

import random

import numpy as np
import pytest

from gpupact.engine.placement.plugins import node_filters as nf
from gpupact.engine.placement.plugins import node_resources_fit as nrf
from gpupact.engine.placement.plugins import pod_topology_spread as ptsv
from gpupact.kube import resources_fit as rf
from gpupact.kube.taints import Taint, Toleration, taint_toleration_scores

BIG = 2**62


def random_columns(rng: random.Random, resources: int, nodes: int, big: bool = False):
    req = np.zeros((resources, nodes), dtype=np.int64)
    alloc = np.zeros((resources, nodes), dtype=np.int64)
    for i in range(resources):
        for j in range(nodes):
            kind = rng.random()
            if kind < 0.1:
                cap = 0
            elif big and kind < 0.3:
                cap = rng.randrange(1, BIG)
            else:
                cap = rng.choice((1, 3, 7, 1000, 4000, 96_000, 2**36, 10**12))
            used = rng.randrange(0, 2 * cap + 2) if cap else rng.randrange(0, 5)
            req[i, j], alloc[i, j] = used, cap
    return req, alloc


def scalar(fn, req, alloc, *args):
    return [fn(req[:, j].tolist(), alloc[:, j].tolist(), *args) for j in range(req.shape[1])]


@pytest.mark.parametrize("seed", range(30))
@pytest.mark.parametrize("big", [False, True])
def test_least_and_most_allocated(seed, big):
    rng = random.Random(seed)
    m = rng.randint(1, 4)
    req, alloc = random_columns(rng, m, 64, big)
    weights = [rng.randint(1, 100) for _ in range(m)]
    assert nrf.score_least_allocated(req, alloc, weights).tolist() == scalar(
        rf.score_least_allocated, req, alloc, weights
    )
    assert nrf.score_most_allocated(req, alloc, weights).tolist() == scalar(
        rf.score_most_allocated, req, alloc, weights
    )


@pytest.mark.parametrize("seed", range(30))
def test_requested_to_capacity_ratio(seed):
    rng = random.Random(seed)
    m = rng.randint(1, 3)
    req, alloc = random_columns(rng, m, 64)
    weights = [rng.randint(1, 100) for _ in range(m)]
    utilizations = sorted(rng.sample(range(0, 101), rng.randint(1, 4)))
    shape = [rf.ShapePoint(u, rng.randint(0, 10)) for u in utilizations]
    points = rf.scale_shape(shape)
    function = rf.build_broken_linear_function(points)
    got = nrf.score_requested_to_capacity_ratio(req, alloc, weights, points)
    assert got.tolist() == scalar(
        rf.score_requested_to_capacity_ratio, req, alloc, weights, function
    )
    p = np.arange(-5, 110, dtype=np.int64)
    assert nrf.broken_linear(points, p).tolist() == [function(int(x)) for x in p]


@pytest.mark.parametrize("seed", range(30))
def test_balanced_allocation(seed):
    rng = random.Random(seed)
    req, alloc = random_columns(rng, rng.randint(1, 5), 64)
    assert nrf.score_balanced_allocation(req, alloc).tolist() == scalar(
        rf.score_balanced_allocation, req, alloc
    )


def test_go_division_and_rounding():
    rng = random.Random(1)
    nums = [rng.randrange(-(10**15), 10**15) for _ in range(500)] + [-7, 7, -1, 0]
    dens = [rng.choice((1, 2, 3, -3, 7, -100, 10**9)) for _ in nums]
    got = nrf.go_div(np.array(nums, dtype=np.int64), np.array(dens, dtype=np.int64))
    assert got.tolist() == [rf.go_div(a, b) for a, b in zip(nums, dens, strict=True)]
    values = [rng.uniform(-1000, 1000) for _ in range(500)] + [0.5, -0.5, 1.5, -2.5, 2.4999]
    assert nrf.go_round(np.array(values)).tolist() == [rf.go_round(v) for v in values]
    assert ptsv.go_round(np.array(values)).tolist() == [rf.go_round(v) for v in values]


@pytest.mark.parametrize("seed", range(20))
def test_taint_toleration_normalisation(seed):
    rng = random.Random(seed)
    keys = ("a", "b", "c")
    nodes = []
    for j in range(30):
        taints = tuple(
            Taint(k, rng.choice(("", "x")), "PreferNoSchedule") for k in keys if rng.random() < 0.4
        )
        nodes.append((f"n{j}", taints))
    tolerations = [Toleration(k, "Exists") for k in keys if rng.random() < 0.5]
    expected = taint_toleration_scores(nodes, tolerations)
    raw = np.array(
        [
            sum(1 for t in taints if all(tol.key != t.key for tol in tolerations))
            for _, taints in nodes
        ],
        dtype=np.int64,
    )
    assert nf.normalize_reversed(raw).tolist() == [expected[name] for name, _ in nodes]


def test_default_normalize():
    assert nf.normalize(np.array([0, 0])).tolist() == [0, 0]
    assert nf.normalize(np.array([10, 5, 0, 3])).tolist() == [100, 50, 0, 30]
    assert nf.normalize_reversed(np.array([0, 0])).tolist() == [100, 100]
