"""Serving-engine benchmark: simulated requests per CPU-minute of one replica's engine
(target >= 1M), one latency curve (what plan and the twin build per service profile), and
`gpupact simulate examples/promo-peak` with both variants (target < 10 s).

    python benchmarks/serving_engine.py [--requests 200000] [--write]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from throughput import machine, replace_section  # shared with the throughput benchmark

from gpupact.contract.schema import Quantization
from gpupact.plan.batching import simulate
from gpupact.plan.engine import EngineSpec
from gpupact.plan.engine_load import latency_curve, sample_requests, saturation_rate
from gpupact.plan.gpus import CATALOGUE as GPUS
from gpupact.plan.models import CATALOGUE as MODELS
from gpupact.plan.workload import TokenStats
from gpupact.twin.run import load_all
from gpupact.twin.run import simulate as simulate_scenario

ROOT = Path(__file__).resolve().parents[1]
COMMAND = "python benchmarks/serving_engine.py --write"
BEGIN = "<!-- serving-engine:begin -->"
END = "<!-- serving-engine:end -->"
INPUT, OUTPUT, CONTEXT = TokenStats(600, 2000), TokenStats(200, 500), 16384


def spec(name: str, gpu: str, tp: int) -> EngineSpec:
    m = MODELS[name]
    return EngineSpec(
        model=m, weights=Quantization.bf16, gpu=GPUS[gpu], tp=tp,
        kv_per_token=2 * m.layers * m.kv_heads * m.head_dim * 2, kv_tokens=200_000,
    )  # fmt: skip


def engine_rate(s: EngineSpec, requests: int, share: float) -> tuple[float, float, int]:
    """(requests per CPU-minute, CPU s, steps) at `share` of the saturation rate."""
    top = saturation_rate(s, INPUT, OUTPUT, context=CONTEXT)
    reqs = sample_requests(INPUT, OUTPUT, share * top, requests, 1, CONTEXT)
    start = time.process_time()
    run = simulate(s, reqs)
    cpu = time.process_time() - start
    return requests / cpu * 60, cpu, run.steps


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=200_000)
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    rows = []
    for name, gpu, tp in (("llama-3.1-8b", "h100-80gb", 1), ("llama-3.1-70b", "h100-80gb", 4)):
        s = spec(name, gpu, tp)
        for share in (0.5, 0.9):
            per_min, cpu, steps = engine_rate(s, args.requests, share)
            rows.append(f"| {name} TP{tp} on {gpu} | {share:.0%} | {args.requests:,} | "
                        f"{steps:,} | {cpu:.2f} | {per_min / 1e6:.2f} M |")  # fmt: skip
    latency_curve.cache_clear()
    start = time.process_time()
    latency_curve(spec("llama-3.1-8b", "h100-80gb", 1), INPUT, OUTPUT, CONTEXT)
    curve_s = time.process_time() - start
    wall = time.perf_counter()
    cpu0 = time.process_time()
    for item in load_all(ROOT / "examples" / "promo-peak"):
        simulate_scenario(item)
    promo_wall, promo_cpu = time.perf_counter() - wall, time.process_time() - cpu0
    section = "\n".join([
        BEGIN, "## Serving engine (benchmarks/serving_engine.py)", "",
        f"Command: `{COMMAND}`", "", f"Machine: {machine()}", "",
        "One replica's continuous-batching engine (plan/batching.py), prompts p50/p95 600/2,000 "
        "tokens, completions 200/500, Poisson arrivals at a share of the replica's saturation "
        "rate. Target: >= 1M simulated requests per CPU-minute.", "",
        "| replica | load | requests | engine steps | CPU s | requests / CPU-minute |",
        "|---|---:|---:|---:|---:|---:|", *rows, "",
        f"One latency curve (saturation + 10 load points of 1,500 requests, what plan and the twin "
        f"build once per service profile): {curve_s:.2f} CPU s.", "",
        f"`gpupact simulate examples/promo-peak`, both variants (target < 10 s): "
        f"{promo_wall:.1f} s wall, {promo_cpu:.1f} CPU s.", END,
    ])  # fmt: skip
    print(section)
    if args.write:
        replace_section(ROOT / "docs" / "benchmarks.md", BEGIN, END, section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
