"""Twin benchmark: 24 simulated hours of a 2,000-GPU cluster with 50 services and ~20,000
jobs (target: < 60 s wall on 2 cores). Writes the scenario into a temporary directory, runs
it once, prints wall time, peak RSS and what happened.

    python benchmarks/twin.py [--hours 24] [--services 50] [--jobs 20000] [--write]
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

import yaml
from throughput import machine, replace_section  # shared with the throughput benchmark

from gpupact.twin.scenario import load_scenario
from gpupact.twin.simulation import Simulation

COMMAND = "python benchmarks/twin.py --write"
BEGIN = "<!-- twin:begin -->"
END = "<!-- twin:end -->"
A100 = {"model": "a100-80g", "perNode": 8, "topology": "nvlink-8"}


def build(directory: Path, hours: int, services: int, jobs: int) -> Path:
    tenants = [f"team-{i}" for i in range(10)]
    contract = {
        "apiVersion": "gpupact.io/v1alpha1",
        "kind": "Contract",
        "metadata": {"name": "bench", "owner": "platform@example.com", "costCenter": "CC-0"},
        "pools": [
            {
                "name": "gpu-inference",
                "gpu": A100,
                "nodes": {"min": 60, "max": 100},
                "classes": ["online-infer"],
                "coldStart": {
                    "provision": "4m",
                    "driver": "2m",
                    "devicePlugin": "30s",
                    "imagePull": "2m",
                    "modelLoad": "3m",
                },
            },
            {
                "name": "gpu-batch",
                "gpu": A100,
                "nodes": {"min": 120, "max": 120},
                "classes": ["batch"],
            },
            {
                "name": "gpu-train",
                "gpu": A100,
                "nodes": {"min": 30, "max": 30},
                "classes": ["fine-tune"],
            },
        ],
        "classes": [
            {"name": "online-infer", "pools": ["gpu-inference"]},
            {"name": "batch", "pools": ["gpu-batch"]},
            {"name": "fine-tune", "pools": ["gpu-train"]},
        ],
        "tenants": [
            {
                "name": t,
                "owner": f"{t}@example.com",
                "costCenter": f"CC-{i}",
                "cohort": "all",
                "quotas": [
                    {"pool": "gpu-inference", "gpus": 80},
                    {"pool": "gpu-batch", "gpus": 96},
                    {"pool": "gpu-train", "gpus": 24},
                ],
            }
            for i, t in enumerate(tenants)
        ],
        "services": [
            {
                "name": f"svc-{i}",
                "class": "online-infer",
                "tenant": tenants[i % len(tenants)],
                "model": {"name": "llama-3.1-8b-instruct", "params": "8B"},
                "gpu": {"model": "a100-80g"},
                "concurrency": 64,
                "contextLength": 8192,
                "tokens": {"input": {"p50": 600, "p95": 3000}, "output": {"p50": 200, "p95": 600}},
                "replicas": {"min": 2, "max": 16},
                "coldStart": "5m",
                "priority": "high",
            }
            for i in range(services)
        ],
    }
    # sized for ~80 % of the batch pool and ~70 % of the train pool on average: a busy cluster
    # whose queues drain, not an overload that grows without bound
    shapes = [
        ("batch", 2, 1, "30m"),
        ("batch", 4, 1, "15m"),
        ("batch", 1, 2, "20m"),
        ("fine-tune", 2, 4, "30m"),
    ]
    per_hour = jobs / hours
    weights = [0.6, 0.3, 0.05, 0.05]
    scenario = {
        "apiVersion": "gpupact.io/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": "bench"},
        "start": "2026-11-11T00:00:00Z",
        "duration": f"{hours}h",
        "step": "30s",
        "seed": 1,
        "load": [
            {
                "service": f"svc-{i}",
                "rps": [
                    {"at": "0h", "value": 2},
                    {"at": f"{hours // 2}h", "value": 10 + i % 7},
                    {"at": f"{hours}h", "value": 2},
                ],
            }
            for i in range(services)
        ],
        "jobs": [
            {
                "name": f"{klass}-{i}-{t}",
                "tenant": t,
                "class": klass,
                "perHour": round(per_hour * w / len(tenants), 3),
                "pods": pods,
                "gpusPerPod": gpus,
                "duration": d,
                "durationJitter": 0.3,
            }
            for i, ((klass, pods, gpus, d), w) in enumerate(zip(shapes, weights, strict=True))
            for t in tenants
        ],
        "faults": [
            {
                "at": f"{hours // 3}h",
                "kind": "device-plugin-lost",
                "pool": "gpu-inference",
                "nodes": 4,
                "recoverAfter": "1h",
            }
        ],
    }
    (directory / "contract.yaml").write_text(yaml.safe_dump(contract, sort_keys=False))
    (directory / "scenario.yaml").write_text(yaml.safe_dump(scenario, sort_keys=False))
    return directory


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hours", type=int, default=24)
    parser.add_argument("--services", type=int, default=50)
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args()
    cpu_start = time.process_time()
    with tempfile.TemporaryDirectory() as tmp:
        loaded = load_scenario(build(Path(tmp), args.hours, args.services, args.jobs))
        start = time.perf_counter()
        sim = Simulation(loaded)
        result = sim.run()
        wall = time.perf_counter() - start
    cpu = time.process_time() - cpu_start
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    s = result["summary"]
    pods = sum(c["pods"] for c in s["timeToGpu"].values())
    nodes = sum(p["peakNodes"] for p in s["pools"].values())
    lines = [
        "| simulated | nodes (peak) | services | jobs | pods | events | wall s | CPU s "
        "| peak RSS MiB |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        f"| {args.hours} h | {nodes} (max 250 x 8 GPUs) | {args.services} | {len(sim.jobs):,} "
        f"| {pods:,} | {len(result['events']):,} | {wall:.1f} | {cpu:.1f} | {rss:.0f} |",
        "",
        "Time to GPU P50/P99 s: "
        + ", ".join(f"{k} {v['p50']}/{v['p99']}" for k, v in s["timeToGpu"].items())
        + f"; mean GPU allocation {s['cluster']['meanAllocation']:.1%}.",
    ]
    text = "\n".join(lines)
    print(text)
    if args.write:
        section = (
            f"{BEGIN}\n## Twin (benchmarks/twin.py)\n\nCommand: `{COMMAND}`\n\n"
            f"Machine: {machine()}\n\n{text}\n\nTarget: 24 simulated hours of a 2,000-GPU "
            "cluster with 50 services and 20,000 jobs in < 60 s on 2 cores. The run goes through "
            "the whole engine: compile, Kueue cycles, kube-scheduler placement (cheap refusals), "
            "Volcano sessions for gangs, preemption checks, HPA, autoscaler, serving queue.\n"
            f"{END}\n"
        )
        replace_section(
            Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md", BEGIN, END, section
        )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
