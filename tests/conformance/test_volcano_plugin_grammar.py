"""The volcano-kai.json plugin notation: name(points; key=value ...) becomes a PluginOption
with typed arguments (as the scheduler's YAML configuration types them)."""

from __future__ import annotations

from conformance.runners.volcano_kai.volcano import parse_plugins


def test_points_arguments_and_notes():
    options, action_args = parse_plugins(
        [
            "sla(jobEnqueued,jobOrder; sla-waiting-time=3m)",
            "nodeorder(nodeOrder; leastrequested.weight=2, balancedresource.weight=0)",
            "predicates(predicate; predicate.PodAffinityEnable=false)",
            "proportion(queueOrder,reclaimable; allocatable DISABLED)",
            "gang",
            "preempt arg enableTopologyAwarePreemption=true",
        ]
    )
    by_name = {o.name: o for o in options}
    assert by_name["sla"].points == {"jobEnqueued", "jobOrder"}
    assert dict(by_name["sla"].arguments) == {"sla-waiting-time": "3m"}
    assert dict(by_name["nodeorder"].arguments) == {
        "leastrequested.weight": 2,
        "balancedresource.weight": 0,
    }
    assert dict(by_name["predicates"].arguments) == {"predicate.PodAffinityEnable": False}
    assert by_name["proportion"].points == {"queueOrder", "reclaimable"}
    assert dict(by_name["proportion"].arguments) == {}
    assert by_name["gang"].points == frozenset()
    assert action_args == {"preempt": {"enableTopologyAwarePreemption": "true"}}
