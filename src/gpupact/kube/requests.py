"""Pod resource requests as kube-scheduler accounts them.

Semantics follow upstream:
- k8s.io/component-helpers `resource.PodRequests`: regular containers add up; an init container
  runs alone, so the pod needs the max of the sum and each init container; restartable init
  containers (sidecars, `restartPolicy: Always`) keep running, so they add to the sum and to
  every later init container; pod-level requests (PodLevelResources) replace the aggregate for
  cpu, memory and hugepages-*; pod overhead is added last.
- API defaulting of a Pod (`SetDefaults_Pod`): a container request left out defaults to its
  limit; pod-level requests default from limits and container requests (PodLevelResources).
- kube-scheduler accounting (`framework.Resource`, `PodInfo.CalculateResource`): only cpu,
  memory, ephemeral-storage and "scalar" names (extended, hugepages-*, *kubernetes.io/*,
  attachable-volumes-*) are tracked; `NonZeroRequested` counts a missing cpu / memory request
  as 100m / 200Mi (scoring only).

Amounts are integers in the scheduler's units: cpu in millicores, everything else in base
units (bytes, counts). Each container's amount is rounded up on parsing; upstream keeps exact
quantities until the pod total, which only differs for sub-millicore cpu or fractional bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from gpupact.errors import FieldError, PathPart
from gpupact.kube.fields import (
    INT64_MAX,
    optional_list,
    optional_mapping,
    optional_string,
    string,
)
from gpupact.kube.quantity import resource_amount
from gpupact.kube.validation import is_qualified_name

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"
HUGEPAGES_PREFIX = "hugepages-"
ATTACHABLE_VOLUMES_PREFIX = "attachable-volumes-"
DEFAULT_NAMESPACE_PREFIX = "kubernetes.io/"
REQUESTS_PREFIX = "requests."  # quota names; an extended resource may not start with it
RESTART_POLICY_ALWAYS = "Always"

# schedutil.DefaultMilliCPURequest / DefaultMemoryRequest: what a container without a cpu /
# memory request counts as when scoring (never for the fit filter).
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024
NON_ZERO_DEFAULTS: Mapping[str, int] = {
    CPU: DEFAULT_MILLI_CPU_REQUEST,
    MEMORY: DEFAULT_MEMORY_REQUEST,
}

# --- resource name classes (pkg/apis/core/v1/helper) -------------------------------------------


def is_hugepages_resource_name(name: str) -> bool:
    return name.startswith(HUGEPAGES_PREFIX)


def is_native_resource(name: str) -> bool:
    """Unprefixed names are implicitly in the kubernetes.io/ namespace."""
    return "/" not in name or DEFAULT_NAMESPACE_PREFIX in name


@lru_cache(maxsize=4096)
def is_extended_resource_name(name: str) -> bool:
    """A domain-prefixed resource outside *kubernetes.io/ (e.g. nvidia.com/gpu): the only kind
    NodeResourcesFit's ignoredResources / ignoredResourceGroups can skip."""
    if is_native_resource(name) or name.startswith(REQUESTS_PREFIX):
        return False
    return is_qualified_name(REQUESTS_PREFIX + name)


@lru_cache(maxsize=4096)
def is_scalar_resource_name(name: str) -> bool:
    """schedutil.IsScalarResourceName: the names `framework.Resource` tracks besides cpu, memory,
    ephemeral-storage and pods."""
    return (
        is_extended_resource_name(name)
        or name.startswith(HUGEPAGES_PREFIX)
        or DEFAULT_NAMESPACE_PREFIX in name
        or name.startswith(ATTACHABLE_VOLUMES_PREFIX)
    )


def is_tracked_resource_name(name: str) -> bool:
    """Kept by the scheduler's `Resource.Add`: cpu, memory, ephemeral-storage or a scalar."""
    return name in (CPU, MEMORY, EPHEMERAL_STORAGE) or is_scalar_resource_name(name)


def is_supported_pod_level_resource(name: str) -> bool:
    return name in (CPU, MEMORY) or name.startswith(HUGEPAGES_PREFIX)


def is_overcommit_allowed(name: str) -> bool:
    return is_native_resource(name) and not name.startswith(HUGEPAGES_PREFIX)


# --- the objects ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Container:
    """A container's resources in scheduler units (requests already defaulted from limits)."""

    name: str = ""
    requests: Mapping[str, int] = field(default_factory=dict)
    limits: Mapping[str, int] = field(default_factory=dict)
    restart_policy: str | None = None

    @property
    def is_restartable_init(self) -> bool:
        """A sidecar when listed among init containers."""
        return self.restart_policy == RESTART_POLICY_ALWAYS


@dataclass(frozen=True, slots=True)
class PodResources:
    """What PodRequests reads from a PodSpec. `pod_level_requests` is `spec.resources.requests`
    (None when absent)."""

    containers: tuple[Container, ...] = ()
    init_containers: tuple[Container, ...] = ()
    overhead: Mapping[str, int] = field(default_factory=dict)
    pod_level_requests: Mapping[str, int] | None = None

    @property
    def has_restartable_init_container(self) -> bool:
        return any(c.is_restartable_init for c in self.init_containers)

    @property
    def pod_level_requests_set(self) -> bool:
        """resource.IsPodLevelRequestsSet: a supported resource is requested at pod level."""
        return bool(self.pod_level_requests) and any(
            is_supported_pod_level_resource(name) for name in self.pod_level_requests or ()
        )


# --- aggregation (component-helpers resource.PodRequests) -------------------------------------


def _add_into(total: dict[str, int], amounts: Mapping[str, int]) -> None:
    for name, amount in amounts.items():
        total[name] = total.get(name, 0) + amount


def _max_into(total: dict[str, int], amounts: Mapping[str, int]) -> None:
    for name, amount in amounts.items():
        if name not in total or amount > total[name]:
            total[name] = amount


def _fill_missing(
    amounts: Mapping[str, int], defaults: Mapping[str, int] | None
) -> Mapping[str, int]:
    """NonMissingContainerRequests: a resource the container does not list at all (an explicit
    zero counts as listed) takes the default."""
    if not defaults or all(name in amounts for name in defaults):
        return amounts
    filled = dict(amounts)
    for name, amount in defaults.items():
        filled.setdefault(name, amount)
    return filled


def aggregate_containers(
    containers: Sequence[Container],
    init_containers: Sequence[Container],
    pick: Callable[[Container], Mapping[str, int]],
    defaults: Mapping[str, int] | None = None,
) -> dict[str, int]:
    """The KEP-753 formula over one per-container list (`pick` chooses requests or limits):
    max(sum(containers) + sum(sidecars), max_i(init_i + sidecars started before i))."""
    total: dict[str, int] = {}
    for container in containers:
        _add_into(total, _fill_missing(pick(container), defaults))
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for container in init_containers:
        amounts = _fill_missing(pick(container), defaults)
        if container.is_restartable_init:
            # a sidecar keeps running next to everything that starts after it
            _add_into(total, amounts)
            _add_into(sidecars, amounts)
            _max_into(init_peak, sidecars)
        else:
            running = dict(amounts)
            _add_into(running, sidecars)
            _max_into(init_peak, running)
    _max_into(total, init_peak)
    return total


def _requests_of(container: Container) -> Mapping[str, int]:
    return container.requests


def _limits_of(container: Container) -> Mapping[str, int]:
    return container.limits


def pod_requests(
    pod: PodResources,
    *,
    pod_level_resources: bool = False,
    non_missing: Mapping[str, int] | None = None,
    exclude_overhead: bool = False,
) -> dict[str, int]:
    """resource.PodRequests: every requested resource name (zeros kept) -> amount.

    `pod_level_resources` is the PodLevelResources feature gate; `non_missing` fills requests
    a container does not list (scoring uses NON_ZERO_DEFAULTS)."""
    total = aggregate_containers(pod.containers, pod.init_containers, _requests_of, non_missing)
    if pod_level_resources and pod.pod_level_requests_set:
        for name, amount in (pod.pod_level_requests or {}).items():
            if is_supported_pod_level_resource(name):
                total[name] = amount
    if not exclude_overhead and pod.overhead:
        _add_into(total, pod.overhead)
    return total


def scheduler_view(amounts: Mapping[str, int]) -> dict[str, int]:
    """Only the names `framework.Resource` keeps (drops pods and unknown unprefixed names)."""
    return {name: amount for name, amount in amounts.items() if is_tracked_resource_name(name)}


def non_zero_requests(pod: PodResources, *, pod_level_resources: bool = False) -> tuple[int, int]:
    """(milli-cpu, memory) a scheduled pod adds to its node's NonZeroRequested
    (PodInfo.CalculateResource / getNonMissingContainerRequests)."""
    requests = pod_requests(pod, pod_level_resources=pod_level_resources)
    if pod_level_resources and pod.pod_level_requests_set:
        # with pod-level requests, only a resource requested nowhere gets the default
        defaults = {
            name: amount for name, amount in NON_ZERO_DEFAULTS.items() if name not in requests
        }
    else:
        defaults = dict(NON_ZERO_DEFAULTS)
    if defaults:
        requests = pod_requests(pod, pod_level_resources=pod_level_resources, non_missing=defaults)
    return requests.get(CPU, 0), requests.get(MEMORY, 0)


@dataclass(frozen=True, slots=True)
class PodFootprint:
    """What one scheduled pod adds to its node (fwk.PodResource): real requests in the
    scheduler's view, plus the non-zero cpu / memory used for scoring."""

    requests: Mapping[str, int]
    non_zero_cpu: int
    non_zero_memory: int


def pod_footprint(pod: PodResources, *, pod_level_resources: bool = False) -> PodFootprint:
    requests = scheduler_view(pod_requests(pod, pod_level_resources=pod_level_resources))
    cpu, memory = non_zero_requests(pod, pod_level_resources=pod_level_resources)
    return PodFootprint(requests, cpu, memory)


# --- a node's side -------------------------------------------------------------------------------


@dataclass(slots=True)
class NodeResources:
    """A node's allocatable and what its pods requested (framework.NodeInfo, resources only).

    `allocatable` and `requested` hold only tracked names (see `is_tracked_resource_name`);
    the allocatable pod count is `allowed_pods`."""

    allocatable: dict[str, int] = field(default_factory=dict)
    allowed_pods: int = 0
    requested: dict[str, int] = field(default_factory=dict)
    non_zero_cpu: int = 0
    non_zero_memory: int = 0
    pod_count: int = 0

    @classmethod
    def from_allocatable(
        cls, allocatable: Mapping[str, Any], path: Sequence[PathPart] = ()
    ) -> NodeResources:
        """From a `status.allocatable` ResourceList (quantity strings)."""
        return cls.from_amounts(parse_resource_list(allocatable, path))

    @classmethod
    def from_amounts(cls, amounts: Mapping[str, int]) -> NodeResources:
        """From allocatable already in integer base units (e.g. a parsed `Node`)."""
        return cls(allocatable=scheduler_view(amounts), allowed_pods=amounts.get(PODS, 0))

    def add_pod(self, footprint: PodFootprint) -> None:
        _add_into(self.requested, footprint.requests)
        self.non_zero_cpu += footprint.non_zero_cpu
        self.non_zero_memory += footprint.non_zero_memory
        self.pod_count += 1

    def remove_pod(self, footprint: PodFootprint) -> None:
        for name, amount in footprint.requests.items():
            self.requested[name] = self.requested.get(name, 0) - amount
        self.non_zero_cpu -= footprint.non_zero_cpu
        self.non_zero_memory -= footprint.non_zero_memory
        self.pod_count -= 1


def parse_node_resources(node: Any, path: Sequence[PathPart] = ()) -> NodeResources:
    """From a Node object: `status.allocatable`, or `status.capacity` when allocatable is
    absent (SetDefaults_NodeStatus)."""
    body = optional_mapping(node, path)
    status = optional_mapping(body.get("status"), (*path, "status"))
    key = "allocatable" if status.get("allocatable") is not None else "capacity"
    return NodeResources.from_allocatable(status.get(key), (*path, "status", key))


# --- parsing -----------------------------------------------------------------------------------


def parse_resource_list(obj: Any, path: Sequence[PathPart] = ()) -> dict[str, int]:
    """A ResourceList (`{"cpu": "500m", "nvidia.com/gpu": 1}`) in scheduler units. Quantities
    must parse and be non-negative (API validation), and fit in an int64 in scheduler units.

    The API server caps only BinarySI quantities (at 2**63-1, when parsing; see
    gpupact.kube.quantity); a larger decimal one ("100E", or cpu "10E" in millicores) is
    stored as written and silently wraps in the scheduler's int64 `Value()`/`MilliValue()`.
    That wrap is not modelled: such an amount is rejected here, at the edge."""
    out: dict[str, int] = {}
    for name, value in optional_mapping(obj, path).items():
        where = (*path, name)
        if not isinstance(name, str) or not name:
            raise FieldError(where, "resource name must be a non-empty string")
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise FieldError(where, f"expected a quantity, got {value!r}")
        try:
            amount = resource_amount(name, value)
        except ValueError as exc:
            raise FieldError(where, str(exc)) from None
        if amount < 0:
            raise FieldError(where, f"must be greater than or equal to 0, got {value!r}")
        if amount > INT64_MAX:
            unit = "millicores" if name == CPU else "units"
            raise FieldError(
                where, f"{value!r} is too large: over 2^63-1 {unit}, the scheduler's int64 limit"
            )
        out[name] = amount
    return out


def parse_container(obj: Any, path: Sequence[PathPart] = ()) -> Container:
    """A container from its JSON form; `resources.requests` missing a resource that
    `resources.limits` has defaults to the limit (SetDefaults_Pod)."""
    body = optional_mapping(obj, path)
    name = string(body.get("name"), (*path, "name"))
    resources = optional_mapping(body.get("resources"), (*path, "resources"))
    requests = parse_resource_list(resources.get("requests"), (*path, "resources", "requests"))
    limits = parse_resource_list(resources.get("limits"), (*path, "resources", "limits"))
    for resource, amount in limits.items():
        requests.setdefault(resource, amount)
    restart_policy = optional_string(body.get("restartPolicy"), (*path, "restartPolicy"))
    return Container(name, requests, limits, restart_policy)


def _parse_containers(obj: Any, path: Sequence[PathPart]) -> tuple[Container, ...]:
    items = optional_list(obj, path)
    return tuple(parse_container(item, (*path, i)) for i, item in enumerate(items))


def default_pod_level_requests(
    containers: Sequence[Container],
    init_containers: Sequence[Container],
    requests: Mapping[str, int] | None,
    limits: Mapping[str, int] | None,
) -> dict[str, int] | None:
    """Pod-level requests after API defaulting (defaultHugePagePodLimits, defaultPodRequests):
    only when pod-level limits are set (or hugepage limits get defaulted), a missing pod-level
    request takes the containers' aggregate (cpu / memory) or the pod-level limit."""
    limits = dict(limits or {})
    if limits or requests:
        container_limits = aggregate_containers(containers, init_containers, _limits_of)
        for name, amount in container_limits.items():
            if (
                is_hugepages_resource_name(name)
                and name not in (requests or {})
                and name not in limits
            ):
                limits[name] = amount
    if not limits:
        return dict(requests) if requests is not None else None
    defaulted = dict(requests or {})
    container_requests = aggregate_containers(containers, init_containers, _requests_of)
    for name, amount in container_requests.items():
        if (
            name not in defaulted
            and is_supported_pod_level_resource(name)
            and is_overcommit_allowed(name)
        ):
            defaulted[name] = amount
    for name, amount in limits.items():
        if name not in defaulted and is_supported_pod_level_resource(name):
            defaulted[name] = amount
    if defaulted:
        return defaulted
    return dict(requests) if requests is not None else None


def parse_pod_resources(spec: Any, path: Sequence[PathPart] = ()) -> PodResources:
    """The resource parts of a PodSpec (`containers`, `initContainers`, `overhead`,
    `resources`), with the API server's defaulting applied."""
    body = optional_mapping(spec, path)
    containers = _parse_containers(body.get("containers"), (*path, "containers"))
    init_containers = _parse_containers(body.get("initContainers"), (*path, "initContainers"))
    overhead = parse_resource_list(body.get("overhead"), (*path, "overhead"))
    pod_level = optional_mapping(body.get("resources"), (*path, "resources"))
    requests = (
        parse_resource_list(pod_level["requests"], (*path, "resources", "requests"))
        if pod_level.get("requests") is not None
        else None
    )
    limits = (
        parse_resource_list(pod_level["limits"], (*path, "resources", "limits"))
        if pod_level.get("limits") is not None
        else None
    )
    resources = PodResources(
        containers=containers,
        init_containers=init_containers,
        overhead=overhead,
        pod_level_requests=default_pod_level_requests(
            containers, init_containers, requests, limits
        ),
    )
    _check_pod_totals(resources, path)
    return resources


def _check_pod_totals(resources: PodResources, path: Sequence[PathPart]) -> None:
    """Each amount fits in an int64 (parse_resource_list), but their sum may not: upstream's
    int64 total would wrap, which is not modelled, so such a pod is rejected."""
    for pod_level in (False, True):
        for name, amount in pod_requests(resources, pod_level_resources=pod_level).items():
            if amount > INT64_MAX:
                unit = "millicores" if name == CPU else "units"
                raise FieldError(
                    path,
                    f"the pod's total {name} request ({amount} {unit}) is over 2^63-1, "
                    "the scheduler's int64 limit",
                )
