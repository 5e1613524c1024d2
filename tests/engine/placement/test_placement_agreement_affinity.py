"""InterPodAffinity's incremental counts (PreFilter and PreScore states fed by binds and
unbinds, with per-key count columns) agree with the scalar chain and scalar scores node for
node, through long runs where most pods declare pod affinity or anti-affinity."""

from __future__ import annotations

import random

import numpy as np
import pytest
from placement_random import random_cluster, random_node
from test_placement_agreement import assert_same_filter, assert_same_scores

from gpupact.engine.placement import Scheduler
from gpupact.engine.placement.plugins import inter_pod_affinity as ipa
from gpupact.kube.objects import parse_pod

APPS = ("web", "db", "train")
KEYS = ("kubernetes.io/hostname", "topology.kubernetes.io/zone", "nodepool")


def _term(rng: random.Random) -> dict:
    term = {
        "topologyKey": rng.choice(KEYS),
        "labelSelector": {"matchLabels": {"app": rng.choice(APPS)}},
    }
    if rng.random() < 0.2:
        term["namespaces"] = ["default", "team-a"]
    return term


def affinity_pod(rng: random.Random, name: str):
    """A pod whose affinity block mixes required and preferred, affinity and anti-affinity."""
    affinity: dict = {}
    for kind in ("podAffinity", "podAntiAffinity"):
        block: dict = {}
        if rng.random() < 0.4:
            block["requiredDuringSchedulingIgnoredDuringExecution"] = [_term(rng)]
        if rng.random() < 0.4:
            block["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": rng.randint(1, 100), "podAffinityTerm": _term(rng)}
            ]
        if block:
            affinity[kind] = block
    spec: dict = {
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}],
        "tolerations": [{"operator": "Exists"}],
    }
    if affinity:
        spec["affinity"] = affinity
    namespace = rng.choice(("default", "default", "team-a"))
    meta = {"name": name, "namespace": namespace, "labels": {"app": rng.choice(APPS)}}
    return parse_pod({"metadata": meta, "spec": spec})


@pytest.mark.parametrize("seed", range(10))
def test_incremental_affinity_counts_agree_with_the_scalar_chain(seed):
    rng = random.Random(500 + seed)
    state = random_cluster(seed, num_nodes=20, num_pods=5)
    scheduler = Scheduler(state, seed=seed)
    shapes = [affinity_pod(rng, f"shape-{i}") for i in range(5)]
    for step in range(120):
        template = rng.choice(shapes)
        pod = type(template)(**{**_fields(template), "name": f"p{step}"})
        action = rng.random()
        if action < 0.7:
            scheduler.schedule_one(pod)
        elif action < 0.95 and state.num_pods:
            state.unbind(rng.choice(list(state.bindings())))
        else:
            state.add_node(random_node(rng, 1000 + step))
        if step % 8 == 0:
            probe = type(template)(**{**_fields(template), "name": f"probe{step}"})
            assert_same_filter(scheduler, state, probe)
            assert_same_scores(scheduler, state, probe)


def test_count_columns_equal_the_pair_counts():
    """PairCounts' per-key columns hold exactly the (key, value) counts, 0 where a node lacks
    the key, and a copy is independent."""
    rng = random.Random(3)
    state = random_cluster(3, num_nodes=16, num_pods=0)
    counts = ipa.PairCounts(state.labels)
    plain = ipa.PairCounts()
    key = "topology.kubernetes.io/zone"
    values = state.labels.values[key]
    for _ in range(40):
        value, delta = rng.choice(values), rng.choice((1, 1, -1))
        counts.add(key, value, delta)
        plain.add(key, value, delta)
    column = counts.column(key, state.labels)
    want = np.array(
        [counts.get((key, n.labels[key]), 0) if key in n.labels else 0 for n in state.nodes]
    )
    assert np.array_equal(column, want)
    assert np.array_equal(plain.column(key, state.labels), want)
    assert counts == plain
    copy = counts.copy()
    counts.add(key, values[0], 5)
    assert copy != counts


def _fields(pod):
    return {name: getattr(pod, name) for name in pod.__dataclass_fields__}


def test_spread_count_columns_follow_the_prefilter_state():
    """PodTopologySpread's count columns, fed by the PreFilter state's watcher through
    add_pod/remove_pod, equal columns built afresh from the state; copies are not watched."""
    from gpupact.engine.placement.plugins import pod_topology_spread as ptsv
    from gpupact.kube import topology_spread as pts

    rng = random.Random(11)
    state = random_cluster(4, num_nodes=18, num_pods=0)
    incoming = parse_pod(
        {
            "metadata": {"name": "in", "labels": {"app": "web"}},
            "spec": {
                "topologySpreadConstraints": [
                    {
                        "maxSkew": 1,
                        "topologyKey": key,
                        "whenUnsatisfiable": "DoNotSchedule",
                        "labelSelector": {"matchLabels": {"app": "web"}},
                    }
                    for key in ("kubernetes.io/hostname", "topology.kubernetes.io/zone")
                ]
            },
        }
    )
    prefilter = pts.prefilter(incoming, state.nodes, [])
    columns = ptsv.CountColumns(prefilter, state.labels)
    copy = prefilter.copy()
    placed = []
    for i in range(60):
        node = state.nodes[rng.randrange(state.num_nodes)]
        web = parse_pod({"metadata": {"name": f"w{i}", "labels": {"app": "web"}}, "spec": {}})
        if placed and rng.random() < 0.3:
            old, where = placed.pop(rng.randrange(len(placed)))
            prefilter.remove_pod(old, where)
        else:
            prefilter.add_pod(web, node)
            placed.append((web, node))
    fresh = ptsv.CountColumns(prefilter, state.labels, watch=False)
    for ours, theirs in zip(columns.tables, fresh.tables, strict=True):
        assert np.array_equal(ours, theirs)
    assert any(t.any() for t in columns.tables)
    assert not any(t.any() for t in ptsv.CountColumns(copy, state.labels, watch=False).tables)
