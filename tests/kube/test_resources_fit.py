"""NodeResourcesFit filter and scoring strategies, BalancedAllocation, and their args."""

from __future__ import annotations

import pytest

from gpupact.errors import FieldError
from gpupact.kube.requests import Container, NodeResources, PodResources, pod_footprint
from gpupact.kube.resources_fit import (
    DEFAULT_RESOURCES,
    LEAST_ALLOCATED,
    MOST_ALLOCATED,
    REASON_SIDECARS_DISABLED,
    REQUESTED_TO_CAPACITY_RATIO,
    FitArgs,
    FitArgsError,
    FitRequest,
    NodeResourcesBalancedAllocation,
    NodeResourcesFit,
    ResourceSpec,
    ScoringStrategy,
    ShapePoint,
    build_broken_linear_function,
    compute_fit_request,
    fit_status,
    fits_request,
    go_div,
    go_round,
    least_requested_score,
    most_requested_score,
    parse_balanced_allocation_args,
    parse_fit_args,
    pod_score_requests,
    resource_allocatable_request,
    scale_shape,
    score_balanced_allocation,
    score_least_allocated,
    score_most_allocated,
    score_requested_to_capacity_ratio,
    validate_fit_args,
)
from gpupact.kube.status import SUCCESS, Code

MI = 1024 * 1024


def pod(*requests: dict[str, int], init: tuple[Container, ...] = ()) -> PodResources:
    return PodResources(
        containers=tuple(Container(f"c{i}", r) for i, r in enumerate(requests)),
        init_containers=init,
    )


def node(allocatable: dict[str, int], pods: int = 32, *existing: PodResources) -> NodeResources:
    result = NodeResources(dict(allocatable), pods)
    for p in existing:
        result.add_pod(pod_footprint(p))
    return result


# --- Filter ---------------------------------------------------------------------------------------


def test_filter_reports_every_shortfall_in_upstream_order() -> None:
    n = node(
        {"cpu": 10, "memory": 20, "ephemeral-storage": 5, "b.io/x": 1, "a.io/y": 1},
        1,
        pod({"cpu": 10, "memory": 20, "b.io/x": 1}),
    )
    request = compute_fit_request(
        pod({"cpu": 1, "memory": 1, "ephemeral-storage": 6, "b.io/x": 1, "a.io/y": 2})
    )
    got = fits_request(request, n)
    assert [r.reason for r in got] == [
        "Too many pods",
        "Insufficient cpu",
        "Insufficient memory",
        "Insufficient ephemeral-storage",
        "Insufficient a.io/y",  # scalars in name order
        "Insufficient b.io/x",
    ]
    assert [r.unresolvable for r in got] == [False, False, False, True, True, False]
    status = fit_status(got)
    assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.plugin == "NodeResourcesFit"


def test_filter_unschedulable_when_preemption_could_help() -> None:
    plugin = NodeResourcesFit()
    request, _ = plugin.pre_filter(pod({"cpu": 5}))
    status, insufficient = plugin.filter(request, node({"cpu": 10}, 32, pod({"cpu": 6})))
    assert status.code is Code.UNSCHEDULABLE
    assert status.reasons == ("Insufficient cpu",)
    assert (insufficient[0].requested, insufficient[0].used, insufficient[0].capacity) == (5, 6, 10)


def test_zero_requests_are_not_checked() -> None:
    # the node is over-committed on cpu and the gpu, but the pod asks for neither
    n = node({"cpu": 10, "nvidia.com/gpu": 1}, 32, pod({"cpu": 20, "nvidia.com/gpu": 2}))
    assert fits_request(compute_fit_request(pod({"cpu": 0, "nvidia.com/gpu": 0})), n) == []
    assert compute_fit_request(pod({"cpu": 0, "nvidia.com/gpu": 0})).scalars == (
        ("nvidia.com/gpu", 0),
    )


def test_unknown_and_pods_names_are_not_checked() -> None:
    request = compute_fit_request(pod({"foo": 5, "pods": 3}))
    assert request == FitRequest()
    assert fits_request(request, node({}, 1)) == []


def test_ignored_resources_apply_to_extended_resources_only() -> None:
    n = node({}, 32)
    request = compute_fit_request(
        pod({"example.com/a": 1, "other.org/b": 1, "kubernetes.io/c": 1, "hugepages-2Mi": 1})
    )
    args = FitArgs(
        ignored_resources=("example.com/a", "kubernetes.io/c", "hugepages-2Mi"),
        ignored_resource_groups=("other.org",),
    )
    status, insufficient = NodeResourcesFit(args).filter(request, n)
    assert [r.resource_name for r in insufficient] == ["hugepages-2Mi", "kubernetes.io/c"]
    assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def test_sidecars_refused_when_the_feature_is_off() -> None:
    sidecar = Container("s", {"cpu": 1}, {}, "Always")
    plain = pod({"cpu": 1}, init=(sidecar,))
    request, status = NodeResourcesFit(sidecar_containers=False).pre_filter(plain)
    assert request is None
    assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == (REASON_SIDECARS_DISABLED,)
    request, status = NodeResourcesFit().pre_filter(plain)
    assert status.ok and request == FitRequest(milli_cpu=2)


def test_pod_level_requests_only_with_the_feature() -> None:
    p = PodResources(containers=(Container("c", {"cpu": 1}),), pod_level_requests={"cpu": 7})
    assert compute_fit_request(p).milli_cpu == 1
    assert compute_fit_request(p, pod_level_resources=True).milli_cpu == 7


# --- pure scoring formulas ----------------------------------------------------------------------


def test_go_integer_division_and_rounding() -> None:
    assert go_div(-7, 2) == -3 and go_div(7, -2) == -3 and go_div(7, 2) == 3
    assert go_round(2.5) == 3 and go_round(-2.5) == -3 and go_round(0.49999999999999994) == 0


def test_least_and_most_requested() -> None:
    assert least_requested_score(3000, 10000) == 70
    assert least_requested_score(11, 10) == 0
    assert least_requested_score(0, 0) == 0
    assert most_requested_score(3333, 10000) == 33
    assert most_requested_score(20, 10) == 100  # capped at capacity
    # int64 overflow is mirrored: 2^62 * 100 wraps to 0 in Go
    assert most_requested_score(2**62, 2**62) == 0


def test_weighted_means_skip_missing_resources() -> None:
    assert score_least_allocated([3000, 4000], [6000, 10000], [1, 1]) == 55
    assert score_least_allocated([3000, 4000, 0], [6000, 10000, 0], [1, 1, 2]) == 55
    assert score_most_allocated([3000, 5000], [4000, 10000], [1, 2]) == 58
    assert score_most_allocated([0], [0], [1]) == 0


def test_broken_linear_function_truncates_towards_zero() -> None:
    f = build_broken_linear_function([(0, 100), (3, 0)])
    assert [f(p) for p in (-1, 0, 1, 2, 3, 50)] == [100, 100, 67, 34, 0, 0]
    g = build_broken_linear_function([(10, 1), (90, 9)])
    assert [g(p) for p in (0, 19, 20, 89, 100)] == [1, 1, 2, 8, 9]
    with pytest.raises(ValueError):
        build_broken_linear_function([])


def test_requested_to_capacity_ratio() -> None:
    shape = build_broken_linear_function(scale_shape((ShapePoint(0, 0), ShapePoint(100, 10))))
    # cpu over capacity -> 100; memory 90%; math.Round of the float mean
    assert score_requested_to_capacity_ratio([5000, 9000], [4000, 10000], [1, 1], shape) == 95
    assert score_requested_to_capacity_ratio([4000, 7000], [6000, 10000], [1, 1], shape) == 68
    # zero per-resource scores are left out of the mean
    falling = build_broken_linear_function(scale_shape((ShapePoint(0, 10), ShapePoint(100, 0))))
    assert score_requested_to_capacity_ratio([5000, 9000], [4000, 10000], [1, 1], falling) == 10
    assert score_requested_to_capacity_ratio([0], [0], [1], falling) == 0


def test_balanced_allocation_formula() -> None:
    assert score_balanced_allocation([3000, 5000], [4000, 10000]) == 87
    assert score_balanced_allocation([1, 1, 4], [2, 2, 2]) == 76  # fraction capped at 1
    assert score_balanced_allocation([5], [10]) == 100
    assert score_balanced_allocation([5, 7], [0, 0]) == 100


# --- scoring from pods and nodes -----------------------------------------------------------------


def test_pod_score_requests_non_zero_defaults() -> None:
    p = pod({}, {"cpu": 300})
    assert pod_score_requests(p, DEFAULT_RESOURCES) == [400, 400 * MI]
    assert pod_score_requests(p, DEFAULT_RESOURCES, use_requested=True) == [300, 0]


def test_resource_allocatable_request() -> None:
    n = node({"cpu": 1000, "ephemeral-storage": 50, "x.io/gpu": 4}, 32, pod({}))
    assert resource_allocatable_request(n, "cpu", 100) == (1000, 200)  # non-zero cpu of the pod
    assert resource_allocatable_request(n, "cpu", 100, use_requested=True) == (1000, 100)
    assert resource_allocatable_request(n, "ephemeral-storage", 5) == (50, 5)
    assert resource_allocatable_request(n, "x.io/gpu", 0) == (0, 0)  # not requested: skipped
    assert resource_allocatable_request(n, "x.io/gpu", 1) == (4, 1)
    assert resource_allocatable_request(n, "y.io/gpu", 1) == (0, 0)
    assert resource_allocatable_request(n, "pods", 1) == (0, 0)


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [(LEAST_ALLOCATED, 32), (MOST_ALLOCATED, 67)],
)
def test_plugin_scores(strategy: str, expected: int) -> None:
    plugin = NodeResourcesFit(FitArgs(scoring_strategy=ScoringStrategy(strategy)))
    n = node({"cpu": 4_000_000, "memory": 10000}, 32, pod({"cpu": 2_000_000, "memory": 4000}))
    score, status = plugin.score(plugin.pre_score(pod({"cpu": 1_000_000, "memory": 2000})), n)
    assert (score, status.ok) == (expected, True)


def test_score_without_resources_is_an_error() -> None:
    plugin = NodeResourcesFit(FitArgs(scoring_strategy=ScoringStrategy(resources=())))
    score, status = plugin.score(plugin.pre_score(pod({"cpu": 1})), node({"cpu": 10}))
    assert (score, status.code, status.reasons) == (0, Code.ERROR, ("resources not found",))


def test_balanced_allocation_plugin() -> None:
    plugin = NodeResourcesBalancedAllocation()
    assert plugin.pre_score(pod({})) is None  # best effort: skipped
    assert plugin.score(None, node({"cpu": 10})) == (0, SUCCESS)
    n = node({"cpu": 4000, "memory": 10000}, 32, pod({"cpu": 2000, "memory": 2000}))
    requests = plugin.pre_score(pod({"cpu": 1000, "memory": 3000}))
    assert requests == [1000, 3000]
    assert plugin.score(requests, n)[0] == 87
    with pytest.raises(FitArgsError) as err:
        NodeResourcesBalancedAllocation((ResourceSpec("cpu", 2), ResourceSpec("cpu", 1)))
    assert [(e.type, e.field) for e in err.value.errors] == [
        ("FieldValueInvalid", "resources[0].weight"),
        ("FieldValueDuplicate", "resources[1].name"),
    ]


# --- args ----------------------------------------------------------------------------------------


def _errors(args: FitArgs) -> list[tuple[str, str]]:
    return [(e.type, e.field) for e in validate_fit_args(args)]


def test_validate_fit_args() -> None:
    assert _errors(FitArgs()) == []
    assert _errors(FitArgs(scoring_strategy=None)) == [("FieldValueRequired", "scoringStrategy")]
    bad_weights = ScoringStrategy(resources=(ResourceSpec("cpu", 0), ResourceSpec("memory", 101)))
    assert _errors(FitArgs(scoring_strategy=bad_weights)) == [
        ("FieldValueInvalid", "scoringStrategy.resources[0].weight"),
        ("FieldValueInvalid", "scoringStrategy.resources[1].weight"),
    ]
    assert _errors(FitArgs(scoring_strategy=ScoringStrategy("Best"))) == [
        ("FieldValueNotSupported", "scoringStrategy.type")
    ]
    assert _errors(FitArgs(scoring_strategy=ScoringStrategy(REQUESTED_TO_CAPACITY_RATIO))) == [
        ("FieldValueRequired", "scoringStrategy.shape")
    ]
    shape = (ShapePoint(50, 1), ShapePoint(50, 11), ShapePoint(101, 0))
    assert _errors(
        FitArgs(scoring_strategy=ScoringStrategy(REQUESTED_TO_CAPACITY_RATIO, shape=shape))
    ) == [
        ("FieldValueInvalid", "scoringStrategy.shape[1].utilization"),
        ("FieldValueInvalid", "scoringStrategy.shape[1].score"),
        ("FieldValueInvalid", "scoringStrategy.shape[2].utilization"),
    ]
    assert _errors(FitArgs(ignored_resources=("bad name",), ignored_resource_groups=("a/b",))) == [
        ("FieldValueInvalid", "ignoredResources[0]"),
        ("FieldValueInvalid", "ignoredResourceGroups[0]"),
    ]


def test_invalid_args_refuse_the_plugin() -> None:
    with pytest.raises(FitArgsError) as err:
        NodeResourcesFit(
            FitArgs(scoring_strategy=ScoringStrategy(resources=(ResourceSpec("cpu", 0),)))
        )
    assert err.value.errors[0].field == "scoringStrategy.resources[0].weight"
    assert "not in valid range" in str(err.value)


def test_parse_fit_args_applies_v1_defaults() -> None:
    assert parse_fit_args(None) == FitArgs()
    args = parse_fit_args(
        {
            "ignoredResourceGroups": ["example.com"],
            "scoringStrategy": {
                "type": "RequestedToCapacityRatio",
                "resources": [{"name": "nvidia.com/gpu"}, {"name": "cpu", "weight": 3}],
                "requestedToCapacityRatio": {
                    "shape": [{"utilization": 0}, {"utilization": 100, "score": 10}]
                },
            },
        }
    )
    assert args.ignored_resource_groups == ("example.com",)
    assert args.scoring_strategy == ScoringStrategy(
        REQUESTED_TO_CAPACITY_RATIO,
        (ResourceSpec("nvidia.com/gpu", 1), ResourceSpec("cpu", 3)),
        (ShapePoint(0, 0), ShapePoint(100, 10)),
    )
    empty = parse_fit_args({"scoringStrategy": {"type": "MostAllocated", "resources": []}})
    assert empty.scoring_strategy == ScoringStrategy(MOST_ALLOCATED, DEFAULT_RESOURCES)


@pytest.mark.parametrize(
    ("obj", "path"),
    [
        ({"ignoredResources": "cpu"}, ("args", "ignoredResources")),
        ({"ignoredResources": [1]}, ("args", "ignoredResources", 0)),
        (
            {"scoringStrategy": {"resources": [{"name": "cpu", "weight": "1"}]}},
            ("args", "scoringStrategy", "resources", 0, "weight"),
        ),
        (
            {
                "scoringStrategy": {
                    "type": "LeastAllocated",
                    "resources": [{"name": "cpu", "weight": 200}],
                }
            },
            ("args", "scoringStrategy", "resources", 0, "weight"),
        ),
        ({"scoringStrategy": {"type": "Nope"}}, ("args", "scoringStrategy", "type")),
        ({"scoringStrategy": []}, ("args", "scoringStrategy")),
        ("fit", ("args",)),
    ],
)
def test_parse_fit_args_bad_input(obj: object, path: tuple) -> None:
    with pytest.raises(FieldError) as err:
        parse_fit_args(obj, ("args",))
    assert err.value.path == path


def test_parse_balanced_allocation_args() -> None:
    assert parse_balanced_allocation_args({}) == DEFAULT_RESOURCES
    assert parse_balanced_allocation_args({"resources": [{"name": "nvidia.com/gpu"}]}) == (
        ResourceSpec("nvidia.com/gpu", 1),
    )
    with pytest.raises(FieldError) as err:
        parse_balanced_allocation_args({"resources": [{"name": "cpu", "weight": 2}]}, ("ba",))
    assert err.value.path == ("ba", "resources", 0, "weight")
