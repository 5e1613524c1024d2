"""The twin preempts as the compiled objects say, and nothing more: pods carry their
PriorityClass's `preemptionPolicy` (the Priority admission plugin copies it into the pod,
https://kubernetes.io/docs/concepts/scheduling-eviction/pod-priority-preemption/#non-preempting-priority-class),
and no twin-only rule keeps a non-preemptible class from being a victim of a higher one."""

from __future__ import annotations

from pathlib import Path

from twin_helpers import contract, scenario, write

from gpupact.engine.preemption.protection import NEVER_VICTIM
from gpupact.twin.scenario import load_scenario
from gpupact.twin.world import build_world, contract_protection


def _world(tmp_path: Path):
    return build_world(load_scenario(write(tmp_path, contract(), scenario())))


def test_pods_carry_their_priority_class_preemption_policy(tmp_path: Path) -> None:
    world = _world(tmp_path)
    policies = {
        o["metadata"]["name"]: o["preemptionPolicy"] for o in world.bundle.of_kind("PriorityClass")
    }
    chat = world.services["chat"].pod
    embed = world.jobs["embed"].pod
    chat_pod = chat.make("chat-0", created="2026-11-11T00:00:00Z")
    embed_pod = embed.make("embed-0", created="2026-11-11T00:00:00Z")
    # batch is preemptible: compiled Never, so its pods never preempt
    assert embed_pod.preemption_policy == "Never"
    assert chat_pod.preemption_policy == "PreemptLowerPriority"
    for template, made in ((chat, chat_pod), (embed, embed_pod)):
        name = template.template["spec"]["priorityClassName"]
        assert made.preemption_policy == policies[name]


def test_no_twin_only_victim_rule(tmp_path: Path) -> None:
    world = _world(tmp_path)
    kinds = {r.kind for r in contract_protection(world.contract).rules}
    assert NEVER_VICTIM not in kinds
