"""`gpupact audit`: the cluster against the chapter's discipline, findings with severity and fix,
and what to stop first under shortage.

    gpupact audit --snapshot snap/ --contract contract.yaml --now 2026-11-10T12:00:00Z

Exit 0 when no finding is a warning or worse, 1 when some is, 2 on bad input.
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from gpupact.cli.diagnose import cluster_source, moment, optional_contract, print_finding
from gpupact.cli.main import EXIT_FINDINGS, EXIT_OK, Output, app, stdout, user_errors
from gpupact.cli.render import emit
from gpupact.errors import InputError
from gpupact.ops import Analysis, AuditOptions, audit
from gpupact.ops.audit import AuditReport
from gpupact.ops.autoscale import parse_duration
from gpupact.ops.findings import Severity


def _render_text(report: AuditReport) -> None:
    for finding in report.findings:
        stdout.print(f"[bold]{escape(finding.subject)}[/]", highlight=False)
        print_finding(finding)
    plan = report.plan
    state = "[bold red]shortage[/]" if plan["shortage"] else "no shortage"
    stdout.print(
        f"\nwhat to stop first ({state}: {plan['pendingOnlineGpus']} GPU(s) wanted by pending "
        f"online pods, {plan['freeOnlinePoolGpus']} free in the online pool)",
        highlight=False,
    )
    for step in plan["steps"]:
        subjects = step["subjects"]
        shown = ", ".join(subjects[:6]) + (f" (+{len(subjects) - 6})" if len(subjects) > 6 else "")
        stdout.print(
            f"  {step['order']}. {escape(step['action'])} [{step['gpus']} GPU(s)]"
            + (f": {escape(shown)}" if subjects else ""),
            highlight=False,
        )
    counts = {s: sum(1 for f in report.findings if f.severity is s) for s in Severity}
    stdout.print(
        f"\n{counts[Severity.error]} error(s), {counts[Severity.warning]} warning(s), "
        f"{counts[Severity.info]} info",
        highlight=False,
    )


@app.command("audit")
@user_errors
def audit_command(
    snapshot: Path | None = typer.Option(
        None, "--snapshot", help="Directory of `kubectl get ... -A -o json` files."
    ),
    context: str | None = typer.Option(None, "--context", help="Live cluster: kubeconfig context."),
    kubeconfig: Path | None = typer.Option(None, "--kubeconfig", help="Kubeconfig file."),
    contract: Path | None = typer.Option(
        None, "--contract", help="Contract: which classes are online, which pools."
    ),
    now: str | None = typer.Option(None, "--now", help="Evaluate at this ISO 8601 time."),
    gang_threshold: str = typer.Option(
        "30m", "--gang-threshold", help="How long a gang may sit half-started (Go duration)."
    ),
    output: Output = typer.Option(Output.text, "-o", "--output", help="Output format."),
) -> None:
    """Findings with severity and fix: taints, sharing, requests/limits, owners, drift, device
    plugins, stale gangs, expired raises, preemption; and what to stop first under shortage."""
    try:
        threshold = parse_duration(gang_threshold)
    except ValueError as err:
        raise InputError(f"--gang-threshold: {err}") from None
    when = moment(now)
    terms = optional_contract(contract)
    cluster = cluster_source(snapshot, context, kubeconfig)
    report = audit(Analysis(cluster, now=when, contract=terms), AuditOptions(threshold))
    if output is Output.text:
        _render_text(report)
    else:
        emit(report.to_dict(), output)
    raise typer.Exit(EXIT_FINDINGS if report.failing else EXIT_OK)
