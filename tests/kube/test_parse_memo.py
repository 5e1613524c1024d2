"""Memoised parsing: replicas share one parsed subtree, and the memo never changes a result
or an error (keys are exact, only successes are stored)."""

from __future__ import annotations

import copy
from collections import OrderedDict
from types import MappingProxyType

import pytest

from gpupact.errors import FieldError
from gpupact.kube import validation
from gpupact.kube.fields import ContentMemo, string_map
from gpupact.kube.objects import parse_node, parse_pod
from gpupact.kube.pod_affinity import parse_pod_affinity
from gpupact.kube.requests import parse_pod_resources
from gpupact.kube.selectors import parse_node_affinity
from gpupact.kube.taints import parse_tolerations
from gpupact.kube.topology_spread import parse_topology_spread_constraints

SPEC = {
    "containers": [
        {
            "name": "c",
            "resources": {
                "requests": {"cpu": "2", "memory": "16Gi"},
                "limits": {"nvidia.com/gpu": "1"},
            },
        }
    ],
    "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "4"}}}],
    "overhead": {"cpu": "100m"},
    "tolerations": [
        {"key": "workload", "operator": "Equal", "value": "batch", "effect": "NoSchedule"},
        {"key": "gone", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30},
    ],
    "topologySpreadConstraints": [
        {
            "maxSkew": 1,
            "topologyKey": "zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}},
        }
    ],
    "affinity": {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["a"]}]}
                ]
            }
        },
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"app": "web"}},
                    "matchLabelKeys": ["rev"],
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        },
    },
}


def pod_obj(name: str, spec: dict | None = None, **meta: object) -> dict:
    labels = meta.pop("labels", {"app": "web", "rev": "r1"})
    return {
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ml", "labels": labels, **meta},
        "spec": copy.deepcopy(SPEC if spec is None else spec),
    }


def with_spec(**changes: object) -> dict:
    spec = copy.deepcopy(SPEC)
    spec.update(changes)
    return spec


def direct(obj: dict) -> dict:
    """The typed fields as the unmemoised parse functions build them."""
    spec, ns, labels = obj["spec"], obj["metadata"]["namespace"], obj["metadata"]["labels"]
    affinity = spec.get("affinity", {})
    return {
        "resources": parse_pod_resources(spec, ("spec",)),
        "tolerations": tuple(parse_tolerations(spec.get("tolerations"), ("spec", "tolerations"))),
        "topology_spread_constraints": parse_topology_spread_constraints(
            spec.get("topologySpreadConstraints"), ("spec", "topologySpreadConstraints")
        ),
        "node_affinity": parse_node_affinity(
            affinity.get("nodeAffinity"), ("spec", "affinity", "nodeAffinity")
        ),
        "pod_affinity": parse_pod_affinity(
            affinity.get("podAffinity"), ns, labels, ("spec", "affinity", "podAffinity")
        ),
        "pod_anti_affinity": parse_pod_affinity(
            affinity.get("podAntiAffinity"), ns, labels, ("spec", "affinity", "podAntiAffinity")
        ),
    }


def fields_of(pod) -> dict:
    return {name: getattr(pod, name) for name in direct(pod.raw)}


def test_replicas_share_parsed_subtrees_equal_to_a_direct_parse() -> None:
    a, b = parse_pod(pod_obj("a")), parse_pod(pod_obj("b"))
    assert fields_of(a) == direct(a.raw) == fields_of(b)
    for name in ("resources", "tolerations", "topology_spread_constraints", "node_affinity"):
        assert getattr(a, name) is getattr(b, name), name
    assert a.pod_anti_affinity is b.pod_anti_affinity  # same namespace and labels
    assert a.raw is not b.raw and a.name != b.name


def test_pod_affinity_follows_each_pods_namespace_and_labels() -> None:
    a = parse_pod(pod_obj("a"))
    other_ns = pod_obj("b")
    other_ns["metadata"]["namespace"] = "web"
    b = parse_pod(other_ns)
    c = parse_pod(pod_obj("c", labels={"app": "web", "rev": "r2"}))
    assert a.pod_anti_affinity.required[0].namespaces == frozenset({"ml"})
    assert b.pod_anti_affinity.required[0].namespaces == frozenset({"web"})
    # matchLabelKeys merges the pod's own value of "rev"
    assert a.pod_anti_affinity.required[0].selector.matches({"app": "web", "rev": "r1"})
    assert not c.pod_anti_affinity.required[0].selector.matches({"app": "web", "rev": "r1"})
    assert c.pod_anti_affinity.required[0].selector.matches({"app": "web", "rev": "r2"})
    for pod in (a, b, c):
        assert fields_of(pod) == direct(pod.raw)


@pytest.mark.parametrize(
    ("bad", "path", "message"),
    [
        # True == 1 and hash(True) == hash(1): a key by equality would hide this error
        (
            {"key": "gone", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": True},
            ("spec", "tolerations", 1, "tolerationSeconds"),
            "expected an integer, got True",
        ),
        (
            {"key": "gone", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30.0},
            ("spec", "tolerations", 1, "tolerationSeconds"),
            "expected an integer, got 30.0",
        ),
    ],
)
def test_a_value_equal_to_a_good_one_is_still_checked(bad, path, message) -> None:
    parse_pod(pod_obj("good"))  # the good form is memoised first
    spec = with_spec(tolerations=[SPEC["tolerations"][0], bad])
    for _ in range(2):  # failures are not stored: the same error every time
        with pytest.raises(FieldError) as err:
            parse_pod(pod_obj("bad", spec))
        assert (err.value.path, err.value.message) == (path, message)


def test_a_bool_quantity_after_an_int_one_is_still_rejected() -> None:
    good = with_spec(containers=[{"name": "c", "resources": {"requests": {"nvidia.com/gpu": 1}}}])
    bad = with_spec(containers=[{"name": "c", "resources": {"requests": {"nvidia.com/gpu": True}}}])
    assert parse_pod(pod_obj("a", good)).resources.containers[0].requests == {"nvidia.com/gpu": 1}
    with pytest.raises(FieldError) as err:
        parse_pod(pod_obj("b", bad))
    assert err.value.path == ("spec", "containers", 0, "resources", "requests", "nvidia.com/gpu")
    assert err.value.message == "expected a quantity, got True"


def test_key_order_is_part_of_the_key() -> None:
    forward = {"cpu": "1", "memory": "1Gi"}
    backward = {"memory": "1Gi", "cpu": "1"}
    pods = [
        parse_pod(pod_obj(n, with_spec(containers=[{"name": "c", "resources": {"requests": r}}])))
        for n, r in (("f", forward), ("b", backward))
    ]
    assert [list(p.resources.containers[0].requests) for p in pods] == [
        ["cpu", "memory"],
        ["memory", "cpu"],
    ]


def test_errors_keep_their_paths_after_a_hit() -> None:
    parse_pod(pod_obj("good"))
    bad_spread = copy.deepcopy(SPEC["topologySpreadConstraints"]) * 2  # same key and action
    with pytest.raises(FieldError) as err:
        parse_pod(pod_obj("bad", with_spec(topologySpreadConstraints=bad_spread)))
    assert err.value.path == (
        "spec",
        "topologySpreadConstraints",
        0,
        "{topologyKey, whenUnsatisfiable}",
    )


def test_lazy_node_affinity_issues_are_the_same_on_a_hit() -> None:
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "pool", "operator": "Near", "values": ["a"]}]}
                ]
            }
        }
    }
    first, second = (parse_pod(pod_obj(n, with_spec(affinity=affinity))) for n in "ab")
    assert second.node_affinity is first.node_affinity
    issue = first.node_affinity.issues[0]
    assert issue.path[:3] == ("spec", "affinity", "nodeAffinity")


def test_inputs_marshal_refuses_are_parsed_without_the_memo() -> None:
    spec = with_spec(tolerations=[OrderedDict(SPEC["tolerations"][0])])
    odd = parse_pod(pod_obj("odd", spec))
    plain = parse_pod(pod_obj("plain"))
    assert odd.tolerations == plain.tolerations[:1]
    meta_proxy = pod_obj("proxy")
    meta_proxy["spec"]["tolerations"] = [MappingProxyType(SPEC["tolerations"][0])]
    assert parse_pod(meta_proxy).tolerations == plain.tolerations[:1]


def test_node_taints_are_memoised_and_still_validated() -> None:
    def node(name: str, taints: list) -> dict:
        return {"metadata": {"name": name}, "spec": {"taints": taints}}

    taints = [{"key": "gpu", "value": "a100", "effect": "NoSchedule"}]
    a, b = parse_node(node("a", taints)), parse_node(node("b", copy.deepcopy(taints)))
    assert a.taints is b.taints and a.taints[0].key == "gpu"
    with pytest.raises(FieldError) as err:
        parse_node(node("c", taints * 2))
    assert err.value.path == ("spec", "taints", 1)


def test_content_memo_stores_only_successes_and_stays_bounded() -> None:
    calls: list[object] = []

    def parse(obj: object) -> tuple:
        calls.append(obj)
        if obj == "bad":
            raise FieldError((), "bad")
        return (obj,)

    memo = ContentMemo(parse, limit=2)
    assert memo("a") is memo("a") and len(calls) == 1
    for _ in range(2):
        with pytest.raises(FieldError):
            memo("bad")
    assert len(calls) == 3
    memo("b")
    memo("c")  # the third distinct entry clears the memo first
    assert len(memo._items) <= 2
    assert memo(1) == (1,) and memo(True) == (True,) and memo(1.0) == (1.0,)
    assert type(memo(True)[0]) is bool and type(memo(1.0)[0]) is float


def test_string_map_fast_path_matches_the_checked_loop() -> None:
    labels = {"a": "1", "b": "2"}
    out = string_map(labels, ("metadata", "labels"))
    assert out == labels and out is not labels and list(out) == ["a", "b"]
    with pytest.raises(FieldError) as err:
        string_map({"a": "1", "b": 2}, ("metadata", "labels"))
    assert (err.value.path, err.value.message) == (
        ("metadata", "labels", "b"),
        "expected a string, got int",
    )
    with pytest.raises(FieldError) as err:
        string_map({1: "x"}, ("metadata", "labels"))
    assert err.value.message == "expected string keys, got int"
    assert string_map(None, ("x",)) == {}


def test_cached_label_checks_hand_out_fresh_lists() -> None:
    errors = validation.label_key_errors("bad key")
    assert errors
    errors.clear()
    assert validation.label_key_errors("bad key")
    assert validation.label_value_errors("ok") == []
    assert not validation.is_qualified_name("a/b/c")
    with pytest.raises(FieldError) as err:
        validation.check_label_value("-x", ("v",))
    assert err.value.path == ("v",) and "a valid label" in err.value.message
