"""The tokens file: tenants, admins, budgets, digests; bad files are one located line."""

from __future__ import annotations

import hashlib

import pytest

from gpupact.errors import InputError
from gpupact.serve import load_tokens

GOOD = """\
tenants:
  - name: finance
    token: finance-token-0123456789
    gpuHourBudget: 2000
  - name: search
    tokenSha256: {digest}
admins:
  - name: sre
    token: admin-token-0123456789
"""


def write(tmp_path, text: str):
    path = tmp_path / "tokens.yaml"
    path.write_text(text)
    return path


def test_tokens_map_to_tenants_admins_and_budgets(tmp_path) -> None:
    digest = hashlib.sha256(b"search-token-0123456789").hexdigest()
    tokens = load_tokens(write(tmp_path, GOOD.format(digest=digest)))
    assert tokens.lookup("finance-token-0123456789").tenant == "finance"
    assert tokens.lookup("search-token-0123456789").tenant == "search"
    admin = tokens.lookup("admin-token-0123456789")
    assert admin.admin and admin.may_see("finance") and admin.may_see("anyone")
    assert not tokens.lookup("finance-token-0123456789").may_see("search")
    assert tokens.lookup("finance-token-012345678") is None
    assert tokens.budgets == {"finance": 2000.0}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "tenants:\n  - name: a\n    token: short\n",
            ":3:12: tenants[0].token: expected at least 16",
        ),
        ("tenants:\n  - name: a\n", ":2:5: tenants[0]: give exactly one of token and tokenSha256"),
        (
            "tenants:\n  - name: a\n    tokenSha256: xyz\n",
            "tenants[0].tokenSha256: expected 64 hex",
        ),
        (
            "tenants:\n  - {name: a, token: aaaaaaaaaaaaaaaaaa}\n"
            "  - {name: b, token: aaaaaaaaaaaaaaaaaa}\n",
            "tenants[1]: this token is already given",
        ),
        (
            "tenants:\n  - {name: a, token: aaaaaaaaaaaaaaaaaa, gpuHourBudget: -1}\n",
            "tenants[0].gpuHourBudget: expected a number >= 0",
        ),
        ("admins: []\n", "nobody could call the API"),
        ("users: []\n", "users: unknown field"),
    ],
)
def test_bad_files_name_file_line_and_field(tmp_path, text: str, message: str) -> None:
    with pytest.raises(InputError) as err:
        load_tokens(write(tmp_path, text))
    assert str(err.value).startswith(str(tmp_path / "tokens.yaml")) and message in str(err.value)
