"""The store on SQLite and a real PostgreSQL: idempotent, transactional, migrated."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from gpupact.errors import InputError
from gpupact.ledger import Capacity, Interval, Ledger, Wait, from_records
from gpupact.ledger.store import SCHEMA_VERSION, database_url, schema_version

T0 = 1_793_491_200.0  # 2026-11-01T00:00:00Z


def record(i: int, *, end: float | None = 3600.0, restarts: int = 0) -> dict:
    return {
        "pod": f"infer-{i}",
        "namespace": "search",
        "tenant": "search" if i % 2 else "ads",
        "service": "chat",
        "job": None,
        "model": "qwen-72b",
        "workloadClass": "online-infer",
        "owner": "ops@acme.example",
        "costCenter": "cc-42",
        "pool": "gpu-inference",
        "gpuModel": "h100-80g",
        "gpus": 2.0,
        "start": T0 + i,
        "end": None if end is None else T0 + i + end,
        "restarts": restarts,
    }


def test_ingest_stores_every_field(ledger: Ledger) -> None:
    result = ledger.ingest(from_records([record(1), record(2, end=None)]))
    assert (result.inserted, result.updated, result.unchanged) == (2, 0, 0)
    first, second = ledger.intervals()
    assert first == next(from_records([record(1)]))
    assert second.end is None and second.tenant == "ads" and second.gpus == 2.0


def test_replaying_the_same_events_counts_nothing_twice(ledger: Ledger) -> None:
    batch = [record(i) for i in range(50)]
    ledger.ingest(from_records(batch))
    again = ledger.ingest(from_records(batch + batch))  # replayed, and duplicated in one batch
    assert (again.received, again.inserted, again.updated) == (100, 0, 0)
    assert ledger.count() == 50


def test_a_later_observation_closes_an_interval_and_never_reopens_it(ledger: Ledger) -> None:
    ledger.ingest(from_records([record(7, end=None)]))
    closed = ledger.ingest(from_records([record(7, end=600.0, restarts=3)]))
    assert closed.updated == 1
    stale = ledger.ingest(from_records([record(7, end=None, restarts=1)]))  # an old snapshot
    assert stale.updated == 0
    (interval,) = ledger.intervals()
    assert interval.end == T0 + 7 + 600.0 and interval.restarts == 3


class Crash(RuntimeError):
    pass


def _crashing(n_good: int) -> Iterator[Interval]:
    yield from from_records(record(i) for i in range(n_good))
    raise Crash("the reader died mid-batch")


def test_a_crash_mid_ingest_leaves_no_partial_batch(ledger: Ledger) -> None:
    ledger.ingest(from_records([record(0)]))
    with pytest.raises(Crash):
        ledger.ingest(_crashing(7), batch=3)  # two chunks written inside the transaction
    assert ledger.count() == 1  # only what was there before
    with pytest.raises(InputError, match=r"usage record 2: gpus"):
        ledger.ingest(from_records([record(10), record(11), {**record(12), "gpus": "two"}]))
    assert ledger.count() == 1


def test_close_missing_ends_what_a_full_snapshot_no_longer_shows(ledger: Ledger) -> None:
    ledger.ingest(
        [
            Interval("kubernetes:a", "kubernetes", "a", "ns", 1.0, T0),
            Interval("kubernetes:b", "kubernetes", "b", "ns", 1.0, T0),
            Interval("slurm:c:1", "slurm", "1", "c", 4.0, T0),
        ]
    )
    ledger.ingest_capacity([Capacity("kubernetes:node:n1", "n1", "gpu-train", "a100", 8, T0)])
    assert ledger.close_missing("kubernetes", ["kubernetes:a"], at=T0 + 60) == 2
    ends = {i.key: i.end for i in ledger.intervals()}
    assert ends == {"kubernetes:a": None, "kubernetes:b": T0 + 60, "slurm:c:1": None}
    assert ledger.capacity()[0].end == T0 + 60
    assert ledger.close_missing("kubernetes", ["kubernetes:a"], at=T0 + 120) == 0


def test_waits_grow_until_started_then_stay(ledger: Ledger) -> None:
    ledger.ingest_waits([Wait("k:w", "kubernetes", "batch", 60.0, False, "eval-1")])
    ledger.ingest_waits([Wait("k:w", "kubernetes", "batch", 600.0, False, "eval-1")])
    assert ledger.waits()[0].seconds == 600.0
    ledger.ingest_waits([Wait("k:w", "kubernetes", "batch", 900.0, True, "eval-1")])
    result = ledger.ingest_waits([Wait("k:w", "kubernetes", "batch", 5.0, False, "eval-1")])
    assert result.updated == 0
    (wait,) = ledger.waits()
    assert wait.started and wait.seconds == 900.0


def test_window_query_returns_overlapping_intervals_only(ledger: Ledger) -> None:
    ledger.ingest(from_records([record(0, end=100.0), record(1000, end=None)]))
    assert [i.pod for i in ledger.intervals(T0 + 200, T0 + 5000)] == ["infer-1000"]
    assert [i.pod for i in ledger.intervals(T0, T0 + 50)] == ["infer-0"]
    assert [i.pod for i in ledger.intervals(tenant="search")] == []
    assert [i.pod for i in ledger.intervals(tenant="ads")] == ["infer-0", "infer-1000"]


def test_profiles_are_stored_per_tenant(ledger: Ledger) -> None:
    ledger.add_profile("ads", "qwen-72b", T0, {"inputTokens": [{"le": 512, "count": 3}]})
    ledger.add_profile("search", "qwen-72b", T0, {"inputTokens": []})
    (mine,) = ledger.profiles(tenant="ads")
    assert mine["inputTokens"] == [{"le": 512, "count": 3}] and mine["model"] == "qwen-72b"


def test_migrations_are_recorded_and_reopening_changes_nothing(db: str) -> None:
    with Ledger.open(db) as first:
        first.ingest(from_records([record(1)]))
    with Ledger.open(db) as second:
        assert second.migrate() == SCHEMA_VERSION
        assert second.count() == 1
        with second.engine.connect() as conn:
            versions = conn.execute(sa.select(schema_version.c.version)).scalars().all()
        assert versions == [SCHEMA_VERSION]


def test_a_newer_schema_is_refused(tmp_path) -> None:
    path = str(tmp_path / "l.db")
    with Ledger.open(path) as store, store.engine.begin() as conn:
        conn.execute(schema_version.update().values(version=SCHEMA_VERSION + 1))
    with pytest.raises(InputError, match="newer than this gpupact"):
        Ledger.open(path)


def test_unreachable_postgres_is_one_line_without_the_password() -> None:
    with pytest.raises(InputError) as err:
        Ledger.open("postgresql://u:secret@127.0.0.1:1/none?connect_timeout=2")
    assert "secret" not in str(err.value) and "cannot open the ledger" in str(err.value)


def test_database_url_forms() -> None:
    assert database_url("l.db") == "sqlite:///l.db"
    assert database_url("postgresql://u@h/d") == "postgresql+psycopg://u@h/d"
    assert database_url("sqlite:////tmp/x.db") == "sqlite:////tmp/x.db"


def test_gpu_hours_summed_by_the_database_match_the_python_count(ledger: Ledger) -> None:
    from gpupact.ledger import allocated, month_window

    nov = month_window("2026-11")
    items = [*from_records([record(i, end=None if i % 3 == 0 else 7200.0) for i in range(30)])]
    items.append(
        Interval(
            "early",
            "twin",
            "early",
            "ns",
            3.0,
            nov.start - 7200,
            nov.start + 3600,
            tenant="ads",
            model="m",
        )
    )
    ledger.ingest(items)
    now = T0 + 5 * 3600
    in_db = ledger.gpu_hours(("tenant", "model"), nov.start, nov.end, now)
    in_python = {
        (u.group["tenant"], u.group["model"]): u.gpu_hours
        for u in allocated(items, nov, now, ("tenant", "model"))
    }
    assert in_db.keys() == in_python.keys()
    for key, hours in in_python.items():
        assert in_db[key] == pytest.approx(hours)


def test_a_migration_that_fails_midway_leaves_no_table(db: str, monkeypatch) -> None:
    """Migrations are one transaction on SQLite too (pysqlite would run the DDL outside one)."""
    from gpupact.ledger import store as store_module

    def half_done(conn: sa.Connection) -> None:
        store_module._v1(conn)
        raise Crash("killed after CREATE TABLE")

    monkeypatch.setattr(store_module, "MIGRATIONS", ((1, half_done),))
    with pytest.raises(Crash):
        Ledger.open(db)
    engine = sa.create_engine(database_url(db))
    try:
        assert sa.inspect(engine).get_table_names() == []
    finally:
        engine.dispose()
    monkeypatch.undo()
    with Ledger.open(db) as store:  # the next open applies the whole migration
        assert store.migrate() == SCHEMA_VERSION and store.count() == 0


def test_two_ingests_of_the_same_keys_at_once_both_succeed(db: str) -> None:
    """The key lookup and the insert after it are one locked step: a second writer cannot
    insert a key between them (it would fail on the primary key)."""
    import threading

    batch = [record(i) for i in range(20_000)]
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []
    Ledger.open(db).close()  # migrated once, so both threads start at the upsert

    def ingest() -> None:
        try:
            with Ledger.open(db) as store:
                barrier.wait()
                store.ingest(from_records(batch))
        except BaseException as err:  # reported below, with the thread's traceback gone
            errors.append(err)

    threads = [threading.Thread(target=ingest) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with Ledger.open(db) as store:
        assert store.count() == len(batch)
