"""Pod requests (PodRequests, sidecars, pod-level, overhead, non-zero) and their parsing."""

from __future__ import annotations

import pytest

from gpupact.errors import FieldError
from gpupact.kube.requests import (
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    NON_ZERO_DEFAULTS,
    Container,
    NodeResources,
    PodResources,
    default_pod_level_requests,
    is_extended_resource_name,
    is_qualified_name,
    is_scalar_resource_name,
    non_zero_requests,
    parse_container,
    parse_node_resources,
    parse_pod_resources,
    parse_resource_list,
    pod_footprint,
    pod_requests,
)

MI = 1024 * 1024


def c(name: str = "c", restart_policy: str | None = None, **requests: int) -> Container:
    return Container(name, requests, {}, restart_policy)


# --- names ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "extended", "scalar"),
    [
        ("nvidia.com/gpu", True, True),
        ("example.com/aaa", True, True),
        ("cpu", False, False),
        ("pods", False, False),
        ("foo", False, False),
        ("hugepages-2Mi", False, True),
        ("kubernetes.io/something", False, True),
        ("subdomain.kubernetes.io/something", False, True),
        ("attachable-volumes-aws-ebs", False, True),
        ("requests.example.com/x", False, False),  # quota prefix is not an extended resource
        ("a/b/c", False, False),
        ("Example.com/gpu", False, False),  # prefix must be a lower-case DNS subdomain
        ("example.com/-gpu", False, False),
    ],
)
def test_resource_name_classes(name: str, extended: bool, scalar: bool) -> None:
    assert is_extended_resource_name(name) is extended
    assert is_scalar_resource_name(name) is scalar


def test_qualified_name_limits() -> None:
    assert is_qualified_name("a" * 63)
    assert not is_qualified_name("a" * 64)
    assert not is_qualified_name("/x")
    assert not is_qualified_name("")


# --- parsing --------------------------------------------------------------------------------------


def test_parse_container_units_and_defaulting_from_limits() -> None:
    container = parse_container(
        {
            "name": "app",
            "resources": {
                "requests": {"cpu": "250m"},
                "limits": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": 2},
            },
            "restartPolicy": "Always",
        }
    )
    # a request left out takes the limit; an explicit request stays
    assert container.requests == {"cpu": 250, "memory": 1024 * MI, "nvidia.com/gpu": 2}
    assert container.limits == {"cpu": 1000, "memory": 1024 * MI, "nvidia.com/gpu": 2}
    assert container.is_restartable_init


def test_parse_container_without_resources() -> None:
    container = parse_container({"name": "x", "resources": None})
    assert container == Container("x", {}, {}, None)


def test_parse_container_rounds_up_fractions() -> None:
    container = parse_container({"resources": {"requests": {"cpu": "0.5m", "memory": "1.5"}}})
    assert container.requests == {"cpu": 1, "memory": 2}


@pytest.mark.parametrize(
    ("obj", "path"),
    [
        ({"resources": {"requests": {"cpu": "abc"}}}, ("c", "resources", "requests", "cpu")),
        ({"resources": {"requests": {"cpu": "-1"}}}, ("c", "resources", "requests", "cpu")),
        ({"resources": {"limits": {"memory": True}}}, ("c", "resources", "limits", "memory")),
        ({"resources": {"requests": ["cpu"]}}, ("c", "resources", "requests")),
        ({"resources": "lots"}, ("c", "resources")),
        ({"restartPolicy": 1}, ("c", "restartPolicy")),
        ({"name": 5}, ("c", "name")),
        ("container", ("c",)),
    ],
)
def test_parse_container_bad_input(obj: object, path: tuple) -> None:
    with pytest.raises(FieldError) as err:
        parse_container(obj, ("c",))
    assert err.value.path == path


def test_parse_resource_list_rejects_empty_name() -> None:
    with pytest.raises(FieldError):
        parse_resource_list({"": "1"})


def test_parse_pod_resources_bad_lists() -> None:
    with pytest.raises(FieldError) as err:
        parse_pod_resources({"containers": {"a": 1}}, ("spec",))
    assert err.value.path == ("spec", "containers")
    with pytest.raises(FieldError) as err:
        parse_pod_resources({"overhead": {"cpu": "x"}}, ("spec",))
    assert err.value.path == ("spec", "overhead", "cpu")


# --- PodRequests ----------------------------------------------------------------------------------


def test_init_containers_take_the_max_not_the_sum() -> None:
    pod = PodResources(
        containers=(c(cpu=2000, memory=1000), c(cpu=1000, memory=1000)),
        init_containers=(c(cpu=2000, memory=1000), c(cpu=2000, memory=3000)),
    )
    assert pod_requests(pod) == {"cpu": 3000, "memory": 3000}


def test_sidecars_add_to_containers_and_to_later_init_containers() -> None:
    # sidecar(1) starts first; init(2) then runs next to it: 3; afterwards sidecar + app = 2
    pod = PodResources(
        containers=(c(cpu=1000),),
        init_containers=(c(cpu=1000, restart_policy="Always"), c(cpu=2000)),
    )
    assert pod_requests(pod) == {"cpu": 3000}
    # an init container that runs before the sidecar does not see it
    pod = PodResources(
        containers=(c(cpu=1000),),
        init_containers=(c(cpu=2000), c(cpu=1000, restart_policy="Always")),
    )
    assert pod_requests(pod) == {"cpu": 2000}
    # sidecars alone: their sum plus the app
    pod = PodResources(
        containers=(c(cpu=500),),
        init_containers=(
            c(cpu=1000, restart_policy="Always"),
            c(cpu=1000, restart_policy="Always"),
        ),
    )
    assert pod_requests(pod) == {"cpu": 2500}


def test_overhead_and_pod_level_requests() -> None:
    pod = PodResources(
        containers=(Container("c", {"cpu": 1000, "memory": 100, "nvidia.com/gpu": 0}),),
        overhead={"cpu": 250, "memory": 10},
        pod_level_requests={"cpu": 3000, "example.com/x": 9},
    )
    assert pod_requests(pod) == {"cpu": 1250, "memory": 110, "nvidia.com/gpu": 0}
    # pod-level replaces cpu / memory / hugepages only, and only with the feature on
    assert pod_requests(pod, pod_level_resources=True)["cpu"] == 3250
    assert "example.com/x" not in pod_requests(pod, pod_level_resources=True)
    assert pod_requests(pod, exclude_overhead=True)["cpu"] == 1000


def test_pod_level_requests_set_needs_a_supported_resource() -> None:
    assert not PodResources(pod_level_requests={"example.com/x": 1}).pod_level_requests_set
    assert not PodResources(pod_level_requests={}).pod_level_requests_set
    assert PodResources(pod_level_requests={"hugepages-2Mi": 1}).pod_level_requests_set


def test_non_missing_fills_only_absent_requests() -> None:
    pod = PodResources(containers=(c(cpu=0), c()))
    # an explicit zero stays zero; the container without a cpu request counts 100m
    assert pod_requests(pod, non_missing=NON_ZERO_DEFAULTS) == {
        "cpu": DEFAULT_MILLI_CPU_REQUEST,
        "memory": 2 * DEFAULT_MEMORY_REQUEST,
    }


def test_non_zero_requests_of_a_scheduled_pod() -> None:
    assert non_zero_requests(PodResources(containers=(c(),))) == (100, 200 * MI)
    assert non_zero_requests(PodResources()) == (0, 0)
    pod = PodResources(containers=(c(cpu=0), c()), pod_level_requests={"memory": 5})
    # feature off: every container without a request gets the defaults
    assert non_zero_requests(pod) == (100, 400 * MI)
    # pod-level set: cpu is requested (an explicit zero), so no default; memory from pod level
    assert non_zero_requests(pod, pod_level_resources=True) == (0, 5)


def test_pod_footprint_keeps_only_tracked_names() -> None:
    pod = PodResources(containers=(Container("c", {"cpu": 5, "pods": 1, "foo": 3, "a.io/b": 2}),))
    footprint = pod_footprint(pod)
    assert dict(footprint.requests) == {"cpu": 5, "a.io/b": 2}
    assert (footprint.non_zero_cpu, footprint.non_zero_memory) == (5, 200 * MI)


# --- API defaulting of pod-level requests -----------------------------------------------------


def test_pod_level_requests_default_from_limits_and_containers() -> None:
    spec = {
        "containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}],
        "resources": {"limits": {"cpu": "4", "memory": "1Gi"}},
    }
    pod = parse_pod_resources(spec)
    # cpu: the containers' aggregate; memory: nobody requests it, so the pod-level limit
    assert pod.pod_level_requests == {"cpu": 1000, "memory": 1024 * MI}


def test_pod_level_requests_untouched_without_limits() -> None:
    pod = parse_pod_resources({"containers": [], "resources": {"requests": {"cpu": "2"}}})
    assert pod.pod_level_requests == {"cpu": 2000}
    assert parse_pod_resources({"containers": []}).pod_level_requests is None


def test_pod_level_hugepages_default_from_container_limits() -> None:
    containers = (Container("a", {"hugepages-2Mi": 4}, {"hugepages-2Mi": 4}),)
    defaulted = default_pod_level_requests(containers, (), {"cpu": 1}, None)
    assert defaulted == {"cpu": 1, "hugepages-2Mi": 4}
    # no pod-level resources at all: nothing is defaulted
    assert default_pod_level_requests(containers, (), None, None) is None


# --- nodes ----------------------------------------------------------------------------------------


def test_node_resources_from_allocatable_and_capacity_fallback() -> None:
    node = NodeResources.from_allocatable(
        {"cpu": "4", "memory": "8Gi", "pods": "110", "nvidia.com/gpu": "8", "foo": "1"}
    )
    assert node.allocatable == {"cpu": 4000, "memory": 8192 * MI, "nvidia.com/gpu": 8}
    assert node.allowed_pods == 110
    from_capacity = parse_node_resources({"status": {"capacity": {"cpu": "2", "pods": "3"}}})
    assert (from_capacity.allocatable, from_capacity.allowed_pods) == ({"cpu": 2000}, 3)


def test_node_add_and_remove_pod() -> None:
    node = NodeResources({"cpu": 1000}, 10)
    footprint = pod_footprint(PodResources(containers=(c(cpu=300),)))
    node.add_pod(footprint)
    node.add_pod(footprint)
    assert (node.requested, node.non_zero_cpu, node.non_zero_memory, node.pod_count) == (
        {"cpu": 600},
        600,
        400 * MI,
        2,
    )
    node.remove_pod(footprint)
    assert (node.requested, node.pod_count) == ({"cpu": 300}, 1)


def test_parse_node_resources_bad_input() -> None:
    with pytest.raises(FieldError) as err:
        parse_node_resources({"status": {"allocatable": {"cpu": "1x"}}}, ("node",))
    assert err.value.path == ("node", "status", "allocatable", "cpu")
    with pytest.raises(FieldError):
        parse_node_resources({"status": []})
