"""Sweeps: policies x seeds x scenarios, each run an independent simulation.

A policy is a name and a set of scenario overrides by field path (`gangScheduling=false`,
`scoring=MostAllocated`, `autoscaler.enabled=false`, `hpa.tolerance=0.2`). Runs go to a local
process pool by default, or to a Ray cluster (`ray` is an optional extra) for sweeps that
outgrow one machine; both return the same rows in the same order.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gpupact.contract.loader import validate_model
from gpupact.errors import FieldError, InputError
from gpupact.twin.run import scenario_paths
from gpupact.twin.scenario import LoadedScenario, Scenario, load_scenario
from gpupact.twin.simulation import Simulation

BASELINE = "baseline"


@dataclass(frozen=True)
class Policy:
    name: str
    overrides: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def parse(cls, text: str) -> Policy:
        """`NAME` (no overrides) or `NAME:PATH=VALUE[,PATH=VALUE...]`; values are YAML."""
        name, _, rest = text.partition(":")
        if not name:
            raise InputError(f"policy {text!r}: expected NAME or NAME:path=value,...")
        overrides = []
        for item in filter(None, rest.split(",")):
            path, eq, value = item.partition("=")
            if not eq or not path:
                raise InputError(f"policy {text!r}: {item!r} is not path=value")
            overrides.append((path.strip(), yaml.safe_load(value)))
        return cls(name, tuple(overrides))


@dataclass(frozen=True)
class Task:
    scenario: str  # path of the scenario directory
    policy: Policy
    seed: int


def apply(loaded: LoadedScenario, policy: Policy) -> LoadedScenario:
    """The scenario with the policy's overrides, validated like the file itself."""
    if not policy.overrides:
        return loaded
    data = loaded.scenario.model_dump(mode="json", by_alias=True)
    for path, value in policy.overrides:
        node = data
        keys = path.split(".")
        for key in keys[:-1]:
            if not isinstance(node.get(key), dict):
                raise InputError(f"policy {policy.name!r}: no field {path!r} in a scenario")
            node = node[key]
        if keys[-1] not in node:
            raise InputError(f"policy {policy.name!r}: no field {path!r} in a scenario")
        node[keys[-1]] = value
    document = type(loaded.document)(data, f"{loaded.document.file} (policy {policy.name})", "")
    try:
        scenario = validate_model(Scenario, document)
    except FieldError as err:  # pragma: no cover - validate_model locates its errors
        raise InputError(str(err)) from None
    return LoadedScenario(scenario, loaded.contract, loaded.document, loaded.directory)


def run_task(task: Task) -> dict[str, Any]:
    loaded = apply(load_scenario(task.scenario), task.policy)
    result = Simulation(loaded, seed=task.seed).run()
    return {
        "scenario": result["scenario"],
        "policy": task.policy.name,
        "seed": task.seed,
        "summary": result["summary"],
    }


def tasks(path: str | Path, policies: Sequence[Policy], seeds: Sequence[int]) -> list[Task]:
    paths = scenario_paths(path)
    for p in paths:  # every scenario and every policy checked before anything runs
        loaded = load_scenario(p)
        for policy in policies:
            apply(loaded, policy)
    return [Task(str(p), policy, seed) for p in paths for policy in policies for seed in seeds]


def run_local(
    items: Sequence[Task], workers: int | None = None, done: Callable[[], None] | None = None
) -> list[dict[str, Any]]:
    workers = workers or os.cpu_count() or 1
    if workers == 1:
        out = []
        for task in items:
            out.append(run_task(task))
            if done:
                done()
        return out
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(run_task, t) for t in items]
        out = []
        for future in futures:
            out.append(future.result())
            if done:
                done()
        return out


def run_ray(
    items: Sequence[Task], address: str, done: Callable[[], None] | None = None
) -> list[dict[str, Any]]:
    try:
        import ray
    except ImportError:
        raise InputError("--ray needs Ray: pip install 'gpupact[ray]'") from None
    ray.init(
        address=None if address == "local" else address,
        ignore_reinit_error=True,
        include_dashboard=False,
        log_to_driver=False,
    )
    remote = ray.remote(run_task)
    refs = [remote.remote(t) for t in items]
    out = []
    for ref in refs:
        out.append(ray.get(ref))
        if done:
            done()
    return out


def _worst_promise(summary: dict[str, Any]) -> float | None:
    ratios = [
        p["p99"] / p["maxQueueWait"]
        for p in summary["promises"].values()
        if p["p99"] is not None and p["maxQueueWait"]
    ]
    return round(max(ratios), 4) if ratios else None


METRICS = (
    # the tightest promise: max over classes of P99 time to GPU / maxQueueWait (> 1: broken)
    ("worst P99/promise", lambda s: _worst_promise(s)),
    (
        "TTFT>SLO share",
        lambda s: max((v["sloBreachedShare"] for v in s["services"].values()), default=0.0),
    ),
    ("promises kept", lambda s: sum(1 for p in s["promises"].values() if p["kept"])),
    ("GPU alloc", lambda s: s["cluster"]["meanAllocation"]),
    ("preemptions", lambda s: sum(s["preemptions"].values())),
    ("half-gang GPU-h", lambda s: s["incompleteGangGpuHours"]),
)


def aggregate(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (scenario, policy): mean and standard deviation of each metric over the seeds."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["scenario"], row["policy"]), []).append(row)
    out = []
    for (scenario, policy), items in groups.items():
        metrics = {}
        for label, read in METRICS:
            values = [v for v in (read(r["summary"]) for r in items) if v is not None]
            metrics[label] = {
                "mean": round(statistics.fmean(values), 4) if values else None,
                "stdev": round(statistics.stdev(values), 4) if len(values) > 1 else 0.0,
            }
        out.append(
            {
                "scenario": scenario,
                "policy": policy,
                "seeds": [r["seed"] for r in items],
                "metrics": metrics,
            }
        )
    return out
