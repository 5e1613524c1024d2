"""Pod affinity / anti-affinity terms parsed once onto the Pod: defaults, matching, the merge
of matchLabelKeys / mismatchLabelKeys, and the API server's validation."""

from __future__ import annotations

from typing import Any

import pytest

from gpupact.errors import FieldError
from gpupact.kube.objects import Pod, parse_pod
from gpupact.kube.pod_affinity import (
    PodAffinity,
    PodAffinityTerm,
    WeightedPodAffinityTerm,
    parse_pod_affinity,
    parse_pod_affinity_term,
    pod_affinity_term,
)
from gpupact.kube.selectors import IN, NOT_IN, LabelSelector, Requirement

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
NS_LABEL = "kubernetes.io/metadata.name"


def term(key: str = "zone", **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"topologyKey": key, "labelSelector": {"matchLabels": {"app": "db"}}}
    body.update(fields)
    return body


def pod_with(affinity: dict[str, Any], *, labels=None, namespace: str = "ml") -> Pod:
    return parse_pod(
        {
            "metadata": {"name": "p", "namespace": namespace, "labels": labels or {}},
            "spec": {"containers": [], "affinity": affinity},
        }
    )


def ns(name: str, **labels: str) -> dict[str, str]:
    return {NS_LABEL: name, **labels}


# --- Pod fields ------------------------------------------------------------------------------


def test_pod_carries_typed_terms():
    pod = pod_with(
        {
            "podAffinity": {
                REQUIRED: [term()],
                PREFERRED: [{"weight": 7, "podAffinityTerm": term("host")}],
            },
            "podAntiAffinity": {REQUIRED: [term("kubernetes.io/hostname")]},
        }
    )
    assert pod.has_inter_pod_affinity
    assert isinstance(pod.pod_affinity, PodAffinity)
    (hard,) = pod.pod_affinity.required
    assert hard.topology_key == "zone"
    assert hard.namespaces == frozenset({"ml"})  # the owner's namespace by default
    (soft,) = pod.pod_affinity.preferred
    assert soft == WeightedPodAffinityTerm(soft.term, 7)
    assert soft.term.topology_key == "host"
    assert pod.pod_anti_affinity is not None
    assert pod.pod_anti_affinity.required[0].topology_key == "kubernetes.io/hostname"
    assert pod.pod_anti_affinity.preferred == ()


@pytest.mark.parametrize(
    "affinity",
    [{}, {"podAffinity": {}}, {"podAffinity": None, "podAntiAffinity": {REQUIRED: []}}],
)
def test_no_terms_read_as_none(affinity):
    pod = pod_with(affinity)
    assert pod.pod_affinity is None and pod.pod_anti_affinity is None
    assert not pod.has_inter_pod_affinity


def test_terms_are_hashable_and_compare_by_value():
    a = pod_with({"podAffinity": {REQUIRED: [term()]}})
    b = pod_with({"podAffinity": {REQUIRED: [term()]}})
    assert a.pod_affinity == b.pod_affinity
    assert hash(a.pod_affinity) == hash(b.pod_affinity)


# --- matching ---------------------------------------------------------------------------------


def test_namespaces_and_namespace_selector():
    own = parse_pod_affinity_term(term(), "ml", {})
    assert own.matches("ml", {"app": "db"}, ns("ml"))
    assert not own.matches("web", {"app": "db"}, ns("web"))
    assert not own.matches("ml", {"app": "web"}, ns("ml"))

    listed = parse_pod_affinity_term(term(namespaces=["a", "b"]), "ml", {})
    assert listed.namespaces == frozenset({"a", "b"})
    assert listed.matches("b", {"app": "db"}, ns("b"))
    assert not listed.matches("ml", {"app": "db"}, ns("ml"))

    every = parse_pod_affinity_term(term(namespaceSelector={}), "ml", {})
    assert every.namespaces == frozenset()
    assert every.matches("anything", {"app": "db"}, ns("anything"))

    team = parse_pod_affinity_term(
        term(namespaceSelector={"matchLabels": {"team": "x"}}, namespaces=["ml"]), "ml", {}
    )
    assert team.matches("ml", {"app": "db"}, ns("ml"))
    assert team.matches("other", {"app": "db"}, ns("other", team="x"))
    assert not team.matches("other", {"app": "db"}, ns("other", team="y"))


def test_missing_label_selector_selects_no_pod_and_empty_selects_all():
    none = parse_pod_affinity_term({"topologyKey": "zone"}, "ml", {})
    assert none.selector is None
    assert not none.matches("ml", {}, ns("ml"))
    everything = parse_pod_affinity_term({"topologyKey": "zone", "labelSelector": {}}, "ml", {})
    assert everything.matches("ml", {}, ns("ml"))


def test_built_in_code_with_the_same_default():
    selector = LabelSelector((("app", "db"),))
    built = pod_affinity_term("zone", selector, owner_namespace="ml")
    assert built == PodAffinityTerm("zone", selector, frozenset({"ml"}))
    assert built == parse_pod_affinity_term(term(), "ml", {})


# --- matchLabelKeys / mismatchLabelKeys ---------------------------------------------------------


def test_label_keys_are_merged_with_the_owners_values():
    owner = {"rev": "7", "tenant": "t1"}
    got = parse_pod_affinity_term(
        term(matchLabelKeys=["rev", "absent"], mismatchLabelKeys=["tenant"]), "ml", owner
    )
    assert got.selector is not None
    assert got.selector.match_expressions == (
        Requirement("rev", IN, ("7",)),
        Requirement("tenant", NOT_IN, ("t1",)),
    )
    assert got.matches("ml", {"app": "db", "rev": "7", "tenant": "t2"}, ns("ml"))
    assert not got.matches("ml", {"app": "db", "rev": "6", "tenant": "t2"}, ns("ml"))
    assert not got.matches("ml", {"app": "db", "rev": "7", "tenant": "t1"}, ns("ml"))


def test_an_already_merged_selector_from_the_api_server_is_kept_as_is():
    owner = {"rev": "7"}
    stored = term(
        labelSelector={
            "matchLabels": {"app": "db"},
            "matchExpressions": [{"key": "rev", "operator": "In", "values": ["7"]}],
        },
        matchLabelKeys=["rev"],
    )
    got = parse_pod_affinity_term(stored, "ml", owner)
    assert got == parse_pod_affinity_term(term(matchLabelKeys=["rev"]), "ml", owner)
    assert got.selector is not None and len(got.selector.match_expressions) == 1


# --- validation ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "path", "text"),
    [
        ({"labelSelector": {}}, ("topologyKey",), "can not be empty"),
        (term("bad key!"), ("topologyKey",), "name part must consist"),
        ("zone", (), "expected an object"),
        (term(namespaces="ml"), ("namespaces",), "expected a list"),
        (term(namespaces=["Not_A_Namespace"]), ("namespaces", 0), "RFC 1123 label"),
        (term(namespaces=[3]), ("namespaces", 0), "expected a string"),
        (
            term(labelSelector={"matchExpressions": [{"key": "a", "operator": "Gt"}]}),
            ("labelSelector", "matchExpressions", 0, "operator"),
            "not a valid label selector operator",
        ),
        (
            term(namespaceSelector={"matchLabels": {"bad key!": "x"}}),
            ("namespaceSelector", "matchLabels", "bad key!"),
            "",
        ),
        (
            {"topologyKey": "zone", "matchLabelKeys": ["rev"]},
            ("matchLabelKeys",),
            "must not be specified when labelSelector is not set",
        ),
        (
            {"topologyKey": "zone", "mismatchLabelKeys": ["rev"]},
            ("mismatchLabelKeys",),
            "must not be specified when labelSelector is not set",
        ),
        (term(matchLabelKeys=["bad key!"]), ("matchLabelKeys", 0), "name part"),
        (term(mismatchLabelKeys=[1]), ("mismatchLabelKeys", 0), "expected a string"),
        (
            term(matchLabelKeys=["a", "rev"], mismatchLabelKeys=["rev"]),
            ("matchLabelKeys", 1),
            "exists in both matchLabelKeys and mismatchLabelKeys",
        ),
        (
            term(matchLabelKeys=["app"]),
            ("matchLabelKeys", 0),
            "exists in both matchLabelKeys and labelSelector",
        ),
        (
            term(
                labelSelector={"matchExpressions": [{"key": "rev", "operator": "Exists"}]},
                matchLabelKeys=["rev"],
            ),
            ("matchLabelKeys", 0),
            "exists in both matchLabelKeys and labelSelector",
        ),
    ],
)
def test_bad_terms(body, path, text):
    with pytest.raises(FieldError) as err:
        parse_pod_affinity_term(body, "ml", {"rev": "7", "app": "db"}, ("t",))
    assert err.value.path == ("t", *path)
    assert text in str(err.value)


def test_a_mismatch_key_may_also_be_in_the_selector():
    got = parse_pod_affinity_term(term(mismatchLabelKeys=["app"]), "ml", {"app": "web"})
    assert got.matches("ml", {"app": "db"}, ns("ml"))


@pytest.mark.parametrize(
    ("body", "path", "text"),
    [
        ({REQUIRED: "x"}, (REQUIRED,), "expected a list"),
        ({REQUIRED: [term(""), term()]}, (REQUIRED, 0, "topologyKey"), "can not be empty"),
        (
            {PREFERRED: [{"weight": 0, "podAffinityTerm": term()}]},
            (PREFERRED, 0, "weight"),
            "1-100",
        ),
        ({PREFERRED: [{"weight": 101, "podAffinityTerm": term()}]}, (PREFERRED, 0, "weight"), ""),
        ({PREFERRED: [{"weight": True, "podAffinityTerm": term()}]}, (PREFERRED, 0, "weight"), ""),
        ({PREFERRED: [{"podAffinityTerm": term()}]}, (PREFERRED, 0, "weight"), "1-100"),
        (
            {PREFERRED: [{"weight": 5, "podAffinityTerm": {"labelSelector": {}}}]},
            (PREFERRED, 0, "podAffinityTerm", "topologyKey"),
            "",
        ),
        ({PREFERRED: ["x"]}, (PREFERRED, 0), "expected an object"),
        ([], (), "expected an object"),
    ],
)
def test_bad_affinity(body, path, text):
    with pytest.raises(FieldError) as err:
        parse_pod_affinity(body, "ml", {}, ("a",))
    assert err.value.path == ("a", *path)
    assert text in str(err.value)


@pytest.mark.parametrize("kind", ["podAffinity", "podAntiAffinity"])
def test_parse_pod_reports_the_full_path(kind):
    with pytest.raises(FieldError) as err:
        pod_with({kind: {REQUIRED: [{"labelSelector": {}}]}})
    assert err.value.path == ("spec", "affinity", kind, REQUIRED, 0, "topologyKey")
