"""When a pod already running in a cluster gives its GPUs back, estimated from what a snapshot
shows of it: its owner's kind, its age and its deadlines. Nothing in a snapshot says how long
a pod still needs, so each kind gets one stated rule:

- a run that ends (a batch/v1 Job, a CronJob's Job, a Volcano Job, a bare pod): at its
  `activeDeadlineSeconds` where one is set - the Job's counts from the Job's status.startTime
  (JobSpec), the pod's own from the pod's status.startTime (PodSpec) - the earliest of the
  two, the latest the run may last; otherwise after as long again as it has run so far
  (remaining = age). That is the median of Gott's delta-t estimate: with nothing else known,
  the moment of observation is uniform over the run's life, so with 50% confidence the rest
  lies between age/3 and 3 x age and the median is age (J. R. Gott III, "Implications of the
  Copernican principle for our future prospects", Nature 363, 315-319 (1993),
  https://doi.org/10.1038/363315a0; restated in C. M. Caves, arXiv astro-ph/0001414,
  https://arxiv.org/abs/astro-ph/0001414). It is a median, not a mean: half the runs end
  later, and a run observed young is given little time.
- a pod its controller keeps (Deployment through its ReplicaSet, ReplicaSet, StatefulSet,
  DaemonSet, LeaderWorkerSet, and any other controller kind): never ends within the run.
- a pod being deleted: ends when its grace period is over.
- a run whose age is unknown (the snapshot holds no time, the pod no start): held through
  the run (the cautious side for the contract's classes).

Deadlines: https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/job-v1/
("activeDeadlineSeconds: ... relative to the startTime that the job may be continuously
active") and .../pod-v1/ ("relative to StartTime before the system will actively try to mark
it failed").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpupact.engine.preemption.importance import NANOS_PER_SECOND, parse_time_nanos
from gpupact.kube.objects import Pod

TEMPLATE_HASH_LABEL = "pod-template-hash"  # the Deployment controller's ReplicaSet suffix
VOLCANO_JOB_GROUP = "batch.volcano.sh"
DEFAULT_GRACE_S = 30.0  # core/v1 defaulting of terminationGracePeriodSeconds

RUN_KINDS = ("Job", "CronJob", "Job.batch.volcano.sh", "Pod")  # runs that end by themselves
RUN_RULE = (
    "ends at its activeDeadlineSeconds where set (the Job's from the Job's startTime, the "
    "pod's from its startTime), else after as long again as it has run (remaining = age, "
    "the median of Gott's delta-t estimate)"
)
BARE_RULE = RUN_RULE + "; not recreated if evicted"
CONTROLLER_RULE = "kept by its controller: holds its GPUs through the run (recreated if evicted)"
TERMINATING_RULE = "being deleted: ends when its grace period is over"
UNKNOWN_AGE_RULE = "age unknown (no start time or no snapshot time): held through the run"


@dataclass(frozen=True)
class EndEstimate:
    kind: str  # the owner's kind: Job, Deployment, ..., Pod for a bare pod
    owner: str  # "Job ns/name", "Pod ns/name"
    remaining: float | None  # seconds after t = 0; None: not within any run
    basis: str  # activeDeadlineSeconds | age | controller | terminating | unknown-age

    @property
    def recreated(self) -> bool:
        """A controller (Job and workload controllers alike) replaces the pod if it is
        evicted; a bare pod is gone."""
        return self.kind != "Pod"


def rule_of(kind: str) -> str:
    if kind == "Pod":
        return BARE_RULE
    return RUN_RULE if kind in RUN_KINDS else CONTROLLER_RULE


def owner_kind(pod: Pod) -> tuple[str, str]:
    """(kind, name) of the pod's controller as kubectl would name it: a ReplicaSet named
    `<deployment>-<hash>` over a pod labelled `pod-template-hash: <hash>` is that
    Deployment's; a Volcano Job is `Job.batch.volcano.sh`; no owner: the pod itself."""
    ref = pod.controller
    if ref is None:
        refs = (pod.raw.get("metadata") or {}).get("ownerReferences") if pod.raw else None
        first = refs[0] if isinstance(refs, list) and refs and isinstance(refs[0], dict) else None
        if first is None:
            return "Pod", pod.name
        kind, name, api = str(first.get("kind", "")), str(first.get("name", "")), ""
        api = str(first.get("apiVersion", ""))
    else:
        kind, name, api = ref.kind, ref.name, ref.api_version
    digest = pod.labels.get(TEMPLATE_HASH_LABEL, "")
    if kind == "ReplicaSet" and digest and name.endswith("-" + digest):
        return "Deployment", name[: -len(digest) - 1]
    if kind == "Job" and api.startswith(VOLCANO_JOB_GROUP + "/"):
        return "Job.batch.volcano.sh", name
    return kind or "Pod", name or pod.name


def _seconds(text: object) -> float | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        return parse_time_nanos(text) / NANOS_PER_SECOND
    except ValueError:
        return None


def _seconds_field(obj: object, name: str) -> float | None:
    """A count of seconds from an object the snapshot reader did not type (a Job, a pod's
    deletion fields): a positive finite number, else None (not set, or unusable)."""
    value = obj.get(name) if isinstance(obj, Mapping) else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        seconds = float(value)
    except OverflowError:  # an integer past float range: no deadline within any run
        return None
    return seconds if 0 < seconds < float("inf") else None


def _deadline(spec: object) -> float | None:
    return _seconds_field(spec, "activeDeadlineSeconds")


def estimate_end(
    pod: Pod, observed: float | None, jobs: Mapping[str, Mapping[str, Any]]
) -> EndEstimate:
    """When `pod` (bound, running at `observed`, Unix seconds) ends, in seconds after the
    observation. `jobs`: raw batch/v1 Jobs by "namespace/name" (their deadlines)."""
    kind, name = owner_kind(pod)
    owner = f"{kind} {pod.namespace}/{name}"
    raw: Mapping[str, Any] = pod.raw or {}
    meta = raw.get("metadata") if isinstance(raw.get("metadata"), Mapping) else {}
    spec = raw.get("spec") if isinstance(raw.get("spec"), Mapping) else {}
    if pod.terminating:
        deleted = _seconds(meta.get("deletionTimestamp"))
        grace = _seconds_field(meta, "deletionGracePeriodSeconds")
        if grace is None:
            grace = _seconds_field(spec, "terminationGracePeriodSeconds")
        if grace is None:
            grace = DEFAULT_GRACE_S
        left = grace if deleted is None or observed is None else deleted + grace - observed
        return EndEstimate(kind, owner, max(0.0, left), "terminating")
    if kind not in RUN_KINDS:
        return EndEstimate(kind, owner, None, "controller")
    if observed is None:
        return EndEstimate(kind, owner, None, "unknown-age")
    started = _seconds(pod.start_time) or _seconds(pod.creation_timestamp)
    deadlines = []
    pod_deadline = _deadline(spec)
    if pod_deadline is not None and started is not None:
        deadlines.append(pod_deadline - (observed - started))
    job = jobs.get(f"{pod.namespace}/{name}") if kind == "Job" else None
    if job is not None:
        job_deadline = _deadline(job.get("spec"))
        job_meta = job.get("metadata") if isinstance(job.get("metadata"), Mapping) else {}
        job_status = job.get("status") if isinstance(job.get("status"), Mapping) else {}
        job_start = _seconds(job_status.get("startTime")) or _seconds(
            job_meta.get("creationTimestamp")
        )
        if job_deadline is not None and job_start is not None:
            deadlines.append(job_deadline - (observed - job_start))
    if deadlines:
        return EndEstimate(kind, owner, max(0.0, min(deadlines)), "activeDeadlineSeconds")
    if started is None:
        return EndEstimate(kind, owner, None, "unknown-age")
    return EndEstimate(kind, owner, max(0.0, observed - started), "age")
