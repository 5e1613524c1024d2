"""Kueue's own scheduler performance configs replayed through gpupact's admission engine.

Runs `gpupact.twin.kueue_perf.replay` for kueue test/performance/scheduler/configs/baseline
and large-scale, each in a fresh process (for its wall time and peak memory), in three modes:
`ideal` (no pacing: the admission policy alone), `upstream` (the replay's defaults: upstream's
client rate limits, the scheduler's pending-condition writes, no API latency) and `latency50`
(the same with 50 ms per API hop). Prints ours next to upstream's measured means (the
rangespec.yaml comments) and optionally rewrites the section in docs/benchmarks.md.

    python benchmarks/kueue_perf.py [--runs baseline:ideal,baseline:upstream,...]
        [--seed 0] [--profile] [--write]

Target: every replay, large-scale included, under 60 s wall.
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import io
import json
import pstats
import resource
import subprocess
import sys
import time
from pathlib import Path

from admission import machine, update_doc

from gpupact.twin.kueue_perf import (
    CONFIGS,
    ENVTEST_BURST,
    ENVTEST_QPS,
    IDEAL,
    MINIMALKUEUE_BURST,
    MINIMALKUEUE_QPS,
    ReplayOptions,
    replay,
)

DOC = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
SECTION = "## Kueue scheduler-perf replay"
MARKERS = ("<!-- kueue-perf:begin -->", "<!-- kueue-perf:end -->")
MODES = {
    "ideal": IDEAL,
    "upstream": ReplayOptions(),
    "latency50": ReplayOptions(api_latency_ms=50),
}
CLASSES = ("large", "medium", "small")
DEFAULT_RUNS = ",".join(f"{c}:{m}" for c in ("baseline", "large-scale") for m in MODES)
TARGET_WALL_S = 60

# Upstream's measured means (configs/*/rangespec.yaml comments): usage %, then the average
# time to admission per class (ms), and the runner's wall time (ms).
UPSTREAM = {
    "baseline": {
        "usage": 55.9,
        "large": 16_501,
        "medium": 76_768,
        "small": 215_468,
        "wall_ms": 351_116,
    },
    "large-scale": {
        "usage": 38.64,
        "large": 105_604,
        "medium": 256_413,
        "small": 700_379,
        "wall_ms": 1_179_411,
    },
}


def run_one(config: str, mode: str, seed: int, profile: bool) -> dict:
    options = dataclasses.replace(MODES[mode], seed=seed)
    wall, cpu = time.perf_counter(), time.process_time()
    if profile:
        profiler = cProfile.Profile()
        result = profiler.runcall(replay, CONFIGS[config], options)
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(25)
        print(out.getvalue(), file=sys.stderr)
    else:
        result = replay(CONFIGS[config], options)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    classes = result.workload_classes
    return {
        "config": config,
        "mode": mode,
        "usage": result.queue_classes["cq"].usage_percent,
        **{c: classes[c].average_time_to_admission_ms for c in CLASSES},
        "evictions": sum(classes[c].total_evictions for c in CLASSES),
        "workloads": sum(classes[c].count for c in CLASSES),
        "admissions": result.admissions,
        "cycles": result.cycles,
        "pending_writes": result.pending_writes,
        "bind_ms": result.average_bind_ms,
        "cycle_ms": result.average_cycle_ms,
        "max_cycle_ms": result.max_cycle_ms,
        "simulated_ms": result.simulated_ms,
        "wall_s": wall,
        "cpu_s": cpu,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def run_child(config: str, mode: str, seed: int) -> dict:
    """One replay in a fresh interpreter: its peak RSS is its own."""
    out = subprocess.run(
        [sys.executable, __file__, "--child", config, mode, "--seed", str(seed)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout)


def _seconds(ms: float) -> str:
    return f"{ms / 1000:,.1f} s"


def table(config: str, runs: list[dict]) -> str:
    up = UPSTREAM[config]
    rows = [
        ("CQ class `cq` usage", f"{up['usage']:.1f} %", lambda r: f"{r['usage']:.1f} %"),
        *(
            (f"avg time to admission, {c}", _seconds(up[c]), lambda r, c=c: _seconds(r[c]))
            for c in CLASSES
        ),
        ("evictions (preemptions)", "", lambda r: f"{r['evictions']:,}"),
        ("admissions (workloads)", "", lambda r: f"{r['admissions']:,} ({r['workloads']:,})"),
        ("scheduling cycles", "", lambda r: f"{r['cycles']:,}"),
        ("pending-condition writes", "", lambda r: f"{r['pending_writes']:,}"),
        ("avg bind latency (admission -> run)", "", lambda r: _seconds(r["bind_ms"])),
        (
            "cycle duration avg / max",
            "",
            lambda r: f"{r['cycle_ms']:,} ms / {_seconds(r['max_cycle_ms'])}",
        ),
        ("simulated run (last event)", "", lambda r: _seconds(r["simulated_ms"])),
        (
            "wall / process CPU",
            f"{_seconds(up['wall_ms'])} (minimalkueue)",
            lambda r: f"{r['wall_s']:.1f} s / {r['cpu_s']:.1f} s",
        ),
        ("peak memory (RSS)", "", lambda r: f"{r['peak_rss_mib']:,.0f} MiB"),
    ]
    header = (
        "| " + config + " | upstream (mean) | " + " | ".join(f"ours, {r['mode']}" for r in runs)
    )
    lines = [header + " |", "|---|---|" + "---|" * len(runs)]
    for name, upstream, cell in rows:
        lines.append(f"| {name} | {upstream} | " + " | ".join(cell(r) for r in runs) + " |")
    return "\n".join(lines)


def section(tables: list[str], args: argparse.Namespace) -> str:
    m = machine()
    command = f"python benchmarks/kueue_perf.py --runs {args.runs} --seed {args.seed} --write"
    return "\n".join(
        [
            SECTION,
            "",
            "Kueue's scheduler performance configs (kueue test/performance/scheduler/configs:"
            " baseline 5 cohorts x 6 ClusterQueues, 15,000 workloads; large-scale 10 x 100,"
            " 50,000) replayed in simulated time through the admission engine"
            " (`gpupact.twin.kueue_perf`; model and upstream facts: docs/kueue-perf.md).",
            "",
            f"- Command: `{command}` (repository root, project venv); each replay in its own"
            " process.",
            f"- Machine: {m['nproc']} CPUs ({m['cpu']}), {m['ram']} RAM, Python {m['python']};"
            f" single-threaded. Load average at the end {m['load']} (the machine is shared:"
            " process CPU time is the steadier figure).",
            "- Upstream: the means in the rangespec.yaml comments (baseline: 5 runs;"
            " large-scale: 19 periodic CI runs), minimalkueue on envtest. Its wall time is"
            " minimalkueue's process (minimalkueue.stats.yaml), ours the replay alone.",
            "- **ideal**: every API write lands at once, cycles cost nothing (the admission"
            " policy alone). **upstream**: the replay's defaults, upstream's pacing: Kueue's"
            f" Workload writes through minimalkueue's client ({MINIMALKUEUE_QPS:g} QPS, burst"
            f" {MINIMALKUEUE_BURST}), the runner's generator and kubelet clients through"
            f" envtest's ({ENVTEST_QPS:g} QPS, burst {ENVTEST_BURST}), the scheduler waiting"
            " in its cycle for its eviction and pending-condition writes, a workload running"
            " from the moment its admission reaches the runner and holding its quota until"
            " Kueue sees its Finished write; no API latency. **latency50**: the same with"
            " 50 ms per API hop (no upstream figure: a sensitivity run). All: 1 s"
            " inadmissible requeue batching, SlowDown backoff 1-10 ms, timestamps at second"
            " resolution as the recorder reads them.",
            "",
            *[t + "\n" for t in tables],
            f"Target: every replay under {TARGET_WALL_S} s wall on this machine, large-scale"
            " included. See docs/kueue-perf.md for the model, the upstream facts behind each"
            " delay and why ours and upstream's numbers still differ.",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", default=DEFAULT_RUNS, help="CONFIG:MODE,...")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--profile", action="store_true", help="cProfile (in this process)")
    parser.add_argument("--write", action="store_true", help=f"rewrite its section in {DOC}")
    parser.add_argument("--child", nargs=2, metavar=("CONFIG", "MODE"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(run_one(*args.child, args.seed, profile=False)))
        return 0
    plan: dict[str, list[str]] = {}
    for item in args.runs.split(","):
        config, _, mode = item.partition(":")
        if config not in CONFIGS or mode not in MODES:
            parser.error(
                f"--runs: {item!r} is not CONFIG:MODE (configs: {', '.join(CONFIGS)}; modes:"
                f" {', '.join(MODES)})"
            )
        plan.setdefault(config, []).append(mode)
    tables = []
    for config, modes in plan.items():
        runs = []
        for mode in modes:
            if args.profile:
                runs.append(run_one(config, mode, args.seed, profile=True))
            else:
                runs.append(run_child(config, mode, args.seed))
        tables.append(table(config, runs))
        print(tables[-1] + "\n", flush=True)
    if args.write:
        update_doc(DOC, section(tables, args), markers=MARKERS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
