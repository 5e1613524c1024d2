"""A twin scenario: a contract plus `scenario.yaml` — how long, what load, which jobs arrive,
which faults strike, and how the HPA and the cluster autoscaler are tuned.

```yaml
apiVersion: gpupact.io/v1alpha1
kind: Scenario
metadata: {name: promo-peak}
contract: contract.yaml            # relative to the scenario file
start: 2026-11-11T08:00:00+08:00   # t = 0 (cron schedules fire on the contract's timeZone)
duration: 12h
seed: 7
load:                              # requests per second per service, linear between points
  - service: cs-agent
    rps: [{at: 0h, value: 20}, {at: 10h, value: 20}, {at: 11h, value: 140}, {at: 12h, value: 30}]
jobs:
  - contract: true                 # the contract's jobs, at their cron schedules
  - tenant: search                 # and generated arrivals (Poisson, seeded)
    class: batch
    perHour: 6
    pods: 4
    duration: 40m
faults:
  - {at: 9h, kind: device-plugin-lost, pool: gpu-inference, nodes: 1}
bindLatency: 1s                    # placement -> bound (default: the API call SLO's bound)
autoscaler:                        # karpenter (default) or cluster-autoscaler, upstream timing
  provisioner: karpenter
  batchIdleDuration: 1s
  batchMaxDuration: 10s
```

Times inside the scenario (`at`) are durations since `start`. Loading checks every field with
file:line:column errors and that every service, tenant, class and pool named exists in the
contract.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, BeforeValidator, Field, model_validator

from gpupact.contract.loader import (
    ContractInvalid,
    LoadedContract,
    load_contract,
    single_document,
    validate_model,
)
from gpupact.contract.schema import (
    API_VERSION,
    Count,
    Duration,
    Instant,
    Metadata,
    Model,
    Name,
    Positive,
)
from gpupact.errors import FieldError, InputError
from gpupact.plan.from_contract import require_known_models
from gpupact.source import Document, read_text

KIND = "Scenario"
SCENARIO_FILE = "scenario.yaml"
MAX_DURATION = timedelta(days=31)  # a month of simulated time bounds every run
MIN_STEP = timedelta(seconds=1)
MAX_ARRIVALS = 1_000_000  # generated job arrivals per entry: bounds memory and run time


def _number(value: object) -> float:
    """A plain YAML number (int or float; not a boolean, not a string)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"expected a number, got {value!r}")
    if isinstance(value, float) and not math.isfinite(value):  # not "out of range" for NaN
        raise ValueError(f"expected a finite number, got {value!r}")
    if abs(value) > 10**15:  # a float too: 1e308 requests/s overflowed the serving model
        raise ValueError("number out of range: more than 1e15 in magnitude")
    return float(value)


NonNegative = Annotated[float, BeforeValidator(_number), Field(ge=0, allow_inf_nan=False)]
Ratio = Annotated[float, BeforeValidator(_number), Field(ge=0, le=1, allow_inf_nan=False)]


class Point(Model):
    at: Duration
    value: NonNegative


class Load(Model):
    """A service's request rate (requests per second), linear between the points."""

    service: Name
    rps: list[Point] = Field(min_length=1)

    @model_validator(mode="after")
    def _ordered(self) -> Load:
        for before, after in zip(self.rps, self.rps[1:], strict=False):
            if after.at < before.at:
                raise ValueError("rps points must be in time order")
        return self


class JobArrivals(Model):
    """Either the contract's jobs at their schedules (`contract: true`), or generated
    arrivals of one shape at `perHour` (exponential inter-arrival times, seeded)."""

    contract: bool = False
    trace: str | None = None  # an openb pod list (CSV), relative to the scenario file
    time_scale: Annotated[float, BeforeValidator(_number), Field(gt=0, le=1e6)] = 1.0
    name: Name | None = None  # generated jobs are named <name>-<n>; default <tenant>-<class>
    tenant: Name | None = None
    workload_class: Name | None = Field(default=None, alias="class")
    per_hour: NonNegative | None = None
    pods: Positive = 1
    gpus_per_pod: Positive = 1
    duration: Duration = timedelta(hours=1)
    duration_jitter: Ratio = 0.0  # uniform +/- this fraction of duration
    start: Duration = timedelta(0)
    end: Duration | None = None

    @model_validator(mode="after")
    def _one_form(self) -> JobArrivals:
        traced = self.trace is not None
        generated = self.per_hour is not None
        if sum((self.contract, traced, generated)) != 1:
            raise ValueError(
                "give one of `contract: true`, a generated shape (tenant, class, perHour) "
                "or a trace (trace, tenant, class)"
            )
        if (generated or traced) and (self.tenant is None or self.workload_class is None):
            what = "generated" if generated else "traced"
            raise ValueError(
                f"{what} jobs need tenant and class" + (" and perHour" if generated else "")
            )
        if self.duration <= timedelta(0):
            raise ValueError("duration must be positive")
        return self


class FaultKind(StrEnum):
    device_plugin_lost = "device-plugin-lost"  # Ready node, GPU allocatable 0 (43.5)
    node_down = "node-down"  # NotReady: its pods are lost and recreated elsewhere
    driver_drift = "driver-drift"  # a node's driver label changes: reported, placement same


class Fault(Model):
    at: Duration
    kind: FaultKind
    pool: Name
    nodes: Positive = 1  # how many of the pool's nodes (the first ones, in creation order)
    recover_after: Duration | None = None  # the device plugin back after this long

    @model_validator(mode="after")
    def _recovery(self) -> Fault:
        if self.recover_after is not None and self.kind is not FaultKind.device_plugin_lost:
            raise ValueError(
                "recoverAfter is modelled for device-plugin-lost only (a node that went down "
                "comes back as a new node through the autoscaler)"
            )
        return self


def _at_least_step(period: timedelta) -> timedelta:
    """A controller's loop period: one event a period over up to a month, so it is bounded
    below as the tick is (0 would never advance; 1ms would be 2.7 billion events)."""
    if period < MIN_STEP:
        raise ValueError(f"must be at least {MIN_STEP.seconds}s, the twin's finest step")
    return period


Period = Annotated[Duration, AfterValidator(_at_least_step)]


class Hpa(Model):
    """kube-controller-manager's HPA settings (upstream defaults)."""

    sync_period: Period = timedelta(seconds=15)
    tolerance: Ratio = 0.1
    scale_up_stabilization: Duration = timedelta(0)
    scale_down_stabilization: Duration = timedelta(minutes=5)
    # how old the pod metric is when the HPA reads it: a Prometheus scrape, then the
    # custom-metrics adapter's query (prometheus-adapter) on top
    metric_scrape_interval: Duration = timedelta(seconds=15)
    metric_adapter_delay: Duration = timedelta(seconds=30)


class Provisioner(StrEnum):
    karpenter = "karpenter"  # what compile writes: a NodePool per elastic pool
    cluster_autoscaler = "cluster-autoscaler"


class Autoscaler(Model):
    """Who adds nodes, and with which timing (upstream defaults).

    Karpenter (the default: `gpupact compile` writes NodePools) batches unschedulable pods:
    a window closes after `batchIdleDuration` without a new one, or `batchMaxDuration` after
    it opened (controller settings BATCH_IDLE_DURATION 1s / BATCH_MAX_DURATION 10s,
    https://karpenter.sh/docs/reference/settings/). An empty node leaves after its NodePool's
    compiled `disruption.consolidateAfter`.

    cluster-autoscaler looks every `scanInterval` (`--scan-interval`, 10s) at pods
    unschedulable for at least `newPodScaleUpDelay` (`--new-pod-scale-up-delay`, 0s), skips
    pods below `--expendable-pods-priority-cutoff` (-10) and pods waiting for a preemption;
    an empty node leaves after `scaleDownUnneeded` (`--scale-down-unneeded-time`, 10m).
    Sources: https://github.com/kubernetes/autoscaler/blob/master/cluster-autoscaler/FAQ.md
    ("How does scale-up work?", "How can I modify Cluster Autoscaler reaction time?") and the
    flag definitions in cluster-autoscaler/config/flags/flags.go.
    """

    enabled: bool = True
    provisioner: Provisioner = Provisioner.karpenter
    scan_interval: Period = timedelta(seconds=10)
    new_pod_scale_up_delay: Duration = timedelta(0)
    scale_down_unneeded: Duration = timedelta(minutes=10)
    batch_idle_duration: Duration = timedelta(seconds=1)
    batch_max_duration: Duration = timedelta(seconds=10)

    @model_validator(mode="after")
    def _timing(self) -> Autoscaler:
        if self.scan_interval <= timedelta(0):
            raise ValueError("scanInterval must be positive")
        if self.batch_idle_duration > self.batch_max_duration:
            raise ValueError("batchIdleDuration must not exceed batchMaxDuration")
        return self


# Binding a pod is one API write (POST pods/binding) after the scheduling cycle. The SIG
# Scalability SLO bounds a single-object mutating API call at P99 <= 1s per cluster-day
# (https://github.com/kubernetes/community/blob/master/sig-scalability/slos/api_call_latency.md);
# the twin takes that bound as its default, a pessimistic value for a healthy control plane.
DEFAULT_BIND_LATENCY = timedelta(seconds=1)


class Scenario(Model):
    api_version: Literal["gpupact.io/v1alpha1"]
    kind: Literal["Scenario"]
    metadata: Metadata
    contract: str = "contract.yaml"
    start: Instant
    duration: Duration
    step: Duration = timedelta(seconds=10)  # serving-model tick and metric sample
    seed: Count = 0
    # false: every pod goes to kube-scheduler one by one, gangs too (no Volcano installed)
    gang_scheduling: bool = True
    # kube-scheduler's NodeResourcesFit scoring: spread (LeastAllocated, the default) or
    # bin-pack (MostAllocated, GPUs weighted in)
    scoring: Literal["LeastAllocated", "MostAllocated"] = "LeastAllocated"
    # from kube-scheduler's placement to the pod bound to its node (the node's resources are
    # held from the placement on: the scheduler assumes the pod in its cache)
    bind_latency: Duration = DEFAULT_BIND_LATENCY
    load: list[Load] = Field(default_factory=list)
    jobs: list[JobArrivals] = Field(default_factory=list)
    faults: list[Fault] = Field(default_factory=list)
    hpa: Hpa = Hpa()
    autoscaler: Autoscaler = Autoscaler()

    @model_validator(mode="after")
    def _bounds(self) -> Scenario:
        if not timedelta(0) < self.duration <= MAX_DURATION:
            raise ValueError(f"duration must be positive and at most {MAX_DURATION.days}d")
        if not MIN_STEP <= self.step <= self.duration:
            raise ValueError("step must be between 1s and the duration")
        for job in self.jobs:
            if job.per_hour is None:
                continue
            end = min(job.end or self.duration, self.duration)
            expected = job.per_hour * max(0.0, (end - job.start).total_seconds()) / 3600
            if expected > MAX_ARRIVALS:
                raise ValueError(
                    f"jobs: {job.per_hour:g} per hour over the run is about {expected:,.0f} "
                    f"arrivals, more than the {MAX_ARRIVALS:,} one scenario may hold"
                )
        return self


@dataclass(frozen=True)
class LoadedScenario:
    scenario: Scenario
    contract: LoadedContract
    document: Document
    directory: Path

    @property
    def name(self) -> str:
        return self.scenario.metadata.name

    @property
    def start(self) -> datetime:
        return self.scenario.start

    def seconds(self, value: timedelta) -> float:
        return value.total_seconds()


def scenario_file(path: str | Path) -> Path:
    """A scenario directory (holding scenario.yaml) or the file itself."""
    p = Path(path)
    return p / SCENARIO_FILE if p.is_dir() else p


def load_scenario(path: str | Path) -> LoadedScenario:
    file = scenario_file(path)
    if not file.exists():
        raise InputError(
            f"no {SCENARIO_FILE} here (a scenario is a directory holding one)", file=str(path)
        )
    doc = single_document(read_text(file), str(file), KIND, API_VERSION)
    scenario = validate_model(Scenario, doc)
    contract_path = (file.parent / scenario.contract).resolve()
    if not contract_path.exists():  # load_contract says what else is wrong
        raise doc.error(FieldError(("contract",), f"contract file {scenario.contract!r} not found"))
    loaded = load_contract(contract_path)
    require_known_models(loaded)  # the serving model needs each service's architecture
    _check_names(scenario, loaded, doc)
    return LoadedScenario(scenario, loaded, doc, file.parent)


def _check_names(scenario: Scenario, loaded: LoadedContract, doc: Document) -> None:
    contract = loaded.contract
    services = {s.name for s in contract.services}
    tenants = {t.name for t in contract.tenants}
    classes = {c.name for c in contract.classes}
    pools = {p.name for p in contract.pools}
    errors: list[InputError] = []

    def need(path: tuple, value: str | None, known: set[str], what: str) -> None:
        if value is not None and value not in known:
            choices = ", ".join(sorted(known)) or "none"
            errors.append(
                doc.error(
                    FieldError(path, f"unknown {what} {value!r} (the contract has {choices})")
                )
            )

    for i, load in enumerate(scenario.load):
        need(("load", i, "service"), load.service, services, "service")
    for i, job in enumerate(scenario.jobs):
        need(("jobs", i, "tenant"), job.tenant, tenants, "tenant")
        need(("jobs", i, "class"), job.workload_class, classes, "class")
    for i, fault in enumerate(scenario.faults):
        need(("faults", i, "pool"), fault.pool, pools, "pool")
    if errors:
        raise ContractInvalid(errors)
