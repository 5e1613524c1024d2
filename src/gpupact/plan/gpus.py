"""Datasheet figures of the GPUs `gpupact plan` knows, and the contract labels that name them.

Dense tensor-core throughput (without 2:4 sparsity, which datasheets print first), HBM/GDDR
bandwidth, memory and the GPU-to-GPU link. Memory is the datasheet's "N GB" as N x 10^9 bytes
(what the driver reports is within a few per cent; a contract's `gpu.memory` wins when a plan
starts from a contract). Sources, one URL per GPU: docs/plan.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpupact.contract.schema import Quantization

GB = 10**9
TERA = 10**12


@dataclass(frozen=True)
class GpuModel:
    name: str  # catalogue key, e.g. "h100-80gb"
    memory: int  # bytes
    bf16_tflops: float  # dense fp16/bf16 tensor TFLOPS
    fp8_tflops: float | None  # dense fp8 tensor TFLOPS; None where the GPU has no fp8 path
    bandwidth: float  # memory bandwidth, bytes per second
    link: str  # GPU-to-GPU interconnect
    link_bandwidth: float  # bytes per second per GPU (NVLink total, or the PCIe slot)
    aliases: tuple[str, ...] = ()  # other names: contract labels, nvidia.com/gpu.product

    def flops(self, quantization: Quantization) -> float:
        """Peak dense FLOP/s for matmuls in the weights' format. fp8 runs on fp8 tensor cores
        where they exist; int8/int4 weight-only kernels dequantise to fp16/bf16 and int4 gets
        no faster math, so prefill runs at the 16-bit rate (fp32 at half of it, via TF32)."""
        if quantization is Quantization.fp8 and self.fp8_tflops is not None:
            return self.fp8_tflops * TERA
        if quantization is Quantization.fp32:
            return self.bf16_tflops / 2 * TERA
        return self.bf16_tflops * TERA


_NVLINK_A100 = ("nvlink-3", 600 * GB)
_NVLINK_H100 = ("nvlink-4", 900 * GB)
_PCIE4 = ("pcie-gen4", 64 * GB)

CATALOGUE: dict[str, GpuModel] = {
    g.name: g
    for g in (
        GpuModel("a10g", 24 * GB, 70.0, None, 600 * GB, *_PCIE4,
                 aliases=("nvidia-a10g",)),
        GpuModel("l4", 24 * GB, 121.0, 242.5, 300 * GB, *_PCIE4,
                 aliases=("nvidia-l4",)),
        GpuModel("l40s", 48 * GB, 362.05, 733.0, 864 * GB, *_PCIE4,
                 aliases=("nvidia-l40s",)),
        GpuModel("a100-40gb", 40 * GB, 312.0, None, 1555 * GB, *_NVLINK_A100,
                 aliases=("a100-40g", "a100", "nvidia-a100-sxm4-40gb", "nvidia-a100-pcie-40gb")),
        GpuModel("a100-80gb", 80 * GB, 312.0, None, 2039 * GB, *_NVLINK_A100,
                 aliases=("a100-80g", "nvidia-a100-sxm4-80gb", "nvidia-a100-80gb-pcie")),
        GpuModel("h100-80gb", 80 * GB, 989.5, 1979.0, 3350 * GB, *_NVLINK_H100,
                 aliases=("h100-80g", "h100", "nvidia-h100-80gb-hbm3", "nvidia-h100-sxm5-80gb")),
        GpuModel("h200-141gb", 141 * GB, 989.5, 1979.0, 4800 * GB, *_NVLINK_H100,
                 aliases=("h200-141g", "h200", "nvidia-h200")),
        GpuModel("b200", 180 * GB, 2250.0, 4500.0, 8000 * GB, "nvlink-5", 1800 * GB,
                 aliases=("b200-180g", "b200-180gb", "nvidia-b200")),
    )
}  # fmt: skip

_INDEX = {
    re.sub(r"[^a-z0-9]", "", key): gpu
    for gpu in CATALOGUE.values()
    for key in (gpu.name, *gpu.aliases)
}


def find_gpu(label: str) -> GpuModel | None:
    """The GPU a `gpu.model` label or an `nvidia.com/gpu.product` value names, if known.
    Case, '-' and '_' do not matter: `A100-80G`, `a100_80gb` and `a100-80gb` are one GPU."""
    return _INDEX.get(re.sub(r"[^a-z0-9]", "", label.lower()))
