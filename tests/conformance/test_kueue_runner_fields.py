"""The kueue.json fields documented in format_notes that no shipped vector uses yet:
creation_offset_s, note/notes anywhere, and a top-level expected.noFitReason. Each case below
has the vectors' form; it fails if the runner ignored the field (or skipped the case)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from conformance.runners.kueue import flavor_assignment_only, preemption_targets_only
from conformance.runners.kueue._scenario import without_notes


def _cq(**extra: Any) -> dict[str, Any]:
    return {
        "name": "cq",
        "flavors": [{"flavor": "default", "resources": {"cpu": {"nominal": 4}}}],
        **extra,
    }


def _wl(name: str, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "queue": "cq",
        "priority": 0,
        "pod_sets": [{"name": "main", "count": 1, "requests": {"cpu": 2}}],
        **extra,
    }


# Kueue preemption_test.go, "preempt newer workloads with the same priority": under
# LowerOrNewerEqualPriority only a workload created after the preemptor is a candidate.
NEWER_EQUAL_PRIORITY = {
    "id": "local-newer-equal-priority",
    "test_kind": "preemption_targets_only",
    "note": "creation times matter here, nothing else differs",
    "cluster_queues": [_cq(preemption={"withinClusterQueue": "LowerOrNewerEqualPriority"})],
    "resource_flavors": [{"name": "default"}],
    "admitted_workloads": [
        _wl("older", flavor_assignment="default", creation_offset_s=-60),
        _wl("newer", flavor_assignment="default", creation_offset_s=60, note="the victim"),
    ],
    "pending_workloads": [
        _wl(
            "incoming",
            creation_order=0,
            creation_offset_s=0,
            given_flavor_assignment={"main": {"cpu": "default (Preempt)"}},
        )
    ],
    "expected": {
        "admitted": {},
        "preempted": [{"name": "newer", "reason": "InClusterQueue"}],
        "left_pending": [{"name": "incoming", "cluster_queue": "cq", "state": "active"}],
        "notes": ["the older workload stays"],
    },
}


def test_creation_offset_orders_victims_against_the_preemptor():
    preemption_targets_only.run(copy.deepcopy(NEWER_EQUAL_PRIORITY), {})
    # the preemptor created after both: neither is newer, nothing to preempt
    later = copy.deepcopy(NEWER_EQUAL_PRIORITY)
    later["pending_workloads"][0]["creation_offset_s"] = 120
    with pytest.raises(AssertionError, match="preemption targets"):
        preemption_targets_only.run(later, {})


def test_fractional_offsets_keep_their_order():
    case = copy.deepcopy(NEWER_EQUAL_PRIORITY)
    case["admitted_workloads"][1]["creation_offset_s"] = 0.5  # half a second after
    preemption_targets_only.run(case, {})


def test_notes_are_dropped_everywhere_and_nothing_else():
    case = {"a": {"note": "x", "b": [{"notes": ["y"], "c": 1}]}, "notes": "z"}
    assert without_notes(case) == {"a": {"b": [{"c": 1}]}}


NO_FIT = {
    "id": "local-no-fit-reason",
    "test_kind": "flavor_assignment_only",
    "cluster_queues": [_cq()],
    "resource_flavors": [{"name": "default"}],
    "admitted_workloads": [],
    "pending_workloads": [
        {
            "name": "big",
            "queue": "cq",
            "pod_sets": [{"name": "main", "count": 1, "requests": {"cpu": 8}}],
        }
    ],
    "expected": {
        "representative_mode": "NoFit",
        "noFitReason": "ExceedsMaxQuota",
        "note": "8 cpu can never fit a queue of 4",
    },
}


def test_top_level_no_fit_reason_is_asserted():
    flavor_assignment_only.run(copy.deepcopy(NO_FIT), {})
    wrong = copy.deepcopy(NO_FIT)
    wrong["expected"]["noFitReason"] = "NoMatchingFlavor"
    with pytest.raises(AssertionError, match="noFitReason"):
        flavor_assignment_only.run(wrong, {})
