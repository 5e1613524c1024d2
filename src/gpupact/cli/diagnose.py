"""`gpupact diagnose`: why is it Pending — the chapter's runbook, executable.

    gpupact diagnose -A --snapshot snap/
    gpupact diagnose customer-service/cs-agent-7d9f8b6c4-x2k4p --context prod
    gpupact diagnose podgroup/finance/llm-70b-tp4-1 --snapshot snap/ -o json

Exit 0 when nothing is pending (or the named pod is fine), 1 with findings, 2 on bad input.
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from gpupact.cli.check import parse_now
from gpupact.cli.main import EXIT_FINDINGS, EXIT_OK, Output, app, stdout, user_errors
from gpupact.cli.render import emit
from gpupact.contract import load_contract
from gpupact.contract.schema import Contract
from gpupact.errors import InputError
from gpupact.ops import Analysis, ClusterSnapshot, diagnose, open_cluster
from gpupact.ops.diagnose import DiagnoseReport
from gpupact.ops.findings import Finding, Severity, format_duration
from gpupact.ops.model import observed_at

STYLE = {Severity.error: "bold red", Severity.warning: "yellow", Severity.info: "cyan"}


# --- shared with `gpupact audit` ----------------------------------------------------------------


def cluster_source(
    snapshot: Path | None, context: str | None, kubeconfig: Path | None
) -> ClusterSnapshot:
    return open_cluster(
        snapshot_dir=snapshot,
        context=context,
        kubeconfig=str(kubeconfig) if kubeconfig is not None else None,
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


# --- diagnose -----------------------------------------------------------------------------------


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


@app.command("diagnose")
@user_errors
def diagnose_command(
    target: str | None = typer.Argument(
        None, help="NAMESPACE/POD (or podgroup/NS/NAME, workload/NS/NAME)."
    ),
    all_namespaces: bool = typer.Option(
        False, "-A", "--all-namespaces", help="Every Pending pod, PodGroup and Workload."
    ),
    namespace: str | None = typer.Option(
        None, "-n", "--namespace", help="Only this namespace (with -A omitted)."
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
    output: Output = typer.Option(Output.text, "-o", "--output", help="Output format."),
) -> None:
    """Why is it Pending: walk the runbook (nodes, placement, gang, quota, autoscaler, memory)
    and stop at the first domain that explains it, with evidence and the recovery action."""
    if target is not None and all_namespaces:
        raise InputError("give a target or -A, not both")
    if target is None and not all_namespaces and namespace is None:
        raise InputError("give a target (NAMESPACE/POD) or -A for every pending subject")
    moment(now)  # a bad --now fails before the cluster is read
    terms = optional_contract(contract)
    cluster = cluster_source(snapshot, context, kubeconfig)
    when = moment(now, cluster if snapshot is not None else None)
    analysis = Analysis(cluster, now=when, contract=terms)
    report = diagnose(analysis, target, namespace=None if all_namespaces else namespace)
    if output is Output.text:
        _render_text(report)
    else:
        emit(report.to_dict(), output)
    raise typer.Exit(EXIT_FINDINGS if report.findings else EXIT_OK)
