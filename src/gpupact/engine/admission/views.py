"""What the scheduling cycle and the quota raises read and change of the admission state,
as Protocols: `state` implements both and imports `cycle` and `raises`, so they name these
views instead of importing `state` back (the package then reads top to bottom)."""

from __future__ import annotations

from typing import Protocol

from gpupact.engine.admission.fair_sharing import FairSharingConfig
from gpupact.engine.admission.features import FeatureGates
from gpupact.engine.admission.flavor_assigner import PlacementCheck
from gpupact.engine.admission.model import Admission, ClusterQueue, QuotaRaise, ResourceFlavor
from gpupact.engine.admission.runtime import ClusterQueueRuntime
from gpupact.engine.admission.workload_info import WorkloadInfo


class CycleView(Protocol):
    """The state one scheduling cycle (cycle.run_cycle) reads and records into."""

    cycle_number: int
    cluster_queue_runtimes: dict[str, ClusterQueueRuntime]
    resource_flavors: dict[str, ResourceFlavor]
    fair_sharing: FairSharingConfig | None
    features: FeatureGates
    placement: PlacementCheck | None

    def namespace_problem(self, info: WorkloadInfo) -> tuple[str, str] | None: ...

    def pop_heads(self) -> list[WorkloadInfo]: ...

    def record_admission(self, info: WorkloadInfo, admission: Admission, now: int) -> None: ...

    def requeue(self, info: WorkloadInfo, reason: str) -> str: ...

    def note_pending(self, key: str, code: str, message: str) -> None: ...


class RaiseView(Protocol):
    """The state temporary quota raises (raises.py) are validated against and applied to."""

    raises: list[QuotaRaise]
    on_expiry: str
    clock: int | None
    cluster_queue_specs: dict[str, ClusterQueue]
    cluster_queue_runtimes: dict[str, ClusterQueueRuntime]
    workloads: dict[str, WorkloadInfo]

    def quota_changed(self, *cluster_queues: str) -> None: ...
