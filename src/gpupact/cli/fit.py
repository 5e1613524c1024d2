"""`gpupact fit`: would this pod fit, node by node, and why not."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from gpupact.cli.main import (
    EXIT_FINDINGS,
    EXIT_OK,
    Output,
    app,
    stdout,
    user_errors,
)
from gpupact.cli.render import emit
from gpupact.cluster.snapshot import load_objects
from gpupact.engine.placement.framework import ClusterView, FitResult, explain_fit
from gpupact.errors import InputError


def _as_data(result: FitResult) -> dict:
    return {
        "pod": result.pod,
        "fits": bool(result.feasible),
        "feasibleNodes": list(result.feasible),
        "message": result.message,
        "nodes": [
            {
                "node": v.node,
                "fits": v.fits,
                "plugin": v.status.plugin,
                "code": v.status.code.value,
                "reasons": list(v.status.reasons),
                "detail": v.detail,
            }
            for v in result.verdicts
        ],
    }


def _render_text(result: FitResult) -> None:
    table = Table(title=f"pod {result.pod}", title_justify="left", show_edge=False)
    for col in ("NODE", "FITS", "PLUGIN", "WHY NOT"):
        table.add_column(col, overflow="fold")
    for v in result.verdicts:
        why = v.detail or ", ".join(v.status.reasons)
        table.add_row(v.node, "[green]yes[/]" if v.fits else "[red]no[/]", v.status.plugin, why)
    stdout.print(table)
    if result.message:
        stdout.print(result.message, markup=False, highlight=False)
    else:
        stdout.print(f"{len(result.feasible)}/{len(result.verdicts)} nodes are available.")


@app.command("fit")
@user_errors
def fit(
    pod_file: Path = typer.Option(..., "-f", "--filename", help="Pod manifest (YAML or JSON)."),
    nodes: list[Path] = typer.Option(
        ..., "--nodes", help="Nodes (and pods already bound), as `kubectl get -o json` prints."
    ),
    pods: list[Path] = typer.Option(
        [], "--pods", help="More bound pods that use node resources (repeatable)."
    ),
    output: Output = typer.Option(Output.text, "-o", "--output", help="Output format."),
) -> None:
    """For each node, whether the pod fits and why not, with the kube-scheduler summary."""
    incoming = load_objects([pod_file], only=("Pod",))
    if not incoming.pods:
        raise InputError("no Pod object found", file=str(pod_file))
    cluster_objs = load_objects([*nodes, *pods])
    if not cluster_objs.nodes:
        raise InputError("no Node object found", file=", ".join(map(str, nodes)))
    view = ClusterView(
        cluster_objs.nodes,
        [p for p in cluster_objs.pods if p.assigned],
        objects=cluster_objs.scheduling,
    )
    results = [explain_fit(pod, view) for pod in incoming.pods]
    if output is Output.text:
        for result in results:
            _render_text(result)
    else:
        data = [_as_data(r) for r in results]
        emit(data[0] if len(data) == 1 else data, output)
    raise typer.Exit(EXIT_OK if all(r.feasible for r in results) else EXIT_FINDINGS)
