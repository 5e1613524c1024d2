"""Node and Pod read from `kubectl get -o json` shapes into typed, integer objects."""

from __future__ import annotations

import pytest

from gpupact.errors import FieldError
from gpupact.kube.objects import parse_node, parse_pod


def test_node_allocatable_falls_back_to_capacity_and_readiness() -> None:
    node = parse_node(
        {
            "kind": "Node",
            "metadata": {"name": "n1", "labels": {"nodepool": "gpu-inference"}},
            "spec": {"unschedulable": True},
            "status": {
                "capacity": {"cpu": "96", "memory": "1Ti", "nvidia.com/gpu": "8", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "False"}],
            },
        }
    )
    assert node.allocatable == {
        "cpu": 96_000,
        "memory": 2**40,
        "nvidia.com/gpu": 8,
        "pods": 110,
    }
    assert node.unschedulable and not node.ready


def test_pod_requests_follow_the_scheduler() -> None:
    pod = parse_pod(
        {
            "metadata": {
                "name": "p",
                "namespace": "ml",
                "deletionTimestamp": "2026-01-01T00:00:00Z",
            },
            "spec": {
                "nodeName": "n1",
                "priority": 1000,
                "initContainers": [
                    {"name": "fetch", "resources": {"requests": {"cpu": "4"}}},
                    {
                        "name": "proxy",
                        "restartPolicy": "Always",
                        "resources": {"requests": {"cpu": "500m"}},
                    },
                ],
                "containers": [
                    # requests defaulted from limits, as the API server does
                    {"name": "main", "resources": {"limits": {"nvidia.com/gpu": "2", "cpu": "2"}}}
                ],
                "overhead": {"cpu": "100m"},
            },
            "status": {"phase": "Running"},
        }
    )
    # init max(4, 0.5 + ...) vs sidecar 0.5 + main 2 -> 4 cores, plus overhead
    assert pod.requests() == {"cpu": 4100, "nvidia.com/gpu": 2}
    assert pod.key == "ml/p" and pod.terminating and pod.holds_resources


@pytest.mark.parametrize(
    ("obj", "path"),
    [
        ({"metadata": {}}, ("metadata", "name")),
        ({"metadata": {"name": "p"}, "spec": {"priority": "high"}}, ("spec", "priority")),
        ({"metadata": {"name": "p", "labels": {"a": 1}}}, ("metadata", "labels", "a")),
        ({"kind": "Node", "metadata": {"name": "p"}}, ("kind",)),
    ],
)
def test_bad_pod_fields_name_their_path(obj: dict, path: tuple) -> None:
    with pytest.raises(FieldError) as exc:
        parse_pod(obj)
    assert exc.value.path == path
