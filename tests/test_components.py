"""Missing real components fail in CI (GPUPACT_REQUIRE_COMPONENTS=1) and skip elsewhere."""

from __future__ import annotations

import _pytest.outcomes
import pytest

import components


@pytest.mark.parametrize(
    ("required", "outcome"),
    [(True, _pytest.outcomes.Failed), (False, _pytest.outcomes.Skipped)],
)
def test_a_missing_component_fails_in_ci_and_skips_elsewhere(monkeypatch, required, outcome):
    monkeypatch.setattr(components, "REQUIRED", required)
    monkeypatch.delenv("GPUPACT_TEST_POSTGRES_URL", raising=False)
    with pytest.raises(outcome, match="PostgreSQL not available"):
        components.postgres_url()
