"""A Volcano session wired to this package's plugins and actions.

The framework (`framework.Session`) knows no plugin and no action, so the plugins and
actions can import it without a cycle; this subclass supplies both tables.
"""

from __future__ import annotations

from gpupact.engine.volcano import framework
from gpupact.engine.volcano.actions import ACTIONS
from gpupact.engine.volcano.framework import (
    ABSTAIN,
    EXTENSION_POINTS,
    PERMIT,
    REJECT,
    EventHandler,
    NodeAnswer,
    NotModelledError,
    PluginOption,
    SessionResult,
    ValidateResult,
    podgroup_phase,
)
from gpupact.engine.volcano.plugins import build_plugin


class Session(framework.Session):
    """`framework.Session` with every plugin of `plugins.PLUGINS` buildable by name and every
    action of `actions.ACTIONS` runnable by name."""

    build_plugin = staticmethod(build_plugin)
    action_table = ACTIONS


__all__ = [
    "ABSTAIN",
    "EXTENSION_POINTS",
    "PERMIT",
    "REJECT",
    "EventHandler",
    "NodeAnswer",
    "NotModelledError",
    "PluginOption",
    "Session",
    "SessionResult",
    "ValidateResult",
    "podgroup_phase",
]
