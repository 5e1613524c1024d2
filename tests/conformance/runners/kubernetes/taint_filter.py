"""kubernetes.json `taint_filter`: TaintToleration.Filter and FindMatchingUntoleratedTaint."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from gpupact.kube.taints import (
    Taint,
    do_not_schedule_taint,
    find_untolerated_taint,
    parse_taints,
    parse_tolerations,
    taint_toleration_filter,
)

EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def inclusion_filter(name: str) -> Callable[[Taint], bool] | None:
    """The vector's inclusion-filter grammar (kubernetes.json `_meta.conventions`): "all",
    "all (nil filter)" (Go's nil filter: None), "none", effects joined by "|", or one effect
    followed by "-only". The plugin's own NoSchedule|NoExecute filter is the project's
    `do_not_schedule_taint` (the Filter branch checks it is that one)."""
    if name == "all":
        return lambda _taint: True
    if name == "all (nil filter)":
        return None
    if name == "none":
        return lambda _taint: False
    effects = name.removesuffix("-only").split("|") if name.endswith("-only") else name.split("|")
    if name.endswith("-only") and len(effects) != 1:
        pytest.skip(f"not modelled: inclusion filter {name!r}")
    if any(e not in EFFECTS for e in effects):
        pytest.skip(f"not modelled: inclusion filter {name!r}")
    if sorted(effects) == ["NoExecute", "NoSchedule"]:
        return do_not_schedule_taint
    chosen = frozenset(effects)
    return lambda taint: taint.effect in chosen


def run(case: dict, meta: dict) -> None:
    # Upstream builds these as Go struct literals (no API validation), so parse types only.
    taints = parse_taints(case["node_taints"], ("node_taints",), validate=False)
    tolerations = parse_tolerations(case["pod_tolerations"], ("pod_tolerations",), validate=False)
    enable = case["enable_comparison_operators"]
    expected = case["expected"]
    name = case["inclusion_filter"]
    include = inclusion_filter(name)

    if "status_code" in expected:
        # the plugin's Filter, which always uses the NoSchedule|NoExecute filter
        assert include is do_not_schedule_taint, f"Filter case with inclusion filter {name!r}"
        status = taint_toleration_filter(taints, tolerations, enable_comparison_operators=enable)
        assert status.ok == expected["schedulable"], (
            f"schedulable: got {status.ok}, expected {expected['schedulable']}"
        )
        assert status.code.value == expected["status_code"], (
            f"status code: got {status.code.value}, expected {expected['status_code']}"
        )
        if "reason" in expected:
            assert status.message == expected["reason"], (
                f"reason: got {status.message!r}, expected {expected['reason']!r}"
            )
        if "reason_variants" in expected:
            # the vector accepts either upstream revision's message (see its note)
            assert status.message in expected["reason_variants"], (
                f"reason: got {status.message!r}, expected one of {expected['reason_variants']!r}"
            )
        return

    found = find_untolerated_taint(taints, tolerations, include, enable_comparison_operators=enable)
    assert (found is not None) == expected["untolerated_taint_found"], (
        f"untolerated taint: got {found}, expected found={expected['untolerated_taint_found']}"
    )
    assert (found is None) == expected["schedulable"], (
        f"schedulable: got {found is None}, expected {expected['schedulable']}"
    )
