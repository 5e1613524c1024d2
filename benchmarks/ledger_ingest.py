"""Ledger ingest throughput: usage intervals per second into the store (target: >= 100,000/s
into SQLite on 2 cores).

Seeded records in the twin's `usage_records()` shape (tenants, services, jobs, models, pools,
fractional GPUs, a third still running) are read with `from_records` (timed on its own), then
ingested in one transaction into a fresh SQLite file; then the same intervals are ingested
again (the idempotent replay: every key looked up, nothing written), then a third of them
closed (an update each). With `--db postgresql://...` the same runs go to PostgreSQL.

    python benchmarks/ledger_ingest.py [--intervals 200000] [--seed 7] [--db URL] [--write]
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from throughput import replace_section  # shared with the throughput benchmark

from gpupact.ledger import Ledger, from_records

DOC = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
SECTION = "ledger-ingest"  # "ledger-ingest-postgres" for a --db run: a section of its own
T0 = 1_793_491_200.0  # 2026-11-01T00:00:00Z


def records(n: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    tenants = [f"tenant-{i}" for i in range(20)]
    models = ["qwen-72b", "qwen-7b", "llama-70b", "mixtral-8x7b", None]
    out = []
    for i in range(n):
        tenant = rng.choice(tenants)
        service = rng.random() < 0.6
        start = T0 + rng.uniform(0, 29 * 86400)
        out.append(
            {
                "pod": f"pod-{i}",
                "namespace": tenant,
                "tenant": tenant,
                "service": f"svc-{rng.randrange(50)}" if service else None,
                "job": None if service else f"job-{rng.randrange(500)}",
                "model": rng.choice(models),
                "workloadClass": "online-infer" if service else "batch",
                "owner": f"{tenant}@example.com",
                "costCenter": f"CC-{rng.randrange(100)}",
                "pool": rng.choice(["gpu-inference", "gpu-batch", "gpu-train"]),
                "gpuModel": rng.choice(["h100-80g", "a100-80g", "l4"]),
                "gpus": rng.choice([1.0, 2.0, 4.0, 8.0, 0.25, 3 / 7]),
                "start": start,
                "end": None if i % 3 == 0 else start + rng.uniform(60, 86400),
                "restarts": rng.randrange(3),
            }
        )
    return out


def timed(fn) -> tuple[float, float, Any]:
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, result


def run(n: int, seed: int, db: str | None) -> list[tuple[str, int, float, float, str]]:
    data = records(n, seed)
    closing = [{**r, "end": r["start"] + 3600} for r in data if r["end"] is None]
    with tempfile.TemporaryDirectory() as tmp:
        target = db or str(Path(tmp) / "ledger.db")
        with Ledger.open(target) as ledger:
            wall, cpu, parsed = timed(lambda: list(from_records(data)))
            rows = [("read records (`from_records`)", n, wall, cpu, "validated Intervals")]
            closed = list(from_records(closing))
            for name, batch in (
                ("**first ingest into the store**", parsed),
                ("replay (idempotent)", parsed),
                ("close running", closed),
            ):
                wall, cpu, result = timed(lambda b=batch: ledger.ingest(b))
                counts = f"{result.inserted} new, {result.updated} updated, {result.unchanged} same"
                rows.append((name, len(batch), wall, cpu, counts))
            assert ledger.count() == n
    return rows


def machine() -> str:
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (
        f"{os.cpu_count()} CPUs, {platform.machine()}; Python {platform.python_version()}; "
        f"SQLite {__import__('sqlite3').sqlite_version}; load average at the end {load} "
        "(a shared machine: the CPU-time column is the steadier figure)"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--intervals", type=int, default=200_000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--db", default=None, help="default: a fresh SQLite file")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--write", action="store_true", help="rewrite docs/benchmarks.md")
    args = ap.parse_args()
    runs = [run(args.intervals, args.seed, args.db) for _ in range(args.repeat)]
    lines = [
        "| step | intervals | median intervals/s wall | intervals/s CPU | result |",
        "|---|---:|---:|---:|---|",
    ]
    for i, (name, count, _, _, counts) in enumerate(runs[0]):
        walls = sorted(r[i][2] for r in runs)
        cpus = sorted(r[i][3] for r in runs)
        wall, cpu = walls[len(walls) // 2], cpus[len(cpus) // 2]
        lines.append(
            f"| {name} | {count:,} | {count / wall:,.0f} | {count / cpu:,.0f} | {counts} |"
        )
    table = "\n".join(lines)
    print(table)
    if args.write:
        name = SECTION + ("-postgres" if args.db else "")
        begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
        store = "PostgreSQL 15 (local, a fresh schema)" if args.db else "SQLite (a fresh file, WAL)"
        command = "python benchmarks/ledger_ingest.py --write" + (
            f" --intervals {args.intervals} --db postgresql://..." if args.db else ""
        )
        section = (
            f"{begin}\n## Ledger ingest, {store.split(' ')[0]} (benchmarks/ledger_ingest.py)\n\n"
            f"Command: `{command}` (target: >= 100,000 intervals/s into SQLite on 2 cores)"
            f"\n\nMachine: {machine()}\n\n"
            f"Store: {store}; median of {args.repeat} runs, each a fresh store; each ingest step "
            "is one transaction of `Ledger.ingest(intervals)`; reading and validating the "
            "records is the first row (records -> store is both rows together)."
            + (
                " The CPU column counts this process only, not the database server's."
                if args.db
                else ""
            )
            + "\n\n"
            f"{table}\n{end}"
        )
        replace_section(DOC, begin, end, section + "\n")


if __name__ == "__main__":
    main()
