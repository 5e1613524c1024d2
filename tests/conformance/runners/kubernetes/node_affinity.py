"""kubernetes.json `node_affinity`: component-helpers nodeaffinity + corev1.MatchNodeSelectorTerms.

Each vector names the upstream entry point in `source_test_name`; this runner maps it onto the
matching public function of gpupact.kube.selectors and checks the upstream expectation.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from gpupact.kube.selectors import (
    FieldIssue,
    NodeAffinity,
    RequiredNodeAffinity,
    SelectorError,
    match_node_selector_terms,
    node_selector_requirements_as_selector,
    parse_node_affinity,
    parse_node_selector,
    parse_preferred_scheduling_terms,
    preferred_node_affinity_score,
    preferred_terms_issues,
)


def _node(case: dict[str, Any]) -> tuple[str | None, dict[str, str]]:
    """(name, labels); name None stands for a nil *v1.Node."""
    node = case.get("node")
    if node is None:
        return None, {}
    return node.get("name") or "", dict(node.get("labels") or {})


def _assert_issues(got: tuple[FieldIssue, ...], expected: list[dict[str, Any]]) -> None:
    shown = [(i.type, i.field, i.detail) for i in got]
    assert len(got) == len(expected), f"errors: got {shown}, expected {expected}"
    for issue, want in zip(got, expected, strict=True):
        assert issue.type == want["type"], f"type: got {shown}, expected {expected}"
        assert issue.field == want["field"], f"field: got {shown}, expected {expected}"
        if "detail" in want:
            assert issue.detail == want["detail"], f"detail: got {issue.detail!r}, expected {want}"


def _canonical_selector_string(text: str) -> str:
    # labels.Selector.String() lists `in`/`notin` values sorted; accept either order in vectors
    return re.sub(r"\(([^)]*)\)", lambda m: "(" + ",".join(sorted(m[1].split(","))) + ")", text)


def _run_node_selector_match(case: dict[str, Any], expected: dict[str, Any]) -> None:
    # NewNodeSelector(ns) then Match(node): errors come from construction
    selector = parse_node_selector(case.get("node_selector"))
    issues = selector.issues if selector is not None else ()
    if expected.get("parse_error"):
        _assert_issues(issues, expected["errors"])
        return
    assert issues == (), f"unexpected parse errors {[str(i) for i in issues]}"
    name, labels = _node(case)
    got = match_node_selector_terms(selector, name, labels)
    assert got == expected["match"], f"match: got {got}, expected {expected['match']}"


def _run_match_node_selector_terms(case: dict[str, Any], expected: dict[str, Any]) -> None:
    # lazy errors: an erroring term never matches, no error is raised
    selector = parse_node_selector(case.get("node_selector"))
    name, labels = _node(case)
    got = match_node_selector_terms(selector, name, labels)
    assert got == expected["match"], f"match: got {got}, expected {expected['match']}"


def _run_required_node_affinity(case: dict[str, Any], expected: dict[str, Any]) -> None:
    pod = case["pod"]
    affinity_obj = pod.get("affinity") or {}
    affinity = parse_node_affinity(affinity_obj.get("nodeAffinity"))
    required = RequiredNodeAffinity(pod.get("nodeSelector"), affinity)
    name, labels = _node(case)
    assert name is not None, "upstream always passes a node here"
    got = required.matches(name, labels)
    assert got == expected["match"], f"match: got {got}, expected {expected['match']}"


def _run_requirements_as_selector(case: dict[str, Any], expected: dict[str, Any]) -> None:
    # the upstream test passes field.NewPath("root")
    try:
        selector = node_selector_requirements_as_selector(case.get("match_expressions"), ("root",))
    except SelectorError as err:
        assert expected.get("parse_error"), f"unexpected parse errors: {err}"
        _assert_issues(err.issues, expected["errors"])
        return
    assert not expected.get("parse_error"), f"expected errors {expected.get('errors')}, got none"
    want = expected["selector"]
    if want.startswith("Nothing"):
        assert selector.nothing, f"selector: got {str(selector)!r}, expected labels.Nothing()"
        return
    assert not selector.nothing, f"selector: got labels.Nothing(), expected {want!r}"
    got = str(selector)
    assert got == _canonical_selector_string(want), f"selector: got {got!r}, expected {want!r}"


def _run_preferred_score(case: dict[str, Any], expected: dict[str, Any]) -> None:
    terms = parse_preferred_scheduling_terms(case.get("preferred_terms"))
    issues = preferred_terms_issues(terms)
    if expected.get("parse_error"):
        _assert_issues(issues, expected["errors"])
        return
    assert issues == (), f"unexpected parse errors {[str(i) for i in issues]}"
    name, labels = _node(case)
    got = preferred_node_affinity_score(NodeAffinity(None, terms), name or "", labels)
    assert got == expected["score"], f"score: got {got}, expected {expected['score']}"


_RUNNERS = {
    "TestNodeSelectorMatch": _run_node_selector_match,
    "TestMatchNodeSelectorTerms": _run_match_node_selector_terms,
    "TestPodMatchesNodeSelectorAndAffinityTerms": _run_required_node_affinity,
    "TestNodeSelectorRequirementsAsSelector": _run_requirements_as_selector,
    "TestPreferredSchedulingTermsScore": _run_preferred_score,
}


def run(case: dict[str, Any], meta: dict[str, Any]) -> None:
    runner = _RUNNERS.get(case.get("source_test_name", ""))
    if runner is None:
        pytest.skip(f"not modelled: node_affinity test {case.get('source_test_name')!r}")
    runner(case, case["expected"])
