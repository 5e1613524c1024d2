"""PodTopologySpread's system default constraints (defaultingType System): the vectorised
scores agree with the scalar reference, and the semantics follow upstream's
pkg/scheduler/framework/plugins/podtopologyspread (systemDefaultConstraints: hostname maxSkew 3,
zone maxSkew 5, ScheduleAnyway) with helper.DefaultSelector."""

from __future__ import annotations

import random
from dataclasses import replace

from placement_random import random_cluster, random_pod
from test_placement_agreement import assert_same_scores

from gpupact.cluster.state import ClusterState
from gpupact.engine.placement import Scheduler
from gpupact.engine.placement.plugins import pod_topology_spread as ptsv
from gpupact.kube.objects import OwnerRef, parse_node, parse_pod
from gpupact.kube.scheduling_objects import SchedulingObjects

OBJECTS = [
    {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
     "spec": {"selector": {"app": "web"}}},
    {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "headless"}, "spec": {}},
    {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "db-1"},
     "spec": {"selector": {"matchExpressions": [
         {"key": "app", "operator": "In", "values": ["db", "train"]}]}}},
    {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "train"},
     "spec": {"selector": {"matchLabels": {"app": "train"}}}},
    {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "rc"},
     "spec": {"selector": {"app": "train"}}},
]  # fmt: skip
OWNERS = (
    None,
    OwnerRef("apps/v1", "ReplicaSet", "db-1"),
    OwnerRef("apps/v1", "StatefulSet", "train"),
    OwnerRef("v1", "ReplicationController", "rc"),
    OwnerRef("apps/v1", "ReplicaSet", "missing"),
    OwnerRef("extensions/v1beta1", "ReplicaSet", "db-1"),
)


def test_default_selector_merges_services_and_the_controller():
    """helper.DefaultSelector: selectors of matching Services (a nil selector matches no pod)
    merged, plus the controller's: an RC's map, an apps/v1 RS/StatefulSet's requirements;
    another API version or an unknown owner adds nothing; empty means no default."""
    objects = SchedulingObjects.of(OBJECTS)
    web = parse_pod({"metadata": {"name": "w", "labels": {"app": "web"}}, "spec": {}})
    assert str(objects.default_selector(web)) == "app=web"
    db = replace(web, labels={"app": "db"}, controller=OWNERS[1])
    assert str(objects.default_selector(db)) == "app in (db,train)"
    assert objects.default_selector(replace(db, controller=OWNERS[5])) is None
    assert objects.default_selector(replace(db, controller=OWNERS[4])) is None
    other_ns = replace(web, namespace="team-a")
    assert objects.default_selector(other_ns) is None
    constraints, require_all = ptsv.scoring_constraints(web, objects)
    assert [(c.topology_key, c.max_skew) for c in constraints] == [
        ("kubernetes.io/hostname", 3),
        ("topology.kubernetes.io/zone", 5),
    ]
    assert require_all is False
    own = parse_pod(
        {
            "metadata": {"name": "x", "labels": {"app": "web"}},
            "spec": {
                "topologySpreadConstraints": [
                    {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                     "labelSelector": {"matchLabels": {"app": "web"}}}
                ]
            },
        }
    )  # fmt: skip
    assert ptsv.scoring_constraints(own, objects) == ((), True)


def _node(name, zone=None):
    labels = {"kubernetes.io/hostname": name}
    if zone:
        labels["topology.kubernetes.io/zone"] = zone
    return parse_node(
        {"metadata": {"name": name, "labels": labels},
         "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "110"}}}
    )  # fmt: skip


def _web(name, node=""):
    spec = {"containers": [{"name": "c"}]}
    if node:
        spec["nodeName"] = node
    status = {"phase": "Running"} if node else {}
    return parse_pod(
        {"metadata": {"name": name, "labels": {"app": "web"}}, "spec": spec, "status": status}
    )


def test_service_pods_spread_across_zones_and_a_zoneless_node_is_still_scored():
    """With system defaults requireAllTopologies is false: the zoneless node is scored by its
    hostname only (upstream Score adds a constraint only for keys the node has)."""
    nodes = [_node("a1", "z1"), _node("a2", "z1"), _node("b1", "z2"), _node("bare")]
    pods = [_web("w0", "a1"), _web("w1", "a2")]
    state = ClusterState.from_nodes(nodes, pods, objects=SchedulingObjects.of(OBJECTS))
    scheduler = Scheduler(state, seed=1)
    parts = scheduler.scores(_web("new"))
    names = [state.node_names[i] for i in parts["nodes"]]
    spread = dict(zip(names, parts["PodTopologySpread"], strict=True))
    assert spread["b1"] > spread["a1"] and spread["bare"] > 0
    without = Scheduler(ClusterState.from_nodes(nodes, pods), seed=1).scores(_web("new"))
    assert not without["PodTopologySpread"].any()


def test_system_default_scores_agree_with_the_scalar_reference():
    for seed in range(10):
        rng = random.Random(900 + seed)
        state = random_cluster(seed)
        state.objects = SchedulingObjects.of(OBJECTS)
        scheduler = Scheduler(state)
        for k in range(12):
            pod = random_pod(rng, f"in-{k}", state.num_nodes)
            pod = replace(pod, controller=rng.choice(OWNERS))
            assert_same_scores(scheduler, state, pod)
