"""NodeResourcesFit (filter, LeastAllocated / MostAllocated / RequestedToCapacityRatio scores)
and NodeResourcesBalancedAllocation over int64 node columns.

The formulas are gpupact.kube.resources_fit's, applied to arrays: Go int64 products wrap
(numpy int64 does the same) and divisions truncate towards zero (`go_div`); float64 steps run
in the same order as the scalar code, so every node gets the identical integer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from gpupact.cluster.state import ClusterState
from gpupact.kube.requests import CPU, EPHEMERAL_STORAGE, MEMORY, PODS
from gpupact.kube.requests import is_scalar_resource_name as _is_scalar
from gpupact.kube.resources_fit import (
    LEAST_ALLOCATED,
    MAX_NODE_SCORE,
    MAX_UTILIZATION,
    MOST_ALLOCATED,
    REASON_TOO_MANY_PODS,
    REQUESTED_TO_CAPACITY_RATIO,
    FitRequest,
    InsufficientResource,
    ResourceSpec,
    ScoringStrategy,
    is_ignored_extended_resource,
    scale_shape,
)

# --- Filter ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FitCheck:
    name: str
    reason: str
    amount: int
    column: int  # -1: no node has the resource


def fit_checks(
    request: FitRequest,
    resource_index: dict[str, int],
    ignored_resources: frozenset[str] = frozenset(),
    ignored_resource_groups: frozenset[str] = frozenset(),
) -> tuple[FitCheck, ...]:
    """fitsRequest's resource checks in upstream order (pods are checked separately)."""
    if request.is_empty:
        return ()
    out = []
    for name, amount in (
        (CPU, request.milli_cpu),
        (MEMORY, request.memory),
        (EPHEMERAL_STORAGE, request.ephemeral_storage),
    ):
        if amount > 0:
            out.append(FitCheck(name, f"Insufficient {name}", amount, resource_index[name]))
    for name, amount in request.scalars:
        if amount == 0:
            continue
        if is_ignored_extended_resource(name, ignored_resources, ignored_resource_groups):
            continue
        out.append(FitCheck(name, f"Insufficient {name}", amount, resource_index.get(name, -1)))
    return tuple(out)


def fit_mask(state: ClusterState, checks: Sequence[FitCheck], rows=slice(None)) -> np.ndarray:
    """True where every check passes (incl. the pod count) for the given rows."""
    pods = state.resource_index[PODS]
    alloc = state.allocatable[rows]
    used = state.requested[rows]
    ok = used[:, pods] + 1 <= alloc[:, pods]
    for check in checks:
        if check.column < 0:
            ok &= False
        else:
            ok &= check.amount <= alloc[:, check.column] - used[:, check.column]
    return ok


def insufficient(
    state: ClusterState, checks: Sequence[FitCheck], row: int
) -> list[InsufficientResource]:
    """One node's shortfalls, exactly as gpupact.kube.resources_fit.fits_request lists them."""
    pods = state.resource_index[PODS]
    out = []
    pod_count = int(state.requested[row, pods])
    allowed = int(state.allocatable[row, pods])
    if pod_count + 1 > allowed:
        out.append(InsufficientResource("pods", REASON_TOO_MANY_PODS, 1, pod_count, allowed))
    for check in checks:
        capacity = used = 0
        if check.column >= 0:
            capacity = int(state.allocatable[row, check.column])
            used = int(state.requested[row, check.column])
        if check.amount > capacity - used:
            out.append(
                InsufficientResource(
                    check.name,
                    check.reason,
                    check.amount,
                    used,
                    capacity,
                    check.amount > capacity,
                )
            )
    return out


# --- Go integer arithmetic on arrays ---------------------------------------------------------


def go_div(numerator: np.ndarray, denominator: np.ndarray | int) -> np.ndarray:
    """Go's int64 division (truncates towards zero); the denominator must not be 0."""
    num = np.asarray(numerator, dtype=np.int64)
    den = np.asarray(denominator, dtype=np.int64)
    quotient = np.floor_divide(num, den)
    remainder = num - quotient * den
    return quotient + ((remainder != 0) & ((num < 0) != (den < 0)))


def go_round(values: np.ndarray) -> np.ndarray:
    """math.Round (half away from zero) on float64."""
    whole = np.trunc(values)
    bump = np.abs(values - whole) >= 0.5
    return (whole + np.where(bump, np.sign(values), 0.0)).astype(np.int64)


# --- scores over (resources x nodes) arrays ---------------------------------------------------


def _safe(den: np.ndarray) -> np.ndarray:
    return np.where(den == 0, 1, den)


def _weighted_node_score(
    requested: np.ndarray,
    allocatable: np.ndarray,
    weights: Sequence[int],
    resource_score: Callable[[np.ndarray, np.ndarray], np.ndarray],
) -> np.ndarray:
    """Weighted mean of `resource_score(requested, allocatable)` over the resources a node
    has (allocatable != 0); 0 for a node that has none of them."""
    node = np.zeros(requested.shape[1], dtype=np.int64)
    wsum = np.zeros(requested.shape[1], dtype=np.int64)
    with np.errstate(over="ignore"):
        for i, weight in enumerate(weights):
            cap = allocatable[i]
            present = cap != 0
            share = resource_score(requested[i], cap)
            node += np.where(present, share * weight, 0)
            wsum += np.where(present, weight, 0)
        return np.where(wsum == 0, 0, go_div(node, _safe(wsum)))


def _least_allocated_share(req: np.ndarray, cap: np.ndarray) -> np.ndarray:
    share = go_div((cap - req) * MAX_NODE_SCORE, _safe(cap))
    return np.where(req > cap, 0, share)


def _most_allocated_share(req: np.ndarray, cap: np.ndarray) -> np.ndarray:
    return go_div(np.minimum(req, cap) * MAX_NODE_SCORE, _safe(cap))


def score_least_allocated(
    requested: np.ndarray, allocatable: np.ndarray, weights: Sequence[int]
) -> np.ndarray:
    return _weighted_node_score(requested, allocatable, weights, _least_allocated_share)


def score_most_allocated(
    requested: np.ndarray, allocatable: np.ndarray, weights: Sequence[int]
) -> np.ndarray:
    return _weighted_node_score(requested, allocatable, weights, _most_allocated_share)


def broken_linear(points: Sequence[tuple[int, int]], p: np.ndarray) -> np.ndarray:
    """helper.BuildBrokenLinearFunction evaluated at every p (int64)."""
    out = np.full(p.shape, points[-1][1], dtype=np.int64)
    with np.errstate(over="ignore"):
        for i in range(len(points) - 1, -1, -1):
            utilization, value = points[i]
            if i == 0:
                segment = np.full(p.shape, value, dtype=np.int64)
            else:
                prev_u, prev_s = points[i - 1]
                step = go_div((value - prev_s) * (p - prev_u), utilization - prev_u)
                segment = prev_s + step
            out = np.where(p <= utilization, segment, out)
    return out


def score_requested_to_capacity_ratio(
    requested: np.ndarray,
    allocatable: np.ndarray,
    weights: Sequence[int],
    points: Sequence[tuple[int, int]],
) -> np.ndarray:
    node = np.zeros(requested.shape[1], dtype=np.int64)
    wsum = np.zeros(requested.shape[1], dtype=np.int64)
    full = int(broken_linear(points, np.array([MAX_UTILIZATION]))[0])
    with np.errstate(over="ignore"):
        for i, weight in enumerate(weights):
            cap, req = allocatable[i], requested[i]
            utilization = go_div(req * MAX_UTILIZATION, _safe(cap))
            score = np.where(req > cap, full, broken_linear(points, utilization))
            counted = (cap != 0) & (score > 0)
            node += np.where(counted, score * weight, 0)
            wsum += np.where(counted, weight, 0)
    mean = node.astype(np.float64) / _safe(wsum).astype(np.float64)
    return np.where(wsum == 0, 0, go_round(mean))


def score_balanced_allocation(requested: np.ndarray, allocatable: np.ndarray) -> np.ndarray:
    """int64((1 - std) * 100) of the used fractions (capped at 1) of the resources each node
    has, in float64 with the scalar code's order of operations."""
    m, k = requested.shape
    count = np.zeros(k, dtype=np.int64)
    total = np.zeros(k, dtype=np.float64)
    first = np.zeros(k, dtype=np.float64)
    second = np.zeros(k, dtype=np.float64)
    fractions = []
    for i in range(m):
        cap, req = allocatable[i], requested[i]
        present = cap != 0
        fraction = req.astype(np.float64) / _safe(cap).astype(np.float64)
        fraction = np.where(fraction > 1, 1.0, fraction)
        total = np.where(present, total + fraction, total)
        first = np.where(present & (count == 0), fraction, first)
        second = np.where(present & (count == 1), fraction, second)
        count += present
        fractions.append((present, fraction))
    std = np.zeros(k, dtype=np.float64)
    two = count == 2
    std = np.where(two, np.abs((first - second) / 2), std)
    many = count > 2
    if many.any():
        mean = total / np.where(count == 0, 1, count).astype(np.float64)
        squares = np.zeros(k, dtype=np.float64)
        for present, fraction in fractions:
            squares = np.where(present, squares + (fraction - mean) * (fraction - mean), squares)
        spread = np.sqrt(squares / np.where(count == 0, 1, count).astype(np.float64))
        std = np.where(many, spread, std)
    return ((1 - std) * float(MAX_NODE_SCORE)).astype(np.int64)


# --- the plugin's inputs from the state ------------------------------------------------------

# one configured resource's source: (column, where the used amount comes from, pod request)
# or None when the resource is left out of the score (calculateResourceAllocatableRequest)
USED_REQUESTED, USED_NONZERO_CPU, USED_NONZERO_MEMORY = 0, 1, 2
PlanItem = tuple[int, int, int] | None


def score_plan(
    resource_index: dict[str, int],
    resources: Sequence[ResourceSpec],
    pod_request_list: Sequence[int],
    *,
    use_requested: bool,
) -> tuple[PlanItem, ...]:
    plan: list[PlanItem] = []
    for spec, pod_req in zip(resources, pod_request_list, strict=True):
        name = spec.name
        if pod_req == 0 and _is_scalar(name):
            plan.append(None)  # an extended resource the pod does not ask for
        elif name == CPU:
            source = USED_REQUESTED if use_requested else USED_NONZERO_CPU
            plan.append((resource_index[CPU], source, pod_req))
        elif name == MEMORY:
            source = USED_REQUESTED if use_requested else USED_NONZERO_MEMORY
            plan.append((resource_index[MEMORY], source, pod_req))
        elif name == EPHEMERAL_STORAGE or (_is_scalar(name) and name in resource_index):
            plan.append((resource_index[name], USED_REQUESTED, pod_req))
        else:
            plan.append(None)
    return tuple(plan)


def score_inputs(
    state: ClusterState, rows: np.ndarray | slice, plan: Sequence[PlanItem]
) -> tuple[np.ndarray, np.ndarray]:
    """(requested incl. the pod, allocatable), shape (resources, nodes); zeros where a
    resource is left out of the score."""
    alloc_rows = state.allocatable[rows]
    k = alloc_rows.shape[0]
    req = np.zeros((len(plan), k), dtype=np.int64)
    alloc = np.zeros((len(plan), k), dtype=np.int64)
    for i, item in enumerate(plan):
        if item is None:
            continue
        column, source, pod_req = item
        if source == USED_REQUESTED:
            used = state.requested[rows, column]
        else:
            used = state.nonzero_requested[rows, source - 1]
        alloc[i] = alloc_rows[:, column]
        req[i] = np.where(alloc[i] == 0, 0, used + pod_req)
    return req, alloc


def row_score_inputs(
    plan: Sequence[PlanItem], alloc: Sequence[int], used: Sequence[int], nonzero: Sequence[int]
) -> tuple[list[int], list[int]]:
    """`score_inputs` for one node from its rows as Python ints (the incremental path)."""
    req_out: list[int] = []
    alloc_out: list[int] = []
    for item in plan:
        if item is None:
            req_out.append(0)
            alloc_out.append(0)
            continue
        column, source, pod_req = item
        capacity = alloc[column]
        if capacity == 0:
            req_out.append(0)
            alloc_out.append(0)
            continue
        base = used[column] if source == USED_REQUESTED else nonzero[source - 1]
        req_out.append(base + pod_req)
        alloc_out.append(capacity)
    return req_out, alloc_out


def row_fits(checks: Sequence[FitCheck], pods: int, alloc: Sequence[int], used: Sequence[int]):
    """`fit_mask` for one node from its rows as Python ints."""
    if used[pods] + 1 > alloc[pods]:
        return False
    for check in checks:
        if check.column < 0 or check.amount > alloc[check.column] - used[check.column]:
            return False
    return True


def strategy_scores(
    strategy: ScoringStrategy, requested: np.ndarray, allocatable: np.ndarray
) -> np.ndarray:
    weights = tuple(spec.weight for spec in strategy.resources)
    if strategy.type == LEAST_ALLOCATED:
        return score_least_allocated(requested, allocatable, weights)
    if strategy.type == MOST_ALLOCATED:
        return score_most_allocated(requested, allocatable, weights)
    if strategy.type == REQUESTED_TO_CAPACITY_RATIO:
        points = scale_shape(strategy.shape or ())
        return score_requested_to_capacity_ratio(requested, allocatable, weights, points)
    raise ValueError(f"scoring strategy {strategy.type} is not supported")
