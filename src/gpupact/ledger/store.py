"""The ledger's store: SQLite by default, PostgreSQL with a `postgresql://` URL (SQLAlchemy Core).

Ingestion is idempotent and transactional. Every row has a stable key; ingesting a row whose key
is stored merges the two (an interval may be closed or gain restarts, never reopened), so
replaying the same events counts nothing twice. One `ingest_*` call is one transaction: an
error anywhere in the batch (a bad record, a crash of the reader) rolls back every row of it.
A process killed at any moment (SIGKILL, power cut) leaves each call committed or absent, so
running the same ingest again ends in the state one clean run gives (tests/ledger/test_kill.py).

Every write transaction takes the store's one writer lock first (SQLite `BEGIN IMMEDIATE`, a
PostgreSQL transaction-level advisory lock): the key lookup and the upsert that follows see no
other writer in between, so two ingests at once (the gateway's refresh and a CLI run) cannot
both insert one key. pysqlite on its own begins a transaction only at the first INSERT: the
lookups before it, and the migrations' CREATE TABLEs, would otherwise run outside any.

The schema is versioned: `schema_version` holds the applied migration, `MIGRATIONS` the steps;
opening a store applies the missing ones in one transaction.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields
from itertools import islice
from operator import attrgetter
from pathlib import Path
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from gpupact.errors import InputError
from gpupact.ledger.kubernetes import Capacity
from gpupact.ledger.records import Interval, Wait

# pg_advisory_xact_lock key of the ledger's writer lock (any constant; "gpup" in ASCII): one
# writer per database at a time, released at commit, rollback or when the connection dies
_PG_WRITER_LOCK = 0x67707570
BATCH = 5000  # rows looked up and written per statement inside one transaction
_KEYS_PER_LOOKUP = 900  # bound parameters of one IN (...) lookup

metadata = sa.MetaData()

schema_version = sa.Table(
    "schema_version", metadata, sa.Column("version", sa.Integer, nullable=False)
)

intervals = sa.Table(
    "intervals",
    metadata,
    sa.Column("key", sa.String(512), primary_key=True),
    sa.Column("source", sa.String(32), nullable=False),
    sa.Column("pod", sa.String(253), nullable=False),
    sa.Column("namespace", sa.String(253), nullable=False),
    sa.Column("tenant", sa.String(253)),
    sa.Column("service", sa.String(253)),
    sa.Column("job", sa.String(253)),
    sa.Column("model", sa.String(253)),
    sa.Column("workload_class", sa.String(253)),
    sa.Column("owner", sa.String(512)),
    sa.Column("cost_centre", sa.String(512)),
    sa.Column("pool", sa.String(253)),
    sa.Column("gpu_model", sa.String(253)),
    sa.Column("gpus", sa.Float, nullable=False),
    sa.Column("start_time", sa.Float, nullable=False),
    sa.Column("end_time", sa.Float),
    sa.Column("restarts", sa.Integer, nullable=False),
    sa.Column("created", sa.Float),
    sa.Index("ix_intervals_time", "start_time", "end_time"),
)

waits = sa.Table(
    "waits",
    metadata,
    sa.Column("key", sa.String(512), primary_key=True),
    sa.Column("source", sa.String(32), nullable=False),
    sa.Column("workload_class", sa.String(253)),
    sa.Column("seconds", sa.Float, nullable=False),
    sa.Column("started", sa.Boolean, nullable=False),
    sa.Column("name", sa.String(253)),
    sa.Column("namespace", sa.String(253)),
    sa.Column("tenant", sa.String(253)),
    sa.Column("owner", sa.String(512)),
    sa.Column("observed", sa.Float),
)

capacity = sa.Table(
    "capacity",
    metadata,
    sa.Column("key", sa.String(512), primary_key=True),
    sa.Column("node", sa.String(253), nullable=False),
    sa.Column("pool", sa.String(253)),
    sa.Column("gpu_model", sa.String(253)),
    sa.Column("gpus", sa.Float, nullable=False),
    sa.Column("start_time", sa.Float, nullable=False),
    sa.Column("end_time", sa.Float),
)

utilisation = sa.Table(
    "utilisation",
    metadata,
    sa.Column("namespace", sa.String(253), primary_key=True),
    sa.Column("pod", sa.String(253), primary_key=True),
    sa.Column("period_start", sa.Float, primary_key=True),
    sa.Column("period_end", sa.Float, primary_key=True),
    sa.Column("busy_gpu_hours", sa.Float, nullable=False),
    sa.Column("metric", sa.String(64), nullable=False),
)

profiles = sa.Table(
    "profiles",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("tenant", sa.String(253), nullable=False),
    sa.Column("model", sa.String(253), nullable=False),
    sa.Column("received", sa.Float, nullable=False),
    sa.Column("body", sa.Text, nullable=False),
)


def _v1(conn: Connection) -> None:
    metadata.create_all(conn, tables=[intervals, waits, capacity, utilisation, profiles])


# (version, step): a new schema change is a new entry, never an edit of an applied one
MIGRATIONS: tuple[tuple[int, Callable[[Connection], None]], ...] = ((1, _v1),)
SCHEMA_VERSION = MIGRATIONS[-1][0]


@dataclass(frozen=True)
class IngestResult:
    received: int = 0
    inserted: int = 0
    updated: int = 0

    @property
    def unchanged(self) -> int:
        return self.received - self.inserted - self.updated

    def __add__(self, other: IngestResult) -> IngestResult:
        return IngestResult(
            self.received + other.received,
            self.inserted + other.inserted,
            self.updated + other.updated,
        )


def database_url(db: str) -> str:
    """`--db` as an SQLAlchemy URL: a URL as given (postgresql:// uses psycopg 3), anything
    else a SQLite file path."""
    if db.startswith(("postgresql://", "postgres://")):
        return "postgresql+psycopg://" + db.split("://", 1)[1]
    if "://" in db:
        return db
    return f"sqlite:///{Path(db)}"


def _on_sqlite_connect(dbapi_conn: Any, _record: Any) -> None:
    cursor = dbapi_conn.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")  # readers (the API) do not block the writer
    cursor.execute("PRAGMA synchronous=NORMAL")  # durable at checkpoints, consistent always
    cursor.execute("PRAGMA cache_size=-65536")  # 64 MiB of pages: a large ingest stays in cache
    cursor.close()


T = TypeVar("T")


def _batches(items: Iterable[T], size: int) -> Iterator[list[T]]:
    it = iter(items)
    while chunk := list(islice(it, size)):
        yield chunk


_INTERVAL_COLUMNS = {
    "start": "start_time",
    "end": "end_time",
}


_INTERVAL_FIELDS = tuple(f.name for f in fields(Interval))
_interval_values = attrgetter(*_INTERVAL_FIELDS)


def _mark(conn: Connection) -> str:
    mark = {"qmark": "?", "format": "%s", "pyformat": "%s"}.get(conn.dialect.paramstyle)
    if mark is None:
        raise NotImplementedError(f"parameter style {conn.dialect.paramstyle}")
    return mark


def _insert_sql(conn: Connection, table: sa.Table, columns: Sequence[str]) -> str:
    """A plain INSERT in the driver's own parameter style: on SQLite the rows go to the
    DB-API's executemany as tuples (SQLAlchemy's per-row parameter processing would cost
    more than SQLite's insert itself)."""
    quote = conn.dialect.identifier_preparer.quote
    names = ", ".join(quote(c) for c in columns)
    marks = ", ".join([_mark(conn)] * len(columns))
    return f"INSERT INTO {quote(table.name)} ({names}) VALUES ({marks})"


def _stored_ends(conn: Connection, keys: Sequence[str]) -> dict[str, tuple[float | None, int]]:
    """(end, restarts) of the stored intervals among `keys`, by plain driver SQL (SQLAlchemy
    compiling an `IN (...)` of hundreds of keys per chunk costs more than the lookup).
    PostgreSQL gets one array parameter (`= ANY(%s)`): a long `IN` list of parameters turns
    into a slow generic plan once the driver prepares the statement."""
    out: dict[str, tuple[float | None, int]] = {}
    quote = conn.dialect.identifier_preparer.quote
    head = f"SELECT {quote('key')}, end_time, restarts FROM {quote(intervals.name)} WHERE "
    postgres = conn.dialect.name == "postgresql"
    mark = _mark(conn)
    for start in range(0, len(keys), _KEYS_PER_LOOKUP):
        part = list(keys[start : start + _KEYS_PER_LOOKUP])
        if postgres:
            rows = conn.exec_driver_sql(head + f"{quote('key')} = ANY({mark})", (part,))
        else:
            sql = head + f"{quote('key')} IN (" + ", ".join([mark] * len(part)) + ")"
            rows = conn.exec_driver_sql(sql, tuple(part))
        for key, end, restarts in rows:
            out[key] = (end, restarts)
    return out


def _interval(row: Any) -> Interval:
    m = row._mapping
    return Interval(**{f.name: m[_INTERVAL_COLUMNS.get(f.name, f.name)] for f in fields(Interval)})


class Ledger:
    """One store. `Ledger.open(db)` connects and migrates; use as a context manager."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @classmethod
    def open(cls, db: str, *, create: bool = True) -> Ledger:
        """Connect and migrate. `create=False` (reading commands): a SQLite file that does
        not exist is bad input, not a new empty ledger."""
        url = database_url(db)
        if not create and "://" not in db and not Path(db).is_file():
            if Path(db).exists():  # a directory, a FIFO, a device: not missing
                raise InputError("not a regular file, expected a ledger (SQLite)", file=db)
            raise InputError("no such ledger file (ingest into it first)", file=db)
        try:
            engine = sa.create_engine(url)
        except ImportError as err:
            if url.startswith("postgresql+psycopg"):  # the driver is the `postgres` extra
                raise InputError(
                    f"--db {_shown(db)}: PostgreSQL needs the postgres extra: "
                    f"pip install 'gpupact[postgres]'"
                ) from None
            raise InputError(f"--db {_shown(db)}: {err}") from None
        except sa.exc.ArgumentError as err:
            raise InputError(f"--db {_shown(db)}: {err}") from None
        if engine.dialect.name == "sqlite":
            sa.event.listen(engine, "connect", _on_sqlite_connect)
        ledger = cls(engine)
        try:
            ledger.migrate()
        except sa.exc.OperationalError as err:
            engine.dispose()
            detail = " ".join(str(err.orig).split()) if err.orig else str(err)
            raise InputError(f"--db {_shown(db)}: cannot open the ledger: {detail}") from None
        return ledger

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _writing(self) -> Iterator[Connection]:
        """One write transaction holding the writer lock from its first statement on (see the
        module docstring); committed on success, rolled back on any error."""
        with self.engine.begin() as conn:
            if conn.dialect.name == "sqlite":
                # pysqlite leaves BEGIN to us when one is issued: it then neither opens a
                # second one nor commits before DDL, and commit()/rollback() end this one
                conn.exec_driver_sql("BEGIN IMMEDIATE")
            elif conn.dialect.name == "postgresql":
                conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_PG_WRITER_LOCK})")
            yield conn

    # --- schema ---------------------------------------------------------------------------

    def migrate(self) -> int:
        """Apply the missing migrations in one transaction; the version now in place. A
        store already current is only read (a report beside a running ingest, a read-only
        file): the writer lock is taken when there is something to apply."""
        with self.engine.connect() as conn:
            current = _applied_version(conn)
        if current < SCHEMA_VERSION:
            with self._writing() as conn:
                schema_version.create(conn, checkfirst=True)
                current = _applied_version(conn)  # another process may have migrated meanwhile
                for version, step in MIGRATIONS:
                    if version > current:
                        step(conn)
                        conn.execute(schema_version.delete())
                        conn.execute(schema_version.insert().values(version=version))
                        current = version
        if current > SCHEMA_VERSION:
            raise InputError(
                f"the ledger's schema is version {current}, newer than this gpupact "
                f"({SCHEMA_VERSION}): upgrade gpupact"
            )
        return current

    # --- ingest ---------------------------------------------------------------------------

    def ingest(self, items: Iterable[Interval], batch: int = BATCH) -> IngestResult:
        """Upsert intervals by key in one transaction (see the module docstring)."""
        result = IngestResult()
        with self._writing() as conn:
            for chunk in _batches(items, batch):
                result += _upsert_intervals(conn, chunk)
        return result

    def ingest_waits(self, items: Iterable[Wait]) -> IngestResult:
        return self._upsert_simple(waits, items, _wait_row, _merge_wait)

    def ingest_capacity(self, items: Iterable[Capacity]) -> IngestResult:
        return self._upsert_simple(capacity, items, _capacity_row, _merge_end)

    def close_missing(self, source: str, seen: Iterable[str], at: float) -> int:
        """Close the open intervals and capacity of `source` whose key is not in `seen` (the
        pod or node is gone from a full snapshot taken at `at`); how many were closed."""
        keep = set(seen)
        closed = 0
        with self._writing() as conn:
            for table in (intervals, capacity):
                stmt = sa.select(table.c.key, table.c.start_time).where(
                    table.c.end_time.is_(None), table.c.key.like(f"{source}:%")
                )
                gone = [(k, s) for k, s in conn.execute(stmt) if k not in keep]
                for key, start in gone:
                    conn.execute(
                        table.update().where(table.c.key == key).values(end_time=max(at, start))
                    )
                closed += len(gone)
        return closed

    def _upsert_simple(
        self,
        table: sa.Table,
        items: Iterable[Any],
        to_row: Callable[[Any], dict[str, Any]],
        merge: Callable[[dict[str, Any], dict[str, Any]], dict[str, Any] | None],
    ) -> IngestResult:
        result = IngestResult()
        with self._writing() as conn:
            for chunk in _batches(items, BATCH):
                rows = {}
                for item in chunk:
                    row = to_row(item)
                    prior = rows.get(row["key"])
                    rows[row["key"]] = row if prior is None else merge(prior, row) or prior
                stored = _lookup(conn, table, list(rows), list(table.c))
                new = [r for k, r in rows.items() if k not in stored]
                changed = []
                for key, row in rows.items():
                    if key in stored:
                        merged = merge(dict(stored[key]), row)
                        if merged is not None:
                            changed.append(merged)
                if new:
                    conn.execute(table.insert(), new)
                for row in changed:
                    conn.execute(table.update().where(table.c.key == row["key"]).values(**row))
                result += IngestResult(len(chunk), len(new), len(changed))
        return result

    def add_utilisation(self, rows: Iterable[dict[str, Any]]) -> int:
        """Busy GPU-hours per pod and period (DCGM via Prometheus); a period read again
        replaces the earlier reading."""
        n = 0
        with self._writing() as conn:
            for row in rows:
                conn.execute(
                    utilisation.delete().where(
                        utilisation.c.namespace == row["namespace"],
                        utilisation.c.pod == row["pod"],
                        utilisation.c.period_start == row["period_start"],
                        utilisation.c.period_end == row["period_end"],
                    )
                )
                conn.execute(utilisation.insert().values(**row))
                n += 1
        return n

    def add_profile(self, tenant: str, model: str, received: float, body: dict[str, Any]) -> int:
        with self._writing() as conn:
            res = conn.execute(
                profiles.insert().values(
                    tenant=tenant, model=model, received=received, body=json.dumps(body)
                )
            )
            return int(res.inserted_primary_key[0])

    # --- read -----------------------------------------------------------------------------

    def intervals(
        self, start: float | None = None, end: float | None = None, tenant: str | None = None
    ) -> list[Interval]:
        """Intervals overlapping [start, end) (all when not given), oldest first."""
        stmt = sa.select(intervals)
        if end is not None:
            stmt = stmt.where(intervals.c.start_time < end)
        if start is not None:
            stmt = stmt.where(sa.or_(intervals.c.end_time.is_(None), intervals.c.end_time > start))
        if tenant is not None:
            stmt = stmt.where(intervals.c.tenant == tenant)
        stmt = stmt.order_by(intervals.c.start_time, intervals.c.key)
        with self.engine.connect() as conn:
            return [_interval(r) for r in conn.execute(stmt)]

    def gpu_hours(
        self, by: Sequence[str], start: float, end: float, now: float
    ) -> dict[tuple[Any, ...], float]:
        """GPU-hours per group inside [start, end), summed by the database (running intervals
        count up to `now`): what a gateway refresh reads without loading every interval."""
        c = intervals.c
        stop = sa.func.coalesce(c.end_time, now)
        clipped_end = sa.case((stop < end, stop), else_=end)
        clipped_start = sa.case((c.start_time > start, c.start_time), else_=start)
        seconds = clipped_end - clipped_start
        cols = [c[name] for name in by]
        stmt = (
            sa.select(*cols, sa.func.sum(c.gpus * seconds) / 3600.0)
            .where(c.start_time < end, sa.or_(c.end_time.is_(None), c.end_time > start))
            .where(seconds > 0)
            .group_by(*cols)
        )
        with self.engine.connect() as conn:
            return {tuple(row[:-1]): float(row[-1] or 0.0) for row in conn.execute(stmt)}

    def count(self, table: str = "intervals") -> int:
        with self.engine.connect() as conn:
            return int(
                conn.execute(
                    sa.select(sa.func.count()).select_from(metadata.tables[table])
                ).scalar()
                or 0
            )

    def waits(self) -> list[Wait]:
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(waits).order_by(waits.c.key))
            return [Wait(**dict(r._mapping)) for r in rows]

    def capacity(self, start: float | None = None, end: float | None = None) -> list[Capacity]:
        stmt = sa.select(capacity)
        if end is not None:
            stmt = stmt.where(capacity.c.start_time < end)
        if start is not None:
            stmt = stmt.where(sa.or_(capacity.c.end_time.is_(None), capacity.c.end_time > start))
        with self.engine.connect() as conn:
            return [
                Capacity(r.key, r.node, r.pool, r.gpu_model, r.gpus, r.start_time, r.end_time)
                for r in conn.execute(stmt.order_by(capacity.c.key))
            ]

    def utilisation(self, start: float, end: float) -> dict[tuple[str, str], float]:
        """Busy GPU-hours per (namespace, pod) from periods inside [start, end)."""
        stmt = (
            sa.select(
                utilisation.c.namespace,
                utilisation.c.pod,
                sa.func.sum(utilisation.c.busy_gpu_hours),
            )
            .where(utilisation.c.period_start >= start, utilisation.c.period_end <= end)
            .group_by(utilisation.c.namespace, utilisation.c.pod)
        )
        with self.engine.connect() as conn:
            return {(ns, pod): float(h) for ns, pod, h in conn.execute(stmt)}

    def profiles(self, tenant: str | None = None, model: str | None = None) -> list[dict[str, Any]]:
        stmt = sa.select(profiles).order_by(profiles.c.id)
        if tenant is not None:
            stmt = stmt.where(profiles.c.tenant == tenant)
        if model is not None:
            stmt = stmt.where(profiles.c.model == model)
        with self.engine.connect() as conn:
            return [
                {
                    "id": r.id,
                    "tenant": r.tenant,
                    "model": r.model,
                    "received": r.received,
                    **json.loads(r.body),
                }
                for r in conn.execute(stmt)
            ]


def _applied_version(conn: Connection) -> int:
    """The migration in place; 0 for a store without a schema yet."""
    if not sa.inspect(conn).has_table(schema_version.name):
        return 0
    return int(conn.execute(sa.select(sa.func.max(schema_version.c.version))).scalar() or 0)


def _shown(db: str) -> str:
    """The URL without its password (it ends up in error messages)."""
    try:
        return sa.engine.make_url(database_url(db)).render_as_string(hide_password=True)
    except sa.exc.ArgumentError:
        return db


def _lookup(
    conn: Connection, table: sa.Table, keys: Sequence[str], columns: Sequence[Any]
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for start in range(0, len(keys), _KEYS_PER_LOOKUP):
        part = list(keys[start : start + _KEYS_PER_LOOKUP])
        if conn.dialect.name == "postgresql":  # one array parameter (see _stored_ends)
            match = table.c.key == sa.any_(sa.bindparam("keys", part, type_=sa.ARRAY(sa.String)))
        else:
            match = table.c.key.in_(part)
        for row in conn.execute(sa.select(*columns).where(match)):
            out[row.key] = row._mapping
    return out


def _upsert_intervals(conn: Connection, chunk: list[Interval]) -> IngestResult:
    latest: dict[str, Interval] = {}
    for interval in chunk:
        prior = latest.get(interval.key)
        latest[interval.key] = interval if prior is None else prior.merged(interval)
    stored = _stored_ends(conn, list(latest))
    new, changed = [], []
    for key, interval in latest.items():
        row = stored.get(key)
        if row is None:
            new.append(_interval_values(interval))
            continue
        stored_end, stored_restarts = row
        end = stored_end if stored_end is not None else interval.end
        restarts = max(stored_restarts, interval.restarts)
        if end != stored_end or restarts != stored_restarts:
            changed.append({"k": key, "end_time": end, "restarts": restarts})
    if new:
        columns = [_INTERVAL_COLUMNS.get(name, name) for name in _INTERVAL_FIELDS]
        if conn.dialect.name == "sqlite":
            conn.exec_driver_sql(_insert_sql(conn, intervals, columns), new)
        else:
            # PostgreSQL: SQLAlchemy batches the rows into multi-row VALUES statements
            # (insertmanyvalues); the driver's executemany would be one round trip a row
            conn.execute(intervals.insert(), [dict(zip(columns, row, strict=True)) for row in new])
    if changed:
        stmt = (
            intervals.update()
            .where(intervals.c.key == sa.bindparam("k"))
            .values(end_time=sa.bindparam("end_time"), restarts=sa.bindparam("restarts"))
        )
        conn.execute(stmt, changed)
    return IngestResult(len(chunk), len(new), len(changed))


def _wait_row(w: Wait) -> dict[str, Any]:
    return {f.name: getattr(w, f.name) for f in fields(Wait)}


def _merge_wait(stored: dict[str, Any], new: dict[str, Any]) -> dict[str, Any] | None:
    """A wait that ended stays ended; one still going grows with each observation."""
    if stored["started"]:
        return None
    if new["started"] or new["seconds"] > stored["seconds"]:
        return new
    return None


def _capacity_row(c: Capacity) -> dict[str, Any]:
    return {
        "key": c.key,
        "node": c.node,
        "pool": c.pool,
        "gpu_model": c.gpu_model,
        "gpus": c.gpus,
        "start_time": c.start,
        "end_time": c.end,
    }


def _merge_end(stored: dict[str, Any], new: dict[str, Any]) -> dict[str, Any] | None:
    if stored["end_time"] is None and new["end_time"] is not None:
        return {**stored, "end_time": new["end_time"]}
    return None
