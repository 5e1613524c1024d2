"""Sweeps: policies as validated overrides, the same rows from one process, a pool or Ray."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from twin_helpers import contract, scenario, write
from typer.testing import CliRunner

from gpupact.cli.main import _register, app
from gpupact.errors import InputError
from gpupact.twin.scenario import load_scenario
from gpupact.twin.sweep import Policy, aggregate, apply, run_local, run_ray, tasks

_register()
REQUIRED = os.environ.get("GPUPACT_REQUIRE_COMPONENTS") == "1"


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write(tmp_path_factory.mktemp("sweep"), contract(), scenario(duration="30m"))


def test_policy_parsing() -> None:
    policy = Policy.parse("binpack:scoring=MostAllocated,autoscaler.enabled=false")
    assert policy.name == "binpack"
    assert policy.overrides == (("scoring", "MostAllocated"), ("autoscaler.enabled", False))
    assert Policy.parse("baseline").overrides == ()
    with pytest.raises(InputError):
        Policy.parse("x:scoring")


def test_overrides_are_validated_like_the_file(base: Path) -> None:
    loaded = load_scenario(base)
    assert apply(loaded, Policy.parse("p:gangScheduling=false")).scenario.gang_scheduling is False
    with pytest.raises(InputError, match="no field 'nope'"):
        apply(loaded, Policy.parse("p:nope=1"))
    with pytest.raises(InputError, match="scoring"):
        apply(loaded, Policy.parse("p:scoring=Sideways"))


def test_pool_and_single_process_give_the_same_rows(base: Path) -> None:
    items = tasks(base, [Policy("a"), Policy.parse("b:scoring=MostAllocated")], [1, 2])
    assert len(items) == 4
    serial = run_local(items, workers=1)
    pooled = run_local(items, workers=2)
    assert serial == pooled
    summary = aggregate(serial)
    assert [(r["policy"], r["seeds"]) for r in summary] == [("a", [1, 2]), ("b", [1, 2])]


def test_ray_gives_the_same_rows(base: Path) -> None:
    try:
        import ray
    except ImportError:
        if REQUIRED:
            pytest.fail("ray is not installed (the test extra installs it)")
        pytest.skip("ray not installed (pip install 'gpupact[ray]')")
    items = tasks(base, [Policy("a")], [1, 2])
    try:
        assert run_ray(items, "local") == run_local(items, workers=1)
    finally:
        import ray

        ray.shutdown()


def test_cli_sweep_json(base: Path) -> None:
    result = CliRunner().invoke(
        app, ["sweep", str(base), "--seeds", "1,2", "--workers", "1", "-o", "json"]
    )
    assert result.exit_code == 0, result.output
    assert '"summary"' in result.output


def test_cli_sweep_bad_seeds(base: Path) -> None:
    result = CliRunner().invoke(app, ["sweep", str(base), "--seeds", "x"])
    assert result.exit_code == 2 and "error: " in result.output
