"""The openb replay of the FGD paper (USENIX ATC'23), run on gpupact's engine.

    python benchmarks/openb_replay.py --policy all --seeds 42-51            # prints the tables
    python benchmarks/openb_replay.py --policy all --seeds 42-51 --write    # + docs/benchmarks.md
    python benchmarks/openb_replay.py --policy FGD,FGD-Reach --seeds 42-44 --trace cpu250

Data: the openb trace of the paper's artefact, read from $GPUPACT_OPENB_DIR or else
../shared/data/openb next to the project root (openb_node_list_gpu_node.csv,
openb_pod_list_<trace>.csv, and results/summary_by_arrival.csv for the paper's numbers).

Protocol (the artefact's `-tune 1.3 --shuffle-pod`): the 1,213 GPU nodes; per seed the trace's
pods are shuffled, random copies are appended until GPU requests reach 130% of capacity,
node order is shuffled (the artefact's tie-break), and every pod gets one attempt through
`Scheduler(state, strategy).schedule_one` (filters, strategy scores, device choice, bind);
nothing is deleted. The curve is unallocated GPU % against arrived workload % (GPU requests of
all attempted pods over capacity) on the artefact's 0..130 grid; mean and population sd over
seeds, as in the artefact's summary.
"""

from __future__ import annotations

import argparse
import csv
import os
import platform
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gpupact.engine.placement.strategies import (
    NEEDS_WORKLOAD,
    PAPER_POLICIES,
    POLICIES,
    TargetWorkload,
    make_strategy,
    policy_name,
)
from gpupact.errors import InputError
from gpupact.twin.traces import openb

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs" / "benchmarks.md"
BEGIN = "<!-- openb-replay:begin -->"
END = "<!-- openb-replay:end -->"
SUMMARY = Path("results") / "summary_by_arrival.csv"
TOLERANCE = 0.5  # points of unallocated GPU % allowed from the paper's figure
HEADLINE = 100  # arrived workload % of the headline comparison
CURVE_POINTS = (50, 70, 80, 90, 95, 100, 105, 110, 120, 130)
# the artefact's policy directory names
ARTEFACT_NAMES = {name: f"{i + 1:02d}-{name}" for i, name in enumerate(PAPER_POLICIES)}
EXTRA_POLICIES = ("FGD", "FGD-Reach")  # run on --extra-traces


# --- worker side (forked processes inherit the loaded trace) --------------------------------

_TRACE: dict[str, object] = {}
_EXPLAIN = {"refusals": False}  # --explain-refusals: build every FitError (the old cost)
_STRATEGIES: dict[str, object] = {}  # FGD memoises node states; reused across seeds


def _strategy_for(name: str):
    def build(streams: openb.SeedStreams):
        if name == "Random":
            return make_strategy(name, rng=streams.policy)
        key = f"{name}@{_TRACE['trace']}"
        if key not in _STRATEGIES:
            workload = _TRACE["workload"] if name in NEEDS_WORKLOAD else None
            _STRATEGIES[key] = make_strategy(name, workload=workload)  # type: ignore[arg-type]
        return _STRATEGIES[key]

    return build


def _run(job: tuple[str, int, int]) -> tuple[openb.ReplayResult, float, float]:
    """One seed: the result, and the wall and CPU seconds it took in this process."""
    name, seed, tune = job
    started, cpu_started = time.perf_counter(), time.process_time()
    result = openb.replay(
        _TRACE["nodes"],  # type: ignore[arg-type]
        _TRACE["pods"],  # type: ignore[arg-type]
        _strategy_for(name),
        seed=seed,
        tune_pct=tune,
        policy=name,
        explain_refusals=_EXPLAIN["refusals"],
    )
    return result, time.perf_counter() - started, time.process_time() - cpu_started


# --- parent side ------------------------------------------------------------------------------


@dataclass
class PolicyRun:
    name: str
    results: list[openb.ReplayResult]
    seconds: list[float]  # wall, per seed, in its worker
    cpu_seconds: list[float]
    wall_seconds: float

    def curves(self) -> list[dict[int, float]]:
        return [openb.unallocated_curve(r) for r in self.results]

    def at(self, point: int) -> tuple[float, float]:
        values = [c[point] for c in self.curves() if point in c]
        if not values:  # no attempt reached this arrived %
            return float("nan"), float("nan")
        return float(np.mean(values)), float(np.std(values))


def parse_seeds(text: str) -> list[int]:
    seeds: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if "-" in part:
            low, high = (int(x) for x in part.split("-", 1))
            seeds.extend(range(low, high + 1))
        elif part:
            seeds.append(int(part))
    if not seeds:
        raise ValueError(f"no seeds in {text!r}")
    return seeds


def parse_policies(text: str) -> list[str]:
    if text.lower() == "all":
        return list(POLICIES)
    if text.lower() == "paper":
        return list(PAPER_POLICIES)
    return [policy_name(p.strip()) for p in text.split(",") if p.strip()]


def paper_numbers(data: Path, trace: str) -> dict[str, dict[int, tuple[float, float]]]:
    """policy -> arrived % -> (mean, sd) unallocated GPU % from the artefact's summary."""
    path = data / SUMMARY
    if not path.is_file():
        return {}
    workload = f"openb_pod_list_{trace}"
    by_artefact = {v: k for k, v in ARTEFACT_NAMES.items()}
    out: dict[str, dict[int, tuple[float, float]]] = {}
    with path.open(newline="") as handle:
        for row in csv.DictReader(handle):
            name = by_artefact.get(row["policy"])
            if row["workload"] == workload and name:
                point = int(row["arrived_pct"])
                mean, sd = float(row["unalloc_gpu_pct_mean"]), float(row["unalloc_gpu_pct_sd"])
                out.setdefault(name, {})[point] = (mean, sd)
    return out


def machine() -> str:
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    model, ram = platform.processor() or "unknown CPU", "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                ram = f"{int(line.split()[1]) / 2**20:.1f} GiB RAM"
                break
    except OSError:
        pass
    try:  # other processes on the machine slow the workers down: say how busy it was
        load = "load average " + Path("/proc/loadavg").read_text().split()[0] + " at the end"
    except OSError:
        load = "load unknown"
    return (
        f"{cpus} CPUs (nproc), {model}, {ram}; Python {platform.python_version()}, "
        f"numpy {np.__version__}; {load}"
    )


def report(
    runs: list[PolicyRun],
    paper: dict[str, dict[int, tuple[float, float]]],
    args: argparse.Namespace,
    command: str,
    seeds: list[int],
    cluster: tuple[int, int],
) -> str:
    lines = [
        "## openb replay",
        "",
        f"Command: `{command}`",
        "",
        f"Machine: {machine()}; {args.jobs} worker process(es).",
        "",
        f"Data: the paper artefact's openb CSVs from ${openb.DATA_DIR_ENV}, else "
        "`../shared/data/openb` beside the project root (the script stops with the expected "
        "path when they are missing; gpupact itself never needs them). Protocol: per seed the "
        "trace is shuffled, random copies are appended until GPU requests reach the tune "
        "target, node order is shuffled (the artefact's tie-break), one "
        "`Scheduler(state, strategy).schedule_one` attempt per pod, no deletions.",
        "",
        f"Trace `openb_pod_list_{args.trace}` on {cluster[0]:,} GPU nodes ({cluster[1]:,} GPUs), "
        "GPU requests "
        f"tuned to {args.tune}% of capacity, seeds {seeds[0]}..{seeds[-1]} ({len(seeds)}). "
        "Unallocated GPU % at 100% arrived workload, mean +/- population sd over seeds, beside "
        "the paper artefact's `results/summary_by_arrival.csv`:",
        "",
        "| policy | ours | paper | ours - paper | within 0.5 | failed pods (mean) "
        "| wall s per seed | CPU s per seed | wall s, all seeds |",
        "|---|---:|---:|---:|:---:|---:|---:|---:|---:|",
    ]
    for run in runs:
        mean, sd = run.at(HEADLINE)
        ref = paper.get(run.name, {}).get(HEADLINE)
        failed = np.mean([r.failed for r in run.results])
        per_seed, cpu_per_seed = np.mean(run.seconds), np.mean(run.cpu_seconds)
        if ref is None:
            paper_cell, delta, ok = "-", "-", "-"
        else:
            paper_cell = f"{ref[0]:.2f} +/- {ref[1]:.2f}"
            delta = f"{mean - ref[0]:+.2f}"
            ok = "yes" if abs(mean - ref[0]) <= TOLERANCE else "NO"
        lines.append(
            f"| {run.name} | {mean:.2f} +/- {sd:.2f} | {paper_cell} | {delta} | {ok} "
            f"| {failed:,.0f} | {per_seed:.1f} | {cpu_per_seed:.1f} | {run.wall_seconds:.1f} |"
        )
    lines += [
        "",
        "Unallocated GPU % (mean over seeds) against arrived workload %; paper values in "
        "parentheses:",
        "",
        "| policy | " + " | ".join(f"{p}%" for p in CURVE_POINTS) + " |",
        "|---|" + "---:|" * len(CURVE_POINTS),
    ]
    for run in runs:
        cells = []
        for point in CURVE_POINTS:
            mean, _ = run.at(point)
            ref = paper.get(run.name, {}).get(point)
            cells.append(f"{mean:.2f}" + (f" ({ref[0]:.2f})" if ref else ""))
        lines.append(f"| {run.name} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Notes. Arrived % per attempt is rounded to an integer (ties to even) and a grid point "
        "averages the attempts on it, as the artefact's analysis does. The artefact used Go's "
        "random source; ours draws from numpy (`SeedSequence(seed)` split into pod order, node "
        "order and the Random policy), so seeds match in number, not in the sequences drawn. "
        "FGD-Reach (ours): FGD whose fragment also counts, per typical GPU pod, the idle GPU "
        "beyond what the node's free CPU can feed at that pod's CPU:GPU ratio "
        "(`strategies/fgd_reach.py`); pods that take whole GPUs are placed by plain FGD, "
        "because with the term they open idle nodes and 8-GPU pods start failing from 80% "
        "arrived. Times: per seed, one replay in one worker (wall and CPU); "
        "`wall s, all seeds` is the whole policy on the worker processes. Other jobs may share "
        "the machine (see the load average above); CPU seconds are the steadier figure.",
    ]
    return "\n".join(lines) + "\n"


def extra_report(extra: list[tuple[str, list[PolicyRun]]], data: Path) -> str:
    lines = [
        "",
        "Other openb traces, same protocol and seeds: unallocated GPU % (mean +/- sd) at 100% "
        "and 130% arrived, FGD beside the paper's FGD:",
        "",
        "| trace | FGD 100% | paper FGD 100% | FGD-Reach 100% | FGD 130% | paper FGD 130% "
        "| FGD-Reach 130% |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for trace, (fgd, reach) in extra:
        paper = paper_numbers(data, trace).get("FGD", {})
        cells = [trace]
        for point in (HEADLINE, 130):
            ref = paper.get(point)
            cells += [
                "{:.2f} +/- {:.2f}".format(*fgd.at(point)),
                f"{ref[0]:.2f}" if ref else "-",
                "{:.2f} +/- {:.2f}".format(*reach.at(point)),
            ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def load_trace(data: Path, trace: str) -> None:
    """Read a trace into the module state the forked workers inherit."""
    _TRACE["trace"] = trace
    _TRACE["nodes"] = openb.read_nodes(data / openb.NODE_FILE)
    _TRACE["pods"] = pods = openb.read_pods(openb.pod_file(data, trace))
    _TRACE["workload"] = TargetWorkload.from_requests(p.request() for p in pods)


def run_policy(name: str, seeds: list[int], tune: int, jobs: int) -> PolicyRun:
    """All seeds of one policy; contiguous seeds share a worker (and its FGD memo)."""
    work = [(name, seed, tune) for seed in seeds]
    started = time.perf_counter()
    if jobs > 1:
        with ProcessPoolExecutor(jobs) as pool:
            done = list(pool.map(_run, work, chunksize=-(-len(work) // jobs)))
    else:
        done = [_run(job) for job in work]
    wall = time.perf_counter() - started
    return PolicyRun(name, [d[0] for d in done], [d[1] for d in done], [d[2] for d in done], wall)


def write_docs(section: str) -> None:
    block = f"{BEGIN}\n{section}{END}\n"
    text = DOCS.read_text() if DOCS.exists() else "# Benchmarks\n"
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        tail = rest.split(END, 1)[1].lstrip("\n")
        text = head + block + ("\n" + tail if tail else "")
    else:
        text = text.rstrip("\n") + "\n\n" + block
    DOCS.parent.mkdir(parents=True, exist_ok=True)
    DOCS.write_text(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--policy", default="all", help="all | paper | names, comma-separated")
    parser.add_argument("--seeds", default="42-51", help="e.g. 42-51 or 42,43")
    parser.add_argument("--trace", default="default", help="openb_pod_list_<trace>.csv")
    parser.add_argument("--tune", type=int, default=openb.DEFAULT_TUNE_PCT, help="percent")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument(
        "--extra-traces",
        default="",
        help="also run FGD and FGD-Reach on these traces, e.g. cpu250,gpushare100",
    )
    parser.add_argument(
        "--explain-refusals",
        action="store_true",
        help="build the FitError of every refusal (the cost the cheap refusal mode saves)",
    )
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args(argv)
    _EXPLAIN["refusals"] = args.explain_refusals
    command = "python benchmarks/openb_replay.py " + " ".join(
        sys.argv[1:] if argv is None else argv
    )

    try:
        seeds, policies = parse_seeds(args.seeds), parse_policies(args.policy)
    except ValueError as err:
        print(f"openb_replay: {err}", file=sys.stderr)
        return 2
    data = args.data_dir or openb.data_dir(ROOT)
    nodes_file, pods_file = data / openb.NODE_FILE, openb.pod_file(data, args.trace)
    for needed in (nodes_file, pods_file):
        if not needed.is_file():
            print(
                f"openb_replay: the openb trace is missing: {needed} not found.\n"
                f"Put the artefact's CSV files in {data} or point ${openb.DATA_DIR_ENV} at them.",
                file=sys.stderr,
            )
            return 2
    try:
        load_trace(data, args.trace)
    except InputError as err:
        print(f"openb_replay: {err}", file=sys.stderr)
        return 2
    nodes: list[openb.OpenbNode] = _TRACE["nodes"]  # type: ignore[assignment]
    cluster = (len(nodes), openb.capacity_gpu_milli(nodes) // 1000)
    runs = []
    for name in policies:
        run = run_policy(name, seeds, args.tune, args.jobs)
        runs.append(run)
        mean, sd = run.at(HEADLINE)
        print(f"{name}: {mean:.2f} +/- {sd:.2f} at {HEADLINE}% ({run.wall_seconds:.1f}s)")
    extra: list[tuple[str, list[PolicyRun]]] = []
    for trace in [t for t in args.extra_traces.split(",") if t]:
        if not openb.pod_file(data, trace).is_file():
            print(f"openb_replay: skipping trace {trace}: {openb.pod_file(data, trace)} not found")
            continue
        try:
            load_trace(data, trace)
        except InputError as err:
            print(f"openb_replay: skipping trace {trace}: {err}", file=sys.stderr)
            continue
        pair = [run_policy(name, seeds, args.tune, args.jobs) for name in EXTRA_POLICIES]
        extra.append((trace, pair))
        print(trace, ", ".join(f"{r.name} {r.at(HEADLINE)[0]:.2f}" for r in pair))

    section = report(runs, paper_numbers(data, args.trace), args, command, seeds, cluster)
    if extra:
        section += extra_report(extra, data)
    print()
    print(section)
    if args.write:
        write_docs(section)
        print(f"updated {DOCS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
