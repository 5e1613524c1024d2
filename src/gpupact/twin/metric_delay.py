"""What the HPA sees of a pod metric: a Prometheus scrape every `scrape_interval`, served by
the custom-metrics adapter `adapter_delay` later (prometheus-adapter answers from Prometheus,
whose newest sample is at most a scrape old, and the HPA's query window adds to it).

The twin records the serving queue's state once per tick; the HPA at time t reads the state at
the last scrape instant s = floor((t - adapter_delay) / scrape_interval) * scrape_interval,
i.e. the newest tick sample taken at or before s. Before any scrape is visible the HPA sees no
metric and keeps the replica count (upstream: a missing metric is no scale decision).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import NamedTuple


class QueueSample(NamedTuple):
    t: float
    running: float  # sequences being served (vllm:num_requests_running, summed over pods)
    waiting: float  # requests queued for a slot (vllm:num_requests_waiting)
    gpu_util_total: float  # DCGM_FI_DEV_GPU_UTIL summed over the ready pods, percent


@dataclass
class MetricPipeline:
    scrape_interval: float = 15.0
    adapter_delay: float = 30.0
    samples: deque[QueueSample] = field(default_factory=deque)

    def record(self, sample: QueueSample) -> None:
        self.samples.append(sample)

    def visible(self, now: float) -> QueueSample | None:
        """The sample the HPA reads at `now`, or None when no scrape has reached it yet."""
        if now - self.adapter_delay < 0:
            return None
        if self.scrape_interval > 0:
            scraped_at = math.floor((now - self.adapter_delay) / self.scrape_interval)
            scraped_at *= self.scrape_interval
        else:
            scraped_at = now - self.adapter_delay
        seen: QueueSample | None = None
        # drop what no later read can need: keep the newest sample at or before scraped_at
        while len(self.samples) > 1 and self.samples[1].t <= scraped_at:
            self.samples.popleft()
        if self.samples and self.samples[0].t <= scraped_at:
            seen = self.samples[0]
        return seen


def queue_counts(queue: object) -> tuple[float, float]:
    """(running, waiting) of a service's serving queue: the `running` / `waiting` attributes
    of the engine model, or the fluid queue's `in_flight` / `queue_length`."""
    running = getattr(queue, "running", None)
    waiting = getattr(queue, "waiting", None)
    if running is None:
        running = queue.in_flight
    if waiting is None:
        waiting = queue.queue_length
    return float(running), float(waiting)
