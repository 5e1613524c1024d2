"""What a service's users feel: requests queue for sequence slots on the ready replicas.

Each ready replica holds `max_sequences` concurrent sequences (its KV cache), each for
`service_time_s` on average (prefill + decode, from `gpupact.plan`), so the service is an
M/M/c queue with c = replicas x max_sequences. Below saturation the wait is Erlang C's
(P50 / P99 of the waiting time); at or above it requests pile up in a backlog that drains at
the service rate (a fluid queue), and the wait is backlog / rate. TTFT = wait + prefill of the
request's prompt. A time-sliced GPU serves at 1/replicas of its speed (the slowdown is in
the profile).
"""

from __future__ import annotations

import math
from dataclasses import dataclass


def erlang_c(servers: int, offered: float) -> float:
    """Probability that an arrival waits, M/M/c with `offered` = lambda / mu (< servers)."""
    if servers <= 0:
        return 1.0
    if offered <= 0:
        return 0.0
    if offered >= servers:
        return 1.0
    if servers - offered > 10 * math.sqrt(offered) + 10:
        # more than ten standard deviations of spare servers: P(wait) < 1e-20
        return 0.0
    # Erlang B by its stable recurrence, then C from B
    b = 1.0
    for k in range(1, servers + 1):
        b = offered * b / (k + offered * b)
    rho = offered / servers
    return b / (1 - rho + rho * b)


def wait_quantile(servers: int, rate: float, service_time: float, q: float) -> float:
    """The q-quantile of the waiting time in M/M/c (0 when fewer than 1 - q wait)."""
    offered = rate * service_time
    if offered >= servers:
        return math.inf
    return _quantile(erlang_c(servers, offered), servers, rate, service_time, q)


def _quantile(waits: float, servers: int, rate: float, service_time: float, q: float) -> float:
    """The q-quantile of M/M/c waiting time given P(wait) (the wait is exponential with
    rate c*mu - lambda for those who wait)."""
    if rate * service_time >= servers:
        return math.inf
    mu = 1.0 / service_time
    tail = 1.0 - q
    if waits <= tail:
        return 0.0
    return math.log(waits / tail) / (servers * mu - rate)


@dataclass
class ServiceQueue:
    """One service's request queue over time (advanced tick by tick)."""

    max_sequences: int
    service_time_s: float
    backlog: float = 0.0  # requests waiting beyond the slots (fluid)
    in_flight: float = 0.0  # sequences being served
    served: float = 0.0

    def step(self, rps: float, replicas: int, dt: float) -> tuple[float, float]:
        """Advance by `dt` seconds at `rps` arrivals with `replicas` ready; returns the
        (P50, P99) waiting time in seconds over the tick."""
        slots = replicas * self.max_sequences
        capacity = slots / self.service_time_s  # requests per second
        demand = rps * self.service_time_s  # sequences wanted (Little)
        if slots == 0:
            self.backlog += rps * dt
            self.in_flight = 0.0
            return math.inf, math.inf
        if self.backlog > 0 or demand >= slots:
            self.backlog = max(0.0, self.backlog + (rps - capacity) * dt)
            if self.backlog > 0 or demand >= slots:
                self.in_flight = float(slots)
                self.served += capacity * dt
                wait = self.backlog / capacity
                return wait, wait
            # the backlog drained within the tick: an ordinary queue again
        self.in_flight = demand
        self.served += rps * dt
        waits = erlang_c(slots, demand)
        return (
            _quantile(waits, slots, rps, self.service_time_s, 0.5),
            _quantile(waits, slots, rps, self.service_time_s, 0.99),
        )

    @property
    def queue_length(self) -> float:
        return self.backlog

    def utilisation(self, replicas: int) -> float:
        slots = replicas * self.max_sequences
        return min(1.0, self.in_flight / slots) if slots else 0.0
