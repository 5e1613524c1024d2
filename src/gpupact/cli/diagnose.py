"""`gpupact diagnose`: why is it Pending — the chapter's runbook, executable.

    gpupact diagnose -A --snapshot snap/ [-l app=llm] [-o name]
    gpupact diagnose -n customer-service cs-agent-7d9f8b6c4-x2k4p --context prod
    gpupact diagnose pod/cs-agent-7d9f8b6c4-x2k4p -n customer-service
    gpupact diagnose podgroup/llm-70b-tp4-1 -n finance --snapshot snap/ -o json

Targets as kubectl names them: NAME or KIND/NAME with -n NAMESPACE (default: `default`), or
NAMESPACE/NAME and KIND/NAMESPACE/NAME. Without --snapshot or --context, the current context.

Exit 0 when nothing is pending (or the named pod is fine), 1 with findings, 2 on bad input.
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from gpupact.cli.check import parse_now
from gpupact.cli.main import EXIT_FINDINGS, EXIT_OK, Output, app, stdout, user_errors
from gpupact.cli.render import columns, emit, label_selector
from gpupact.contract import load_contract
from gpupact.contract.schema import Contract
from gpupact.errors import InputError
from gpupact.ops import Analysis, ClusterSnapshot, diagnose, open_cluster
from gpupact.ops.diagnose import DiagnoseReport
from gpupact.ops.evidence import gpu_milli, gpus_text
from gpupact.ops.findings import Diagnosis, Finding, Severity, format_duration
from gpupact.ops.model import observed_at
from gpupact.ops.owners import owner_of

STYLE = {Severity.error: "bold red", Severity.warning: "yellow", Severity.info: "cyan"}


# --- shared with `gpupact audit` ----------------------------------------------------------------


def cluster_source(
    snapshot: Path | None, context: str | None, kubeconfig: Path | None
) -> ClusterSnapshot:
    """A snapshot directory, or (as kubectl) the live cluster of the current context."""
    return open_cluster(
        snapshot_dir=snapshot,
        context=context,
        kubeconfig=str(kubeconfig) if kubeconfig is not None else None,
        live=snapshot is None,
    )


def moment(now: str | None, snapshot: ClusterSnapshot | None = None) -> int:
    """`--now` as Unix seconds; without it, the snapshot's own time (ages as they were when it
    was taken), and the wall clock for a live cluster or a snapshot that holds no time."""
    if now is None and snapshot is not None:
        taken = observed_at(snapshot)
        if taken is not None:
            return taken
    return int(parse_now(now).timestamp())


def optional_contract(path: Path | None) -> Contract | None:
    return load_contract(path).contract if path is not None else None


def print_finding(finding: Finding, indent: str = "  ") -> None:
    style = STYLE[finding.severity]
    stdout.print(
        f"{indent}[{style}]{finding.severity.value}[/] [bold]{escape(finding.domain.value)}"
        f"[/] {escape(finding.code)}: {escape(finding.summary)}",
        highlight=False,
    )
    for line in finding.evidence:
        if line:
            stdout.print(f"{indent}    {escape(line)}", highlight=False)
    if finding.action:
        stdout.print(f"{indent}  [green]action:[/] {escape(finding.action)}", highlight=False)


def print_names(subjects: list[str]) -> None:
    """`-o name`: `kind/namespace/name` per subject ("pod ns/x" -> "pod/ns/x"), each once; a
    pod, podgroup or workload name is a diagnose target as it is (`xargs -n1 gpupact diagnose`)."""
    names = dict.fromkeys(
        f"{kind.lower()}/{rest.split(' ', 1)[0]}"
        for kind, _, rest in (s.partition(" ") for s in subjects)
    )
    if names:
        stdout.print("\n".join(names), markup=False, highlight=False)


# --- diagnose -----------------------------------------------------------------------------------

_KINDS = {
    "pod": "pod",
    "pods": "pod",
    "po": "pod",
    "podgroup": "podgroup",
    "podgroups": "podgroup",
    "pg": "podgroup",
    "workload": "workload",
    "workloads": "workload",
    "wl": "workload",
}


def target_name(target: str, namespace: str | None) -> str:
    """kubectl's ways of naming one object -> `kind/namespace/name`: NAME and KIND/NAME take
    -n (default `default`, as kubectl); NAMESPACE/NAME and KIND/NAMESPACE/NAME carry their own."""
    parts = target.split("/")
    if not all(parts) or len(parts) > 3:
        raise InputError(f"target {target!r}: expected NAME, KIND/NAME (with -n) or NS/NAME")
    if len(parts) == 3:
        kind, ns, name = parts
    elif len(parts) == 2 and parts[0].lower() in _KINDS:
        kind, ns, name = parts[0], namespace or "default", parts[1]
    elif len(parts) == 2:
        kind, (ns, name) = "pod", parts
    else:
        kind, ns, name = "pod", namespace or "default", parts[0]
    if namespace is not None and ns != namespace:
        raise InputError(f"target {target!r} is in namespace {ns!r}, not -n {namespace!r}")
    return f"{_KINDS.get(kind.lower(), kind)}/{ns}/{name}"


def _render_text(report: DiagnoseReport) -> None:
    if not report.diagnoses:
        stdout.print(
            f"nothing pending ({report.nodes} nodes, {report.pods} pods in "
            f"{escape(report.source)})",
            highlight=False,
        )
        return
    for d in report.diagnoses:
        waited = f", pending {format_duration(d.pending_seconds)}" if d.pending_seconds else ""
        stdout.print(f"[bold]{escape(d.subject)}[/]  {escape(d.status)}{waited}", highlight=False)
        for step in d.checked:
            stdout.print(
                f"  [dim]{step.domain.step}. {step.domain.value}: {step.outcome}"
                + (f" - {escape(step.note)}" if step.note else "")
                + "[/]",
                highlight=False,
            )
        if d.finding is not None:
            print_finding(d.finding)
        stdout.print()
    counts: dict[str, int] = {}
    for f in report.findings:
        counts[f.domain.value] = counts.get(f.domain.value, 0) + 1
    summary = ", ".join(f"{n} {domain}" for domain, n in counts.items())
    stdout.print(
        f"{len(report.diagnoses)} subject(s)" + (f": {summary}" if summary else ""),
        highlight=False,
    )


# text heads each subject with SUBJECT and STATUS/PENDING, its steps and finding below; wide is
# kubectl's: one line per subject, with what text leaves out (owner, pods, GPUs, the nodes the
# first waiting pod may use) and the finding as columns
WIDE_COLUMNS = (
    "SUBJECT",
    "STATUS",
    "PENDING",
    "OWNER",
    "PODS",
    "GPUS",
    "ELIGIBLE",
    "CHECKED",
    "STEP",
    "SEVERITY",
    "CODE",
    "SUMMARY",
    "EVIDENCE",
    "ACTION",
)


def _wide_row(d: Diagnosis, analysis: Analysis) -> list[str]:
    keys = d.members or (f"{d.namespace}/{d.name}",)
    pods = [analysis.pods[k] for k in keys if k in analysis.pods]
    waiting = [p for p in pods if not p.node_name]
    # eligible: nodes past the static filters (taints, affinity, selector, GPU kind) of all
    placed = analysis.placement(waiting[0]) if waiting else None
    f = d.finding
    return [
        d.subject.replace(" ", "/", 1),  # "pod ns/x" -> "pod/ns/x": one column
        d.status,
        format_duration(d.pending_seconds) if d.pending_seconds else "-",
        owner_of(analysis, pods[0]).ref if pods else "-",
        str(len(pods)),
        gpus_text(sum(gpu_milli(p) for p in pods)) if pods else "-",
        f"{placed.eligible}/{placed.nodes}" if placed else "-",
        ",".join(f"{s.domain.value}:{s.outcome}" for s in d.checked) or "-",
        f"{f.domain.step}.{f.domain.value}" if f else "-",
        f.severity.value if f else "-",
        f.code if f else "-",
        f.summary if f else "-",
        " | ".join(line for line in f.evidence if line) if f else "-",
        f.action or "-" if f else "-",
    ]


def _render_wide(report: DiagnoseReport, analysis: Analysis) -> None:
    if not report.diagnoses:
        _render_text(report)  # "nothing pending (N nodes, M pods in SOURCE)"
        return
    columns(WIDE_COLUMNS, (_wide_row(d, analysis) for d in report.diagnoses))


@app.command("diagnose")
@user_errors
def diagnose_command(
    target: str | None = typer.Argument(
        None, help="POD or KIND/NAME with -n (pod, podgroup, workload), or NS/POD."
    ),
    all_namespaces: bool = typer.Option(
        False, "-A", "--all-namespaces", help="Every Pending pod, PodGroup and Workload."
    ),
    namespace: str | None = typer.Option(
        None, "-n", "--namespace", help="The target's namespace, or only this namespace."
    ),
    selector: str | None = typer.Option(
        None, "-l", "--selector", help="Only subjects whose pods carry these labels."
    ),
    snapshot: Path | None = typer.Option(
        None, "--snapshot", help="Directory of `kubectl get ... -A -o json` files."
    ),
    context: str | None = typer.Option(None, "--context", help="Live cluster: kubeconfig context."),
    kubeconfig: Path | None = typer.Option(None, "--kubeconfig", help="Kubeconfig file."),
    contract: Path | None = typer.Option(
        None, "--contract", help="Contract: pool cold starts, services' models, class promises."
    ),
    now: str | None = typer.Option(
        None,
        "--now",
        help="Evaluate at this ISO 8601 time (default: the snapshot's own time, the wall clock "
        "for a live cluster).",
    ),
    output: Output = typer.Option(
        Output.text,
        "-o",
        "--output",
        help="Output format: text, wide (one row per subject: owner, pods, GPUs, eligible nodes, "
        "the finding, evidence and action as columns), name, json, yaml.",
    ),
) -> None:
    """Why is it Pending: walk the runbook (nodes, placement, gang, quota, autoscaler, memory)
    and stop at the first domain that explains it, with evidence and the recovery action."""
    if target is not None and all_namespaces:
        raise InputError("give a target or -A, not both")
    if target is None and not all_namespaces and namespace is None:
        raise InputError("give a target (POD with -n NAMESPACE) or -A for every pending subject")
    if target is not None and selector is not None:
        raise InputError("give a target or -l, not both")
    name = target_name(target, namespace) if target is not None else None
    only = label_selector(selector)
    moment(now)  # a bad --now fails before the cluster is read
    terms = optional_contract(contract)
    cluster = cluster_source(snapshot, context, kubeconfig)
    when = moment(now, cluster if snapshot is not None else None)
    analysis = Analysis(cluster, now=when, contract=terms)
    scope = None if all_namespaces else namespace
    report = diagnose(analysis, name, namespace=scope, selector=only)
    if output is Output.name:
        print_names([d.subject for d in report.diagnoses])
    elif output is Output.wide:
        _render_wide(report, analysis)
    elif output is Output.text:
        _render_text(report)
    else:
        emit(report.to_dict(), output)
    raise typer.Exit(EXIT_FINDINGS if report.findings else EXIT_OK)
