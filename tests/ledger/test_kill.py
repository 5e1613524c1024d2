"""SIGKILL a real `gpupact ledger ingest` at seeded moments, run it again: the store ends as one
clean ingest leaves it (same intervals, GPU-hours and counts), on SQLite and PostgreSQL.

Half the kills wait until the ingest holds the store's writer lock (seen from outside: SQLite
refuses a second `BEGIN IMMEDIATE`, PostgreSQL lists the advisory lock in pg_locks), then a
seeded fraction of the time a clean run writes (lock taken to last commit): inside it. The
other half land at a seeded fraction of the time a clean run takes to its last commit (start-up,
reading the input, the migration, the upserts, between two transactions). After every kill each
table holds either nothing of the run or all of it: a transaction is committed whole or not at
all. The input is large enough (JOBS) that the first transaction lasts a good part of a second.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa

from gpupact.ledger import Ledger, month_window
from gpupact.ledger.store import database_url

SEED = 20
KILLS = 6
JOBS = 20_000  # large enough that the upsert holds the writer lock for most of a run
APP = "gpupact-kill-test"  # application_name of the ingest's PostgreSQL sessions
T0 = datetime(2026, 11, 1, tzinfo=UTC)
NOW = "2026-11-30T00:00:00Z"
POLL = 0.002  # seconds between looks at the writer lock


def write_records(path: Path, n: int) -> None:
    """JSON lines of `n` pod runs; every fourth is seen twice, open and later closed (more
    than one store batch apart), so the run also merges observations of one key."""
    rng = random.Random(SEED)
    lines, closing = [], []
    for i in range(n):
        start = T0.timestamp() + i * 37.0
        record = {
            "pod": f"infer-{i}",
            "namespace": f"ns-{i % 13}",
            "tenant": f"tenant-{i % 7}",
            "model": f"model-{i % 3}",
            "pool": "gpu-inference",
            "gpuModel": "h100-80g",
            "gpus": float(rng.choice((1, 2, 4, 8))),
            "start": start,
            "end": start + rng.uniform(60, 86_400),
            "restarts": 0,
        }
        if i % 4 == 0:
            closing.append({**record, "restarts": 1})
            record = {**record, "end": None}
        lines.append(record)
    path.write_text("".join(json.dumps(r) + "\n" for r in lines + closing), encoding="utf-8")


def write_sacct(path: Path, n: int) -> None:
    """`sacct --parsable2` of `n` jobs, each with a step line; some still run, some pend
    (waits only): the ingest commits intervals and waits in two transactions."""
    rng = random.Random(SEED)
    fmt = "%Y-%m-%dT%H:%M:%S"
    rows = ["JobID|JobName|User|Account|Partition|AllocTRES|Submit|Start|End|State|Cluster"]
    for i in range(n):
        submit = T0 + timedelta(seconds=i * 41)
        start = submit + timedelta(seconds=rng.randint(0, 3_600))
        end = start + timedelta(seconds=rng.randint(60, 50_000))
        gpus = rng.choice((1, 2, 8))
        tres = f"cpu=8,gres/gpu:a100={gpus},gres/gpu={gpus},node=1"
        times, state = (start.strftime(fmt), end.strftime(fmt)), "COMPLETED"
        if i % 10 == 3:
            times, state = (start.strftime(fmt), "Unknown"), "RUNNING"
        elif i % 10 == 7:
            times, state, tres = ("Unknown", "Unknown"), "PENDING", ""
        head = f"{i}|job-{i}|user-{i % 5}|acct-{i % 4}|gpu-train|{tres}|{submit.strftime(fmt)}"
        rows.append(f"{head}|{times[0]}|{times[1]}|{state}|hpc")
        rows.append(
            f"{i}.0|step|||gpu-train|{tres}|{submit.strftime(fmt)}|{times[0]}|x|{state}|hpc"
        )
    # a step's End is never parsed (steps are skipped), so "x" there is harmless filler
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")


def ingest(db: str, source: list[str]) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "gpupact", "ledger", "ingest", "--db", db, *source]
    return subprocess.Popen(
        [*command, "--now", NOW],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=os.environ.copy(),  # PYTHONPATH: the tree under test
    )


def tagged(db: str) -> str:
    """The store URL naming its sessions, so pg_stat_activity tells the ingest's apart."""
    if "://" not in db:
        return db
    return f"{db}{'&' if '?' in db else '?'}application_name={APP}"


def sqlite_ready(path: str) -> bool:
    """The file is in WAL mode (header byte 18 is 2), as the ledger's first connection sets it
    before any table. Until then a reader's shared lock would starve that switch (rollback
    journal mode: readers block the writer), so nothing looks at the file before."""
    try:
        with open(path, "rb") as file:
            return file.read(19)[18:19] == b"\x02"
    except FileNotFoundError:
        return False


class WriterLock:
    """Is an ingest inside a write transaction of `db` right now? Looked at from outside."""

    def __init__(self, db: str) -> None:
        self.db = db
        self.pg = sa.create_engine(database_url(db)) if "://" in db else None

    def held(self) -> bool:
        if self.pg is None:
            if not sqlite_ready(self.db):
                return False
            probe = sqlite3.connect(self.db, timeout=0, isolation_level=None)
            try:
                probe.execute("BEGIN IMMEDIATE")
                probe.execute("ROLLBACK")
                return False
            except sqlite3.OperationalError as err:
                if "locked" not in str(err):
                    raise
                return True
            finally:
                probe.close()
        with self.pg.connect() as conn:
            sql = (
                "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
                "WHERE l.locktype = 'advisory' AND l.granted AND a.application_name = %s"
            )
            return bool(conn.exec_driver_sql(sql, (APP,)).scalar())

    def close(self) -> None:
        if self.pg is not None:
            self.pg.dispose()


@dataclass(frozen=True)
class Timing:
    committed: float  # spawn to the last commit (every table holds the run's rows)
    writing: float  # the writer lock taken (before the first rows appeared) to the last commit


def clean_run(db: str, source: list[str], lock: WriterLock) -> tuple[Timing, dict[str, int]]:
    """Ingest into an empty store, timing its transactions from outside; the rows it left.
    (The writer lock alone does not end at commit: SQLite's checkpoint at close holds it.)"""
    began = time.monotonic()
    proc = ingest(tagged(db), source)
    held, taken, first = False, None, None
    seen: list[tuple[float, dict[str, int]]] = []
    while proc.poll() is None:
        now = time.monotonic() - began
        was, held = held, lock.held()
        if held and not was:
            taken = now
        counts = table_counts(db)
        if first is None and counts["intervals"]:
            first = (taken if taken is not None else now, now)
        seen.append((now, counts))
        time.sleep(POLL)
    assert proc.returncode == 0, proc.stderr.read().decode() if proc.stderr else ""
    full = table_counts(db)
    committed = next((t for t, counts in seen if counts == full), None)
    assert first is not None and committed is not None, "the ingest ran too fast to see"
    return Timing(committed, committed - first[0]), full


def killed_run(db: str, source: list[str], lock: WriterLock, plan: tuple[str, float]) -> bool:
    """One ingest SIGKILLed as `plan` says; whether the writer lock was held at the kill."""
    mode, delay = plan
    proc = ingest(tagged(db), source)
    began = time.monotonic()
    if mode == "in-transaction":
        while not lock.held() and proc.poll() is None:
            time.sleep(POLL)
        began = time.monotonic()
    while time.monotonic() - began < delay and proc.poll() is None:
        time.sleep(POLL)
    held = lock.held()
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    return held and proc.returncode == -signal.SIGKILL


def table_counts(db: str) -> dict[str, int]:
    """Rows per table, read without migrating (a run killed before its schema left none)."""
    if "://" not in db and not sqlite_ready(db):
        return {"intervals": 0, "waits": 0}
    engine = sa.create_engine(database_url(db))
    try:
        with engine.connect() as conn:
            tables = sa.inspect(conn).get_table_names()
            return {
                t: conn.exec_driver_sql(f"SELECT count(*) FROM {t}").scalar() if t in tables else 0
                for t in ("intervals", "waits")
            }
    finally:
        engine.dispose()


def final_state(db: str) -> dict[str, object]:
    window = month_window("2026-11")
    at = datetime.fromisoformat(NOW).timestamp()
    with Ledger.open(db, create=False) as store:
        return {
            "intervals": store.intervals(),
            "waits": store.waits(),
            "count": store.count(),
            "gpu_hours": store.gpu_hours(("tenant", "model"), window.start, window.end, at),
        }


def kill_plans() -> list[tuple[str, float]]:
    """(mode, fraction of its span): the kills inside the transaction first, while the store
    is still empty (a run that got through turns the rest into replays), early in it (a run
    under load is no slower than the clean one was); then kills anywhere up to the commit."""
    rng = random.Random(SEED)
    half = KILLS // 2
    inside = [("in-transaction", rng.uniform(0.0, 0.5)) for _ in range(half)]
    anywhere = [("from-start", rng.uniform(0.05, 0.95)) for _ in range(KILLS - half)]
    return inside + anywhere


INPUTS: dict[str, tuple[Callable[[Path, int], None], str]] = {
    "records": (write_records, "--records"),
    "sacct": (write_sacct, "--sacct"),
}


@pytest.mark.parametrize("kind", list(INPUTS))
def test_kill_9_then_ingest_again_equals_one_clean_ingest(
    kind: str, new_db: Callable[[], str], tmp_path: Path
) -> None:
    write, flag = INPUTS[kind]
    data = tmp_path / f"input.{kind}"
    write(data, JOBS)
    source = [flag, str(data)]

    reference = new_db()
    lock = WriterLock(reference)
    timing, full = clean_run(reference, source, lock)
    lock.close()
    clean = final_state(reference)
    assert clean["count"] == full["intervals"] > 0

    store = new_db()
    lock = WriterLock(store)
    inside = 0
    try:
        for mode, fraction in kill_plans():
            span = timing.committed if mode == "from-start" else timing.writing
            held = killed_run(store, source, lock, (mode, fraction * span))
            counts = table_counts(store)
            # each transaction is whole or absent; waits are written after intervals
            for table, n in counts.items():
                assert n in (0, full[table]), (mode, fraction, counts)
            assert counts["waits"] == 0 or counts["intervals"] == full["intervals"]
            inside += held and counts != full  # killed holding the lock, before the commit
    finally:
        lock.close()
    assert inside >= 1, f"no kill landed inside a write transaction ({timing})"

    done = subprocess.run(
        [sys.executable, "-m", "gpupact", "ledger", "ingest", "--db", store, *source, "--now", NOW],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert final_state(store) == clean
    assert table_counts(store) == full
