"""The API's state: the source, the current snapshot and policy, the ledger, the decisions.

`refresh()` runs off the request path (a background task every `refresh_seconds`): it asks the
source for a new snapshot, records new or changed usage in the ledger (idempotent), reads the
month's GPU-hours per tenant back from the ledger and swaps snapshot and policy in one step.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from gpupact.contract import Contract
from gpupact.ledger import Interval, Ledger
from gpupact.serve.auth import Tokens
from gpupact.serve.decisions import Policy
from gpupact.serve.metrics import registry_for
from gpupact.serve.policy import policy_from_contract
from gpupact.serve.snapshot import Snapshot
from gpupact.serve.sources import Source

DECISIONS_KEPT = 10_000


class ServeState:
    def __init__(
        self,
        source: Source,
        tokens: Tokens,
        ledger: Ledger,
        clock: Callable[[], float],
        *,
        contract: Contract | None = None,
        refresh_seconds: float | None = 1.0,
        queue_limit: float = 5,
        kv_limit: float = 0.8,
    ) -> None:
        self.source, self.tokens, self.ledger, self.clock = source, tokens, ledger, clock
        self.contract = contract
        self.refresh_seconds = refresh_seconds
        self.limits = (queue_limit, kv_limit)
        self.snapshot: Snapshot | None = None
        self.policy: Policy = policy_from_contract(
            contract, tokens.budgets, 0.0, queue_limit=queue_limit, kv_limit=kv_limit
        )
        self.decisions: deque[dict[str, Any]] = deque(maxlen=DECISIONS_KEPT)
        self.registry, self.decision_counter = registry_for(
            lambda: self.snapshot, lambda: self.policy
        )
        self._recorded: dict[str, tuple[Any, ...]] = {}
        self._lock = threading.Lock()

    def refresh(self) -> Snapshot:
        with self._lock:  # one refresh at a time (the background task, a test, the CLI)
            snap = self.source.refresh(self.clock())
            self._record(snap)
            window = snap.month
            assert window is not None
            month = self.ledger.gpu_hours(("tenant",), window.start, window.end, snap.at)
            total = self.ledger.gpu_hours(("tenant", "model"), 0.0, snap.at + 1, snap.at)
            snap = replace(
                snap,
                tenant_month_hours={(k[0] or ""): v for k, v in month.items()},
                hours_by_tenant_model={(k[0] or "", k[1] or ""): v for k, v in total.items()},
            )
            self.policy = policy_from_contract(
                self.contract,
                self.tokens.budgets,
                snap.at,
                queue_limit=self.limits[0],
                kv_limit=self.limits[1],
            )
            self.snapshot = snap
            return snap

    def _record(self, snap: Snapshot) -> None:
        """Ingest only intervals that are new or changed since the last refresh."""
        changed: list[Interval] = []
        for i in snap.intervals:
            mark = (i.end, i.restarts)
            if self._recorded.get(i.key) != mark:
                changed.append(i)
        if changed:
            self.ledger.ingest(changed)
            for i in changed:
                self._recorded[i.key] = (i.end, i.restarts)
        waits = [w for w in snap.waits if self._recorded.get(w.key) != (w.seconds, w.started)]
        if waits:
            self.ledger.ingest_waits(waits)
            for w in waits:
                self._recorded[w.key] = (w.seconds, w.started)
