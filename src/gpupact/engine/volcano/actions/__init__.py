"""Volcano's actions; a session runs the configured ones once, in order."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from gpupact.engine.volcano.actions.allocate import allocate
from gpupact.engine.volcano.actions.backfill import backfill
from gpupact.engine.volcano.actions.enqueue import enqueue
from gpupact.engine.volcano.actions.preempt import preempt
from gpupact.engine.volcano.actions.reclaim import reclaim

if TYPE_CHECKING:
    from gpupact.engine.volcano.framework import Session

ACTIONS: dict[str, Callable[[Session], None]] = {
    "enqueue": enqueue,
    "allocate": allocate,
    "preempt": preempt,
    "reclaim": reclaim,
    "backfill": backfill,
}

__all__ = ["ACTIONS"]
