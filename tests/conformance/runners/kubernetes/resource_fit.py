"""kubernetes.json `resource_fit`: NodeResourcesFit PreFilter + Filter (fit_test.go).

The vector's simplified pods become real PodSpec JSON and go through the project's parsers;
the node is built from its allocatable ResourceList.
"""

from __future__ import annotations

from typing import Any

import pytest

from gpupact.kube.requests import (
    NodeResources,
    PodResources,
    parse_node_resources,
    parse_pod_resources,
    pod_footprint,
)
from gpupact.kube.resources_fit import NodeResourcesFit, parse_fit_args

# keys of a vector pod this translation understands; anything else is not modelled here
_POD_KEYS = {"containers", "initContainers", "overhead", "resources", "nodeName", "name"}
_CONTAINER_KEYS = {"name", "requests", "limits", "restartPolicy"}


def container_json(container: dict[str, Any], default_name: str) -> dict[str, Any]:
    """A vector container ({requests, limits?, name?, restartPolicy?}) as Kubernetes JSON."""
    unknown = set(container) - _CONTAINER_KEYS
    if unknown:
        pytest.skip(f"not modelled: container field(s) {sorted(unknown)}")
    obj: dict[str, Any] = {"name": container.get("name", default_name)}
    resources = {key: container[key] for key in ("requests", "limits") if key in container}
    if resources:
        obj["resources"] = resources
    if "restartPolicy" in container:
        obj["restartPolicy"] = container["restartPolicy"]
    return obj


def pod_spec_json(pod: dict[str, Any]) -> dict[str, Any]:
    """A vector pod as a Kubernetes PodSpec."""
    unknown = set(pod) - _POD_KEYS
    if unknown:
        pytest.skip(f"not modelled: pod field(s) {sorted(unknown)}")
    spec: dict[str, Any] = {
        "containers": [
            container_json(c, f"container-{i}") for i, c in enumerate(pod.get("containers") or [])
        ],
    }
    if pod.get("initContainers"):
        spec["initContainers"] = [
            container_json(c, f"init-{i}") for i, c in enumerate(pod["initContainers"])
        ]
    for key in ("overhead", "resources"):
        if pod.get(key) is not None:
            spec[key] = pod[key]
    return spec


def parse_vector_pod(pod: dict[str, Any]) -> PodResources:
    return parse_pod_resources(pod_spec_json(pod), ("spec",))


def vector_node(node: dict[str, Any]) -> NodeResources:
    """A vector node ({allocatable} and/or {capacity}) via the Node status parser."""
    status = {key: node[key] for key in ("allocatable", "capacity") if key in node}
    return parse_node_resources({"status": status})


def run(case: dict, meta: dict) -> None:
    features = case.get("features") or {}
    if features.get("draExtendedResource"):
        pytest.skip("not modelled: DRA extended resources")
    pod_level = bool(features.get("podLevelResources", False))
    plugin = NodeResourcesFit(
        parse_fit_args(case.get("args") or {}, ("args",)),
        pod_level_resources=pod_level,
        sidecar_containers=bool(features.get("sidecarContainers", True)),
    )
    node = vector_node(case["node"])
    for existing in case.get("existing_pods") or []:
        node.add_pod(pod_footprint(parse_vector_pod(existing), pod_level_resources=pod_level))
    pod = parse_vector_pod(case["pod"])

    request, status = plugin.pre_filter(pod)
    phase, insufficient = "PreFilter", []
    if status.ok:
        assert request is not None
        phase = "Filter"
        status, insufficient = plugin.filter(request, node)

    expected = case["expected"]
    assert status.ok == expected["fits"], (
        f"fits: got {status.ok} ({status}), expected {expected['fits']}"
    )
    assert status.code.value == expected["status_code"], (
        f"status code: got {status.code.value}, expected {expected['status_code']}"
    )
    if "reasons" in expected:
        assert list(status.reasons) == expected["reasons"], (
            f"reasons: got {list(status.reasons)}, expected {expected['reasons']}"
        )
    if "phase" in expected and not status.ok:
        assert phase == expected["phase"], f"phase: got {phase}, expected {expected['phase']}"
    if "insufficient_resources" in expected:
        got = [
            {
                "resourceName": r.resource_name,
                "reason": r.reason,
                "requested": r.requested,
                "used": r.used,
                "capacity": r.capacity,
                "unresolvable": r.unresolvable,
            }
            for r in insufficient
        ]
        want = [{"unresolvable": False, **r} for r in expected["insufficient_resources"]]
        assert got == want, f"insufficient resources: got {got}, expected {want}"
