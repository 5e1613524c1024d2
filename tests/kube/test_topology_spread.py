"""PodTopologySpread: constraint parsing/validation, PreFilter + Filter, incremental state."""

from __future__ import annotations

import random

import pytest

from gpupact.errors import FieldError
from gpupact.kube.selectors import RequiredNodeAffinity, parse_node_affinity
from gpupact.kube.status import Code
from gpupact.kube.taints import Taint, Toleration
from gpupact.kube.topology_spread import (
    PLUGIN,
    REASON_CONSTRAINTS_NOT_MATCH,
    REASON_NODE_LABEL_NOT_MATCH,
    IncomingPod,
    NodeView,
    PodView,
    filter_node,
    filter_nodes,
    parse_topology_spread_constraint,
    parse_topology_spread_constraints,
    prefilter,
)

FOO = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}
BAR = {"matchExpressions": [{"key": "bar", "operator": "Exists"}]}


def tsc(key: str, max_skew: int = 1, selector=FOO, when: str = "DoNotSchedule", **extra) -> dict:
    return {
        "maxSkew": max_skew,
        "topologyKey": key,
        "whenUnsatisfiable": when,
        "labelSelector": selector,
        **extra,
    }


def incoming(
    *constraints: dict, labels=None, namespace="", affinity=None, node_selector=None, tolerations=()
) -> IncomingPod:
    required = None
    if affinity is not None or node_selector is not None:
        parsed = None
        if affinity is not None:
            parsed = parse_node_affinity(
                {"requiredDuringSchedulingIgnoredDuringExecution": affinity}
            )
        required = RequiredNodeAffinity(node_selector, parsed)
    return IncomingPod(
        namespace=namespace,
        labels={"foo": ""} if labels is None else labels,
        topology_spread_constraints=parse_topology_spread_constraints(list(constraints)),
        required_node_affinity=required,
        tolerations=tuple(tolerations),
    )


def node(name: str, taints=(), **labels: str) -> NodeView:
    return NodeView(name, labels, tuple(taints))


def pod(node_name: str, namespace: str = "", terminating: bool = False, **labels: str) -> PodView:
    return PodView(namespace, labels, node_name, terminating)


def codes(pod_: IncomingPod, nodes, pods, **flags) -> dict[str, str]:
    return {name: s.code.value for name, s in filter_nodes(pod_, nodes, pods, **flags).items()}


ZONED = [
    node("node-a", zone="zone1", node="node-a"),
    node("node-b", zone="zone1", node="node-b"),
    node("node-x", zone="zone2", node="node-x"),
    node("node-y", zone="zone2", node="node-y"),
]
S, U, UU = "Success", "Unschedulable", "UnschedulableAndUnresolvable"


# --- parsing ----------------------------------------------------------------------------


def test_parse_full_constraint():
    c = parse_topology_spread_constraint(
        tsc(
            "zone",
            2,
            minDomains=3,
            nodeAffinityPolicy="Ignore",
            nodeTaintsPolicy="Honor",
            matchLabelKeys=["app", "example.com/hash"],
        )
    )
    assert (c.max_skew, c.topology_key, c.when_unsatisfiable) == (2, "zone", "DoNotSchedule")
    assert (c.min_domains, c.node_affinity_policy, c.node_taints_policy) == (3, "Ignore", "Honor")
    assert c.match_label_keys == ("app", "example.com/hash")
    assert c.label_selector is not None and c.label_selector.matches({"foo": "x"})


def test_parse_defaults_and_nil_selector():
    c = parse_topology_spread_constraint(
        {"maxSkew": 1, "topologyKey": "z", "whenUnsatisfiable": "ScheduleAnyway"}
    )
    assert c.label_selector is None and c.min_domains is None
    assert c.node_affinity_policy is None and c.node_taints_policy is None
    assert c.match_label_keys == ()


@pytest.mark.parametrize(
    ("patch", "field", "fragment"),
    [
        ({"maxSkew": 0}, "maxSkew", "greater than zero"),
        ({"maxSkew": -1}, "maxSkew", "greater than zero"),
        ({"maxSkew": None}, "maxSkew", "greater than zero"),
        ({"maxSkew": True}, "maxSkew", "integer"),
        ({"maxSkew": "1"}, "maxSkew", "integer"),
        ({"maxSkew": 2**31}, "maxSkew", "int32"),
        ({"topologyKey": ""}, "topologyKey", "can not be empty"),
        ({"topologyKey": None}, "topologyKey", "string"),
        ({"topologyKey": 3}, "topologyKey", "string"),
        ({"whenUnsatisfiable": "Maybe"}, "whenUnsatisfiable", 'Unsupported value: "Maybe"'),
        ({"whenUnsatisfiable": None}, "whenUnsatisfiable", "Unsupported value"),
        ({"minDomains": 0}, "minDomains", "greater than zero"),
        ({"minDomains": 1.5}, "minDomains", "integer"),
        ({"nodeAffinityPolicy": "honor"}, "nodeAffinityPolicy", "Unsupported value"),
        ({"nodeTaintsPolicy": "Always"}, "nodeTaintsPolicy", "Unsupported value"),
        ({"matchLabelKeys": "app"}, "matchLabelKeys", "list"),
    ],
)
def test_parse_rejects_bad_fields(patch, field, fragment):
    obj = {**tsc("zone"), **patch}
    with pytest.raises(FieldError) as err:
        parse_topology_spread_constraint(obj, ("spec", "topologySpreadConstraints", 2))
    assert err.value.path == ("spec", "topologySpreadConstraints", 2, field)
    assert fragment in err.value.message


def test_parse_min_domains_needs_do_not_schedule():
    with pytest.raises(FieldError) as err:
        parse_topology_spread_constraint(tsc("zone", when="ScheduleAnyway", minDomains=2))
    assert err.value.path == ("minDomains",)
    assert "whenUnsatisfiable=DoNotSchedule, not ScheduleAnyway" in err.value.message


@pytest.mark.parametrize(
    ("keys", "index", "fragment"),
    [
        (["app", "foo"], 1, "exists in both matchLabelKeys and labelSelector"),
        (["bad key"], 0, "Invalid value"),
        (["a/b/c"], 0, "Invalid value"),
        ([7], 0, "string"),
    ],
)
def test_parse_rejects_bad_match_label_keys(keys, index, fragment):
    with pytest.raises(FieldError) as err:
        parse_topology_spread_constraint(tsc("zone", matchLabelKeys=keys))
    assert err.value.path == ("matchLabelKeys", index)
    assert fragment in err.value.message


def test_parse_rejects_non_object_and_bad_selector():
    with pytest.raises(FieldError) as err:
        parse_topology_spread_constraint(["zone"], ("c",))
    assert err.value.path == ("c",)
    bad = {"matchExpressions": [{"key": "foo", "operator": "Near"}]}
    with pytest.raises(FieldError) as err:
        parse_topology_spread_constraint(tsc("zone", selector=bad))
    assert "labelSelector" in str(err.value)


def test_parse_list_rejects_repeated_key_and_action():
    good = [tsc("zone"), tsc("zone", when="ScheduleAnyway"), tsc("node")]
    assert len(parse_topology_spread_constraints(good)) == 3
    with pytest.raises(FieldError) as err:
        parse_topology_spread_constraints([tsc("zone"), tsc("node"), tsc("zone", 3)], ("tsc",))
    assert err.value.path == ("tsc", 0, "{topologyKey, whenUnsatisfiable}")
    assert "{zone, DoNotSchedule}" in err.value.message
    with pytest.raises(FieldError) as err:
        parse_topology_spread_constraints({"a": 1}, ("tsc",))
    assert err.value.path == ("tsc",)
    assert parse_topology_spread_constraints(None) == ()


def test_parse_without_validation_keeps_struct_literals():
    c = parse_topology_spread_constraint(
        tsc("zone", 0, when="ScheduleAnyway", minDomains=2), validate=False
    )
    assert (c.max_skew, c.min_domains) == (0, 2)
    with pytest.raises(FieldError):  # enumerations and shapes are still checked
        parse_topology_spread_constraint(tsc("zone", when="Never"), validate=False)


# --- filter: upstream cases not in the shared vectors ----------------------------------


def test_terminating_pods_are_excluded():
    nodes = [node("node-a", node="node-a"), node("node-b", node="node-b")]
    pods = [pod("node-a", terminating=True, foo=""), pod("node-b", foo="")]
    assert codes(incoming(tsc("node")), nodes, pods) == {"node-a": S, "node-b": U}


def test_node_affinity_not_in_without_inclusion_gate():
    # pods spread as 0/~2~/0/1 across zones when node-b is excluded by the pod's affinity
    affinity = {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": "node", "operator": "NotIn", "values": ["node-b"]}]}
        ]
    }
    pods = [pod("node-b", foo=""), pod("node-b", foo=""), pod("node-y", foo="")]
    got = codes(incoming(tsc("zone"), affinity=affinity), ZONED, pods, node_inclusion_policy=False)
    assert got == {"node-a": S, "node-b": S, "node-x": U, "node-y": U}


def test_multiple_constraints_more_upstream_cases():
    two = (tsc("zone"), tsc("node", selector=BAR))
    pods = [
        pod("node-a", foo=""),
        pod("node-a", foo="", bar=""),
        pod("node-y", foo=""),
        pod("node-y", foo="", bar=""),
        pod("node-y", foo=""),
    ]
    got = codes(incoming(*two, labels={"foo": "", "bar": ""}), ZONED, pods)
    assert got == {"node-a": U, "node-b": S, "node-x": U, "node-y": U}

    pods = [pod("node-a", foo=""), pod("node-x", bar=""), pod("node-y", bar="")]
    assert codes(incoming(*two, labels={"bar": ""}), ZONED, pods) == {
        "node-a": S,
        "node-b": S,
        "node-x": U,
        "node-y": U,
    }

    nodes = [*ZONED[:2], node("node-x", zone="zone2"), ZONED[3]]
    pods = [pod("node-a", foo=""), pod("node-y", foo="")]
    assert codes(incoming(tsc("zone"), tsc("node")), nodes, pods) == {
        "node-a": U,
        "node-b": S,
        "node-x": UU,
        "node-y": U,
    }


# --- filter: semantics ------------------------------------------------------------------


def test_statuses_carry_upstream_reasons():
    nodes = [node("a", zone="z1"), node("b", zone="z2"), node("c")]
    statuses = filter_nodes(incoming(tsc("zone")), nodes, [pod("a", foo="")])
    assert statuses["a"].code is Code.UNSCHEDULABLE
    assert statuses["a"].reasons == (REASON_CONSTRAINTS_NOT_MATCH,)
    assert statuses["c"].code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert statuses["c"].message == REASON_NODE_LABEL_NOT_MATCH
    assert statuses["b"].ok
    assert {s.plugin for s in statuses.values()} == {PLUGIN}


def test_only_do_not_schedule_constraints_filter():
    pods = [pod("node-a", foo="")] * 5
    soft = incoming(tsc("zone", when="ScheduleAnyway"), tsc("rack", when="ScheduleAnyway"))
    state = prefilter(soft, ZONED, pods)
    assert state.skip
    assert all(filter_node(state, n).ok for n in ZONED)


def test_namespace_and_unknown_nodes():
    pods = [pod("node-a", "other", foo=""), pod("gone", foo=""), pod("", foo="")]
    state = prefilter(incoming(tsc("zone"), namespace=""), ZONED, pods)
    assert state.match_counts(0) == {"zone1": 0, "zone2": 0}
    state = prefilter(incoming(tsc("zone"), namespace="other"), ZONED, pods)
    assert state.match_counts(0) == {"zone1": 1, "zone2": 0}


def test_nodes_missing_any_key_contribute_nothing():
    nodes = [node("a", zone="z1", rack="r1"), node("b", zone="z2")]
    state = prefilter(incoming(tsc("zone"), tsc("rack")), nodes, [pod("b", foo="")])
    assert state.match_counts(0) == {"z1": 0}
    assert state.match_counts(1) == {"r1": 0}


def test_min_domains_treats_global_min_as_zero():
    nodes = [node("a", zone="z1"), node("b", zone="z2")]
    pods = [pod("a", foo="")] * 2 + [pod("b", foo="")] * 2
    for min_domains, expected in ((None, S), (2, S), (3, U)):
        extra = {} if min_domains is None else {"minDomains": min_domains}
        state = prefilter(incoming(tsc("zone", 1, **extra)), nodes, pods)
        assert state.global_min(0) == (0 if min_domains == 3 else 2)
        assert filter_node(state, nodes[0]).code.value == expected


def test_nil_selector_matches_nothing_and_empty_selector_counts_nothing():
    nodes = [node("a", zone="z1"), node("b", zone="z2")]
    pods = [pod("a", foo="")] * 3
    nil = prefilter(incoming(tsc("zone", selector=None, matchLabelKeys=["foo"])), nodes, pods)
    assert nil.match_counts(0) == {"z1": 0, "z2": 0} and nil.self_match == (0,)
    # `{}` matches the incoming pod but, at the vectors' revision, counts no existing pod
    empty = prefilter(incoming(tsc("zone", selector={})), nodes, pods)
    assert empty.match_counts(0) == {"z1": 0, "z2": 0} and empty.self_match == (1,)
    assert filter_node(empty, nodes[0]).ok
    # matchLabelKeys turn `{}` into a real selector
    keyed = incoming(tsc("zone", selector={}, matchLabelKeys=["foo"]), labels={"foo": "v"})
    state = prefilter(keyed, nodes, [pod("a", foo="v"), pod("a", foo="w")])
    assert state.match_counts(0) == {"z1": 1, "z2": 0}


def test_match_label_keys_merge_and_gate():
    nodes = [node("a", zone="z1"), node("b", zone="z2")]
    pods = [
        pod("a", foo="", hash="old"),
        pod("a", foo="", hash="old"),
        pod("b", foo="", hash="new"),
    ]
    me = incoming(tsc("zone", matchLabelKeys=["hash", "absent"]), labels={"foo": "", "hash": "new"})
    assert prefilter(me, nodes, pods).match_counts(0) == {"z1": 0, "z2": 1}
    assert codes(me, nodes, pods) == {"a": S, "b": U}
    off = prefilter(me, nodes, pods, match_label_keys=False)
    assert off.match_counts(0) == {"z1": 2, "z2": 1}


def test_node_taints_policy_honor_respects_tolerations():
    taint = Taint("dedicated", "gpu", "NoSchedule")
    prefer = Taint("soft", "", "PreferNoSchedule")
    nodes = [node("a", [taint], n="a"), node("b", [prefer], n="b"), node("c", n="c")]
    pods = [pod("a", foo=""), pod("b", foo="")]
    honor = tsc("n", nodeTaintsPolicy="Honor")
    state = prefilter(incoming(honor), nodes, pods)
    # PreferNoSchedule never excludes a node
    assert state.match_counts(0) == {"b": 1, "c": 0}
    tolerated = incoming(honor, tolerations=[Toleration("dedicated", "Equal", "gpu", "NoSchedule")])
    assert prefilter(tolerated, nodes, pods).match_counts(0) == {"a": 1, "b": 1, "c": 0}
    # with the inclusion gate off the policy is ignored
    assert prefilter(incoming(honor), nodes, pods, node_inclusion_policy=False).match_counts(0) == {
        "a": 1,
        "b": 1,
        "c": 0,
    }


def test_node_affinity_policy_per_constraint_and_gate():
    nodes = [node("a", zone="z1", n="a", gpu="yes"), node("b", zone="z2", n="b")]
    pods = [pod("b", foo="")]
    p = incoming(tsc("zone"), tsc("n", nodeAffinityPolicy="Ignore"), node_selector={"gpu": "yes"})
    state = prefilter(p, nodes, pods)
    assert state.match_counts(0) == {"z1": 0}
    assert state.match_counts(1) == {"a": 0, "b": 1}
    # gate off: the pod's required affinity drops node b for every constraint
    state = prefilter(p, nodes, pods, node_inclusion_policy=False)
    assert state.match_counts(1) == {"a": 0}


# --- incremental state ------------------------------------------------------------------


def _fresh_counts(pod_, nodes, pods, **flags):
    state = prefilter(pod_, nodes, pods, **flags)
    return [state.match_counts(i) for i in range(len(state.constraints))], [
        state.global_min(i) for i in range(len(state.constraints))
    ]


def test_add_and_remove_pod_match_a_fresh_prefilter():
    rng = random.Random(20240607)
    nodes = [
        node(
            f"n{i}",
            [Taint("t", "", "NoSchedule")] if i % 5 == 0 else (),
            zone=f"z{i % 3}",
            host=f"n{i}",
            **({"gpu": "y"} if i % 2 else {}),
        )
        for i in range(12)
    ]
    me = incoming(
        tsc("zone", minDomains=2),
        tsc("host", selector=BAR, nodeTaintsPolicy="Honor"),
        labels={"foo": "", "bar": ""},
        node_selector={"gpu": "y"},
    )
    label_choices = [{"foo": ""}, {"bar": ""}, {"foo": "", "bar": ""}, {}]
    for flags in ({}, {"node_inclusion_policy": False}):
        placed: list[PodView] = []
        state = prefilter(me, nodes, placed, **flags)
        for _ in range(300):
            if placed and rng.random() < 0.4:
                victim = placed.pop(rng.randrange(len(placed)))
                state.remove_pod(victim, nodes[int(victim.node_name[1:])])
            else:
                target = rng.choice(nodes)
                ns = "" if rng.random() < 0.9 else "elsewhere"
                new = PodView(ns, rng.choice(label_choices), target.name)
                placed.append(new)
                state.add_pod(new, target)
            counts, minimums = _fresh_counts(me, nodes, placed, **flags)
            assert [state.match_counts(i) for i in range(2)] == counts
            assert [state.global_min(i) for i in range(2)] == minimums
            for n in nodes:
                assert filter_node(state, n) == filter_node(
                    prefilter(me, nodes, placed, **flags), n
                )


def test_copy_is_independent_and_terminating_pods_are_not_counted():
    nodes = [node("a", zone="z1"), node("b", zone="z2")]
    state = prefilter(incoming(tsc("zone")), nodes, [])
    clone = state.copy()
    clone.add_pod(pod("a", foo=""), nodes[0])
    state.add_pod(pod("a", terminating=True, foo=""), nodes[0])
    state.add_pod(pod("a", "other", foo=""), nodes[0])
    assert state.match_counts(0) == {"z1": 0, "z2": 0}
    assert clone.match_counts(0) == {"z1": 1, "z2": 0}
    assert clone.global_min(0) == 0
    clone.add_pod(pod("b", foo=""), nodes[1])
    assert clone.global_min(0) == 1
    clone.remove_pod(pod("a", foo=""), nodes[0])
    assert clone.global_min(0) == 0


def test_accepts_objects_from_gpupact_kube_objects():
    objects = pytest.importorskip("gpupact.kube.objects")
    nodes = [
        objects.parse_node({"metadata": {"name": n, "labels": {"zone": z}}})
        for n, z in (("a", "z1"), ("b", "z2"))
    ]
    existing = objects.parse_pod(
        {
            "metadata": {"name": "e", "namespace": "ns", "labels": {"foo": ""}},
            "spec": {"nodeName": "a"},
        }
    )
    me = objects.parse_pod(
        {
            "metadata": {"name": "p", "namespace": "ns", "labels": {"foo": ""}},
            "spec": {"topologySpreadConstraints": [tsc("zone")]},
        }
    )
    got = {k: v.code.value for k, v in filter_nodes(me, nodes, [existing]).items()}
    assert got == {"a": U, "b": S}
