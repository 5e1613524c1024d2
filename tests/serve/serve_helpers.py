"""Tokens, a settable clock and auth headers for the API tests."""

from __future__ import annotations

from gpupact.serve import parse_tokens

TOKENS = {
    "search": "search-token-0123456789",
    "ads": "ads-token-0123456789abc",
    "admin": "admin-token-0123456789",
}


class Clock:
    def __init__(self, t: float = 1_000_000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def tokens(budget_search: float | None = None):
    search = {"name": "search", "token": TOKENS["search"]}
    if budget_search is not None:
        search["gpuHourBudget"] = budget_search
    return parse_tokens(
        {
            "tenants": [search, {"name": "ads", "token": TOKENS["ads"]}],
            "admins": [{"name": "sre", "token": TOKENS["admin"]}],
        }
    )


def auth(who: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKENS[who]}"}
