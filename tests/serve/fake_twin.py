"""A small stand-in for the twin's Simulation (same interface), deterministic in its time.

Two services of `qwen-72b` (tenants search and ads) and one of the smaller `qwen-7b`; the
search backend's queue grows with time, so decisions change as the clock advances.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

START = datetime(2026, 11, 10, tzinfo=UTC)


class FakeSimulation:
    def __init__(self, *, search_queue_per_hour: float = 0.0, pending: int = 0) -> None:
        self.now = 0.0
        self.start = START
        self.search_queue_per_hour = search_queue_per_hour
        self.pending = pending
        self.overrides: dict[str, dict[str, Any]] = {}

    def run_until(self, t: float) -> None:
        assert t >= self.now, "the twin only moves forward"
        self.now = t

    def backends(self) -> list[dict[str, Any]]:
        hours = self.now / 3600
        rows = [
            {
                "service": "chat-search",
                "model": "qwen-72b",
                "tenant": "search",
                "pool": "gpu-inference",
                "desired": 4 + self.pending,
                "ready": 4,
                "pending": self.pending,
                "pendingReason": "0/8 nodes are available: 8 Insufficient nvidia.com/gpu"
                if self.pending
                else None,
                "queueLength": round(self.search_queue_per_hour * hours, 3),
                "kvCacheUse": 0.5,
                "healthy": True,
                "coldStartSeconds": 360.0,
                "ttftP99Seconds": 0.8,
            },
            {
                "service": "chat-ads",
                "model": "qwen-72b",
                "tenant": "ads",
                "pool": "gpu-inference",
                "desired": 2,
                "ready": 2,
                "pending": 0,
                "pendingReason": None,
                "queueLength": 1,
                "kvCacheUse": 0.3,
                "healthy": True,
                "coldStartSeconds": 360.0,
                "ttftP99Seconds": 0.6,
            },
            {
                "service": "mini",
                "model": "qwen-7b",
                "tenant": None,
                "pool": "gpu-inference",
                "desired": 1,
                "ready": 1,
                "pending": 0,
                "pendingReason": None,
                "queueLength": 0,
                "kvCacheUse": None,
                "healthy": True,
                "coldStartSeconds": 120.0,
                "ttftP99Seconds": None,
            },
        ]
        for row in rows:
            row.update(self.overrides.get(row["service"], {}))
        return rows

    def usage_records(self) -> list[dict[str, Any]]:
        t0 = self.start.timestamp()
        out = []
        for tenant, service, gpus in (("search", "chat-search", 2.0), ("ads", "chat-ads", 1.0)):
            out.append(
                {
                    "pod": f"{service}-0",
                    "namespace": tenant,
                    "tenant": tenant,
                    "service": service,
                    "job": None,
                    "model": "qwen-72b",
                    "workloadClass": "online-infer",
                    "owner": f"{tenant}@acme.example",
                    "costCenter": f"cc-{tenant}",
                    "pool": "gpu-inference",
                    "gpuModel": "h100-80g",
                    "gpus": gpus,
                    "start": t0,
                    "end": None,
                    "restarts": 0,
                }
            )
        return out

    def pending_durations(self) -> list[tuple[str, float]]:
        return [("online-infer", 2.0), ("online-infer", 40.0), ("batch", 900.0)]

    def blocked(self) -> dict[str, int]:
        return {"podGroups": 2, "workloads": 5}
