"""`gpupact simulate SCENARIO_DIR`: run the twin, print the summary, write report.html."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import typer
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from gpupact.cli.main import EXIT_FINDINGS, EXIT_OK, Output, app, stderr, stdout, user_errors
from gpupact.cli.render import emit
from gpupact.errors import InputError


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "∞"
    if seconds < 120:
        return f"{seconds:.0f}s"
    if seconds < 7200:
        return f"{seconds / 60:.1f}m"
    return f"{seconds / 3600:.1f}h"


def _clock(seconds: float) -> str:
    """Run time as h:mm since the scenario's start."""
    minutes = round(seconds / 60)
    return f"{minutes // 60}h{minutes % 60:02d}"


def _ms(seconds: float | None) -> str:
    return "∞" if seconds is None else f"{seconds * 1000:.0f}ms"


def _table(results: list[dict[str, Any]]) -> Table:
    table = Table(title="gpupact twin", show_lines=False)
    table.add_column("")
    for r in results:
        table.add_column(r["scenario"], justify="right")
    rows: dict[str, list[str]] = {}

    def put(label: str, index: int, value: str) -> None:
        rows.setdefault(label, [""] * len(results))[index] = value

    for i, r in enumerate(results):
        s = r["summary"]
        for klass, stats in s["timeToGpu"].items():
            promise = s["promises"].get(klass)
            until = promise.get("until", "bound") if promise else None
            ready = s.get("timeToServing", {}).get(klass, {})
            for label, point, values in (("GPU", "bound", stats), ("serving", "ready", ready)):
                kept = promise is not None and until == point
                mark = "" if not kept else (" ok" if promise["kept"] else " BROKEN")  # type: ignore[index]
                put(
                    f"time to {label} P50/P99 · {klass}",
                    i,
                    f"{_duration(values.get('p50'))} / {_duration(values.get('p99'))}{mark}",
                )
        for name, svc in s["services"].items():
            put(f"TTFT P99 worst · {name}", i, _duration(svc["ttftP99Worst"]))
            put(f"TTFT over SLO · {name}", i, f"{svc['sloBreachedShare'] * 100:.1f}% of time")
            peak = svc.get("peakWindow")
            if peak is not None:
                put(f"peak window · {name}", i, f"{_clock(peak['start'])}-{_clock(peak['end'])}")
                share = peak["sloBreachedShare"]
                put(
                    f"TTFT over SLO in peak · {name}",
                    i,
                    f"{share * 100:.1f}% ({_duration(peak['sloBreachedSeconds'])})"
                    f"{'' if share <= 0.01 else ' BROKEN'}",
                )
                worst = peak["ttftP99Worst"]
                put(
                    f"TTFT P99 worst in peak · {name}",
                    i,
                    _ms(worst) if worst is not None and worst < 1 else _duration(worst),
                )
                if "tpotP99Worst" in peak:
                    put(f"TPOT P99 worst in peak · {name}", i, _ms(peak["tpotP99Worst"]))
            put(
                f"replicas peak ready/desired · {name}",
                i,
                f"{svc['peakReady']}/{svc['peakDesired']}",
            )
        put(
            "GPU allocation / busy (mean)",
            i,
            f"{s['cluster']['meanAllocation'] * 100:.0f}% / {s['cluster']['meanBusy'] * 100:.0f}%",
        )
        put("preemptions", i, ", ".join(f"{k} {v}" for k, v in s["preemptions"].items()) or "0")
        put("GPU-h held by incomplete gangs", i, f"{s['incompleteGangGpuHours']:.1f}")
        for klass, cost in s.get("batchCost", {}).items():
            put(
                f"cost to {klass}: GPU-h run / lost",
                i,
                f"{cost['gpuHours']:,.1f} / {cost['gpuHoursLost']:,.1f}",
            )
            put(f"cost to {klass}: evictions", i, str(cost["evictions"]))
        put("workloads blocked by quota", i, str(s["quotaBlockedWorkloads"]))
        for tenant, hours in s["gpuHoursByTenant"].items():
            put(f"GPU-hours · {tenant}", i, f"{hours:,.1f}")
    for label, values in rows.items():
        table.add_row(label, *values)
    return table


SUMMARY_KEYS = ("scenario", "contract", "seed", "start", "summary", "startingState")


def _print_start(state: dict[str, Any], duration: float) -> None:
    """What the run started from, and when each kind of carried GPU pod gives its GPUs back."""
    nodes, pods = state["nodes"], state["pods"]
    pools = ", ".join(f"{k} {v}" for k, v in nodes["byPool"].items()) or "none"
    when = state["observedAt"] or "unknown time"
    lines = [
        f"started from {state['source']} as of {when}: {nodes['total']} nodes "
        f"(in pools: {pools}; outside: {nodes['outsidePools']}), {pods['carried']} running pods "
        f"({pods['withGpus']} with GPUs), {pods['pendingLeftOut']} pending pods left out",
    ]
    for service, count in pods["adoptedReplicas"].items():
        lines.append(f"  {service}: {count} running replica(s) adopted")
    for kind, row in state["estimates"].items():
        lines.append(
            f"  {kind}: {row['pods']} pod(s), {row['gpus']:g} GPUs; {row['endsInRun']} end "
            f"within the {_duration(duration)} run, {row['heldThroughRun']} hold through it - "
            f"{row['rule']}"
        )
    kueue = state["kueue"]
    if kueue["replacedByContract"] or kueue["admittedWorkloads"] or kueue["keptFromCluster"]:
        lines.append(
            f"  Kueue: {len(kueue['replacedByContract'])} object(s) replaced by the contract's, "
            f"{len(kueue['keptFromCluster'])} kept, {kueue['admittedWorkloads']} admitted "
            f"workload(s) carried, {len(kueue['admittedOutsideQueues'])} outside the queues "
            f"(run on uncharged), {kueue['pendingWorkloadsLeftOut']} pending left out"
        )
    for line in lines:
        stdout.print(line, markup=False, highlight=False)


def _write(path: Path, text: str) -> None:
    """Whole or not at all: a temporary file beside the target, then an atomic rename."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as err:
        tmp.unlink(missing_ok=True)
        raise InputError(f"cannot write the report: {err.strerror}", file=str(path)) from None


@app.command()
@user_errors
def simulate(
    scenario: Path = typer.Argument(
        ..., help="A scenario directory (scenario.yaml + contract), or a directory of variants."
    ),
    output: Output = typer.Option(Output.text, "-o", "--output", help="Summary format."),
    report: Path = typer.Option(
        Path("report.html"), "--report", help="Where to write the HTML report ('-' for none)."
    ),
    seed: int | None = typer.Option(None, "--seed", help="Override the scenarios' seed."),
    full: bool = typer.Option(
        False,
        "--full",
        help="With -o json|yaml: the time series and every event, not only the summary.",
    ),
    strict: bool = typer.Option(
        False, "--strict", help="Exit 1 when a class's time-to-GPU promise is broken."
    ),
    snapshot: Path | None = typer.Option(
        None,
        "--snapshot",
        help="Start from this cluster (a directory of `kubectl get ... -A -o json` files) with "
        "the contract applied to it.",
    ),
    context: str | None = typer.Option(
        None, "--context", help="Start from this live cluster (kubeconfig context; read-only)."
    ),
    kubeconfig: Path | None = typer.Option(None, "--kubeconfig", help="Kubeconfig file."),
    now: str | None = typer.Option(
        None,
        "--now",
        help="With --snapshot/--context: the moment the cluster shows, from which pod ages "
        "count (default: the snapshot's own time, the wall clock for a live cluster).",
    ),
) -> None:
    """Run the contract's cluster forward in simulated time and report what breaks at the peak."""
    from gpupact.cli.check import parse_now
    from gpupact.cli.cluster_start import read_start
    from gpupact.twin.report.html import render
    from gpupact.twin.run import load_all
    from gpupact.twin.run import simulate as run_one

    moment = parse_now(now).timestamp() if now is not None else None
    loaded = load_all(scenario)
    start = read_start(snapshot, context, kubeconfig, moment)
    if start is None and now is not None:
        raise InputError("--now is the time of a cluster: give it with --snapshot or --context")
    results = []
    show = stderr.is_terminal
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.percentage:>3.0f}%"),
        TimeElapsedColumn(),
        console=stderr,
        disable=not show,
        transient=True,
    ) as bar:
        for item in loaded:
            task = bar.add_task(
                f"simulating {item.name}", total=item.scenario.duration.total_seconds()
            )
            results.append(
                run_one(
                    item,
                    seed=seed,
                    progress=lambda t, task=task: bar.update(task, completed=t),
                    start=start,
                )
            )
    if str(report) != "-":
        _write(report, render(results, f"gpupact twin: {scenario.resolve().name}"))
    if output is Output.text:
        stdout.print(_table(results))
        if start is not None:
            _print_start(results[0]["startingState"], results[0]["summary"]["durationSeconds"])
        if str(report) != "-":
            stdout.print(f"report: {report}", markup=False, highlight=False)
    else:
        data = results if full else [{k: r[k] for k in SUMMARY_KEYS if k in r} for r in results]
        emit(data, output)
    broken = any(not p["kept"] for r in results for p in r["summary"]["promises"].values())
    raise typer.Exit(EXIT_FINDINGS if strict and broken else EXIT_OK)
