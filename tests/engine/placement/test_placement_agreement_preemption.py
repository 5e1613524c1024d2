"""Preemption's fit check (FilterChainFit: the chain with removed pods taken out of each
plugin's state) agrees with the scalar chain run on the cluster where those pods were really
unbound — resources, GPU devices of every sharing mode, topology spread and inter-pod
(anti-)affinity — on seeded random clusters."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from placement_random import _pod_affinity_term as pod_term
from placement_random import random_cluster, random_node, random_pod, random_pod_obj

from gpupact.cluster.state import ClusterState
from gpupact.engine.placement import ClusterView, Scheduler, explain_fit
from gpupact.engine.preemption import FilterChainFit
from gpupact.kube.objects import Pod, parse_pod


@pytest.mark.parametrize("seed", range(16))
def test_fit_check_equals_the_chain_after_unbinding(seed):
    state = random_cluster(seed, num_nodes=8, num_pods=40)
    fits = FilterChainFit.from_state(state)
    rng = random.Random(30_000 + seed)
    bindings = list(state.bindings())
    for k in range(25):
        pod = random_pod(rng, f"in-{k}", state.num_nodes)
        row = rng.randrange(state.num_nodes)
        on_node = list(state.pods_on(row))
        removed = rng.sample(on_node, rng.randint(0, len(on_node)))
        elsewhere = [b for b in bindings if b.node != row]
        removed += rng.sample(elsewhere, min(len(elsewhere), rng.randint(0, 2)))
        after = state.copy()
        for binding in removed:
            after.unbind_pod(binding.key)
        node = state.nodes[row]
        want = explain_fit(pod, ClusterView.from_state(after), [node]).verdicts[0].status
        # the bindings' own pods (often without spec.nodeName): recognised by key
        got = fits(pod, node, [b.pod for b in removed])
        assert got == want, (seed, k, pod.key, node.name, sorted(b.key for b in removed))


# --- dense clusters where only the dynamic filters decide ---------------------------------------

STATIC_FIELDS = ("nodeSelector", "tolerations", "nodeName")


def _dynamic_pod(rng: random.Random, name: str, num_nodes: int) -> Pod:
    """A random pod stripped of node selection and tolerations, so that resources, devices,
    spread and inter-pod affinity decide; one in two gets a pod (anti-)affinity term."""
    obj = random_pod_obj(rng, name, num_nodes)
    spec = obj["spec"]
    for key in STATIC_FIELDS:
        spec.pop(key, None)
    affinity = spec.get("affinity", {})
    affinity.pop("nodeAffinity", None)
    if not affinity and rng.random() < 0.5:
        kind = rng.choice(("podAffinity", "podAntiAffinity"))
        affinity[kind] = {"requiredDuringSchedulingIgnoredDuringExecution": [pod_term(rng)]}
    spec["affinity"] = affinity
    return parse_pod(obj)


def _dense_cluster(seed: int) -> ClusterState:
    rng = random.Random(seed)
    nodes = [replace(random_node(rng, i), taints=(), unschedulable=False) for i in range(6)]
    state = ClusterState.from_nodes(nodes)
    scheduler = Scheduler(state, seed=seed)
    for j in range(60):
        scheduler.schedule_one(_dynamic_pod(rng, f"bound-{j}", len(nodes)))
    return state


@pytest.mark.parametrize("seed", range(24))
def test_fit_check_equals_the_chain_on_dense_clusters(seed):
    state = _dense_cluster(seed)
    fits = FilterChainFit.from_state(state)
    rng = random.Random(40_000 + seed)
    bindings = list(state.bindings())
    for k in range(25):
        pod = _dynamic_pod(rng, f"in-{k}", state.num_nodes)
        row = rng.randrange(state.num_nodes)
        on_node = list(state.pods_on(row))
        # mostly large removal sets: a dry run starts with every lower-priority pod gone
        removed = rng.sample(on_node, rng.randint(len(on_node) // 2, len(on_node)))
        elsewhere = [b for b in bindings if b.node != row]
        removed += rng.sample(elsewhere, min(len(elsewhere), rng.randint(0, 3)))
        after = state.copy()
        for binding in removed:
            after.unbind_pod(binding.key)
        node = state.nodes[row]
        want = explain_fit(pod, ClusterView.from_state(after), [node]).verdicts[0].status
        got = fits(pod, node, [b.pod for b in removed])
        assert got == want, (seed, k, pod.key, node.name, sorted(b.key for b in removed))
