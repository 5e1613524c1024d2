"""volcano-kai.json, scheduler `volcano`: one Volcano session per scenario.

The scenario's nodes, pods, PodGroups and Queues become Kubernetes / Volcano JSON and go
through the project's parsers (`parse_node`, `parse_pod`, `parse_podgroup`, `parse_queue`);
quantities are the vector's `raw` strings. The plugin list becomes one tier of
`PluginOption`s (extension points in parentheses; "only if registered" plugins only when
the "registered:" line names them). The session runs the listed actions once and the
upstream test's assertions are checked on its decisions.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml

from gpupact.engine.gang import (
    GROUP_NAME_ANNOTATION,
    PREEMPTABLE_KEY,
    TASK_SPEC_KEY,
    parse_podgroup,
)
from gpupact.engine.preemption.importance import format_time_nanos
from gpupact.engine.volcano import NotModelledError, PluginOption, Session
from gpupact.engine.volcano.model import parse_queue
from gpupact.engine.volcano.session import EXTENSION_POINTS
from gpupact.kube.objects import parse_node, parse_pod

_PLUGIN = re.compile(r"^([A-Za-z][\w-]*)(?:\((.*)\))?$")
_SEPARATORS = re.compile(r"[;,\s]+")
NOW_NANOS = 1_704_067_200 * 1_000_000_000  # the session's injected time (2024-01-01T00:00:00Z)
_ACTION_ARG = re.compile(r"^(\w+) arg ([\w.-]+)=(\S+)$")
_REGISTERED = "registered:"

# kube-shaped pod fields passed through as they are (the sessions run the kube filters)
KUBE_POD_FIELDS = {
    "labels": ("metadata", "labels"),
    "affinity": ("spec", "affinity"),
    "tolerations": ("spec", "tolerations"),
    "topology_spread_constraints": ("spec", "topologySpreadConstraints"),
    "preemption_policy": ("spec", "preemptionPolicy"),
}

_POD_KEYS = {
    *KUBE_POD_FIELDS,
    "name",
    "podgroup",
    "requests",
    "priority",
    "status",
    "node",
    "node_selector",
    "task_spec",
    "preemptable",
}


def split_name(name: str) -> tuple[str, str]:
    if "/" in name:
        namespace, short = name.split("/", 1)
        return namespace, short
    return "default", name


def node_json(node: dict[str, Any]) -> dict[str, Any]:
    return {
        "kind": "Node",
        "metadata": {"name": node["name"], "labels": dict(node.get("labels") or {})},
        "spec": {"taints": list(node.get("taints") or [])},
        "status": {"allocatable": dict(node["allocatable"]["raw"])},
    }


def add_kube_fields(pod: dict[str, Any], obj: dict[str, Any]) -> dict[str, Any]:
    """Copy the scenario pod's kube-shaped fields (labels, affinity, ...) into the object."""
    for field, (part, key) in KUBE_POD_FIELDS.items():
        if pod.get(field) is not None:
            obj.setdefault(part, {})[key] = pod[field]
    return obj


def pod_json(pod: dict[str, Any]) -> dict[str, Any]:
    unknown = set(pod) - _POD_KEYS
    if unknown:
        pytest.skip(f"not modelled: pod field(s) {sorted(unknown)}")
    namespace, name = split_name(pod["name"])
    annotations: dict[str, str] = {}
    if pod.get("podgroup"):
        pg_namespace, pg_name = split_name(pod["podgroup"])
        if pg_namespace != namespace:
            pytest.skip("not modelled: a pod in another namespace than its PodGroup")
        annotations[GROUP_NAME_ANNOTATION] = pg_name
    if pod.get("task_spec"):
        annotations[TASK_SPEC_KEY] = pod["task_spec"]
    if "preemptable" in pod:
        annotations[PREEMPTABLE_KEY] = "true" if pod["preemptable"] else "false"
    status = pod.get("status", "Pending")
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        # the upstream test helper's pod UID
        "uid": f"{namespace}-{name}",
        "annotations": annotations,
    }
    phase = status
    if status == "Releasing":
        phase = "Running"
        meta["deletionTimestamp"] = "1970-01-01T00:00:00Z"
    spec: dict[str, Any] = {
        "containers": [{"name": "main", "resources": {"requests": dict(pod["requests"]["raw"])}}],
    }
    if pod.get("priority") is not None:
        spec["priority"] = pod["priority"]
    if pod.get("node"):
        spec["nodeName"] = pod["node"]
    if pod.get("node_selector"):
        spec["nodeSelector"] = dict(pod["node_selector"])
    obj = {"kind": "Pod", "metadata": meta, "spec": spec, "status": {"phase": phase}}
    return add_kube_fields(pod, obj)


def podgroup_json(pg: dict[str, Any]) -> dict[str, Any]:
    """`creation_offset_s`: the creation time relative to the session's NOW (absent: unset,
    Go's zero time, as the upstream fixtures leave it); `annotations` as given."""
    namespace, name = split_name(pg["name"])
    spec: dict[str, Any] = {"minMember": pg.get("minMember", 0), "queue": pg.get("queue")}
    if pg.get("minTaskMember"):
        spec["minTaskMember"] = dict(pg["minTaskMember"])
    if pg.get("minResources"):
        spec["minResources"] = dict(pg["minResources"]["raw"])
    if pg.get("priorityClassName"):
        spec["priorityClassName"] = pg["priorityClassName"]
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if pg.get("annotations"):
        meta["annotations"] = dict(pg["annotations"])
    if pg.get("creation_offset_s") is not None:
        offset = round(float(pg["creation_offset_s"]) * 1_000_000_000)
        meta["creationTimestamp"] = format_time_nanos(NOW_NANOS + offset)
    return {
        "kind": "PodGroup",
        "metadata": meta,
        "spec": spec,
        "status": {"phase": pg.get("phase") or "Pending"},
    }


def queue_json(queue: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {"weight": queue.get("weight", 1)}
    for key in ("capability", "deserved"):
        if queue.get(key):
            spec[key] = dict(queue[key]["raw"])
    if queue.get("guarantee"):
        spec["guarantee"] = {"resource": dict(queue["guarantee"]["raw"])}
    if queue.get("parent"):
        spec["parent"] = queue["parent"]
    if queue.get("priority") is not None:
        spec["priority"] = queue["priority"]
    return {
        "kind": "Queue",
        "metadata": {"name": queue["name"]},
        "spec": spec,
        "status": {"state": queue.get("state") or "Open"},
    }


def parse_plugins(lines: list[str]) -> tuple[list[PluginOption], dict[str, dict[str, str]]]:
    """The vector's plugin notation -> one tier of options, plus action arguments."""
    registered: set[str] | None = None
    for line in lines:
        if line.startswith(_REGISTERED):
            registered = {n.strip() for n in line[len(_REGISTERED) :].split(",") if n.strip()}
    options: list[PluginOption] = []
    action_args: dict[str, dict[str, str]] = {}
    for line in lines:
        if line.startswith(_REGISTERED):
            continue
        arg = _ACTION_ARG.match(line)
        if arg:
            action_args.setdefault(arg.group(1), {})[arg.group(2)] = arg.group(3)
            continue
        match = _PLUGIN.match(line.strip())
        if not match:
            pytest.skip(f"not modelled: plugin configuration {line!r}")
        name, inner = match.group(1), match.group(2) or ""
        parts = [p.strip() for p in inner.split(";", 1)]
        points = {p.strip() for p in parts[0].split(",") if p.strip()}
        arguments, notes = plugin_arguments(parts[1] if len(parts) > 1 else "")
        if "only if registered" in notes and registered is not None and name not in registered:
            continue
        unknown = points - EXTENSION_POINTS
        if unknown:
            pytest.skip(f"not modelled: extension point(s) {sorted(unknown)} of {name}")
        options.append(PluginOption(name, frozenset(points), arguments))
    return options, action_args


def plugin_arguments(text: str) -> tuple[dict[str, Any], str]:
    """The `key=value` items after a plugin's ';' (values typed as the scheduler's YAML
    configuration types them: 2 is an int, true a bool, 3m a string) and the rest as a note."""
    arguments: dict[str, Any] = {}
    notes = []
    for token in _SEPARATORS.split(text):
        if "=" in token:
            key, value = token.split("=", 1)
            arguments[key] = yaml.safe_load(value) if value else ""
        elif token:
            notes.append(token)
    return arguments, " ".join(notes)


def run(case: dict, meta: dict) -> None:
    tier, action_args = parse_plugins(list(case.get("plugins") or []))
    nodes = [parse_node(node_json(n)) for n in case.get("nodes") or []]
    pods = [parse_pod(pod_json(p)) for p in case.get("pods") or []]
    podgroups = [parse_podgroup(podgroup_json(g)) for g in case.get("podgroups") or []]
    queues = [parse_queue(queue_json(q)) for q in case.get("queues") or []]
    actions = list(case["actions"])
    try:
        session = Session(
            nodes=nodes,
            pods=pods,
            podgroups=podgroups,
            queues=queues,
            tiers=[tier],
            priority_classes=case.get("priority_classes") or {},
            enabled_actions=actions,
            action_arguments=action_args,
            now_nanos=NOW_NANOS,
        )
        result = session.run(actions)
    except NotModelledError as exc:
        pytest.skip(f"not modelled: {exc}")
    check_expected(case, result.binds, result.evicted, result.pipelined)
    phases = (case.get("expected") or {}).get("podgroup_phase") or {}
    for key, phase in phases.items():
        got = result.phases[key].value
        assert got == phase, f"PodGroup {key} phase: got {got}, expected {phase}"


def check_expected(
    case: dict, binds: dict[str, str], evicted: tuple[str, ...], pipelined: dict[str, str]
) -> None:
    expected = case.get("expected") or {}
    want_binds = expected.get("bound") or {}
    got_binds = dict(binds)
    assert set(got_binds) == set(want_binds), f"binds: got {got_binds}, expected {want_binds}"
    for pod, node in want_binds.items():
        if node != "any":
            assert got_binds[pod] == node, f"bind {pod}: got {got_binds[pod]}, expected {node}"
    want_evicted = sorted(expected.get("evicted") or [])
    assert sorted(evicted) == want_evicted, (
        f"evicted: got {sorted(evicted)}, expected {want_evicted}"
    )
    for pod in expected.get("pending") or []:
        assert pod not in got_binds, f"{pod} expected pending, got bound to {got_binds[pod]}"
    want_pipelined = expected.get("pipelined")
    if want_pipelined is not None:
        if not want_pipelined and "nothing pipelined" in (case.get("asserted") or []):
            assert not pipelined, f"pipelined: got {pipelined}, expected nothing"
        for pod, node in want_pipelined.items():
            got = pipelined.get(pod)
            assert got == node, f"{pod} pipelined: got {got}, expected {node}"
