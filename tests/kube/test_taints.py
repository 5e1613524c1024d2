"""Unit tests for gpupact.kube.taints (matching, plugin Filter/Score, parsing and validation)."""

from __future__ import annotations

import json

import pytest

from conformance.vectors import conformance_dir
from gpupact.errors import FieldError
from gpupact.kube.status import Code
from gpupact.kube.taints import (
    NO_EXECUTE,
    NO_SCHEDULE,
    PREFER_NO_SCHEDULE,
    REASON_UNTOLERATED,
    Taint,
    Toleration,
    compare_numeric_values,
    count_intolerable_prefer_no_schedule,
    do_not_schedule_taint,
    find_untolerated_taint,
    parse_canonical_int64,
    parse_taint,
    parse_taints,
    parse_toleration,
    parse_tolerations,
    prefer_no_schedule_tolerations,
    taint_toleration_filter,
    taint_toleration_scores,
    tolerates,
)

GPU = Taint("nvidia.com/gpu", "present", NO_SCHEDULE)

# --- Taint ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("taint", "text"),
    [
        (Taint("k", "v", NO_SCHEDULE), "k=v:NoSchedule"),
        (Taint("k", "v"), "k=v:"),
        (Taint("k", "", NO_EXECUTE), "k:NoExecute"),
        (Taint("k"), "k"),
    ],
)
def test_taint_str_like_upstream_to_string(taint: Taint, text: str) -> None:
    assert str(taint) == text


def test_taint_matches_by_key_and_effect_only() -> None:
    assert Taint("k", "a", NO_SCHEDULE).matches(Taint("k", "b", NO_SCHEDULE))
    assert not Taint("k", "a", NO_SCHEDULE).matches(Taint("k", "a", NO_EXECUTE))


def test_objects_are_hashable_and_numeric_value_is_not_part_of_equality() -> None:
    assert {Taint("k", "5", NO_SCHEDULE), Taint("k", "5", NO_SCHEDULE)} == {
        Taint("k", "5", NO_SCHEDULE)
    }
    assert Taint("k", "5").numeric_value == 5
    assert Toleration("k", "Gt", "7").numeric_value == 7
    assert Toleration("k", "Equal", "7").numeric_value is None  # only Lt/Gt need it


# --- tolerates ------------------------------------------------------------------------------


def test_empty_operator_means_equal() -> None:
    assert tolerates(Toleration("nvidia.com/gpu", "", "present"), GPU)
    assert not tolerates(Toleration("nvidia.com/gpu", "", "absent"), GPU)


def test_exists_with_empty_key_matches_every_key_and_value() -> None:
    assert tolerates(Toleration("", "Exists"), GPU)
    assert tolerates(Toleration("", "Exists"), Taint("other", "x", PREFER_NO_SCHEDULE))


def test_empty_effect_matches_every_effect_but_a_set_effect_must_equal() -> None:
    assert tolerates(Toleration("nvidia.com/gpu", "Exists"), GPU)
    assert not tolerates(Toleration("nvidia.com/gpu", "Exists", effect=NO_EXECUTE), GPU)


def test_key_must_equal_when_set() -> None:
    assert not tolerates(Toleration("amd.com/gpu", "Exists"), GPU)


def test_unknown_operator_never_matches() -> None:
    assert not tolerates(Toleration("nvidia.com/gpu", "In", "present"), GPU)


def test_lt_gt_only_with_feature_enabled() -> None:
    sla = Taint("sla", "950", NO_SCHEDULE)
    gt = Toleration("sla", "Gt", "750")
    assert tolerates(gt, sla)
    assert not tolerates(gt, sla, enable_comparison_operators=False)
    assert tolerates(Toleration("sla", "Lt", "951"), sla)
    assert not tolerates(Toleration("sla", "Lt", "950"), sla)


def test_lt_gt_with_non_numeric_taint_value_does_not_match() -> None:
    assert not tolerates(Toleration("sla", "Gt", "1"), Taint("sla", "high", NO_SCHEDULE))


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("0", 0),
        ("7", 7),
        ("-7", -7),
        ("9223372036854775807", 2**63 - 1),
        ("-9223372036854775808", -(2**63)),
        ("9223372036854775808", None),  # int64 overflow
        ("-9223372036854775809", None),
        ("", None),
        ("-", None),
        ("-0", None),
        ("00", None),
        ("0100", None),
        ("+1", None),
        (" 1", None),
        ("1 ", None),
        ("1\n", None),
        ("1_000", None),
        ("1.0", None),
        ("1e3", None),
        ("0x10", None),
        ("١٢", None),  # non-ASCII digits (int() would accept them)
        ("9" * 5000, None),  # no int() on huge strings
    ],
)
def test_parse_canonical_int64(text: str, number: int | None) -> None:
    assert parse_canonical_int64(text) == number


def test_compare_numeric_values_only_for_lt_gt() -> None:
    assert compare_numeric_values("1", "2", "Gt")
    assert compare_numeric_values("2", "1", "Lt")
    assert not compare_numeric_values("1", "1", "Gt")
    assert not compare_numeric_values("1", "2", "Equal")
    assert not compare_numeric_values("1", "2", "Exists")
    assert not compare_numeric_values("01", "2", "Gt")


# --- find_untolerated_taint / Filter ----------------------------------------------------------


def test_find_untolerated_taint_returns_first_in_node_order() -> None:
    a = Taint("a", "", NO_SCHEDULE)
    b = Taint("b", "", NO_SCHEDULE)
    assert find_untolerated_taint([a, b], []) == a
    assert find_untolerated_taint([a, b], [Toleration("a", "Exists")]) == b
    assert find_untolerated_taint([a, b], [Toleration("", "Exists")]) is None
    assert find_untolerated_taint([a, b], [], lambda t: t.key == "b") == b
    assert find_untolerated_taint([a, b], [], lambda t: False) is None


def test_do_not_schedule_taint_filter() -> None:
    assert do_not_schedule_taint(Taint("k", "", NO_SCHEDULE))
    assert do_not_schedule_taint(Taint("k", "", NO_EXECUTE))
    assert not do_not_schedule_taint(Taint("k", "", PREFER_NO_SCHEDULE))


def test_filter_ignores_prefer_no_schedule_and_reports_unresolvable() -> None:
    prefer = Taint("spot", "true", PREFER_NO_SCHEDULE)
    assert taint_toleration_filter([prefer], []).ok
    status = taint_toleration_filter([prefer, GPU], [])
    assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message == REASON_UNTOLERATED
    assert status.plugin == "TaintToleration"
    assert taint_toleration_filter([GPU], [Toleration("nvidia.com/gpu", "Exists")]).ok
    assert taint_toleration_filter([], []).ok


def test_filter_with_no_execute_taint() -> None:
    taint = Taint("node.kubernetes.io/not-ready", "", NO_EXECUTE)
    tol = Toleration("node.kubernetes.io/not-ready", "Exists", "", NO_EXECUTE, 300)
    assert not taint_toleration_filter([taint], []).ok
    assert taint_toleration_filter([taint], [tol]).ok


# --- Score --------------------------------------------------------------------------------------


def test_prescore_keeps_empty_and_prefer_no_schedule_effects() -> None:
    tols = [
        Toleration("a", "Exists"),
        Toleration("b", "Exists", effect=PREFER_NO_SCHEDULE),
        Toleration("c", "Exists", effect=NO_SCHEDULE),
    ]
    assert [t.key for t in prefer_no_schedule_tolerations(tols)] == ["a", "b"]


def test_count_only_untolerated_prefer_no_schedule() -> None:
    taints = [Taint("a", "", PREFER_NO_SCHEDULE), Taint("b", "", PREFER_NO_SCHEDULE), GPU]
    assert count_intolerable_prefer_no_schedule(taints, []) == 2
    assert count_intolerable_prefer_no_schedule(taints, [Toleration("a", "Exists")]) == 1
    assert count_intolerable_prefer_no_schedule(None, []) == 0


def test_scores_normalised_reversed_with_integer_truncation() -> None:
    p = PREFER_NO_SCHEDULE
    nodes = [
        ("n0", []),
        ("n1", [Taint("a", "", p)]),
        ("n2", [Taint("a", "", p), Taint("b", "", p)]),
        ("n3", [Taint("a", "", p), Taint("b", "", p), Taint("c", "", p)]),
    ]
    # 100 - 100*count//3: 100, 100-33, 100-66, 0
    assert taint_toleration_scores(nodes, []) == {"n0": 100, "n1": 67, "n2": 34, "n3": 0}


def test_scores_all_zero_counts_give_max_and_empty_input_is_empty() -> None:
    assert taint_toleration_scores([("a", []), ("b", None)], []) == {"a": 100, "b": 100}
    assert taint_toleration_scores([], []) == {}


def test_score_tolerations_with_other_effect_do_not_count() -> None:
    nodes = [("a", [Taint("k", "", PREFER_NO_SCHEDULE)]), ("b", [])]
    no_schedule_only = [Toleration("k", "Exists", effect=NO_SCHEDULE)]
    assert taint_toleration_scores(nodes, no_schedule_only) == {"a": 0, "b": 100}
    assert taint_toleration_scores(nodes, [Toleration("k", "Exists")]) == {"a": 100, "b": 100}


def _score_vectors() -> list[dict]:
    path = conformance_dir() / "kubernetes.json"
    if not path.is_file():
        return []
    cases = json.loads(path.read_text(encoding="utf-8")).get("scores", [])
    return [c for c in cases if c.get("plugin") == "TaintToleration"]


SCORE_VECTORS = _score_vectors()


@pytest.mark.skipif(not SCORE_VECTORS, reason="kubernetes.json conformance vectors not found")
@pytest.mark.parametrize(
    "case",
    SCORE_VECTORS or [None],
    ids=[f"{c['source_test_name']}#{c['case_index']}" for c in SCORE_VECTORS] or ["none"],
)
def test_taint_toleration_score_vectors(case: dict) -> None:
    nodes = [
        (n["name"], parse_taints(n["taints"], ("nodes", i, "taints"), validate=False))
        for i, n in enumerate(case["nodes"])
    ]
    tolerations = parse_tolerations(case["pod_tolerations"], ("pod_tolerations",), validate=False)
    got = taint_toleration_scores(
        nodes, tolerations, enable_comparison_operators=case["enable_comparison_operators"]
    )
    assert got == case["expected"]["scores"]


# --- parsing ------------------------------------------------------------------------------------


def test_parse_taint_and_toleration() -> None:
    assert parse_taint({"key": "nvidia.com/gpu", "value": "present", "effect": NO_SCHEDULE}) == GPU
    assert parse_taint(
        {"key": "k", "effect": NO_SCHEDULE, "timeAdded": "2024-01-01T00:00:00Z"}
    ) == Taint("k", "", NO_SCHEDULE)
    assert parse_toleration({"operator": "Exists"}) == Toleration("", "Exists")
    assert parse_toleration(
        {"key": "k", "operator": "Exists", "effect": NO_EXECUTE, "tolerationSeconds": 30}
    ) == Toleration("k", "Exists", "", NO_EXECUTE, 30)
    assert parse_toleration({"key": "k", "value": "v", "tolerationSeconds": None}) == Toleration(
        "k", "", "v"
    )
    assert parse_toleration({"key": "sla", "operator": "Gt", "value": "-5"}).numeric_value == -5
    assert parse_taints(None) == []
    assert parse_tolerations(None) == []


@pytest.mark.parametrize(
    ("obj", "path"),
    [
        ("k=v:NoSchedule", ()),
        ({"value": "v", "effect": NO_SCHEDULE}, ("key",)),
        ({"key": "k"}, ("effect",)),
        ({"key": "k", "effect": "NoScheduleNoAdmit"}, ("effect",)),
        ({"key": "k", "effect": "noschedule"}, ("effect",)),
        ({"key": 5, "effect": NO_SCHEDULE}, ("key",)),
        ({"key": "k", "value": 5, "effect": NO_SCHEDULE}, ("value",)),
        ({"key": "bad key", "effect": NO_SCHEDULE}, ("key",)),
        ({"key": "Example.com/k", "effect": NO_SCHEDULE}, ("key",)),
        ({"key": "a/b/c", "effect": NO_SCHEDULE}, ("key",)),
        ({"key": "/k", "effect": NO_SCHEDULE}, ("key",)),
        ({"key": "example.com/", "effect": NO_SCHEDULE}, ("key",)),
        ({"key": "k" * 64, "effect": NO_SCHEDULE}, ("key",)),
        ({"key": "k", "value": " 200 ", "effect": NO_SCHEDULE}, ("value",)),
        ({"key": "k", "value": "v" * 64, "effect": NO_SCHEDULE}, ("value",)),
    ],
)
def test_parse_taint_rejects(obj: object, path: tuple) -> None:
    with pytest.raises(FieldError) as err:
        parse_taint(obj, ("spec", "taints", 0))
    assert err.value.path == ("spec", "taints", 0, *path)


def test_parse_taints_rejects_duplicate_key_effect_and_non_list() -> None:
    dup = [{"key": "k", "value": "a", "effect": NO_SCHEDULE}, {"key": "k", "effect": NO_SCHEDULE}]
    with pytest.raises(FieldError) as err:
        parse_taints(dup, ("spec", "taints"))
    assert err.value.path == ("spec", "taints", 1)
    assert len(parse_taints(dup, validate=False)) == 2
    ok = [{"key": "k", "effect": NO_SCHEDULE}, {"key": "k", "effect": NO_EXECUTE}]
    assert len(parse_taints(ok)) == 2
    with pytest.raises(FieldError):
        parse_taints({"key": "k"}, ("spec", "taints"))


@pytest.mark.parametrize(
    ("obj", "path"),
    [
        (None, ()),
        ({"operator": "Equal", "value": "v"}, ("operator",)),
        ({"value": "v"}, ("operator",)),
        ({"key": "k", "operator": "Exists", "value": "v"}, ("operator",)),
        ({"key": "k", "operator": "In", "value": "v"}, ("operator",)),
        ({"key": "k", "operator": "equal", "value": "v"}, ("operator",)),
        ({"key": "k", "operator": "Gt", "value": "abc"}, ("value",)),
        ({"key": "k", "operator": "Lt", "value": "0100"}, ("value",)),
        ({"key": "k", "operator": "Gt", "value": "+1"}, ("value",)),
        ({"key": "k", "operator": "Gt", "value": ""}, ("value",)),
        ({"key": "k", "operator": "Gt", "value": "9223372036854775808"}, ("value",)),
        ({"key": "k", "value": "not valid"}, ("value",)),
        ({"key": "k", "operator": "Exists", "effect": "Evict"}, ("effect",)),
        ({"key": "k", "operator": "Exists", "tolerationSeconds": 5}, ("effect",)),
        (
            {"key": "k", "operator": "Exists", "effect": NO_EXECUTE, "tolerationSeconds": "5"},
            ("tolerationSeconds",),
        ),
        (
            {"key": "k", "operator": "Exists", "effect": NO_EXECUTE, "tolerationSeconds": 1.5},
            ("tolerationSeconds",),
        ),
        (
            {"key": "k", "operator": "Exists", "effect": NO_EXECUTE, "tolerationSeconds": True},
            ("tolerationSeconds",),
        ),
        (
            {"key": "k", "operator": "Exists", "effect": NO_EXECUTE, "tolerationSeconds": 2**63},
            ("tolerationSeconds",),
        ),
        ({"key": "k", "operator": ["Exists"]}, ("operator",)),
        ({"key": "bad key", "operator": "Exists"}, ("key",)),
    ],
)
def test_parse_toleration_rejects(obj: object, path: tuple) -> None:
    with pytest.raises(FieldError) as err:
        parse_toleration(obj, ("spec", "tolerations", 2))
    assert err.value.path == ("spec", "tolerations", 2, *path)


def test_parse_without_validation_keeps_odd_values_for_upstream_matching() -> None:
    tol = parse_toleration({"key": "k", "operator": "Gt", "value": "0100"}, validate=False)
    assert tol.numeric_value is None
    assert not tolerates(tol, Taint("k", "200", NO_SCHEDULE))
    taint = parse_taint({"key": "k", "value": " 200 "}, validate=False)
    assert taint == Taint("k", " 200 ", "")
    # types are still checked
    with pytest.raises(FieldError):
        parse_toleration({"key": 1}, validate=False)


def test_parse_tolerations_paths() -> None:
    with pytest.raises(FieldError) as err:
        parse_tolerations([{"operator": "Exists"}, {"key": "k", "operator": "Nope"}], ("tol",))
    assert err.value.path == ("tol", 1, "operator")
    with pytest.raises(FieldError):
        parse_tolerations("Exists", ("tol",))
