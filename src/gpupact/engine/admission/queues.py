"""Pending workloads of one ClusterQueue: Kueue's active heap and inadmissible set.

Heap order: the sticky preemptor first (BestEffortFIFO only: a head waiting for its victims
keeps its place), then higher priority, then earlier creation, then UID and key.

Where an unadmitted head goes back (RequeueIfNotPresent):
- StrictFIFO: always straight back to the heap, so a head that does not fit blocks the queue
  (except for a namespace mismatch);
- BestEffortFIFO: back to the heap only when it failed after nomination (capacity taken earlier
  in the cycle), is waiting for preemptions, or has flavors left to scan; otherwise (NoFit, no
  preemption candidates) it is parked as inadmissible and the next workload becomes the head.
  Workloads of the same scheduling shape still in the heap are parked with it, and newly
  submitted ones too, until a cluster event requeues the inadmissible set.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Hashable, Mapping

from gpupact.engine.admission.model import BEST_EFFORT_FIFO, STRICT_FIFO
from gpupact.engine.admission.workload_info import WorkloadInfo

# requeue reasons (Kueue RequeueReason)
GENERIC = ""
FAILED_AFTER_NOMINATION = "FailedAfterNomination"
NAMESPACE_MISMATCH = "NamespaceMismatch"
PENDING_PREEMPTION = "PendingPreemption"
PREEMPTION_FAILED = "PreemptionFailed"
NO_FIT = "NoFit"
PREEMPTION_NO_CANDIDATES = "PreemptionNoCandidates"

_IMMEDIATE_BEST_EFFORT = frozenset({FAILED_AFTER_NOMINATION, PENDING_PREEMPTION, PREEMPTION_FAILED})
_BULK_MOVE = frozenset({NO_FIT, PREEMPTION_NO_CANDIDATES})

ACTIVE = "active"
INADMISSIBLE = "inadmissible"


class ClusterQueueQueue:
    __slots__ = (
        "_by_shape",
        "_current",
        "_heap",
        "_infos",
        "_seq",
        "_stale",
        "bulk_moved",
        "equivalence_hashing",
        "inadmissible",
        "name",
        "sticky",
        "strategy",
    )

    def __init__(
        self, name: str, strategy: str = BEST_EFFORT_FIFO, *, equivalence_hashing: bool = True
    ) -> None:
        if strategy not in (STRICT_FIFO, BEST_EFFORT_FIFO):
            raise ValueError(f"unknown queueing strategy {strategy!r}")
        self.name = name
        self.strategy = strategy
        self._heap: list[tuple[tuple, int, str]] = []
        self._current: dict[str, tuple] = {}  # key -> its live heap entry
        # key -> its last heap entry, no longer live but still in the heap: parking and
        # retrying a workload whose order did not change revives that entry instead of
        # pushing another (the order tuple ends with the unique key, so ties never occur)
        self._stale: dict[str, tuple] = {}
        self._infos: dict[str, WorkloadInfo] = {}
        # the active workloads again, per scheduling shape (same order as _infos): parking a
        # head's equivalents must not scan the whole heap
        self._by_shape: dict[Hashable, dict[str, WorkloadInfo]] = {}
        self._seq = 0
        self.inadmissible: dict[str, WorkloadInfo] = {}
        # scheduling shapes parked as inadmissible -> the reason (equivalence hashing)
        self.bulk_moved: dict[Hashable, str] = {}
        # the BestEffortFIFO head waiting for its preemptions to complete
        self.sticky: str | None = None
        # SchedulingEquivalenceHashing: park workloads equivalent to a parked head
        self.equivalence_hashing = equivalence_hashing

    def copy(self, infos: Mapping[str, WorkloadInfo]) -> ClusterQueueQueue:
        """An independent copy whose entries are the given (copied) workload records."""
        other = ClusterQueueQueue(
            self.name, self.strategy, equivalence_hashing=self.equivalence_hashing
        )
        other._heap = list(self._heap)
        other._current = dict(self._current)
        other._stale = dict(self._stale)
        other._infos = {key: infos[key] for key in self._infos}
        for key, info in other._infos.items():
            other._by_shape.setdefault(info.shape, {})[key] = info
        other._seq = self._seq
        other.inadmissible = {key: infos[key] for key in self.inadmissible}
        other.bulk_moved = dict(self.bulk_moved)
        other.sticky = self.sticky
        return other

    # --- heap -------------------------------------------------------------------------------

    def _order(self, info: WorkloadInfo) -> tuple:
        w = info.workload
        return (info.key != self.sticky, -w.priority, w.creation_time, w.uid, info.key)

    def _push(self, info: WorkloadInfo) -> None:
        key = info.key
        order = self._order(info)
        self._infos[key] = info
        self._by_shape.setdefault(info.shape, {})[key] = info
        old = self._stale.pop(key, None)
        if old is not None and old[0] == order:
            self._current[key] = old
            return
        self._seq += 1
        entry = (order, self._seq, key)
        self._current[key] = entry
        heapq.heappush(self._heap, entry)

    def _discard(self, key: str) -> WorkloadInfo | None:
        entry = self._current.pop(key, None)
        if entry is not None:
            self._stale[key] = entry
        info = self._infos.pop(key, None)
        if info is not None:
            self._forget_shape(info)
        return info

    def _forget_shape(self, info: WorkloadInfo) -> None:
        bucket = self._by_shape[info.shape]
        del bucket[info.key]
        if not bucket:
            del self._by_shape[info.shape]

    def __len__(self) -> int:
        return len(self._current) + len(self.inadmissible)

    def __contains__(self, key: str) -> bool:
        return key in self._current or key in self.inadmissible

    def active_count(self) -> int:
        return len(self._current)

    def in_active(self, key: str) -> bool:
        return key in self._current

    def pop(self) -> WorkloadInfo | None:
        heap = self._heap
        while heap:
            entry = heapq.heappop(heap)
            key = entry[2]
            if self._current.get(key) is not entry:
                if self._stale.get(key) is entry:
                    del self._stale[key]
                continue
            del self._current[key]
            info = self._infos.pop(key)
            self._forget_shape(info)
            return info
        return None

    def active_in_order(self) -> list[WorkloadInfo]:
        return sorted(self._infos.values(), key=self._order)

    # --- membership -------------------------------------------------------------------------

    def add(self, info: WorkloadInfo) -> str:
        """A new or updated pending workload (Kueue PushOrUpdate). Returns where it went."""
        key = info.key
        self.inadmissible.pop(key, None)
        if (
            self.strategy == BEST_EFFORT_FIFO
            and key not in self._current
            and info.shape in self.bulk_moved
        ):
            self.inadmissible[key] = info
            return INADMISSIBLE
        self._discard(key)
        self._push(info)
        return ACTIVE

    def remove(self, key: str) -> WorkloadInfo | None:
        if self.sticky == key:
            self.sticky = None
        info = self.inadmissible.pop(key, None)
        found = self._discard(key)
        return found or info

    def set_sticky(self, key: str | None) -> None:
        previous = self.sticky
        self.sticky = key
        # re-key the previous sticky workload if it is still waiting in the heap
        if previous is not None and previous != key and previous in self._current:
            self._push(self._infos[previous])

    def requeue(self, info: WorkloadInfo, reason: str) -> str:
        """Put back a head that was not admitted (Kueue RequeueIfNotPresent)."""
        key = info.key
        if reason == PENDING_PREEMPTION and self.strategy == BEST_EFFORT_FIFO:
            self.set_sticky(key)
        if self.strategy == STRICT_FIFO:
            immediate = reason != NAMESPACE_MISMATCH
        else:
            immediate = reason in _IMMEDIATE_BEST_EFFORT
        last = info.last_assignment
        if immediate or (last is not None and last.pending_flavors()):
            self.inadmissible.pop(key, None)
            if key not in self._current:
                self._push(info)
            return ACTIVE
        if key in self.inadmissible or key in self._current:
            return INADMISSIBLE if key in self.inadmissible else ACTIVE
        self.inadmissible[key] = info
        if self.equivalence_hashing and reason in _BULK_MOVE and self.strategy == BEST_EFFORT_FIFO:
            self.bulk_moved[info.shape] = reason
            for other in list(self._by_shape.get(info.shape, {}).values()):
                self._discard(other.key)
                self.inadmissible[other.key] = other
        return INADMISSIBLE

    def requeue_inadmissible(self, stays: Callable[[WorkloadInfo], bool] | None = None) -> int:
        """A cluster event may have made room: every parked workload goes back to the heap,
        except those `stays` keeps (Kueue: whose namespace is gone or not selected)."""
        self.bulk_moved.clear()
        moved = 0
        for key, info in list(self.inadmissible.items()):
            if stays is not None and stays(info):
                continue
            del self.inadmissible[key]
            if key not in self._current:
                self._push(info)
                moved += 1
        return moved
