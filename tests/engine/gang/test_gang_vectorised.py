"""The sessions' every-node-at-once path decides exactly as the one-node-at-a-time explaining
path (scalar framework filters, scalar Resource comparisons and scores), on seeded random
clusters: taints, cordons, zones, running and releasing pods, gangs with node selectors,
pod (anti-)affinity and topology spread, several queues."""

from __future__ import annotations

import random
from typing import Any

import pytest

from gpupact.engine.gang import parse_podgroup
from gpupact.engine.kai import KaiSession, parse_kai_podgroup, parse_kai_queue
from gpupact.engine.volcano import PluginOption, Session
from gpupact.engine.volcano.model import parse_queue
from gpupact.kube.objects import parse_node, parse_pod

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
TIERS = [
    [
        PluginOption("priority", frozenset({"jobOrder", "taskOrder", "preemptable"})),
        PluginOption("gang", frozenset({"jobOrder", "jobReady", "jobPipelined", "jobStarving"})),
        PluginOption("conformance", frozenset({"preemptable", "reclaimable"})),
    ],
    [
        PluginOption("proportion", frozenset({"queueOrder", "reclaimable", "allocatable"})),
        PluginOption("predicates", frozenset({"predicate"})),
        PluginOption("nodeorder", frozenset({"nodeOrder"})),
    ],
]


def _node(rng: random.Random, i: int) -> dict:
    name = f"n{i:02d}"
    spec: dict[str, Any] = {}
    if rng.random() < 0.1:
        spec["unschedulable"] = True
    if rng.random() < 0.2:
        spec["taints"] = [{"key": "pool", "value": "x", "effect": "NoSchedule"}]
    labels = {HOSTNAME: name, ZONE: rng.choice("abc"), "tier": rng.choice(("gold", "silver"))}
    alloc = {
        "cpu": str(rng.choice((4, 8, 16))),
        "memory": f"{rng.choice((16, 32, 64))}Gi",
        "pods": str(rng.choice((3, 5, 110))),
        "nvidia.com/gpu": str(rng.choice((0, 4, 8))),
    }
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
        "status": {"allocatable": alloc},
    }


def _affinity(rng: random.Random, app: str) -> dict | None:
    roll = rng.random()
    term = {
        "labelSelector": {"matchLabels": {"app": app}},
        "topologyKey": rng.choice((HOSTNAME, ZONE)),
    }
    if roll < 0.3:
        return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    if roll < 0.45:
        return {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    return None


def _pod(rng: random.Random, name: str, group_key: str, job: str, app: str, **kw: Any) -> dict:
    requests = {"cpu": str(rng.choice((1, 2, 3))), "memory": f"{rng.choice((1, 4, 8))}Gi"}
    if rng.random() < 0.5:
        requests["nvidia.com/gpu"] = str(rng.choice((1, 2)))
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": requests}}]}
    meta: dict[str, Any] = {
        "name": name,
        "namespace": "ns",
        "uid": f"ns-{name}",
        "labels": {"app": app},
        "annotations": {group_key: job},
    }
    phase = "Pending"
    if kw.get("node"):
        spec["nodeName"] = kw["node"]
        phase = "Running"
        if rng.random() < 0.2:
            meta["deletionTimestamp"] = "1970-01-01T00:00:00Z"
    if rng.random() < 0.2:
        spec["tolerations"] = [{"key": "pool", "operator": "Exists"}]
    if rng.random() < 0.2:
        spec["nodeSelector"] = {"tier": "gold"}
    affinity = _affinity(rng, app)
    if affinity:
        spec["affinity"] = affinity
    if rng.random() < 0.25:
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": rng.choice((1, 2)),
                "topologyKey": rng.choice((HOSTNAME, ZONE)),
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": app}},
            }
        ]
    if kw.get("priority") is not None:
        spec["priority"] = kw["priority"]
    if rng.random() < 0.15:
        spec["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": rng.choice((80, 81))}]
    if group_key == "pod-group-name" and rng.random() < 0.25:
        # KAI GPU sharing: a fraction of one GPU; a running one sits on a GPU group
        requests.pop("nvidia.com/gpu", None)
        meta["annotations"]["gpu-fraction"] = rng.choice(("0.25", "0.5", "0.7"))
        if kw.get("node"):
            meta["labels"]["runai-gpu-group"] = rng.choice("01")
    return {"metadata": meta, "spec": spec, "status": {"phase": phase}}


def cluster(seed: int, group_key: str) -> tuple[list[dict], list[dict], list[tuple[str, int, str]]]:
    rng = random.Random(seed)
    nodes = [_node(rng, i) for i in range(rng.randrange(4, 16))]
    pods: list[dict] = []
    jobs: list[tuple[str, int, str]] = []  # (name, minMember, queue)
    for j in range(rng.randrange(2, 6)):
        job = f"job{j}"
        app = rng.choice(("train", "serve", "etl"))
        size = rng.randrange(1, 6)
        running = rng.random() < 0.3
        priority = rng.choice((1, 10, 100))
        for t in range(size):
            where = rng.choice(nodes)["metadata"]["name"] if running else ""
            pods.append(_pod(rng, f"{job}-{t}", group_key, job, app, node=where, priority=priority))
        jobs.append((job, rng.randrange(1, size + 1), rng.choice(("q1", "q2"))))
    return nodes, pods, jobs


def run_volcano(seed: int, vectorised: bool, actions: list[str], tiers=TIERS):
    nodes, pods, jobs = cluster(seed, "scheduling.k8s.io/group-name")
    groups = [
        parse_podgroup(
            {
                "metadata": {"name": job, "namespace": "ns"},
                "spec": {"minMember": size, "queue": queue},
                "status": {"phase": "Inqueue"},
            }
        )
        for job, size, queue in jobs
    ]
    queues = [parse_queue({"metadata": {"name": q}, "spec": {"weight": 1}}) for q in ("q1", "q2")]
    ssn = Session(
        nodes=[parse_node(n) for n in nodes],
        pods=[parse_pod(p) for p in pods],
        podgroups=groups,
        queues=queues,
        tiers=tiers,
        enabled_actions=actions,
        vectorised=vectorised,
    )
    result = ssn.run(actions)
    errors = {uid: dict(e) for job in ssn.jobs.values() for uid, e in job.nodes_fit_errors.items()}
    return result, errors


def run_kai(seed: int, vectorised: bool, actions: list[str]):
    nodes, pods, jobs = cluster(seed, "pod-group-name")
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    queues = [
        parse_kai_queue(
            {
                "metadata": {"name": q},
                "spec": {"resources": {"gpu": unlimited, "cpu": unlimited, "memory": unlimited}},
            }
        )
        for q in ("q1", "q2")
    ]
    groups = [
        parse_kai_podgroup(
            {"metadata": {"name": job, "namespace": "ns"}, "spec": {"minMember": size, "queue": q}},
            {},
            creation=float(i),
        )
        for i, (job, size, q) in enumerate(jobs)
    ]
    ssn = KaiSession(
        nodes=[parse_node(n) for n in nodes],
        pods=[parse_pod(p) for p in pods],
        podgroups=groups,
        queues=queues,
        vectorised=vectorised,
    )
    return ssn.run(actions)


SEEDS = range(40)


@pytest.mark.parametrize("seed", SEEDS)
def test_volcano_vectorised_decisions_equal_the_scalar_path(seed):
    actions = ["allocate", "backfill", "preempt"]
    fast, fast_errors = run_volcano(seed, True, actions)
    slow, slow_errors = run_volcano(seed, False, actions)
    assert fast == slow
    assert fast_errors == slow_errors


MOST_ALLOCATED = [
    TIERS[0],
    [
        *TIERS[1][:2],
        PluginOption(
            "nodeorder",
            frozenset({"nodeOrder"}),
            {"mostrequested.weight": 2, "leastrequested.weight": 0},
        ),
    ],
]


@pytest.mark.parametrize("seed", range(20))
def test_volcano_most_allocated_order_equal_on_both_paths(seed):
    fast, _ = run_volcano(seed, True, ["allocate"], MOST_ALLOCATED)
    slow, _ = run_volcano(seed, False, ["allocate"], MOST_ALLOCATED)
    assert fast == slow


@pytest.mark.parametrize("seed", SEEDS)
def test_kai_vectorised_decisions_equal_the_scalar_path(seed):
    actions = ["allocate", "consolidation", "preempt"]
    assert run_kai(seed, True, actions) == run_kai(seed, False, actions)


def test_random_clusters_exercise_placements_and_refusals():
    """The comparison above is not vacuous: the seeds bind pods and refuse pods for
    pod-affinity / spread reasons on some nodes."""
    binds, affinity_refusals = 0, 0
    for seed in SEEDS:
        result, errors = run_volcano(seed, True, ["allocate"])
        binds += len(result.binds)
        for per_node in errors.values():
            affinity_refusals += sum(
                1
                for s in per_node.values()
                if s.plugin in ("InterPodAffinity", "PodTopologySpread")
                or any("affinity" in r or "spread" in r for r in s.reasons)
            )
    assert binds > 20
    assert affinity_refusals > 0


def test_random_kai_clusters_place_shared_gpu_pods():
    placed = 0
    for seed in SEEDS:
        result = run_kai(seed, True, ["allocate"])
        placed += sum(1 for key in result.gpu_groups if key in result.binds)
    assert placed > 0
