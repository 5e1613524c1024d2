"""plan's weights and KV cache against serving engines' own start-up logs (issue 18's targets:
weights within 10 %, KV-cache tokens within 15 %).

Each point is one start-up log in a public GitHub issue or pull request: the model, the GPU's
memory as the runtime reported it, the engine flags the run used, and what the engine logged
("Loading model weights took X GB" — vLLM divides by 2^30 —, "# GPU blocks: N" x 16 tokens,
"GPU KV cache size: N tokens", "the rest of the memory reserved for KV Cache is X GiB", SGLang's
"KV Cache is allocated. #tokens: N"). vLLM V0 runs without chunked prefill profile a forward
pass of max_model_len tokens, so their max_num_batched_tokens is that length.

Points plan misses are marked xfail with the reason, not dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from gpupact.contract.schema import Quantization as Q
from gpupact.plan.engine_flags import Engine
from gpupact.plan.memory import EngineSettings, ReplicaMemory, replica_memory
from gpupact.plan.models import CATALOGUE as MODELS
from gpupact.plan.models import ModelArch, resolve_model
from gpupact.plan.weights import gpu_weight_bytes

GIB = 2**30


@dataclass(frozen=True)
class Log:
    source: str  # URL of the issue or pull request holding the log
    model: str
    weights: Q
    gpu_gib: float  # total_gpu_memory as logged (torch's total_memory)
    tp: int
    seqs: int  # max_num_seqs of that run
    tokens: int  # max_num_batched_tokens of that run
    utilization: float
    weights_gib: float | None  # logged per GPU
    kv_tokens: int | None  # logged KV cache tokens (blocks x block size), whole replica
    engine: Engine = Engine.vllm

    def memory(self) -> ReplicaMemory:
        settings = EngineSettings(self.engine, self.utilization, self.seqs, self.tokens)
        return replica_memory(
            self.arch, self.weights, Q.bf16, round(self.gpu_gib * GIB), self.tp, settings, "h100"
        )

    @property
    def arch(self) -> ModelArch:
        """The catalogue entry, or what a checkpoint's name resolves to (its kept modules)."""
        return MODELS.get(self.model) or resolve_model(self.model).arch


PR10511 = "https://github.com/vllm-project/vllm/pull/10511"
I10517 = "https://github.com/vllm-project/vllm/issues/10517"
PR12569 = "https://github.com/vllm-project/vllm/pull/12569"
I13882 = "https://github.com/vllm-project/vllm/issues/13882"
I6746 = "https://github.com/vllm-project/vllm/issues/6746"
PR13109 = "https://github.com/vllm-project/vllm/pull/13109"
I21348 = "https://github.com/vllm-project/vllm/issues/21348"

LOGS = {
    # "model weights take 14.96GiB ... available_kv_cache_memory 53.29GiB" (V0, max_model_len
    # 8192); 53.29 GiB / 128 KiB a token
    "llama-3-8b-h100": Log(PR10511, "llama-3-8b", Q.bf16, 79.22, 1, 256, 8192, 0.9,
                           14.96, round(53.29 * GIB) // 131_072),
    # TP 2: "model weights take 7.48GiB; non_torch_memory 3.58GiB; PyTorch activation peak
    # memory 1.26GiB" of 71.29 GiB: 58.97 GiB of KV per GPU, 64 KiB a token per GPU
    "llama-3-8b-h100-tp2": Log(PR10511, "llama-3-8b", Q.bf16, 79.22, 2, 256, 8192, 0.9,
                               7.48, round(58.97 * GIB) // 65_536),
    # RTX 3090, max_model_len 20000: "Loading model weights took 14.9888 GB ... GPU blocks: 1952"
    "llama-3.1-8b-3090-20k": Log(I10517, "llama-3.1-8b", Q.bf16, 23.58, 1, 256, 20_000, 0.9,
                                 14.9888, 1952 * 16),
    # the same at 29000: "# GPU blocks: 1478"
    "llama-3.1-8b-3090-29k": Log(I10517, "llama-3.1-8b", Q.bf16, 23.58, 1, 256, 29_000, 0.9,
                                 14.9888, 1478 * 16),
    # V1, neuralmagic/Meta-Llama-3.1-70B-Instruct-quantized.w8a8, --gpu-memory-utilization
    # 0.98: "Loading model weights took 67.7229 GB ... # GPU blocks: 1381" (the point the
    # sampler's bytes per logit are fitted to: plan.overhead)
    "llama-3.1-70b-w8a8": Log(PR12569, "llama-3.1-70b", Q.int8, 79.22, 1, 1024, 8192, 0.98,
                              67.7229, 1381 * 16),
    # Qwen2.5-7B-Instruct-bnb-4bit on an 8 GiB RTX 4060: "Loading model weights took 5.2032 GB"
    "qwen2.5-7b-bnb-4bit": Log(I13882, "qwen2.5-7b", Q.nf4, 8.00, 1, 256, 4096, 0.7,
                               5.2032, None),
    # SGLang, Qwen3-235B-A22B-FP8 on 4 x H100, --mem-fraction-static 0.93:
    # "KV Cache is allocated. #tokens: 367404"
    "qwen3-235b-fp8-sglang": Log(I21348, "qwen3-235b-a22b", Q.fp8_block, 79.22, 4, 4096, 8192,
                                 0.93, None, 367_404, Engine.sglang),
    # Meta's FP8 checkpoint, which keeps attention and the first and last layers' MLPs in bf16
    # (plan.models, the checkpoint's kept modules): "Loading model weights took 57.7520 GB"
    "llama-3.1-405b-fp8": Log(I6746, "meta-llama/Meta-Llama-3.1-405B-Instruct-FP8",
                              Q.fp8_channel, 79.22, 8, 256, 8192, 0.9, 57.752, None),
}  # fmt: skip

MISSES = {
    # TechxGenus/DeepSeek-Coder-V2-Lite-Instruct-AWQ (V0, Triton MLA): "model weights take
    # 10.45GiB ... # CUDA blocks: 116023"; plan: 8.2 GiB, and V0 pads each MLA cache entry
    "deepseek-v2-lite-awq": (
        Log(PR13109, "deepseek-v2-lite", Q.int4, 79.22, 1, 256, 2048, 0.9, 10.45, 116_023 * 16),
        "2.3 GiB more weights than the AWQ layout explains (unquantised experts?), cause unknown",
    ),
    # vLLM with an LMCache connector: "Available KV cache memory: 8.11 GiB ... GPU KV cache
    # size: 178,880 tokens" - 4.3 GiB a GPU less than plan leaves. Not the connector: its one
    # GPU allocation at start-up is an intermediate buffer of [2, layers, chunk_size 256, KV
    # width] (LMCache lmcache/v1/gpu_connector.py, default chunk_size in lmcache/v1/config.py),
    # 12 MB here; its CPU cache is pinned host memory. The issue logs no weights/activation
    # breakdown, so the 4.3 GiB stays unexplained.
    "qwen3-235b-fp8-vllm-lmcache": (
        Log(I21348, "qwen3-235b-a22b", Q.fp8_block, 79.22, 4, 1024, 8192, 0.9, None, 178_880),
        "4.3 GiB a GPU of non-KV memory the issue's log does not break down (LMCache's own GPU "
        "buffer is 12 MB), cause unknown",
    ),
}


def _error(predicted: float, measured: float) -> float:
    return predicted / measured - 1


def _check(log: Log) -> None:
    m = log.memory()
    if log.weights_gib is not None:
        weights = gpu_weight_bytes(log.arch, log.weights, log.tp).total / GIB
        assert abs(_error(weights, log.weights_gib)) < 0.10, (weights, log.weights_gib)
    if log.kv_tokens is not None:
        assert abs(_error(m.kv_tokens, log.kv_tokens)) < 0.15, (m.kv_tokens, log.kv_tokens)


@pytest.mark.parametrize("name", sorted(LOGS))
def test_weights_and_kv_tokens_meet_the_logs(name: str) -> None:
    _check(LOGS[name])


@pytest.mark.parametrize("name", sorted(MISSES))
def test_known_misses_still_miss(name: str) -> None:
    """Documented disagreements (docs/plan.md, Measured against logs): if one starts to pass,
    the model improved and the point moves to LOGS."""
    log, reason = MISSES[name]
    with pytest.raises(AssertionError):
        _check(log)
    assert reason


def test_enough_independent_logs() -> None:
    sources = {log.source for log in LOGS.values()} | {log.source for log, _ in MISSES.values()}
    assert len(sources) >= 6
    assert sum(log.kv_tokens is not None for log in LOGS.values()) >= 5
    assert sum(log.weights_gib is not None for log in LOGS.values()) >= 5
