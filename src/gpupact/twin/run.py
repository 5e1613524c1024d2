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


def _present(path: Path) -> bool:
    return path.exists() or path.is_symlink()  # a dangling link is reported, not skipped


def scenario_paths(path: str | Path) -> list[Path]:
    p = Path(path)
    # anything there that is not a directory is the scenario file: reading it says what is
    # wrong with a FIFO, a device or a directory named scenario.yaml
    if (p.exists() and not p.is_dir()) or _present(p / SCENARIO_FILE):
        return [p]
    if not p.is_dir():
        raise InputError("no such scenario directory", file=str(p))
    variants = sorted(d for d in p.iterdir() if _present(d / SCENARIO_FILE))
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
