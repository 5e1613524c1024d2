"""The scalar chain's additions: GPUDevices and InterPodAffinity (upstream filtering.go cases),
ClusterView.from_state, the lazy FitResult and reason aggregation."""

from __future__ import annotations

import pytest

from gpupact.cluster.state import ClusterState
from gpupact.engine.placement.framework import (
    FILTER_PLUGINS,
    ClusterView,
    FitResult,
    NodeVerdict,
    aggregate_reasons,
    explain_fit,
)
from gpupact.engine.placement.plugins import inter_pod_affinity as ipa
from gpupact.errors import FieldError
from gpupact.kube.objects import parse_node, parse_pod
from gpupact.kube.status import SUCCESS, Code, Status


def node(name, labels=None, alloc=None, annotations=None):
    allocatable = {"cpu": "8", "memory": "16Gi", "pods": "20", **(alloc or {})}
    return parse_node(
        {
            "metadata": {"name": name, "labels": labels or {}, "annotations": annotations or {}},
            "status": {"allocatable": allocatable},
        }
    )


def pod(
    name,
    *,
    labels=None,
    node_name="",
    namespace="default",
    affinity=None,
    requests=None,
    annotations=None,
):
    spec = {"containers": [{"name": "c", "resources": {"requests": requests or {}}}]}
    if node_name:
        spec["nodeName"] = node_name
    if affinity:
        spec["affinity"] = affinity
    return parse_pod(
        {
            "metadata": {
                "name": name,
                "namespace": namespace,
                "labels": labels or {},
                "annotations": annotations or {},
            },
            "spec": spec,
        }
    )


def term(key, app, **extra):
    return {"topologyKey": key, "labelSelector": {"matchLabels": {"app": app}}, **extra}


def required(kind, *terms):
    return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}}


def statuses(result):
    return {v.node: v.status for v in result.verdicts}


NODES = [
    node("n1", {"zone": "z1", "kubernetes.io/hostname": "n1"}),
    node("n2", {"zone": "z1", "kubernetes.io/hostname": "n2"}),
    node("n3", {"zone": "z2", "kubernetes.io/hostname": "n3"}),
    node("bare"),
]


def test_chain_order():
    assert FILTER_PLUGINS[4:] == (
        "NodePorts",
        "NodeResourcesFit",
        "GPUDevices",
        "VolumeBinding",
        "VolumeZone",
        "PodTopologySpread",
        "InterPodAffinity",
    )


def test_pod_affinity_needs_a_matching_pod_in_the_domain():
    cluster = ClusterView(NODES, [pod("db", labels={"app": "db"}, node_name="n2")])
    incoming = pod("web", affinity=required("podAffinity", term("zone", "db")))
    got = statuses(explain_fit(incoming, cluster))
    assert got["n1"].ok and got["n2"].ok
    assert got["n3"] == ipa.STATUS_AFFINITY
    assert got["bare"] == ipa.STATUS_AFFINITY  # the key must be on the node
    assert got["n3"].code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def test_first_pod_of_a_self_affine_group():
    incoming = pod(
        "web", labels={"app": "web"}, affinity=required("podAffinity", term("zone", "web"))
    )
    got = statuses(explain_fit(incoming, ClusterView(NODES)))
    assert [got[n].ok for n in ("n1", "n2", "n3", "bare")] == [True, True, True, False]
    # a pod that does not match its own terms gets no such pass
    other = pod("x", labels={"app": "x"}, affinity=required("podAffinity", term("zone", "web")))
    assert not any(v.fits for v in explain_fit(other, ClusterView(NODES)).verdicts)


def test_anti_affinity_both_ways():
    cluster = ClusterView(
        NODES,
        [
            pod("db", labels={"app": "db"}, node_name="n1"),
            pod(
                "lonely",
                labels={"app": "lonely"},
                node_name="n3",
                affinity=required("podAntiAffinity", term("zone", "web")),
            ),
        ],
    )
    incoming = pod(
        "web",
        labels={"app": "web"},
        affinity=required("podAntiAffinity", term("kubernetes.io/hostname", "db")),
    )
    got = statuses(explain_fit(incoming, cluster))
    assert got["n1"] == ipa.STATUS_ANTI_AFFINITY
    assert got["n3"] == ipa.STATUS_EXISTING
    assert got["n2"].ok and got["bare"].ok
    assert got["n1"].code is Code.UNSCHEDULABLE


def test_namespaces_and_namespace_selector():
    cluster = ClusterView(NODES, [pod("db", labels={"app": "db"}, node_name="n3", namespace="x")])
    same_ns = pod("a", affinity=required("podAffinity", term("zone", "db")))
    assert statuses(explain_fit(same_ns, cluster))["n3"] == ipa.STATUS_AFFINITY
    listed = pod("b", affinity=required("podAffinity", term("zone", "db", namespaces=["x"])))
    assert statuses(explain_fit(listed, cluster))["n3"].ok
    everywhere = pod(
        "c", affinity=required("podAffinity", term("zone", "db", namespaceSelector={}))
    )
    assert statuses(explain_fit(everywhere, cluster))["n3"].ok
    by_name = term(
        "zone",
        "db",
        namespaceSelector={"matchLabels": {"kubernetes.io/metadata.name": "x"}},
    )
    assert statuses(explain_fit(pod("d", affinity=required("podAffinity", by_name)), cluster))[
        "n3"
    ].ok


def test_match_label_keys_are_merged():
    cluster = ClusterView(NODES, [pod("v1", labels={"app": "web", "rev": "1"}, node_name="n1")])
    anti = term("kubernetes.io/hostname", "web", matchLabelKeys=["rev"])
    same_rev = pod(
        "a", labels={"app": "web", "rev": "1"}, affinity=required("podAntiAffinity", anti)
    )
    new_rev = pod(
        "b", labels={"app": "web", "rev": "2"}, affinity=required("podAntiAffinity", anti)
    )
    assert statuses(explain_fit(same_rev, cluster))["n1"] == ipa.STATUS_ANTI_AFFINITY
    assert statuses(explain_fit(new_rev, cluster))["n1"].ok


def test_filter_state_add_and_remove():
    info = ipa.pod_affinity_info(pod("w", affinity=required("podAffinity", term("zone", "db"))))
    incoming = pod("w", affinity=required("podAffinity", term("zone", "db")))
    state = ipa.prefilter(incoming, info, [])
    db = ipa.ExistingPod(pod("db", labels={"app": "db"}), ipa.NO_AFFINITY, {"zone": "z1"})
    state.update(db, 1)
    assert state.affinity == {("zone", "z1"): 1}
    copy = state.copy()
    state.update(db, -1)
    assert not state.affinity and copy.affinity == {("zone", "z1"): 1}


@pytest.mark.parametrize(
    ("affinity", "last"),
    [
        (required("podAffinity", {"labelSelector": {}}), "topologyKey"),
        (required("podAffinity", {"topologyKey": "bad key!"}), "topologyKey"),
        (
            {
                "podAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 0, "podAffinityTerm": term("zone", "a")}
                    ]
                }
            },
            "weight",
        ),
        (
            required("podAntiAffinity", {"topologyKey": "zone", "matchLabelKeys": ["a"]}),
            "matchLabelKeys",
        ),
        (
            {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": "x"}},
            ("requiredDuringSchedulingIgnoredDuringExecution"),
        ),
    ],
)
def test_bad_pod_affinity(affinity, last):
    with pytest.raises(FieldError) as err:
        ipa.pod_affinity_info(pod("p", affinity=affinity))
    assert err.value.path[0:2] == ("spec", "affinity")
    assert err.value.path[-1] == last


def test_gpu_devices_in_the_chain():
    nodes = [
        node(
            "gpu",
            alloc={"nvidia.com/gpu": "2"},
            annotations={"gpupact.io/gpu-sharing": "fractional"},
        ),
        node("cpu"),
    ]
    cluster = ClusterView(
        nodes,
        [pod("s", node_name="gpu", annotations={"gpupact.io/gpu-milli": "600"})],
    )
    share = pod("t", annotations={"gpupact.io/gpu-milli": "500"})
    got = explain_fit(share, cluster)
    assert got.feasible == ("gpu",)
    assert statuses(got)["cpu"] == Status(
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("node(s) had no GPU",), "GPUDevices"
    )
    two = pod("two", requests={"nvidia.com/gpu": "2"})
    verdict = explain_fit(two, cluster).verdicts[0]
    assert verdict.status == Status(
        Code.UNSCHEDULABLE, ("node(s) didn't have enough free GPUs",), "GPUDevices"
    )
    assert verdict.detail == "2 whole GPU(s)"


def test_cluster_view_from_state_carries_devices_and_skips_inactive_nodes():
    state = ClusterState.from_nodes([node("a", alloc={"nvidia.com/gpu": "4"}), node("b")])
    state.bind(pod("p", requests={"nvidia.com/gpu": "1"}), 0, (3,))
    state.remove_node(1)
    view = ClusterView.from_state(state)
    assert [n.name for n in view.nodes] == ["a"]
    assert view.node_devices["a"].used_milli == [0, 0, 0, 1000]
    assert view.bound_pods[0].node_name == "a"


def test_fit_result_lazy_and_aggregated():
    calls = []

    def explain():
        calls.append(1)
        return [
            NodeVerdict("n", Status(Code.UNSCHEDULABLE, ("Insufficient cpu",), "NodeResourcesFit"))
        ]

    result = FitResult(
        "ns/p", message="0/1 nodes are available: 1 Insufficient cpu.", reasons=(), explain=explain
    )
    assert not calls
    assert result.feasible == () and calls == [1]
    assert len(result.verdicts) == 1
    assert calls == [1]
    with pytest.raises(ValueError):
        FitResult("ns/p")
    verdicts = [
        NodeVerdict("a", Status(Code.UNSCHEDULABLE, ("x", "y"), "P")),
        NodeVerdict("b", Status(Code.UNSCHEDULABLE, ("x",), "P")),
        NodeVerdict("c", SUCCESS),
    ]
    reasons = aggregate_reasons("ns/p", verdicts)
    assert [(r.message, r.detail, r.code, r.plugin, r.subject) for r in reasons] == [
        ("x", "2 node(s)", "Unschedulable", "P", "ns/p"),
        ("y", "1 node(s)", "Unschedulable", "P", "ns/p"),
    ]
    eager = FitResult("ns/p", verdicts, "0/3 nodes are available: 2 x, 1 y.")
    assert len(eager.reasons) == 2 and "FitResult" in repr(eager)
