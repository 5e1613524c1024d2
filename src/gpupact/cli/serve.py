"""`gpupact serve`: the gateway API over the twin (embedded default) or a live cluster.

gpupact serve examples/promo-peak --tokens tokens.yaml            # twin, 60x clock
gpupact serve --context prod --tokens tokens.yaml --contract contract.yaml
"""

from __future__ import annotations

import math
import socket
import time
from pathlib import Path
from typing import Any

import typer

from gpupact.cli.diagnose import optional_contract
from gpupact.cli.ledger import DB_HELP, DEFAULT_DB
from gpupact.cli.main import app, stderr, user_errors
from gpupact.errors import InputError
from gpupact.ops.autoscale import parse_duration


@app.command("serve")
@user_errors
def serve_command(
    scenario: Path | None = typer.Argument(None, help="Twin scenario directory."),
    tokens: Path = typer.Option(..., "--tokens", help="Bearer tokens per tenant (YAML)."),
    contract: Path | None = typer.Option(None, "--contract", help="Quotas, models, contexts."),
    context: str | None = typer.Option(None, "--context", help="Live cluster: context."),
    kubeconfig: Path | None = typer.Option(None, "--kubeconfig", help="Live cluster: file."),
    db: str = typer.Option(DEFAULT_DB, "--db", help=DB_HELP),
    host: str = typer.Option("127.0.0.1", "--host", help="Listen address."),
    port: int = typer.Option(8080, "--port", min=1, max=65535, help="Listen port."),
    scale: float = typer.Option(60.0, "--scale", help="Twin: simulated seconds per second."),
    seed: int | None = typer.Option(None, "--seed", help="Twin: override the scenario's seed."),
    variant: str | None = typer.Option(None, "--variant", help="Twin: which variant directory."),
    refresh: str = typer.Option("1s", "--refresh", help="How often the snapshot is renewed."),
    queue_limit: float = typer.Option(5, "--queue-limit", help="Saturated above this queue."),
    kv_limit: float = typer.Option(0.8, "--kv-limit", help="Saturated above this KV use."),
) -> None:
    """Serve /v1/backends, /v1/decisions, /v1/profiles, budgets and /metrics, over the twin
    (a scenario directory, run on a scaled clock) or a live cluster."""
    try:
        import uvicorn

        from gpupact.serve import (
            LiveSource,
            ServeState,
            TwinSource,
            create_app,
            live_lister,
            load_tokens,
            open_twin,
        )
    except ImportError as err:
        raise InputError(
            "serving needs FastAPI and uvicorn, which come with gpupact: "
            f"pip install gpupact ({err})"
        ) from None
    from gpupact.ledger import Ledger

    _check_options(scale=scale, queue_limit=queue_limit, kv_limit=kv_limit)
    _check_host(host)
    live = context is not None or kubeconfig is not None
    if live == (scenario is not None):
        raise InputError("give a twin scenario directory or --context/--kubeconfig, not both")
    try:
        every = parse_duration(refresh)
    except ValueError as err:
        raise InputError(f"--refresh: {err}") from None
    terms = optional_contract(contract)
    principals = load_tokens(tokens)
    if live:
        cold = {}
        if terms is not None:
            cold = {s.name: s.cold_start.total_seconds() for s in terms.services if s.cold_start}
        source = LiveSource(live_lister(context, str(kubeconfig) if kubeconfig else None), cold)
    else:
        assert scenario is not None
        sim, scenario_contract = open_twin(scenario, seed, variant)
        terms = terms or scenario_contract  # the scenario's own contract unless one is given
        source = TwinSource(sim, scale=scale, name=str(scenario))
    ledger = _open_ledger(Ledger, db)
    state = ServeState(
        source,
        principals,
        ledger,
        time.time,  # the edge reads the wall clock; the twin maps it to simulated time
        contract=terms,
        refresh_seconds=max(0.1, float(every)),
        queue_limit=queue_limit,
        kv_limit=kv_limit,
    )
    state.refresh()  # bad input (a broken scenario, an unreachable cluster) fails here, exit 2
    stderr.print(f"serving on http://{host}:{port} (docs at /docs)", highlight=False)
    try:
        uvicorn.run(create_app(state), host=host, port=port, log_level="warning")
    finally:
        ledger.close()


def _check_options(*, scale: float, queue_limit: float, kv_limit: float) -> None:
    """Every number the server runs on, before the port is bound: NaN compares false with
    everything, so a NaN limit would never saturate and a NaN scale would freeze the clock."""
    for flag, value in (("--scale", scale), ("--queue-limit", queue_limit)):
        if not math.isfinite(value) or value <= 0:
            raise InputError(f"{flag}: expected a finite number > 0, got {value}")
    if not math.isfinite(kv_limit) or not 0 < kv_limit <= 1:
        raise InputError(f"--kv-limit: expected a fraction in (0, 1], got {kv_limit}")


def _check_host(host: str) -> None:
    try:
        socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError, ValueError) as err:
        raise InputError(f"--host: cannot resolve {host!r} ({err})") from None


def _open_ledger(ledger_type: Any, db: str) -> Any:
    """The ledger, or one line saying why `--db` is not one (a text file, a bad URL)."""
    from sqlalchemy.exc import ArgumentError, SQLAlchemyError

    try:
        return ledger_type.open(db)
    except (SQLAlchemyError, ArgumentError) as err:
        first = str(getattr(err, "orig", None) or err).splitlines()[0]
        raise InputError(f"--db: {db}: not a usable ledger database ({first})") from None
