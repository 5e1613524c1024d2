"""Usage intervals from Slurm accounting: `sacct --parsable2` output, so Slurm jobs and
Kubernetes pods share one ledger and one budget.

    sacct --allusers --parsable2 --starttime 2026-11-01 --endtime 2026-12-01 \
      --format JobID,JobName,User,Account,Partition,AllocTRES,Submit,Start,End,State,Cluster

`--parsable2` separates fields with `|` (no trailing one) and prints a header line of field
names. One line per job allocation plus one per step (`1234.batch`, `1234.0`); steps run
inside the allocation, so only the allocation line is counted. GPUs come from AllocTRES
(`gres/gpu=8`, or the typed `gres/gpu:a100=8` alone; the type names the GPU model). Times are
the cluster's local time without a zone (`timezone` says which); `Unknown` means not yet
(a pending job has no Start, a running one no End). The account is the tenant and the cost
centre, the user the owner, the partition the pool.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo

from gpupact.errors import InputError
from gpupact.ledger.records import Interval, Wait

SOURCE = "slurm"
REQUIRED = ("JobID", "User", "Account", "Partition", "AllocTRES", "Start", "End", "State")
NOT_YET = ("Unknown", "None", "")


@dataclass(frozen=True)
class SlurmOptions:
    cluster: str = "slurm"  # used when the output has no Cluster column
    timezone: tzinfo = UTC  # sacct prints local times without a zone
    workload_class: str = "batch"


@dataclass
class SacctRead:
    intervals: list[Interval]
    waits: list[Wait]


def parse_alloc_tres(text: str) -> tuple[float, str | None]:
    """GPUs and GPU type from AllocTRES: `billing=16,cpu=16,gres/gpu:a100=4,gres/gpu=4,...`."""
    total: float | None = None
    typed: dict[str, float] = {}
    for item in filter(None, text.split(",")):
        name, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"expected name=value, got {item!r}")
        if name == "gres/gpu":
            total = float(int(value))
        elif name.startswith("gres/gpu:"):
            typed[name[len("gres/gpu:") :]] = float(int(value))
    model = next(iter(typed)) if len(typed) == 1 else None
    if total is None:
        total = sum(typed.values())
    return total, model


def _time(text: str, tz: tzinfo) -> float | None:
    if text in NOT_YET:
        return None
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=tz)
    return moment.timestamp()


def read_sacct(
    text: str,
    file: str = "sacct",
    options: SlurmOptions | None = None,
    observed_at: float | None = None,
) -> SacctRead:
    """Intervals (jobs that started, with GPUs) and waits (Submit to Start; a job still pending
    has waited until `observed_at`, when given) from sacct output. A bad line is an InputError
    naming the file, the line and the column."""
    opts = options or SlurmOptions()
    lines = text.splitlines()
    if not lines or not lines[0].strip():
        raise InputError("empty: expected `sacct --parsable2` output with its header", file=file)
    header = lines[0].rstrip("\n").split("|")
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise InputError(
            f"header lacks {', '.join(missing)} (run sacct --parsable2 --format "
            f"{','.join(REQUIRED)},Submit,JobName,Cluster)",
            file=file,
            line=1,
        )
    out = SacctRead([], [])
    for number, line in _rows(lines):
        values = line.split("|")
        if len(values) != len(header):
            raise InputError(
                f"{len(values)} fields, the header has {len(header)} (was it --parsable2?)",
                file=file,
                line=number,
            )
        row = dict(zip(header, values, strict=True))
        column = "JobID"
        try:
            if "." in row["JobID"]:
                continue  # a step of an allocation counted on its own line
            column = "AllocTRES"
            gpus, model = parse_alloc_tres(row["AllocTRES"])
            column = "Submit"
            submit = _time(row.get("Submit", ""), opts.timezone)
            column = "Start"
            start = _time(row["Start"], opts.timezone)
            column = "End"
            end = _time(row["End"], opts.timezone)
        except ValueError as err:
            raise InputError(str(err), file=file, line=number, path=(column,)) from None
        _add(out, row, gpus, model, (submit, start, end, observed_at), opts)
    return out


def _rows(lines: list[str]) -> Iterator[tuple[int, str]]:
    for index, line in enumerate(lines[1:], start=2):
        if line.strip():
            yield index, line


def _add(
    out: SacctRead,
    row: dict[str, str],
    gpus: float,
    model: str | None,
    times: tuple[float | None, float | None, float | None, float | None],
    opts: SlurmOptions,
) -> None:
    submit, start, end, observed_at = times
    cluster = row.get("Cluster") or opts.cluster
    key = f"{SOURCE}:{cluster}:{row['JobID']}"
    account, user = row["Account"] or None, row["User"] or None
    name = row.get("JobName") or row["JobID"]
    state = row["State"].split(" ")[0]  # "CANCELLED by 1234"
    if start is None:
        if submit is not None and observed_at is not None and state == "PENDING":
            waited = max(0.0, observed_at - submit)
            out.waits.append(
                Wait(
                    f"{key}:wait",
                    SOURCE,
                    opts.workload_class,
                    waited,
                    False,
                    name,
                    cluster,
                    account,
                    user,
                    observed_at,
                )
            )
        return
    if submit is not None:
        out.waits.append(
            Wait(
                f"{key}:wait",
                SOURCE,
                opts.workload_class,
                max(0.0, start - submit),
                True,
                name,
                cluster,
                account,
                user,
            )
        )
    if gpus <= 0:
        return
    out.intervals.append(
        Interval(
            key=key,
            source=SOURCE,
            pod=row["JobID"],
            namespace=cluster,
            gpus=gpus,
            start=start,
            end=max(end, start) if end is not None else None,
            tenant=account,
            job=name,
            workload_class=opts.workload_class,
            owner=user,
            cost_centre=account,
            pool=row["Partition"] or None,
            gpu_model=model,
            created=submit,
        )
    )
