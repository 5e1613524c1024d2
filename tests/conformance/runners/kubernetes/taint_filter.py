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

# The vector names the inclusion filter an upstream test passed; None is Go's nil filter.
_INCLUSION: dict[str, Callable[[Taint], bool] | None] = {
    "NoSchedule|NoExecute": do_not_schedule_taint,
    "all": lambda _taint: True,
    "all (nil filter)": None,
    "none": lambda _taint: False,
}


def run(case: dict, meta: dict) -> None:
    # Upstream builds these as Go struct literals (no API validation), so parse types only.
    taints = parse_taints(case["node_taints"], ("node_taints",), validate=False)
    tolerations = parse_tolerations(case["pod_tolerations"], ("pod_tolerations",), validate=False)
    enable = case["enable_comparison_operators"]
    expected = case["expected"]
    name = case["inclusion_filter"]
    if name not in _INCLUSION:
        pytest.skip(f"not modelled: inclusion filter {name!r}")
    include = _INCLUSION[name]

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
