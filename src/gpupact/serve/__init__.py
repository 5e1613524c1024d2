"""The gateway API: `/v1/backends`, `/v1/decisions`, `/v1/profiles`, budgets and `/metrics`,
backed by the twin on a scaled clock or a live cluster (docs/serve.md)."""

from gpupact.serve.app import create_app
from gpupact.serve.auth import Principal, Tokens, load_tokens, parse_tokens
from gpupact.serve.decisions import Decision, Policy, Request, decide
from gpupact.serve.snapshot import Backend, Snapshot
from gpupact.serve.sources import LiveSource, Simulator, TwinSource, live_lister, open_twin
from gpupact.serve.state import ServeState

__all__ = [
    "Backend",
    "Decision",
    "LiveSource",
    "Policy",
    "Principal",
    "Request",
    "ServeState",
    "Simulator",
    "Snapshot",
    "Tokens",
    "TwinSource",
    "create_app",
    "decide",
    "live_lister",
    "load_tokens",
    "open_twin",
    "parse_tokens",
]
