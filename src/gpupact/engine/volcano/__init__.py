"""Volcano's scheduler as a session model: queues, gangs, and the allocate / preempt /
reclaim / backfill / enqueue actions over the same plugins upstream configures."""

from gpupact.engine.volcano.session import (
    NotModelledError,
    PluginOption,
    Session,
    SessionResult,
)

__all__ = ["NotModelledError", "PluginOption", "Session", "SessionResult"]
