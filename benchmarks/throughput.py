"""Placement throughput of the vectorised scheduler, and memory per 10,000 nodes.

    python benchmarks/throughput.py                 # prints a markdown table
    python benchmarks/throughput.py --write         # also updates docs/benchmarks.md

Cluster: N nodes in four pools (label `nodepool`, taint `workload=<pool>:NoSchedule`), each
96 cores, 768 GiB, 8 exclusive GPUs. Pods: one GPU, 4 cores, 32 GiB, nodeSelector
`nodepool: gpu-batch` and a toleration for that pool's taint, scheduled one after another
with `Scheduler(state).schedule_one(pod)` (default profile: filter, LeastAllocated +
BalancedAllocation + TaintToleration scores, seeded tie-break, bind). N pods per run fill half
of the gpu-batch pool, so every pod is placed. Two pod streams: "template" pods share their
spec objects (as a workload generator stamps replicas), "parsed" pods are each parsed from
JSON (parsing is not timed). The median of --repeat runs is reported, each on a fresh state.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import re
import statistics
import sys
import time
import tracemalloc
from dataclasses import replace
from pathlib import Path

import numpy as np

from gpupact.cluster.state import ClusterState
from gpupact.engine.placement import Placement, Scheduler
from gpupact.kube.objects import Pod, parse_pod
from gpupact.kube.taints import Taint

POOLS = ("gpu-inference", "gpu-train", "gpu-batch", "gpu-burst")
BEGIN = "<!-- throughput:begin -->"
END = "<!-- throughput:end -->"
COMMAND = "python benchmarks/throughput.py --write"


def build_state(n: int) -> ClusterState:
    return ClusterState.from_arrays(
        [f"node-{i:05d}" for i in range(n)],
        cpu_milli=np.full(n, 96_000),
        memory_bytes=np.full(n, 768 << 30),
        gpu_count=np.full(n, 8),
        gpu_model=["A100-80GB"] * n,
        gpu_sharing="exclusive",
        labels={"nodepool": [POOLS[i % 4] for i in range(n)]},
        taints=[(Taint("workload", POOLS[i % 4], "NoSchedule"),) for i in range(n)],
    )


def pod_object(name: str) -> dict:
    return {
        "metadata": {"name": name, "namespace": "batch"},
        "spec": {
            "nodeSelector": {"nodepool": "gpu-batch"},
            "tolerations": [
                {
                    "key": "workload",
                    "operator": "Equal",
                    "value": "gpu-batch",
                    "effect": "NoSchedule",
                }
            ],
            "containers": [
                {
                    "name": "main",
                    "resources": {
                        "requests": {"cpu": "4", "memory": "32Gi", "nvidia.com/gpu": "1"}
                    },
                }
            ],
        },
    }


def template_pods(count: int) -> list[Pod]:
    template = parse_pod(pod_object("template"))
    return [replace(template, name=f"pod-{i}") for i in range(count)]


def parsed_pods(count: int) -> list[Pod]:
    return [parse_pod(pod_object(f"pod-{i}")) for i in range(count)]


def run(n: int, pods: list[Pod]) -> tuple[float, float]:
    """Pods placed per second on a fresh n-node state: (wall clock, this process's CPU time;
    the second is steadier on a shared machine)."""
    state = build_state(n)
    scheduler = Scheduler(state, seed=1)
    gc.collect()
    start, start_cpu = time.perf_counter(), time.process_time()
    for pod in pods:
        result = scheduler.schedule_one(pod)
        if not isinstance(result, Placement):
            raise RuntimeError(f"{pod.key} not placed: {result.message}")
    elapsed, elapsed_cpu = time.perf_counter() - start, time.process_time() - start_cpu
    return len(pods) / elapsed, len(pods) / elapsed_cpu


def memory_per_10k_nodes() -> tuple[float, float]:
    """(MiB traced while building a 10,000-node state and keeping it, MiB in numpy columns)."""
    gc.collect()
    tracemalloc.start()
    state = build_state(10_000)
    current, _peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return current / 2**20, state.nbytes() / 2**20


def machine() -> str:
    cpu = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ram = "unknown"
    try:
        match = re.search(r"MemTotal:\s+(\d+) kB", Path("/proc/meminfo").read_text())
        if match:
            ram = f"{int(match.group(1)) / 2**20:.1f} GiB"
    except OSError:
        pass
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    return (
        f"{os.cpu_count()} CPUs (nproc), {cpu}, {ram} RAM; Python {platform.python_version()}, "
        f"numpy {np.__version__}; load average at the end of the run {load} (other jobs share "
        "the machine: the CPU-time column is the steadier figure)"
    )


def table(sizes: list[int], repeat: int) -> str:
    rows = [
        "| nodes | pods placed | template pods: pods/s wall | pods/s CPU "
        "| parsed pods: pods/s wall | pods/s CPU |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for n in sizes:
        count = n
        template = [run(n, template_pods(count)) for _ in range(repeat)]
        parsed_list = parsed_pods(count)
        parsed = [run(n, parsed_list) for _ in range(repeat)]
        cells = [
            statistics.median(r[i] for r in results)
            for results in (template, parsed)
            for i in (0, 1)
        ]
        rows.append(f"| {n:,} | {count:,} | " + " | ".join(f"{c:,.0f}" for c in cells) + " |")
    traced, columns = memory_per_10k_nodes()
    rows.append("")
    rows.append(
        f"Memory per 10,000 nodes: {traced:.1f} MiB traced by tracemalloc for the whole state "
        f"(synthetic Node objects, label index, columns); {columns:.1f} MiB of it in numpy "
        "columns."
    )
    return "\n".join(rows)


def write_section(text: str, path: Path) -> None:
    section = (
        f"{BEGIN}\n## Placement throughput (benchmarks/throughput.py)\n\n"
        f"Command: `{COMMAND}`\n\nMachine: {machine()}\n\n{text}\n\n"
        "Workload: four node pools with a NoSchedule taint each; single-GPU pods with a "
        "nodeSelector and a toleration for one pool, default profile, one `schedule_one` per "
        "pod (filter, score, seeded tie-break, bind). No timing assertions live in the unit "
        f"tests; this table is the record.\n{END}\n"
    )
    replace_section(path, BEGIN, END, section)


def replace_section(path: Path, begin: str, end: str, section: str) -> None:
    """Put `section` (starting with `begin`, ending with `end`) in place of the file's own
    begin..end block, or append it; the rest of the file is kept."""
    old = path.read_text() if path.exists() else "# Benchmarks\n"
    if begin in old and end in old:
        head, rest = old.split(begin, 1)
        _, tail = rest.split(end, 1)
        new = head + section + tail.lstrip("\n")
    else:
        new = old.rstrip("\n") + "\n\n" + section
    path.write_text(new)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", default="1000,5000,10000", help="comma-separated sizes")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.nodes.split(",") if s]
    text = table(sizes, args.repeat)
    print(f"Machine: {machine()}\n")
    print(text)
    if args.write:
        write_section(text, Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
