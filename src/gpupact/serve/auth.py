"""Bearer tokens per tenant, from a YAML (or JSON) file:

    tenants:
      - name: finance
        token: 9c1f...            # or tokenSha256: <hex digest of the token>
        gpuHourBudget: 2000       # optional: GPU-hours per calendar month
    admins:
      - name: platform-sre
        tokenSha256: 4be2...

A tenant's token reads and decides for that tenant only; an admin token for every tenant.
Tokens are compared by their SHA-256 digest, so the file may hold digests instead of tokens.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpupact.errors import FieldError, InputError
from gpupact.source import first_duplicate_key, load_documents

MIN_TOKEN_LENGTH = 16
_ENTRY_FIELDS = {"name", "token", "tokenSha256", "gpuHourBudget"}
# a tenant name appears in URL paths and label values: a DNS-1123 label's characters
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9_.]{0,61}[a-z0-9])?$")


@dataclass(frozen=True)
class Principal:
    name: str
    tenant: str | None  # None: an admin
    budget: float | None = None

    @property
    def admin(self) -> bool:
        return self.tenant is None

    def may_see(self, tenant: str | None) -> bool:
        return self.admin or (tenant is not None and tenant == self.tenant)


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class Tokens:
    def __init__(self, principals: Mapping[str, Principal]) -> None:
        self._by_digest = dict(principals)

    def lookup(self, token: str) -> Principal | None:
        wanted = digest(token)
        for known, principal in self._by_digest.items():
            if hmac.compare_digest(known, wanted):  # no timing hint of a near match
                return principal
        return None

    @property
    def budgets(self) -> dict[str, float]:
        return {
            p.tenant: p.budget
            for p in self._by_digest.values()
            if p.tenant is not None and p.budget is not None
        }

    @property
    def tenants(self) -> list[str]:
        return sorted({p.tenant for p in self._by_digest.values() if p.tenant})


def _entry(item: Any, path: tuple[str | int, ...]) -> tuple[str, str]:
    if not isinstance(item, dict):
        raise FieldError(path, "expected a mapping with name and token (or tokenSha256)")
    unknown = sorted(set(item) - _ENTRY_FIELDS, key=str)
    if unknown:
        raise FieldError(
            (*path, str(unknown[0])), f"unknown field (expected {', '.join(sorted(_ENTRY_FIELDS))})"
        )
    name = item.get("name")
    if not isinstance(name, str) or not name:
        raise FieldError((*path, "name"), "expected a non-empty string")
    if not _NAME.match(name):
        raise FieldError(
            (*path, "name"),
            f"{name!r}: expected lower-case letters, digits, '-', '_' or '.' (at most 63; "
            "it appears in URL paths, so no '/')",
        )
    token, hashed = item.get("token"), item.get("tokenSha256")
    if (token is None) == (hashed is None):
        raise FieldError(path, "give exactly one of token and tokenSha256")
    if token is not None:
        if not isinstance(token, str) or len(token) < MIN_TOKEN_LENGTH:
            raise FieldError((*path, "token"), f"expected at least {MIN_TOKEN_LENGTH} characters")
        return name, digest(token)
    if (
        not isinstance(hashed, str)
        or len(hashed) != 64
        or not all(c in "0123456789abcdef" for c in hashed.lower())
    ):
        raise FieldError((*path, "tokenSha256"), "expected 64 hex digits")
    return name, hashed.lower()


def _finite_budget(value: object) -> bool:
    """A GPU-hour budget the ledger can compare in floats: an int past float range (YAML
    reads 400 digits as an int) is refused like inf, not turned into an OverflowError."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        as_float = float(value)
    except OverflowError:
        return False
    return math.isfinite(as_float) and as_float >= 0


def parse_tokens(data: Any) -> Tokens:
    if not isinstance(data, dict):
        raise FieldError((), "expected a mapping with `tenants` and `admins`")
    unknown = sorted(set(data) - {"tenants", "admins"}, key=str)  # keys may be of mixed types
    if unknown:
        raise FieldError((str(unknown[0]),), "unknown field (expected tenants, admins)")
    principals: dict[str, Principal] = {}
    for section in ("tenants", "admins"):
        items = data.get(section) or []
        if not isinstance(items, list):
            raise FieldError((section,), "expected a list")
        for index, item in enumerate(items):
            path = (section, index)
            name, key = _entry(item, path)
            budget = item.get("gpuHourBudget")
            if section == "admins" and budget is not None:
                raise FieldError((*path, "gpuHourBudget"), "budgets belong to tenants")
            if budget is not None and not _finite_budget(budget):
                shown = repr(budget) if len(repr(budget)) <= 40 else f"{repr(budget)[:37]}..."
                raise FieldError(
                    (*path, "gpuHourBudget"), f"expected a number >= 0 and finite, got {shown}"
                )
            if key in principals:
                raise FieldError(path, "this token is already given to another entry")
            tenant = name if section == "tenants" else None
            principals[key] = Principal(name, tenant, None if budget is None else float(budget))
    if not principals:
        raise FieldError((), "no tenants and no admins: nobody could call the API")
    return Tokens(principals)


def load_tokens(path: str | Path) -> Tokens:
    docs = load_documents(path)
    if len(docs) != 1:
        raise InputError(f"expected one document, found {len(docs)}", file=str(path))
    doc = docs[0]
    duplicate = first_duplicate_key(doc)
    if duplicate is not None:
        raise duplicate
    try:
        return parse_tokens(doc.data)
    except FieldError as err:
        raise doc.error(err, ()) from None
