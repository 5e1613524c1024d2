"""The gateway's decision rules, one at a time, on hand-built snapshots."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpupact.contract import load_contract
from gpupact.ledger import Interval
from gpupact.serve import Backend, Policy, Request, Snapshot, decide
from gpupact.serve.policy import policy_from_contract

AT = 1_794_268_800.0  # 2026-11-10T00:00:00Z
ACME = Path(__file__).resolve().parents[2] / "examples" / "acme" / "contract.yaml"


def backend(service: str, model: str = "big", tenant: str | None = "a", **kw) -> Backend:
    kw.setdefault("ready", 2)
    kw.setdefault("desired", kw["ready"])
    return Backend(service, model, tenant, "gpu-inference", **kw)


def snap(*backends: Backend, intervals: tuple[Interval, ...] = ()) -> Snapshot:
    return Snapshot.build(AT, backends=backends, intervals=intervals)


POLICY = Policy(context_limits={"big": 32768, "small": 8192}, smaller={"big": "small"})


def ask(s: Snapshot, policy: Policy = POLICY, **kw):
    req = Request(kw.pop("tenant", "a"), kw.pop("model", "big"), kw.pop("tokens", 1000), **kw)
    return decide(req, s, policy)


def test_admit_on_the_tenants_own_backend_first() -> None:
    d = ask(snap(backend("shared", tenant=None, queue_length=0), backend("mine", queue_length=3)))
    assert (d.outcome, d.backend) == ("admit", "mine")


def test_unknown_model_and_too_long_context_are_rejected() -> None:
    s = snap(backend("mine"))
    assert ask(s, model="nope").reason == "unknown-model"
    d = ask(s, tokens=40000)
    assert (d.outcome, d.reason) == ("reject", "context-too-long: limit 32768 tokens")
    assert ask(s, tokens=32768).outcome == "admit"


@pytest.mark.parametrize(
    "overload",
    [{"queue_length": 6}, {"kv_cache_use": 0.85}, {"healthy": False}, {"ready": 0}],
    ids=["queue>5", "kv>0.8", "unhealthy", "no-ready"],
)
def test_a_saturated_own_backend_reroutes_to_another_of_the_same_model(overload) -> None:
    s = snap(backend("mine", **overload), backend("theirs", tenant="b", queue_length=5))
    d = ask(s)
    assert (d.outcome, d.backend, d.model) == ("reroute", "theirs", "big")


def test_saturation_thresholds_are_the_policy_s() -> None:
    s = snap(backend("mine", queue_length=6))
    assert ask(s, Policy(queue_limit=10)).outcome == "admit"


def test_degrade_to_the_smaller_model_unless_the_risk_is_high() -> None:
    s = snap(backend("mine", queue_length=9), backend("mini", "small", tenant=None))
    d = ask(s)
    assert (d.outcome, d.model, d.backend) == ("degrade", "small", "mini")
    high = ask(s, risk="high")
    assert (high.outcome, high.reason) == ("queue", "saturated")
    assert ask(s, tokens=9000).outcome == "queue"  # the smaller model's context is too short


def test_queue_with_the_cold_start_when_capacity_is_coming() -> None:
    s = snap(backend("mine", queue_length=9, pending=1, cold_start_seconds=360.0))
    d = ask(s, priority="low")
    assert (d.outcome, d.retry_after_seconds) == ("queue", 360.0)
    idle = snap(backend("mine", queue_length=9))
    assert ask(idle, priority="low").reason == "saturated"
    assert ask(idle, priority="low").outcome == "reject"
    assert ask(idle, priority="normal").outcome == "queue"


def _held(tenant: str, gpus: float, hours: float) -> Interval:
    return Interval(
        f"k-{tenant}",
        "twin",
        "p",
        "ns",
        gpus,
        AT - hours * 3600,
        None,
        tenant=tenant,
        pool="gpu-inference",
    )


def test_budget_spent_rejects_all_but_high_priority() -> None:
    s = snap(backend("mine"), intervals=(_held("a", 4.0, 10.0),))  # 40 GPU-hours this month
    policy = Policy(budgets={"a": 40.0})
    assert ask(s, policy).reason == "budget-exhausted"
    assert ask(s, policy, priority="high").outcome == "admit"
    assert ask(s, Policy(budgets={"a": 41.0})).outcome == "admit"


def test_borrowing_beyond_quota_queues_low_priority() -> None:
    s = snap(backend("mine"), intervals=(_held("a", 6.0, 1.0),))
    policy = Policy(quotas={("a", "gpu-inference"): 4})
    d = ask(s, policy, priority="low")
    assert (d.outcome, d.reason) == ("queue", "over-quota")
    assert ask(s, policy).outcome == "admit"


def test_policy_from_the_contract() -> None:
    contract = load_contract(ACME).contract
    policy = policy_from_contract(contract, {"finance": 100.0}, AT)
    assert policy.context_limits["qwen2.5-14b-instruct"] == 32768
    assert policy.smaller == {"llama-3.1-70b-instruct": "qwen2.5-14b-instruct"}  # 70B -> 14B
    assert policy.budgets == {"finance": 100.0}
    # finance: 12 nominal + a 4-GPU raise until 2026-12-31
    assert policy.quotas[("finance", "gpu-inference")] == 16
    later = policy_from_contract(contract, {}, AT + 90 * 86400)
    assert later.quotas[("finance", "gpu-inference")] == 12
