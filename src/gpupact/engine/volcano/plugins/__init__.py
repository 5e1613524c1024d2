"""Volcano plugins: each registers functions for extension points when a session opens."""

from __future__ import annotations

from collections.abc import Callable

from gpupact.engine.volcano.framework import NotModelledError, PluginOption
from gpupact.engine.volcano.plugins.base import Plugin
from gpupact.engine.volcano.plugins.capacity import CapacityPlugin
from gpupact.engine.volcano.plugins.conformance import ConformancePlugin
from gpupact.engine.volcano.plugins.drf import DrfPlugin
from gpupact.engine.volcano.plugins.gang import GangPlugin
from gpupact.engine.volcano.plugins.nodeorder import NodeOrderPlugin
from gpupact.engine.volcano.plugins.predicates import PredicatesPlugin
from gpupact.engine.volcano.plugins.priority import PriorityPlugin
from gpupact.engine.volcano.plugins.proportion import ProportionPlugin
from gpupact.engine.volcano.plugins.sla import SlaPlugin

PLUGINS: dict[str, Callable[[PluginOption], Plugin]] = {
    "capacity": CapacityPlugin,
    "conformance": ConformancePlugin,
    "drf": DrfPlugin,
    "gang": GangPlugin,
    "nodeorder": NodeOrderPlugin,
    "predicates": PredicatesPlugin,
    "priority": PriorityPlugin,
    "proportion": ProportionPlugin,
    "sla": SlaPlugin,
}


def build_plugin(option: PluginOption) -> Plugin:
    factory = PLUGINS.get(option.name)
    if factory is None:
        raise NotModelledError(f"plugin {option.name!r}")
    return factory(option)


__all__ = ["PLUGINS", "Plugin", "build_plugin"]
