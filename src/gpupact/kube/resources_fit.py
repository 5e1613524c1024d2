"""kube-scheduler NodeResourcesFit (filter and scoring strategies) and
NodeResourcesBalancedAllocation.

Semantics follow upstream pkg/scheduler/framework/plugins/noderesources (fit.go,
resource_allocation.go, least_allocated.go, most_allocated.go, requested_to_capacity_ratio.go,
balanced_allocation.go), helper/shape_score.go and the plugin-args validation:

- Filter: "Too many pods" first (pods on the node + 1 > allocatable pods); then cpu, memory,
  ephemeral-storage and each scalar resource the pod requests (> 0), in that order. A resource
  whose request exceeds the node's whole allocatable is unresolvable (preemption cannot help)
  and turns the status into UnschedulableAndUnresolvable. ignoredResources /
  ignoredResourceGroups skip extended resources only.
- Scores: each configured resource is scored where the node has it (allocatable > 0); an
  extended resource the pod does not request is left out. cpu / memory use the node's
  non-zero requests (a container without a request counts as 100m / 200Mi), except in
  BalancedAllocation. LeastAllocated and MostAllocated are weighted int64 means;
  RequestedToCapacityRatio maps utilisation through a broken-linear shape (config scores x10)
  and rounds a float64 mean; BalancedAllocation is 100 x (1 - std-dev of the fractions), in
  float64 as upstream.

Integer arithmetic mirrors Go int64: products wrap at 64 bits and division truncates towards
zero (the same results numpy int64 columns give). Scalar resources are checked in name order
(upstream iterates a Go map, whose order is random).

The per-node scoring functions take plain int sequences so the engine can reuse the exact
formulas over node columns.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpupact.errors import FieldError, PathPart
from gpupact.kube.fields import INT64_MIN, integer, optional_list, optional_mapping, string
from gpupact.kube.requests import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    NON_ZERO_DEFAULTS,
    NodeResources,
    PodResources,
    is_extended_resource_name,
    is_scalar_resource_name,
    pod_requests,
)
from gpupact.kube.status import MAX_NODE_SCORE, SUCCESS, Code, Status
from gpupact.kube.validation import (
    FIELD_VALUE_DUPLICATE,
    FIELD_VALUE_INVALID,
    FIELD_VALUE_NOT_SUPPORTED,
    FIELD_VALUE_REQUIRED,
    FieldIssue,
    is_qualified_name,
    supported_values,
)

PLUGIN_NAME = "NodeResourcesFit"
BALANCED_ALLOCATION_NAME = "NodeResourcesBalancedAllocation"

MAX_CUSTOM_PRIORITY_SCORE = 10  # RequestedToCapacityRatio shape scores are on 0..10
MAX_UTILIZATION = 100
MAX_RESOURCE_WEIGHT = 100

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
SCORING_STRATEGY_TYPES = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)

REASON_TOO_MANY_PODS = "Too many pods"
REASON_SIDECARS_DISABLED = (
    "Pod has a restartable init container and the SidecarContainers feature is disabled"
)
REASON_RESOURCES_NOT_FOUND = "resources not found"

# field.ErrorType strings (apimachinery util/validation/field)
INVALID = FIELD_VALUE_INVALID
REQUIRED = FIELD_VALUE_REQUIRED
NOT_SUPPORTED = FIELD_VALUE_NOT_SUPPORTED
DUPLICATE = FIELD_VALUE_DUPLICATE

# --- Go int64 arithmetic ------------------------------------------------------------------------

_UINT64_MASK = 2**64 - 1


def wrap_int64(value: int) -> int:
    """The int64 a Go expression yields when the exact result overflows (two's complement)."""
    return ((value - INT64_MIN) & _UINT64_MASK) + INT64_MIN


def go_div(numerator: int, denominator: int) -> int:
    """Go integer division: truncates towards zero (Python's // floors)."""
    quotient = abs(numerator) // abs(denominator)
    return quotient if (numerator < 0) == (denominator < 0) else -quotient


def go_round(value: float) -> int:
    """math.Round: half away from zero."""
    whole = math.trunc(value)
    if abs(value - whole) >= 0.5:  # exact: value - trunc(value) never rounds
        whole += 1 if value > 0 else -1
    return int(whole)


# --- configuration (NodeResourcesFitArgs, NodeResourcesBalancedAllocationArgs) ---------------


@dataclass(frozen=True, slots=True)
class ResourceSpec:
    name: str
    weight: int = 1


@dataclass(frozen=True, slots=True)
class ShapePoint:
    """A RequestedToCapacityRatio point on the configuration scale: utilization 0..100,
    score 0..10."""

    utilization: int
    score: int


DEFAULT_RESOURCES: tuple[ResourceSpec, ...] = (ResourceSpec(CPU, 1), ResourceSpec(MEMORY, 1))


@dataclass(frozen=True, slots=True)
class ScoringStrategy:
    """Internal (already defaulted) form. `resources=()` is accepted and makes Score fail with
    "resources not found", as upstream; `parse_fit_args` applies the v1 defaults instead."""

    type: str = LEAST_ALLOCATED
    resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES
    shape: tuple[ShapePoint, ...] | None = None  # RequestedToCapacityRatio only


@dataclass(frozen=True, slots=True)
class FitArgs:
    ignored_resources: tuple[str, ...] = ()
    ignored_resource_groups: tuple[str, ...] = ()
    scoring_strategy: ScoringStrategy | None = ScoringStrategy()


@dataclass(frozen=True, slots=True)
class ConfigError(FieldIssue):
    """One plugin-args validation error (a field.Error), shown as `field: type: detail`."""

    @property
    def value(self) -> Any:
        return self.bad_value

    def __str__(self) -> str:
        return f"{self.field}: {self.type}: {self.detail}"


class FitArgsError(ValueError):
    """Plugin args rejected by validation (NewFit / NewBalancedAllocation fail)."""

    def __init__(self, errors: Sequence[ConfigError]) -> None:
        self.errors: tuple[ConfigError, ...] = tuple(errors)
        super().__init__("; ".join(str(e) for e in self.errors))


def _validate_qualified_names(names: Sequence[str], key: str) -> list[ConfigError]:
    errors = []
    for i, name in enumerate(names):
        if key == "ignoredResourceGroups" and "/" in name:
            errors.append(
                ConfigError(INVALID, (key, i), name, "resource group name can't contain '/'")
            )
        if not is_qualified_name(name):
            errors.append(
                ConfigError(INVALID, (key, i), name, "must be a qualified name ([prefix/]name)")
            )
    return errors


def _validate_resources(resources: Sequence[ResourceSpec]) -> list[ConfigError]:
    return [
        ConfigError(
            INVALID,
            ("scoringStrategy", "resources", i, "weight"),
            spec.weight,
            f"resource weight of {spec.name} not in valid range (0, {MAX_RESOURCE_WEIGHT}]",
        )
        for i, spec in enumerate(resources)
        if not 0 < spec.weight <= MAX_RESOURCE_WEIGHT
    ]


def _validate_shape(shape: Sequence[ShapePoint]) -> list[ConfigError]:
    base: tuple[PathPart, ...] = ("scoringStrategy", "shape")
    if not shape:
        return [ConfigError(REQUIRED, base, None, "at least one point must be specified")]
    errors = []
    for i in range(1, len(shape)):
        if shape[i - 1].utilization >= shape[i].utilization:
            errors.append(
                ConfigError(
                    INVALID,
                    (*base, i, "utilization"),
                    shape[i].utilization,
                    "values must be sorted in increasing order",
                )
            )
            break
    for i, point in enumerate(shape):
        for name, value, highest in (
            ("utilization", point.utilization, MAX_UTILIZATION),
            ("score", point.score, MAX_CUSTOM_PRIORITY_SCORE),
        ):
            if not 0 <= value <= highest:
                errors.append(
                    ConfigError(
                        INVALID, (*base, i, name), value, f"not in valid range [0, {highest}]"
                    )
                )
    return errors


def validate_fit_args(args: FitArgs) -> list[ConfigError]:
    """ValidateNodeResourcesFitArgs, plus NewFit's own checks (a strategy is required; a
    RequestedToCapacityRatio strategy needs a shape)."""
    errors = _validate_qualified_names(args.ignored_resources, "ignoredResources")
    errors += _validate_qualified_names(args.ignored_resource_groups, "ignoredResourceGroups")
    strategy = args.scoring_strategy
    if strategy is None:
        errors.append(
            ConfigError(REQUIRED, ("scoringStrategy",), None, "scoring strategy not specified")
        )
        return errors
    if strategy.type not in SCORING_STRATEGY_TYPES:
        errors.append(
            ConfigError(
                NOT_SUPPORTED,
                ("scoringStrategy", "type"),
                strategy.type,
                supported_values(sorted(SCORING_STRATEGY_TYPES)),
            )
        )
    errors += _validate_resources(strategy.resources)
    if strategy.shape is not None or strategy.type == REQUESTED_TO_CAPACITY_RATIO:
        errors += _validate_shape(strategy.shape or ())
    return errors


def validate_balanced_allocation_args(resources: Sequence[ResourceSpec]) -> list[ConfigError]:
    """ValidateNodeResourcesBalancedAllocationArgs: unique names, every weight exactly 1."""
    errors = []
    seen: set[str] = set()
    for i, spec in enumerate(resources):
        if spec.name in seen:
            errors.append(ConfigError(DUPLICATE, ("resources", i, "name"), spec.name, "Duplicate"))
        seen.add(spec.name)
        if spec.weight != 1:
            errors.append(
                ConfigError(INVALID, ("resources", i, "weight"), spec.weight, "must be 1")
            )
    return errors


def _parse_resource_specs(obj: Any, path: Sequence[PathPart]) -> tuple[ResourceSpec, ...]:
    specs = []
    for i, item in enumerate(optional_list(obj, path)):
        body = optional_mapping(item, (*path, i))
        # v1 defaulting: an unset or zero weight becomes 1
        weight = integer(body.get("weight"), (*path, i, "weight")) or 1
        specs.append(ResourceSpec(string(body.get("name"), (*path, i, "name")), weight))
    return tuple(specs)


def _parse_shape(obj: Any, path: Sequence[PathPart]) -> tuple[ShapePoint, ...]:
    points = []
    for i, item in enumerate(optional_list(obj, path)):
        body = optional_mapping(item, (*path, i))
        utilization = integer(body.get("utilization"), (*path, i, "utilization"))
        points.append(ShapePoint(utilization, integer(body.get("score"), (*path, i, "score"))))
    return tuple(points)


def _raise_first(errors: Sequence[ConfigError], path: Sequence[PathPart]) -> None:
    if errors:
        first = errors[0]
        raise FieldError((*path, *first.path), f"{first.detail} (got {first.value!r})")


def parse_fit_args(obj: Any, path: Sequence[PathPart] = ()) -> FitArgs:
    """NodeResourcesFitArgs from its v1 JSON/YAML form, with the v1 defaults (LeastAllocated
    over cpu:1, memory:1; an empty resource list takes those two; weight 0 means 1), then
    validated (the first error raises FieldError)."""
    body = optional_mapping(obj, path)

    def names(key: str) -> tuple[str, ...]:
        items = optional_list(body.get(key), (*path, key))
        return tuple(string(v, (*path, key, i)) for i, v in enumerate(items))

    strategy_obj = body.get("scoringStrategy")
    if strategy_obj is None:
        strategy = ScoringStrategy()
    else:
        spath = (*path, "scoringStrategy")
        sbody = optional_mapping(strategy_obj, spath)
        resources = _parse_resource_specs(sbody.get("resources"), (*spath, "resources"))
        rtcr = optional_mapping(
            sbody.get("requestedToCapacityRatio"), (*spath, "requestedToCapacityRatio")
        )
        shape = None
        if rtcr.get("shape") is not None:
            shape = _parse_shape(rtcr["shape"], (*spath, "requestedToCapacityRatio", "shape"))
        strategy = ScoringStrategy(
            type=string(sbody.get("type"), (*spath, "type")),
            resources=resources or DEFAULT_RESOURCES,
            shape=shape,
        )
    args = FitArgs(names("ignoredResources"), names("ignoredResourceGroups"), strategy)
    _raise_first(validate_fit_args(args), path)
    return args


def parse_balanced_allocation_args(
    obj: Any, path: Sequence[PathPart] = ()
) -> tuple[ResourceSpec, ...]:
    """NodeResourcesBalancedAllocationArgs (`resources`), v1 defaults applied, validated."""
    body = optional_mapping(obj, path)
    resources = _parse_resource_specs(body.get("resources"), (*path, "resources"))
    resources = resources or DEFAULT_RESOURCES
    _raise_first(validate_balanced_allocation_args(resources), path)
    return resources


# --- Filter ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class InsufficientResource:
    resource_name: str
    reason: str
    requested: int
    used: int
    capacity: int
    # the request exceeds the node's whole allocatable: preempting pods there cannot help
    unresolvable: bool = False


@dataclass(frozen=True, slots=True)
class FitRequest:
    """The pod's request as the filter checks it (PreFilter state): cpu in millicores,
    scalar resources sorted by name (explicit zeros kept, as upstream)."""

    milli_cpu: int = 0
    memory: int = 0
    ephemeral_storage: int = 0
    scalars: tuple[tuple[str, int], ...] = ()

    @property
    def is_empty(self) -> bool:
        return not (self.milli_cpu or self.memory or self.ephemeral_storage or self.scalars)


def compute_fit_request(pod: PodResources, *, pod_level_resources: bool = False) -> FitRequest:
    """computePodResourceRequest: PodRequests seen through `framework.Resource.SetMaxResource`
    (only cpu, memory, ephemeral-storage and scalar names; pods and unknown names dropped)."""
    requests = pod_requests(pod, pod_level_resources=pod_level_resources)
    scalars = tuple(
        sorted(
            (name, max(0, amount))
            for name, amount in requests.items()
            if is_scalar_resource_name(name)
        )
    )
    return FitRequest(
        max(0, requests.get(CPU, 0)),
        max(0, requests.get(MEMORY, 0)),
        max(0, requests.get(EPHEMERAL_STORAGE, 0)),
        scalars,
    )


def _check(
    out: list[InsufficientResource],
    name: str,
    reason: str,
    request: int,
    allocatable: Mapping[str, int],
    requested: Mapping[str, int],
) -> None:
    capacity = allocatable.get(name, 0)
    used = requested.get(name, 0)
    if request > capacity - used:
        out.append(InsufficientResource(name, reason, request, used, capacity, request > capacity))


def is_ignored_extended_resource(
    name: str,
    ignored_resources: Collection[str],
    ignored_resource_groups: Collection[str],
) -> bool:
    """fitsRequest skips an extended resource named in ignoredResources, or whose prefix (the
    part before "/") is in ignoredResourceGroups: something other than the scheduler checks it."""
    return is_extended_resource_name(name) and (
        name in ignored_resources
        or bool(ignored_resource_groups and name.split("/", 1)[0] in ignored_resource_groups)
    )


def fits_request(
    request: FitRequest,
    node: NodeResources,
    *,
    ignored_resources: frozenset[str] | set[str] = frozenset(),
    ignored_resource_groups: frozenset[str] | set[str] = frozenset(),
) -> list[InsufficientResource]:
    """fitsRequest: every way the node falls short, in upstream order (empty: it fits)."""
    out: list[InsufficientResource] = []
    if node.pod_count + 1 > node.allowed_pods:
        out.append(
            InsufficientResource("pods", REASON_TOO_MANY_PODS, 1, node.pod_count, node.allowed_pods)
        )
    if request.is_empty:
        return out
    allocatable, requested = node.allocatable, node.requested
    if request.milli_cpu > 0:
        _check(out, CPU, "Insufficient cpu", request.milli_cpu, allocatable, requested)
    if request.memory > 0:
        _check(out, MEMORY, "Insufficient memory", request.memory, allocatable, requested)
    if request.ephemeral_storage > 0:
        _check(
            out,
            EPHEMERAL_STORAGE,
            "Insufficient ephemeral-storage",
            request.ephemeral_storage,
            allocatable,
            requested,
        )
    for name, amount in request.scalars:
        if amount == 0:
            continue
        if is_ignored_extended_resource(name, ignored_resources, ignored_resource_groups):
            continue
        _check(out, name, f"Insufficient {name}", amount, allocatable, requested)
    return out


def fit_status(insufficient: Sequence[InsufficientResource]) -> Status:
    """Filter's status from the shortfalls: all reasons kept; unresolvable if any is."""
    if not insufficient:
        return SUCCESS
    code = (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        if any(r.unresolvable for r in insufficient)
        else Code.UNSCHEDULABLE
    )
    return Status(code, tuple(r.reason for r in insufficient), PLUGIN_NAME)


# --- Score: per-node formulas on plain ints -----------------------------------------------------


def least_requested_score(requested: int, capacity: int) -> int:
    """Free share of one resource, 0..100."""
    if capacity == 0 or requested > capacity:
        return 0
    return go_div(wrap_int64((capacity - requested) * MAX_NODE_SCORE), capacity)


def most_requested_score(requested: int, capacity: int) -> int:
    """Used share of one resource, 0..100 (requests above capacity count as full)."""
    if capacity == 0:
        return 0
    requested = min(requested, capacity)
    return go_div(wrap_int64(requested * MAX_NODE_SCORE), capacity)


def _weighted_mean(
    per_resource: Callable[[int, int], int],
    requested: Sequence[int],
    allocatable: Sequence[int],
    weights: Sequence[int],
) -> int:
    node_score = weight_sum = 0
    for req, alloc, weight in zip(requested, allocatable, weights, strict=True):
        if alloc == 0:
            continue
        node_score += per_resource(req, alloc) * weight
        weight_sum += weight
    if weight_sum == 0:
        return 0
    return go_div(wrap_int64(node_score), wrap_int64(weight_sum))


def score_least_allocated(
    requested: Sequence[int], allocatable: Sequence[int], weights: Sequence[int]
) -> int:
    """LeastAllocated: weighted int64 mean of the free shares (resources with allocatable 0
    left out)."""
    return _weighted_mean(least_requested_score, requested, allocatable, weights)


def score_most_allocated(
    requested: Sequence[int], allocatable: Sequence[int], weights: Sequence[int]
) -> int:
    """MostAllocated: weighted int64 mean of the used shares."""
    return _weighted_mean(most_requested_score, requested, allocatable, weights)


def build_broken_linear_function(
    shape: Sequence[tuple[int, int]] | Sequence[ShapePoint],
) -> Callable[[int], int]:
    """helper.BuildBrokenLinearFunction over (utilization, score) points sorted by utilization:
    the first score below the first point, the last above the last, linear in between with
    int64 truncating division."""
    points = tuple(
        (p.utilization, p.score) if isinstance(p, ShapePoint) else (int(p[0]), int(p[1]))
        for p in shape
    )
    if not points:
        raise ValueError("a broken-linear function needs at least one point")

    def function(p: int) -> int:
        for i, (utilization, score) in enumerate(points):
            if p <= utilization:
                if i == 0:
                    return score
                prev_utilization, prev_score = points[i - 1]
                step = go_div(
                    wrap_int64((score - prev_score) * (p - prev_utilization)),
                    utilization - prev_utilization,
                )
                return wrap_int64(prev_score + step)
        return points[-1][1]

    return function


def scale_shape(shape: Sequence[ShapePoint]) -> tuple[tuple[int, int], ...]:
    """Configuration scores (0..10) onto node scores (0..100), as the plugin does before
    building the broken-linear function."""
    factor = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
    return tuple((p.utilization, p.score * factor) for p in shape)


def requested_to_capacity_ratio_score(
    requested: int, capacity: int, function: Callable[[int], int]
) -> int:
    """One resource: the shape at its utilisation (full when over capacity)."""
    if capacity == 0 or requested > capacity:
        return function(MAX_UTILIZATION)
    return function(go_div(wrap_int64(requested * MAX_UTILIZATION), capacity))


def score_requested_to_capacity_ratio(
    requested: Sequence[int],
    allocatable: Sequence[int],
    weights: Sequence[int],
    function: Callable[[int], int],
) -> int:
    """RequestedToCapacityRatio: weighted mean of the positive per-resource scores, as
    math.Round(float64(sum) / float64(weights)) (zero scores are left out of the mean)."""
    node_score = weight_sum = 0
    for req, alloc, weight in zip(requested, allocatable, weights, strict=True):
        if alloc == 0:
            continue
        score = requested_to_capacity_ratio_score(req, alloc, function)
        if score > 0:
            node_score += score * weight
            weight_sum += weight
    if weight_sum == 0:
        return 0
    return go_round(float(wrap_int64(node_score)) / float(wrap_int64(weight_sum)))


def score_balanced_allocation(requested: Sequence[int], allocatable: Sequence[int]) -> int:
    """BalancedAllocation: int64((1 - std) * 100) over the used fractions (capped at 1) of the
    resources the node has; float64 exactly as upstream (two fractions: |f0 - f1| / 2)."""
    fractions: list[float] = []
    total = 0.0
    for req, alloc in zip(requested, allocatable, strict=True):
        if alloc == 0:
            continue
        fraction = float(req) / float(alloc)
        if fraction > 1:
            fraction = 1.0
        total += fraction
        fractions.append(fraction)
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = total / float(len(fractions))
        squares = 0.0
        for fraction in fractions:
            squares = squares + (fraction - mean) * (fraction - mean)
        std = math.sqrt(squares / float(len(fractions)))
    return int((1 - std) * float(MAX_NODE_SCORE))


# --- Score: from a pod and a node ----------------------------------------------------------------


def pod_score_requests(
    pod: PodResources,
    resources: Sequence[ResourceSpec],
    *,
    use_requested: bool = False,
    pod_level_resources: bool = False,
) -> list[int]:
    """calculatePodResourceRequestList (PreScore): the pod's request per configured resource;
    unless `use_requested`, a container's missing cpu / memory counts as 100m / 200Mi."""
    requests = pod_requests(
        pod,
        pod_level_resources=pod_level_resources,
        non_missing=None if use_requested else NON_ZERO_DEFAULTS,
    )
    return [requests.get(spec.name, 0) for spec in resources]


def resource_allocatable_request(
    node: NodeResources, resource: str, pod_request: int, *, use_requested: bool = False
) -> tuple[int, int]:
    """calculateResourceAllocatableRequest: (allocatable, requested incl. the pod) of one
    resource on the node; (0, 0) leaves the resource out of the score."""
    if pod_request == 0 and is_scalar_resource_name(resource):
        return 0, 0  # an extended resource the pod does not ask for is not scored
    if resource == CPU:
        used = node.requested.get(CPU, 0) if use_requested else node.non_zero_cpu
        return node.allocatable.get(CPU, 0), used + pod_request
    if resource == MEMORY:
        used = node.requested.get(MEMORY, 0) if use_requested else node.non_zero_memory
        return node.allocatable.get(MEMORY, 0), used + pod_request
    if resource == EPHEMERAL_STORAGE:
        allocatable = node.allocatable.get(EPHEMERAL_STORAGE, 0)
        return allocatable, node.requested.get(EPHEMERAL_STORAGE, 0) + pod_request
    if is_scalar_resource_name(resource) and resource in node.allocatable:
        return node.allocatable[resource], node.requested.get(resource, 0) + pod_request
    return 0, 0


def node_score_inputs(
    node: NodeResources,
    resources: Sequence[ResourceSpec],
    pod_request_list: Sequence[int],
    *,
    use_requested: bool = False,
) -> tuple[list[int], list[int]]:
    """(requested, allocatable) per configured resource, zeros where the node lacks it."""
    requested = [0] * len(resources)
    allocatable = [0] * len(resources)
    for i, spec in enumerate(resources):
        alloc, req = resource_allocatable_request(
            node, spec.name, pod_request_list[i], use_requested=use_requested
        )
        if alloc == 0:
            continue
        allocatable[i] = alloc
        requested[i] = req
    return requested, allocatable


Scorer = Callable[[Sequence[int], Sequence[int]], int]


def strategy_scorer(strategy: ScoringStrategy) -> Scorer:
    """The (requested, allocatable) -> score function of a validated strategy."""
    weights = tuple(spec.weight for spec in strategy.resources)
    if strategy.type == LEAST_ALLOCATED:
        return lambda requested, allocatable: score_least_allocated(requested, allocatable, weights)
    if strategy.type == MOST_ALLOCATED:
        return lambda requested, allocatable: score_most_allocated(requested, allocatable, weights)
    if strategy.type == REQUESTED_TO_CAPACITY_RATIO:
        function = build_broken_linear_function(scale_shape(strategy.shape or ()))
        return lambda requested, allocatable: score_requested_to_capacity_ratio(
            requested, allocatable, weights, function
        )
    raise ValueError(f"scoring strategy {strategy.type} is not supported")


def _score(
    scorer: Scorer,
    resources: Sequence[ResourceSpec],
    pod_request_list: Sequence[int],
    node: NodeResources,
    *,
    use_requested: bool,
    plugin: str,
) -> tuple[int, Status]:
    if not resources:
        return 0, Status(Code.ERROR, (REASON_RESOURCES_NOT_FOUND,), plugin)
    requested, allocatable = node_score_inputs(
        node, resources, pod_request_list, use_requested=use_requested
    )
    return scorer(requested, allocatable), SUCCESS


# --- the plugins ---------------------------------------------------------------------------------


class NodeResourcesFit:
    """The configured plugin: `pre_filter` / `filter` and `pre_score` / `score`.

    `pod_level_resources` and `sidecar_containers` are the PodLevelResources and
    SidecarContainers feature gates. Raises FitArgsError for invalid args."""

    name = PLUGIN_NAME

    def __init__(
        self,
        args: FitArgs | None = None,
        *,
        pod_level_resources: bool = False,
        sidecar_containers: bool = True,
    ) -> None:
        args = FitArgs() if args is None else args
        errors = validate_fit_args(args)
        if errors:
            raise FitArgsError(errors)
        assert args.scoring_strategy is not None  # validated above
        self.args = args
        self.pod_level_resources = pod_level_resources
        self.sidecar_containers = sidecar_containers
        self.ignored_resources = frozenset(args.ignored_resources)
        self.ignored_resource_groups = frozenset(args.ignored_resource_groups)
        self.resources = args.scoring_strategy.resources
        self.scorer = strategy_scorer(args.scoring_strategy)

    def pre_filter(self, pod: PodResources) -> tuple[FitRequest | None, Status]:
        if not self.sidecar_containers and pod.has_restartable_init_container:
            # an older kubelet would size the pod differently; upstream refuses it outright
            status = Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (REASON_SIDECARS_DISABLED,), PLUGIN_NAME
            )
            return None, status
        return compute_fit_request(pod, pod_level_resources=self.pod_level_resources), SUCCESS

    def filter(
        self, request: FitRequest, node: NodeResources
    ) -> tuple[Status, list[InsufficientResource]]:
        insufficient = fits_request(
            request,
            node,
            ignored_resources=self.ignored_resources,
            ignored_resource_groups=self.ignored_resource_groups,
        )
        return fit_status(insufficient), insufficient

    def pre_score(self, pod: PodResources) -> list[int]:
        return pod_score_requests(pod, self.resources, pod_level_resources=self.pod_level_resources)

    def score(self, pod_request_list: Sequence[int], node: NodeResources) -> tuple[int, Status]:
        return _score(
            self.scorer,
            self.resources,
            pod_request_list,
            node,
            use_requested=False,
            plugin=PLUGIN_NAME,
        )


class NodeResourcesBalancedAllocation:
    """NodeResourcesBalancedAllocation: real requests (no non-zero defaults); a best-effort
    pod (requests nothing configured) is not scored (PreScore Skip; Score gives 0)."""

    name = BALANCED_ALLOCATION_NAME

    def __init__(
        self,
        resources: Sequence[ResourceSpec] = DEFAULT_RESOURCES,
        *,
        pod_level_resources: bool = False,
    ) -> None:
        errors = validate_balanced_allocation_args(resources)
        if errors:
            raise FitArgsError(errors)
        self.resources = tuple(resources)
        self.pod_level_resources = pod_level_resources

    def pre_score(self, pod: PodResources) -> list[int] | None:
        """The pod's requests per resource, or None (upstream: Skip) for a best-effort pod."""
        requests = pod_score_requests(
            pod, self.resources, use_requested=True, pod_level_resources=self.pod_level_resources
        )
        return None if not any(requests) else requests

    def score(
        self, pod_request_list: Sequence[int] | None, node: NodeResources
    ) -> tuple[int, Status]:
        if pod_request_list is None or not any(pod_request_list):
            return 0, SUCCESS
        return _score(
            lambda requested, allocatable: score_balanced_allocation(requested, allocatable),
            self.resources,
            pod_request_list,
            node,
            use_requested=True,
            plugin=BALANCED_ALLOCATION_NAME,
        )
