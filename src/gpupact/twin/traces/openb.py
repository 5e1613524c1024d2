"""The openb trace (Alibaba GPU cluster, published with the FGD paper) and its replay protocol.

Files: `openb_node_list_gpu_node.csv` (sn, cpu_milli, memory_mib, gpu, model) and
`openb_pod_list_*.csv` (name, cpu_milli, memory_mib, num_gpu, gpu_milli[, gpu_spec, qos,
pod_phase, creation_time, deletion_time, scheduled_time]). Every number is read as an exact
integer (memory in bytes); a bad row raises InputError naming the file, line and column.

Replay protocol of the paper's artefact (kubernetes-scheduler-simulator, `-tune 1.3`):
1. the trace's pods, sorted by name, are shuffled with the seed;
2. random copies of trace pods are appended until the GPU requests reach 130% of the
   cluster's GPU capacity (the artefact stops at the first copy whose per-device milli would
   cross the target, so the total may end slightly above or below it);
3. each pod gets one scheduling attempt, in order; nothing is ever deleted;
4. after every attempt the allocated GPU milli and the arrived GPU milli (requests of all
   attempted pods, placed or not) are recorded; the curve reports, for each integer percent
   of arrived workload, the mean allocation over the attempts whose arrived percent rounds
   to it.
Node order is also shuffled per seed: the artefact prefixed node names with a random rank
and broke score ties by the smallest name, which is the engine's lowest-index rule.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from gpupact.cluster.devices import ANN_GPU_MILLI, ANN_GPU_MODELS, GPU_RESOURCE
from gpupact.cluster.state import ClusterState
from gpupact.engine.placement.scheduler import Placement, Scheduler
from gpupact.engine.placement.strategies.base import MILLI, Request
from gpupact.errors import InputError
from gpupact.kube.objects import Pod
from gpupact.kube.requests import Container, PodResources

MIB = 1 << 20
DATA_DIR_ENV = "GPUPACT_OPENB_DIR"
NODE_FILE = "openb_node_list_gpu_node.csv"
NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")
DEFAULT_TUNE_PCT = 130
NON_ZERO_CPU_MILLI = 100  # kube-scheduler's default CPU request for scoring
ARTEFACT_MAX_PODS = 1001  # pods per node in the artefact's node specs
NAMESPACE = "openb"


@dataclass(frozen=True, slots=True)
class OpenbNode:
    name: str
    cpu_milli: int
    memory: int  # bytes
    gpu_count: int
    gpu_model: str  # "" for a node without GPUs


@dataclass(frozen=True, slots=True)
class OpenbPod:
    name: str
    cpu_milli: int
    memory: int  # bytes
    gpu_count: int = 0
    gpu_milli: int = 0  # per device; 1000 for whole devices, 0 without GPUs
    gpu_models: frozenset[str] | None = None  # gpu_spec "A|B"; None = any model
    qos: str = ""
    phase: str = ""
    creation_time: int | None = None
    deletion_time: int | None = None
    scheduled_time: int | None = None

    @property
    def total_gpu_milli(self) -> int:
        return self.gpu_count * self.gpu_milli

    def to_pod(self) -> Pod:
        """A Kubernetes Pod asking for the same: whole GPUs as `nvidia.com/gpu`, a share as
        the `gpupact.io/gpu-milli` annotation, a GPU model list as `gpupact.io/gpu-models`."""
        requests = {"cpu": self.cpu_milli, "memory": self.memory}
        annotations: dict[str, str] = {}
        if self.gpu_count and self.gpu_milli < MILLI:
            annotations[ANN_GPU_MILLI] = str(self.gpu_milli)
        elif self.gpu_count:
            requests[GPU_RESOURCE] = self.gpu_count
        if self.gpu_models:
            annotations[ANN_GPU_MODELS] = ",".join(sorted(self.gpu_models))
        container = Container(name="main", requests=requests, limits=dict(requests))
        return Pod(
            name=self.name,
            namespace=NAMESPACE,
            annotations=annotations,
            resources=PodResources(containers=(container,)),
        )

    def request(self) -> Request:
        """The request strategies score (CPU with the scheduler's non-zero default)."""
        return Request(
            cpu_milli=self.cpu_milli or NON_ZERO_CPU_MILLI,
            memory=self.memory,
            gpu_count=self.gpu_count,
            gpu_milli=self.gpu_milli,
            gpu_models=self.gpu_models,
        )


# --- reading ------------------------------------------------------------------------------


class _Rows:
    """CSV rows as dicts, with the file and line to blame for a bad value."""

    def __init__(self, path: Path, required: Sequence[str]) -> None:
        self.path = path
        self.file = str(path)
        self.required = required

    def __iter__(self):
        try:
            handle = self.path.open(newline="", encoding="utf-8")
        except OSError as err:
            raise InputError(f"cannot read: {err.strerror}", file=self.file) from None
        with handle:
            reader = csv.reader(handle)
            header = next(reader, None)
            if header is None:
                raise InputError("empty file, expected a CSV header", file=self.file, line=1)
            header = [h.strip() for h in header]
            missing = [c for c in self.required if c not in header]
            if missing:
                raise InputError(
                    f"missing column(s) {', '.join(missing)}; header is {','.join(header)}",
                    file=self.file,
                    line=1,
                )
            for row in reader:
                if not row or all(not cell.strip() for cell in row):
                    continue
                if len(row) != len(header):
                    raise InputError(
                        f"{len(row)} fields, the header has {len(header)}",
                        file=self.file,
                        line=reader.line_num,
                    )
                yield reader.line_num, dict(zip(header, (c.strip() for c in row), strict=True))

    def error(self, line: int, column: str, message: str) -> InputError:
        return InputError(message, file=self.file, line=line, path=(column,))

    def integer(self, line: int, row: dict[str, str], column: str, *, optional: bool = False):
        text = row.get(column, "")
        if text == "" and optional:
            return None
        if not text.isascii() or not text.isdigit():
            raise self.error(line, column, f"expected a non-negative integer, got {text!r}")
        return int(text)

    def text(self, line: int, row: dict[str, str], column: str) -> str:
        value = row.get(column, "")
        if not value:
            raise self.error(line, column, "must not be empty")
        return value

    def unique_name(
        self, line: int, row: dict[str, str], column: str, kind: str, seen: set[str]
    ) -> str:
        """The row's `kind` name in `column`, which no earlier row (names in `seen`) carries."""
        name = self.text(line, row, column)
        if name in seen:
            raise self.error(line, column, f"{kind} {name!r} appears twice")
        seen.add(name)
        return name


def read_nodes(path: str | Path) -> list[OpenbNode]:
    rows = _Rows(Path(path), NODE_COLUMNS)
    nodes: list[OpenbNode] = []
    seen: set[str] = set()
    for line, row in rows:
        name = rows.unique_name(line, row, "sn", "node", seen)
        gpus = rows.integer(line, row, "gpu")
        model = row["model"]
        if gpus and not model:
            raise rows.error(line, "model", f"a node with {gpus} GPUs needs a GPU model")
        nodes.append(
            OpenbNode(
                name=name,
                cpu_milli=rows.integer(line, row, "cpu_milli"),
                memory=rows.integer(line, row, "memory_mib") * MIB,
                gpu_count=gpus,
                gpu_model=model if gpus else "",
            )
        )
    return nodes


def read_pods(path: str | Path) -> list[OpenbPod]:
    rows = _Rows(Path(path), POD_COLUMNS)
    pods: list[OpenbPod] = []
    seen: set[str] = set()
    for line, row in rows:
        name = rows.unique_name(line, row, "name", "pod", seen)
        count = rows.integer(line, row, "num_gpu")
        milli = rows.integer(line, row, "gpu_milli")
        if count == 0 and milli != 0:
            raise rows.error(line, "gpu_milli", f"{milli} GPU milli but num_gpu is 0")
        if count > 0 and not 0 < milli <= MILLI:
            raise rows.error(line, "gpu_milli", f"must be in 1..{MILLI} when num_gpu > 0")
        if count > 1 and milli != MILLI:
            raise rows.error(line, "gpu_milli", "a GPU-share pod (gpu_milli < 1000) takes 1 GPU")
        spec = [m for m in row.get("gpu_spec", "").split("|") if m]
        pods.append(
            OpenbPod(
                name=name,
                cpu_milli=rows.integer(line, row, "cpu_milli"),
                memory=rows.integer(line, row, "memory_mib") * MIB,
                gpu_count=count,
                gpu_milli=milli,
                gpu_models=frozenset(spec) if spec and count else None,
                qos=row.get("qos", ""),
                phase=row.get("pod_phase", ""),
                creation_time=rows.integer(line, row, "creation_time", optional=True),
                deletion_time=rows.integer(line, row, "deletion_time", optional=True),
                scheduled_time=rows.integer(line, row, "scheduled_time", optional=True),
            )
        )
    return pods


def data_dir(project_root: str | Path | None = None) -> Path:
    """$GPUPACT_OPENB_DIR, else ../shared/data/openb next to the project root."""
    env = os.environ.get(DATA_DIR_ENV)
    if env:
        return Path(env)
    root = Path(project_root) if project_root is not None else Path.cwd()
    return root.parent / "shared" / "data" / "openb"


def pod_file(directory: Path, trace: str) -> Path:
    """`default` -> openb_pod_list_default.csv (a path or a full file name also works)."""
    name = trace if trace.endswith(".csv") else f"openb_pod_list_{trace}.csv"
    return directory / name


# --- the replay protocol -------------------------------------------------------------------


@dataclass(frozen=True)
class SeedStreams:
    """Independent random streams of one replay seed: pod order and copies, node order, and
    whatever the policy draws (Random)."""

    workload: np.random.Generator
    nodes: np.random.Generator
    policy: np.random.Generator

    @classmethod
    def of(cls, seed: int) -> SeedStreams:
        workload, nodes, policy = np.random.SeedSequence(seed).spawn(3)
        return cls(
            np.random.default_rng(workload),
            np.random.default_rng(nodes),
            np.random.default_rng(policy),
        )


def arrival_order(
    pods: Sequence[OpenbPod],
    capacity_gpu_milli: int,
    rng: np.random.Generator,
    tune_pct: int = DEFAULT_TUNE_PCT,
) -> list[OpenbPod]:
    """The pods in replay order: the trace shuffled, then tuned to `tune_pct`% of capacity
    (random copies appended, or random pods dropped when the trace asks for more)."""
    if not pods:
        raise ValueError("the trace has no pods")
    by_name = sorted(pods, key=lambda p: p.name)
    order = [by_name[i] for i in rng.permutation(len(by_name))]
    requested = sum(p.total_gpu_milli for p in order)
    target = tune_pct * capacity_gpu_milli  # compared with requested * 100
    if requested * 100 > target:
        while requested * 100 > target and order:
            dropped = order.pop(int(rng.integers(len(order))))
            requested -= dropped.total_gpu_milli
        return order
    if not any(p.total_gpu_milli for p in by_name):
        return order  # a CPU-only trace never reaches a GPU target
    copies = 0
    while True:
        pod = by_name[int(rng.integers(len(by_name)))]
        # the artefact's stop test adds the copy's per-device milli, not its total
        if (requested + pod.gpu_milli) * 100 > target:
            break
        order.append(replace(pod, name=f"{pod.name}-tuned-{copies}"))
        requested += pod.total_gpu_milli
        copies += 1
    return order


def build_state(nodes: Sequence[OpenbNode]) -> ClusterState:
    """The engine's cluster for the nodes, in the given order, GPUs shared by milli."""
    return ClusterState.from_arrays(
        [n.name for n in nodes],
        cpu_milli=[n.cpu_milli for n in nodes],
        memory_bytes=[n.memory for n in nodes],
        gpu_count=[n.gpu_count for n in nodes],
        gpu_model=[n.gpu_model or None for n in nodes],
        gpu_sharing="fractional",
        max_pods=ARTEFACT_MAX_PODS,
    )


def capacity_gpu_milli(nodes: Iterable[OpenbNode]) -> int:
    return sum(n.gpu_count for n in nodes) * MILLI


@dataclass
class ReplayResult:
    """Per attempt, in order: arrived GPU milli (all attempted pods) and allocated GPU milli
    (read from the cluster state after the attempt)."""

    policy: str
    seed: int
    capacity_gpu_milli: int
    arrived: np.ndarray
    allocated: np.ndarray
    failed: int = 0
    failed_gpu_milli: int = 0
    attempts: int = 0


def _round_half_even(numerator: np.ndarray, denominator: int) -> np.ndarray:
    """round(numerator / denominator) with ties to even (Python's round), exactly."""
    doubled = 2 * numerator + denominator
    nearest = doubled // (2 * denominator)
    tie = doubled % (2 * denominator) == 0
    return nearest - (tie & (nearest % 2 == 1))


def allocation_curve(result: ReplayResult, grid: Iterable[int] = range(131)) -> dict[int, float]:
    """Allocated GPU % per arrived GPU % (the artefact's discrete curve).

    Each attempt's arrived % is rounded to an integer (ties to even) and its allocated % to
    two decimals; a grid point averages its attempts, or those within +/-1 point when none
    landed on it; points with no attempt nearby are left out."""
    cap = result.capacity_gpu_milli
    arrived_pct = _round_half_even(np.asarray(result.arrived, dtype=np.int64) * 100, cap)
    alloc_pct = np.round(np.asarray(result.allocated, dtype=np.float64) * 100 / cap, 2)
    curve: dict[int, float] = {}
    for point in grid:
        hit = arrived_pct == point
        if not hit.any():
            hit = (arrived_pct >= point - 1) & (arrived_pct <= point + 1)
            if not hit.any():
                continue
        curve[point] = round(float(alloc_pct[hit].mean()), 2)
    return curve


def unallocated_curve(result: ReplayResult, grid: Iterable[int] = range(131)) -> dict[int, float]:
    """Unallocated GPU % (100 - allocated %) per arrived GPU %."""
    return {k: round(100.0 - v, 2) for k, v in allocation_curve(result, grid).items()}


def replay(
    nodes: Sequence[OpenbNode],
    pods: Sequence[OpenbPod],
    strategy_for: Callable[[SeedStreams], Any],
    *,
    seed: int,
    tune_pct: int = DEFAULT_TUNE_PCT,
    policy: str = "",
    explain_refusals: bool = False,
) -> ReplayResult:
    """One seed of the artefact's experiment, placed by the engine's Scheduler with the
    strategy `strategy_for(streams)` returns (filters, device choice and binding included).
    Refusals are only counted, so the scheduler's cheap refusal mode is used unless
    `explain_refusals` (the same placements, plus the FitError work; for measuring it)."""
    streams = SeedStreams.of(seed)
    capacity = capacity_gpu_milli(nodes)
    order = arrival_order(pods, capacity, streams.workload, tune_pct)
    shuffled = [nodes[i] for i in streams.nodes.permutation(len(nodes))]
    state = build_state(shuffled)
    strategy = strategy_for(streams)
    scheduler = Scheduler(state, strategy, explain=explain_refusals)
    arrived = np.zeros(len(order), dtype=np.int64)
    allocated = np.zeros(len(order), dtype=np.int64)
    total = failed = failed_milli = 0
    for i, pod in enumerate(order):
        total += pod.total_gpu_milli
        if not isinstance(scheduler.schedule_one(pod.to_pod()), Placement):
            failed += 1
            failed_milli += pod.total_gpu_milli
        arrived[i] = total
        allocated[i] = int(state.dev_used_milli.sum(dtype=np.int64))
    return ReplayResult(
        policy=policy or str(getattr(strategy, "name", type(strategy).__name__)),
        seed=seed,
        capacity_gpu_milli=capacity,
        arrived=arrived,
        allocated=allocated,
        failed=failed,
        failed_gpu_milli=failed_milli,
        attempts=len(order),
    )
