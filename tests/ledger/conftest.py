from __future__ import annotations

import uuid
from collections.abc import Iterator
from urllib.parse import quote

import pytest
import sqlalchemy as sa

from components import postgres_url
from gpupact.ledger import Ledger
from gpupact.ledger.store import database_url


@pytest.fixture
def pg_db() -> Iterator[str]:
    """A PostgreSQL URL whose search_path is a fresh schema, dropped afterwards."""
    url = postgres_url()
    schema = f"t_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(database_url(url))
    with admin.begin() as conn:
        conn.exec_driver_sql(f"CREATE SCHEMA {schema}")
    sep = "&" if "?" in url else "?"
    yield f"{url}{sep}options={quote(f'-csearch_path={schema}')}"
    with admin.begin() as conn:
        conn.exec_driver_sql(f"DROP SCHEMA {schema} CASCADE")
    admin.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request: pytest.FixtureRequest, tmp_path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "ledger.db")
    return request.getfixturevalue("pg_db")


@pytest.fixture
def ledger(db: str) -> Iterator[Ledger]:
    with Ledger.open(db) as store:
        yield store
