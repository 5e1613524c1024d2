"""kubernetes.json `scores`: NodeResourcesFit scoring strategies (LeastAllocated,
MostAllocated, RequestedToCapacityRatio) and TaintToleration scores."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.runners.kubernetes.resource_fit import parse_vector_pod, vector_node
from gpupact.kube.requests import pod_footprint
from gpupact.kube.resources_fit import (
    FitArgs,
    FitArgsError,
    NodeResourcesFit,
    ResourceSpec,
    ScoringStrategy,
    ShapePoint,
)


def _strip_nulls(obj: dict[str, Any]) -> dict[str, Any]:
    """Go omits nil pointers from JSON; the vector writes them as null."""
    return {key: value for key, value in obj.items() if value is not None}


def _taint_toleration(case: dict) -> None:
    try:
        from gpupact.kube.taints import parse_taint, parse_toleration, taint_toleration_scores
    except ImportError:
        pytest.skip("taints module pending")
    # upstream builds taints and tolerations as Go struct literals: field types only
    tolerations = [
        parse_toleration(_strip_nulls(t), ("pod_tolerations", i), validate=False)
        for i, t in enumerate(case.get("pod_tolerations") or [])
    ]
    nodes = [
        (
            node["name"],
            [
                parse_taint(_strip_nulls(t), ("nodes", n, "taints", j), validate=False)
                for j, t in enumerate(node.get("taints") or [])
            ],
        )
        for n, node in enumerate(case["nodes"])
    ]
    got = taint_toleration_scores(
        nodes,
        tolerations,
        enable_comparison_operators=bool(case.get("enable_comparison_operators", True)),
    )
    want = case["expected"]["scores"]
    assert got == want, f"scores: got {got}, expected {want}"


def _strategy(case: dict) -> ScoringStrategy:
    resources = tuple(
        ResourceSpec(spec["name"], spec["weight"]) for spec in case.get("resources") or ()
    )
    shape = case.get("shape")
    return ScoringStrategy(
        type=case["strategy"],
        resources=resources,
        shape=None
        if shape is None
        else tuple(ShapePoint(p["utilization"], p["score"]) for p in shape),
    )


def _node_resources_fit(case: dict) -> None:
    expected = case["expected"]
    features = case.get("features") or {}
    pod_level = bool(features.get("podLevelResources", False))
    args = FitArgs(scoring_strategy=_strategy(case))
    if "config_error" in expected:
        want = (expected["config_error"]["type"], expected["config_error"]["field"])
        try:
            NodeResourcesFit(args)
        except FitArgsError as exc:
            got = [(e.type, e.field) for e in exc.errors]
            assert got and got[0] == want, f"config errors: got {got}, expected {want}"
            return
        raise AssertionError(f"config accepted, expected error {want}")

    plugin = NodeResourcesFit(args, pod_level_resources=pod_level)
    nodes = {node["name"]: vector_node(node) for node in case["nodes"]}
    for existing in case.get("existing_pods") or []:
        node = nodes.get(existing.get("nodeName") or "")
        if node is not None:  # a pod bound to no listed node holds nothing here
            node.add_pod(pod_footprint(parse_vector_pod(existing), pod_level_resources=pod_level))
    pod_request_list = plugin.pre_score(parse_vector_pod(case["pod"]))
    scores, codes = {}, {}
    for name, node in nodes.items():
        scores[name], status = plugin.score(pod_request_list, node)
        codes[name] = status.code.value
    want_code = expected.get("score_status_code", "Success")
    assert all(code == want_code for code in codes.values()), (
        f"score status: got {codes}, expected {want_code}"
    )
    assert scores == expected["scores"], f"scores: got {scores}, expected {expected['scores']}"


def run(case: dict, meta: dict) -> None:
    plugin = case.get("plugin", "NodeResourcesFit")
    if plugin == "TaintToleration":
        _taint_toleration(case)
    elif plugin == "NodeResourcesFit":
        _node_resources_fit(case)
    else:
        pytest.skip(f"not modelled: score plugin {plugin}")
