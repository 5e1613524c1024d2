"""Pre-warm windows as the compiled objects run them (compile/prewarm.py): each window is a
CronJob whose Job holds `parallelism` placeholder pods (PriorityClass value -10,
preemptionPolicy Never, grace period 0) until its `activeDeadlineSeconds` pass.

The twin reads those CronJobs back - schedule, time zone, deadline, pod count and pod
template - so it enforces exactly what would be applied: a placeholder holds a node until a
real pod preempts it; the Job then replaces it (its podFailurePolicy ignores the disruption),
the replacement is unschedulable and the node provisioner adds a node for it while the pool
can grow. At the deadline the Job controller deletes what is left.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from gpupact.compile.model import Bundle
from gpupact.compile.prewarm import LABEL_PREWARM
from gpupact.contract.keys import LABEL_POOL
from gpupact.twin.cron import fire_times, zone_of
from gpupact.twin.world import PodTemplate

PLACEHOLDER_CLASS = ""  # placeholders belong to no class: no promise, no usage record


@dataclass(frozen=True)
class PrewarmJob:
    """One compiled pre-warm CronJob."""

    name: str
    pool: str
    schedule: str
    time_zone: str
    deadline_s: float
    pods: int
    pod: PodTemplate


@dataclass(frozen=True)
class PrewarmRun:
    """One firing of a pre-warm CronJob inside (or overlapping) the run, in run seconds."""

    job: PrewarmJob
    name: str  # the Job's name
    begin: float
    end: float


def prewarm_jobs(
    bundle: Bundle, priority_classes: Mapping[str, Mapping[str, Any]]
) -> list[PrewarmJob]:
    out = []
    for obj in bundle.of_kind("CronJob"):
        labels = obj["metadata"].get("labels", {})
        if LABEL_PREWARM not in labels:
            continue
        job_spec = obj["spec"]["jobTemplate"]["spec"]
        template = job_spec["template"]
        out.append(
            PrewarmJob(
                obj["metadata"]["name"],
                labels[LABEL_POOL],
                obj["spec"]["schedule"],
                obj["spec"].get("timeZone", "Etc/UTC"),
                float(job_spec["activeDeadlineSeconds"]),
                int(job_spec.get("parallelism", 1)),
                PodTemplate.of(obj["metadata"]["namespace"], template, priority_classes),
            )
        )
    return out


def prewarm_runs(jobs: list[PrewarmJob], start: datetime, duration_s: float) -> list[PrewarmRun]:
    """Every firing whose Job is still active at some point of [0, duration): the ones that
    fired before the start (the cluster was already warm) are included with their
    remaining time."""
    end = start + timedelta(seconds=duration_s)
    out = []
    for job in jobs:
        lookback = start - timedelta(seconds=job.deadline_s)
        for moment in fire_times(job.schedule, lookback, end, zone_of(job.time_zone)):
            begin = (moment - start).total_seconds()
            finish = begin + job.deadline_s
            if finish > 0:
                stamp = moment.astimezone(UTC).strftime("%Y%m%d%H%M")
                out.append(PrewarmRun(job, f"{job.name}-{stamp}", begin, finish))
    return sorted(out, key=lambda r: (r.begin, r.name))
