from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from urllib.parse import quote

import pytest
import sqlalchemy as sa

from components import postgres_url
from gpupact.ledger import Ledger
from gpupact.ledger.store import database_url


@pytest.fixture
def pg_schemas() -> Iterator[Callable[[], str]]:
    """Make PostgreSQL URLs whose search_path is a fresh schema each, dropped afterwards."""
    url = postgres_url()
    admin = sa.create_engine(database_url(url))
    made: list[str] = []

    def make() -> str:
        schema = f"t_{uuid.uuid4().hex[:12]}"
        with admin.begin() as conn:
            conn.exec_driver_sql(f"CREATE SCHEMA {schema}")
        made.append(schema)
        sep = "&" if "?" in url else "?"
        return f"{url}{sep}options={quote(f'-csearch_path={schema}')}"

    yield make
    with admin.begin() as conn:
        for schema in made:
            conn.exec_driver_sql(f"DROP SCHEMA {schema} CASCADE")
    admin.dispose()


@pytest.fixture
def pg_db(pg_schemas: Callable[[], str]) -> str:
    """A PostgreSQL URL whose search_path is a fresh schema, dropped afterwards."""
    return pg_schemas()


@pytest.fixture(params=["sqlite", "postgresql"])
def new_db(request: pytest.FixtureRequest, tmp_path) -> Callable[[], str]:
    """Make empty stores of one kind: SQLite files, or PostgreSQL schemas."""
    if request.param == "postgresql":
        return request.getfixturevalue("pg_schemas")
    made = iter(range(1_000))
    return lambda: str(tmp_path / f"ledger-{next(made)}.db")


@pytest.fixture
def db(new_db: Callable[[], str]) -> str:
    return new_db()


@pytest.fixture
def ledger(db: str) -> Iterator[Ledger]:
    with Ledger.open(db) as store:
        yield store
