"""The vectorised engine agrees with the scalar filter chain (framework.explain_fit) and the
scalar scores (framework.score_nodes) node for node, on seeded random clusters and pods,
including after long runs of binds, unbinds and node changes served from incremental caches."""

from __future__ import annotations

import random

import numpy as np
import pytest
from placement_random import random_cluster, random_node, random_pod

from gpupact.engine.placement import ClusterView, Scheduler, explain_fit
from gpupact.engine.placement.framework import aggregate_reasons, score_nodes
from gpupact.kube.taints import Taint

SEEDS = range(24)


def verdict_rows(result):
    return [(v.node, v.status, v.detail, v.insufficient) for v in result.verdicts]


def assert_same_filter(scheduler, state, pod):
    vector = scheduler.explain(pod)
    scalar = explain_fit(pod, ClusterView.from_state(state))
    assert verdict_rows(vector) == verdict_rows(scalar), pod.key
    assert vector.message == scalar.message
    feasible = {state.node_names[i] for i in np.flatnonzero(scheduler.feasible_mask(pod))}
    assert feasible == set(scalar.feasible)
    return scalar


def assert_same_scores(scheduler, state, pod):
    parts = scheduler.scores(pod)
    nodes = [state.nodes[i] for i in parts["nodes"]]
    reference = score_nodes(pod, ClusterView.from_state(state), nodes)
    for j, row in enumerate(parts["nodes"]):
        ref = reference[state.node_names[row]]
        got = {
            "local": int(parts["local"][j]),
            "TaintToleration": int(parts["TaintToleration"][j]),
            "NodeAffinity": int(parts["NodeAffinity"][j]),
            "PodTopologySpread": int(parts["PodTopologySpread"][j]),
            "InterPodAffinity": int(parts["InterPodAffinity"][j]),
            "total": int(parts["total"][j]),
        }
        want = {
            "local": ref["NodeResourcesFit"] + ref["NodeResourcesBalancedAllocation"],
            "TaintToleration": ref["TaintToleration"],
            "NodeAffinity": ref["NodeAffinity"],
            "PodTopologySpread": ref["PodTopologySpread"],
            "InterPodAffinity": ref["InterPodAffinity"],
            "total": ref["total"],
        }
        assert got == want, (pod.key, state.node_names[row])


@pytest.mark.parametrize("seed", SEEDS)
def test_filter_agrees_with_the_scalar_chain(seed):
    state = random_cluster(seed)
    scheduler = Scheduler(state)
    rng = random.Random(10_000 + seed)
    for k in range(20):
        assert_same_filter(scheduler, state, random_pod(rng, f"in-{k}", state.num_nodes))


@pytest.mark.parametrize("seed", SEEDS)
def test_scores_agree_with_the_scalar_plugins(seed):
    state = random_cluster(seed)
    scheduler = Scheduler(state)
    rng = random.Random(20_000 + seed)
    for k in range(12):
        assert_same_scores(scheduler, state, random_pod(rng, f"in-{k}", state.num_nodes))


@pytest.mark.parametrize("seed", range(6))
def test_fit_error_reasons_match_the_verdicts(seed):
    state = random_cluster(seed)
    scheduler = Scheduler(state)
    rng = random.Random(30_000 + seed)
    refusals = 0
    for k in range(30):
        pod = random_pod(rng, f"in-{k}", state.num_nodes)
        result = scheduler.schedule_one(pod, bind=False)
        if hasattr(result, "node"):
            continue
        refusals += 1
        scalar = explain_fit(pod, ClusterView.from_state(state))
        assert result.message == scalar.message
        counted = {(r.plugin, r.code, r.message): r.detail for r in result.reasons}
        assert all(type(r.code) is str for r in result.reasons)  # a plain string, as the scalar
        expected = {
            (r.plugin, r.code, r.message): r.detail
            for r in aggregate_reasons(pod.key, scalar.verdicts)
        }
        assert counted == expected
        # the lazily built verdicts are the scalar ones
        assert verdict_rows(result) == verdict_rows(scalar)
    assert refusals


@pytest.mark.parametrize("seed", range(8))
def test_incremental_caches_stay_exact(seed):
    """One long-lived scheduler serves pods of recurring shapes through binds, unbinds,
    cordons, taint changes and new nodes; every answer equals a fresh computation."""
    rng = random.Random(seed)
    state = random_cluster(seed, num_nodes=24, num_pods=10)
    scheduler = Scheduler(state, seed=seed)
    shapes = [random_pod(rng, f"shape-{i}", state.num_nodes) for i in range(6)]
    for step in range(160):
        action = rng.random()
        template = rng.choice(shapes)
        pod = type(template)(**{**_fields(template), "name": f"p{step}"})
        if action < 0.6:
            scheduler.schedule_one(pod)
        elif action < 0.85 and state.num_pods:
            bindings = list(state.bindings())
            state.unbind(rng.choice(bindings))
        elif action < 0.9:
            row = rng.randrange(state.num_nodes)
            if state.active[row]:
                state.set_unschedulable(row, not state.nodes[row].unschedulable)
        elif action < 0.95:
            row = rng.randrange(state.num_nodes)
            if state.active[row]:
                state.set_taints(row, [Taint("workload", rng.choice(("a", "b")), "NoSchedule")])
        else:
            state.add_node(random_node(rng, 1000 + step))
        if step % 10 == 0:
            probe = type(template)(**{**_fields(template), "name": f"probe{step}"})
            assert_same_filter(scheduler, state, probe)
            fresh = Scheduler(state)
            ours, theirs = scheduler.scores(probe), fresh.scores(probe)
            for key in ours:
                assert np.array_equal(ours[key], theirs[key]), key


def _fields(pod):
    return {name: getattr(pod, name) for name in pod.__dataclass_fields__}


def test_state_built_from_nodes_and_pods_matches_the_view():
    """ClusterState.from_nodes and ClusterView see the same snapshot the same way."""
    rng = random.Random(7)
    nodes = [random_node(rng, i) for i in range(20)]
    state = random_cluster(7, num_nodes=20, num_pods=30)
    pods = []
    for b in state.bindings():
        pod = b.pod
        pods.append(type(pod)(**{**_fields(pod), "node_name": state.node_names[b.node]}))
    view = ClusterView(nodes, pods)
    from gpupact.cluster.state import ClusterState

    rebuilt = ClusterState.from_nodes(nodes, pods)
    scheduler = Scheduler(rebuilt)
    for k in range(15):
        pod = random_pod(rng, f"in-{k}", 20)
        assert verdict_rows(scheduler.explain(pod)) == verdict_rows(explain_fit(pod, view))
