"""Datasheet figures of the GPUs `gpupact plan` knows, and the labels that name them.

Dense tensor-core throughput (without 2:4 sparsity, which datasheets print first), memory
bandwidth and the GPU-to-GPU link come from each datasheet. Memory is what the CUDA runtime
reports (torch.cuda.get_device_properties().total_memory, the "total_gpu_memory" vLLM logs):
the datasheet's "80 GB" H100 is 79.22 GiB once the driver has taken its share. Where a log of
that figure was found it is used (`memory_source` says where); otherwise it is estimated from
the physical memory (HBM and GeForce GDDR: N GiB; data-centre GDDR boards ship with ECC on,
which keeps 1/16) less DRIVER_RESERVE, the reservation seen on the measured boards. Sources,
one URL per GPU: docs/plan.md, "GPU catalogue".
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from gpupact.contract.schema import Quantization

GB = 10**9
GIB = 2**30
TERA = 10**12
DRIVER_RESERVE = 0.45  # GiB: physical minus reported on H100 (80 - 79.22), A100-80GB, 3090


def _gib(value: float) -> int:
    return round(value * GIB)


def _estimated(physical_gib: float, ecc: bool = False) -> int:
    return _gib(physical_gib * (15 / 16 if ecc else 1) - DRIVER_RESERVE)


FP8_FORMATS = (Quantization.fp8, Quantization.fp8_channel, Quantization.fp8_block)


@dataclass(frozen=True)
class GpuModel:
    name: str  # catalogue key, e.g. "h100-80gb"
    memory: int  # bytes, as the runtime reports them
    bf16_tflops: float  # dense fp16/bf16 tensor TFLOPS
    fp8_tflops: float | None  # dense fp8 tensor TFLOPS; None where the GPU has no fp8 path
    bandwidth: float  # memory bandwidth, bytes per second
    link: str  # GPU-to-GPU interconnect
    link_bandwidth: float  # bytes per second per GPU (NVLink total, or the PCIe slot)
    aliases: tuple[str, ...] = ()  # other names: contract labels, nvidia.com/gpu.product
    memory_source: str = ""  # the log that reports `memory` ("" : estimated, see module doc)
    int8_tops: float | None = None  # dense int8 tensor TOPS (w8a8 kernels)

    def runs_on_fp8_cores(self, quantization: Quantization) -> bool:
        """fp8 weights on a GPU with fp8 tensor cores (elsewhere they are dequantised to 16
        bits and run at that rate)."""
        return quantization in FP8_FORMATS and self.fp8_tflops is not None

    def flops(self, quantization: Quantization) -> float:
        """Peak dense FLOP/s for matmuls in the weights' format. fp8 runs on fp8 tensor cores
        and w8a8 int8 on int8 ones where they exist; weight-only int4/nf4 kernels dequantise to
        16 bits, so prefill runs at the 16-bit rate (fp32 at half of it, via TF32)."""
        if self.runs_on_fp8_cores(quantization):
            return self.fp8_tflops * TERA
        if quantization is Quantization.int8 and self.int8_tops is not None:
            return self.int8_tops * TERA
        if quantization is Quantization.fp32:
            return self.bf16_tflops / 2 * TERA
        return self.bf16_tflops * TERA


_NVLINK_A100 = ("nvlink-3", 600 * GB)
_NVLINK_H100 = ("nvlink-4", 900 * GB)
_PCIE4 = ("pcie-gen4", 64 * GB)
_PCIE5 = ("pcie-gen5", 128 * GB)

# measured totals (GiB) and where they were logged
_H100 = "https://github.com/vllm-project/vllm/pull/10511"  # total_gpu_memory 79.22GiB
_A100_40 = "https://github.com/vllm-project/vllm/issues/16570"  # total_gpu_memory (39.38GiB)
_A100_80 = "https://github.com/levihsu/OOTDiffusion/issues/235"  # 79.25 GiB total capacity
_L40S = "https://github.com/Wan-Video/Wan2.1/issues/205"  # L40S: 44.53 GiB total capacity
_RTX3090 = "https://github.com/vllm-project/vllm/issues/10517"  # total_gpu_memory=23.58GiB
_RTX4090 = "https://github.com/zai-org/CogVideo/issues/36"  # 4090: 23.68 GiB total capacity

CATALOGUE: dict[str, GpuModel] = {
    g.name: g
    for g in (
        GpuModel("a10g", _estimated(24, ecc=True), 70.0, None, 600 * GB, *_PCIE4,
                 aliases=("nvidia-a10g",), int8_tops=140.0),
        GpuModel("l4", _estimated(24, ecc=True), 121.0, 242.5, 300 * GB, *_PCIE4,
                 aliases=("nvidia-l4",), int8_tops=242.5),
        GpuModel("l40s", _gib(44.53), 362.05, 733.0, 864 * GB, *_PCIE4,
                 aliases=("nvidia-l40s",), memory_source=_L40S, int8_tops=733.0),
        GpuModel("a40", _estimated(48, ecc=True), 149.7, None, 696 * GB, *_PCIE4,
                 aliases=("nvidia-a40",), int8_tops=299.3),
        GpuModel("rtx-a6000", _estimated(48), 154.8, None, 768 * GB, *_PCIE4,
                 aliases=("a6000", "nvidia-rtx-a6000"), int8_tops=309.7),
        GpuModel("rtx-4090", _gib(23.68), 165.2, 330.3, 1008 * GB, *_PCIE4,
                 aliases=("4090", "nvidia-geforce-rtx-4090"), memory_source=_RTX4090,
                 int8_tops=660.6),
        GpuModel("rtx-3090", _gib(23.58), 71.0, None, 936 * GB, *_PCIE4,
                 aliases=("3090", "nvidia-geforce-rtx-3090"), memory_source=_RTX3090,
                 int8_tops=284.0),
        GpuModel("a100-40gb", _gib(39.38), 312.0, None, 1555 * GB, *_NVLINK_A100,
                 aliases=("a100-40g", "a100", "a100-sxm4-40gb", "nvidia-a100-sxm4-40gb"),
                 memory_source=_A100_40, int8_tops=624.0),
        GpuModel("a100-40gb-pcie", _gib(39.38), 312.0, None, 1555 * GB, *_PCIE4,
                 aliases=("a100-pcie-40gb", "nvidia-a100-pcie-40gb"), memory_source=_A100_40,
                 int8_tops=624.0),
        GpuModel("a100-80gb", _gib(79.25), 312.0, None, 2039 * GB, *_NVLINK_A100,
                 aliases=("a100-80g", "a100-sxm4-80gb", "nvidia-a100-sxm4-80gb"),
                 memory_source=_A100_80, int8_tops=624.0),
        GpuModel("a100-80gb-pcie", _gib(79.25), 312.0, None, 1935 * GB, *_PCIE4,
                 aliases=("a100-pcie-80gb", "nvidia-a100-80gb-pcie"), memory_source=_A100_80,
                 int8_tops=624.0),
        GpuModel("h100-80gb", _gib(79.22), 989.5, 1979.0, 3350 * GB, *_NVLINK_H100,
                 aliases=("h100-80g", "h100", "h100-sxm", "nvidia-h100-80gb-hbm3",
                          "nvidia-h100-sxm5-80gb"), memory_source=_H100, int8_tops=1979.0),
        GpuModel("h100-pcie", _estimated(80), 756.5, 1513.0, 2000 * GB, *_PCIE5,
                 aliases=("h100-pcie-80gb", "nvidia-h100-pcie"), int8_tops=1513.0),
        GpuModel("h100-nvl", _estimated(94), 835.5, 1671.0, 3900 * GB, "nvlink-4", 600 * GB,
                 aliases=("h100-nvl-94gb", "nvidia-h100-nvl"), int8_tops=1671.0),
        GpuModel("h800", _gib(79.22), 989.5, 1979.0, 3350 * GB, "nvlink-4", 400 * GB,
                 aliases=("h800-80gb", "nvidia-h800"), memory_source=_H100, int8_tops=1979.0),
        GpuModel("h20", _estimated(96), 148.0, 296.0, 4000 * GB, *_NVLINK_H100,
                 aliases=("h20-96gb", "nvidia-h20"), int8_tops=296.0),
        GpuModel("h200-141gb", _estimated(141), 989.5, 1979.0, 4800 * GB, *_NVLINK_H100,
                 aliases=("h200-141g", "h200", "nvidia-h200"), int8_tops=1979.0),
        GpuModel("gh200", _estimated(96), 989.5, 1979.0, 4000 * GB, "nvlink-c2c", 900 * GB,
                 aliases=("gh200-96gb", "nvidia-gh200-480gb"), int8_tops=1979.0),
        GpuModel("b200", _estimated(180), 2250.0, 4500.0, 8000 * GB, "nvlink-5", 1800 * GB,
                 aliases=("b200-180g", "b200-180gb", "nvidia-b200"), int8_tops=4500.0),
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


def close_gpus(label: str) -> list[str]:
    """Catalogue names close to an unknown label (for the error message)."""
    return difflib.get_close_matches(label.lower(), list(CATALOGUE), n=4, cutoff=0.4)
