"""`gpupact sweep SCENARIO_DIR`: policies x seeds x scenarios, in a local process pool or on Ray."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from gpupact.cli.main import EXIT_OK, Output, app, stderr, stdout, user_errors
from gpupact.cli.render import emit
from gpupact.errors import InputError


def _seeds(text: str) -> list[int]:
    """`1-5`, `1,3,9` or `7`."""
    out: list[int] = []
    try:
        for part in text.split(","):
            first, dash, last = part.partition("-")
            out.extend(range(int(first), int(last) + 1) if dash else [int(first)])
    except ValueError:
        raise InputError(f"--seeds {text!r}: expected e.g. 1-5 or 1,3,9") from None
    if not out or len(out) > 10_000:
        raise InputError(f"--seeds {text!r}: between 1 and 10,000 seeds")
    return out


@app.command()
@user_errors
def sweep(
    scenario: Path = typer.Argument(..., help="A scenario directory, or a directory of variants."),
    policy: list[str] = typer.Option(
        [],
        "--policy",
        "-p",
        help="NAME or NAME:path=value,... (e.g. binpack:scoring=MostAllocated); repeatable. "
        "Default: the scenario as written.",
    ),
    seeds: str = typer.Option(
        "1-3", "--seeds", help="Seeds to run each policy with: 1-5, 1,3,9 or 7."
    ),
    workers: int = typer.Option(0, "--workers", help="Local processes (0: one per CPU)."),
    ray: str | None = typer.Option(
        None,
        "--ray",
        help="Run on Ray: 'auto' (an existing cluster), 'local' (start one here) or an address.",
    ),
    output: Output = typer.Option(Output.text, "-o", "--output", help="Result format."),
) -> None:
    """Run every policy with every seed on every scenario and compare them."""
    from gpupact.twin.sweep import BASELINE, Policy, aggregate, run_local, run_ray, tasks

    policies = [Policy.parse(p) for p in policy] or [Policy(BASELINE)]
    items = tasks(scenario, policies, _seeds(seeds))
    with Progress(
        TextColumn("sweep"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=stderr, disable=not stderr.is_terminal, transient=True,
    ) as bar:  # fmt: skip
        task = bar.add_task("runs", total=len(items))
        advance = lambda: bar.advance(task)  # noqa: E731
        rows = run_ray(items, ray, advance) if ray else run_local(items, workers or None, advance)
    summary = aggregate(rows)
    if output is Output.text:
        table = Table(title=f"gpupact sweep: {len(items)} runs")
        table.add_column("scenario")
        table.add_column("policy")
        labels = list(summary[0]["metrics"]) if summary else []
        for label in labels:
            table.add_column(label, justify="right")
        for row in summary:
            cells = []
            for label in labels:
                m = row["metrics"][label]
                cells.append("-" if m["mean"] is None else f"{m['mean']:.3g}±{m['stdev']:.2g}")
            table.add_row(row["scenario"], row["policy"], *cells)
        stdout.print(table)
    else:
        emit({"runs": rows, "summary": summary}, output)
    raise typer.Exit(EXIT_OK)
