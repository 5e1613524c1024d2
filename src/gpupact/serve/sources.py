"""Where the API's snapshot comes from: the twin on a scaled clock, or a live cluster.

`Simulator` is the interface of the twin's `Simulation` the API needs; the embedded default
(`gpupact serve examples/promo-peak`) runs it `scale` simulated seconds per wall second.
`LiveSource` lists Nodes, Pods, Deployments, PodGroups and Workloads from the API server (via
ops.live, the same read-only lists `diagnose` uses) on each refresh.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from gpupact.contract import Contract
from gpupact.errors import InputError
from gpupact.ledger import from_records, observe, waits_from_pending_durations
from gpupact.serve.snapshot import Backend, Snapshot, backends_from


class Simulator(Protocol):
    """What the API uses of `gpupact.twin.simulation.Simulation`."""

    @property
    def now(self) -> float: ...  # simulated seconds since the scenario's start

    @property
    def start(self) -> datetime: ...  # UTC time of t=0

    def run_until(self, t: float) -> None: ...

    def backends(self) -> list[dict[str, Any]]: ...

    def usage_records(self) -> list[dict[str, Any]]: ...

    def pending_durations(self) -> list[tuple[str, float]]: ...

    def blocked(self) -> dict[str, int]: ...  # {"podGroups": n, "workloads": n} waiting now


class Source(Protocol):
    def refresh(self, wall: float) -> Snapshot: ...


class TwinSource:
    """The twin advanced to `scale` x the wall time elapsed since the first refresh."""

    def __init__(self, sim: Simulator, scale: float = 60.0, name: str = "twin") -> None:
        if scale <= 0:
            raise InputError(f"--scale: expected a number > 0, got {scale}")
        self.sim, self.scale, self.name = sim, scale, name
        self._wall0: float | None = None
        self._t0 = sim.now

    def refresh(self, wall: float) -> Snapshot:
        if self._wall0 is None:
            self._wall0 = wall
        target = self._t0 + (wall - self._wall0) * self.scale
        if target > self.sim.now:
            self.sim.run_until(target)
        at = self.sim.start.timestamp() + self.sim.now
        # a service without a model (a plain GPU service) is no backend the gateway routes to
        backends = backends_from(
            (b for b in self.sim.backends() if b.get("model") is not None), self.name
        )
        blocked = self.sim.blocked()
        return Snapshot.build(
            at,
            backends=backends,
            intervals=tuple(from_records(self.sim.usage_records(), "twin")),
            waits=tuple(waits_from_pending_durations(self.sim.pending_durations())),
            podgroups_blocked=blocked["podGroups"],
            kueue_blocked=blocked["workloads"],
        )


def open_twin(
    scenario: str | Path, seed: int | None = None, variant: str | None = None
) -> tuple[Simulator, Contract]:
    """The twin's Simulation of a scenario directory (or of one variant of a directory of
    variants: `variant`, else the first by name) and the scenario's contract. InputError on
    bad input, as `gpupact simulate` reports it."""
    from gpupact.twin.run import scenario_paths
    from gpupact.twin.scenario import load_scenario
    from gpupact.twin.simulation import Simulation

    paths = scenario_paths(scenario)
    if variant is not None:
        chosen = [p for p in paths if p.name == variant]
        if not chosen:
            names = ", ".join(p.name for p in paths)
            raise InputError(f"--variant: no variant {variant!r} (one of {names})")
        paths = chosen
    loaded = load_scenario(paths[0])
    return Simulation(loaded, seed=seed), loaded.contract.contract


# --- a live cluster ---------------------------------------------------------------------------

Lister = Callable[[], Mapping[str, list[dict[str, Any]]]]  # kind -> raw objects


def _condition(obj: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if isinstance(c, Mapping) and c.get("type") == kind:
            return c
    return None


def _gpu_count(text: Any) -> int:
    try:
        return int(str(text))
    except ValueError:
        return 0


class LiveSource:
    """Backends from Deployments whose pods carry `gpupact.io/model`; usage from the Pods."""

    def __init__(self, lister: Lister, cold_starts: Mapping[str, float] | None = None) -> None:
        self.lister = lister
        self.cold_starts = dict(cold_starts or {})  # service -> seconds (from the contract)

    def refresh(self, wall: float) -> Snapshot:
        from gpupact.cluster.snapshot import read_node, read_pod
        from gpupact.contract.keys import ANNOTATION_MODEL, LABEL_APP, LABEL_POOL, LABEL_TENANT

        objects = self.lister()
        nodes = [read_node(o) for o in objects.get("Node", [])]
        pods = [read_pod(o) for o in objects.get("Pod", [])]
        seen = observe(nodes, pods, wall)
        pending_by_app: dict[tuple[str, str], list[str]] = defaultdict(list)
        for pod in pods:
            app = pod.labels.get(LABEL_APP)
            if app and not pod.node_name and pod.phase == "Pending":
                cond = _condition(pod.raw, "PodScheduled") or {}
                reason = cond.get("message") or cond.get("reason") or "Pending"
                pending_by_app[(pod.namespace, app)].append(str(reason))
        backends = []
        for dep in objects.get("Deployment", []):
            meta, spec = dep.get("metadata") or {}, dep.get("spec") or {}
            template = (spec.get("template") or {}).get("metadata") or {}
            model = (template.get("annotations") or {}).get(ANNOTATION_MODEL)
            if not model:
                continue
            labels = template.get("labels") or {}
            name = labels.get(LABEL_APP) or meta.get("name", "")
            status = dep.get("status") or {}
            reasons = pending_by_app.get((meta.get("namespace", "default"), name), [])
            ready = int(status.get("readyReplicas") or 0)
            backends.append(
                Backend(
                    service=name,
                    model=model,
                    tenant=labels.get(LABEL_TENANT),
                    pool=labels.get(LABEL_POOL),
                    desired=int(spec.get("replicas", 1) or 0),
                    ready=ready,
                    pending=len(reasons),
                    pending_reason=reasons[0] if reasons else None,
                    healthy=ready > 0,
                    cold_start_seconds=self.cold_starts.get(name),
                )
            )
        blocked_gangs = sum(
            1
            for pg in objects.get("PodGroup", [])
            if (pg.get("status") or {}).get("phase") in ("Pending", "Inqueue")
        )
        blocked_workloads = sum(
            1
            for wl in objects.get("Workload", [])
            if ((_condition(wl, "QuotaReserved") or {}).get("status") != "True")
        )
        lost = sum(
            1
            for o in objects.get("Node", [])
            if _gpu_count(((o.get("status") or {}).get("capacity") or {}).get("nvidia.com/gpu", 0))
            > _gpu_count(
                ((o.get("status") or {}).get("allocatable") or {}).get("nvidia.com/gpu", 0)
            )
        )
        return Snapshot.build(
            wall,
            backends=tuple(backends),
            intervals=tuple(seen.intervals),
            waits=tuple(seen.waits),
            podgroups_blocked=blocked_gangs,
            kueue_blocked=blocked_workloads,
            nodes_lost_gpus=lost,
        )


def live_lister(context: str | None, kubeconfig: str | None) -> Lister:
    """Lists of the kinds LiveSource reads, from the API server (read-only GETs)."""
    from gpupact.ops.live import RESOURCES, _client, list_objects

    wanted = {"Node", "Pod", "Deployment", "PodGroup", "Workload"}
    resources = [r for r in RESOURCES if r.kind in wanted and r.group != "batch.volcano.sh"]

    def lister() -> dict[str, list[dict[str, Any]]]:
        from kubernetes.client.exceptions import ApiException

        client = _client(context, kubeconfig)
        out: dict[str, list[dict[str, Any]]] = defaultdict(list)
        try:
            for resource in resources:
                for version in resource.versions:
                    try:
                        out[resource.kind] = list(list_objects(client, resource, version))
                    except ApiException as err:
                        if err.status == 404 or (err.status == 403 and not resource.required):
                            continue
                        raise InputError(
                            f"listing {resource.plural}: HTTP {err.status} {err.reason}"
                        ) from None
                    break
        finally:
            close = getattr(client, "close", None)
            if close is not None:
                close()
        return out

    return lister
