"""The model's memory against its GPU (runbook step 6): OOM history and the KV cache.

OOM history comes from the pod's init and app container statuses: `OOMKilled` is the kernel's
cgroup OOM killer (host memory: the container went past its memory limit, or the node ran out),
a CUDA out-of-memory message in a terminated container's message is GPU memory (the process
exits with an error, not OOMKilled). The two need different fixes: a larger memory limit vs a
smaller batch / context / a larger GPU. The profile needs the contract's service and is
`gpupact plan`'s own memory arithmetic (plan.memory: the architecture's weights in their format
per GPU, vLLM's budget of gpu_memory_utilization x the device memory the runtime reports, its
activation and non-torch overhead, the KV cache per token from layers x KV heads x head width)
— one rule for plan and diagnose. The pod annotation `gpupact.io/kv-bytes-per-token` overrides
the KV cache per token; a model outside plan's catalogue is reported as such (its KV cache
cannot be sized from a parameter count) and only its weights are checked.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpupact.contract.keys import LABEL_APP
from gpupact.contract.schema import Contract, Service
from gpupact.kube.objects import Pod
from gpupact.ops.findings import format_duration
from gpupact.ops.model import time_or_none
from gpupact.plan.from_contract import pool_gpu, runtime_memory, service_model
from gpupact.plan.memory import GPU_MEMORY_UTILIZATION, replica_memory
from gpupact.plan.models import UnknownModel, resolve_model
from gpupact.plan.weights import weight_bytes
from gpupact.plan.workload import default_kv_dtype

KV_BYTES_ANNOTATION = "gpupact.io/kv-bytes-per-token"
OOM_KILLED = "OOMKilled"
CUDA_OOM_MARKERS = (
    "CUDA out of memory",
    "CUDA error: out of memory",
    "OutOfMemoryError",
    "CUBLAS_STATUS_ALLOC_FAILED",
)
GIB = 2**30


CUDA_OOM = "CUDA OOM"


@dataclass(frozen=True)
class OomRecord:
    pod: str
    container: str
    kind: str  # OOM_KILLED (cgroup, host memory) | CUDA_OOM (GPU memory)
    restarts: int
    finished: int | None  # Unix seconds
    detail: str = ""
    init: bool = False  # an init container
    limit: int | None = None  # the container's memory limit, bytes

    @property
    def host_memory(self) -> bool:
        return self.kind == OOM_KILLED

    def line(self, now: int) -> str:
        when = f", {format_duration(now - self.finished)} ago" if self.finished else ""
        extra = f": {self.detail}" if self.detail else ""
        what = "init container" if self.init else "container"
        kind = (
            f"OOMKilled (host memory, limit {_gib(self.limit)})"
            if self.host_memory and self.limit
            else "OOMKilled (host memory)"
            if self.host_memory
            else "CUDA OOM (GPU memory)"
        )
        return (
            f"pod {self.pod} {what} {self.container}: {kind}{when} "
            f"(restarts {self.restarts}){extra}"
        )


@dataclass(frozen=True)
class ContainerTrouble:
    """A container that is not running as it should: waiting (CrashLoopBackOff,
    ImagePullBackOff, ...) and/or last terminated with a failure."""

    container: str
    init: bool
    waiting: str  # waiting reason ("" when not waiting)
    waiting_message: str
    reason: str  # last termination reason ("" when none): Error, OOMKilled, ...
    exit_code: int | None
    message: str  # last termination message (first line)
    restarts: int
    finished: int | None

    @property
    def what(self) -> str:
        return f"{'init container' if self.init else 'container'} {self.container}"

    def line(self, now: int) -> str:
        parts = [self.what + ":"]
        if self.waiting:
            parts.append(self.waiting)
        if self.reason:
            code = f" exit {self.exit_code}" if self.exit_code is not None else ""
            when = f" {format_duration(now - self.finished)} ago" if self.finished else ""
            parts.append(f"last terminated {self.reason}{code}{when}")
        parts.append(f"(restarts {self.restarts})")
        if self.message or self.waiting_message:
            parts.append("- " + (self.message or self.waiting_message))
        return " ".join(parts)


def _statuses(pod: Pod) -> list[Mapping[str, Any]]:
    return [cs for cs, _ in _statuses_with_kind(pod)]


def _statuses_with_kind(pod: Pod) -> list[tuple[Mapping[str, Any], bool]]:
    """(status, is an init container), init containers first (they run first)."""
    status = pod.raw.get("status") if pod.raw else None
    if not isinstance(status, dict):
        return []
    out = []
    for key, init in (("initContainerStatuses", True), ("containerStatuses", False)):
        items = status.get(key)
        if isinstance(items, list):
            out.extend((s, init) for s in items if isinstance(s, dict))
    return out


def _memory_limit(pod: Pod, name: str, init: bool) -> int | None:
    containers = pod.resources.init_containers if init else pod.resources.containers
    for c in containers:
        if c.name == name:
            return c.limits.get("memory")
    return None


def container_troubles(pod: Pod) -> list[ContainerTrouble]:
    """Containers waiting or last terminated with a failure, init containers first."""
    out = []
    for cs, init in _statuses_with_kind(pod):
        state = cs.get("state")
        waiting = state.get("waiting") if isinstance(state, dict) else None
        waiting = waiting if isinstance(waiting, dict) else {}
        term = _terminated(state) or _terminated(cs.get("lastState"))
        failed = term is not None and (
            term.get("exitCode") not in (0, None) or term.get("reason") not in ("Completed", None)
        )
        if not waiting and not failed:
            continue
        restarts = cs.get("restartCount")
        code = term.get("exitCode") if failed and term is not None else None
        message = str(term.get("message", "")) if failed and term is not None else ""
        out.append(
            ContainerTrouble(
                str(cs.get("name", "")),
                init,
                str(waiting.get("reason", "")),
                str(waiting.get("message", ""))[:200],
                str(term.get("reason", "")) if failed and term is not None else "",
                code if isinstance(code, int) else None,
                _last_line(message),
                restarts if isinstance(restarts, int) else 0,
                time_or_none(term.get("finishedAt")) if failed and term is not None else None,
            )
        )
    return out


def _last_line(message: str) -> str:
    """A termination message's last non-empty line: where processes print the fatal error."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    return lines[-1][:200] if lines else ""


def _terminated(state: object) -> Mapping[str, Any] | None:
    if isinstance(state, dict) and isinstance(state.get("terminated"), dict):
        return state["terminated"]
    return None


def oom_history(pod: Pod) -> list[OomRecord]:
    """Containers of `pod` whose current or last termination was an out-of-memory."""
    out = []
    for cs, init in _statuses_with_kind(pod):
        for state in (cs.get("state"), cs.get("lastState")):
            term = _terminated(state)
            if term is None:
                continue
            reason = str(term.get("reason", ""))
            message = str(term.get("message", ""))
            marker = next((m for m in CUDA_OOM_MARKERS if m in message), None)
            if reason != OOM_KILLED and marker is None:
                continue
            at = time_or_none(term.get("finishedAt"))
            restarts = cs.get("restartCount")
            name = str(cs.get("name", ""))
            out.append(
                OomRecord(
                    pod.key,
                    name,
                    CUDA_OOM if marker is not None else OOM_KILLED,
                    restarts if isinstance(restarts, int) else 0,
                    at,
                    _first_line(message, marker) if marker else "",
                    init,
                    _memory_limit(pod, name, init),
                )
            )
            break  # one record per container: the latest termination
    return out


def _first_line(message: str, marker: str) -> str:
    for line in message.splitlines():
        if marker in line:
            return line.strip()[:160]
    return marker


def status_reason(pod: Pod) -> str:
    """The waiting reason as `kubectl get pods` shows it: `Init:` in front for an init
    container (Init:CrashLoopBackOff)."""
    for cs, init in _statuses_with_kind(pod):
        state = cs.get("state")
        if isinstance(state, dict) and isinstance(state.get("waiting"), dict):
            reason = str(state["waiting"].get("reason", ""))
            return f"Init:{reason}" if init and reason else reason
    return ""


def waiting_reason(pod: Pod) -> str:
    """The first container's waiting reason (CrashLoopBackOff, ImagePullBackOff, ...)."""
    for cs in _statuses(pod):
        state = cs.get("state")
        if isinstance(state, dict) and isinstance(state.get("waiting"), dict):
            return str(state["waiting"].get("reason", ""))
    return ""


# --- the model's profile ------------------------------------------------------------------------


def service_of(contract: Contract | None, pod: Pod) -> Service | None:
    if contract is None:
        return None
    name = pod.labels.get(LABEL_APP)
    return next((s for s in contract.services if s.name == name), None) if name else None


@dataclass(frozen=True)
class MemoryProfile:
    service: str
    gpus: int  # GPUs one replica spans (tensor parallel)
    device_memory: int  # bytes per GPU, as the runtime reports them
    weights: int  # bytes, whole replica
    usable: int  # the engine's budget over the replica (gpu_memory_utilization x memory)
    overhead: int  # activations and non-torch memory over the replica
    kv_per_token: int  # bytes over the replica (copies included); 0: unknown
    kv_source: str  # "plan" | "annotation" | "unknown model"
    context: int | None
    concurrency: int | None
    utilization: float = 0.9
    model_note: str = ""

    @property
    def kv_estimated(self) -> bool:
        return self.kv_source != "annotation"

    @property
    def kv_budget(self) -> int:
        return self.usable - self.weights - self.overhead

    @property
    def kv_per_sequence(self) -> int | None:
        return None if self.context is None else self.context * self.kv_per_token

    @property
    def sequences_at_context(self) -> int | None:
        per = self.kv_per_sequence
        if per is None or per == 0:
            return None
        return max(0, self.kv_budget) // per

    @property
    def max_context(self) -> int:
        """The longest single request whose KV cache fits beside the weights."""
        if not self.kv_per_token:
            return 0
        return max(0, self.kv_budget) // self.kv_per_token

    @property
    def over(self) -> bool:
        """The weights do not fit, or not even one request at the full context length."""
        if self.kv_budget <= 0:
            return True
        seqs = self.sequences_at_context
        return seqs is not None and seqs < 1

    def lines(self) -> list[str]:
        out = [
            f"service {self.service}: weights {_gib(self.weights)} over {self.gpus} GPU(s) of "
            f"{_gib(self.device_memory)} ({self.utilization:.0%} usable: {_gib(self.usable)}; "
            f"activations and runtime {_gib(self.overhead)})",
        ]
        if not self.kv_per_token:
            out.append(f"KV cache not sized: {self.model_note}")
            out.append(f"room left beside the weights: {_gib(max(0, self.kv_budget))}")
            return out
        how = f"from {KV_BYTES_ANNOTATION}" if self.kv_source == "annotation" else "plan's model"
        out.append(
            f"KV cache {self.kv_per_token // 1024} KiB per token ({how}); room for "
            f"{_gib(max(0, self.kv_budget))} of KV cache"
        )
        if self.context is not None:
            seqs = self.sequences_at_context
            out.append(
                f"at contextLength {self.context}: {_gib(self.kv_per_sequence or 0)} per "
                f"request, {seqs} full-length request(s) fit at once"
                + (f" (concurrency {self.concurrency})" if self.concurrency else "")
            )
        out.append(f"longest single request that fits: {self.max_context} tokens")
        return out


def _gib(value: int | None) -> str:
    if value is None:
        return "none"
    whole, rest = divmod(value * 10 // GIB, 10)
    return f"{whole}.{rest}GiB" if rest else f"{whole}GiB"


def memory_profile(contract: Contract, service: Service, pod: Pod | None) -> MemoryProfile | None:
    """The service's memory on its pool's GPUs, by plan's arithmetic."""
    if service.model is None or service.pool is None:
        return None
    pool = contract.pool(service.pool)
    gpu, _ = pool_gpu(pool)
    device = runtime_memory(pool, gpu) or pool.device_memory
    tp = max(1, service.tensor_parallel)
    annotated = pod.annotations.get(KV_BYTES_ANNOTATION) if pod is not None else None
    override = int(annotated) if annotated is not None and annotated.isdigit() else 0
    try:
        resolve_model(service.model.name)
    except UnknownModel as err:
        # weights from the declared parameter count; the KV cache only from the annotation
        weights = service.model.weight_bytes
        usable = math.floor(tp * device * GPU_MEMORY_UTILIZATION)
        return MemoryProfile(
            service.name, tp, device, weights, usable, 0, override,
            "annotation" if override else "unknown model", service.context_length,
            service.concurrency, model_note=str(err),
        )  # fmt: skip
    arch, fmt, _ = service_model(service, device, tp)
    memory = replica_memory(arch, fmt, default_kv_dtype(fmt), device, tp, gpu_name=gpu.name)
    return MemoryProfile(
        service=service.name,
        gpus=tp,
        device_memory=device,
        weights=weight_bytes(arch, fmt, tp),
        usable=memory.usable,
        overhead=tp * memory.overhead_per_gpu,
        kv_per_token=override or memory.kv_per_token_replica,
        kv_source="annotation" if override else "plan",
        context=service.context_length,
        concurrency=service.concurrency,
        utilization=memory.utilization,
    )
