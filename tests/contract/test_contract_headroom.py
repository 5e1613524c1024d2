"""One rule for the headroom a service keeps (its own, else its class's), and the three
readers of it (`check`, `compile`, `plan`) agreeing on what it resolves to."""

from __future__ import annotations

from typing import Any

import pytest
from contract_helpers import BASE, DROP, NOW, edit, load

from gpupact.compile import CompileOptions, compile_contract
from gpupact.contract import check
from gpupact.contract.headroom import service_headroom
from gpupact.plan.from_contract import headroom_of
from gpupact.plan.planner import plan_service


def _contract(edits: list[tuple[str, Any]]):
    return load(edit(BASE, edits)).contract


@pytest.mark.parametrize(
    ("class_headroom", "service_override", "expected"),
    [
        (None, None, 20),  # an online class defaults to 20%
        ("30%", None, 30),  # the class's, when the service sets none
        ("30%", "5%", 5),  # the service's override wins
        ("30%", 0, 0),  # an explicit 0% is an override, not "unset"
    ],
)
def test_service_headroom_prefers_the_service(class_headroom, service_override, expected):
    edits: list[tuple[str, Any]] = []
    if class_headroom is not None:
        edits.append(("classes.0.headroom", class_headroom))
    if service_override is not None:
        edits.append(("services.0.headroom", service_override))
    contract = _contract(edits)
    service = contract.services[0]
    klass = contract.workload_class(service.workload_class)
    assert service_headroom(service, klass) == expected
    assert headroom_of(contract, service) == expected


def test_batch_class_keeps_no_headroom_by_default():
    contract = _contract([("services.0.class", "batch"), ("services.0.replicas", {"min": 1})])
    service = contract.services[0]
    assert service_headroom(service, contract.workload_class("batch")) == 0


def _pool_rule_fires(edits: list[tuple[str, Any]]) -> bool:
    findings = check(_contract(edits), now=NOW)
    return any(f.rule == "pool-headroom-exhausted" for f in findings)


def test_check_uses_the_service_override():
    # 4 nodes x 8 GPUs = 32 devices; a 50% override leaves 16 for the minimum replicas
    override = [("services.0.headroom", "50%")]
    assert not _pool_rule_fires([*override, ("services.0.replicas", {"min": 16, "max": 20})])
    assert _pool_rule_fires([*override, ("services.0.replicas", {"min": 17, "max": 20})])
    # without it the class's 20% leaves 25.6: 17 fits
    assert not _pool_rule_fires([("services.0.replicas", {"min": 17, "max": 20})])


def test_compile_and_plan_resolve_the_same_headroom():
    # a GPU-utilisation HPA (no concurrency) targets 100 - headroom
    contract = _contract(
        [
            ("classes.0.headroom", "30%"),
            ("services.0.headroom", "45%"),
            ("services.0.concurrency", DROP),
        ]
    )
    bundle = compile_contract(contract, CompileOptions(now=NOW))
    (hpa,) = [
        h for h in bundle.of_kind("HorizontalPodAutoscaler") if h["metadata"]["name"] == "svc"
    ]
    target = hpa["spec"]["metrics"][0]["pods"]["target"]["averageValue"]
    assert target == str(100 - 45)
    planned = _contract([("classes.0.headroom", "30%"), ("services.0.headroom", "45%")])
    assert plan_service(planned, "svc").workload.headroom == 45
