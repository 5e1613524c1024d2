"""Run a scenario directory: one scenario (it holds scenario.yaml) or its variants side by
side (sub-directories holding one each, in name order); from the contract's own template
nodes, or from a real cluster (a ClusterView: `simulate --snapshot DIR | --context CTX`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpupact.errors import InputError
from gpupact.twin.cluster_run import ClusterSimulation
from gpupact.twin.initial_state import ClusterView
from gpupact.twin.scenario import SCENARIO_FILE, LoadedScenario, load_scenario
from gpupact.twin.simulation import Simulation


def scenario_paths(path: str | Path) -> list[Path]:
    p = Path(path)
    if p.is_file() or (p / SCENARIO_FILE).is_file():
        return [p]
    if not p.is_dir():
        raise InputError("no such scenario directory", file=str(p))
    variants = sorted(d for d in p.iterdir() if (d / SCENARIO_FILE).is_file())
    if not variants:
        raise InputError(
            f"no {SCENARIO_FILE} here nor in its sub-directories (one per variant)", file=str(p)
        )
    return variants


def load_all(path: str | Path) -> list[LoadedScenario]:
    """Every variant loaded (and checked) before any runs: bad input fails fast."""
    return [load_scenario(p) for p in scenario_paths(path)]


def simulate(
    loaded: LoadedScenario,
    *,
    seed: int | None = None,
    progress: Callable[[float], None] | None = None,
    start: ClusterView | None = None,
) -> dict[str, Any]:
    """One run; `start`: the cluster the contract is applied to at t = 0 (None: the pools'
    minimum of template nodes, nothing running)."""
    if start is not None:
        return ClusterSimulation(loaded, start, seed=seed).run(progress)
    return Simulation(loaded, seed=seed).run(progress)
