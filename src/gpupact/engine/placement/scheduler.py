"""The vectorised kube-scheduler: filter -> score -> select for one pod over all nodes.

Filter: the default chain (framework.FILTER_PLUGINS) as array operations over ClusterState,
NodePorts and the bound-PV volume filters included. Pods nominated to a node (ClusterState
.nominate, status.nominatedNodeName) with priority >= the pod's count as placed there, as
upstream's RunFilterPluginsWithNominatedPods: those nodes are re-checked with the scalar chain.
Score: the default profile's plugins with upstream weights — NodeResourcesFit (its scoring
strategy: LeastAllocated by default, MostAllocated or RequestedToCapacityRatio) 1,
NodeResourcesBalancedAllocation 1, TaintToleration 3, NodeAffinity 2, PodTopologySpread 2,
InterPodAffinity 2 (ImageLocality 1 is not modelled: images are not tracked, it adds 0) — or a
strategy object (engine/placement/strategies) that replaces the scoring.
Select: the highest total. Ties: upstream picks uniformly at random among the best nodes; here
the choice comes from a `random.Random(seed)`, so a run is reproducible (tie_break="first"
picks the lowest node index instead; strategies default to it).

Pods of one shape share cached columns: the static mask (first four plugins and the GPU
hardware check) until nodes change, and the fit / device / per-node score columns, which are
refreshed only on the nodes that changed since their last use (from the state's change log).
PodTopologySpread keeps gpupact.kube.topology_spread's PreFilterState per spread shape and
feeds it add_pod/remove_pod, with count columns over the label index kept in step; InterPodAffinity
keeps its PreFilter and PreScore counts per topology pair the same way (upstream's
existingAntiAffinityCounts / affinityCounts / antiAffinityCounts and topologyScore), each key's
counts a numpy column, so a pod costs O(nodes) array work whatever the number of bound pods.
`explain=False` refuses with an `Unschedulable` marker without building the FitError.

percentage_of_nodes_to_score: 100 (default here) scores every feasible node; upstream's
default is adaptive (0: 50% minus 1% per 125 nodes, at least 5% and 100 nodes), searching from
a rotating start node — set 0 or a percentage to mimic it.
"""

from __future__ import annotations

import inspect
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, NamedTuple, Protocol, runtime_checkable

import numpy as np

from gpupact.cluster import devices as dev
from gpupact.cluster.devices import GpuRequest
from gpupact.cluster.state import Binding, ClusterState, PodUsage
from gpupact.errors import FieldError
from gpupact.kube import host_ports as hp
from gpupact.kube import topology_spread as pts
from gpupact.kube.objects import Pod
from gpupact.kube.requests import PODS
from gpupact.kube.resources_fit import (
    DEFAULT_RESOURCES,
    FitArgs,
    NodeResourcesBalancedAllocation,
    NodeResourcesFit,
    ResourceSpec,
    ScoringStrategy,
    ShapePoint,
    fit_status,
    score_balanced_allocation,
)
from gpupact.kube.status import SUCCESS, Code, Status

from . import framework as fw
from .framework import FitResult, NodeVerdict
from .plugins import gpu_devices as gpuf
from .plugins import inter_pod_affinity as ipa
from .plugins import node_filters as nf
from .plugins import node_resources_fit as nrf
from .plugins import pod_topology_spread as ptsv
from .plugins import volumes as vol
from .reasons import fit_error_message_from_counts, reasons_from_counts
from .shape import PodShape, compile_pod

FIT = "NodeResourcesFit"
BALANCED = "NodeResourcesBalancedAllocation"
TAINT = "TaintToleration"
NODE_AFFINITY = "NodeAffinity"
SPREAD = "PodTopologySpread"
POD_AFFINITY = "InterPodAffinity"
IMAGE_LOCALITY = "ImageLocality"
DEFAULT_SCORE_WEIGHTS: Mapping[str, int] = MappingProxyType(
    {
        FIT: 1,
        BALANCED: 1,
        TAINT: 3,
        NODE_AFFINITY: 2,
        SPREAD: 2,
        POD_AFFINITY: 2,
        IMAGE_LOCALITY: 1,
    }
)
MAX_NODE_SCORE = 100
MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE = 5
_CACHE_LIMIT = 512
_SHAPE_CACHE_BYTES = 32 << 20
_ROW_BY_ROW = 16  # refresh up to this many changed nodes one by one
_PORTS = 8  # _first_failures' codes beyond the original chain positions 0..7
_NOMINATED = 9
_VOLUMES = 10
_REJECTED = 11  # a PreFilter rejection: every node


@dataclass(frozen=True)
class Profile:
    """A scheduler profile: NodeResourcesFit args (its scoringStrategy picks LeastAllocated,
    MostAllocated or RequestedToCapacityRatio), BalancedAllocation resources, score weights,
    InterPodAffinity's hardPodAffinityWeight, percentageOfNodesToScore and the tie-break."""

    name: str = "default"
    fit_args: FitArgs = field(default_factory=FitArgs)
    balanced_resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES
    weights: Mapping[str, int] = field(default_factory=lambda: DEFAULT_SCORE_WEIGHTS)
    hard_pod_affinity_weight: int = ipa.DEFAULT_HARD_POD_AFFINITY_WEIGHT
    percentage_of_nodes_to_score: int = 100
    tie_break: str = "random"

    def __post_init__(self) -> None:
        if self.tie_break not in ("random", "first"):
            raise FieldError(("tieBreak",), f'expected "random" or "first", got {self.tie_break!r}')
        if not 0 <= self.percentage_of_nodes_to_score <= 100:
            raise FieldError(("percentageOfNodesToScore",), "must be in 0..100")
        if not 0 <= self.hard_pod_affinity_weight <= 100:
            raise FieldError(("hardPodAffinityWeight",), "must be in 0..100")
        strategy = self.fit_args.scoring_strategy
        if strategy is not None and not strategy.resources:
            raise FieldError(("scoringStrategy", "resources"), "resources not found")

    @classmethod
    def scoring(
        cls,
        strategy: str,
        resources: Sequence[ResourceSpec] = DEFAULT_RESOURCES,
        shape: Sequence[ShapePoint] | None = None,
        **kwargs: Any,
    ) -> Profile:
        """The default profile with another NodeResourcesFit scoring strategy."""
        fit = FitArgs(scoring_strategy=ScoringStrategy(strategy, tuple(resources), shape))
        return cls(name=strategy, fit_args=fit, **kwargs)


@runtime_checkable
class Strategy(Protocol):
    """A node-choice strategy (engine/placement/strategies): scores feasible candidates,
    higher is better. Optional: `choose_devices(state, node, gpu_request)` and
    `tie_break = "random"`."""

    def score(
        self,
        state: ClusterState,
        pod: Pod,
        gpu_request: GpuRequest | None,
        candidates: np.ndarray,
    ) -> np.ndarray: ...


@dataclass(frozen=True, slots=True)
class Unschedulable:
    """The cheap refusal (`schedule_one(..., explain=False)`): no node fits, and nothing is
    computed about why. Callers that only count refusals (trace replays, what-ifs) skip the
    FitError histogram; `Scheduler.explain(pod)` gives the reasons when they are wanted."""

    pod: str
    feasible_nodes: int = 0

    @property
    def message(self) -> str:
        return ""


@dataclass(frozen=True, slots=True)
class Placement:
    """Where the pod goes: node, devices, the winning total score and the binding (when
    bound)."""

    pod: str
    node: str
    node_index: int
    devices: tuple[int, ...]
    score: int
    feasible_nodes: int
    binding: Binding | None = field(default=None, repr=False)


# --- per-shape caches -------------------------------------------------------------------------


class _Extra(NamedTuple):
    """The filters that depend on other pods' placement, for one pod: the combined pass mask,
    PodTopologySpread and InterPodAffinity codes, NodePorts failures (None: the pod asks no
    host port or no node uses one) and the verdicts of nodes refused only once the nominated
    pods of no lower priority are counted there (RunFilterPluginsWithNominatedPods)."""

    mask: np.ndarray
    spread: np.ndarray
    affinity: np.ndarray
    ports: np.ndarray | None = None
    nominated: Mapping[int, NodeVerdict] = MappingProxyType({})
    volumes: np.ndarray | None = None  # VolumeBinding / VolumeZone codes
    rejection: Status | None = None  # a PreFilter rejecting the pod on every node


@dataclass(eq=False, slots=True)
class _Static:
    uid: int
    static_version: int
    checks: nf.NodeChecks
    gpu_static: np.ndarray
    ok: np.ndarray  # active & four plugins & GPU hardware


@dataclass(eq=False, slots=True)
class _Entry:
    uid: int
    static_version: int
    version: int
    static: _Static
    checks: tuple[nrf.FitCheck, ...]
    fit_plan: tuple[nrf.PlanItem, ...]
    balanced_plan: tuple[nrf.PlanItem, ...] | None  # None: BalancedAllocation skips the pod
    fit_ok: np.ndarray
    gpu_dynamic: np.ndarray
    local: np.ndarray  # weighted NodeResourcesFit + BalancedAllocation scores
    feasible: np.ndarray
    combined: np.ndarray  # local where feasible, -1 elsewhere


@dataclass(eq=False, slots=True)
class _Versioned:
    uid: int
    static_version: int
    version: int
    value: Any


def _hashable(key: Any) -> bool:
    try:
        hash(key)
    except TypeError:
        return False
    return True


def _bounded_put(cache: dict, key: Any, value: Any, limit: int = _CACHE_LIMIT) -> None:
    """Insert, evicting the least recently used entry (hits are moved to the end)."""
    while len(cache) >= limit:
        cache.pop(next(iter(cache)))
    cache[key] = value


def _shape_cache_limit(num_nodes: int) -> int:
    """Per-shape column caches hold ~20 bytes per node each: keep them within ~32 MiB."""
    return max(8, min(_CACHE_LIMIT, _SHAPE_CACHE_BYTES // (20 * max(num_nodes, 1))))


class Scheduler:
    """`Scheduler(state, "default" | Profile | strategy)`; `schedule_one(pod)` places (and by
    default binds) one pod: a Placement, or a FitResult with the kube-scheduler reasons.
    `explain=False` (here or per call) refuses with an `Unschedulable` marker instead, without
    building the reasons."""

    def __init__(
        self,
        state: ClusterState,
        profile: str | Profile | Strategy = "default",
        *,
        seed: int = 0,
        explain: bool = True,
    ) -> None:
        self.state = state
        self.explain_refusals = explain
        self.strategy: Strategy | None = None
        self._view_strategy = False  # the strategy scores a strategies.base.NodeView
        if isinstance(profile, Profile):
            self.profile = profile
        elif isinstance(profile, str):
            if profile != "default":
                raise FieldError(("profile",), f'unknown profile {profile!r} (only "default")')
            self.profile = Profile()
        elif callable(getattr(profile, "score", None)):
            self.strategy = profile
            self._view_strategy = _takes_node_view(profile)
            self.profile = Profile(
                name=str(getattr(profile, "name", type(profile).__name__)),
                tie_break=getattr(profile, "tie_break", "first"),
            )
        else:
            raise FieldError(("profile",), f"not a profile or strategy: {profile!r}")
        self.fit_plugin = NodeResourcesFit(self.profile.fit_args, pod_level_resources=True)
        self.balanced_plugin = NodeResourcesBalancedAllocation(
            self.profile.balanced_resources, pod_level_resources=True
        )
        assert self.profile.fit_args.scoring_strategy is not None
        self.scoring_strategy: ScoringStrategy = self.profile.fit_args.scoring_strategy
        weights = self.profile.weights
        self.w_fit = weights.get(FIT, 0)
        self.w_balanced = weights.get(BALANCED, 0)
        self.w_taint = weights.get(TAINT, 0)
        self.w_node_affinity = weights.get(NODE_AFFINITY, 0)
        self.w_spread = weights.get(SPREAD, 0)
        self.w_pod_affinity = weights.get(POD_AFFINITY, 0)
        self.rng = random.Random(seed)
        self.next_start_node = 0
        self._static: dict[tuple, _Static] = {}
        self._entries: dict[tuple, _Entry] = {}
        self._score_requests: dict[tuple, tuple[list[int], list[int] | None]] = {}
        self._spread: dict[tuple, _Versioned] = {}
        self._counts: dict[tuple, _Versioned] = {}
        self._affinity: dict[tuple, _Versioned] = {}
        self._affinity_scores: dict[tuple, _Versioned] = {}
        self._view: tuple[tuple[int, int, int], Any] | None = None

    # --- public API -----------------------------------------------------------------------

    def schedule_one(
        self, pod: Pod, *, bind: bool = True, explain: bool | None = None
    ) -> Placement | FitResult | Unschedulable:
        """Filter, score and select a node for `pod`; bind it there unless `bind=False`.
        A refusal is a FitResult, or an `Unschedulable` marker when `explain` is False
        (default: the constructor's `explain`)."""
        if explain is None:
            explain = self.explain_refusals
        shape = compile_pod(pod)
        entry = self._entry(shape)
        extra = self._global_filters(shape)
        if extra is None and self.strategy is None and self._fast_scores(shape, entry):
            combined = entry.combined
            best = int(combined[combined.argmax()]) if combined.size else -1
            if best < 0:
                return self._fit_error(shape, entry, None) if explain else Unschedulable(pod.key)
            ties = np.flatnonzero(entry.combined == best)
            node = self._pick(ties)
            total = best + self._constant_score()
            return self._place(shape, node, total, int(np.count_nonzero(entry.feasible)), bind)
        feasible = entry.feasible if extra is None else entry.feasible & extra.mask
        candidates = np.flatnonzero(feasible)
        if candidates.size == 0:
            return self._fit_error(shape, entry, extra) if explain else Unschedulable(pod.key)
        candidates = self._sample(feasible, candidates)
        scores = self._scores(shape, entry, candidates)
        best = int(scores.max())
        ties = candidates[scores == best]
        node = self._pick(ties)
        return self._place(shape, node, best, int(candidates.size), bind)

    def feasible_mask(self, pod: Pod) -> np.ndarray:
        """bool[N]: the nodes passing the whole filter chain."""
        shape = compile_pod(pod)
        entry = self._entry(shape)
        extra = self._global_filters(shape)
        return entry.feasible.copy() if extra is None else entry.feasible & extra.mask

    def session_filters(
        self, pod: Pod
    ) -> tuple[nf.NodeChecks, np.ndarray, np.ndarray, np.ndarray | None]:
        """The filters a batch scheduler's session runs (Volcano's / KAI's `predicates`; they
        keep free resources in their own books, so no NodeResourcesFit or GPUDevices): the
        static checks of NodeUnschedulable..NodeAffinity, and per node the PodTopologySpread
        code (ptsv.FILTER_STATUSES), the InterPodAffinity code (ipa.FILTER_STATUSES) and the
        NodePorts failures (None: no host port conflict possible)."""
        shape = compile_pod(pod)
        checks = self._static_for(shape).checks
        extra = self._global_filters(shape)
        if extra is None:
            zero = np.zeros(self.state.num_nodes, dtype=np.int8)
            return checks, zero, zero, None
        return checks, extra.spread, extra.affinity, extra.ports

    def explain(self, pod: Pod) -> FitResult:
        """Per-node verdicts (identical to framework.explain_fit on the same cluster)."""
        shape = compile_pod(pod)
        entry = self._entry(shape)
        extra = self._global_filters(shape)
        verdicts = self._verdicts(shape, entry, extra)
        message = ""
        if not any(v.fits for v in verdicts):
            message = self._fit_error(shape, entry, extra).message
        return FitResult(pod.key, verdicts, message)

    def scores(self, pod: Pod) -> dict[str, np.ndarray]:
        """Per-plugin normalised scores (unweighted) and the weighted total over the feasible
        nodes (key "nodes": their indices) — for reports and tests."""
        shape = compile_pod(pod)
        entry = self._entry(shape)
        extra = self._global_filters(shape)
        feasible = entry.feasible if extra is None else entry.feasible & extra.mask
        candidates = np.flatnonzero(feasible)
        parts = self._score_parts(shape, entry, candidates)
        parts["nodes"] = candidates
        parts["total"] = self._scores(shape, entry, candidates)
        return parts

    def preference_scores(self, pod: Pod, candidates: np.ndarray) -> dict[str, np.ndarray]:
        """TaintToleration, NodeAffinity, PodTopologySpread and InterPodAffinity for `pod` on
        the node rows `candidates`, each normalised over them and unweighted (Volcano's
        nodeorder runs these plugins on a candidate list of its own)."""
        shape = compile_pod(pod)
        parts = self._score_parts(shape, self._entry(shape), candidates)
        del parts["local"]
        return parts

    def with_state(self, state: ClusterState) -> Scheduler:
        """The same profile/strategy on another state (a copy for a what-if)."""
        profile: Any = self.strategy if self.strategy is not None else self.profile
        other = Scheduler(state, profile, explain=self.explain_refusals)
        other.rng.setstate(self.rng.getstate())
        return other

    # --- static and per-shape columns -------------------------------------------------------

    def _static_for(self, shape: PodShape) -> _Static:
        state = self.state
        key = shape.static_key
        cached = self._static.get(key) if key is not None else None
        if (
            cached is not None
            and cached.uid == state.uid
            and cached.static_version == state.static_version
        ):
            return cached
        checks = nf.evaluate(
            state,
            shape.pod.node_name,
            shape.pod.tolerations,
            shape.required_affinity,
            shape.preferred_affinity,
        )
        gpu_static = gpuf.static_codes(state, shape.usage.gpu)
        ok = state.active & (checks.codes == nf.PASS) & (gpu_static == 0)
        static = _Static(state.uid, state.static_version, checks, gpu_static, ok)
        if key is not None:
            _bounded_put(self._static, key, static, _shape_cache_limit(state.num_nodes))
        return static

    def _score_request_lists(self, shape: PodShape) -> tuple[list[int], list[int] | None]:
        lists = self._score_requests.get(shape.rkey)
        if lists is None:
            resources = shape.pod.resources
            lists = (
                self.fit_plugin.pre_score(resources),
                self.balanced_plugin.pre_score(resources),
            )
            _bounded_put(self._score_requests, shape.rkey, lists)
        return lists

    def _local_scores(self, entry: _Entry, rows: np.ndarray | slice) -> np.ndarray:
        """Weighted NodeResourcesFit + BalancedAllocation scores of `rows`."""
        if self.strategy is not None:
            return np.zeros(self.state.allocatable[rows].shape[0], dtype=np.int64)
        req, alloc = nrf.score_inputs(self.state, rows, entry.fit_plan)
        total = self.w_fit * nrf.strategy_scores(self.scoring_strategy, req, alloc)
        if entry.balanced_plan is not None:
            req, alloc = nrf.score_inputs(self.state, rows, entry.balanced_plan)
            total = total + self.w_balanced * nrf.score_balanced_allocation(req, alloc)
        return total

    def _local_score_row(self, entry: _Entry, alloc: list, used: list, nonzero: list) -> int:
        """`_local_scores` for one node with gpupact.kube.resources_fit's scalar formulas."""
        if self.strategy is not None:
            return 0
        req, cap = nrf.row_score_inputs(entry.fit_plan, alloc, used, nonzero)
        total = self.w_fit * self.fit_plugin.scorer(req, cap)
        if entry.balanced_plan is not None:
            req, cap = nrf.row_score_inputs(entry.balanced_plan, alloc, used, nonzero)
            total += self.w_balanced * score_balanced_allocation(req, cap)
        return total

    def _entry(self, shape: PodShape) -> _Entry:
        state = self.state
        key = shape.dynamic_key
        try:
            entry = self._entries.get(key) if key is not None else None
        except TypeError:  # an unhashable field somewhere in the pod's affinity
            entry = key = shape.static_key = shape.dynamic_key = None
        if entry is None or entry.uid != state.uid or entry.static_version != state.static_version:
            entry = self._build_entry(shape)
            if key is not None:
                self._entries.pop(key, None)
                _bounded_put(self._entries, key, entry, _shape_cache_limit(state.num_nodes))
            return entry
        if len(self._entries) > 1:
            self._entries[key] = self._entries.pop(key)  # most recently used last
        if entry.version != state.version:
            changes = state.changes_since(entry.version)
            if changes is None or len(changes) * 8 > state.num_nodes:
                self._refresh(entry, shape, slice(None))
            elif len(changes) == 1:
                self._refresh_row(entry, shape, changes[0][0])
            else:
                rows = np.array(sorted({c[0] for c in changes}), dtype=np.intp)
                self._refresh(entry, shape, rows)
            entry.version = state.version
        return entry

    def _build_entry(self, shape: PodShape) -> _Entry:
        state = self.state
        static = self._static_for(shape)
        checks = nrf.fit_checks(
            shape.fit_request,
            state.resource_index,
            self.fit_plugin.ignored_resources,
            self.fit_plugin.ignored_resource_groups,
        )
        fit_req, balanced_req = self._score_request_lists(shape)
        fit_plan = nrf.score_plan(
            state.resource_index, self.scoring_strategy.resources, fit_req, use_requested=False
        )
        balanced_plan = None
        if balanced_req is not None and self.w_balanced:
            balanced_plan = nrf.score_plan(
                state.resource_index,
                self.balanced_plugin.resources,
                balanced_req,
                use_requested=True,
            )
        n = state.num_nodes
        entry = _Entry(
            state.uid,
            state.static_version,
            state.version,
            static,
            checks,
            fit_plan,
            balanced_plan,
            np.zeros(n, dtype=np.bool_),
            np.zeros(n, dtype=np.int8),
            np.zeros(n, dtype=np.int64),
            np.zeros(n, dtype=np.bool_),
            np.full(n, -1, dtype=np.int64),
        )
        self._refresh(entry, shape, slice(None))
        return entry

    def _refresh(self, entry: _Entry, shape: PodShape, rows: np.ndarray | slice) -> None:
        state = self.state
        if isinstance(rows, np.ndarray) and rows.shape[0] <= _ROW_BY_ROW:
            for row in rows.tolist():
                self._refresh_row(entry, shape, row)
            return
        fit_ok = nrf.fit_mask(state, entry.checks, rows)
        gpu_dynamic = gpuf.dynamic_codes(state, shape.usage.gpu, rows)
        local = self._local_scores(entry, rows)
        feasible = entry.static.ok[rows] & fit_ok & (gpu_dynamic == 0)
        entry.fit_ok[rows] = fit_ok
        entry.gpu_dynamic[rows] = gpu_dynamic
        entry.local[rows] = local
        entry.feasible[rows] = feasible
        entry.combined[rows] = np.where(feasible, local, -1)

    def _refresh_row(self, entry: _Entry, shape: PodShape, row: int) -> None:
        """One changed node, with Python ints (a few microseconds instead of ~30 numpy
        calls); the vectorised path is tested to give the same numbers."""
        state = self.state
        alloc = state.allocatable[row].tolist()
        used = state.requested[row].tolist()
        fits = nrf.row_fits(entry.checks, state.resource_index[PODS], alloc, used)
        gpu_code = gpuf.dynamic_code_row(state, shape.usage.gpu, row)
        local = self._local_score_row(entry, alloc, used, state.nonzero_requested[row].tolist())
        feasible = bool(entry.static.ok[row]) and fits and gpu_code == 0
        entry.fit_ok[row] = fits
        entry.gpu_dynamic[row] = gpu_code
        entry.local[row] = local
        entry.feasible[row] = feasible
        entry.combined[row] = local if feasible else -1

    # --- PodTopologySpread and InterPodAffinity (depend on where other pods run) -----------

    def _global_filters(self, shape: PodShape) -> _Extra | None:
        """NodePorts, PodTopologySpread, InterPodAffinity and the nominated-pods pass, or
        None when none of them can refuse a node."""
        state = self.state
        n = state.num_nodes
        volumes = vol.prefilter(shape.pod, state.objects)
        if volumes is not None and volumes.rejection is not None:
            zeros = np.zeros(n, dtype=np.int8)
            return _Extra(np.zeros(n, dtype=np.bool_), zeros, zeros, rejection=volumes.rejection)
        volume_codes = self._volume_codes(volumes) if volumes is not None else None
        spread, columns = self._spread_state(shape)
        affinity = self._affinity_state(shape)
        ports = self._ports_failures(shape.pod)
        nominated = self._nominated_for(shape.pod)
        if (
            spread is None
            and affinity is None
            and ports is None
            and not nominated
            and volume_codes is None
        ):
            return None
        spread_codes = (
            ptsv.filter_codes(spread, self.state.labels, n, columns)
            if spread is not None
            else np.zeros(n, dtype=np.int8)
        )
        affinity_codes = (
            ipa.filter_statuses(affinity, self.state.labels, n)
            if affinity is not None
            else np.zeros(n, dtype=np.int8)
        )
        mask = (spread_codes == 0) & (affinity_codes == 0)
        if ports is not None:
            mask &= ~ports
        if volume_codes is not None:
            mask &= volume_codes == 0
        overrides: dict[int, NodeVerdict] = {}
        if nominated:
            overrides = self._with_nominated(shape, spread, affinity, nominated, volumes)
            if overrides:
                mask[np.fromiter(overrides, np.intp, len(overrides))] = False
        return _Extra(mask, spread_codes, affinity_codes, ports, overrides, volume_codes)

    def _volume_codes(self, volumes: vol.VolumeState) -> np.ndarray | None:
        """VolumeBinding / VolumeZone per node, cached per set of bound PVs until nodes change."""
        if not volumes.volumes:
            return None
        state = self.state
        # state.objects is replaced, never mutated: its identity dates the PVs
        key = ("volumes", id(state.objects), tuple(pv.name for pv in volumes.volumes))
        cached = self._spread.get(key)
        if self._fresh(cached):
            return cached.value  # type: ignore[union-attr]
        codes = vol.filter_codes(volumes, [node.labels for node in state.nodes])
        versioned = _Versioned(state.uid, state.static_version, state.version, codes)
        _bounded_put(self._spread, key, versioned)
        return codes

    def _ports_failures(self, pod: Pod) -> np.ndarray | None:
        """bool[N]: nodes where a host port the pod asks for is taken (NodePorts)."""
        used = self.state.used_ports
        if not pod.host_ports or not used:
            return None
        out = np.zeros(self.state.num_nodes, dtype=np.bool_)
        for row, ports in used.items():
            out[row] = not ports.fits(pod.host_ports)
        return out

    def _nominated_for(self, pod: Pod) -> dict[int, list[Pod]]:
        """Per node, the pods nominated there with priority >= the pod's (itself excluded)."""
        state = self.state
        out: dict[int, list[Pod]] = {}
        for key, (other, row) in state.nominated.items():
            if key != pod.key and other.priority >= pod.priority and state.active[row]:
                out.setdefault(row, []).append(other)
        return out

    def _with_nominated(
        self,
        shape: PodShape,
        spread: pts.PreFilterState | None,
        affinity: ipa.FilterState | None,
        nominated: Mapping[int, list[Pod]],
        volumes: vol.VolumeState | None,
    ) -> dict[int, NodeVerdict]:
        """Upstream runs the filters on a node first with its nominated pods (of no lower
        priority) added to the node and to the PreFilter states, then without them; the pod
        fits only if both pass. The pass without them is the vectorised chain; this is the
        pass with them, node by node with the scalar chain: the refused nodes and why."""
        state = self.state
        pod = shape.pod
        out: dict[int, NodeVerdict] = {}
        for row, pods in nominated.items():
            node = state.nodes[row]
            name = node.name
            bound = list(state.pods_on(row))
            view = fw.ClusterView(
                [node],
                [
                    *(_on_node(b.pod, name) for b in bound),
                    *(_on_node(p, name) for p in pods),
                ],
                {b.pod.key: b.devices for b in bound},
                state.namespace_labels,
            )
            spread_with = None
            if spread is not None:
                spread_with = spread.copy()
                for other in pods:
                    spread_with.add_pod(other, node)
            affinity_with = (
                affinity.copy()
                if affinity is not None
                else ipa.FilterState(pod, shape.affinity, state.namespace_labels_of)
            )
            for other in pods:
                affinity_with.update(
                    ipa.ExistingPod(other, ipa.pod_affinity_info(other), node.labels), 1
                )
            verdict = fw.filter_node(
                pod,
                node,
                view.node_resources[name],
                spread_with,
                view.node_devices[name],
                shape.usage.gpu,
                None if affinity_with.skip else affinity_with,
                view.node_ports.get(name),
                volumes,
            )
            if not verdict.fits:
                out[row] = verdict
        return out

    def _fresh(self, cached: _Versioned | None) -> bool:
        state = self.state
        return (
            cached is not None
            and cached.uid == state.uid
            and cached.static_version == state.static_version
        )

    def _spread_state(
        self, shape: PodShape
    ) -> tuple[pts.PreFilterState | None, ptsv.CountColumns | None]:
        """PodTopologySpread's PreFilter state for the pod and its count columns, kept per
        spread shape and fed the binds/unbinds since their last use."""
        pod = shape.pod
        if not any(
            c.when_unsatisfiable == pts.DO_NOT_SCHEDULE for c in pod.topology_spread_constraints
        ):
            return None, None
        state = self.state
        key = (
            pod.namespace,
            tuple(sorted(pod.labels.items())),
            pod.topology_spread_constraints,
            shape.required_affinity.node_selector,
            shape.required_affinity.required,
            pod.tolerations,
        )
        hashable = _hashable(key)
        cached = self._spread.get(key) if hashable else None
        changes = self._pending(cached)
        if cached is None or changes is None:
            nodes = [node for row, node in enumerate(state.nodes) if state.active[row]]
            existing = [
                pts.PodView(
                    b.pod.namespace,
                    b.pod.labels,
                    state.node_names[b.node],
                    b.pod.terminating,
                    b.pod.name,
                )
                for b in state.bindings()
            ]
            prefilter = pts.prefilter(pod, nodes, existing)
            columns = ptsv.CountColumns(prefilter, state.labels)
            if hashable:
                value = (prefilter, columns)
                versioned = _Versioned(state.uid, state.static_version, state.version, value)
                _bounded_put(self._spread, key, versioned)
            return prefilter, columns
        prefilter, columns = cached.value
        for node, delta, binding in changes:
            if delta > 0:
                prefilter.add_pod(binding.pod, state.nodes[node])
            else:
                prefilter.remove_pod(binding.pod, state.nodes[node])
        cached.version = state.version
        return prefilter, columns

    def _existing(self, binding: Binding) -> ipa.ExistingPod:
        info = ipa.pod_affinity_info(binding.pod) if binding.pod_affinity else ipa.NO_AFFINITY
        return ipa.ExistingPod(binding.pod, info, self.state.nodes[binding.node].labels)

    def _incremental(
        self, cache: dict, key: Any, build: Any, every_pod: bool
    ) -> ipa.FilterState | ipa.ScoreState:
        """A per-pod-key InterPodAffinity state (PreFilter or PreScore counts), built once over
        the bound pods and then fed only the binds/unbinds since its last use, as upstream's
        AddPod/RemovePod. `every_pod` False: only pods declaring (anti-)affinity can count."""
        state = self.state
        hashable = _hashable(key)
        cached = cache.get(key) if hashable else None
        changes = self._pending(cached)
        if cached is None or changes is None:
            result = build()
            bindings = state.bindings() if every_pod else state.affinity_bindings.values()
            for binding in bindings:
                result.update(self._existing(binding), 1)
            if hashable:
                versioned = _Versioned(state.uid, state.static_version, state.version, result)
                _bounded_put(cache, key, versioned, _shape_cache_limit(state.num_nodes))
            return result
        result = cached.value
        for _, delta, binding in changes:
            if every_pod or binding.pod_affinity:
                result.update(self._existing(binding), delta)
        cached.version = state.version
        return result

    def _affinity_state(self, shape: PodShape) -> ipa.FilterState | None:
        state = self.state
        info = shape.affinity
        required = bool(info.required_affinity or info.required_anti_affinity)
        if not required and not state.affinity_bindings:
            return None
        pod = shape.pod
        # the counts depend on the pod only through (namespace, labels, terms)
        key = (pod.namespace, tuple(sorted(pod.labels.items())), info)
        result = self._incremental(
            self._affinity,
            key,
            lambda: ipa.FilterState(pod, info, state.namespace_labels_of, state.labels),
            every_pod=required,
        )
        assert isinstance(result, ipa.FilterState)
        return None if result.skip else result

    def _pending(self, cached: _Versioned | None) -> list | None:
        """The changes a cached value has not seen, or None when it must be rebuilt."""
        if not self._fresh(cached):
            return None
        assert cached is not None
        return self.state.changes_since(cached.version)

    def _node_counts(self, constraint: pts.HardConstraint, namespace: str) -> np.ndarray:
        """Matching pods per node for a spread constraint, kept up to date from the log."""
        state = self.state
        key = (namespace, constraint.matches, constraint.counts_existing)
        cached = self._counts.get(key)
        changes = self._pending(cached)
        if cached is None or changes is None:
            pods = ((b.node, b.pod) for b in state.bindings())
            counts = ptsv.count_matching(constraint, namespace, pods, state.num_nodes)
            _bounded_put(
                self._counts,
                key,
                _Versioned(state.uid, state.static_version, state.version, counts),
            )
            return counts
        for node, delta, binding in changes:
            pod = binding.pod
            if (
                constraint.counts_existing
                and pod.namespace == namespace
                and not pod.terminating
                and constraint.matches(pod.labels)
            ):
                cached.value[node] += delta
        cached.version = state.version
        return cached.value

    # --- scores -----------------------------------------------------------------------------

    def _fast_scores(self, shape: PodShape, entry: _Entry) -> bool:
        """Only per-node plugins vary: TaintToleration and NodeAffinity are constant, no
        spread or pod-affinity score, every feasible node is scored."""
        checks = entry.static.checks
        return (
            checks.prefer_no_schedule is None
            and checks.preferred_affinity is None
            and not ptsv_has_soft(shape.pod)
            and not self._system_spread(shape.pod)
            and shape.affinity.empty
            and not self.state.affinity_bindings
            and self.profile.percentage_of_nodes_to_score == 100
        )

    def _system_spread(self, pod: Pod) -> bool:
        """PodTopologySpread's system defaults score this pod (no constraints of its own and a
        non-empty default selector from the cluster's Services / owners)."""
        objects = self.state.objects
        if pod.topology_spread_constraints or not objects:
            return False
        return objects.default_selector(pod) is not None

    def _constant_score(self) -> int:
        """The fast path's plugins that score every node alike: TaintToleration (no
        untolerated PreferNoSchedule taint anywhere) gives 100, the others 0."""
        return self.w_taint * MAX_NODE_SCORE

    def _score_parts(
        self, shape: PodShape, entry: _Entry, candidates: np.ndarray
    ) -> dict[str, np.ndarray]:
        checks = entry.static.checks
        k = candidates.shape[0]
        parts: dict[str, np.ndarray] = {"local": entry.local[candidates]}
        if checks.prefer_no_schedule is None:
            parts[TAINT] = np.full(k, 100, dtype=np.int64)
        else:
            parts[TAINT] = nf.normalize_reversed(checks.prefer_no_schedule[candidates])
        if checks.preferred_affinity is None:
            parts[NODE_AFFINITY] = np.zeros(k, dtype=np.int64)
        else:
            parts[NODE_AFFINITY] = nf.normalize(checks.preferred_affinity[candidates])
        parts[SPREAD] = self._spread_scores(shape, entry, candidates)
        parts[POD_AFFINITY] = self._pod_affinity_scores(shape, candidates)
        return parts

    def _scores(self, shape: PodShape, entry: _Entry, candidates: np.ndarray) -> np.ndarray:
        if self.strategy is not None:
            if self._view_strategy:
                view, request = self._node_view(), strategy_request(shape.usage)
                return np.asarray(self.strategy.score(view, request, candidates))  # type: ignore[call-arg]
            scores = self.strategy.score(self.state, shape.pod, shape.usage.gpu, candidates)
            return np.asarray(scores)
        if candidates.size == 0:
            return np.zeros(0, dtype=np.int64)
        parts = self._score_parts(shape, entry, candidates)
        return (
            parts["local"]
            + self.w_taint * parts[TAINT]
            + self.w_node_affinity * parts[NODE_AFFINITY]
            + self.w_spread * parts[SPREAD]
            + self.w_pod_affinity * parts[POD_AFFINITY]
        )

    def _spread_scores(self, shape: PodShape, entry: _Entry, candidates: np.ndarray) -> np.ndarray:
        constraints, require_all = ptsv.scoring_constraints(shape.pod, self.state.objects)
        if not constraints:
            return np.zeros(candidates.shape[0], dtype=np.int64)
        checks = entry.static.checks
        namespace = shape.pod.namespace
        return ptsv.score(
            constraints,
            self.state.labels,
            candidates,
            lambda c: self._node_counts(c, namespace),
            checks.affinity_ok,
            checks.taints_ok,
            self.state.active,
            require_all,
        )

    def _pod_affinity_scores(self, shape: PodShape, candidates: np.ndarray) -> np.ndarray:
        state = self.state
        info = shape.affinity
        if not info.has_preferred and not state.affinity_bindings:
            return np.zeros(candidates.shape[0], dtype=np.int64)
        pod = shape.pod
        key = (pod.namespace, tuple(sorted(pod.labels.items())), info)
        result = self._incremental(
            self._affinity_scores,
            key,
            lambda: ipa.ScoreState(
                pod,
                info,
                state.namespace_labels_of,
                self.profile.hard_pod_affinity_weight,
                state.labels,
            ),
            every_pod=info.has_preferred,
        )
        assert isinstance(result, ipa.ScoreState)
        if not result.scores:
            return np.zeros(candidates.shape[0], dtype=np.int64)
        raw = result.raw_scores(state.labels, state.num_nodes)
        return ipa.normalize(raw[candidates])

    # --- select and bind -------------------------------------------------------------------

    def _sample(self, feasible: np.ndarray, candidates: np.ndarray) -> np.ndarray:
        """percentageOfNodesToScore: the first k feasible nodes from a rotating start."""
        pct = self.profile.percentage_of_nodes_to_score
        if pct == 100:
            return candidates
        active = np.flatnonzero(self.state.active)
        n_all = active.shape[0]
        k = num_feasible_nodes_to_find(n_all, pct)
        start = self.next_start_node % max(n_all, 1)
        order = np.concatenate([active[start:], active[:start]])
        positions = np.flatnonzero(feasible[order])
        if positions.shape[0] > k:
            positions = positions[:k]
            processed = int(positions[-1]) + 1
        else:
            processed = n_all
        self.next_start_node = (start + processed) % max(n_all, 1)
        return order[positions]

    def _pick(self, ties: np.ndarray) -> int:
        if ties.shape[0] == 1 or self.profile.tie_break == "first":
            return int(ties[0])
        return int(ties[self.rng.randrange(ties.shape[0])])

    def _node_view(self) -> Any:
        """The strategies' NodeView, built once per state version."""
        state = self.state
        key = (state.uid, state.version, state.static_version)
        if self._view is None or self._view[0] != key:
            self._view = (key, node_view(state))
        return self._view[1]

    def _place(
        self, shape: PodShape, node: int, score: int, feasible: int, bind: bool
    ) -> Placement:
        state = self.state
        gpu = shape.usage.gpu
        devices: tuple[int, ...] | None = None
        chooser = getattr(self.strategy, "choose_devices", None)
        if gpu is not None and chooser is not None and gpu.mig_profile is None:
            if self._view_strategy:
                request = strategy_request(shape.usage)
                devices = tuple(int(d) for d in chooser(self._node_view(), node, request))
            else:
                devices = tuple(chooser(state, node, gpu))
        binding = None
        if bind:
            binding = state.bind(shape.pod, node, devices, usage=shape.usage)
            devices = binding.devices
        elif devices is None:
            devices = choose_devices(state, node, gpu) if gpu is not None else ()
        return Placement(
            shape.pod.key, state.node_names[node], node, devices, score, feasible, binding
        )

    # --- refusals ---------------------------------------------------------------------------

    def _first_failures(self, entry: _Entry, extra: _Extra | None) -> np.ndarray:
        """Per node, the failing plugin's position in FILTER_PLUGINS (-1 passes, -2 inactive)."""
        state = self.state
        codes = entry.static.checks.codes
        out = np.full(state.num_nodes, -1, dtype=np.int8)
        out[codes > 0] = codes[codes > 0] - 1  # NodeUnschedulable..NodeAffinity = 0..3
        if extra is not None and extra.ports is not None:
            out[(out == -1) & extra.ports] = _PORTS  # NodePorts runs before NodeResourcesFit
        undecided = out == -1
        out[undecided & ~entry.fit_ok] = 4
        undecided = out == -1
        out[undecided & ((entry.static.gpu_static != 0) | (entry.gpu_dynamic != 0))] = 5
        if extra is not None and extra.volumes is not None:
            out[(out == -1) & (extra.volumes != 0)] = _VOLUMES
        if extra is not None:
            undecided = out == -1
            out[undecided & (extra.spread != 0)] = 6
            undecided = out == -1
            out[undecided & (extra.affinity != 0)] = 7
            for row in extra.nominated:
                out[row] = _NOMINATED  # the pass with nominated pods failed first
            if extra.rejection is not None:
                out[:] = _REJECTED
        out[~state.active] = -2
        return out

    def _fit_error(self, shape: PodShape, entry: _Entry, extra: _Extra | None) -> FitResult:
        """The FitError: reason histogram counted with array operations; verdicts on demand."""
        state = self.state
        first = self._first_failures(entry, extra)
        groups: dict[tuple[str, str, str], int] = {}

        def add(plugin: str, code: Code, reason: str, count: int) -> None:
            if count:
                key = (plugin, code.value, reason)
                groups[key] = groups.get(key, 0) + count

        for position in range(4):
            status = nf.STATUSES[position + 1]
            add(status.plugin, status.code, status.reasons[0], int(np.sum(first == position)))
        fit_rows = first == 4
        if fit_rows.any():
            pods = state.resource_index[PODS]
            alloc, used = state.allocatable, state.requested
            unresolvable = np.zeros(state.num_nodes, dtype=np.bool_)
            shorts = []
            for check in entry.checks:
                if check.column < 0:
                    short = np.ones(state.num_nodes, dtype=np.bool_)
                    over = short
                else:
                    free = alloc[:, check.column] - used[:, check.column]
                    short = check.amount > free
                    over = check.amount > alloc[:, check.column]
                unresolvable |= fit_rows & short & over
                shorts.append((check.reason, short))
            too_many = used[:, pods] + 1 > alloc[:, pods]
            for reason, short in [("Too many pods", too_many), *shorts]:
                rows = fit_rows & short
                add(
                    FIT,
                    Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                    reason,
                    int(np.sum(rows & unresolvable)),
                )
                add(FIT, Code.UNSCHEDULABLE, reason, int(np.sum(rows & ~unresolvable)))
        gpu_rows = first == 5
        if gpu_rows.any():
            static = entry.static.gpu_static
            for code in range(1, len(gpuf.STATIC_REASONS)):
                status = gpuf.STATIC_STATUSES[code]
                add(
                    status.plugin,
                    status.code,
                    status.reasons[0],
                    int(np.sum(gpu_rows & (static == code))),
                )
            for code in range(1, len(gpuf.DYNAMIC_REASONS)):
                status = gpuf.DYNAMIC_STATUSES[code]
                count = int(np.sum(gpu_rows & (static == 0) & (entry.gpu_dynamic == code)))
                add(status.plugin, status.code, status.reasons[0], count)
        if extra is not None:
            add(hp.PLUGIN, hp.STATUS.code, hp.REASON, int(np.sum(first == _PORTS)))
            if extra.rejection is not None:
                status = extra.rejection
                add(status.plugin, status.code, status.message, int(np.sum(first == _REJECTED)))
            if extra.volumes is not None:
                rows = first == _VOLUMES
                for code in range(1, len(vol.FILTER_STATUSES)):
                    status = vol.FILTER_STATUSES[code]
                    count = int(np.sum(rows & (extra.volumes == code)))
                    add(status.plugin, status.code, status.reasons[0], count)
            for verdict in extra.nominated.values():
                status = verdict.status
                for reason in status.reasons:
                    add(status.plugin, status.code, reason, 1)
            for position, codes, statuses in (
                (6, extra.spread, ptsv.FILTER_STATUSES),
                (7, extra.affinity, ipa.FILTER_STATUSES),
            ):
                rows = first == position
                for code in range(1, len(statuses)):
                    status = statuses[code]
                    add(
                        status.plugin,
                        status.code,
                        status.reasons[0],
                        int(np.sum(rows & (codes == code))),
                    )
        counts: dict[str, int] = {}
        for (_, _, reason), n in groups.items():
            counts[reason] = counts.get(reason, 0) + n
        num_nodes = int(np.count_nonzero(state.active))
        prefilter_msg = extra.rejection.message if extra is not None and extra.rejection else ""
        message = fit_error_message_from_counts(num_nodes, counts, prefilter_msg=prefilter_msg)
        pod_key = shape.pod.key
        reasons = reasons_from_counts(pod_key, groups)
        return FitResult(
            pod_key,
            message=message,
            reasons=reasons,
            explain=lambda: self._verdicts(shape, entry, extra),
        )

    def _verdicts(self, shape: PodShape, entry: _Entry, extra: _Extra | None) -> list[NodeVerdict]:
        state = self.state
        first = self._first_failures(entry, extra)
        checks = entry.static.checks
        pod = shape.pod
        gpu = shape.usage.gpu
        out = []
        for row in np.flatnonzero(first != -2).tolist():
            name = state.node_names[row]
            position = int(first[row])
            if position == -1:
                out.append(NodeVerdict(name, SUCCESS))
            elif position == 0:
                out.append(NodeVerdict(name, nf.STATUS_UNSCHEDULABLE, fw.DETAIL_UNSCHEDULABLE))
            elif position == 1:
                detail = fw.detail_node_name(pod.node_name)
                out.append(NodeVerdict(name, nf.STATUS_NODE_NAME, detail))
            elif position == 2:
                taint = checks.untolerated[int(state.taint_set[row])]
                out.append(NodeVerdict(name, nf.STATUS_TAINT, fw.detail_taint(taint)))
            elif position == 3:
                out.append(NodeVerdict(name, nf.STATUS_NODE_AFFINITY, fw.DETAIL_NODE_AFFINITY))
            elif position == 4:
                short = nrf.insufficient(state, entry.checks, row)
                out.append(
                    NodeVerdict(name, fit_status(short), fw.detail_resources(short), tuple(short))
                )
            elif position == 5:
                assert gpu is not None
                static = int(entry.static.gpu_static[row])
                status = (
                    gpuf.STATIC_STATUSES[static]
                    if static
                    else gpuf.DYNAMIC_STATUSES[int(entry.gpu_dynamic[row])]
                )
                out.append(NodeVerdict(name, status, fw.detail_gpu(gpu)))
            elif position == 6:
                assert extra is not None
                status = ptsv.FILTER_STATUSES[int(extra.spread[row])]
                out.append(NodeVerdict(name, status, fw.DETAIL_SPREAD))
            elif position == 7:
                assert extra is not None
                status = ipa.FILTER_STATUSES[int(extra.affinity[row])]
                out.append(NodeVerdict(name, status, fw.DETAIL_POD_AFFINITY))
            elif position == _PORTS:
                out.append(NodeVerdict(name, hp.STATUS, fw.detail_ports(pod.host_ports)))
            elif position == _VOLUMES:
                assert extra is not None and extra.volumes is not None
                status = vol.FILTER_STATUSES[int(extra.volumes[row])]
                out.append(NodeVerdict(name, status, fw.DETAIL_VOLUMES))
            elif position == _REJECTED:
                assert extra is not None and extra.rejection is not None
                out.append(NodeVerdict(name, extra.rejection, fw.DETAIL_VOLUMES))
            else:
                assert extra is not None
                out.append(extra.nominated[row])
        return out


def _on_node(pod: Pod, node_name: str) -> Pod:
    """The pod as bound to `node_name` (nominated pods and bindings alike)."""
    if pod.node_name == node_name and pod.holds_resources:
        return pod
    return replace(pod, node_name=node_name, phase="Running")


def _takes_node_view(strategy: Any) -> bool:
    """Strategies of engine/placement/strategies score `(view, request, candidates)`; the
    interface's form is `(state, pod, gpu_request, candidates)`."""
    try:
        params = inspect.signature(strategy.score).parameters
    except (TypeError, ValueError):
        return False
    return len(params) == 3


def node_view(state: ClusterState) -> Any:
    """The strategies' NodeView of the state: free cpu (milli) and memory by requests, free
    GPU-milli per device slot, physical GPU count and model codes."""
    from gpupact.engine.placement.strategies.base import NodeView

    cpu, mem = state.resource_index["cpu"], state.resource_index["memory"]
    return NodeView(
        cpu_free=state.allocatable[:, cpu] - state.requested[:, cpu],
        mem_free=state.allocatable[:, mem] - state.requested[:, mem],
        dev_free=state.dev_free_milli.astype(np.int64),
        gpu_count=state.gpu_count.astype(np.int64),
        gpu_model=state.gpu_model.astype(np.int64),
        gpu_models=tuple(state.gpu_models),
    )


def strategy_request(usage: PodUsage) -> Any:
    """The strategies' Request of a pod: non-zero cpu (as upstream scores use), memory and the
    GPU ask (MIG slices are not a strategy's business: no GPU for them)."""
    from gpupact.engine.placement.strategies.base import Request

    memory = dict(usage.requests).get("memory", 0)
    gpu = usage.gpu
    if gpu is None or gpu.mig_profile is not None:
        return Request(usage.nonzero_cpu, memory)
    return Request(usage.nonzero_cpu, memory, gpu.count, gpu.milli, gpu.models)


def ptsv_has_soft(pod: Pod) -> bool:
    return any(c.when_unsatisfiable == pts.SCHEDULE_ANYWAY for c in pod.topology_spread_constraints)


def num_feasible_nodes_to_find(num_all_nodes: int, percentage: int) -> int:
    """numFeasibleNodesToFind: all nodes below 100; else the percentage (0: adaptive
    50 - nodes/125, at least 5) of the nodes, at least 100."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    if percentage == 0:
        percentage = max(50 - num_all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE)
    num = num_all_nodes * percentage // 100
    return max(num, MIN_FEASIBLE_NODES_TO_FIND)


# --- module-level helpers (the interface in notes/cluster-interface.md) -----------------------


def feasible_mask(state: ClusterState, pod: Pod) -> np.ndarray:
    return Scheduler(state).feasible_mask(pod)


def explain(state: ClusterState, pod: Pod) -> FitResult:
    return Scheduler(state).explain(pod)


def choose_devices(
    state: ClusterState, node: int, gpu_request: GpuRequest, policy: Any = None
) -> tuple[int, ...]:
    """The devices a request takes on `node`: `policy.choose_devices` when given, else the
    default rule (gpupact.cluster.devices.choose_devices)."""
    chooser = getattr(policy, "choose_devices", None)
    if chooser is not None:
        return tuple(chooser(state, node, gpu_request))
    free, mig = state.node_gpu_free(node)
    return dev.choose_devices(state.gpu_specs[node], free, mig, gpu_request)
