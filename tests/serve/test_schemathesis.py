"""Property tests of the API against its own OpenAPI document (schemathesis, in-process ASGI):
every generated request, valid or not, gets a documented status, a body matching the
documented schema, and never a 5xx. Run as an admin and as a tenant (403s included)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
import schemathesis
from fake_twin import FakeSimulation
from hypothesis import HealthCheck, settings
from schemathesis.generation.meta import GenerationMode, ParameterLocation
from serve_helpers import Clock, auth, tokens

from gpupact.ledger import Ledger
from gpupact.serve import ServeState, TwinSource, create_app

_DB = Path(tempfile.mkdtemp(prefix="gpupact-schemathesis-")) / "ledger.db"
_state = ServeState(
    TwinSource(FakeSimulation(pending=1)),
    tokens(budget_search=50.0),
    Ledger.open(str(_DB)),
    Clock(),
    refresh_seconds=None,
)
_state.refresh()
schema = schemathesis.openapi.from_asgi("/openapi.json", create_app(_state))


@pytest.mark.parametrize("who", ["admin", "search"])
@schema.parametrize()
@settings(max_examples=25, suppress_health_check=list(HealthCheck), deadline=None)
def test_api_conforms_to_its_schema(case, who: str) -> None:
    # a case generated to break the headers (e.g. no Authorization) must reach the server as
    # generated: adding the token would turn it into a valid request the check then flags
    header = case.meta.components.get(ParameterLocation.HEADER) if case.meta else None
    negative = header is not None and header.mode == GenerationMode.NEGATIVE
    case.call_and_validate(headers=None if negative else auth(who))
