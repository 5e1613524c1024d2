from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from fake_twin import FakeSimulation
from serve_helpers import Clock, tokens

from gpupact.ledger import Ledger
from gpupact.serve import ServeState, TwinSource, create_app


@pytest.fixture
def make_state(tmp_path) -> Iterator[Callable[..., ServeState]]:
    opened: list[Ledger] = []

    def make(
        sim: FakeSimulation | None = None,
        *,
        budget: float | None = None,
        contract=None,
        scale: float = 60.0,
    ) -> ServeState:
        ledger = Ledger.open(str(tmp_path / f"ledger-{len(opened)}.db"))
        opened.append(ledger)
        state = ServeState(
            TwinSource(sim or FakeSimulation(), scale=scale),
            tokens(budget),
            ledger,
            Clock(),
            contract=contract,
            refresh_seconds=None,
        )
        state.refresh()
        return state

    yield make
    for ledger in opened:
        ledger.close()


@pytest.fixture
def client(make_state):
    from fastapi.testclient import TestClient

    state = make_state()
    with TestClient(create_app(state)) as c:
        c.state = state  # type: ignore[attr-defined]
        yield c
