"""Label selectors, node selectors, node affinity: upstream semantics and bad input."""

from __future__ import annotations

import pytest

from gpupact.errors import FieldError
from gpupact.kube.selectors import (
    FIELD_VALUE_INVALID,
    FIELD_VALUE_NOT_SUPPORTED,
    GT,
    LT,
    NodeAffinity,
    NodeSelectorTerm,
    RequiredNodeAffinity,
    Requirement,
    SelectorError,
    Subscript,
    label_key_errors,
    label_selector_matches,
    label_value_errors,
    match_node_selector_terms,
    node_selector_errors,
    node_selector_requirements_as_selector,
    parse_int64,
    parse_label_selector,
    parse_node_affinity,
    parse_node_selector,
    parse_preferred_scheduling_terms,
    preferred_node_affinity_score,
    upstream_field_path,
)

KEY_NAME_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


def expr(key: str, op: str, *values: str) -> dict:
    out: dict = {"key": key, "operator": op}
    if values:
        out["values"] = list(values)
    return out


def node_selector(*terms: dict) -> dict:
    return {"nodeSelectorTerms": list(terms)}


def name_in(*names: str) -> dict:
    return {"matchFields": [expr("metadata.name", "In", *names)]}


def labels_term(*exprs: dict) -> dict:
    return {"matchExpressions": list(exprs)}


# ---- label key / value rules ------------------------------------------------------------------


def test_label_key_rules_match_upstream_messages() -> None:
    assert label_key_errors("nvidia.com/gpu.product") == []
    assert label_key_errors("invalid key") == [KEY_NAME_MSG]
    assert label_key_errors("/name") == ["prefix part must be non-empty"]
    assert label_key_errors("a/") == ["name part must be non-empty", KEY_NAME_MSG]
    assert label_key_errors("x" * 64) == ["name part must be no more than 63 bytes"]
    assert label_key_errors("Upper.com/n")[0].startswith("prefix part a lowercase RFC 1123")
    assert label_key_errors("a/b/c")[0].startswith("a valid label key must consist")
    assert label_key_errors("name\n") == [KEY_NAME_MSG]  # Go's `$` is end of text only


def test_label_value_rules() -> None:
    assert label_value_errors("") == []
    assert label_value_errors("A100-80GB") == []
    assert label_value_errors("-1")[0].startswith("a valid label must be an empty string")
    assert label_value_errors("v" * 64)[0] == "must be no more than 63 bytes"


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("0204", 204),
        ("+5", 5),
        ("-5", -5),
        ("9223372036854775807", 2**63 - 1),
        ("9223372036854775808", None),
        ("-9223372036854775809", None),
        ("1_000", None),
        (" 1", None),
        ("1.0", None),
        ("", None),
        ("+", None),
        ("١٢", None),  # Python int() would accept Arabic-Indic digits; Go does not
    ],
)
def test_parse_int64_follows_go_parseint(text: str, number: int | None) -> None:
    assert parse_int64(text) == number


# ---- requirement matching -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "values", "labels", "want"),
    [
        ("In", ("a", "b"), {"k": "a"}, True),
        ("In", ("a",), {}, False),
        ("NotIn", ("a",), {}, True),
        ("NotIn", ("a",), {"k": "a"}, False),
        ("Exists", (), {"k": ""}, True),
        ("DoesNotExist", (), {"k": ""}, False),
        ("DoesNotExist", (), {}, True),
        (GT, ("3",), {"k": "4"}, True),
        (GT, ("3",), {"k": "3"}, False),
        (GT, ("3",), {"k": "four"}, False),
        (GT, ("3",), {}, False),
        (LT, ("3",), {"k": "-7"}, True),
        (LT, ("3",), {"k": "03"}, False),
        (GT, ("x",), {"k": "9"}, False),  # unusable bound never matches
        ("Bogus", ("a",), {"k": "a"}, False),
    ],
)
def test_requirement_matches(op: str, values: tuple, labels: dict, want: bool) -> None:
    assert Requirement("k", op, values).matches(labels) is want


def test_requirement_string_like_upstream() -> None:
    assert str(Requirement("foo", "In", ("baz", "bar"))) == "foo in (bar,baz)"
    assert str(Requirement("foo", "NotIn", ("a",))) == "foo notin (a)"
    assert str(Requirement("foo", GT, ("1",))) == "foo>1"
    assert str(Requirement("bar", LT, ("7",))) == "bar<7"
    assert str(Requirement("foo", "Exists")) == "foo"
    assert str(Requirement("foo", "DoesNotExist")) == "!foo"


# ---- nodeSelectorRequirementsAsSelector (rest of the upstream table) ----------------------------


def test_requirements_as_selector_none_and_empty_are_nothing() -> None:
    assert node_selector_requirements_as_selector(None).nothing
    assert node_selector_requirements_as_selector([]).nothing
    assert not node_selector_requirements_as_selector([]).matches({})


def test_requirements_as_selector_sorted_by_key() -> None:
    sel = node_selector_requirements_as_selector(
        [expr("zone", "In", "b", "a"), expr("bar", LT, "7"), expr("foo", GT, "1")]
    )
    assert str(sel) == "bar<7,foo>1,zone in (a,b)"
    assert sel.matches({"zone": "a", "bar": "6", "foo": "2"})
    assert not sel.matches({"zone": "a", "bar": "7", "foo": "2"})


def test_requirements_as_selector_errors_with_paths() -> None:
    with pytest.raises(SelectorError) as info:
        node_selector_requirements_as_selector(
            [expr("foo", GT, "1", "2"), expr("bar", GT, "-1"), expr("baz", "Has", "5")],
            ("root",),
        )
    got = [(i.type, i.field, i.detail) for i in info.value.issues]
    assert got == [
        (
            FIELD_VALUE_INVALID,
            "root[0].values",
            "for 'Gt', 'Lt' operators, exactly one value is required",
        ),
        (FIELD_VALUE_INVALID, "root[1].values[0][bar]", label_value_errors("-1")[0]),
        (
            FIELD_VALUE_NOT_SUPPORTED,
            "root[2].operator",
            'supported values: "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"',
        ),
    ]


def test_gt_value_must_be_integer() -> None:
    with pytest.raises(SelectorError) as info:
        node_selector_requirements_as_selector([expr("foo", LT, "ten")], ("root",))
    (issue,) = info.value.issues
    assert issue.field == "root[0].values[0]"
    assert issue.detail == "for 'Gt', 'Lt' operators, the value must be an integer"


def test_in_without_values_reports_null_bad_value() -> None:
    with pytest.raises(SelectorError) as info:
        node_selector_requirements_as_selector([expr("foo", "In")], ("root",))
    assert str(info.value) == (
        "root[0].values: Invalid value: null: "
        "for 'in', 'notin' operators, values set can't be empty"
    )


# ---- NodeSelector / LazyErrorNodeSelector -------------------------------------------------------


def test_node_selector_terms_are_ored_and_expressions_anded() -> None:
    sel = parse_node_selector(
        node_selector(
            labels_term(expr("gpu", "Exists"), expr("gpu", "NotIn", "T4")),
            name_in("spare-1"),
        )
    )
    assert sel is not None
    assert sel.matches("n1", {"gpu": "A100"})
    assert not sel.matches("n1", {"gpu": "T4"})
    assert sel.matches("spare-1", {"gpu": "T4"})


def test_node_matches_field_selector_but_not_labels() -> None:
    term = {"matchExpressions": [expr("label_1", "In", "label_1_val")], **name_in("host_1")}
    sel = parse_node_selector(node_selector(term))
    assert not match_node_selector_terms(sel, "host_1", {})
    assert match_node_selector_terms(sel, "host_1", {"label_1": "label_1_val"})


def test_nil_node_nil_selector_and_empty_terms_match_nothing() -> None:
    assert not match_node_selector_terms(None, "n", {})
    sel = parse_node_selector(node_selector(labels_term(expr("a", "Exists"))))
    assert not match_node_selector_terms(sel, None, {"a": "1"})
    for obj in ({}, {"nodeSelectorTerms": None}, node_selector(), node_selector({})):
        assert not match_node_selector_terms(parse_node_selector(obj), "n", {"a": "1"})
    empty_exprs = node_selector({"matchExpressions": [], "matchFields": []})
    assert not match_node_selector_terms(parse_node_selector(empty_exprs), "n", {})


def test_erroring_term_never_matches_but_others_still_can() -> None:
    sel = parse_node_selector(
        node_selector(labels_term(expr("invalid key", "Exists")), labels_term(expr("a", "Exists")))
    )
    assert sel is not None
    assert sel.matches("n", {"a": "1", "invalid key": "x"})
    assert not sel.matches("n", {"invalid key": "x"})
    (issue,) = node_selector_errors(sel)
    assert (issue.field, issue.detail) == (
        "nodeSelectorTerms[0].matchExpressions[0].key",
        KEY_NAME_MSG,
    )


def test_invalid_label_value_in_term_never_matches() -> None:
    sel = parse_node_selector(
        node_selector(labels_term(expr("foo", "NotIn", "invalid value: ___@#$%^")))
    )
    assert not match_node_selector_terms(sel, "", {"foo": "bar"})


def test_match_fields_semantics() -> None:
    not_in = parse_node_selector(
        node_selector({"matchFields": [expr("metadata.name", "NotIn", "a")]})
    )
    assert not_in is not None
    assert not_in.matches("b", {}) and not not_in.matches("a", {})
    # a node label called metadata.name is not the node's name
    by_name = parse_node_selector(node_selector(name_in("host_1")))
    assert not by_name.matches("not_host_1", {"metadata.name": "host_1"})
    # a matchExpressions key metadata.name reads labels, not the name
    by_label = parse_node_selector(
        node_selector(labels_term(expr("metadata.name", "In", "host_1")))
    )
    assert not by_label.matches("host_1", {})
    # upstream ignores matchFields for a node without a name (empty field set)
    assert by_name.matches("", {})
    # any other field key reads as "" (nodes expose only metadata.name)
    other = parse_node_selector(
        node_selector({"matchFields": [expr("spec.unschedulable", "In", "")]})
    )
    assert other.matches("n", {})


def test_match_fields_errors() -> None:
    sel = parse_node_selector(
        node_selector(
            name_in("h1", "h2"),
            {"matchFields": [expr("metadata.name", "Exists")]},
            {"matchFields": [expr("metadata.name", "NotIn")]},
        )
    )
    got = [(i.type, i.field, i.detail) for i in node_selector_errors(sel)]
    assert got == [
        (
            FIELD_VALUE_INVALID,
            "nodeSelectorTerms[0].matchFields[0].values",
            "must have one element",
        ),
        (
            FIELD_VALUE_NOT_SUPPORTED,
            "nodeSelectorTerms[1].matchFields[0].operator",
            'supported values: "In", "NotIn"',
        ),
        (
            FIELD_VALUE_INVALID,
            "nodeSelectorTerms[2].matchFields[0].values",
            "must have one element",
        ),
    ]
    assert not sel.matches("h1", {})


def test_strict_parse_raises_all_issues_with_prefix() -> None:
    obj = node_selector(name_in("h1", "h2"), labels_term(expr("invalid key", "In", "v")))
    with pytest.raises(SelectorError) as info:
        parse_node_selector(obj, ("spec", "required"), strict=True)
    err = info.value
    assert isinstance(err, FieldError)
    assert err.path == ("spec", "required", "nodeSelectorTerms", 0, "matchFields", 0, "values")
    assert [i.field for i in err.issues] == [
        "spec.required.nodeSelectorTerms[0].matchFields[0].values",
        "spec.required.nodeSelectorTerms[1].matchExpressions[0].key",
    ]
    assert str(err).startswith(
        'spec.required.nodeSelectorTerms[0].matchFields[0].values: Invalid value: ["h1","h2"]: '
        "must have one element; "
    )
    assert err.prefixed(("x",)).issues[0].field.startswith("x.spec.required")


def test_upstream_field_path_renders_map_keys_as_subscripts() -> None:
    assert (
        upstream_field_path(("root", 0, "values", 0, Subscript("a.b/c")))
        == "root[0].values[0][a.b/c]"
    )
    assert upstream_field_path((0, "matchFields")) == "[0].matchFields"


# ---- required node affinity (pod.spec.nodeSelector AND affinity) --------------------------------


def _required(node_sel: dict | None, required: dict | None) -> RequiredNodeAffinity:
    aff = None
    if required is not None:
        aff = parse_node_affinity({"requiredDuringSchedulingIgnoredDuringExecution": required})
    return RequiredNodeAffinity(node_sel, aff)


def test_required_affinity_node_selector_map() -> None:
    assert _required(None, None).matches("", {})
    assert _required({}, None).matches("", {})
    assert not _required({"foo": "bar"}, None).matches("", {})
    assert _required({"foo": "bar"}, None).matches("", {"foo": "bar", "baz": "blah"})
    assert not _required({"foo": "bar", "baz": "blah"}, None).matches("", {"foo": "bar"})
    assert _required({"empty": ""}, None).matches("", {"empty": ""})
    assert not _required({"empty": ""}, None).matches("", {})


def test_required_affinity_ands_node_selector_with_terms() -> None:
    terms = node_selector(labels_term(expr("foo", "Exists")))
    assert _required({"foo": "bar"}, terms).matches("", {"foo": "bar"})
    assert not _required({"foo": "bar"}, terms).matches("", {"foo": "barrrrrr"})
    assert not _required(None, node_selector()).matches("", {"foo": "bar"})
    assert not _required(None, {"nodeSelectorTerms": None}).matches("", {"foo": "bar"})
    # affinity without a required selector constrains nothing
    assert RequiredNodeAffinity(None, parse_node_affinity({})).matches("", {"foo": "bar"})


def test_required_affinity_multiple_terms_ored() -> None:
    terms = node_selector(
        labels_term(expr("foo", "In", "bar", "value2")),
        labels_term(expr("diffkey", "In", "wrong", "value2")),
    )
    assert _required(None, terms).matches("", {"foo": "bar"})
    anded = node_selector(labels_term(expr("GPU", "Exists"), expr("GPU", "In", "AMD", "INTER")))
    assert not _required(None, anded).matches("", {"GPU": "NVIDIA-GRID-K1"})


def test_required_affinity_is_hashable_for_caching() -> None:
    a = _required({"b": "2", "a": "1"}, node_selector(labels_term(expr("x", "In", "1"))))
    b = _required({"a": "1", "b": "2"}, node_selector(labels_term(expr("x", "In", "1"))))
    assert a == b and hash(a) == hash(b)


# ---- preferred terms --------------------------------------------------------------------------


def test_preferred_score_sums_matching_weights() -> None:
    aff = parse_node_affinity(
        {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 5, "preference": name_in("host_1")},
                {"weight": 7, "preference": labels_term(expr("unknown", "In", "v"))},
                {"weight": 11, "preference": labels_term(expr("label_1", "In", "label_1_val"))},
                {"weight": 3, "preference": {}},
            ]
        }
    )
    assert preferred_node_affinity_score(aff, "host_1", {"label_1": "label_1_val"}) == 16
    assert preferred_node_affinity_score(aff, "host_2", {}) == 0
    assert preferred_node_affinity_score(None, "host_1", {}) == 0


def test_weight_zero_term_is_not_parsed_for_errors() -> None:
    terms = parse_preferred_scheduling_terms([{"weight": 0, "preference": name_in("h1", "h2")}])
    aff = NodeAffinity(None, terms)
    assert aff.preferred_issues == ()
    assert preferred_node_affinity_score(aff, "h1", {}) == 0


def test_preferred_issue_paths_follow_upstream() -> None:
    aff = parse_node_affinity(
        {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "preference": name_in("h1", "h2")},
                {"weight": 2, "preference": labels_term(expr("a", "Exists"))},
            ]
        }
    )
    assert [i.field for i in aff.preferred_issues] == [
        "preferredDuringSchedulingIgnoredDuringExecution[0].matchFields[0].values"
    ]
    # the valid term still scores; the caller decides what the error means (PreScore Error)
    assert preferred_node_affinity_score(aff, "h1", {"a": ""}) == 2
    with pytest.raises(SelectorError):
        aff.validate()


# ---- metav1.LabelSelector ---------------------------------------------------------------------


def test_label_selector_nil_vs_empty() -> None:
    assert parse_label_selector(None) is None
    assert not label_selector_matches(None, {"a": "1"})
    everything = parse_label_selector({})
    assert label_selector_matches(everything, {}) and label_selector_matches(everything, {"a": "1"})
    also_everything = parse_label_selector({"matchLabels": None, "matchExpressions": []})
    assert also_everything is not None and also_everything.matches({})


def test_label_selector_match_labels_and_expressions() -> None:
    sel = parse_label_selector(
        {
            "matchLabels": {"app": "infer", "tier": "gpu"},
            "matchExpressions": [
                expr("class", "In", "online-infer", "batch"),
                expr("canary", "DoesNotExist"),
                expr("zone", "NotIn", "z9"),
                expr("team", "Exists"),
            ],
        }
    )
    assert sel is not None
    good = {"app": "infer", "tier": "gpu", "class": "batch", "team": "ml"}
    assert sel.matches(good)
    assert not sel.matches({**good, "canary": "1"})
    assert not sel.matches({**good, "zone": "z9"})
    assert not sel.matches({**good, "app": "train"})
    assert (
        str(sel) == "app=infer,!canary,class in (batch,online-infer),team,tier=gpu,zone notin (z9)"
    )


def test_label_selector_rejects_node_only_operators_and_bad_keys() -> None:
    with pytest.raises(SelectorError) as info:
        parse_label_selector(
            {
                "matchLabels": {"bad key": "v", "ok": "bad value!"},
                "matchExpressions": [expr("n", GT, "1"), expr("e", "Exists", "x")],
            },
            ("spec", "selector"),
        )
    got = [(i.field, i.detail) for i in info.value.issues]
    assert got[0] == ("spec.selector.matchLabels[bad key]", KEY_NAME_MSG)
    assert got[1][0] == "spec.selector.matchLabels[ok]"
    assert got[1][1].startswith("a valid label must be an empty string")
    assert got[2] == (
        "spec.selector.matchExpressions[0].operator",
        '"Gt" is not a valid label selector operator',
    )
    assert got[3] == (
        "spec.selector.matchExpressions[1].values",
        "values set must be empty for exists and does not exist",
    )


# ---- malformed input: FieldError, never KeyError/TypeError -----------------------------------


@pytest.mark.parametrize(
    ("obj", "path"),
    [
        ("not a dict", ()),
        ({"nodeSelectorTerms": "x"}, ("nodeSelectorTerms",)),
        ({"nodeSelectorTerms": [5]}, ("nodeSelectorTerms", 0)),
        (
            {"nodeSelectorTerms": [{"matchExpression": []}]},
            ("nodeSelectorTerms", 0, "matchExpression"),
        ),
        (
            {"nodeSelectorTerms": [{"matchExpressions": [{"key": 1}]}]},
            ("nodeSelectorTerms", 0, "matchExpressions", 0, "key"),
        ),
        (
            {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "a", "operator": "In", "values": "v"}]}
                ]
            },
            ("nodeSelectorTerms", 0, "matchExpressions", 0, "values"),
        ),
        (
            {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "a", "operator": "In", "values": [1]}]}
                ]
            },
            ("nodeSelectorTerms", 0, "matchFields", 0, "values", 0),
        ),
    ],
)
def test_malformed_node_selector(obj: object, path: tuple) -> None:
    with pytest.raises(FieldError) as info:
        parse_node_selector(obj)  # type: ignore[arg-type]
    assert not isinstance(info.value, SelectorError)
    assert info.value.path == path


@pytest.mark.parametrize(
    ("obj", "path"),
    [
        ([], ()),
        ({"matchLabels": ["a"]}, ("matchLabels",)),
        ({"matchLabels": {"a": 1}}, ("matchLabels", "a")),
        ({"matchExpressions": {}}, ("matchExpressions",)),
        ({"matchExpressions": [{"key": "a", "operator": 3}]}, ("matchExpressions", 0, "operator")),
        ({"selector": {}}, ("selector",)),
    ],
)
def test_malformed_label_selector(obj: object, path: tuple) -> None:
    with pytest.raises(FieldError) as info:
        parse_label_selector(obj)  # type: ignore[arg-type]
    assert info.value.path == path


@pytest.mark.parametrize("weight", [True, 1.5, "1", 2**31])
def test_malformed_preferred_weight(weight: object) -> None:
    with pytest.raises(FieldError) as info:
        parse_node_affinity(
            {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": weight, "preference": {}}
                ]
            }
        )
    assert info.value.path == ("preferredDuringSchedulingIgnoredDuringExecution", 0, "weight")


def test_malformed_preference_and_unknown_affinity_field() -> None:
    with pytest.raises(FieldError) as info:
        parse_node_affinity(
            {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": []}]}
        )
    assert info.value.path == ("preferredDuringSchedulingIgnoredDuringExecution", 0, "preference")
    with pytest.raises(FieldError) as info:
        parse_node_affinity({"requiredDuringScheduling": {}})
    assert info.value.path == ("requiredDuringScheduling",)


def test_missing_key_and_operator_are_go_zero_values() -> None:
    sel = parse_node_selector(node_selector(labels_term({})))
    (issue,) = node_selector_errors(sel)
    assert issue.type == FIELD_VALUE_NOT_SUPPORTED and issue.bad_value == ""
    sel = parse_node_selector(node_selector(labels_term({"operator": "Exists"})))
    assert node_selector_errors(sel)[0].detail == "name part must be non-empty; " + KEY_NAME_MSG


def test_term_objects_are_typed_and_frozen() -> None:
    sel = parse_node_selector(node_selector(labels_term(expr("a", "In", "1"))))
    term = sel.terms[0]
    assert isinstance(term, NodeSelectorTerm)
    assert term.match_expressions == (Requirement("a", "In", ("1",)),)
    with pytest.raises(AttributeError):
        term.issues = ()  # type: ignore[misc]
