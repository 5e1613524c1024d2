"""A KAI-Scheduler session with this package's actions.

The framework (`framework.KaiSession`) knows no action, so the actions, the solver and the
job order can import it without a cycle; this subclass supplies the action table.
"""

from __future__ import annotations

from gpupact.engine.kai import framework
from gpupact.engine.kai.actions import ACTIONS
from gpupact.engine.kai.framework import KaiConfig, KaiResult, NotModelledError


class KaiSession(framework.KaiSession):
    """`framework.KaiSession` with every action of `actions.ACTIONS` runnable by name."""

    action_table = ACTIONS


__all__ = ["KaiConfig", "KaiResult", "KaiSession", "NotModelledError"]
