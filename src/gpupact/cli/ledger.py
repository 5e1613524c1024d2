"""`gpupact ledger`: ingest GPU usage, report GPU-hours, export FOCUS CSV.

gpupact ledger ingest --db ledger.db --snapshot snap/            # kubectl JSON
gpupact ledger ingest --db ledger.db --context prod --every 60s  # poll a live cluster
gpupact ledger ingest --db ledger.db --sacct sacct.txt           # Slurm accounting
gpupact ledger ingest --db ledger.db --records usage.json        # twin usage records
gpupact ledger utilisation --db ledger.db --prometheus http://prom:9090 --month 2026-11
gpupact ledger report --db ledger.db --month 2026-11 --by tenant,model
gpupact ledger export --db ledger.db --month 2026-11 -f focus.csv --price h100-80g=2.5
"""

from __future__ import annotations

import json
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.markup import escape
from rich.table import Table

from gpupact.cli.check import parse_now
from gpupact.cli.diagnose import cluster_source
from gpupact.cli.main import Output, app, stdout, user_errors
from gpupact.cli.render import emit
from gpupact.errors import InputError
from gpupact.ops.autoscale import parse_duration

if TYPE_CHECKING:
    from gpupact.ledger import IngestResult, Ledger

# gpupact.ledger (SQLAlchemy) is imported inside the commands: every other command of the CLI
# starts without it

ledger_app = typer.Typer(no_args_is_help=True)
app.add_typer(ledger_app, name="ledger")


@ledger_app.callback()
def ledger_group() -> None:
    """GPU-hour ledger: ingest usage (twin records, Kubernetes, Slurm sacct), report GPU-hours
    allocated / idle / busy, export FOCUS CSV, summarise the gateway's request profiles."""


DB_HELP = "Ledger store: a SQLite file, or postgresql://user:pw@host/db."
DEFAULT_DB = "gpupact-ledger.db"


def _now(text: str | None) -> float:
    return parse_now(text).timestamp()


def read_records(path: Path) -> list[dict[str, Any]]:
    """A JSON array of usage records, or JSON lines (one record per line)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise InputError(err.strerror or "cannot read", file=str(path)) from None
    try:
        if text.lstrip().startswith("["):
            data = json.loads(text)
        else:
            data = [json.loads(line) for line in text.splitlines() if line.strip()]
    except json.JSONDecodeError as err:
        raise InputError(f"not JSON: {err.msg}", file=str(path), line=err.lineno) from None
    if not isinstance(data, list):
        raise InputError("expected a JSON array of usage records", file=str(path))
    return data


def _print_result(what: str, result: IngestResult) -> None:
    stdout.print(
        f"{what}: {result.received} received, {result.inserted} new, {result.updated} updated, "
        f"{result.unchanged} already recorded",
        highlight=False,
        markup=False,
    )


def _ingest_cluster(
    store: Ledger,
    snapshot: Path | None,
    context: str | None,
    kubeconfig: Path | None,
    now: str | None,
) -> None:
    from gpupact.ledger import observe

    cluster = cluster_source(snapshot, context, kubeconfig)
    seen = observe(cluster.nodes, cluster.pods, _now(now))
    _print_result("pod intervals", store.ingest(seen.intervals))
    _print_result("waits", store.ingest_waits(seen.waits))
    _print_result("node capacity", store.ingest_capacity(seen.capacity))
    # a full listing: what is no longer there has ended (deleted pods, removed nodes)
    keys = [i.key for i in seen.intervals] + [c.key for c in seen.capacity]
    closed = store.close_missing("kubernetes", keys, seen.observed_at)
    if closed:
        stdout.print(f"closed {closed} interval(s) no longer in the cluster", highlight=False)


@ledger_app.command("ingest")
@user_errors
def ingest_command(
    db: str = typer.Option(DEFAULT_DB, "--db", help=DB_HELP),
    records: Path | None = typer.Option(None, "--records", help="Usage records (JSON/JSONL)."),
    sacct: Path | None = typer.Option(None, "--sacct", help="`sacct --parsable2` output."),
    cluster_name: str = typer.Option("slurm", "--slurm-cluster", help="Cluster name for sacct."),
    snapshot: Path | None = typer.Option(None, "--snapshot", help="kubectl JSON directory."),
    context: str | None = typer.Option(None, "--context", help="Live cluster: kubeconfig context."),
    kubeconfig: Path | None = typer.Option(None, "--kubeconfig", help="Kubeconfig file."),
    every: str | None = typer.Option(None, "--every", help="Live: poll this often (e.g. 60s)."),
    now: str | None = typer.Option(None, "--now", help="Observation time (ISO 8601)."),
) -> None:
    """Add usage to the ledger; replaying the same input counts nothing twice."""
    from gpupact.ledger import Ledger, SlurmOptions, from_records, read_sacct

    sources = [s for s in (records, sacct, snapshot or context or kubeconfig) if s is not None]
    if len(sources) != 1:
        raise InputError("give exactly one of --records, --sacct, --snapshot, --context")
    with Ledger.open(db) as store:
        if records is not None:
            _print_result("intervals", store.ingest(from_records(read_records(records), "records")))
        elif sacct is not None:
            try:
                text = sacct.read_text(encoding="utf-8")
            except OSError as err:
                raise InputError(err.strerror or "cannot read", file=str(sacct)) from None
            read = read_sacct(text, str(sacct), SlurmOptions(cluster_name), _now(now))
            _print_result("job intervals", store.ingest(read.intervals))
            _print_result("waits", store.ingest_waits(read.waits))
        elif every is None:
            _ingest_cluster(store, snapshot, context, kubeconfig, now)
        else:
            if snapshot is not None or now is not None:
                raise InputError("--every polls a live cluster: use --context, without --now")
            try:
                period = parse_duration(every)
            except ValueError as err:
                raise InputError(f"--every: {err}") from None
            while True:  # until interrupted; each poll is its own transaction
                _ingest_cluster(store, None, context, kubeconfig, None)
                time.sleep(max(1.0, period))


def _prometheus_query(base: str) -> Any:
    import urllib.error
    import urllib.parse
    import urllib.request

    def query(promql: str, at: float) -> dict[str, Any]:
        url = f"{base.rstrip('/')}/api/v1/query?" + urllib.parse.urlencode(
            {"query": promql, "time": f"{at:.3f}"}
        )
        try:
            with urllib.request.urlopen(url, timeout=60) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as err:
            try:
                return json.loads(err.read())
            except ValueError:
                raise InputError(f"--prometheus {base}: HTTP {err.code}") from None
        except (OSError, ValueError) as err:
            raise InputError(f"--prometheus {base}: {err}") from None

    return query


@ledger_app.command("utilisation")
@user_errors
def utilisation_command(
    prometheus: str = typer.Option(..., "--prometheus", help="Prometheus base URL."),
    month: str = typer.Option(..., "--month", help="YYYY-MM"),
    db: str = typer.Option(DEFAULT_DB, "--db", help=DB_HELP),
    metric: str = typer.Option("DCGM_FI_DEV_GPU_UTIL", "--metric", help="DCGM metric."),
    now: str | None = typer.Option(None, "--now", help="Evaluate at this time (ISO 8601)."),
) -> None:
    """Busy GPU-hours per pod from DCGM metrics in Prometheus, for the month so far."""
    from gpupact.ledger import Ledger, month_window
    from gpupact.ledger.dcgm import busy_rows

    window = month_window(month)
    end = min(window.end, _now(now))
    rows = busy_rows(_prometheus_query(prometheus), metric, window.start, end)
    with Ledger.open(db) as store:
        store.add_utilisation(rows)
    stdout.print(f"busy GPU-hours of {len(rows)} pod(s) recorded", highlight=False)


def _usage_table(title: str, rows: list[dict[str, Any]], keys: list[str]) -> Table:
    table = Table(title=title, title_justify="left")
    for k in [*keys, "gpuHours", "utilisation"]:
        table.add_column(k, justify="right" if k in ("gpuHours", "utilisation") else "left")
    for row in rows:
        util = row.get("utilisation")
        table.add_row(
            *[escape(str(row.get(k) or "-")) for k in keys],
            f"{row['gpuHours']:,.2f}",
            "-" if util is None else f"{util:.0%}",
        )
    return table


@ledger_app.command("report")
@user_errors
def report_command(
    month: str = typer.Option(..., "--month", help="YYYY-MM"),
    db: str = typer.Option(DEFAULT_DB, "--db", help=DB_HELP),
    by: str = typer.Option("tenant,model", "--by", help="Group by these fields."),
    now: str | None = typer.Option(None, "--now", help="Count running usage up to (ISO 8601)."),
    output: Output = typer.Option(Output.text, "-o", "--output", help="Output format."),
) -> None:
    """GPU-hours allocated per group, idle per pool, utilised where DCGM data is."""
    from gpupact.ledger import Ledger, allocated, idle_by_pool, month_window

    window, at = month_window(month), _now(now)
    keys = [k.strip() for k in by.split(",") if k.strip()]
    with Ledger.open(db, create=False) as store:
        items = store.intervals(window.start, window.end)
        busy = store.utilisation(window.start, window.end)
        rows = [u.to_dict() for u in allocated(items, window, at, keys, busy)]
        pools = [p.to_dict() for p in idle_by_pool(store.capacity(), items, window, at)]
    data = {"month": window.label, "allocated": rows, "pools": pools}
    if output is not Output.text:
        emit(data, output)
        return
    stdout.print(_usage_table(f"GPU-hours {window.label}", rows, keys))
    if pools:
        table = Table(title="pools", title_justify="left")
        for k in ("pool", "allocatableGpuHours", "allocatedGpuHours", "idleGpuHours"):
            table.add_column(k)
        for p in pools:
            table.add_row(escape(str(p["pool"])), *[f"{p[k]:,.2f}" for k in list(p)[1:]])
        stdout.print(table)


def _prices(items: list[str]) -> dict[str, float]:
    out = {}
    for item in items:
        model, sep, price = item.partition("=")
        try:
            if not sep or not model:
                raise ValueError
            out[model] = float(price)
        except ValueError:
            raise InputError(f"--price: expected MODEL=PRICE (or *=PRICE), got {item!r}") from None
    return out


@ledger_app.command("export")
@user_errors
def export_command(
    month: str = typer.Option(..., "--month", help="YYYY-MM"),
    db: str = typer.Option(DEFAULT_DB, "--db", help=DB_HELP),
    file: Path | None = typer.Option(None, "-f", "--file", help="CSV file (default stdout)."),
    price: list[str] = typer.Option([], "--price", help="GPU model price per GPU-hour."),
    currency: str = typer.Option("USD", "--currency", help="BillingCurrency."),
    now: str | None = typer.Option(None, "--now", help="Count running usage up to (ISO 8601)."),
) -> None:
    """FOCUS-style cost and usage CSV: one row per usage interval in the month."""
    from gpupact.ledger import Ledger, month_window
    from gpupact.ledger.focus import write_focus

    window, at, prices = month_window(month), _now(now), _prices(price)
    with Ledger.open(db, create=False) as store:
        items = store.intervals(window.start, window.end)
    if file is None:
        write_focus(sys.stdout, items, window, at, prices=prices, currency=currency)
        return
    try:
        with file.open("w", encoding="utf-8", newline="") as out:
            n = write_focus(out, items, window, at, prices=prices, currency=currency)
    except OSError as err:
        raise InputError(err.strerror or "cannot write", file=str(file)) from None
    stamp = datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%MZ")
    stdout.print(f"{n} row(s) written to {file} (as of {stamp})", highlight=False, markup=False)


@ledger_app.command("profiles")
@user_errors
def profiles_command(
    db: str = typer.Option(DEFAULT_DB, "--db", help=DB_HELP),
    model: str | None = typer.Option(None, "--model", help="Only this model."),
    tenant: str | None = typer.Option(None, "--tenant", help="Only this tenant's profiles."),
    output: Output = typer.Option(Output.text, "-o", "--output", help="Output format."),
) -> None:
    """Request-token profiles from the gateway as percentiles, and the `gpupact plan` flags
    they give."""
    from gpupact.ledger import Ledger
    from gpupact.ledger.profiles import summarise

    with Ledger.open(db, create=False) as store:
        summaries = summarise(store.profiles(tenant=tenant, model=model))
    if output is not Output.text:
        emit({"summaries": summaries}, output)
        return
    if not summaries:
        stdout.print("no request profiles stored", highlight=False)
    for s in summaries:
        stdout.print(
            f"{escape(s['model'])}: {s['requests']:,} requests in {s['profiles']} profile(s); "
            f"input {s['inputTokens']}, output {s['outputTokens']}\n"
            f"  gpupact plan --model {escape(s['model'])} {s['planFlags']}",
            highlight=False,
            markup=False,
        )
