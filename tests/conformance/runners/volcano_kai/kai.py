"""volcano-kai.json, scheduler `kai`: one KAI-Scheduler session per scenario.

Nodes, pods, Queues and PodGroups become Kubernetes / KAI JSON and go through the project's
parsers. A fractional GPU request (a non-integer `requests.gpu`) becomes KAI's gpu-fraction
annotation and a running shared pod's `gpu_groups` its runai-gpu-group labels. The fixture
conventions are applied as data: a queue without explicit KAI resources takes GPU quota =
deserved, limit = capability, over-quota weight = weight (cpu and memory unlimited, weight
1); PodGroups are created in list order after a stable sort by priority (descending), older
first; each priority value gets a PriorityClass; a stale
gang became stale `stale_for_seconds` before the session.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from conformance.runners.volcano_kai.volcano import (
    KUBE_POD_FIELDS,
    add_kube_fields,
    node_json,
    split_name,
)
from gpupact.engine.kai import (
    KaiConfig,
    KaiSession,
    NotModelledError,
    UnsupportedError,
    parse_kai_podgroup,
    parse_kai_queue,
)
from gpupact.engine.kai.gpu_sharing import (
    GPU_FRACTION_ANNOTATION,
    GPU_GROUP_LABEL,
    GPU_GROUP_LABEL_PREFIX,
)
from gpupact.engine.kai.model import GPU, POD_GROUP_ANNOTATION
from gpupact.kube.objects import parse_node, parse_pod

NOW = 1_000_000.0  # the session's (injected) time
_GRACE = re.compile(r"globalDefaultStalenessGracePeriod overridden to (-?\d+)s")
_DEFAULT_TIERS = "default KAI tiers"
_CLASS_NAMES = {50: "train", 75: "interactive-preemptible", 100: "build", 125: "inference"}
_POD_KEYS = {
    *KUBE_POD_FIELDS,
    *("name", "podgroup", "requests", "priority", "status", "node", "gpu_groups"),
}


def _quota(entry: dict[str, Any]) -> dict[str, Any]:
    return {
        "quota": entry["quota"],
        "limit": entry["limit"],
        "overQuotaWeight": entry["overQuotaWeight"],
    }


def queue_json(queue: dict[str, Any]) -> dict[str, Any]:
    resources = queue.get("kai_resources")
    if resources is None:
        unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
        resources = {
            "gpu": {
                "quota": (queue.get("deserved") or {}).get("gpu", 0),
                "limit": (queue.get("capability") or {}).get("gpu", -1),
                "overQuotaWeight": queue.get("weight", 1),
            },
            "cpu": unlimited,
            "memory": unlimited,
        }
    spec: dict[str, Any] = {
        "priority": queue.get("priority", 100),
        "resources": {name: _quota(entry) for name, entry in resources.items()},
    }
    if queue.get("parent"):
        spec["parentQueue"] = queue["parent"]
    return {"kind": "Queue", "metadata": {"name": queue["name"]}, "spec": spec}


def class_name(priority: int) -> str:
    return _CLASS_NAMES.get(priority, f"priority-{priority}")


def podgroup_json(pg: dict[str, Any], task_count: int = 1) -> dict[str, Any]:
    """`task_count`: the fixture's default minMember (every task of the job)."""
    namespace, name = split_name(pg["name"])
    spec = {
        "minMember": pg.get("minMember", task_count),
        "queue": pg["queue"],
        "priorityClassName": class_name(pg.get("priority", 0)),
        "preemptibility": pg.get("preemptibility") or "",
    }
    return {"kind": "PodGroup", "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def pod_json(pod: dict[str, Any]) -> dict[str, Any]:
    unknown = set(pod) - _POD_KEYS
    if unknown:
        pytest.skip(f"not modelled: pod field(s) {sorted(unknown)}")
    namespace, name = split_name(pod["name"])
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": name}
    annotations: dict[str, str] = {}
    if pod.get("podgroup"):
        annotations[POD_GROUP_ANNOTATION] = split_name(pod["podgroup"])[1]
    requests = dict(pod["requests"]["raw"])
    gpus = pod["requests"].get("gpu")
    if gpus is not None and float(gpus) != int(float(gpus)):
        # a fractional request: KAI's gpu-fraction annotation, no nvidia.com/gpu request
        annotations[GPU_FRACTION_ANNOTATION] = repr(float(gpus))
        requests.pop(GPU, None)
    groups = list(pod.get("gpu_groups") or [])
    if groups:
        meta["labels"] = {GPU_GROUP_LABEL: groups[0]}
        meta["labels"].update({GPU_GROUP_LABEL_PREFIX + g: g for g in groups[1:]})
    if annotations:
        meta["annotations"] = annotations
    phase = pod.get("status", "Pending")
    if phase == "Releasing":
        phase = "Running"
        meta["deletionTimestamp"] = "1970-01-01T00:00:00Z"
    spec: dict[str, Any] = {"containers": [{"name": "main", "resources": {"requests": requests}}]}
    if pod.get("node"):
        spec["nodeName"] = pod["node"]
    obj = {"kind": "Pod", "metadata": meta, "spec": spec, "status": {"phase": phase}}
    labels = obj["metadata"].get("labels")
    add_kube_fields(pod, obj)
    if labels:  # GPU group labels stay next to the scenario's own
        obj["metadata"]["labels"] = {**(pod.get("labels") or {}), **labels}
    return obj


def session_config(lines: list[str]) -> KaiConfig:
    grace = KaiConfig().staleness_grace_period
    for line in lines:
        match = _GRACE.search(line)
        if match:
            grace = float(match.group(1))
        elif not line.startswith(_DEFAULT_TIERS):
            pytest.skip(f"not modelled: KAI plugin configuration {line!r}")
    return KaiConfig(allow_consolidating_reclaim=True, staleness_grace_period=grace)


def _key(name: str) -> str:
    namespace, short = split_name(name)
    return f"{namespace}/{short}"


def run(case: dict, meta: dict) -> None:
    config = session_config(list(case.get("plugins") or []))
    nodes = [parse_node(node_json(n)) for n in case.get("nodes") or []]
    queues = [parse_kai_queue(queue_json(q)) for q in case.get("queues") or []]
    groups = list(case.get("podgroups") or [])
    pod_list = list(case.get("pods") or [])
    classes = {class_name(g.get("priority", 0)): g.get("priority", 0) for g in groups}
    # fixture: stable sort by priority (desc); earlier means older
    ordered = sorted(groups, key=lambda g: -g.get("priority", 0))
    podgroups = []
    for index, group in enumerate(ordered):
        stale = group.get("stale_for_seconds")
        podgroups.append(
            parse_kai_podgroup(
                podgroup_json(group, sum(p.get("podgroup") == group["name"] for p in pod_list)),
                classes,
                creation=float(index),
                stale_since=None if stale is None else NOW - stale,
            )
        )
    try:
        pods = [parse_pod(pod_json(p)) for p in pod_list]
        session = KaiSession(
            nodes=nodes, pods=pods, podgroups=podgroups, queues=queues, config=config, now=NOW
        )
        result = session.run(list(case["actions"]))
    except (NotModelledError, UnsupportedError) as exc:
        pytest.skip(f"not modelled: {exc}")

    expected = case.get("expected") or {}
    want_binds = {_key(k): v for k, v in (expected.get("bound") or {}).items()}
    assert set(result.binds) == set(want_binds), f"binds: got {result.binds}, expected {want_binds}"
    for pod, node in want_binds.items():
        if node != "any":
            assert result.binds[pod] == node, (
                f"bind {pod}: got {result.binds[pod]}, expected {node}"
            )
    want_evicted = sorted(_key(p) for p in expected.get("evicted") or [])
    got_evicted = sorted(result.evicted)
    assert got_evicted == want_evicted, f"evicted: got {got_evicted}, expected {want_evicted}"
    for pod, node in (expected.get("pipelined") or {}).items():
        got = result.pipelined.get(_key(pod))
        assert got == node, f"{pod} pipelined: got {got}, expected {node}"
    for pod, groups in (expected.get("gpu_groups") or {}).items():
        got = list(result.gpu_groups.get(_key(pod), ()))
        assert got == list(groups), f"{pod} GPU groups: got {got}, expected {groups}"
    for field, status in (
        ("pending", "Pending"),
        ("running_unchanged", "Running"),
        ("still_releasing", "Releasing"),
    ):
        for pod in expected.get(field) or []:
            got = result.statuses[_key(pod)].value
            assert got == status, f"{pod}: got status {got}, expected {status} ({field})"
