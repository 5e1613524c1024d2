"""Volcano `sla`: a job may wait at most its SLA waiting time. Its own
`sla-waiting-time` PodGroup annotation (see model.job_waiting_time), else the plugin's
`sla-waiting-time` argument (a Go duration string; anything else, or a non-positive value,
leaves it unset).

- jobOrder: jobs whose deadline (creation + waiting time) comes first go first; jobs
  without a waiting time go after those with one.
- jobEnqueueable / jobPipelined: a job that has waited at least its waiting time is
  permitted (it is enqueued and may be pipelined regardless of other plugins' abstentions);
  otherwise, or without a waiting time, the plugin abstains.

Time is the session's injected `now_nanos`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpupact.engine.volcano.framework import ABSTAIN, PERMIT
from gpupact.engine.volcano.plugins.base import Plugin
from gpupact.kube.durations import MAX_DURATION, parse_go_duration

if TYPE_CHECKING:
    from gpupact.engine.volcano.framework import Session
    from gpupact.engine.volcano.model import JobInfo

WAITING_TIME = "sla-waiting-time"


def global_waiting_time(arguments) -> int | None:
    value = arguments.get(WAITING_TIME)
    if not isinstance(value, str):
        return None  # upstream parses "" then: an error, no global waiting time
    try:
        nanos = parse_go_duration(value)
    except ValueError:
        return None
    return nanos if nanos > 0 else None


class SlaPlugin(Plugin):
    name = "sla"

    def on_session_open(self, ssn: Session) -> None:
        default = global_waiting_time(self.option.arguments)

        def waiting_time(job: JobInfo) -> int | None:
            return job.waiting_time if job.waiting_time is not None else default

        def job_order(left: JobInfo, right: JobInfo) -> int:
            lwait, rwait = waiting_time(left), waiting_time(right)
            if lwait is None:
                return 0 if rwait is None else 1
            if rwait is None:
                return -1
            ldue = left.creation_timestamp + lwait
            rdue = right.creation_timestamp + rwait
            return -1 if ldue < rdue else (1 if ldue > rdue else 0)

        def permit(job: JobInfo) -> int:
            wait = waiting_time(job)
            if wait is None:
                return ABSTAIN
            # time.Since saturates at the largest duration
            waited = min(ssn.now_nanos - job.creation_timestamp, MAX_DURATION)
            return ABSTAIN if waited < wait else PERMIT

        ssn.add_fn("jobOrder", self.name, job_order)
        ssn.add_fn("jobEnqueueable", self.name, permit)
        ssn.add_fn("jobPipelined", self.name, permit)
