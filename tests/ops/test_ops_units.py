"""Small pieces: durations and cold starts, the memory profile, findings' shape."""

from __future__ import annotations

import pytest
from ops_helpers import acme

from gpupact.errors import FieldError
from gpupact.ops.autoscale import parse_cold_start, parse_duration
from gpupact.ops.findings import Domain, Finding, Severity, format_duration, sort_findings
from gpupact.ops.memory import estimated_kv_bytes_per_token, memory_profile


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


def test_kv_estimate_close_to_known_models() -> None:
    # Llama-3.1-70B: 80 layers x 8 KV heads x 128 x 2 (K, V) x 2 bytes = 320 KiB per token
    assert abs(estimated_kv_bytes_per_token(70 * 10**9) - 320 * 1024) / (320 * 1024) < 0.05
    # Qwen2.5-14B: 48 layers -> 192 KiB
    assert abs(estimated_kv_bytes_per_token(14 * 10**9) - 192 * 1024) / (192 * 1024) < 0.1


def test_memory_profile_of_acme_services() -> None:
    contract = acme()
    by = {s.name: s for s in contract.services}
    cs = memory_profile(contract, by["cs-agent"], None)
    assert cs is not None and not cs.over
    assert cs.sequences_at_context == 7
    big = by["llm-70b-tp4"].model_copy(update={"tensor_parallel": 1})
    over = memory_profile(contract, big, None)
    assert over is not None and over.over  # 140 GB of weights on one 80 GiB GPU


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
