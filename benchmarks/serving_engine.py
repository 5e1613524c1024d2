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
from gpupact.plan.engine_load import (
    CURVE_SHARES,
    SATURATION_REQUESTS,
    latency_curve,
    sample_requests,
    saturation_rate,
)
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
        "Every decision and clock is the plain step loop's (tests/plan/test_engine_batching.py "
        "against tests/plan/engine_reference.py, exact equality; on these profiles at 50, 90 "
        "and 120 % load, 20,000 seeded requests each, and on small-cache, few-seqs and small-"
        "budget cases the engine takes the same steps and preemptions as that of commit "
        "6c30172, times equal to 2e-14). What made it fast: the decoding sequences kept in one "
        "frame (cached tokens = base + decode steps so far), the next completion from a heap, "
        "new KV blocks from a histogram of positions within a block, so a step costs a few "
        "scalar operations and one step-time call instead of array gathers over the batch. "
        "Before (commit 6c30172, same command and machine): 0.69 / 0.92 / 0.68 / 0.98 M "
        "requests per CPU-minute (the loads are shares of the saturation rate, since counted on"
        " admissions, 8 % lower: a row's absolute rate differs a little).", "",
        f"One latency curve (saturation on {SATURATION_REQUESTS:,} queued requests + "
        f"{len(CURVE_SHARES)} load points, those above 70 % pooled over three runs, what plan "
        f"and the twin build once per service profile): {curve_s:.2f} CPU s.", "",
        f"`gpupact simulate examples/promo-peak`, both variants (target < 10 s): "
        f"{promo_wall:.1f} s wall, {promo_cpu:.1f} CPU s.", END,
    ])  # fmt: skip
    print(section)
    if args.write:
        replace_section(ROOT / "docs" / "benchmarks.md", BEGIN, END, section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
