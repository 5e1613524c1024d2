"""The model's memory against its GPU (runbook step 6): OOM history and the KV cache.

OOM history comes from the pod's container statuses: `OOMKilled` (the container's memory
limit) and CUDA out-of-memory messages in a terminated container's message (GPU memory:
the process exits with an error, not OOMKilled). The profile needs the contract's service:
weights = params x bits / 8, spread over `tensorParallel` GPUs; the KV cache per token is
taken from the pod annotation `gpupact.io/kv-bytes-per-token` when set, else estimated for a
grouped-query-attention transformer (8 KV heads x 128 dims, fp16/bf16 cache, layers about
19 x cube root of the parameters in billions — right within ~20% for Llama-3 / Qwen2.5
sizes). Serving engines keep ~10% of the GPU for activations and the runtime, so 90% is
counted as usable.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpupact.contract.keys import LABEL_APP
from gpupact.contract.schema import Contract, Service
from gpupact.kube.objects import Pod
from gpupact.ops.findings import format_duration
from gpupact.ops.model import time_or_none

KV_BYTES_ANNOTATION = "gpupact.io/kv-bytes-per-token"
OOM_KILLED = "OOMKilled"
CUDA_OOM_MARKERS = (
    "CUDA out of memory",
    "CUDA error: out of memory",
    "OutOfMemoryError",
    "CUBLAS_STATUS_ALLOC_FAILED",
)
USABLE_PERCENT = 90
KV_HEADS, HEAD_DIM, KV_DTYPE_BYTES = 8, 128, 2
GIB = 2**30


@dataclass(frozen=True)
class OomRecord:
    pod: str
    container: str
    kind: str  # "OOMKilled" | "CUDA OOM"
    restarts: int
    finished: int | None  # Unix seconds
    detail: str = ""

    def line(self, now: int) -> str:
        when = f", {format_duration(now - self.finished)} ago" if self.finished else ""
        extra = f": {self.detail}" if self.detail else ""
        return (
            f"pod {self.pod} container {self.container}: {self.kind}{when} "
            f"(restarts {self.restarts}){extra}"
        )


def _statuses(pod: Pod) -> list[Mapping[str, Any]]:
    status = pod.raw.get("status") if pod.raw else None
    if not isinstance(status, dict):
        return []
    out = []
    for key in ("initContainerStatuses", "containerStatuses"):
        items = status.get(key)
        if isinstance(items, list):
            out.extend(s for s in items if isinstance(s, dict))
    return out


def _terminated(state: object) -> Mapping[str, Any] | None:
    if isinstance(state, dict) and isinstance(state.get("terminated"), dict):
        return state["terminated"]
    return None


def oom_history(pod: Pod) -> list[OomRecord]:
    """Containers of `pod` whose current or last termination was an out-of-memory."""
    out = []
    for cs in _statuses(pod):
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
            out.append(
                OomRecord(
                    pod.key,
                    str(cs.get("name", "")),
                    OOM_KILLED if reason == OOM_KILLED else "CUDA OOM",
                    restarts if isinstance(restarts, int) else 0,
                    at,
                    _first_line(message, marker) if marker else "",
                )
            )
            break  # one record per container: the latest termination
    return out


def _first_line(message: str, marker: str) -> str:
    for line in message.splitlines():
        if marker in line:
            return line.strip()[:160]
    return marker


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


def estimated_kv_bytes_per_token(params: int) -> int:
    layers = max(1, round(19 * (params / 1e9) ** (1 / 3)))
    return 2 * layers * KV_HEADS * HEAD_DIM * KV_DTYPE_BYTES


@dataclass(frozen=True)
class MemoryProfile:
    service: str
    gpus: int  # GPUs one replica spans (tensor parallel)
    device_memory: int  # bytes per GPU
    weights: int  # bytes, whole model
    kv_per_token: int
    kv_estimated: bool
    context: int | None
    concurrency: int | None

    @property
    def usable(self) -> int:
        return self.gpus * self.device_memory * USABLE_PERCENT // 100

    @property
    def kv_budget(self) -> int:
        return self.usable - self.weights

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
        return max(0, self.kv_budget) // max(1, self.kv_per_token)

    @property
    def over(self) -> bool:
        """The weights do not fit, or not even one request at the full context length."""
        if self.kv_budget <= 0:
            return True
        seqs = self.sequences_at_context
        return seqs is not None and seqs < 1

    def lines(self) -> list[str]:
        how = "estimated" if self.kv_estimated else f"from {KV_BYTES_ANNOTATION}"
        out = [
            f"service {self.service}: weights {_gib(self.weights)} over {self.gpus} GPU(s) of "
            f"{_gib(self.device_memory)} ({USABLE_PERCENT}% usable: {_gib(self.usable)})",
            f"KV cache {self.kv_per_token // 1024} KiB per token ({how}); room for "
            f"{_gib(max(0, self.kv_budget))} of KV cache",
        ]
        if self.context is not None:
            seqs = self.sequences_at_context
            out.append(
                f"at contextLength {self.context}: {_gib(self.kv_per_sequence or 0)} per "
                f"request, {seqs} full-length request(s) fit at once"
                + (f" (concurrency {self.concurrency})" if self.concurrency else "")
            )
        out.append(f"longest single request that fits: {self.max_context} tokens")
        return out


def _gib(value: int) -> str:
    whole, rest = divmod(value * 10 // GIB, 10)
    return f"{whole}.{rest}GiB" if rest else f"{whole}GiB"


def memory_profile(contract: Contract, service: Service, pod: Pod | None) -> MemoryProfile | None:
    if service.model is None or service.pool is None:
        return None
    pool = contract.pool(service.pool)
    annotated = pod.annotations.get(KV_BYTES_ANNOTATION) if pod is not None else None
    if annotated is not None and annotated.isdigit() and int(annotated) > 0:
        kv, estimated = int(annotated), False
    else:
        kv, estimated = estimated_kv_bytes_per_token(service.model.params), True
    return MemoryProfile(
        service=service.name,
        gpus=max(1, service.tensor_parallel),
        device_memory=pool.device_memory,
        weights=service.model.weight_bytes,
        kv_per_token=kv,
        kv_estimated=estimated,
        context=service.context_length,
        concurrency=service.concurrency,
    )
