"""Pre-warm windows (`pools[].preWarm`) as objects the cluster runs: placeholder pods.

cluster-autoscaler's overprovisioning recipe (FAQ "How can I configure overprovisioning with
Cluster Autoscaler?", https://github.com/kubernetes/autoscaler/blob/master/cluster-autoscaler/
FAQ.md): pause pods of a PriorityClass with value -10 - "the lowest priority that triggers
scaling clusters" (pods below `--expendable-pods-priority-cutoff`, default -10, never trigger
a scale-up) - and `terminationGracePeriodSeconds: 0`. They hold capacity; a real pod preempts
one, takes its node at once, and the placeholder, now unschedulable, makes the autoscaler add
a node. Karpenter provisions for any pending pod, whatever its priority.

Per window, one CronJob `<pool>-prewarm-<window>`:
- schedule: a recurring window's cron in the contract's `timeZone` (like the job CronJobs), or
  a fixed window's start instant as `M H D Mo *` with `timeZone: Etc/UTC` (exact whatever the
  contract's zone does at daylight-saving changes; it would fire again on that date next year,
  so remove the window once it is over);
- its Job runs `minNodes` pause pods in parallel, each requesting all of one node's GPU
  devices (so each holds one whole node of the pool), tolerating the pool's taint and
  selecting its nodes; `activeDeadlineSeconds` ends the Job, and with it the pods, at the
  window's end (the Job controller terminates its running pods when the deadline passes,
  https://kubernetes.io/docs/concepts/workloads/controllers/job/#job-termination-and-cleanup);
- `podFailurePolicy` ignores pods that fail with the `DisruptionTarget` condition (what a
  preempted pod carries), so the Job replaces a preempted placeholder without counting it
  against `backoffLimit`
  (https://kubernetes.io/docs/concepts/workloads/controllers/job/#pod-failure-policy);
- `karpenter.sh/do-not-disrupt`: Karpenter does not consolidate a node a placeholder holds.
The PriorityClass has `preemptionPolicy: Never`: a placeholder never evicts anyone.

Meaning: during the window the pool keeps `minNodes` nodes' worth of GPUs free for its
classes, up to `nodes.max` (what is preempted comes back on new nodes while the pool can
grow). Kueue leaves the Jobs alone (no queue-name label; `manageJobsWithoutQueueName`
defaults to false).
"""

from __future__ import annotations

from datetime import UTC

from gpupact.compile.core import pod_spec
from gpupact.compile.model import Obj
from gpupact.compile.names import (
    KARPENTER_DO_NOT_DISRUPT,
    device_resource,
    namespace_of,
    platform_labels,
    seconds,
)
from gpupact.contract.schema import Contract, Pool, PreWarm
from gpupact.errors import FieldError

PRIORITY_CLASS = "gpupact-prewarm"
PRIORITY = -10  # the lowest priority cluster-autoscaler still scales up for
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"
FIXED_WINDOW_ZONE = "Etc/UTC"
LABEL_PREWARM = "gpupact.io/prewarm"  # the pool's window: `<pool>.<window>`
MAX_CRONJOB_NAME = 52  # the CronJob controller appends an 11-character suffix to Job names


def prewarm_namespace(contract: Contract) -> str:
    """Placeholders belong to no tenant: they live in the contract's shared namespace."""
    return namespace_of(contract, None)


def compile_prewarm(contract: Contract) -> tuple[list[Obj], list[Obj]]:
    """(namespaces, objects): the PriorityClass and one CronJob per pre-warm window."""
    windows = [(i, pool) for i, pool in enumerate(contract.pools) if pool.pre_warm]
    if not windows:
        return [], []
    objects: list[Obj] = [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": PRIORITY_CLASS, "labels": platform_labels(contract)},
            "value": PRIORITY,
            "globalDefault": False,
            "preemptionPolicy": "Never",
            "description": "Placeholder pods of pre-warm windows: hold nodes, yield to any pod.",
        }
    ]
    for i, pool in windows:
        for j, window in enumerate(pool.pre_warm):
            objects.append(_cron_job(contract, pool, window, ("pools", i, "preWarm", j)))
    return _namespace(contract), objects


def window_name(pool: Pool, window: PreWarm, index: int) -> str:
    return f"{pool.name}-prewarm-{window.name or index}"


def schedule_of(contract: Contract, window: PreWarm) -> tuple[str, str, int]:
    """(cron schedule, its time zone, seconds the window lasts)."""
    if window.schedule is not None:
        return window.schedule, contract.time_zone, seconds(window.duration)  # type: ignore[arg-type]
    start = window.start.astimezone(UTC)  # type: ignore[union-attr]
    length = seconds(window.end - window.start)  # type: ignore[operator]
    return f"{start.minute} {start.hour} {start.day} {start.month} *", FIXED_WINDOW_ZONE, length


def _cron_job(contract: Contract, pool: Pool, window: PreWarm, where: tuple) -> Obj:
    name = window_name(pool, window, where[-1])
    if len(name) > MAX_CRONJOB_NAME:
        raise FieldError(
            (*where, "name"),
            f"CronJob name {name} is longer than {MAX_CRONJOB_NAME} characters: "
            "shorten the window's (or the pool's) name",
        )
    schedule, zone, length = schedule_of(contract, window)
    labels = {**platform_labels(contract, pool=pool.name), LABEL_PREWARM: name}
    # separate copies: the writer must not emit YAML anchors between them
    devices = str(pool.devices_per_node)
    container = {
        "name": "placeholder",
        "image": PAUSE_IMAGE,
        "resources": {
            "requests": {device_resource(pool): devices},
            "limits": {device_resource(pool): devices},
        },
    }
    spec = pod_spec(
        pool=pool,
        container=container,
        priority_class=PRIORITY_CLASS,
        gang=False,
        restart_policy="Never",
    )
    spec["terminationGracePeriodSeconds"] = 0
    template = {
        "metadata": {"labels": dict(labels), "annotations": {KARPENTER_DO_NOT_DISRUPT: "true"}},
        "spec": spec,
    }
    job_spec = {
        "parallelism": window.min_nodes,
        "completions": window.min_nodes,
        "activeDeadlineSeconds": length,
        "podFailurePolicy": {
            "rules": [
                {
                    "action": "Ignore",
                    "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
                }
            ]
        },
        "template": template,
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": name, "namespace": prewarm_namespace(contract), "labels": labels},
        "spec": {
            "schedule": schedule,
            "timeZone": zone,
            "jobTemplate": {"metadata": {"labels": dict(labels)}, "spec": job_spec},
        },
    }


def _namespace(contract: Contract) -> list[Obj]:
    """The shared namespace, unless core.py already writes it (a tenantless service, or a
    tenant of that name)."""
    shared = prewarm_namespace(contract)
    if shared in {t.name for t in contract.tenants} or any(
        s.tenant is None for s in contract.services
    ):
        return []
    return [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": shared, "labels": platform_labels(contract)},
        }
    ]
