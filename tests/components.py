"""Real components the tests use (PostgreSQL, Prometheus), found or refused by name.

`.ci/run` installs and starts them and sets GPUPACT_REQUIRE_COMPONENTS=1: there a missing one
fails the test. Elsewhere the test is skipped with the component's name and how to provide it.
"""

from __future__ import annotations

import os
import shutil

import pytest

REQUIRED = os.environ.get("GPUPACT_REQUIRE_COMPONENTS") == "1"


def missing(component: str, how: str) -> None:
    """Fail (CI) or skip (elsewhere) a test whose component is not available."""
    message = f"{component} not available: {how}"
    if REQUIRED:
        pytest.fail(message + " (GPUPACT_REQUIRE_COMPONENTS=1)")
    pytest.skip(message)


def postgres_url() -> str:
    url = os.environ.get("GPUPACT_TEST_POSTGRES_URL")
    if not url:
        missing("PostgreSQL", "set GPUPACT_TEST_POSTGRES_URL=postgresql://user:pw@host/db")
    return url  # type: ignore[return-value]


def prometheus_binary() -> str:
    path = os.environ.get("GPUPACT_TEST_PROMETHEUS") or shutil.which("prometheus")
    if not path:
        missing(
            "Prometheus", "install the Debian package `prometheus` (or set GPUPACT_TEST_PROMETHEUS)"
        )
    return path  # type: ignore[return-value]
