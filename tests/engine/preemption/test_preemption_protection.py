"""Contract protection rules on top of DefaultPreemption, and their validation."""

from __future__ import annotations

import pytest
from preemption_helpers import (
    HIGH,
    LARGE,
    LOW,
    MEDIUM,
    MID,
    NOW,
    SMALL,
    names,
    node,
    pdb,
    pod,
    statuses,
)
from preemption_helpers import snapshot as make_snapshot

from gpupact.engine.preemption import (
    GANG,
    NEVER_PREEMPTS,
    NEVER_VICTIM,
    NO_PROTECTION,
    DefaultPreemption,
    FilterChainFit,
    Protection,
    ProtectionRule,
    parse_protection,
    parse_protection_rule,
)
from gpupact.errors import FieldError
from gpupact.kube.status import Code

BATCH_NEVER_IN_INFERENCE = ProtectionRule(
    NEVER_PREEMPTS, preemptor_class="batch", pool="gpu-inference"
)
ONLINE_NEVER_VICTIM = ProtectionRule(NEVER_VICTIM, victim_class="online-infer")
GANG_UNITS = ProtectionRule(GANG)


def inference_node(name="inf-1"):
    return node(name, labels={"nodepool": "gpu-inference"})


def batch_node(name="batch-1"):
    return node(name, labels={"nodepool": "gpu-batch"})


def klass(name: str) -> dict[str, str]:
    return {"workload": name}


def preempt(protection, nodes, pods, preemptor, pdbs=()):
    cluster = make_snapshot(nodes, pods, pdbs)
    plugin = DefaultPreemption(protection=protection)
    filtered = statuses(Code.UNSCHEDULABLE, *(n.name for n in nodes))
    return plugin.post_filter(preemptor, cluster, filtered, now=NOW)


def nominated(outcome) -> str | None:
    return None if outcome.result is None else outcome.result.nominated_node_name


# --- never-preempts ---------------------------------------------------------------------------


def test_batch_never_preempts_in_inference_pool():
    protection = Protection((BATCH_NEVER_IN_INFERENCE,))
    pods = [pod("low", on="inf-1", priority=LOW, req=LARGE)]
    preemptor = pod("b", priority=HIGH, req=LARGE, labels=klass("batch"))
    outcome = preempt(protection, [inference_node()], pods, preemptor)
    assert nominated(outcome) == ""
    assert outcome.status.message == (
        "preemption: 0/1 nodes are available: 1 No preemption victims allowed by protection rules."
    )
    # without the rule, upstream preempts there
    assert nominated(preempt(NO_PROTECTION, [inference_node()], pods, preemptor)) == "inf-1"


def test_batch_still_preempts_in_other_pools():
    protection = Protection((BATCH_NEVER_IN_INFERENCE,))
    nodes = [inference_node(), batch_node()]
    pods = [
        pod("cheap", on="inf-1", priority=LOW, req=LARGE),  # upstream would pick this node
        pod("dear", on="batch-1", priority=MID, req=LARGE),
    ]
    preemptor = pod("b", priority=HIGH, req=LARGE, labels=klass("batch"))
    assert nominated(preempt(NO_PROTECTION, nodes, pods, preemptor)) == "inf-1"
    outcome = preempt(protection, nodes, pods, preemptor)
    assert nominated(outcome) == "batch-1"
    assert names(outcome.victims) == ["dear"]


def test_never_preempts_binds_only_its_class():
    protection = Protection((BATCH_NEVER_IN_INFERENCE,))
    pods = [pod("low", on="inf-1", priority=LOW, req=LARGE)]
    for preemptor in (
        pod("f", priority=HIGH, req=LARGE, labels=klass("fine-tune")),
        pod("unlabelled", priority=HIGH, req=LARGE),
    ):
        assert nominated(preempt(protection, [inference_node()], pods, preemptor)) == "inf-1"


def test_never_preempts_without_pool_applies_everywhere():
    protection = Protection((ProtectionRule(NEVER_PREEMPTS, preemptor_class="burst"),))
    nodes = [inference_node(), batch_node()]
    pods = [
        pod("a", on="inf-1", priority=LOW, req=LARGE),
        pod("b", on="batch-1", priority=LOW, req=LARGE),
    ]
    outcome = preempt(
        protection, nodes, pods, pod("x", priority=HIGH, req=LARGE, labels=klass("burst"))
    )
    assert nominated(outcome) == ""
    assert "2 No preemption victims allowed by protection rules" in outcome.status.message


def test_pool_label_is_configurable():
    protection = Protection((BATCH_NEVER_IN_INFERENCE,), pool_label="karpenter.sh/nodepool")
    karpenter_node = node("k-1", labels={"karpenter.sh/nodepool": "gpu-inference"})
    pods = [pod("low", on="k-1", priority=LOW, req=LARGE)]
    preemptor = pod("b", priority=HIGH, req=LARGE, labels=klass("batch"))
    assert nominated(preempt(protection, [karpenter_node], pods, preemptor)) == ""
    # the default label does not see this node's pool
    default = Protection((BATCH_NEVER_IN_INFERENCE,))
    assert nominated(preempt(default, [karpenter_node], pods, preemptor)) == "k-1"


# --- never-victim -----------------------------------------------------------------------------


def test_online_infer_is_never_victim_of_lower_classes():
    protection = Protection((ONLINE_NEVER_VICTIM,))
    pods = [pod("serving", on="inf-1", priority=LOW, req=LARGE, labels=klass("online-infer"))]
    for cls in ("batch", "fine-tune", None):
        labels = klass(cls) if cls else None
        preemptor = pod("p", priority=HIGH, req=LARGE, labels=labels)
        assert nominated(preempt(protection, [inference_node()], pods, preemptor)) == ""
    # its own class may still preempt it (priority decides, as upstream)
    same = pod("p", priority=HIGH, req=LARGE, labels=klass("online-infer"))
    assert names(preempt(protection, [inference_node()], pods, same).victims) == ["serving"]


def test_preemptible_by_lists_the_classes_that_may_evict():
    rule = ProtectionRule(NEVER_VICTIM, victim_class="online-infer", preemptible_by=("fine-tune",))
    protection = Protection((rule,))
    pods = [pod("serving", on="inf-1", priority=LOW, req=LARGE, labels=klass("online-infer"))]
    fine_tune = pod("p", priority=HIGH, req=LARGE, labels=klass("fine-tune"))
    online = pod("p", priority=HIGH, req=LARGE, labels=klass("online-infer"))
    assert nominated(preempt(protection, [inference_node()], pods, fine_tune)) == "inf-1"
    assert nominated(preempt(protection, [inference_node()], pods, online)) == ""


def test_protected_pod_stays_while_others_on_the_node_go():
    protection = Protection((ONLINE_NEVER_VICTIM,))
    pods = [
        pod("serving", on="inf-1", priority=LOW, req=MEDIUM, labels=klass("online-infer")),
        pod("filler", on="inf-1", priority=MID, req=LARGE, labels=klass("batch")),
    ]
    outcome = preempt(protection, [inference_node()], pods, pod("p", priority=HIGH, req=LARGE))
    assert names(outcome.victims) == ["filler"]
    # the same victims as upstream: `serving` is small enough to stay anyway
    upstream = preempt(NO_PROTECTION, [inference_node()], pods, pod("p", priority=HIGH, req=LARGE))
    assert names(upstream.victims) == ["filler"]


def test_protected_pod_that_must_go_blocks_the_node():
    protection = Protection((ONLINE_NEVER_VICTIM,))
    pods = [
        pod("serving", on="inf-1", priority=LOW, req=LARGE, labels=klass("online-infer")),
        pod("filler", on="inf-1", priority=LOW, req=MEDIUM),
    ]
    outcome = preempt(protection, [inference_node()], pods, pod("p", priority=HIGH, req=LARGE))
    assert nominated(outcome) == ""
    # the node was tried (a victim was eligible) but the pod does not fit beside `serving`
    assert outcome.status.message == (
        "preemption: 0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory."
    )


def test_class_label_is_configurable():
    protection = Protection((ONLINE_NEVER_VICTIM,), class_label="gpupact.io/class")
    pods = [
        pod(
            "serving",
            on="inf-1",
            priority=LOW,
            req=LARGE,
            labels={"gpupact.io/class": "online-infer"},
        )
    ]
    assert (
        nominated(preempt(protection, [inference_node()], pods, pod("p", priority=HIGH, req=LARGE)))
        == ""
    )


# --- gang --------------------------------------------------------------------------------------

GROUP = "scheduling.k8s.io/group-name"


def gang_pods(group="g", key=GROUP, *, priority=LOW, use_annotation=False, namespace="default"):
    meta = {"annotations" if use_annotation else "labels": {key: group}}
    return [
        pod(f"{group}-0", on="node1", priority=priority, req=LARGE, namespace=namespace, **meta),
        pod(f"{group}-1", on="node2", priority=priority, req=SMALL, namespace=namespace, **meta),
    ]


def test_gang_members_on_other_nodes_are_victims_too():
    protection = Protection((GANG_UNITS,))
    nodes = [node("node1"), node("node2")]
    pods = gang_pods()
    preemptor = pod("p", priority=HIGH, req=LARGE)
    filtered = statuses(Code.UNSCHEDULABLE, "node1")  # node2 has room; only node1 is tried
    outcome = DefaultPreemption(protection=protection).post_filter(
        preemptor, make_snapshot(nodes, pods), filtered, now=NOW
    )
    assert nominated(outcome) == "node1"
    assert sorted(names(outcome.victims)) == ["g-0", "g-1"]
    upstream = DefaultPreemption().post_filter(
        preemptor, make_snapshot(nodes, pods), filtered, now=NOW
    )
    assert names(upstream.victims) == ["g-0"]


@pytest.mark.parametrize(
    ("key", "use_annotation"),
    [(GROUP, False), (GROUP, True), ("volcano.sh/podgroup", False), ("volcano.sh/podgroup", True)],
)
def test_gang_is_named_by_label_or_annotation(key, use_annotation):
    protection = Protection((GANG_UNITS,))
    pods = gang_pods(key=key, use_annotation=use_annotation)
    outcome = preempt(
        protection, [node("node1"), node("node2")], pods, pod("p", priority=HIGH, req=LARGE)
    )
    assert sorted(names(outcome.victims)) == ["g-0", "g-1"]


def test_gang_cost_counts_every_member():
    # node1: one gang member (2 pods in all) vs node3: one lone pod of the same priority
    protection = Protection((GANG_UNITS,))
    nodes = [node("node1"), node("node2"), node("node3")]
    pods = [*gang_pods(), pod("lone", on="node3", priority=LOW, req=LARGE)]
    filtered = statuses(Code.UNSCHEDULABLE, "node1", "node3")
    preemptor = pod("p", priority=HIGH, req=LARGE)
    plugin = DefaultPreemption(protection=protection)
    outcome = plugin.post_filter(preemptor, make_snapshot(nodes, pods), filtered, now=NOW)
    assert nominated(outcome) == "node3"  # fewer victims (equal priorities)
    # upstream sees one victim on each node and keeps the first
    upstream = DefaultPreemption().post_filter(
        preemptor, make_snapshot(nodes, pods), filtered, now=NOW
    )
    assert nominated(upstream) == "node1"


def test_gang_with_a_member_not_evictable_is_protected_whole():
    protection = Protection((GANG_UNITS,))
    pods = gang_pods()
    # the member on node2 has the preemptor's priority: the gang cannot be broken up
    pods[1] = pod("g-1", on="node2", priority=HIGH, req=SMALL, labels={GROUP: "g"})
    outcome = preempt(
        protection, [node("node1"), node("node2")], pods, pod("p", priority=HIGH, req=LARGE)
    )
    assert nominated(outcome) == ""
    assert "No preemption victims allowed by protection rules" in outcome.status.message


def test_gang_member_in_a_forbidden_pool_protects_the_gang():
    protection = Protection((GANG_UNITS, BATCH_NEVER_IN_INFERENCE))
    nodes = [node("node1", labels={"nodepool": "gpu-batch"}), inference_node("node2")]
    pods = gang_pods()
    preemptor = pod("p", priority=HIGH, req=LARGE, labels=klass("batch"))
    outcome = DefaultPreemption(protection=protection).post_filter(
        preemptor, make_snapshot(nodes, pods), statuses(Code.UNSCHEDULABLE, "node1"), now=NOW
    )
    assert nominated(outcome) == ""


def test_gang_reprieved_together_when_it_fits_back():
    protection = Protection((GANG_UNITS,))
    pods = [
        pod("g-0", on="node1", priority=MID, req=SMALL, labels={GROUP: "g"}),
        pod("g-1", on="node2", priority=MID, req=SMALL, labels={GROUP: "g"}),
        pod("big", on="node1", priority=LOW, req=LARGE),
    ]
    outcome = preempt(
        protection, [node("node1"), node("node2")], pods, pod("p", priority=HIGH, req=LARGE)
    )
    assert nominated(outcome) == "node1"
    assert names(outcome.victims) == ["big"]


def test_gangs_are_per_namespace():
    protection = Protection((GANG_UNITS,))
    pods = [
        pod("g-0", on="node1", priority=LOW, req=LARGE, labels={GROUP: "g"}, namespace="a"),
        pod("g-1", on="node2", priority=LOW, req=SMALL, labels={GROUP: "g"}, namespace="b"),
    ]
    outcome = preempt(
        protection, [node("node1"), node("node2")], pods, pod("p", priority=HIGH, req=LARGE)
    )
    assert names(outcome.victims) == ["g-0"]


def test_gang_pdb_violations_count_each_member():
    protection = Protection((GANG_UNITS,))
    team = {GROUP: "g", "app": "foo"}
    pods = [
        pod("g-0", on="node1", priority=LOW, req=LARGE, labels=team),
        pod("g-1", on="node2", priority=LOW, req=SMALL, labels=team),
    ]
    cluster = make_snapshot([node("node1"), node("node2")], pods, [pdb({"app": "foo"}, 0)])
    plugin = DefaultPreemption(protection=protection)
    fits = FilterChainFit(cluster.nodes, cluster.running_pods())
    victims, violations, status = plugin.select_victims_on_node(
        pod("p", priority=HIGH, req=LARGE), cluster.nodes[0], cluster, fits, now=NOW
    )
    assert status.ok
    assert sorted(names(victims)) == ["g-0", "g-1"]
    assert violations == 2


def test_without_gang_rule_group_members_are_independent():
    protection = Protection((ONLINE_NEVER_VICTIM,))
    outcome = preempt(
        protection, [node("node1"), node("node2")], gang_pods(), pod("p", priority=HIGH, req=LARGE)
    )
    assert names(outcome.victims) == ["g-0"]


def test_gang_spread_counts_drop_off_node_members():
    # removing a gang member elsewhere lowers that domain's count for the spread filter
    exists = {"matchExpressions": [{"key": "app", "operator": "Exists"}]}
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": "zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": exists,
        }
    ]
    nodes = [
        node("node1", labels={"zone": "z1"}),
        node("node2", labels={"zone": "z2"}),
    ]
    member = pod("m", on="node2", priority=LOW, labels={"app": "x"})
    cluster = make_snapshot(nodes, [member])
    fits = FilterChainFit(cluster.nodes, cluster.running_pods())
    incoming = pod("p", priority=HIGH, labels={"app": "x"}, spread=spread)
    # z1=0, z2=1: placing on node2 gives skew 2 - 0 = 2 > 1; without `m` it fits
    assert not fits(incoming, nodes[1], ()).ok
    assert fits(incoming, nodes[1], [member]).ok


# --- empty protection is upstream ------------------------------------------------------------


def test_empty_protection_equals_upstream():
    pods = [
        pod("a", on="node1", priority=LOW, req=SMALL, labels=klass("online-infer")),
        pod("b", on="node1", priority=MID, req=LARGE, labels={GROUP: "g"}),
        pod("c", on="node2", priority=LOW, req=LARGE, labels={GROUP: "g"}),
    ]
    nodes = [inference_node("node1"), node("node2")]
    preemptor = pod("p", priority=HIGH, req=LARGE, labels=klass("batch"))
    got = preempt(Protection(), nodes, pods, preemptor)
    want = preempt(NO_PROTECTION, nodes, pods, preemptor)
    assert (nominated(got), names(got.victims)) == (nominated(want), names(want.victims))
    assert Protection() == NO_PROTECTION


# --- parsing and validation --------------------------------------------------------------------


def test_parse_protection_full():
    protection = parse_protection(
        {
            "classLabel": "gpupact.io/class",
            "poolLabel": "karpenter.sh/nodepool",
            "gangKeys": ["volcano.sh/podgroup"],
            "rules": [
                {"kind": "never-preempts", "preemptorClass": "batch", "pool": "gpu-inference"},
                {
                    "kind": "never-victim",
                    "victimClass": "online-infer",
                    "preemptibleBy": ["online-infer"],
                },
                {"kind": "gang"},
            ],
        }
    )
    assert protection.rules == (
        BATCH_NEVER_IN_INFERENCE,
        ProtectionRule(NEVER_VICTIM, victim_class="online-infer", preemptible_by=("online-infer",)),
        GANG_UNITS,
    )
    assert protection.class_label == "gpupact.io/class"
    assert protection.pool_label == "karpenter.sh/nodepool"
    assert protection.gang_keys == ("volcano.sh/podgroup",)
    assert protection.gang_units


def test_parse_protection_defaults():
    assert parse_protection(None) is NO_PROTECTION
    protection = parse_protection({"rules": [{"kind": "gang"}]})
    assert protection.class_label == "workload"
    assert protection.pool_label == "nodepool"
    assert protection.gang_keys == ("scheduling.k8s.io/group-name", "volcano.sh/podgroup")


def test_rule_descriptions():
    assert BATCH_NEVER_IN_INFERENCE.describe() == "batch never preempts in pool gpu-inference"
    assert ONLINE_NEVER_VICTIM.describe() == "online-infer is preempted only by online-infer"
    assert GANG_UNITS.describe() == "gangs are preempted as whole units"


@pytest.mark.parametrize(
    ("kwargs", "path"),
    [
        ({"kind": "sometimes"}, ("kind",)),
        ({"kind": NEVER_PREEMPTS}, ("preemptorClass",)),
        (
            {"kind": NEVER_PREEMPTS, "preemptor_class": "batch", "victim_class": "x"},
            ("victimClass",),
        ),
        ({"kind": NEVER_PREEMPTS, "preemptor_class": "not a label!"}, ("preemptorClass",)),
        ({"kind": NEVER_PREEMPTS, "preemptor_class": "batch", "pool": "-bad-"}, ("pool",)),
        ({"kind": NEVER_VICTIM}, ("victimClass",)),
        ({"kind": NEVER_VICTIM, "victim_class": "a", "pool": "p"}, ("pool",)),
        ({"kind": NEVER_VICTIM, "victim_class": "a", "preemptible_by": "a"}, ("preemptibleBy",)),
        (
            {"kind": NEVER_VICTIM, "victim_class": "a", "preemptible_by": ("ok", "")},
            ("preemptibleBy", 1),
        ),
        (
            {"kind": NEVER_VICTIM, "victim_class": "a", "preemptible_by": ("ok", 3)},
            ("preemptibleBy", 1),
        ),
        ({"kind": GANG, "victim_class": "a"}, ("victimClass",)),
        ({"kind": NEVER_VICTIM, "victim_class": 7}, ("victimClass",)),
    ],
)
def test_invalid_rule_raises_field_error(kwargs, path):
    with pytest.raises(FieldError) as err:
        ProtectionRule(**kwargs)
    assert err.value.path == path


@pytest.mark.parametrize(
    ("kwargs", "path"),
    [
        ({"class_label": "bad key/with/slashes"}, ("classLabel",)),
        ({"pool_label": ""}, ("poolLabel",)),
        ({"gang_keys": ("ok", "-bad")}, ("gangKeys", 1)),
        ({"rules": (GANG_UNITS,), "gang_keys": ()}, ("gangKeys",)),
        ({"rules": ({"kind": "gang"},)}, ("rules", 0)),
        ({"rules": "gang"}, ("rules",)),
    ],
)
def test_invalid_protection_raises_field_error(kwargs, path):
    with pytest.raises(FieldError) as err:
        Protection(**kwargs)
    assert err.value.path == path


@pytest.mark.parametrize(
    ("obj", "path"),
    [
        ("rules", ("spec", "protection")),
        ({"rulez": []}, ("spec", "protection", "rulez")),
        ({"rules": {"kind": "gang"}}, ("spec", "protection", "rules")),
        ({"rules": ["gang"]}, ("spec", "protection", "rules", 0)),
        ({"rules": [{"pool": "x"}]}, ("spec", "protection", "rules", 0, "kind")),
        (
            {
                "rules": [
                    {"kind": "gang"},
                    {"kind": "never-preempts", "preemptorClass": "batch", "pool": "a b"},
                ]
            },
            ("spec", "protection", "rules", 1, "pool"),
        ),
        (
            {"rules": [{"kind": "never-victim", "victimClass": "x", "preemptibleBy": "x"}]},
            ("spec", "protection", "rules", 0, "preemptibleBy"),
        ),
        ({"rules": [{"kind": "gang", "extra": 1}]}, ("spec", "protection", "rules", 0, "extra")),
        ({"classLabel": 5}, ("spec", "protection", "classLabel")),
        ({"gangKeys": [], "rules": [{"kind": "gang"}]}, ("spec", "protection", "gangKeys")),
        ({"poolLabel": "a//b"}, ("spec", "protection", "poolLabel")),
    ],
)
def test_parse_protection_bad_input(obj, path):
    with pytest.raises(FieldError) as err:
        parse_protection(obj, ("spec", "protection"))
    assert err.value.path == path


def test_parse_rule_without_prefix():
    with pytest.raises(FieldError) as err:
        parse_protection_rule({"kind": "never-victim"})
    assert err.value.path == ("victimClass",)
    assert "required" in str(err.value)
