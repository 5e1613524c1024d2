"""`gpupact review --month YYYY-MM`: the chapter's monthly review over the ledger.

    gpupact review --month 2026-11 --db ledger.db --contract contract.yaml

Exit 0 when no finding is a warning or worse, 1 when some is, 2 on bad input.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.markup import escape

from gpupact.cli.diagnose import optional_contract, print_finding
from gpupact.cli.ledger import DB_HELP, DEFAULT_DB, _now, _usage_table
from gpupact.cli.main import EXIT_FINDINGS, EXIT_OK, Output, app, stdout, user_errors
from gpupact.cli.render import emit
from gpupact.errors import InputError
from gpupact.ops.autoscale import parse_duration

if TYPE_CHECKING:
    from gpupact.ops.review import ReviewReport


def _render_text(report: ReviewReport) -> None:
    data = report.to_dict()
    stdout.print(
        _usage_table(
            f"GPU-hours {report.window.label} by owner and cost centre",
            data["byOwner"],
            ["owner", "cost_centre"],
        )
    )
    stdout.print(_usage_table("by tenant and model", data["byTenantModel"], ["tenant", "model"]))
    for finding in report.findings:
        stdout.print(f"[bold]{escape(finding.subject)}[/]", highlight=False)
        print_finding(finding)
    stdout.print(f"\n{len(report.findings)} finding(s)", highlight=False)


@app.command("review")
@user_errors
def review_command(
    month: str = typer.Option(..., "--month", help="The month to review, YYYY-MM."),
    db: str = typer.Option(DEFAULT_DB, "--db", help=DB_HELP),
    contract: Path | None = typer.Option(None, "--contract", help="Raises and class promises."),
    now: str | None = typer.Option(None, "--now", help="Review as of this time (ISO 8601)."),
    eval_pattern: str = typer.Option("eval", "--eval-match", help="Evaluation job name regex."),
    pending: str = typer.Option("1h", "--pending-threshold", help="Default Pending limit."),
    low: float = typer.Option(0.3, "--low-utilisation", help="Busy fraction counted as low."),
    output: Output = typer.Option(Output.text, "-o", "--output", help="Output format."),
) -> None:
    """Per owner and cost centre; unowned usage, expired raises, long-pending evaluations,
    low-utilisation services and retry-driven usage, each with the chapter's action."""
    import re

    from gpupact.ledger import Ledger, month_window
    from gpupact.ops.review import ReviewOptions, review

    try:
        threshold = parse_duration(pending)
        re.compile(eval_pattern)
    except (ValueError, re.error) as err:
        raise InputError(f"--pending-threshold/--eval-match: {err}") from None
    if not 0 <= low <= 1:
        raise InputError(f"--low-utilisation: expected 0..1, got {low}")
    window, at = month_window(month), _now(now)
    terms = optional_contract(contract)
    with Ledger.open(db, create=False) as store:
        items = store.intervals(window.start, window.end)
        busy = store.utilisation(window.start, window.end)
        waits = store.waits()
    options = ReviewOptions(eval_pattern, threshold, low)
    report = review(
        items, waits, window, min(at, window.end), busy=busy, contract=terms, options=options
    )
    if output is Output.text:
        _render_text(report)
    else:
        emit(report.to_dict(), output)
    raise typer.Exit(EXIT_FINDINGS if report.failing else EXIT_OK)
