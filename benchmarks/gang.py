"""Gang sessions: one Volcano / KAI session placing a 64-pod gang on 1k, 5k and 10k nodes.

Seeded cluster: 8-GPU nodes in four zones, a third of them already half used by running
pods; the gang is 64 pods of 1 GPU, 8 cpu, 64 GiB, optionally with required one-per-node
pod anti-affinity (kubernetes.io/hostname) between its members. Timed separately: opening the
session (tasks, node accounting and columns, the filter mirror) and running `allocate`
(Volcano: gang, proportion, predicates, nodeorder; KAI's allocate); parsing the objects is
not timed. Target
(docs/benchmarks.md): a 64-pod gang at 10k nodes in under 0.5 s.

    python benchmarks/gang.py [--nodes 1000,5000,10000] [--repeat 3] [--write]
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from throughput import replace_section  # shared with the throughput benchmark

from gpupact.engine.gang import GROUP_NAME_ANNOTATION, parse_podgroup
from gpupact.engine.kai import KaiSession, parse_kai_podgroup, parse_kai_queue
from gpupact.engine.kai.model import POD_GROUP_ANNOTATION
from gpupact.engine.placement.session_filters import forget_node_states
from gpupact.engine.volcano import PluginOption, Session
from gpupact.engine.volcano.model import parse_queue
from gpupact.kube.objects import Node, Pod, parse_node, parse_pod

GANG = 64
SEED = 7
REFERENCE_NODES = 1000
BEGIN, END = "<!-- gang:begin -->", "<!-- gang:end -->"
COMMAND = "python benchmarks/gang.py --write"
TIERS = [
    [PluginOption("gang", frozenset({"jobOrder", "jobReady", "jobPipelined", "jobStarving"}))],
    [
        PluginOption("proportion", frozenset({"queueOrder", "allocatable"})),
        PluginOption("predicates", frozenset({"predicate"})),
        PluginOption("nodeorder", frozenset({"nodeOrder"})),
    ],
]
ANTI_AFFINITY = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "labelSelector": {"matchLabels": {"gang": "train"}},
                "topologyKey": "kubernetes.io/hostname",
            }
        ]
    }
}


def cluster(n: int, rng: random.Random) -> tuple[list[Node], list[Pod]]:
    nodes, running = [], []
    for i in range(n):
        name = f"node-{i:05d}"
        labels = {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": f"z{i % 4}"}
        nodes.append(
            parse_node(
                {
                    "metadata": {"name": name, "labels": labels},
                    "status": {
                        "allocatable": {
                            "cpu": "96",
                            "memory": "1024Gi",
                            "pods": "110",
                            "nvidia.com/gpu": "8",
                        }
                    },
                }
            )
        )
        if rng.random() < 1 / 3:
            running.append(
                pod_obj(f"busy-{i:05d}", {"cpu": "40", "memory": "400Gi", "nvidia.com/gpu": "4"})
                | {"status": {"phase": "Running"}}
            )
            running[-1]["spec"]["nodeName"] = name
    return nodes, [parse_pod(p) for p in running]


def pod_obj(name: str, requests: dict[str, str], **meta: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "default", "uid": name, **meta},
        "spec": {"containers": [{"name": "main", "resources": {"requests": requests}}]},
        "status": {"phase": "Pending"},
    }


def gang_pods(anti: bool, annotation: str) -> list[Pod]:
    out = []
    for i in range(GANG):
        obj = pod_obj(
            f"train-{i:02d}",
            {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "1"},
            labels={"gang": "train"},
            annotations={annotation: "train"},
        )
        if anti:
            obj["spec"]["affinity"] = ANTI_AFFINITY
        out.append(parse_pod(obj))
    return out


def run_volcano(
    nodes: list[Node], running: list[Pod], anti: bool, vectorised: bool = True
) -> tuple[float, float, int]:
    pods = running + gang_pods(anti, GROUP_NAME_ANNOTATION)
    group = parse_podgroup(
        {
            "metadata": {"name": "train", "namespace": "default"},
            "spec": {"minMember": GANG, "queue": "q"},
            "status": {"phase": "Inqueue"},
        }
    )
    queue = parse_queue({"metadata": {"name": "q"}, "spec": {"weight": 1}})
    start = time.perf_counter()
    session = Session(
        nodes=nodes,
        pods=pods,
        podgroups=[group],
        queues=[queue],
        tiers=TIERS,
        vectorised=vectorised,
    )
    opened = time.perf_counter()
    result = session.run(["allocate"])
    return opened - start, time.perf_counter() - opened, len(result.binds)


def run_kai(nodes: list[Node], running: list[Pod], anti: bool) -> tuple[float, float, int]:
    pods = running + gang_pods(anti, POD_GROUP_ANNOTATION)
    group = parse_kai_podgroup(
        {
            "metadata": {"name": "train", "namespace": "default"},
            "spec": {"minMember": GANG, "queue": "q"},
        },
        {},
    )
    queue = parse_kai_queue(
        {"metadata": {"name": "q"}, "spec": {"resources": {"gpu": {"quota": -1, "limit": -1}}}}
    )
    start = time.perf_counter()
    session = KaiSession(nodes=nodes, pods=pods, podgroups=[group], queues=[queue])
    opened = time.perf_counter()
    result = session.run(["allocate"])
    return opened - start, time.perf_counter() - opened, len(result.binds)


def measure(sizes: list[int], repeat: int) -> list[dict[str, Any]]:
    rows = []
    for n in sizes:
        nodes, running = cluster(n, random.Random(SEED))
        for engine, fn in (("volcano", run_volcano), ("kai", run_kai)):
            for anti in (False, True):
                opens, runs, binds = [], [], 0
                forget_node_states()  # the first open is cold, the others reuse node columns
                for _ in range(repeat):
                    opened, ran, binds = fn(nodes, running, anti)
                    opens.append(opened)
                    runs.append(ran)
                row = {
                    "engine": engine,
                    "nodes": n,
                    "anti": anti,
                    "open": opens[0],
                    "open_warm": statistics.median(opens[1:] or opens),
                    "allocate": statistics.median(runs),
                    "allocate_min": min(runs),
                    "binds": binds,
                }
                rows.append(row)
                print(
                    f"{engine:8s} {n:6d} nodes anti-affinity={anti!s:5s} open {row['open']:.3f} s"
                    f" (warm {row['open_warm']:.3f} s)"
                    f" allocate median {row['allocate']:.3f} s min {row['allocate_min']:.3f} s"
                    f" binds {binds}",
                    flush=True,
                )
    if REFERENCE_NODES in sizes:
        # the one-node-at-a-time explaining path, once, for scale
        nodes, running = cluster(REFERENCE_NODES, random.Random(SEED))
        forget_node_states()
        opened, ran, binds = run_volcano(nodes, running, False, vectorised=False)
        rows.append(
            {
                "engine": "volcano, one node at a time (reference path)",
                "nodes": REFERENCE_NODES,
                "anti": False,
                "open": opened,
                "open_warm": opened,
                "allocate": ran,
                "allocate_min": ran,
                "binds": binds,
            }
        )
        print(f"reference path {REFERENCE_NODES} nodes allocate {ran:.3f} s", flush=True)
    return rows


def render(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| engine | nodes | one-per-node anti-affinity | allocate median s | allocate min s "
        "| session open, cold s | session open, warm median s | pods bound |",
        "|---|---:|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['engine']} | {r['nodes']:,} | {'yes' if r['anti'] else 'no'} | "
            f"{r['allocate']:.3f} | {r['allocate_min']:.3f} | {r['open']:.3f} | "
            f"{r['open_warm']:.3f} | {r['binds']} |"
        )
    return "\n".join(lines)


def write_section(text: str, path: Path, repeat: int) -> None:
    machine = (
        f"Machine: {os.cpu_count()} CPUs, {platform.processor() or platform.machine()}; "
        f"Python {platform.python_version()}; load average at the end "
        f"{', '.join(f'{x:.2f}' for x in os.getloadavg())} (shared machine: numbers are noisy)"
    )
    section = (
        f"{BEGIN}\n## Gang sessions (benchmarks/gang.py)\n\nCommand: `{COMMAND}` "
        f"({repeat} runs each; target: a 64-pod gang at 10k nodes in under 0.5 s)\n\n"
        f"{machine}\n\n{text}\n\nTimed separately: the `allocate` action (the target) and the "
        "session open (tasks, node accounting, node columns, the filter mirror of the pods on "
        "nodes as a ClusterState); cold: the node columns built from the Node objects, warm: "
        "copied from the previous session on the same Node objects (as the twin opens one "
        "session per scheduling step); object parsing is not timed. Volcano "
        "checks every node at once (predicates incl. inter-pod anti-affinity and topology "
        "spread against the session's own tentative placements, future-idle resources, "
        "nodeorder scores); the one-node-at-a-time path gives the same decisions "
        "(tests/engine/gang/test_gang_vectorised.py). Before this change a Volcano session "
        "checked each task x node in Python (~14 us each: about 9 s for this gang at 10k "
        f"nodes).\n{END}\n"
    )
    replace_section(path, BEGIN, END, section)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="1000,5000,10000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args(argv)
    sizes = [int(x) for x in args.nodes.split(",") if x]
    rows = measure(sizes, args.repeat)
    if args.write:
        doc = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"
        write_section(render(rows), doc, args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
