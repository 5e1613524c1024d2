"""VolumeBinding (bound PV node affinity) and VolumeZone in the vectorised scheduler and the
scalar chain; semantics from upstream pkg/scheduler/framework/plugins/volumebinding and
volumezone (see plugins/volumes.py)."""

from __future__ import annotations

import pytest

from gpupact.cluster.state import ClusterState
from gpupact.engine.placement import ClusterView, FitResult, Placement, Scheduler, explain_fit
from gpupact.kube.objects import parse_node, parse_pod
from gpupact.kube.scheduling_objects import SchedulingObjects

ZONE = "topology.kubernetes.io/zone"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"


def node(name, labels):
    return parse_node(
        {
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
        }
    )


NODES = [
    node("a", {ZONE: "z1", "disk": "ssd"}),
    node("b", {ZONE: "z2", "disk": "ssd"}),
    node("c", {ZONE: "z1"}),
    node("plain", {}),
]


def claim(name, volume="", bound=True, deleting=False):
    meta = {"name": name, "namespace": "default"}
    if bound and volume:
        meta["annotations"] = {"pv.kubernetes.io/bind-completed": "yes"}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": meta,
        "spec": {"volumeName": volume},
    }


def volume(name, labels=None, disk=None):
    spec = {}
    if disk:
        term = {"matchExpressions": [{"key": "disk", "operator": "In", "values": [disk]}]}
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [term]}}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": spec,
    }


def pod_with(*claims):
    volumes = [{"name": c, "persistentVolumeClaim": {"claimName": c}} for c in claims]
    return parse_pod(
        {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}], "volumes": volumes}}
    )


def both(objects, pod):
    """The vectorised explain and the scalar chain, checked equal."""
    state = ClusterState.from_nodes(NODES, objects=SchedulingObjects.of(objects))
    vector = Scheduler(state).explain(pod)
    scalar = explain_fit(pod, ClusterView.from_state(state))
    rows = [(v.node, v.status, v.detail) for v in vector.verdicts]
    assert rows == [(v.node, v.status, v.detail) for v in scalar.verdicts]
    assert vector.message == scalar.message
    return vector


def test_bound_pv_node_affinity_and_zone():
    """CheckNodeAffinity on the PV's required node selector, then VolumeZone on its zone
    label; a node without any zone/region label passes VolumeZone."""
    objects = [claim("data", "pv-1"), volume("pv-1", {ZONE: "z1"}, disk="ssd")]
    result = both(objects, pod_with("data"))
    got = {v.node: (v.status.plugin, v.status.message) for v in result.verdicts}
    assert got["a"] == ("", "")
    assert got["b"] == ("VolumeZone", "node(s) had no available volume zone")
    assert got["c"] == ("VolumeBinding", "node(s) had volume node affinity conflict")
    assert got["plain"] == ("VolumeBinding", "node(s) had volume node affinity conflict")
    no_affinity = [claim("data", "pv-1"), volume("pv-1", {BETA_ZONE: "z2__z3"})]
    result = both(no_affinity, pod_with("data"))
    # beta label on the PV matched against the node's GA label; "__" separates zones
    assert [v.node for v in result.verdicts if v.fits] == ["b", "plain"]


@pytest.mark.parametrize(
    ("objects", "claims", "message"),
    [
        ([], ("missing",), 'persistentvolumeclaim "missing" not found'),
        ([claim("old", "pv", deleting=True)], ("old",), 'persistentvolumeclaim "old" is being deleted'),  # noqa: E501
        ([claim("pre", "pv", bound=False)], ("pre",), "pod has unbound immediate PersistentVolumeClaims"),  # noqa: E501
        ([claim("data", "gone")], ("data",), 'persistentvolume "gone" not found'),
        (
            [claim("pre", "pv", bound=False)],
            ("pre", "missing"),
            'persistentvolumeclaim "missing" not found',
        ),
    ],
)  # fmt: skip
def test_prefilter_rejections_name_only_the_prefilter_message(objects, claims, message):
    """A PreFilter rejection: every node refused, FitError `0/N nodes are available: <msg>.`"""
    result = both(objects, pod_with(*claims))
    assert result.message == f"0/4 nodes are available: {message}."
    assert all(v.status.code.value == "UnschedulableAndUnresolvable" for v in result.verdicts)


def test_unbound_claims_without_a_volume_name_are_not_checked():
    state = ClusterState.from_nodes(NODES, objects=SchedulingObjects.of([claim("new")]))
    assert isinstance(Scheduler(state).schedule_one(pod_with("new")), Placement)


def test_schedule_one_refuses_with_the_fit_error():
    objects = SchedulingObjects.of([claim("data", "pv-1"), volume("pv-1", disk="nvme")])
    state = ClusterState.from_nodes(NODES, objects=objects)
    result = Scheduler(state).schedule_one(pod_with("data"))
    assert isinstance(result, FitResult)
    assert result.message == "0/4 nodes are available: 4 node(s) had volume node affinity conflict."
