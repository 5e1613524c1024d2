"""The serving engine's memory and batching flags, with each engine's own defaults.

    vLLM     --gpu-memory-utilization 0.9 (of the device's total memory, weights included);
             --max-num-batched-tokens / --max-num-seqs for `vllm serve`: 8192 / 1024 on GPUs of
             70 GiB or more that are not A100s, else 2048 / 256
             (vllm/engine/arg_utils.py, EngineArgs.get_batch_defaults); KV blocks of 16 tokens.
    SGLang   --mem-fraction-static (weights + KV cache, of the device's memory) defaults to
             (memory - reserved) / memory with reserved = 2.8 + tp/10 GiB below 35 GiB,
             9.5 + tp/2 below 90 GiB, 12 + tp/2 below 160 GiB, else 32 GiB; --chunked-prefill-size
             2048 below 35 GiB, 8192 below 160 GiB, else 16384
             (python/sglang/srt/server_args.py, ServerArgs.__post_init__, v0.4.7 era);
             pages of 1 token.
    TRT-LLM  KV cache = free_gpu_memory_fraction (0.9) of the memory free after the weights and
             a profiling forward pass (tensorrt_llm/_torch/pyexecutor/_util.py); trtllm-serve's
             max_num_tokens 8192, max_batch_size 2048; blocks of 32 tokens.

How each turns these flags into KV bytes is `plan.memory`.

Which steps replay CUDA graphs (`Execution`, priced by plan/engine.py; the rest run eagerly):
    vLLM V1  steps of up to max_cudagraph_capture_size scheduled tokens, decode or mixed
             (FULL_AND_PIECEWISE), which defaults to min(2 x max_num_seqs, 512) and never
             exceeds max_num_batched_tokens; larger steps run the torch.compile'd model
             without graphs (fused kernels launched from generated code, not per-op eager
             dispatch, and at hundreds of tokens compute-bound): plan charges no step of
             vLLM's a dispatch unless enforce_eager, which turns graphs and compilation off
             (cudagraph_mode NONE, -O0) (vllm/config/vllm.py, VllmConfig.__post_init__ and
             _set_cudagraph_sizes; vllm/config/compilation.py, max_cudagraph_capture_size;
             v0.15.1).
    SGLang   decode batches of up to cuda_graph_max_bs sequences: 160, or below 25,000 MB of
             device memory 8 at TP < 4 and 80 at TP >= 4; prefill (extend) batches never
             (python/sglang/srt/server_args.py, ServerArgs.__post_init__;
             model_executor/cuda_graph_runner.py, CudaGraphRunner.can_run; model_runner.py,
             forward_decode / forward_extend; v0.4.0.post1, December 2024; v0.4.7 leaves it
             unset above 25,000 MB and captures sizes up to 160 all the same; later releases
             raise it per GPU tier, 256 or 512 on H100/H200-class GPUs). Prefill and decode
             batches run as separate steps unless --enable-mixed-chunk (default off;
             managers/scheduler.py, get_next_batch_to_run), and the overlap scheduler (on
             unless --disable-overlap-schedule) plans each step while the one before runs
             (event_loop_overlap). --disable-cuda-graph: none.
    TRT-LLM  a compiled engine: no step pays a per-layer Python dispatch.

Admission and eviction (`Admission`, run by `plan.batching`):
    vLLM     a request takes KV blocks as its tokens are scheduled; when a running request
             needs one and none is free the newest running request is preempted and recomputed
             (vllm/v1/core/sched/scheduler.py).
    SGLang   the same here, with its running cap: max_running_requests defaults to
             min(max_total_num_tokens // 2, int(max_total_num_tokens / context_len * 512)
             clamped to [2048, 4096]) (python/sglang/srt/model_executor/model_runner.py,
             init_memory_pool / the scheduler's constraints). Its new-token-ratio reservation
             (schedule_policy.py PrefillAdder) is not modelled.
    TRT-LLM  capacity_scheduler_policy GUARANTEED_NO_EVICT, the default: "guarantee that a
             started request is never paused" - a request is admitted only when the blocks of
             its prompt and its maximum output are free, and those stay its own until it
             finishes; no preemption
             (https://nvidia.github.io/TensorRT-LLM/performance/performance-tuning-guide/useful-runtime-flags.html,
             "Capacity Scheduler Policy": GUARANTEED_NO_EVICT is the default of three);
             waiting requests are taken in order until the first that does not fit
             (cpp/tensorrt_llm/batch_manager/capacityScheduler.cpp, GuaranteedNoEvictScheduler).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from enum import StrEnum
from fractions import Fraction

from gpupact.errors import InputError

GIB = 2**30


class Admission(StrEnum):
    """How the engine admits requests against its KV cache and frees it when short."""

    recompute = "recompute"  # vLLM: allocate as scheduled, preempt the newest, recompute it
    no_evict = "no-evict"  # TRT-LLM GUARANTEED_NO_EVICT: reserve prompt + max output
    # SGLang with ignore_eos requests (a benchmark's) and the radix cache off: admit only if
    # the pool holds every running request to its end (`sglang_fits_to_end`); else recompute
    fits_to_end = "fits-to-end"


class Engine(StrEnum):
    vllm = "vllm"
    sglang = "sglang"
    trtllm = "trtllm"


@dataclass(frozen=True)
class EngineFlags:
    engine: Engine
    memory_fraction: Fraction  # vLLM gpu_memory_utilization / SGLang mem_fraction_static /
    #                            TRT-LLM free_gpu_memory_fraction
    max_num_seqs: int  # SGLang max_running_requests, TRT-LLM max_batch_size
    max_num_batched_tokens: int  # SGLang chunked_prefill_size, TRT-LLM max_num_tokens
    block_tokens: int  # tokens per KV block (page)
    admission: Admission = Admission.recompute


@dataclass(frozen=True)
class Execution:
    """How the engine runs its steps (see the module doc)."""

    graph_max_tokens: float  # largest step replayed as a CUDA graph (0: none; inf: compiled)
    graph_prefill: bool  # steps carrying prompt tokens replay graphs too
    separate_prefill: bool  # a step carries prompts or decodes, never both
    overlap_schedule: bool = False  # each step planned while the one before runs


SGLANG_CUDA_GRAPH_MAX_BS = 160
SGLANG_SMALL_GPU_MB = 25_000  # below: 8 (TP < 4) or 80 captured sizes
MIB = 2**20


def execution(
    engine: Engine,
    device_memory: int,
    tp: int,
    *,
    enforce_eager: bool = False,
    cuda_graph_max_bs: int | None = None,
) -> Execution:
    """`engine`'s CUDA-graph coverage with the user's --enforce-eager (vLLM; SGLang
    --disable-cuda-graph) and --cuda-graph-max-bs (SGLang)."""
    if engine is Engine.trtllm and (enforce_eager or cuda_graph_max_bs is not None):
        raise InputError(
            "--enforce-eager / --cuda-graph-max-bs: TensorRT-LLM runs a compiled engine "
            "with no eager mode; use them with --engine vllm or sglang"
        )
    if engine is Engine.vllm and cuda_graph_max_bs is not None:
        raise InputError(
            "--cuda-graph-max-bs: vLLM runs the steps its graphs do not cover compiled, "
            "which plan prices like graphs; it applies to --engine sglang (vLLM: "
            "--enforce-eager)"
        )
    if engine is Engine.trtllm:
        return Execution(math.inf, True, False)
    if engine is Engine.sglang:
        if cuda_graph_max_bs is None:
            small = device_memory / MIB < SGLANG_SMALL_GPU_MB
            cuda_graph_max_bs = (8 if tp < 4 else 80) if small else SGLANG_CUDA_GRAPH_MAX_BS
        return Execution(0 if enforce_eager else cuda_graph_max_bs, False, True, True)
    return Execution(0 if enforce_eager else math.inf, True, False)


def sglang_fits_to_end(states: list[tuple[int, int]], free: int) -> bool:
    """SGLang's admission of an ignore_eos request with the radix cache off
    (python/sglang/srt/managers/schedule_policy.py, PrefillAdder.add_one_req_ignore_eos,
    v0.4.0.post1): `states` are (tokens left to generate, tokens occupied = prompt +
    generated) of the candidate, the running requests and those already added this step,
    in SGLang's order (ascending tokens left); `free` the pool's free tokens less the
    candidate's prompt. Going through them in that order, the requests still running must
    be able to take the next one's tokens left each, with what those before freed."""
    freed, n = 0, len(states)
    for i, (left, occupied) in enumerate(states):
        steps = states[i + 1][0] if i + 1 < n else left
        if free + freed - steps * (n - i) <= 0:
            return False
        freed += occupied
    return True


def sglang_insert(states: list[tuple[int, int]], new: tuple[int, int]) -> None:
    """Insert a later candidate's state where SGLang does (add_req_state, insert_sort):
    before the first with as many or more tokens left, or when there is none, before the
    last (its search loop ends on the last index)."""
    at = next((k for k, (left, _) in enumerate(states) if new[0] <= left), len(states) - 1)
    states.insert(max(at, 0), new)


def _fraction(value: float) -> Fraction:
    """Exact, so that byte counts stay integers (0.9 -> 9/10)."""
    return Fraction(str(value)).limit_denominator(10_000)


VLLM_UTILIZATION = Fraction(9, 10)
VLLM_BLOCK = 16
SGLANG_PAGE = 1
SGLANG_MAX_RUNNING = 4096  # the most SGLang's request pool holds (sglang_max_running)
SGLANG_POOL_MIN, SGLANG_POOL_PER_CONTEXT = 2048, 512
TRTLLM_FREE_FRACTION = Fraction(9, 10)
TRTLLM_MAX_NUM_TOKENS = 8192
TRTLLM_MAX_BATCH = 2048
TRTLLM_BLOCK = 32


def _sglang_reserved_gib(memory_gib: float, tp: int) -> float:
    if memory_gib < 35:
        return 2.8 + tp / 10
    if memory_gib < 90:
        return 9.5 + tp / 2
    if memory_gib < 160:
        return 12 + tp / 2
    return 32.0


def sglang_max_running(kv_tokens: int, context_len: int, requested: int | None = None) -> int:
    """SGLang's max_running_requests from its KV pool of `kv_tokens` (model_runner.py): the
    request pool holds pool/context_len x 512 requests clamped to [2048, 4096], and no more
    than half the pool's tokens run at once."""
    pool = SGLANG_MAX_RUNNING
    if context_len > 0:
        per_context = int(kv_tokens / context_len * SGLANG_POOL_PER_CONTEXT)
        pool = min(max(per_context, SGLANG_POOL_MIN), SGLANG_MAX_RUNNING)
    cap = pool if requested is None else requested
    return max(1, min(cap, kv_tokens // 2))


def default_flags(engine: Engine, device_memory: int, gpu_name: str, tp: int) -> EngineFlags:
    """`engine`'s defaults on a device of `device_memory` bytes (as the runtime reports it)."""
    gib = device_memory / GIB
    if engine is Engine.sglang:
        reserved = _sglang_reserved_gib(gib, tp)
        fraction = _fraction(round((gib - reserved) / gib, 3))
        chunk = 2048 if gib < 35 else 8192 if gib < 160 else 16384
        return EngineFlags(engine, fraction, SGLANG_MAX_RUNNING, chunk, SGLANG_PAGE)
    if engine is Engine.trtllm:
        return EngineFlags(
            engine,
            TRTLLM_FREE_FRACTION,
            TRTLLM_MAX_BATCH,
            TRTLLM_MAX_NUM_TOKENS,
            TRTLLM_BLOCK,
            Admission.no_evict,
        )
    large = gib >= 70 and "a100" not in gpu_name.lower()
    return EngineFlags(
        engine, VLLM_UTILIZATION, 1024 if large else 256, 8192 if large else 2048, VLLM_BLOCK
    )


MIN_BATCHED_TOKENS = 64  # the smallest step budget plan simulates (~9 CPU s a curve)


def engine_flags(
    engine: Engine,
    device_memory: int,
    gpu_name: str,
    tp: int,
    *,
    memory_fraction: float | None = None,
    max_num_seqs: int | None = None,
    max_num_batched_tokens: int | None = None,
) -> EngineFlags:
    """The defaults with whatever the user set."""
    flags = default_flags(engine, device_memory, gpu_name, tp)
    if memory_fraction is not None:
        flags = replace(flags, memory_fraction=_fraction(memory_fraction))
    if max_num_seqs is not None:
        flags = replace(flags, max_num_seqs=max_num_seqs)
    if max_num_batched_tokens is not None:
        flags = replace(flags, max_num_batched_tokens=max_num_batched_tokens)
    if flags.max_num_batched_tokens < MIN_BATCHED_TOKENS:
        # plan runs the engine step by step: its work grows as tokens / budget, and a budget
        # of a few tokens would take minutes per latency curve (no server is run this way)
        raise InputError(
            f"--max-num-batched-tokens: {flags.max_num_batched_tokens} tokens a step is below "
            f"the {MIN_BATCHED_TOKENS} plan models; give at least {MIN_BATCHED_TOKENS}"
        )
    if engine is Engine.vllm and flags.max_num_batched_tokens < flags.max_num_seqs:
        # vllm/config/scheduler.py (SchedulerConfig): "max_num_batched_tokens ... must be
        # greater than or equal to max_num_seqs" - the server does not start
        raise InputError(
            f"--max-num-batched-tokens: {flags.max_num_batched_tokens} is below max_num_seqs "
            f"({flags.max_num_seqs}{'' if max_num_seqs else ', the default on this GPU'}): "
            "vLLM refuses to start; raise it or lower --max-num-seqs"
        )
    return flags
