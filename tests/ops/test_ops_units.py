"""Small pieces: durations and cold starts, the memory profile, findings' shape."""

from __future__ import annotations

import pytest
from ops_helpers import acme

from gpupact.errors import FieldError
from gpupact.ops.autoscale import parse_cold_start, parse_duration
from gpupact.ops.findings import Domain, Finding, Severity, format_duration, sort_findings
from gpupact.ops.memory import memory_profile
from gpupact.plan.planner import plan_service


@pytest.mark.parametrize(
    ("text", "seconds"), [("45s", 45), ("13m30s", 810), ("1h", 3600), ("2h5m1s", 7501)]
)
def test_parse_duration(text: str, seconds: int) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "10", "5 m", "1d", "m5", "1.5h"])
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(FieldError):
        parse_duration(text)


def test_cold_start_phases() -> None:
    cold = parse_cold_start('{"provision":"4m","driver":"2m","modelLoad":"4m"}', "x")
    assert cold.total == 600
    assert cold.describe() == "10m (provision 4m, driver 2m, modelLoad 4m)"
    assert parse_cold_start("13m30s", "x").total == 810
    with pytest.raises(FieldError, match="unknown phase"):
        parse_cold_start('{"boot": "1m"}', "x")


def test_format_duration() -> None:
    assert [format_duration(s) for s in (0, 59, 61, 3600, 90061)] == [
        "0s",
        "59s",
        "1m1s",
        "1h",
        "1d1h",
    ]


def test_memory_profile_is_plans_arithmetic() -> None:
    # diagnose sizes a service with plan's own functions: one rule for both
    contract = acme()
    service = next(s for s in contract.services if s.name == "cs-agent")
    profile = memory_profile(contract, service, None)
    replica = plan_service(contract, "cs-agent").replica
    assert profile is not None and not profile.over
    assert profile.weights == replica.memory.weights
    assert profile.kv_per_token == replica.memory.kv_per_token_replica
    assert profile.kv_budget == replica.memory.kv_room
    # Qwen2.5-14B: 48 layers x 8 KV heads x 128 x 2 (K, V) x 2 bytes = 192 KiB a token, not
    # the dense guess from 14B parameters
    assert profile.kv_per_token == 48 * 8 * 128 * 2 * 2
    assert profile.sequences_at_context == profile.kv_budget // (32768 * 196_608)


def test_memory_profile_of_acme_services() -> None:
    contract = acme()
    by = {s.name: s for s in contract.services}
    big = by["llm-70b-tp4"].model_copy(update={"tensor_parallel": 1})
    over = memory_profile(contract, big, None)
    assert over is not None and over.over  # 131 GiB of weights on one 79 GiB GPU


def test_memory_profile_of_an_unknown_model_says_so() -> None:
    contract = acme()
    service = next(s for s in contract.services if s.name == "cs-agent")
    spec = service.model.model_copy(update={"name": "acme-support-bot"})  # type: ignore[union-attr]
    profile = memory_profile(contract, service.model_copy(update={"model": spec}), None)
    assert profile is not None and profile.kv_per_token == 0
    assert "unknown model 'acme-support-bot'" in profile.lines()[1]


def test_findings_sort_and_dict() -> None:
    a = Finding(Domain.quota, "q", Severity.warning, "s", "x")
    b = Finding(Domain.nodes, "n", Severity.error, "s", "x", ("e",), "fix", {"k": 1})
    assert sort_findings([a, b]) == [b, a]
    assert b.to_dict() == {
        "domain": "nodes",
        "step": 1,
        "code": "n",
        "severity": "error",
        "subject": "s",
        "summary": "x",
        "evidence": ["e"],
        "action": "fix",
        "data": {"k": 1},
    }
