"""`gpupact check`: validate a contract and run the chapter's rules.

Exit 0 when no finding is a warning or worse, 1 when some is, 2 on bad input (every schema
or reference error printed, one line each, as `error: file:line:col: path: message`).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import typer
from rich.markup import escape

from gpupact.cli.main import EXIT_FINDINGS, EXIT_OK, Output, app, stdout, user_errors
from gpupact.cli.render import columns, emit
from gpupact.contract import Contract, Finding, LoadedContract, Severity, check, load_contract
from gpupact.contract.schema import Service
from gpupact.errors import FieldError, InputError, PathPart

_STYLE = {Severity.error: "bold red", Severity.warning: "yellow", Severity.info: "cyan"}


@app.command("check")
@user_errors
def check_command(
    file: str | None = typer.Argument(None, help="Contract file (YAML or JSON)."),
    file_option: str | None = typer.Option(None, "-f", "--file", help="Contract file."),
    output: Output = typer.Option(
        Output.text,
        "-o",
        "--output",
        help="Output format: text, wide (one row per finding, every field a column), name "
        "(contract/NAME), json, yaml.",
    ),
    now: str | None = typer.Option(
        None, "--now", help="Evaluate expiries at this ISO 8601 time (default: now, UTC)."
    ),
) -> None:
    """Check a contract: schema, references, then the chapter's rules as findings."""
    path = contract_file(file, file_option, "gpupact check CONTRACT.yaml")
    moment = parse_now(now)
    loaded = load_contract(path)
    findings = check(loaded.contract, moment) + unknown_model_findings(loaded.contract)
    findings += timeslice_memory_findings(loaded.contract)
    findings += max_context_findings(loaded.contract)
    if not any(f.severity is Severity.error for f in findings):
        findings += compile_refusals(loaded.contract, moment)
    report = check_report(loaded, findings, moment)
    if output is Output.name:
        stdout.print(f"contract/{report['contract']}", markup=False, highlight=False)
    elif output is Output.wide:
        _render_wide(report)
    elif output is Output.text:
        _render_text(report)
    else:
        emit(report, output)
    failing = any(f.severity is not Severity.info for f in findings)
    raise typer.Exit(EXIT_FINDINGS if failing else EXIT_OK)


def compile_refusals(contract: Contract, now: datetime) -> list[Finding]:
    """What `gpupact compile` (default options) would refuse, as error findings: a contract
    check passes can always be compiled. Run only when the rules found no error, which
    already fails the check (and often names the same cause)."""
    from gpupact.compile import CompileInvalid, CompileOptions, compile_contract

    try:
        compile_contract(contract, CompileOptions(now=now))
    except FieldError as err:
        return [_refusal(err.path, f"contract/{contract.metadata.name}", err.message)]
    except CompileInvalid as err:
        return [_refusal((), p.subject, p.message) for p in err.problems]
    return []


def unknown_model_findings(contract: Contract) -> list[Finding]:
    """Models `plan` and the twin cannot size (outside the catalogue, no architecture given):
    an error here, so a contract check passes is one they can run."""
    from gpupact.plan.from_contract import model_problems

    fix = (
        "use a catalogue name (gpupact plan --help lists the sources in docs/plan.md)"
        " or describe the model under model.architecture"
    )
    return [
        Finding("unknown-model", Severity.error, path, f"service/{service.name}", message, fix)
        for path, service, message in model_problems(contract)
    ]


def _replica_findings(
    contract: Contract,
    rule: str,
    severity: Severity,
    problem: Callable[[Contract, Service], str | None],
    fix: str,
) -> list[Finding]:
    """One finding per service whose replica `problem` says would not start; services whose
    model is unknown are left to unknown-model."""
    from gpupact.plan.from_contract import model_problem

    out = []
    for i, service in enumerate(contract.services):
        if model_problem(service) is not None:
            continue
        message = problem(contract, service)
        if message is not None:
            subject = f"service/{service.name}"
            out.append(Finding(rule, severity, ("services", i), subject, message, fix))
    return out


def timeslice_memory_findings(contract: Contract) -> list[Finding]:
    """Services on a time-sliced pool whose model does not fit in their share of the device
    memory (the k engines of a GPU share it: plan/serving.py `timeslice_memory_problem`, the
    share plan and the twin use): their pods would not start, the twin's replicas serve
    nothing."""
    shared = {p.name for p in contract.pools if p.sharing.mode == "timeslice"}
    if not any(s.pool in shared for s in contract.services):
        return []  # (plan's engine model is not even imported)
    from gpupact.plan.serving import timeslice_memory_problem

    fix = (
        "lower the pool's time-slice replicas, quantise the model, raise tensorParallel or put "
        "the service on an exclusive or MIG pool"
    )
    return _replica_findings(
        contract, "timeslice-memory", Severity.error, timeslice_memory_problem, fix
    )


def max_context_findings(contract: Contract) -> list[Finding]:
    """Services without contextLength whose replica's KV cache cannot hold one request of the
    model's own maximum, which vLLM takes when compile passes no MAX_MODEL_LEN
    (plan/serving.py `max_context_problem`): the pods would not start, where plan and the twin
    size for the profile's p95 request."""
    if all(s.context_length is not None or s.model is None for s in contract.services):
        return []  # (plan's engine model is not even imported)
    from gpupact.plan.serving import max_context_problem

    fix = "set contextLength to the longest request the service takes"
    return _replica_findings(
        contract, "model-max-context", Severity.warning, max_context_problem, fix
    )


def _refusal(path: tuple[PathPart, ...], subject: str, message: str) -> Finding:
    fix = "change the contract so that `gpupact compile` can write it"
    return Finding("not-compilable", Severity.error, path, subject, message, fix)


def parse_now(text: str | None) -> datetime:
    """`--now`, or the wall clock when it is not given: the one place gpupact reads the clock
    (everything below the CLI takes the time as a parameter)."""
    if text is None:
        return datetime.now(UTC)
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise InputError(
            f"--now: expected an ISO 8601 timestamp such as 2025-11-11T00:00:00Z, got {text!r}"
        ) from None
    if moment.tzinfo is None:
        raise InputError(f"--now: {text!r} has no timezone; add one, e.g. 'Z'")
    return moment


def check_report(loaded: LoadedContract, findings: list[Finding], now: datetime) -> dict[str, Any]:
    """What every output format shows: findings located in the file, worst first."""
    rows = []
    for finding in findings:
        pos = loaded.locate(finding.path)
        row = finding.to_dict()
        row["file"] = loaded.file
        row["line"], row["column"] = pos if pos else (None, None)
        rows.append(row)
    rows.sort(key=lambda r: (Severity(r["severity"]).rank, r["line"] or 0, r["column"] or 0))
    counts = {s.value: sum(1 for f in findings if f.severity is s) for s in Severity}
    contract = loaded.contract
    return {
        "contract": contract.metadata.name,
        "file": loaded.file,
        "now": now.isoformat(),
        "counts": {
            "pools": len(contract.pools),
            "classes": len(contract.classes),
            "tenants": len(contract.tenants),
            "services": len(contract.services),
            "jobs": len(contract.jobs),
        },
        "summary": counts,
        "findings": rows,
    }


def _render_text(report: dict[str, Any]) -> None:
    findings = report["findings"]
    width = max((len(f["rule"]) for f in findings), default=0)
    for f in findings:
        severity = Severity(f["severity"])
        where = f"{f['file']}:{f['line']}:{f['column']}" if f["line"] else f["file"]
        stdout.print(
            f"[{_STYLE[severity]}]{severity.value:<7}[/] {escape(f['rule']):<{width}}  "
            f"{escape(where)}  [dim]{escape(f['path'])}[/]",
            highlight=False,
        )
        stdout.print(f"        {escape(f['subject'])}: {escape(f['message'])}", highlight=False)
        stdout.print(f"        [green]fix:[/] {escape(f['fix'])}", highlight=False)
    c, s = report["counts"], report["summary"]
    inventory = ", ".join(_plural(c[key], key) for key in c)
    if not findings:
        stdout.print(f"contract {escape(report['contract'])}: ok ({inventory})", highlight=False)
        return
    stdout.print(
        f"contract {escape(report['contract'])}: {_plural(s['error'], 'errors')}, "
        f"{_plural(s['warning'], 'warnings')}, {s['info']} info ({inventory})",
        highlight=False,
    )


# text shows SEVERITY RULE LOCATION PATH on a finding's first line, the rest below it; wide is
# kubectl's: one line per finding, the subject, message and fix as columns of it (awk, grep)
WIDE_COLUMNS = ("SEVERITY", "RULE", "LOCATION", "PATH", "SUBJECT", "MESSAGE", "FIX")


def _render_wide(report: dict[str, Any]) -> None:
    findings = report["findings"]
    if not findings:
        _render_text(report)  # the one-line "ok" with the contract's inventory
        return
    columns(
        WIDE_COLUMNS,
        (
            (
                f["severity"],
                f["rule"],
                f"{f['file']}:{f['line']}:{f['column']}" if f["line"] else f["file"],
                f["path"] or "-",
                f["subject"],
                f["message"],
                f["fix"],
            )
            for f in findings
        ),
    )


def _plural(count: int, noun: str) -> str:
    """`1 job`, `2 jobs`, `1 class`; `noun` is the plural."""
    if count != 1:
        return f"{count} {noun}"
    return f"1 {noun[:-2] if noun.endswith('sses') else noun[:-1]}"


def contract_file(argument: str | None, option: str | None, usage: str) -> str:
    """The contract named as an argument or with -f (once); `usage` shows how when neither."""
    if argument and option:
        raise InputError("give the contract file once: as an argument or with -f, not both")
    path = argument or option
    if not path:
        raise InputError(f"missing contract file: {usage}")
    return path
