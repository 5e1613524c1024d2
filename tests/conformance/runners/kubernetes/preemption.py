"""kubernetes.json `preemption`: DefaultPreemption (default_preemption_test.go).

The vector's nodes, pods and PDBs become Kubernetes JSON and go through the project's parsers;
the dry run, the candidate choice and PostFilter are the engine's own
(`gpupact.engine.preemption`), with the scalar filter chain as the fit check.

- TestDryRunPreemption: every node is dry-run (upstream passes all nodes, sorted by name);
  candidates and their victims are compared sorted by name, as the upstream test sorts them.
- TestSelectBestCandidate: dry run over all nodes, then SelectCandidate.
- TestPostFilter: PostFilter with the vector's filter statuses (nodes without one count as
  not evaluated).

Upstream reads the wall clock for pods without a start time; `NOW` stands for it (any instant
after the fixtures' epoch-based start times).
"""

from __future__ import annotations

from typing import Any

import pytest

from gpupact.engine.preemption import (
    DefaultPreemption,
    FilterChainFit,
    PreemptionSnapshot,
    calculate_num_candidates,
    format_time_nanos,
    parse_pdb,
    parse_preemption_args,
)
from gpupact.kube.objects import Node, Pod, parse_node, parse_pod
from gpupact.kube.status import Code, Status

NOW = 1_700_000_000 * 1_000_000_000

# the filter plugins of the scalar chain (engine.placement.framework)
_CHAIN_PLUGINS = {
    "NodeUnschedulable",
    "NodeName",
    "TaintToleration",
    "NodeAffinity",
    "NodeResourcesFit",
    "PodTopologySpread",
    "InterPodAffinity",
}
_POD_KEYS = {
    "name",
    "namespace",
    "priority",
    "priority_note",
    "requests",
    "nodeName",
    "startTime_unix_nanos",
    "labels",
    "annotations",
    "topologySpreadConstraints",
    "preemptionPolicy",
    "nominatedNodeName",
    "terminating",
    "conditions",
    "tolerations",
    "nodeSelector",
    "affinity",
}
_NODE_KEYS = {"name", "allocatable", "capacity", "labels", "taints", "unschedulable"}


def _namespace(value: str | None) -> str:
    # upstream st.MakePod() leaves the namespace empty; the parser's default stands for it
    # on pods and PDBs alike, so "same namespace" is preserved
    return value or "default"


def pod_json(pod: dict[str, Any]) -> dict[str, Any]:
    unknown = set(pod) - _POD_KEYS
    if unknown:
        pytest.skip(f"not modelled: pod field(s) {sorted(unknown)}")
    meta: dict[str, Any] = {"name": pod["name"], "namespace": _namespace(pod.get("namespace"))}
    if pod.get("labels"):
        meta["labels"] = pod["labels"]
    if pod.get("annotations"):
        meta["annotations"] = pod["annotations"]
    if pod.get("terminating"):
        meta["deletionTimestamp"] = "1970-01-01T00:00:00Z"
    spec: dict[str, Any] = {"containers": []}
    if pod.get("requests"):
        spec["containers"] = [{"name": "c", "resources": {"requests": pod["requests"]}}]
    if pod.get("priority") is not None:
        spec["priority"] = pod["priority"]
    for key in (
        "nodeName",
        "preemptionPolicy",
        "topologySpreadConstraints",
        "tolerations",
        "affinity",
    ):
        if pod.get(key) is not None:
            spec[key] = pod[key]
    if pod.get("nodeSelector"):
        spec["nodeSelector"] = pod["nodeSelector"]
    status: dict[str, Any] = {}
    if pod.get("startTime_unix_nanos") is not None:
        status["startTime"] = format_time_nanos(pod["startTime_unix_nanos"])
    if pod.get("nominatedNodeName"):
        status["nominatedNodeName"] = pod["nominatedNodeName"]
    if pod.get("conditions"):
        status["conditions"] = pod["conditions"]
    if pod.get("nodeName"):
        status["phase"] = "Running"
    return {"kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def node_json(node: dict[str, Any]) -> dict[str, Any]:
    unknown = set(node) - _NODE_KEYS
    if unknown:
        pytest.skip(f"not modelled: node field(s) {sorted(unknown)}")
    status = {key: node[key] for key in ("allocatable", "capacity") if key in node}
    spec: dict[str, Any] = {}
    if node.get("taints"):
        spec["taints"] = node["taints"]
    if node.get("unschedulable"):
        spec["unschedulable"] = True
    meta = {"name": node["name"], "labels": node.get("labels") or {}}
    return {"kind": "Node", "metadata": meta, "spec": spec, "status": status}


def pdb_json(pdb: dict[str, Any]) -> dict[str, Any]:
    status: dict[str, Any] = {"disruptionsAllowed": pdb.get("disruptionsAllowed", 0)}
    if pdb.get("disruptedPods"):
        status["disruptedPods"] = {name: "1970-01-01T00:00:00Z" for name in pdb["disruptedPods"]}
    meta = {"name": pdb.get("name", "pdb"), "namespace": _namespace(pdb.get("namespace"))}
    return {"metadata": meta, "spec": {"selector": pdb.get("selector")}, "status": status}


def _check_plugins(case: dict[str, Any], preemptor: Pod) -> None:
    plugins = set(case.get("filter_plugins") or [])
    unknown = plugins - _CHAIN_PLUGINS
    if unknown:
        pytest.skip(f"not modelled: filter plugin(s) {sorted(unknown)}")
    for key in ("extender", "extenders", "fakeFilterRC"):
        if case.get(key):
            pytest.skip(f"not modelled: {key}")


def _plugins(case: dict[str, Any]) -> frozenset[str] | None:
    """The filter plugins the upstream test registered (the fit check runs only those)."""
    plugins = case.get("filter_plugins")
    return None if plugins is None else frozenset(plugins)


def _build(case: dict[str, Any]) -> tuple[Pod, list[Node], PreemptionSnapshot]:
    nodes = [parse_node(node_json(n)) for n in case["nodes"]]
    pods = [parse_pod(pod_json(p)) for p in case.get("running_pods") or []]
    pdbs = [parse_pdb(pdb_json(p)) for p in case.get("pdbs") or []]
    preemptor = parse_pod(pod_json(case["preemptor"]))
    return preemptor, nodes, PreemptionSnapshot(nodes, pods, pdbs)


def _dry_run(case: dict[str, Any], plugin: DefaultPreemption, preemptor, nodes, snapshot):
    ordered = sorted(nodes, key=lambda n: n.name)
    wanted = calculate_num_candidates(len(ordered), plugin.args)
    if wanted < len(ordered) and "offset" not in case:
        pytest.skip("not modelled: Go's seeded random dry-run offset")
    fits = FilterChainFit(nodes, snapshot.running_pods(), plugins=_plugins(case))
    return plugin.dry_run_preemption(
        preemptor, ordered, snapshot, fits, now=NOW, offset=case.get("offset", 0)
    )


def _victims_by_node(candidates) -> dict[str, list[str]]:
    return {c.node: sorted(p.name for p in c.victims) for c in candidates}


def run(case: dict, meta: dict) -> None:
    preemptor, nodes, snapshot = _build(case)
    _check_plugins(case, preemptor)
    plugin = DefaultPreemption(parse_preemption_args(case.get("args"), ("args",)))
    kind = case.get("kind", "")
    expected = case["expected"]

    if kind.startswith("DefaultPreemption.PostFilter"):
        statuses = {
            name: Status(Code(code))
            for name, code in (case.get("filtered_node_statuses") or {}).items()
        }
        fits = FilterChainFit(nodes, snapshot.running_pods(), plugins=_plugins(case))
        outcome = plugin.post_filter(preemptor, snapshot, statuses, fits=fits, now=NOW)
        want_node = expected.get("nominated_node_name")
        got_node = None if outcome.result is None else outcome.result.nominated_node_name
        assert got_node == want_node, f"nominated node: got {got_node!r}, expected {want_node!r}"
        want_status = expected["status"]
        assert outcome.status.code.value == want_status["code"], (
            f"status code: got {outcome.status.code.value} ({outcome.status.message!r}), "
            f"expected {want_status['code']}"
        )
        if "message" in want_status:
            assert outcome.status.message == want_status["message"], (
                f"status message: got {outcome.status.message!r}, "
                f"expected {want_status['message']!r}"
            )
        return

    if "SelectCandidate" in kind:
        dry = _dry_run(case, plugin, preemptor, nodes, snapshot)
        derived = case.get("derived_victims_per_node")
        if derived is not None:
            got = _victims_by_node(dry.candidates)
            want = {node: sorted(names) for node, names in derived.items()}
            assert got == want, f"victims per node (derived): got {got}, expected {want}"
        best = plugin.select_candidate(dry.candidates, now=NOW)
        got_node = best.node if best is not None else None
        assert got_node in expected["selected_node_any_of"], (
            f"selected node: got {got_node!r}, expected any of {expected['selected_node_any_of']}"
        )
        return

    if kind.startswith("DryRunPreemption"):
        dry = _dry_run(case, plugin, preemptor, nodes, snapshot)
        got = sorted(
            (
                {
                    "node": c.node,
                    "victims": sorted(p.name for p in c.victims),
                    "numPDBViolations": c.num_pdb_violations,
                }
                for c in dry.candidates
            ),
            key=lambda c: c["node"],
        )
        want = sorted(
            (
                {
                    "node": c["node"],
                    "victims": sorted(c["victims"]),
                    "numPDBViolations": c.get("numPDBViolations", 0),
                }
                for c in expected["candidates"]
            ),
            key=lambda c: c["node"],
        )
        assert got == want, f"candidates: got {got}, expected {want}"
        return

    pytest.skip(f"not modelled: preemption case kind {kind!r}")
