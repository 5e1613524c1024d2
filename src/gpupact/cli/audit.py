"""`gpupact audit`: the cluster against the chapter's discipline, findings with severity and fix,
and what to stop first under shortage.

    gpupact audit --snapshot snap/ --contract contract.yaml --now 2026-11-10T12:00:00Z

Exit 0 when no finding is a warning or worse (`--fail-on` moves the bar), 1 when some is, 2 on
bad input.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import typer
from rich.markup import escape

from gpupact.cli.diagnose import (
    cluster_source,
    moment,
    optional_contract,
    print_finding,
    print_names,
)
from gpupact.cli.main import EXIT_FINDINGS, EXIT_OK, Output, app, stdout, user_errors
from gpupact.cli.render import emit, label_selector
from gpupact.errors import InputError
from gpupact.ops import Analysis, AuditOptions, audit
from gpupact.ops.audit import AuditReport
from gpupact.ops.autoscale import parse_duration
from gpupact.ops.findings import Severity
from gpupact.ops.model import labels_by_subject


def _subject_key(subject: str) -> str:
    """ "Job ns/x (template 0)" -> "job ns/x", as labels_by_subject keys objects."""
    kind, _, rest = subject.partition(" ")
    return f"{kind.lower()} {rest.split(' ', 1)[0]}"


def _render_text(report: AuditReport, wide: bool) -> None:
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
        cut = len(subjects) if wide else 6
        shown = ", ".join(subjects[:cut]) + (
            f" (+{len(subjects) - cut})" if len(subjects) > cut else ""
        )
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
    fail_on: str = typer.Option(
        "warning",
        "--fail-on",
        help="Exit 1 when a finding is this severe or worse: error, warning, info, never.",
    ),
    owner_label: list[str] = typer.Option(
        [],
        "--owner-label",
        help="Label/annotation key naming the owner (repeatable; replaces the accepted "
        "spellings gpupact.io/owner, owner, team, ...).",
    ),
    cost_center_label: list[str] = typer.Option(
        [],
        "--cost-center-label",
        "--cost-centre-label",
        help="Label/annotation key naming the cost centre (repeatable; replaces the accepted "
        "spellings gpupact.io/cost-centre, cost-center, costcenter, ...).",
    ),
    selector: str | None = typer.Option(
        None, "-l", "--selector", help="Only findings on objects with these labels."
    ),
    output: Output = typer.Option(
        Output.text,
        "-o",
        "--output",
        help="Output format: text, wide (every subject listed), name, json, yaml.",
    ),
) -> None:
    """Findings with severity and fix: taints, sharing, requests/limits, owners, drift, device
    plugins, stale gangs, expired raises, preemption; and what to stop first under shortage."""
    try:
        threshold = parse_duration(gang_threshold)
    except ValueError as err:
        raise InputError(f"--gang-threshold: {err}") from None
    threshold_severity = _fail_on(fail_on)
    options = AuditOptions(threshold)
    if owner_label:
        options = replace(options, owner_keys=tuple(owner_label))
    if cost_center_label:
        options = replace(options, cost_keys=tuple(cost_center_label))
    only = label_selector(selector)
    moment(now)  # a bad --now fails before the cluster is read
    terms = optional_contract(contract)
    cluster = cluster_source(snapshot, context, kubeconfig)
    when = moment(now, cluster if snapshot is not None else None)
    report = audit(Analysis(cluster, now=when, contract=terms), options)
    if only is not None:
        labels = labels_by_subject(cluster)
        report.findings = [
            f
            for f in report.findings
            if (found := labels.get(_subject_key(f.subject))) is not None and only.matches(found)
        ]
    if output is Output.name:
        print_names([f.subject for f in report.findings])
    elif output in (Output.text, Output.wide):
        _render_text(report, wide=output is Output.wide)
    else:
        emit(report.to_dict(), output)
    raise typer.Exit(EXIT_FINDINGS if report.fails(threshold_severity) else EXIT_OK)


def _fail_on(text: str) -> Severity | None:
    if text == "never":
        return None
    try:
        return Severity(text)
    except ValueError:
        raise InputError(
            f"--fail-on: expected error, warning, info or never, got {text!r}"
        ) from None
