"""Inter-pod (anti-)affinity throughput on kube-scheduler's own scheduler_perf shapes.

    python benchmarks/affinity.py             # prints a markdown table
    python benchmarks/affinity.py --write     # also updates docs/benchmarks.md

Shapes (kubernetes test/integration/scheduler_perf/affinity/performance-config.yaml and its
pod templates; nodes from templates/node-default.yaml: 4 cpu, 32Gi, 110 pods):
- SchedulingPodAntiAffinity/5000Nodes_2000Pods: 5,000 nodes; 1,000 pods created in namespace
  sched-0, then 2,000 measured pods in sched-1. Every pod is labelled color=green and has a
  required anti-affinity term (color=green, topologyKey kubernetes.io/hostname, namespaces
  sched-0 and sched-1): one pod per node.
- SchedulingPodAffinity: 5,000 nodes all labelled topology.kubernetes.io/zone=zone1; pods
  labelled color=blue with a required affinity term (color=blue, zone, the same two
  namespaces). Upstream's 5000Nodes_5000Pods creates 5,000 then measures 5,000; the row "20k
  bound" creates 20,000 first (the size at which the engine used to fall to 8-15 pods/s).
- SchedulingPreferredPodAffinity / SchedulingPreferredPodAntiAffinity: the same with one
  preferred term (weight 1, color=red / yellow, hostname, both namespaces) on every pod.
- Not from scheduler_perf: the anti-affinity shape with a hostname topology spread constraint
  (DoNotSchedule, maxSkew 1, same selector) in place of the affinity term.
Every pod requests 100m cpu and 500Mi memory. Created pods go through the same scheduler
(untimed); measured pods are timed one `schedule_one` (filter, score, bind) each. Targets:
>= 2,000 pods/s for the anti-affinity shape, >= 1,000 pods/s with 20k affinity pods bound.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from gpupact.cluster.state import ClusterState
from gpupact.engine.placement import Placement, Scheduler
from gpupact.kube.objects import Pod, parse_pod

sys.path.insert(0, str(Path(__file__).resolve().parent))
from throughput import machine, replace_section  # shared with the throughput benchmark

BEGIN = "<!-- affinity:begin -->"
END = "<!-- affinity:end -->"
COMMAND = "python benchmarks/affinity.py --write"
NAMESPACES = ["sched-0", "sched-1"]


def build_state(n: int, zone: bool) -> ClusterState:
    labels = {"topology.kubernetes.io/zone": ["zone1"] * n} if zone else None
    return ClusterState.from_arrays(
        [f"node-{i:05d}" for i in range(n)],
        cpu_milli=np.full(n, 4000),
        memory_bytes=np.full(n, 32 << 30),
        labels=labels,
    )


def template(kind: str, namespace: str) -> Pod:
    """The scheduler_perf pod template: pod-with-pod-anti-affinity or pod-with-pod-affinity;
    kind "spread": a hostname spread constraint (DoNotSchedule, maxSkew 1) instead."""
    color, key = ("green", "kubernetes.io/hostname")
    if kind == "podAffinity":
        color, key = ("blue", "topology.kubernetes.io/zone")
    elif kind.startswith("preferred"):
        color = "red" if kind == "preferredPodAffinity" else "yellow"
    term = {
        "labelSelector": {"matchLabels": {"color": color}},
        "topologyKey": key,
        "namespaces": NAMESPACES,
    }
    placement: dict = {
        "affinity": {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    }
    if kind.startswith("preferred"):
        block = "podAffinity" if kind == "preferredPodAffinity" else "podAntiAffinity"
        weighted = {"weight": 1, "podAffinityTerm": term}
        placement = {
            "affinity": {block: {"preferredDuringSchedulingIgnoredDuringExecution": [weighted]}}
        }
    if kind == "spread":
        constraint = {
            "maxSkew": 1,
            "topologyKey": key,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"color": color}},
        }
        placement = {"topologySpreadConstraints": [constraint]}
    body = {
        "metadata": {"name": "template", "namespace": namespace, "labels": {"color": color}},
        "spec": {
            **placement,
            "containers": [
                {
                    "name": "pause",
                    "resources": {"requests": {"cpu": "100m", "memory": "500Mi"}},
                }
            ],
        },
    }
    return parse_pod(body)


def run(nodes: int, kind: str, init: int, measure: int) -> tuple[float, float]:
    """(pods/s wall, pods/s CPU) for the measured pods."""
    state = build_state(nodes, zone=kind == "podAffinity")
    scheduler = Scheduler(state, seed=1)
    first, second = template(kind, "sched-0"), template(kind, "sched-1")
    for i in range(init):
        if not isinstance(scheduler.schedule_one(replace(first, name=f"init-{i}")), Placement):
            raise RuntimeError(f"init pod {i} not placed")
    pods = [replace(second, name=f"measure-{i}") for i in range(measure)]
    gc.collect()
    start, start_cpu = time.perf_counter(), time.process_time()
    for pod in pods:
        result = scheduler.schedule_one(pod)
        if not isinstance(result, Placement):
            raise RuntimeError(f"{pod.key} not placed: {result.message}")
    wall, cpu = time.perf_counter() - start, time.process_time() - start_cpu
    return measure / wall, measure / cpu


SHAPES = (
    ("SchedulingPodAntiAffinity/5000Nodes_2000Pods", 5000, "podAntiAffinity", 1000, 2000),
    ("SchedulingPodAffinity/5000Nodes_5000Pods", 5000, "podAffinity", 5000, 5000),
    ("SchedulingPodAffinity, 20k bound", 5000, "podAffinity", 20000, 1000),
    ("SchedulingPreferredPodAffinity/5000Nodes_5000Pods", 5000, "preferredPodAffinity", 5000, 5000),
    (
        "SchedulingPreferredPodAntiAffinity/5000Nodes_5000Pods",
        5000,
        "preferredPodAntiAffinity",
        5000,
        5000,
    ),
    ("hostname spread, DoNotSchedule maxSkew 1 (ours)", 5000, "spread", 1000, 2000),
)


def table(scale: float = 1.0) -> str:
    rows = [
        "| shape | nodes | pods created first | pods measured | pods/s wall | pods/s CPU |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, nodes, kind, init, measure in SHAPES:
        n, i, m = (max(1, int(x * scale)) for x in (nodes, init, measure))
        wall, cpu = run(n, kind, i, m)
        rows.append(f"| {name} | {n:,} | {i:,} | {m:,} | {wall:,.0f} | {cpu:,.0f} |")
    return "\n".join(rows)


def write_section(text: str, path: Path) -> None:
    section = (
        f"{BEGIN}\n## Inter-pod affinity (benchmarks/affinity.py)\n\n"
        f"Command: `{COMMAND}`\n\nMachine: {machine()}\n\n{text}\n\n"
        "Shapes from kube-scheduler's scheduler_perf (affinity/performance-config.yaml): "
        "required anti-affinity on the hostname, required affinity on one zone, preferred "
        "affinity / anti-affinity on the hostname, every pod matching every other. Targets: "
        ">= 2,000 pods/s for the anti-affinity shape at 5,000 nodes, >= 1,000 pods/s with "
        "20k affinity pods bound. InterPodAffinity keeps its "
        "PreFilter and PreScore counts per topology pair, fed by each bind/unbind, with one "
        "count column per topology key (as upstream's per-pair maps).\n"
        f"{END}\n"
    )
    replace_section(path, BEGIN, END, section)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0, help="shrink every size (tests)")
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args(argv)
    text = table(args.scale)
    print(f"Machine: {machine()}\n")
    print(text)
    if args.write:
        write_section(text, Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
