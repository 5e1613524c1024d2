"""kubernetes.json `topology_spread`: PodTopologySpread PreFilter over all nodes, then Filter."""

from __future__ import annotations

import pytest

from gpupact.kube.selectors import RequiredNodeAffinity, parse_node_affinity
from gpupact.kube.taints import parse_taints, parse_tolerations
from gpupact.kube.topology_spread import (
    IncomingPod,
    NodeView,
    PodView,
    filter_node,
    parse_topology_spread_constraints,
    prefilter,
)

# vector feature name -> prefilter keyword
_FEATURES = {
    "nodeInclusionPolicyInPodTopologySpread": "node_inclusion_policy",
    "matchLabelKeysInPodTopologySpread": "match_label_keys",
    "enable_comparison_operators": "enable_comparison_operators",
    "taintTolerationComparisonOperators": "enable_comparison_operators",
}
_EXPECTED_CHECKED = {"node_status", "passing_nodes"}


def _incoming_pod(pod: dict) -> IncomingPod:
    # Upstream builds pods with st.MakePod() (no API validation): parse shapes, not API rules.
    constraints = parse_topology_spread_constraints(
        pod.get("topologySpreadConstraints"), ("pod", "topologySpreadConstraints"), validate=False
    )
    affinity = None
    if pod.get("requiredNodeAffinity") is not None:
        affinity = parse_node_affinity(
            {"requiredDuringSchedulingIgnoredDuringExecution": pod["requiredNodeAffinity"]},
            ("pod", "affinity", "nodeAffinity"),
        )
    return IncomingPod(
        namespace=pod.get("namespace") or "",
        labels=pod.get("labels") or {},
        topology_spread_constraints=constraints,
        required_node_affinity=RequiredNodeAffinity(pod.get("nodeSelector"), affinity),
        tolerations=tuple(
            parse_tolerations(pod.get("tolerations") or [], ("pod", "tolerations"), validate=False)
        ),
        name=pod.get("name", ""),
    )


def run(case: dict, meta: dict) -> None:
    flags = {}
    for name, value in (case.get("features") or {}).items():
        if name not in _FEATURES:
            pytest.skip(f"not modelled: feature gate {name!r}")
        flags[_FEATURES[name]] = bool(value)

    pod = _incoming_pod(case["pod"])
    nodes = [
        NodeView(
            name=n["name"],
            labels=n.get("labels") or {},
            taints=tuple(
                parse_taints(n.get("taints") or [], ("nodes", i, "taints"), validate=False)
            ),
        )
        for i, n in enumerate(case["nodes"])
    ]
    existing = [
        PodView(
            namespace=p.get("namespace") or "",
            labels=p.get("labels") or {},
            node_name=p.get("nodeName") or "",
            terminating=bool(p.get("terminating")),
            name=p.get("name", ""),
        )
        for p in case.get("existing_pods") or []
    ]

    state = prefilter(pod, nodes, existing, **flags)
    statuses = {node.name: filter_node(state, node) for node in nodes}

    expected = case["expected"]
    got_codes = {name: status.code.value for name, status in statuses.items()}
    assert got_codes == expected["node_status"], (
        f"node status: got {got_codes}, expected {expected['node_status']}"
    )
    passing = [node.name for node in nodes if statuses[node.name].ok]
    assert passing == expected["passing_nodes"], (
        f"passing nodes: got {passing}, expected {expected['passing_nodes']}"
    )
    unchecked = sorted(set(expected) - _EXPECTED_CHECKED)
    if unchecked:
        pytest.skip(f"not modelled: expected {unchecked} (node statuses checked and passed)")
