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
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum
from fractions import Fraction

from gpupact.errors import InputError

GIB = 2**30


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


def _fraction(value: float) -> Fraction:
    """Exact, so that byte counts stay integers (0.9 -> 9/10)."""
    return Fraction(str(value)).limit_denominator(10_000)


VLLM_UTILIZATION = Fraction(9, 10)
VLLM_BLOCK = 16
SGLANG_PAGE = 1
SGLANG_MAX_RUNNING = 4096  # assumed: SGLang sizes max_running_requests from its KV pool
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
            engine, TRTLLM_FREE_FRACTION, TRTLLM_MAX_BATCH, TRTLLM_MAX_NUM_TOKENS, TRTLLM_BLOCK
        )
    large = gib >= 70 and "a100" not in gpu_name.lower()
    return EngineFlags(
        engine, VLLM_UTILIZATION, 1024 if large else 256, 8192 if large else 2048, VLLM_BLOCK
    )


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
    if engine is Engine.vllm and flags.max_num_batched_tokens < flags.max_num_seqs:
        # vllm/config/scheduler.py (SchedulerConfig): "max_num_batched_tokens ... must be
        # greater than or equal to max_num_seqs" - the server does not start
        raise InputError(
            f"--max-num-batched-tokens: {flags.max_num_batched_tokens} is below max_num_seqs "
            f"({flags.max_num_seqs}{'' if max_num_seqs else ', the default on this GPU'}): "
            "vLLM refuses to start; raise it or lower --max-num-seqs"
        )
    return flags
