"""`gpupact fit`: would this pod fit, node by node, and why not.

gpupact fit -f pod.yaml --nodes cluster.json [-l nodepool=gpu-inference] [-o wide|name]
kubectl get nodes,pods -A -o json | gpupact fit -f pod.yaml --nodes -
"""

from __future__ import annotations

from pathlib import Path

import typer

from gpupact.cli.main import (
    EXIT_FINDINGS,
    EXIT_OK,
    Output,
    app,
    stdout,
    user_errors,
)
from gpupact.cli.render import columns, emit, label_selector
from gpupact.cluster.snapshot import load_objects
from gpupact.engine.placement.framework import ClusterView, FitResult, explain_fit
from gpupact.errors import InputError
from gpupact.kube.validation_objects import check_node, check_pod
from gpupact.source import display_name


def _incoming_pod(kind: str, obj: dict) -> None:
    """The pod a user is about to create: refused as the API server would (FieldError)."""
    if kind == "Pod":
        check_pod(obj)


def _cluster_node(kind: str, obj: dict) -> None:
    """Nodes are checked as the API server would; the pods in a snapshot were admitted
    already (perhaps under older rules), so they are only parsed."""
    if kind == "Node":
        check_node(obj)


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


def _render_text(result: FitResult, wide: bool) -> None:
    headers = ["NODE", "FITS", "PLUGIN", "WHY NOT"] + (["CODE", "REASONS"] if wide else [])
    rows = []
    for v in result.verdicts:
        why = v.detail or ", ".join(v.status.reasons)
        row = [v.node, "yes" if v.fits else "no", v.status.plugin, why]
        if wide:
            row += [v.status.code.value, "; ".join(v.status.reasons)]
        rows.append(row)
    columns(headers, rows, title=f"pod {result.pod}")
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
    selector: str | None = typer.Option(
        None, "-l", "--selector", help="Only nodes with these labels (kubectl's -l syntax)."
    ),
    output: Output = typer.Option(
        Output.text, "-o", "--output", help="Output format: text, wide, name, json, yaml."
    ),
) -> None:
    """For each node, whether the pod fits and why not, with the kube-scheduler summary.
    `-o name` lists the nodes it fits on (`node/NAME`)."""
    only_nodes = label_selector(selector)
    incoming = load_objects([pod_file], only=("Pod",), check=_incoming_pod)
    if not incoming.pods:
        raise InputError("no Pod object found", file=display_name(pod_file))
    cluster_objs = load_objects([*nodes, *pods], check=_cluster_node)
    if not cluster_objs.nodes:
        raise InputError("no Node object found", file=", ".join(map(display_name, nodes)))
    chosen = [n for n in cluster_objs.nodes if only_nodes is None or only_nodes.matches(n.labels)]
    if not chosen:
        raise InputError(f"-l {selector}: no node matches")
    view = ClusterView(
        chosen,
        [p for p in cluster_objs.pods if p.assigned],
        objects=cluster_objs.scheduling,
    )
    results = [explain_fit(pod, view) for pod in incoming.pods]
    if output is Output.name:
        names = dict.fromkeys(f"node/{n}" for r in results for n in r.feasible)
        if names:
            stdout.print("\n".join(names), markup=False, highlight=False)
    elif output in (Output.text, Output.wide):
        for result in results:
            _render_text(result, wide=output is Output.wide)
    else:
        data = [_as_data(r) for r in results]
        emit(data[0] if len(data) == 1 else data, output)
    raise typer.Exit(EXIT_OK if all(r.feasible for r in results) else EXIT_FINDINGS)
