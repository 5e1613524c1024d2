"""The GPU-hour ledger: usage intervals from the twin, a live cluster and Slurm accounting in
one store (SQLite or PostgreSQL), GPU-hours allocated / idle / utilised, FOCUS CSV export.

    with Ledger.open("ledger.db") as ledger:
        ledger.ingest(from_records(sim.usage_records()))       # idempotent, one transaction
        rows = allocated(ledger.intervals(w.start, w.end), w, now, by=("tenant", "model"))
"""

from gpupact.ledger.hours import (
    GROUPS,
    PoolHours,
    Usage,
    Window,
    allocated,
    idle_by_pool,
    month_window,
    total_gpu_hours,
)
from gpupact.ledger.kubernetes import Capacity, Observation, observe
from gpupact.ledger.records import (
    Interval,
    Wait,
    from_records,
    interval_from_record,
    interval_to_record,
    waits_from_pending_durations,
)
from gpupact.ledger.share import gpu_share
from gpupact.ledger.slurm import SacctRead, SlurmOptions, read_sacct
from gpupact.ledger.store import IngestResult, Ledger, database_url

__all__ = [
    "GROUPS",
    "Capacity",
    "IngestResult",
    "Interval",
    "Ledger",
    "Observation",
    "PoolHours",
    "SacctRead",
    "SlurmOptions",
    "Usage",
    "Wait",
    "Window",
    "allocated",
    "database_url",
    "from_records",
    "gpu_share",
    "idle_by_pool",
    "interval_from_record",
    "interval_to_record",
    "month_window",
    "observe",
    "read_sacct",
    "total_gpu_hours",
    "waits_from_pending_durations",
]
